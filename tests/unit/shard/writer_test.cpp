// Writer/reader round trips for every optional part of the format.
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>

#include "shard/lookup_tables.hpp"
#include "shard/reader.hpp"
#include "shard/writer.hpp"
#include "test_support.hpp"

namespace dedupd::shard {
namespace {

using testing::fixture_bytes;
using testing::make_file;
using testing::make_xorb;
using testing::small_shard;

ShardView parse_ok(const std::vector<std::uint8_t>& bytes) {
  auto v = ShardView::parse(bytes);
  if (!v) ADD_FAILURE() << v.error().to_string();
  return std::move(v).value();
}

std::vector<std::uint8_t> rewrite(const std::vector<std::uint8_t>& bytes) {
  ShardView v = parse_ok(bytes);
  return ShardWriter::from_view(v).write(ShardWriter::options_of(v));
}

TEST(Writer, RealFixtureRewritesByteIdentical) {
  auto bytes = fixture_bytes();
  auto v = parse_ok(bytes);
  EXPECT_EQ(ShardWriter::options_of(v).lookup_tables, LookupTables::none_server_style);
  EXPECT_EQ(rewrite(bytes), bytes);
}

TEST(Writer, JavaScriptStyleZeroOffsetsRoundTrip) {
  auto bytes = fixture_bytes();  // the view borrows these bytes
  auto v = parse_ok(bytes);
  auto opts = ShardWriter::options_of(v);
  opts.lookup_tables = LookupTables::none_zero_offsets;
  auto js = ShardWriter::from_view(v).write(opts);
  const std::uint8_t* footer = js.data() + js.size() - kFooterSize;
  EXPECT_EQ(load_u64(footer + 24), 0u);
  EXPECT_EQ(load_u64(footer + 40), 0u);
  EXPECT_EQ(load_u64(footer + 56), 0u);
  auto jv = parse_ok(js);
  EXPECT_EQ(ShardWriter::options_of(jv).lookup_tables, LookupTables::none_zero_offsets);
  EXPECT_EQ(rewrite(js), js);
}

TEST(Writer, ServerStyleOffsetsEqualFooterOffset) {
  auto s = small_shard();
  auto bytes = s.writer.write({});
  auto v = parse_ok(bytes);
  const auto& f = *v.footer();
  EXPECT_EQ(f.footer_offset, bytes.size() - kFooterSize);
  EXPECT_EQ(f.footer_offset, v.cas_end());
  EXPECT_EQ(f.file_lookup_offset, f.footer_offset);
  EXPECT_EQ(f.xorb_lookup_offset, f.footer_offset);
  EXPECT_EQ(f.chunk_lookup_offset, f.footer_offset);
  EXPECT_EQ(f.file_info_offset, 48u);
  EXPECT_EQ(f.cas_info_offset, v.cas_begin());
  EXPECT_EQ(rewrite(bytes), bytes);
}

TEST(Writer, UploadShardWithoutFooter) {
  auto s = small_shard();
  WriteOptions o;
  o.with_footer = false;
  o.lookup_tables = LookupTables::build;  // nowhere to put them: ignored
  auto bytes = s.writer.write(o);
  auto v = parse_ok(bytes);
  EXPECT_FALSE(v.has_footer());
  EXPECT_EQ(v.header().footer_size, 0u);
  EXPECT_EQ(v.cas_end(), bytes.size());
  EXPECT_EQ(v.stats().files, 2u);
  EXPECT_EQ(v.stats().xorbs, 2u);
  EXPECT_EQ(v.stats().chunks, 17u);
  EXPECT_EQ(v.stats().terms, 4u);
  EXPECT_EQ(rewrite(bytes), bytes);
}

TEST(Writer, KeyedShardStoresKeyAndKeyedHashes) {
  Key key = testing::seeded_hash(77);
  auto x = make_xorb(5, 9, key);
  ShardWriter w;
  w.add_xorb(x.record);
  WriteOptions o;
  o.footer.chunk_hash_key = key;
  o.footer.creation_timestamp = 1700000000;
  o.footer.key_expiry = 1700600000;
  auto bytes = w.write(o);
  auto v = parse_ok(bytes);
  EXPECT_TRUE(v.keyed());
  EXPECT_EQ(v.chunk_key(), key);
  EXPECT_EQ(v.creation_timestamp(), 1700000000u);
  EXPECT_EQ(v.expiry(), std::optional<std::uint64_t>(1700600000));
  XorbBlock b = *v.xorbs().begin();
  EXPECT_EQ(b.chunk(4).chunk_hash, keyed_chunk_hash(key, x.raw[4]));
  EXPECT_NE(b.chunk(4).chunk_hash, x.raw[4]);
  EXPECT_EQ(rewrite(bytes), bytes);
}

TEST(Writer, VerificationAndMetadataExtRoundTrip) {
  for (bool verification : {false, true})
    for (bool ext : {false, true}) {
      auto s = small_shard(verification, ext);
      auto bytes = s.writer.write({});
      auto v = parse_ok(bytes);
      for (FileBlock f : v.files()) {
        EXPECT_EQ(f.has_verification(), verification);
        EXPECT_EQ(f.has_metadata_ext(), ext);
      }
      FileBlock second = *std::next(v.files().begin());
      EXPECT_EQ(second.num_terms(), 3u);
      if (verification) {
        EXPECT_EQ(second.verification(1).hash, verification_range_hash(std::span(s.xorbs[1].raw)));
      }
      if (ext) {
        EXPECT_EQ(second.sha256(), testing::seeded_hash(11));
      }
      EXPECT_EQ(rewrite(bytes), bytes);
    }
}

TEST(Writer, FlagsAreDerivedAndOtherBitsKept) {
  auto x = make_xorb(3, 4);
  FileRecord f = make_file(20, {{&x, 0, 4}}, false, false);
  f.header.flags = kFileFlagWithVerification | kFileFlagWithMetadataExt | 0x5;  // wrong claims
  f.header.num_entries = 99;
  ShardWriter w;
  w.add_file(f);
  w.add_xorb(x.record);
  auto bytes = w.write({});  // the view points into it: keep it alive
  auto v = parse_ok(bytes);
  FileBlock b = *v.files().begin();
  EXPECT_EQ(b.header().flags, 0x5u);
  EXPECT_EQ(b.num_terms(), 1u);

  f.verification.push_back({testing::seeded_hash(1), {}});
  f.metadata_ext = HashRecord{};
  f.header.flags = 0x5;
  ShardWriter w2;
  w2.add_file(f);
  auto bytes2 = w2.write({});
  auto v2 = parse_ok(bytes2);
  EXPECT_EQ((*v2.files().begin()).header().flags, 0x5u | kFileFlagWithVerification | kFileFlagWithMetadataExt);
}

TEST(Writer, XorbEntryCountIsDerived) {
  auto x = make_xorb(3, 4);
  x.record.header.num_entries = 1000;
  ShardWriter w;
  w.add_xorb(x.record);
  auto bytes = w.write({});  // the view points into it: keep it alive
  auto v = parse_ok(bytes);
  EXPECT_EQ((*v.xorbs().begin()).num_chunks(), 4u);
}

TEST(Writer, EmptyFileKeepsItsVerificationBitToMatchOtherFiles) {
  auto x = make_xorb(3, 4);
  ShardWriter w;
  w.add_file(make_file(1, {{&x, 0, 2}}, true, false));
  FileRecord empty;  // the empty file: zero hash, no terms
  empty.header.flags = kFileFlagWithVerification;
  w.add_file(empty);
  w.add_xorb(x.record);
  auto bytes = w.write({});
  auto v = parse_ok(bytes);
  EXPECT_TRUE((*std::next(v.files().begin())).has_verification());
  EXPECT_EQ(rewrite(bytes), bytes);
}

TEST(Writer, RejectsVerificationCountMismatch) {
  auto x = make_xorb(3, 4);
  FileRecord f = make_file(1, {{&x, 0, 2}, {&x, 2, 4}}, true, false);
  f.verification.pop_back();
  ShardWriter w;
  w.add_file(f);
  EXPECT_THROW(w.write({}), std::invalid_argument);
}

TEST(Writer, BuildsSortedLookupTablesThatPointAtTheirEntries) {
  auto s = small_shard();
  WriteOptions o;
  o.lookup_tables = LookupTables::build;
  auto bytes = s.writer.write(o);
  auto v = parse_ok(bytes);
  const auto& f = *v.footer();
  EXPECT_EQ(f.file_lookup_offset, v.cas_end());
  EXPECT_EQ(f.file_lookup_num_entry, 2u);
  EXPECT_EQ(f.xorb_lookup_offset, v.cas_end() + 2 * 12);
  EXPECT_EQ(f.xorb_lookup_num_entry, 2u);
  EXPECT_EQ(f.chunk_lookup_offset, v.cas_end() + 4 * 12);
  EXPECT_EQ(f.chunk_lookup_num_entry, 17u);
  EXPECT_EQ(f.footer_offset, v.cas_end() + 4 * 12 + 17 * 16);

  for (std::size_t i = 0; i < v.file_lookup_size(); ++i) {
    auto e = v.file_lookup(i);
    FileBlock b(bytes.data() + v.file_section_offset() + kEntrySize * e.index,
                v.file_section_offset() + kEntrySize * e.index);
    EXPECT_EQ(b.hash().truncated(), e.truncated);
    if (i) {
      EXPECT_TRUE(lookup_less(v.file_lookup(i - 1), e));
    }
  }
  for (std::size_t i = 0; i < v.xorb_lookup_size(); ++i) {
    auto e = v.xorb_lookup(i);
    XorbBlock b(bytes.data() + v.cas_begin() + kEntrySize * e.index, 0);
    EXPECT_EQ(b.hash().truncated(), e.truncated);
  }
  for (std::size_t i = 0; i < v.chunk_lookup_size(); ++i) {
    auto e = v.chunk_lookup(i);
    XorbBlock b(bytes.data() + v.cas_begin() + kEntrySize * e.xorb_index, 0);
    ASSERT_LT(e.chunk_offset, b.num_chunks());
    EXPECT_EQ(b.chunk(e.chunk_offset).chunk_hash.truncated(), e.truncated);
    if (i) {
      EXPECT_TRUE(lookup_less(v.chunk_lookup(i - 1), e));
    }
  }
  EXPECT_EQ(ShardWriter::options_of(v).lookup_tables, LookupTables::build);
  EXPECT_EQ(rewrite(bytes), bytes);
}

TEST(Writer, SecondFileIndexCountsEveryEntryOfTheFirst) {
  // File 1 of small_shard has 1 header + 1 term + 1 verification + 1 ext.
  auto s = small_shard(true, true);
  WriteOptions o;
  o.lookup_tables = LookupTables::build;
  auto bytes = s.writer.write(o);  // the view points into it: keep it alive
  auto v = parse_ok(bytes);
  std::vector<std::uint32_t> indices;
  for (std::size_t i = 0; i < v.file_lookup_size(); ++i) indices.push_back(v.file_lookup(i).index);
  std::sort(indices.begin(), indices.end());
  EXPECT_EQ(indices, (std::vector<std::uint32_t>{0, 4}));
  std::vector<std::uint32_t> xorbs;
  for (std::size_t i = 0; i < v.xorb_lookup_size(); ++i) xorbs.push_back(v.xorb_lookup(i).index);
  std::sort(xorbs.begin(), xorbs.end());
  EXPECT_EQ(xorbs, (std::vector<std::uint32_t>{0, 13}));
}

TEST(Writer, RebuiltTablesOfTheFixtureEqualCanonicalTables) {
  auto bytes = fixture_bytes();  // the view borrows these bytes
  auto v = parse_ok(bytes);
  auto opts = ShardWriter::options_of(v);
  opts.lookup_tables = LookupTables::build;
  auto with_tables = ShardWriter::from_view(v).write(opts);
  auto tv = parse_ok(with_tables);
  auto canonical = canonical_lookup_tables(tv);
  ASSERT_EQ(tv.chunk_lookup_size(), 2117u);
  ASSERT_EQ(canonical.chunks.size(), 2117u);
  for (std::size_t i = 0; i < canonical.chunks.size(); ++i)
    EXPECT_TRUE(lookup_equal(tv.chunk_lookup(i), canonical.chunks[i])) << i;
  EXPECT_EQ(rewrite(with_tables), with_tables);
}

TEST(Writer, EmptyShardIsHeaderTwoBookendsAndFooter) {
  ShardWriter w;
  auto bytes = w.write({});
  EXPECT_EQ(bytes.size(), 48u + 48 + 48 + 200);
  auto v = parse_ok(bytes);
  EXPECT_TRUE(v.files().empty());
  EXPECT_TRUE(v.xorbs().empty());
  WriteOptions o;
  o.with_footer = false;
  EXPECT_EQ(w.write(o).size(), 144u);
}

TEST(Writer, SortsSectionsInXetCoreHashOrderSoTablesFollowTheSections) {
  auto s = small_shard();
  s.writer.sort_sections_by_hash();
  WriteOptions o;
  o.lookup_tables = LookupTables::build;
  auto bytes = s.writer.write(o);
  auto v = parse_ok(bytes);
  std::vector<Hash> files, xorbs;
  for (FileBlock f : v.files()) files.push_back(f.hash());
  for (XorbBlock x : v.xorbs()) xorbs.push_back(x.hash());
  EXPECT_TRUE(std::is_sorted(files.begin(), files.end(), xet_order_less));
  EXPECT_TRUE(std::is_sorted(xorbs.begin(), xorbs.end(), xet_order_less));
  // xet-core writes these two tables in section order without sorting: with
  // sections in its hash order, that is the sorted table, index ascending.
  for (std::size_t i = 1; i < v.file_lookup_size(); ++i) EXPECT_LT(v.file_lookup(i - 1).index, v.file_lookup(i).index);
  for (std::size_t i = 1; i < v.xorb_lookup_size(); ++i) EXPECT_LT(v.xorb_lookup(i - 1).index, v.xorb_lookup(i).index);
}

TEST(Writer, XetOrderComparesWordsNotBytes) {
  Hash a, b;
  a.bytes[0] = 2;  // word 0 = 2
  b.bytes[1] = 1;  // word 0 = 256
  EXPECT_TRUE(xet_order_less(a, b));
  EXPECT_FALSE(a < b);  // bytewise, 2 > 0 at byte 0
  EXPECT_FALSE(xet_order_less(a, a));
}

TEST(Writer, DerivesByteTotalsAsXetCoreDoes) {
  auto s = small_shard();
  WriteOptions o;
  o.derive_byte_totals = true;
  o.footer.stored_bytes = 7;             // replaced
  const auto bytes = s.writer.write(o);  // the view reads these: they must outlive it
  auto v = parse_ok(bytes);
  std::uint64_t on_disk = 0, in_xorbs = 0, materialized = 0;
  for (XorbBlock x : v.xorbs()) {
    on_disk += x.header().bytes_on_disk;
    in_xorbs += x.header().bytes_in_xorb;
  }
  for (FileBlock f : v.files())
    for (std::uint32_t i = 0; i < f.num_terms(); ++i) materialized += f.term(i).unpacked_bytes;
  EXPECT_EQ(v.footer()->stored_bytes_on_disk, on_disk);
  EXPECT_EQ(v.footer()->stored_bytes, in_xorbs);
  EXPECT_EQ(v.footer()->materialized_bytes, materialized);
  EXPECT_GT(materialized, 0u);
}

}  // namespace
}  // namespace dedupd::shard
