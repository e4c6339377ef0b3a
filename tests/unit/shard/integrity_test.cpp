// Integrity checks: a good shard is clean, and each kind of damage gives
// exactly the problem it should, at the right offset.
#include <gtest/gtest.h>

#include <algorithm>

#include "shard/integrity.hpp"
#include "shard/verify.hpp"
#include "shard/writer.hpp"
#include "test_support.hpp"

namespace dedupd::shard {
namespace {

using Bytes = std::vector<std::uint8_t>;
using RuleAt = std::pair<std::string, std::uint64_t>;

std::vector<RuleAt> problems(const Bytes& b, std::optional<std::string_view> name = std::nullopt,
                             const IntegrityOptions& o = {}) {
  std::vector<RuleAt> out;
  for (const auto& e : verify_shard(b, name, o)) {
    EXPECT_FALSE(e.message.empty());
    out.emplace_back(e.rule, e.offset);
  }
  return out;
}

Bytes intact(LookupTables t = LookupTables::build) {
  WriteOptions o;
  o.lookup_tables = t;
  return testing::small_shard(true, true).writer.write(o);
}

std::string name_of(const Bytes& b) { return shard_file_hash(b).to_string() + ".mdb"; }

// small_shard(): file 2 at 240 has terms at 288, 336, 384 and verification
// entries at 432, 480, 528; xorb A at 672, xorb B at 1296.
constexpr std::uint64_t kXorbAAt = 672, kXorbBAt = 1296, kFile2Verification = 432;

TEST(Integrity, GoodUnkeyedShardWithVerificationIsClean) {
  for (auto t : {LookupTables::build, LookupTables::none_server_style}) {
    auto b = intact(t);
    EXPECT_EQ(problems(b), std::vector<RuleAt>{});
    EXPECT_EQ(problems(b, "/var/cache/xet/shard-cache/" + name_of(b)), std::vector<RuleAt>{});
  }
}

TEST(Integrity, FlippedChunkHashBreaksItsXorbAndTheTermsCoveringIt) {
  auto b = intact();
  b[kXorbBAt + 48 * 3 + 31] ^= 0x40;  // chunk 3 of xorb B, outside the truncated key
  EXPECT_EQ(problems(b), (std::vector<RuleAt>{{"integrity.xorb_hash", kXorbBAt},
                                              {"integrity.verification", kFile2Verification + 48}}));
}

TEST(Integrity, FlippedChunkHashWithoutVerificationIsOneProblem) {
  auto s = testing::small_shard(false, false);
  auto b = s.writer.write({});
  // Without verification entries, files are 2 and 4 entries: xorb A at 384.
  b[384 + 48 * 7 + 20] ^= 1;
  EXPECT_EQ(problems(b), (std::vector<RuleAt>{{"integrity.xorb_hash", 384}}));
}

TEST(Integrity, FlippedVerificationHashIsOneProblem) {
  auto b = intact();
  b[kFile2Verification + 2 * 48 + 7] ^= 1;
  EXPECT_EQ(problems(b), (std::vector<RuleAt>{{"integrity.verification", kFile2Verification + 96}}));
}

TEST(Integrity, WrongNameIsOneProblem) {
  auto b = intact();
  std::string name = name_of(b);
  name[10] = name[10] == '0' ? '1' : '0';
  EXPECT_EQ(problems(b, name), (std::vector<RuleAt>{{"integrity.file_name", 0}}));
  IntegrityOptions off;
  off.file_name = false;
  EXPECT_EQ(problems(b, name, off), std::vector<RuleAt>{});
}

TEST(Integrity, NamesOfOtherFormsAreNotChecked) {
  auto b = intact();
  for (std::string name : {std::string("shard.mdb"), std::string("upload.bin"), std::string(64, 'a') + ".mdb_temp",
                           "." + std::string(64, 'a') + ".mdb", std::string(64, 'g') + ".mdb"})
    EXPECT_EQ(problems(b, name), std::vector<RuleAt>{}) << name;
  EXPECT_TRUE(is_shard_file_name("/x/" + std::string(64, 'A') + ".mdb"));
  EXPECT_FALSE(is_shard_file_name(std::string(63, 'a') + ".mdb"));
}

TEST(Integrity, TermBytesMustMatchItsChunks) {
  auto b = intact();
  store_u32(b.data() + 336 + 36, load_u32(b.data() + 336 + 36) + 1);  // file 2, term 1
  EXPECT_EQ(problems(b), (std::vector<RuleAt>{{"integrity.term_bytes", 336 + 36}}));
}

TEST(Integrity, TermOfAnotherShardsXorbIsNotAProblem) {
  auto x = testing::make_xorb(1, 4);
  auto elsewhere = testing::make_xorb(2, 4);
  ShardWriter w;
  w.add_file(testing::make_file(1, {{&x, 0, 2}, {&elsewhere, 1, 3}}, true, true));
  w.add_xorb(x.record);  // `elsewhere` lives in some other shard
  EXPECT_EQ(problems(w.write({})), std::vector<RuleAt>{});
}

TEST(Integrity, KeyedShardsSkipHashChecksTheyCannotDo) {
  Key key = testing::seeded_hash(5);
  auto x = testing::make_xorb(1, 6, key);
  ShardWriter w;
  w.add_xorb(x.record);
  WriteOptions o;
  o.footer.chunk_hash_key = key;
  auto b = w.write(o);
  // The header holds the raw-chunk xorb hash; the entries are keyed.
  EXPECT_EQ(problems(b), std::vector<RuleAt>{});
  b[96 + 31] ^= 1;
  EXPECT_EQ(problems(b), std::vector<RuleAt>{});
}

TEST(Integrity, LookupTableEntryPointingElsewhere) {
  auto b = intact();
  const std::uint64_t fo = b.size() - 200;
  const std::uint64_t xorbs = load_u64(b.data() + fo + 40);
  // Swap the indices of the two xorb entries: keys stay sorted, targets are wrong.
  std::uint32_t i0 = load_u32(b.data() + xorbs + 8), i1 = load_u32(b.data() + xorbs + 20);
  store_u32(b.data() + xorbs + 8, i1);
  store_u32(b.data() + xorbs + 20, i0);
  auto p = problems(b);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].first, "integrity.lookup_table");
  EXPECT_TRUE(p[0].second == xorbs || p[0].second == xorbs + 12) << p[0].second;
}

