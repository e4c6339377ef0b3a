// The merge writer: its output is a shard the client would have written
// itself, holding every member's content once.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "cache_support.hpp"
#include "shard/lookup_tables.hpp"
#include "shard/verify.hpp"
#include "test_support.hpp"
#include "tests/support/temp_dir.hpp"
#include "xetcache/merge.hpp"
#include "xetcache/plan.hpp"

namespace dedupd::xetcache {
namespace {

using shard::testing::make_file;
using shard::testing::make_xorb;
using shard::testing::TestXorb;
using testing::FooterSpec;
using testing::parse_or_fail;
using testing::shard_bytes;

// Two exported upload shards that share xorb `shared` and file `both`.
struct TwoUploads {
  TestXorb shared = make_xorb(1, 12), only_a = make_xorb(2, 5), only_b = make_xorb(3, 9);
  shard::FileRecord both = make_file(10, {{&shared, 0, 12}}, true, true);
  shard::FileRecord in_a = make_file(11, {{&shared, 3, 7}, {&only_a, 0, 5}}, true, true);
  shard::FileRecord in_b = make_file(12, {{&only_b, 2, 9}, {&shared, 11, 12}}, true, false);
  std::vector<std::uint8_t> a, b;

  TwoUploads() {
    shard::ShardWriter wa, wb;
    wa.add_file(both);
    wa.add_file(in_a);
    wa.add_xorb(shared.record);
    wa.add_xorb(only_a.record);
    wb.add_file(in_b);
    wb.add_file(both);
    wb.add_xorb(only_b.record);
    wb.add_xorb(shared.record);
    a = shard_bytes(wa, {.creation = 1'700'000'100, .expiry = 1'800'000'000});
    b = shard_bytes(wb, {.creation = 1'700'000'200, .expiry = 1'799'000'000});
  }

