// The check of a xorb range's bytes before the endpoint's cache keeps them
// (daemon/answers/xorb_range_check.hpp): chunks of every scheme in any
// pieces, the whole xorb known by its hash, the index's chunks by theirs,
// what of a range may be relayed before it is all in, and broken bytes
// refused.
#include "daemon/answers/xorb_range_check.hpp"

#include <blake3.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <tuple>

#include "serialized_xorbs.hpp"

// In the namespace of the helpers (serialized_xorbs.hpp), so their
// names are found before another test's of the same name in a unity batch;
// named, not anonymous, for the same reason.
namespace dedupd::daemon::answers::download_testing {
namespace xorb_range_check_test {

// The digest as the header says: each chunk's 8-byte header and the hash
// of its data, chunks [a, b) of the xorb.
shard::Hash digest_of(const Xorb& x, std::size_t a, std::size_t b) {
  blake3_hasher h;
  blake3_hasher_init(&h);
  for (std::size_t i = a; i < b; ++i) {
    blake3_hasher_update(&h, x.serialized[i].data(), 8);
    const shard::Hash raw = shard::chunk_hash_of_data(x.data[i]);
    blake3_hasher_update(&h, raw.bytes.data(), raw.bytes.size());
  }
  shard::Hash out;
  blake3_hasher_finalize(&h, out.bytes.data(), out.bytes.size());
  return out;
}

TEST(XetRangeCheck, UngroupingUndoesXetCoresFourByteGrouping) {
  // 0..9 grouped: positions 0,4,8 | 1,5,9 | 2,6 | 3,7
  Bytes grouped{0, 4, 8, 1, 5, 9, 2, 6, 3, 7}, out(10);
  ungroup4(grouped, out.data());
  EXPECT_EQ(out, (Bytes{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
}

TEST(XetRangeCheck, ChunksOfEverySchemeInAnyPiecesGiveTheirBoundariesAndDigest) {
  Xorb x;
  ASSERT_LT(x.serialized[1].size(), x.data[1].size() + 8) << "the LZ4 chunk should be smaller than its data";
  for (std::size_t piece : {1u, 7u, 8u, 4096u, 100000u}) {
    auto got = check(x.range(1, 4), x.expect(1, 4), piece);
    ASSERT_TRUE(got) << piece << ": " << got.error().to_string();
    EXPECT_EQ(got->chunk_starts, (std::vector<std::uint32_t>{0, x.starts[2] - x.starts[1], x.starts[3] - x.starts[1],
                                                             x.starts[4] - x.starts[1]}));
    EXPECT_EQ(got->digest, digest_of(x, 1, 4));
    EXPECT_EQ(got->level, CheckLevel::structure);
  }
}

TEST(XetRangeCheck, TheWholeXorbIsKnownByItsHash) {
  Xorb x;
  auto got = check(x.bytes, x.expect(0, 4));
  ASSERT_TRUE(got) << got.error().to_string();
  EXPECT_EQ(got->level, CheckLevel::xorb_hash);
  // A prefix from chunk 0 is not the whole xorb, and that is no error.
  auto prefix = check(x.range(0, 2), x.expect(0, 2));
  ASSERT_TRUE(prefix) << prefix.error().to_string();
  EXPECT_EQ(prefix->level, CheckLevel::structure);
}

TEST(XetRangeCheck, ChunksTheIndexHoldsMustHashAsItHoldsThem) {
  Xorb x;
  shard::Key key{};
  key.bytes.fill(9);
  for (const std::optional<shard::Key>& k : {std::optional<shard::Key>(), std::optional<shard::Key>(key)}) {
    auto e = x.expect(1, 3);
    e.known = x.known(k);
    e.key = k;
    auto got = check(x.range(1, 3), e);
    ASSERT_TRUE(got) << got.error().to_string();
    EXPECT_EQ(got->level, CheckLevel::index);
  }
  // A chunk of other bytes of the same sizes: structure passes, the index does not.
  Xorb other;
  other.data[1] = text_data(9000, 78);
  auto e = x.expect(1, 3);
  e.known = x.known();
  Bytes forged = chunk(other.data[1], 1);
  Bytes bytes = forged;
  bytes.insert(bytes.end(), x.serialized[2].begin(), x.serialized[2].end());
  e.length = bytes.size();
  auto got = check(bytes, e);
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().rule, "xet_download.verify");
  EXPECT_NE(got.error().message.find("chunk 1 is not the one the index holds"), std::string::npos)
      << got.error().message;
}

// Where the CAS's chunk range is not known (a tier host's fill, a cache
// file checked again) and the index holds the xorb: the range's chunks
// must be the xorb's, in a row, the first found by its hash.
TEST(XetRangeCheck, ARangeWhosePlaceIsNotSaidIsFoundInTheXorbByItsChunks) {
  Xorb x;
  auto unplaced = [&](std::size_t a, std::size_t b) {
    auto e = x.expect(std::uint32_t(a), std::uint32_t(b));
    e.first_chunk = e.end_chunk = 0;
    e.known = x.known();
    return e;
  };
  auto middle = check(x.range(1, 3), unplaced(1, 3));
  ASSERT_TRUE(middle) << middle.error().to_string();
  EXPECT_EQ(middle->level, CheckLevel::index);
  auto whole = check(x.bytes, unplaced(0, 4), 4096);
  ASSERT_TRUE(whole) << whole.error().to_string();
  EXPECT_EQ(whole->level, CheckLevel::xorb_hash);

  // A chunk of other bytes of the same size: first, or after one that was found.
  Xorb other;
  other.data[2] = text_data(7003, 99);
  Bytes forged = chunk(other.data[2], 2);
  auto e = unplaced(2, 3);
  e.length = forged.size();
  auto first = check(forged, e);
  ASSERT_FALSE(first);
  EXPECT_NE(first.error().message.find("first chunk is none the index holds"), std::string::npos)
      << first.error().message;
  Bytes after = x.range(1, 2);
  after.insert(after.end(), forged.begin(), forged.end());
  e = unplaced(1, 3);
  e.length = after.size();
  auto next = check(after, e);
  ASSERT_FALSE(next);
  EXPECT_NE(next.error().message.find("chunk 1 of the range follows none"), std::string::npos) << next.error().message;
  // Chunks of the xorb, but not in a row: 1 then 3.
  Bytes gap = x.range(1, 2);
  Bytes third = x.range(3, 4);
  gap.insert(gap.end(), third.begin(), third.end());
  e.length = gap.size();
  EXPECT_FALSE(check(gap, e));
}

TEST(XetRangeCheck, AChunkTheXorbHoldsTwiceIsFollowedFromEachOfItsPlaces) {
  // The index's xorb: A B A C (A at 0 and 2); the bytes are Xorb's chunks
  // 0 (A), 1 (B) and 3 (C).
  Xorb x;
  const auto k = x.known();
  RangeExpectation e;
  e.known = {k[0], k[1], k[0], k[3]};
  std::vector<shard::HashAndSize> leaves;
  for (const auto& c : e.known) leaves.push_back({c.stored, c.unpacked});
  e.xorb = shard::xorb_hash(leaves);  // (all four: the whole xorb, its hash checked)
  for (auto [chunks, ok] : std::vector<std::pair<std::vector<std::size_t>, bool>>{
           {{0, 1}, true}, {{0, 3}, true}, {{0, 1, 0, 3}, true}, {{0, 0}, false}, {{1, 3}, false}}) {
    Bytes b;
    for (auto c : chunks) b.insert(b.end(), x.serialized[c].begin(), x.serialized[c].end());
    e.length = b.size();
    auto got = check(b, e);
    EXPECT_EQ(bool(got), ok) << chunks.size() << " chunks from " << chunks.front() << ": "
                             << (got ? "passed" : got.error().message);
  }
}

// What a fill may relay before the range is all in: whole chunks that
// passed, never a byte of the chunk in progress or of one that failed.
TEST(XetRangeCheck, CheckedBytesAreTheWholeChunksThatPassed) {
  Xorb x;
  // The largest chunk boundary at or before `fed` (a boundary is passed
  // once the chunk before it is all in).
  auto boundary_before = [&](std::size_t fed) {
    std::uint64_t b = 0;
    for (auto s : x.starts)
      if (s <= fed) b = s;
    return b;
  };
  for (std::size_t piece : {1u, 13u, 5000u}) {
    RangeChecker checker(x.expect(0, 4));
    EXPECT_EQ(checker.checked_bytes(), 0u);
    for (std::size_t at = 0; at < x.bytes.size(); at += piece) {
      const std::size_t n = std::min(piece, x.bytes.size() - at);
      ASSERT_TRUE(checker.feed(std::span<const std::uint8_t>(x.bytes).subspan(at, n)));
      ASSERT_EQ(checker.checked_bytes(), boundary_before(at + n)) << "piece " << piece << ", fed " << at + n;
    }
    EXPECT_EQ(checker.checked_bytes(), x.bytes.size());
    EXPECT_EQ(checker.last_checked_start(), x.starts[3]);
    EXPECT_TRUE(checker.finish());
  }
  // Chunk 2 broken on purpose: with the index's chunks, a flipped byte of
  // its data; without them, its LZ4 bytes cut. Neither it nor anything
  // after it is ever counted checked; chunks 0 and 1 are.
  for (bool known : {true, false}) {
    Bytes bad = x.bytes;
    auto e = x.expect(0, 4);
    if (known) {
      e.known = x.known();
      Xorb other;
      other.data[2] = text_data(7003, 99);
      Bytes forged = chunk(other.data[2], 2);
      bad = x.range(0, 2);
      bad.insert(bad.end(), forged.begin(), forged.end());
      Bytes rest = x.range(3, 4);
      bad.insert(bad.end(), rest.begin(), rest.end());
      e.length = bad.size();
    } else {
      bad[x.starts[2] + 8] ^= 0xff;  // the first LZ4 token of chunk 2
    }
    RangeChecker checker(e);
    std::size_t at = 0;
    for (; at < bad.size(); ++at) {
      auto fed = checker.feed(std::span<const std::uint8_t>(bad).subspan(at, 1));
      EXPECT_LE(checker.checked_bytes(), x.starts[2]) << (known ? "known" : "structure") << ", fed " << at + 1;
      if (!fed) break;
    }
    EXPECT_LT(at, bad.size()) << (known ? "known" : "structure") << ": the broken chunk passed";
    EXPECT_EQ(checker.checked_bytes(), x.starts[2]);
  }
}

TEST(XetRangeCheck, BrokenBytesAreRefused) {
  Xorb x;
  const Bytes good = x.range(0, 4);
  auto refused = [&](const Bytes& bytes, RangeExpectation e, const std::string& why) {
    auto got = check(bytes, std::move(e));
    EXPECT_FALSE(got) << why;
    if (!got) {
      EXPECT_EQ(got.error().rule, "xet_download.verify") << why;
    }
  };
  // Short, long, cut inside a chunk.
  refused(Bytes(good.begin(), good.end() - 1), x.expect(0, 4), "one byte short");
  {
    auto e = x.expect(0, 4);
    e.length += 1;
    Bytes more = good;
    more.push_back(0);
    refused(more, e, "a byte after the last chunk");
    refused(good, e, "the range is one byte longer than its chunks");
  }
  // Another chunk count than the CAS said.
  {
    auto e = x.expect(0, 4);
    e.end_chunk = 3;
    refused(good, e, "four chunks for three");
  }
  // A header of another version, an unknown scheme, a wrong unpacked size.
  for (auto [at, value, why] : {std::tuple{0u, 1u, "version 1"}, std::tuple{4u, 7u, "scheme 7"},
                                std::tuple{x.starts[1] + 5, 1u, "LZ4 chunk's unpacked size off"}}) {
    Bytes bad = good;
    bad[at] = std::uint8_t(bad[at] + value);
    refused(bad, x.expect(0, 4), why);
  }
  // The whole xorb with a flipped byte in a raw chunk: with the index's
  // chunks it is refused; without, nothing says the range is the whole
  // xorb, so it passes as structure only (not as the xorb).
  {
    Bytes bad = good;
    bad[100] ^= 1;
    auto e = x.expect(0, 4);
    e.known = x.known();
    refused(bad, e, "a flipped raw byte, the index holding the xorb");
    auto got = check(bad, x.expect(0, 4));
    ASSERT_TRUE(got);
    EXPECT_EQ(got->level, CheckLevel::structure);
  }
  // Nothing at all (a url_range holds at least a byte).
  refused(Bytes{}, RangeExpectation{}, "an empty range");
  // A raw chunk whose stored size is not its unpacked size.
  refused(
      Bytes{0, 9, 0, 0, 0, 10, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1},
      [] {
        RangeExpectation e;
        e.length = 17;
        return e;
      }(),
      "raw chunk stored 9 for 10");
}

}  // namespace xorb_range_check_test
}  // namespace dedupd::daemon::answers::download_testing