TEST(Integrity, EqualKeysInAnyIndexOrderAreAccepted) {
  // The same chunk in two xorbs gives two chunk-table entries with one key;
  // the Rust client sorts by key only, so either order is legitimate.
  auto x = testing::make_xorb(1, 3);
  auto y = x;
  y.record.header.bytes_on_disk += 1;  // a second upload of the same xorb
  ShardWriter w;
  w.add_xorb(x.record);
  w.add_xorb(y.record);
  WriteOptions o;
  o.lookup_tables = LookupTables::build;
  auto b = w.write(o);
  const std::uint64_t fo = b.size() - 200;
  const std::uint64_t chunks = load_u64(b.data() + fo + 56);
  bool swapped = false;
  for (int i = 0; i + 1 < 6 && !swapped; ++i) {
    std::uint8_t* e = b.data() + chunks + 16 * i;
    if (load_u64(e) == load_u64(e + 16)) {
      std::swap_ranges(e + 8, e + 16, e + 24);
      swapped = true;
    }
  }
  ASSERT_TRUE(swapped);
  EXPECT_EQ(problems(b), std::vector<RuleAt>{});
}

TEST(Integrity, AChunkTableNamingAChunkTwiceIsReported) {
  // Entry 1 becomes a copy of entry 0: the keys stay sorted and every entry
  // names a real chunk, but one chunk is named twice and another not at all.
  auto b = intact();
  const std::uint64_t fo = b.size() - 200;
  const std::uint64_t chunks = load_u64(b.data() + fo + 56);
  std::copy_n(b.data() + chunks, 16, b.data() + chunks + 16);
  EXPECT_EQ(problems(b), (std::vector<RuleAt>{{"integrity.lookup_table", chunks + 16}}));
}

TEST(Integrity, AChunkTableEntryPastItsXorbIsReported) {
  auto b = intact();
  const std::uint64_t fo = b.size() - 200;
  const std::uint64_t chunks = load_u64(b.data() + fo + 56), n = load_u64(b.data() + fo + 64);
  store_u32(b.data() + chunks + 16 * (n - 1) + 12, 1000);  // the last entry's chunk offset
  auto p = problems(b);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0], RuleAt("integrity.lookup_table", chunks + 16 * (n - 1)));
}

TEST(Integrity, EachCheckCanBeSwitchedOff) {
  auto b = intact();
  b[kXorbBAt + 48 * 3 + 31] ^= 0x40;
  IntegrityOptions o;
  o.xorb_hashes = false;
  EXPECT_EQ(problems(b, std::nullopt, o), (std::vector<RuleAt>{{"integrity.verification", kFile2Verification + 48}}));
  o.verification = false;
  EXPECT_EQ(problems(b, std::nullopt, o), std::vector<RuleAt>{});
}

TEST(Verify, StructureStopsAtFirstProblemButTheNameIsStillChecked) {
  auto b = intact();
  std::string name = name_of(b);
  b.resize(b.size() - 1);
  auto p = problems(b, name);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].first.rfind("integrity.", 0), std::string::npos);  // structural first
  EXPECT_EQ(p[1], RuleAt("integrity.file_name", 0));
}

TEST(Verify, ReportsEveryIntegrityProblem) {
  auto b = intact(LookupTables::none_server_style);
  b[kXorbAAt + 48 + 31] ^= 1;
  b[kXorbBAt + 48 + 31] ^= 1;
  auto p = problems(b);
  EXPECT_EQ(std::count(p.begin(), p.end(), RuleAt("integrity.xorb_hash", kXorbAAt)), 1);
  EXPECT_EQ(std::count(p.begin(), p.end(), RuleAt("integrity.xorb_hash", kXorbBAt)), 1);
}

}  // namespace
}  // namespace dedupd::shard