  // The two merged; a failure is reported and leaves no bytes.
  MergedShard merged(const MergeOptions& options = {}) const {
    std::vector<shard::ShardView> views{parse_or_fail(a), parse_or_fail(b)};
    auto m = merge_views(views, options);
    if (!m) {
      ADD_FAILURE() << m.error().to_string();
      return {};
    }
    return std::move(*m);
  }
};

std::vector<shard::FileTerm> terms_of(const shard::FileBlock& f) {
  std::vector<shard::FileTerm> out;
  for (std::uint32_t i = 0; i < f.num_terms(); ++i) out.push_back(f.term(i));
  return out;
}

bool same_terms(const std::vector<shard::FileTerm>& x, const std::vector<shard::FileTerm>& y) {
  return std::equal(x.begin(), x.end(), y.begin(), y.end(), [](const auto& p, const auto& q) {
    return p.xorb_hash == q.xorb_hash && p.chunk_start == q.chunk_start && p.chunk_end == q.chunk_end &&
           p.unpacked_bytes == q.unpacked_bytes;
  });
}

TEST(Merge, WritesEachXorbAndFileOnceAndKeepsEveryReconstruction) {
  TwoUploads u;
  MergedShard merged = u.merged();
  EXPECT_EQ(merged.stats.xorbs, 3u);
  EXPECT_EQ(merged.stats.files, 3u);
  EXPECT_EQ(merged.stats.chunks, 12u + 5 + 9);
  EXPECT_EQ(merged.stats.duplicate_xorbs, 1u);
  EXPECT_EQ(merged.stats.duplicate_files, 1u);

  auto v = parse_or_fail(merged.bytes);
  std::map<shard::Hash, std::vector<shard::FileTerm>> files;
  for (shard::FileBlock f : v.files()) {
    EXPECT_TRUE(f.has_verification());
    files[f.hash()] = terms_of(f);
  }
  ASSERT_EQ(files.size(), 3u);
  for (const auto* want : {&u.both, &u.in_a, &u.in_b}) {
    ASSERT_TRUE(files.count(want->header.file_hash));
    EXPECT_TRUE(same_terms(files[want->header.file_hash], want->terms));
  }
  std::map<shard::Hash, std::uint32_t> xorbs;
  for (shard::XorbBlock x : v.xorbs()) xorbs[x.hash()] = x.num_chunks();
  EXPECT_EQ(xorbs.size(), 3u);
  EXPECT_EQ(xorbs[u.shared.record.header.xorb_hash], 12u);
}

TEST(Merge, PassesEveryIntegrityCheckUnderItsName) {
  TwoUploads u;
  tests::TempDir dir("xetcache-merge");
  std::vector<std::string> members{testing::put_shard(dir.path(), u.a), testing::put_shard(dir.path(), u.b)};
  auto out = merge_files(members, dir.path());
  ASSERT_TRUE(out) << out.error().to_string();
  auto bytes = shard::testing::read_file(out->file.path);
  EXPECT_EQ(out->file.size, bytes.size());
  auto problems = shard::verify_shard(bytes, out->file.path);  // every check on, the name included
  for (const auto& e : problems) ADD_FAILURE() << e.to_string();
  EXPECT_EQ(out->file.path, dir / (shard::shard_file_hash(bytes).to_string() + ".mdb"));
  EXPECT_EQ(out->file.hash, shard::shard_file_hash(bytes));
}

TEST(Merge, LayoutIsTheClientsSectionsInHashOrderTablesSorted) {
  TwoUploads u;
  MergedShard merged = u.merged();
  auto v = parse_or_fail(merged.bytes);
  const shard::ShardFooter& f = *v.footer();

  std::vector<shard::Hash> files, xorbs;
  for (shard::FileBlock b : v.files()) files.push_back(b.hash());
  for (shard::XorbBlock b : v.xorbs()) xorbs.push_back(b.hash());
  EXPECT_TRUE(std::is_sorted(files.begin(), files.end(), shard::xet_order_less));
  EXPECT_TRUE(std::is_sorted(xorbs.begin(), xorbs.end(), shard::xet_order_less));

  // Tables contiguous after the CAS bookend: file, xorb, chunk, then the footer.
  EXPECT_EQ(f.file_lookup_offset, v.cas_end());
  EXPECT_EQ(f.xorb_lookup_offset, f.file_lookup_offset + 12 * f.file_lookup_num_entry);
  EXPECT_EQ(f.chunk_lookup_offset, f.xorb_lookup_offset + 12 * f.xorb_lookup_num_entry);
  EXPECT_EQ(f.footer_offset, f.chunk_lookup_offset + 16 * f.chunk_lookup_num_entry);
  EXPECT_EQ(f.footer_offset + 200, merged.bytes.size());
  ASSERT_EQ(f.file_lookup_num_entry, 3u);
  ASSERT_EQ(f.xorb_lookup_num_entry, 3u);
  ASSERT_EQ(f.chunk_lookup_num_entry, 26u);

  // File and xorb tables: the client writes them in section order, which is
  // the order of their 8-byte truncated keys; each index is its block.
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(v.file_lookup(i).truncated, files[i].truncated());
    EXPECT_EQ(v.xorb_lookup(i).truncated, xorbs[i].truncated());
    if (i > 0) {
      EXPECT_LT(v.file_lookup(i - 1).index, v.file_lookup(i).index);
      EXPECT_LT(v.xorb_lookup(i - 1).index, v.xorb_lookup(i).index);
    }
  }
  // The chunk table is sorted by truncated key (the client searches it) and
  // every row names its chunk.
  std::vector<std::uint8_t> seen(26, 0);
  std::vector<std::uint32_t> xorb_index;
  for (shard::XorbBlock b : v.xorbs()) xorb_index.push_back(std::uint32_t((b.offset() - v.cas_begin()) / 48));
  for (std::size_t i = 0; i < 26; ++i) {
    auto e = v.chunk_lookup(i);
    if (i > 0) {
      EXPECT_LE(v.chunk_lookup(i - 1).truncated, e.truncated);
    }
    auto at = std::find(xorb_index.begin(), xorb_index.end(), e.xorb_index);
    ASSERT_NE(at, xorb_index.end());
    shard::XorbBlock x = *std::next(v.xorbs().begin(), at - xorb_index.begin());
    ASSERT_LT(e.chunk_offset, x.num_chunks());
    EXPECT_EQ(x.chunk(e.chunk_offset).chunk_hash.truncated(), e.truncated);
  }
  auto canonical = shard::canonical_lookup_tables(v);
  for (std::size_t i = 0; i < 26; ++i) EXPECT_TRUE(shard::lookup_equal(v.chunk_lookup(i), canonical.chunks[i]));
}

TEST(Merge, FooterCarriesTheEarliestExpiryTheNewestCreationAndTheTotals) {
  TwoUploads u;
  MergedShard merged = u.merged();
  auto v = parse_or_fail(merged.bytes);
  const shard::ShardFooter& f = *v.footer();
  EXPECT_EQ(f.key_expiry, 1'799'000'000u);
  EXPECT_EQ(merged.expiry, 1'799'000'000u);
  EXPECT_EQ(f.creation_timestamp, 1'700'000'200u);
  EXPECT_TRUE(f.chunk_hash_key.is_zero());
  std::uint64_t in_xorbs = 0, on_disk = 0, materialized = 0;
  for (const auto* x : {&u.shared, &u.only_a, &u.only_b}) {
    in_xorbs += x->record.header.bytes_in_xorb;
    on_disk += x->record.header.bytes_on_disk;
  }
  for (const auto* file : {&u.both, &u.in_a, &u.in_b})
    for (const auto& t : file->terms) materialized += t.unpacked_bytes;
  EXPECT_EQ(f.stored_bytes, in_xorbs);
  EXPECT_EQ(f.stored_bytes_on_disk, on_disk);
  EXPECT_EQ(f.materialized_bytes, materialized);

  MergeOptions o;
  o.creation = 1'750'000'000;
  EXPECT_EQ(parse_or_fail(u.merged(o).bytes).footer()->creation_timestamp, 1'750'000'000u);
}

TEST(Merge, AFileSeenWithAndWithoutItsShaKeepsTheSha) {
  TestXorb x = make_xorb(5, 4);
  shard::FileRecord with = make_file(20, {{&x, 0, 4}}, true, true);
  shard::FileRecord without = with;
  without.metadata_ext.reset();
  shard::ShardWriter w1, w2;
  w1.add_file(without);
  w1.add_xorb(x.record);
  w2.add_file(with);
  auto b1 = shard_bytes(w1, {});
  auto b2 = shard_bytes(w2, {});
  std::vector<shard::ShardView> views{parse_or_fail(b1), parse_or_fail(b2)};
  auto merged = merge_views(views);
  ASSERT_TRUE(merged);
  auto v = parse_or_fail(merged->bytes);
  ASSERT_EQ(v.stats().files, 1u);
  shard::FileBlock f = *v.files().begin();
  ASSERT_TRUE(f.sha256());
  EXPECT_EQ(*f.sha256(), with.metadata_ext->hash);
  EXPECT_TRUE(shard::verify_shard(merged->bytes).empty());
}

TEST(Merge, KeyedRepliesOfOneKeyStayKeyed) {
  shard::Key key = shard::testing::seeded_hash(77);
  TestXorb x1 = make_xorb(6, 8, key), x2 = make_xorb(7, 3, key);
  shard::ShardWriter w1, w2;
  w1.add_xorb(x1.record);
  w2.add_xorb(x2.record);
  w2.add_xorb(x1.record);
  // Server replies: no lookup tables, offsets at the footer.
  FooterSpec spec{.key = key, .expiry = 1'760'000'000, .tables = shard::LookupTables::none_server_style};
  auto b1 = shard_bytes(w1, spec);
  spec.expiry = 1'760'000'500;
  auto b2 = shard_bytes(w2, spec);
  std::vector<shard::ShardView> views{parse_or_fail(b1), parse_or_fail(b2)};
  auto merged = merge_views(views);
  ASSERT_TRUE(merged) << merged.error().to_string();
  auto v = parse_or_fail(merged->bytes);
  EXPECT_EQ(v.chunk_key(), key);
  EXPECT_EQ(v.footer()->key_expiry, 1'760'000'000u);
  EXPECT_EQ(v.stats().xorbs, 2u);
  EXPECT_EQ(v.chunk_lookup_size(), 11u);  // the merged shard has the tables the replies lacked
  // Chunk hashes are copied as stored: keyed with the same key.
  shard::XorbBlock first = *v.xorbs().begin();
  const TestXorb& src = first.hash() == x1.record.header.xorb_hash ? x1 : x2;
  EXPECT_EQ(first.chunk(0).chunk_hash, shard::keyed_chunk_hash(key, src.raw[0]));
  EXPECT_TRUE(shard::verify_shard(merged->bytes).empty());
}

TEST(Merge, RealServerReplyMergesWithItself) {
  auto bytes = shard::testing::fixture_bytes();
  std::vector<shard::ShardView> views{parse_or_fail(bytes), parse_or_fail(bytes)};
  auto merged = merge_views(views);
  ASSERT_TRUE(merged) << merged.error().to_string();
  EXPECT_EQ(merged->stats.xorbs, 3u);
  EXPECT_EQ(merged->stats.chunks, 2117u);
  EXPECT_EQ(merged->stats.duplicate_xorbs, 3u);
  auto v = parse_or_fail(merged->bytes);
  EXPECT_EQ(v.chunk_key(), views[0].chunk_key());
  EXPECT_EQ(v.footer()->key_expiry, views[0].footer()->key_expiry);
  EXPECT_EQ(v.chunk_lookup_size(), 2117u);
  for (const auto& e : shard::verify_shard(merged->bytes)) ADD_FAILURE() << e.to_string();
}

void expect_refused(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b, const std::string& rule) {
  std::vector<shard::ShardView> views{parse_or_fail(a), parse_or_fail(b)};
  auto merged = merge_views(views);
  ASSERT_FALSE(merged);
  EXPECT_EQ(merged.error().rule, rule);
}

TEST(Merge, RefusesMembersUnderDifferentKeys) {
  TestXorb x = make_xorb(8, 2);
  shard::ShardWriter w;
  w.add_xorb(x.record);
  expect_refused(shard_bytes(w, {.key = shard::testing::seeded_hash(1)}), shard_bytes(w, {}), "xetcache.key_mismatch");
}

TEST(Merge, RefusesFilesWithAndWithoutVerification) {
  TestXorb x = make_xorb(9, 3);
  shard::ShardWriter w1, w2;
  w1.add_file(make_file(30, {{&x, 0, 3}}, true, false));
  w1.add_xorb(x.record);
  w2.add_file(make_file(31, {{&x, 0, 2}}, false, false));
  expect_refused(shard_bytes(w1, {}), shard_bytes(w2, {}), "xetcache.verification_mixed");
}

TEST(Merge, AMemberTheMergeReproducesIsNotReplaced) {
  tests::TempDir dir("xetcache-same");
  TestXorb x1 = make_xorb(40, 3), x2 = make_xorb(41, 2);
  shard::ShardWriter whole, part;
  whole.add_xorb(x1.record);
  whole.add_xorb(x2.record);
  whole.sort_sections_by_hash();  // laid out as the merge lays it out
  part.add_xorb(x2.record);
  std::string whole_path =
      testing::put_shard(dir.path(), shard_bytes(whole, {.creation = 20, .expiry = 1'800'000'000}));
  std::string part_path = testing::put_shard(dir.path(), shard_bytes(part, {.creation = 10, .expiry = 1'900'000'000}));
  std::vector<std::string> members{whole_path, part_path};
  auto out = merge_files(members, dir.path());
  ASSERT_TRUE(out) << out.error().to_string();
  EXPECT_EQ(out->file.path, whole_path);
  EXPECT_EQ(out->replaced, (std::vector<std::string>{part_path}));
}

TEST(Merge, TheMergedFileKeepsTheNewestMembersModificationTime) {
  // The client registers shards newest file first and stops indexing at its
  // entry cap: old content merged "now" must not jump ahead of newer shards.
  tests::TempDir dir("xetcache-mtime");
  TestXorb x1 = make_xorb(50, 3), x2 = make_xorb(51, 2);
  shard::ShardWriter a, b;
  a.add_xorb(x1.record);
  b.add_xorb(x2.record);
  std::string a_path = testing::put_shard(dir.path(), shard_bytes(a, {.creation = 10}));
  std::string b_path = testing::put_shard(dir.path(), shard_bytes(b, {.creation = 20}));
  auto set = [](const std::string& path, std::int64_t sec, long nsec) {
    const struct timespec times[2] = {{sec, 0}, {sec, nsec}};
    ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  };
  set(a_path, 1'700'000'000, 5);
  set(b_path, 1'700'086'400, 123'456'789);
  std::vector<std::string> members{a_path, b_path};
  auto out = merge_files(members, dir.path());
  ASSERT_TRUE(out) << out.error().to_string();
  struct stat st {};
  ASSERT_EQ(::stat(out->file.path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mtim.tv_sec, 1'700'086'400);
  EXPECT_EQ(st.st_mtim.tv_nsec, 123'456'789);

  // Written on its own, a file gets the time of writing.
  std::vector<std::uint8_t> bytes{9, 8, 7};
  auto w = write_shard_file(dir.path(), bytes);
  ASSERT_TRUE(w) << w.error().to_string();
  ASSERT_EQ(::stat(w->path.c_str(), &st), 0);
  EXPECT_GT(st.st_mtim.tv_sec, 1'700'086'400);
}

TEST(Merge, WritesThroughADotTempAndLeavesNoneBehind) {
  tests::TempDir dir("xetcache-write");
  std::vector<std::uint8_t> bytes{1, 2, 3, 4};
  auto w = write_shard_file(dir.path(), bytes, 0640);
  ASSERT_TRUE(w) << w.error().to_string();
  EXPECT_EQ(testing::names_in(dir.path()),
            (std::vector<std::string>{shard::shard_file_hash(bytes).to_string() + ".mdb"}));
  struct stat st {};
  ASSERT_EQ(::stat(w->path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);  // exactly, whatever the umask
  EXPECT_EQ(shard::testing::read_file(w->path), bytes);

  auto missing = write_shard_file(dir / "no-such-dir", bytes);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().rule, "xetcache.write");
  EXPECT_NE(missing.error().message.find(".mdb_temp"), std::string::npos);
}

TEST(Merge, PlanThenMergeShrinksACacheAndKeepsEveryChunk) {
  tests::TempDir dir("xetcache-e2e");
  std::vector<TestXorb> xorbs;
  for (int i = 0; i < 6; ++i) xorbs.push_back(make_xorb(100 + i, 4 + i));
  std::vector<std::string> paths;
  for (int i = 0; i < 6; ++i) {
    shard::ShardWriter w;
    w.add_xorb(xorbs[i].record);
    w.add_xorb(xorbs[(i + 1) % 6].record);  // each xorb in two shards
    w.add_file(make_file(200 + i, {{&xorbs[i], 0, 2}}, true, true));
    paths.push_back(testing::put_shard(
        dir.path(), shard_bytes(w, {.creation = 1'700'000'000u + i, .expiry = 1'800'000'000u + 60 * i})));
  }
  auto listed = list_shard_files(dir.path());
  ASSERT_TRUE(listed);
  CacheScan before = scan(*listed);
  ASSERT_EQ(before.shards.size(), 6u);
  ConsolidationPolicy policy;
  policy.min_small_shards = 4;
  auto plan = plan_consolidation(before.shards, policy, 1'750'000'000);
  ASSERT_EQ(plan.size(), 1u);
  ASSERT_EQ(plan[0].members.size(), 6u);
  std::vector<std::string> members;
  for (std::size_t i : plan[0].members) members.push_back(before.shards[i].path);
  auto out = merge_files(members, dir.path());
  ASSERT_TRUE(out) << out.error().to_string();
  EXPECT_EQ(out->expiry, plan[0].expiry);
  EXPECT_EQ(out->expiry, 1'800'000'000u);
  EXPECT_LE(out->file.size, plan[0].max_bytes);
  EXPECT_EQ(out->replaced, members);
  for (const auto& m : out->replaced) std::filesystem::remove(m);  // the caller's step, when safe

  auto after_list = list_shard_files(dir.path());
  ASSERT_TRUE(after_list);
  CacheScan after = scan(*after_list);
  ASSERT_EQ(after.shards.size(), 1u);
  std::uint64_t distinct_chunks = 0;
  for (const auto& x : xorbs) distinct_chunks += x.record.chunks.size();
  EXPECT_EQ(after.usage.chunk_entries, distinct_chunks);
  EXPECT_EQ(before.usage.chunk_entries, 2 * distinct_chunks);
  EXPECT_LT(after.usage.bytes, before.usage.bytes);
}

}  // namespace
}  // namespace dedupd::xetcache
