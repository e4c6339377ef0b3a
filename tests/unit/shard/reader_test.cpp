// One hand-made bad shard per validation rule of ShardView::parse (shard/reader.cpp); each
// asserts the rule name and the byte offset the error points at.
#include <gtest/gtest.h>

#include <set>

#include "shard/reader.hpp"
#include "shard/writer.hpp"
#include "test_support.hpp"

namespace dedupd::shard {
namespace {

using Bytes = std::vector<std::uint8_t>;

void expect_error(const Bytes& bytes, const std::string& rule, std::uint64_t offset) {
  auto v = ShardView::parse(bytes);
  ASSERT_FALSE(v.ok()) << "expected " << rule;
  EXPECT_EQ(v.error().rule, rule) << v.error().to_string();
  EXPECT_EQ(v.error().offset, offset) << v.error().to_string();
  EXPECT_FALSE(v.error().message.empty());
}

void put32(Bytes& b, std::uint64_t at, std::uint32_t v) { store_u32(b.data() + at, v); }
void put64(Bytes& b, std::uint64_t at, std::uint64_t v) { store_u64(b.data() + at, v); }

WriteOptions with(LookupTables t, bool footer = true) {
  WriteOptions o;
  o.lookup_tables = t;
  o.with_footer = footer;
  return o;
}

// small_shard() layout, pinned so offsets below read as plain numbers:
// header 0, file 1 at 48 (4 entries), file 2 at 240 (8 entries), file
// bookend 624, xorb A at 672 (12 chunks), xorb B at 1296 (5 chunks), CAS
// bookend 1584, then tables or the footer at 1632.
constexpr std::uint64_t kFile2 = 240, kFileBookend = 624, kXorbA = 672, kCasBookend = 1584, kCasEnd = 1632;

Bytes good(LookupTables t = LookupTables::none_server_style, bool footer = true) {
  return testing::small_shard().writer.write(with(t, footer));
}

TEST(ReaderRules, LayoutOfTheTestShard) {
  auto bytes = good();
  auto v = ShardView::parse(bytes);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ((*std::next(v->files().begin())).offset(), kFile2);
  EXPECT_TRUE(is_bookend(bytes.data() + kFileBookend));
  EXPECT_TRUE(is_bookend(bytes.data() + kCasBookend));
  EXPECT_EQ(v->cas_begin(), kXorbA);
  EXPECT_EQ(v->cas_end(), kCasEnd);
  EXPECT_EQ(bytes.size(), kCasEnd + 200);
}

TEST(ReaderRules, HeaderTruncated) {
  auto b = good();
  b.resize(47);
  expect_error(b, "header.truncated", 0);
}

TEST(ReaderRules, HeaderMagic) {
  auto b = good();
  b[14] = 1;  // the NUL after "HFRepoMetaData"
  expect_error(b, "header.magic", 0);
}

TEST(ReaderRules, HeaderVersion) {
  auto b = good();
  put64(b, 32, 3);
  expect_error(b, "header.version", 32);
}

TEST(ReaderRules, HeaderFooterSize) {
  auto b = good();
  put64(b, 40, 100);
  expect_error(b, "header.footer_size", 40);
}

TEST(ReaderRules, FooterAnnouncedButNoRoom) {
  Bytes b = ShardWriter().write(with(LookupTables::none_server_style, false));
  ASSERT_EQ(b.size(), 144u);
  put64(b, 40, 200);
  b.resize(b.size() + 8);  // not the cut upload form (below): bytes after the CAS bookend
  expect_error(b, "footer.truncated", 152);
}

// hf_xet 1.1.7-1.2.x upload their session shard cut where the lookup tables
// begin, with the header unchanged: it announces a 200-byte footer that is
// not there. It reads as a shard without footer.
TEST(ReaderRules, FooterAnnouncedOverBytesCutAtTheCasBookendIsTheUploadForm) {
  for (LookupTables t : {LookupTables::none_server_style, LookupTables::build}) {
    auto full = good(t);
    Bytes cut(full.begin(), full.begin() + kCasEnd);
    auto v = ShardView::parse(cut);
    ASSERT_TRUE(v.ok()) << v.error().to_string();
    EXPECT_FALSE(v->has_footer());
    EXPECT_EQ(v->header().footer_size, 200u);
    EXPECT_EQ(v->stats().files, 2u);
    EXPECT_EQ(v->stats().xorbs, 2u);
    EXPECT_EQ(v->cas_end(), kCasEnd);
  }
  // The empty session's: header and two bookends.
  Bytes empty = ShardWriter().write(with(LookupTables::none_server_style, false));
  put64(empty, 40, 200);
  EXPECT_TRUE(ShardView::parse(empty).ok());
  // Cut anywhere else, the error of the footer the header announces stands
  // (here its 200 bytes would overlap xorb B, at 1296).
  auto full = good(LookupTables::build);
  Bytes longer(full.begin(), full.begin() + kCasEnd + 16);
  expect_error(longer, "cas_info.count", 1296);
}

TEST(ReaderRules, EveryTruncationIsAnErrorNotACrash) {
  for (bool footer : {false, true}) {
    auto full = good(LookupTables::build, footer);
    std::set<std::string> rules;
    for (std::size_t len = 0; len < full.size(); ++len) {
      if (footer && len == kCasEnd) continue;  // the cut upload form, which parses (below)
      auto v = ShardView::parse(std::span(full.data(), len));
      ASSERT_FALSE(v.ok()) << "prefix of " << len << " bytes parsed";
      EXPECT_LE(v.error().offset, len);
      rules.insert(v.error().rule);
    }
    EXPECT_TRUE(rules.count("header.truncated"));
    EXPECT_TRUE(rules.count(footer ? "footer.version" : "cas_info.truncated"));
  }
}

TEST(ReaderRules, FileCountOverflowsTheFile) {
  auto b = good();
  put32(b, 48 + 36, 0xFFFFFFFF);  // with verification: 2 * 0xFFFFFFFF + 2 entries
  expect_error(b, "file_info.count", 48);
}

TEST(ReaderRules, XorbCountOverflowsTheFile) {
  auto b = good();
  put32(b, kXorbA + 36, 0xFFFFFFFF);
  expect_error(b, "cas_info.count", kXorbA);
}

TEST(ReaderRules, FileBookendMissing) {
  ShardWriter w;
  w.add_file(FileRecord{});
  Bytes b = w.write(with(LookupTables::none_server_style, false));
  b.resize(96);  // header and one empty file, then nothing
  expect_error(b, "file_info.truncated", 96);
}

TEST(ReaderRules, CasBookendMissingWithoutFooter) {
  auto b = good(LookupTables::none_server_style, false);
  b.resize(kCasBookend);
  expect_error(b, "cas_info.truncated", kCasBookend);
}

TEST(ReaderRules, CasBookendMissingBeforeFooter) {
  auto b = good();
  std::fill(b.begin() + kCasBookend, b.begin() + kCasEnd, 0);  // an empty xorb instead
  expect_error(b, "cas_info.truncated", kCasEnd);
}

TEST(ReaderRules, TrailingBytesWithoutFooter) {
  auto b = good(LookupTables::none_server_style, false);
  b.resize(b.size() + 48);
  expect_error(b, "shard.trailing_bytes", kCasEnd);
}

TEST(ReaderRules, UnaccountedBytesBeforeFooter) {
  auto b = good(LookupTables::build);
  const std::uint64_t fo = b.size() - 200;
  put64(b, fo + 64, 16);  // the chunk table claims 16 of its 17 entries
  expect_error(b, "shard.trailing_bytes", fo - 16);
}

TEST(ReaderRules, FooterVersion) {
  auto b = good();
  put64(b, kCasEnd, 2);
  expect_error(b, "footer.version", kCasEnd);
}

TEST(ReaderRules, FooterOffsets) {
  struct Case {
    std::uint64_t field;
    const char* rule;
  } cases[] = {{8, "footer.file_info_offset"}, {16, "footer.cas_info_offset"}, {192, "footer.footer_offset"}};
  for (const auto& c : cases)
    for (std::uint64_t value : {std::uint64_t(0), std::uint64_t(kCasEnd + 48), ~std::uint64_t(0)}) {
      auto b = good();
      put64(b, kCasEnd + c.field, value);
      expect_error(b, c.rule, kCasEnd + c.field);
    }
}

TEST(ReaderRules, LookupTableOffsetOutOfPlace) {
  struct Case {
    std::uint64_t field;
    const char* rule;
  } cases[] = {{24, "footer.file_lookup"}, {40, "footer.xorb_lookup"}, {56, "footer.chunk_lookup"}};
  for (const auto& c : cases)
    for (std::int64_t delta : {-12, 12, 1 << 20}) {
      auto b = good(LookupTables::build);
      const std::uint64_t fo = b.size() - 200;
      put64(b, fo + c.field, load_u64(b.data() + fo + c.field) + delta);
      expect_error(b, c.rule, fo + c.field);
    }
}

TEST(ReaderRules, LookupTablesOutOfOrder) {
  auto b = good(LookupTables::build);
  const std::uint64_t fo = b.size() - 200;
  // Xorb table first, then files: the file table no longer follows the CAS.
  put64(b, fo + 24, kCasEnd + 24);
  put64(b, fo + 40, kCasEnd);
  expect_error(b, "footer.file_lookup", fo + 24);
}

TEST(ReaderRules, LookupTableCountPastFooter) {
  struct Case {
    std::uint64_t field;
    const char* rule;
  } cases[] = {{32, "footer.file_lookup"}, {48, "footer.xorb_lookup"}, {64, "footer.chunk_lookup"}};
  for (const auto& c : cases)
    for (std::uint64_t count : {std::uint64_t(1000), ~std::uint64_t(0)}) {
      auto b = good(LookupTables::build);
      const std::uint64_t fo = b.size() - 200;
      put64(b, fo + c.field, count);
      expect_error(b, c.rule, fo + c.field);
    }
}

TEST(ReaderRules, LookupTableCountAboveTheShardsEntries) {
  auto b = good(LookupTables::build);
  const std::uint64_t fo = b.size() - 200;
  // Same bytes, split 3 + 1 instead of 2 + 2: three files claimed, two exist.
  put64(b, fo + 32, 3);
  put64(b, fo + 40, load_u64(b.data() + fo + 40) + 12);
  put64(b, fo + 48, 1);
  expect_error(b, "footer.lookup_count", fo + 24);
}

TEST(ReaderRules, LookupTableUnsorted) {
  auto b = good(LookupTables::build);
  const std::uint64_t fo = b.size() - 200;
  const std::uint64_t chunks = load_u64(b.data() + fo + 56);
  put64(b, chunks + 16 * 5, ~std::uint64_t(0));  // entry 5 now sorts last, so 6 is out of order
  expect_error(b, "lookup.unsorted", chunks + 16 * 6);
}

TEST(ReaderRules, ZeroCountTablesMayHaveAnyOffset) {
  auto b = good();
  put64(b, kCasEnd + 24, 0);
  put64(b, kCasEnd + 40, 12345);
  put64(b, kCasEnd + 56, ~std::uint64_t(0));
  EXPECT_TRUE(ShardView::parse(b).ok());
}

TEST(ReaderRules, VerificationOnSomeFilesOnly) {
  auto x = testing::make_xorb(1, 4);
  ShardWriter w;
  w.add_file(testing::make_file(1, {{&x, 0, 4}}, true, false));
  w.add_file(testing::make_file(2, {{&x, 1, 2}}, false, false));
  w.add_xorb(x.record);
  expect_error(w.write({}), "file_info.verification_mixed", 48 + 3 * 48 + 32);

  ShardWriter w2;  // and the other way round
  w2.add_file(testing::make_file(2, {{&x, 1, 2}}, false, false));
  w2.add_file(testing::make_file(1, {{&x, 0, 4}}, true, false));
  w2.add_xorb(x.record);
  expect_error(w2.write({}), "file_info.verification_mixed", 48 + 2 * 48 + 32);
}

TEST(ReaderRules, TermRangeEmpty) {
  auto b = good();
  put32(b, 96 + 40, 5);
  put32(b, 96 + 44, 5);
  expect_error(b, "file_info.term_range", 96 + 40);
}

TEST(ReaderRules, TermRangeReversed) {
  auto b = good();
  put32(b, 96 + 40, 6);
  put32(b, 96 + 44, 5);
  expect_error(b, "file_info.term_range", 96 + 40);
}

TEST(ReaderRules, TermRangePastItsXorb) {
  auto b = good();
  put32(b, 96 + 44, 13);  // xorb A has 12 chunks
  expect_error(b, "file_info.term_range", 96 + 44);
}

TEST(ReaderRules, TermOfAnAbsentXorbIsNotChecked) {
  auto b = good();
  b[96] ^= 1;  // the term now names a xorb this shard does not describe
  put32(b, 96 + 44, 1000000);
  EXPECT_TRUE(ShardView::parse(b).ok());
}

TEST(ReaderRules, ChunkByteRangePastItsXorb) {
  auto b = good();
  put32(b, kXorbA + 40, load_u32(b.data() + kXorbA + 40) - 1);
  expect_error(b, "cas_info.chunk_range", kXorbA + 48 * 12 + 32);
}

TEST(ReaderRules, ChunkByteRangeDoesNotWrapAround) {
  auto b = good();
  put32(b, kXorbA + 48 + 32, 0xFFFFFFF0);  // start + size overflows 32 bits
  expect_error(b, "cas_info.chunk_range", kXorbA + 48 + 32);
}

TEST(ReaderRules, ErrorsNameRuleAndOffsetInToString) {
  auto b = good();
  put64(b, 32, 9);
  auto v = ShardView::parse(b);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error().to_string().rfind("header.version at offset 32: ", 0), 0u);
}

}  // namespace
}  // namespace dedupd::shard
