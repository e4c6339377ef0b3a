// The endpoint's download cache as dedupd sees it: the check of a xorb
// range's bytes (daemon/answers/xorb_range_check.hpp) and the checked
// objects with their nginx cache files (download_objects.hpp), and a
// rewrite that reads a range out of a cached object.
#include <blake3.h>
#include <gtest/gtest.h>
#include <lz4.h>
#include <sys/stat.h>
#include <utime.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "daemon/answers/download_objects.hpp"
#include "daemon/answers/reconstruction_rewrite.hpp"
#include "daemon/answers/xorb_range_check.hpp"
#include "tests/support/temp_dir.hpp"

namespace dedupd::daemon::answers {
namespace xet_download_cache_test {

using Bytes = std::vector<std::uint8_t>;

// A serialized chunk: the 8-byte header, then the stored bytes.
Bytes chunk(const Bytes& data, std::uint8_t scheme, std::uint8_t version = 0) {
  Bytes stored = data;
  if (scheme != 0) {
    Bytes in = data;
    if (scheme == 2) {  // group bytes by position mod 4, as xet-core does before LZ4
      std::size_t at = 0;
      for (std::size_t g = 0; g < 4; ++g)
        for (std::size_t i = g; i < data.size(); i += 4) in[at++] = data[i];
    }
    stored.resize(std::size_t(LZ4_compressBound(int(in.size()))));
    int n = LZ4_compress_default(reinterpret_cast<const char*>(in.data()), reinterpret_cast<char*>(stored.data()),
                                 int(in.size()), int(stored.size()));
    stored.resize(std::size_t(n));
  }
  auto u24 = [](std::size_t v) { return Bytes{std::uint8_t(v), std::uint8_t(v >> 8), std::uint8_t(v >> 16)}; };
  Bytes out{version};
  for (auto b : u24(stored.size())) out.push_back(b);
  out.push_back(scheme);
  for (auto b : u24(data.size())) out.push_back(b);
  out.insert(out.end(), stored.begin(), stored.end());
  return out;
}

Bytes random_data(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  Bytes out(n);
  for (auto& b : out) b = std::uint8_t(rng());
  return out;
}

// Compressible, so LZ4 stores it smaller.
Bytes text_data(std::size_t n, unsigned seed) {
  Bytes out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = std::uint8_t('a' + (i * 7 + seed + i / 13) % 5);
  return out;
}

// A xorb of four chunks, one of each scheme (raw, LZ4, grouped LZ4, raw).
struct Xorb {
  std::vector<Bytes> data;
  std::vector<Bytes> serialized;
  std::vector<std::uint32_t> starts;  // of each chunk, and the end
  Bytes bytes;
  shard::Hash hash;

  Xorb() {
    data = {random_data(5000, 1), text_data(9000, 2), text_data(7003, 3), random_data(3001, 4)};
    const std::uint8_t schemes[] = {0, 1, 2, 0};
    std::vector<shard::HashAndSize> leaves;
    for (std::size_t i = 0; i < data.size(); ++i) {
      serialized.push_back(chunk(data[i], schemes[i]));
      starts.push_back(std::uint32_t(bytes.size()));
      bytes.insert(bytes.end(), serialized.back().begin(), serialized.back().end());
      leaves.push_back({shard::chunk_hash_of_data(data[i]), data[i].size()});
    }
    starts.push_back(std::uint32_t(bytes.size()));
    hash = shard::xorb_hash(leaves);
  }
  // Bytes of chunks [a, b).
  Bytes range(std::size_t a, std::size_t b) const {
    return Bytes(bytes.begin() + starts[a], bytes.begin() + starts[b]);
  }
  RangeExpectation expect(std::uint32_t a, std::uint32_t b) const {
    RangeExpectation e;
    e.xorb = hash;
    e.length = starts[b] - starts[a];
    e.first_chunk = a;
    e.end_chunk = b;
    return e;
  }
  std::vector<KnownChunk> known(const std::optional<shard::Key>& key = std::nullopt) const {
    std::vector<KnownChunk> out;
    for (const auto& d : data) {
      auto raw = shard::chunk_hash_of_data(d);
      out.push_back({key ? shard::keyed_chunk_hash(*key, raw) : raw, std::uint32_t(d.size())});
    }
    return out;
  }
};

// The bytes through a checker in pieces of `piece` bytes.
base::Result<CheckedRange> check(const Bytes& bytes, RangeExpectation e, std::size_t piece = 1000) {
  RangeChecker checker(std::move(e));
  for (std::size_t at = 0; at < bytes.size(); at += piece) {
    auto fed = checker.feed(std::span<const std::uint8_t>(bytes).subspan(at, std::min(piece, bytes.size() - at)));
    if (!fed) return fed.error();
  }
  return checker.finish();
}

shard::Hash blake3_of(const Bytes& bytes) {
  blake3_hasher h;
  blake3_hasher_init(&h);
  blake3_hasher_update(&h, bytes.data(), bytes.size());
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
    EXPECT_EQ(got->digest, blake3_of(x.range(1, 4)));
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

// An nginx cache file of `key` with `body`: a binary header, the KEY line,
// the upstream's header block, the body.
void write_cache_file(const std::filesystem::path& file, const std::string& key, const Bytes& body) {
  std::filesystem::create_directories(file.parent_path());
  std::string head(40, '\x01');
  head += "\nKEY: " + key + "\nHTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  std::ofstream f(file, std::ios::binary | std::ios::trunc);
  f.write(head.data(), std::streamsize(head.size()));
  f.write(reinterpret_cast<const char*>(body.data()), std::streamsize(body.size()));
}

TEST(XetDownloadObjects, CacheFilesAreWhereNginxPutsThem) {
  // md5("xet1:<64 a>:0-999") = de2a6c0c4da4e39c0a9776b6fe2ccb66; levels=1:2.
  EXPECT_EQ(object_cache_file("/c", object_cache_key(std::string(64, 'a'), 0, 999)),
            std::filesystem::path("/c/6/b6/de2a6c0c4da4e39c0a9776b6fe2ccb66"));
}

class XetDownloadObjectsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    xorb = x.hash.to_string();
    auto checked = check(x.bytes, x.expect(0, 4));
    ASSERT_TRUE(checked);
    objects.add(xorb, whole, *checked);
    file = object_cache_file(dir.path(), object_cache_key(xorb, whole.start, whole.end));
    write_cache_file(file, object_cache_key(xorb, whole.start, whole.end), x.bytes);
  }
  RangeExpectation whole_expected() const {
    auto e = x.expect(0, 4);
    e.end_chunk = 0;  // as a grant knows it
    return e;
  }
  Xorb x;
  std::string xorb;
  ObjectSpan whole{100000, 100000 + x.bytes.size() - 1};
  tests::TempDir dir{"xet-objects"};
  std::filesystem::path file;
  DownloadObjects objects{10};
};

TEST_F(XetDownloadObjectsTest, ARangeOnChunkBoundariesInsideACachedObjectIsCovered) {
  const std::uint64_t s = whole.start;
  auto f = objects.covering(xorb, s + x.starts[1], s + x.starts[3] - 1, dir.path());
  ASSERT_TRUE(f);
  EXPECT_EQ(f->start, whole.start);
  EXPECT_EQ(f->end, whole.end);
  EXPECT_TRUE(objects.covering(xorb, whole.start, whole.end, dir.path()));
  // Off a boundary, past the object, another xorb: not covered.
  EXPECT_FALSE(objects.covering(xorb, s + x.starts[1] + 1, s + x.starts[3] - 1, dir.path()));
  EXPECT_FALSE(objects.covering(xorb, s + x.starts[1], s + x.starts[3], dir.path()));
  EXPECT_FALSE(objects.covering(xorb, s + x.starts[1], whole.end + 100, dir.path()));
  EXPECT_FALSE(objects.covering(std::string(64, 'e'), s, whole.end, dir.path()));
  // Its cache file gone (evicted): not covered.
  std::filesystem::remove(file);
  EXPECT_FALSE(objects.covering(xorb, s + x.starts[1], s + x.starts[3] - 1, dir.path()));
}

TEST_F(XetDownloadObjectsTest, AnIntactFileIsServedAndAScribbledOneRemoved) {
  EXPECT_EQ(objects.check_file(xorb, whole, dir.path(), whole_expected()), CacheFile::intact);
  EXPECT_EQ(objects.check_file(xorb, whole, dir.path(), whole_expected()), CacheFile::intact);
  // Scribbled in the middle, the size kept.
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(std::streamoff(std::filesystem::file_size(file) / 2));
    f.write("scribble", 8);
  }
  ::utime(file.c_str(), nullptr);
  EXPECT_EQ(objects.check_file(xorb, whole, dir.path(), whole_expected()), CacheFile::damaged);
  EXPECT_FALSE(std::filesystem::exists(file));
  EXPECT_EQ(objects.check_file(xorb, whole, dir.path(), whole_expected()), CacheFile::absent);
  EXPECT_FALSE(objects.covering(xorb, whole.start, whole.end, dir.path()));
}

TEST_F(XetDownloadObjectsTest, AnUnreadableFileThatCannotBeRemovedIsSaidSo) {
  // A directory where the cache file should be: it cannot be read as one,
  // nor unlinked (whoever runs the test, root included).
  std::filesystem::remove(file);
  std::filesystem::create_directory(file);
  EXPECT_EQ(objects.check_file(xorb, whole, dir.path(), whole_expected()), CacheFile::stuck);
  EXPECT_TRUE(std::filesystem::exists(file));
  // A file dedupd cannot even stat (here a level directory that is a file:
  // ENOTDIR; another user's cache: EACCES) is not taken for a miss.
  std::filesystem::remove_all(file.parent_path().parent_path());
  tests::write_file(file.parent_path().parent_path().string(), "not a directory");
  EXPECT_EQ(objects.check_file(xorb, whole, dir.path(), whole_expected()), CacheFile::stuck);
}

TEST_F(XetDownloadObjectsTest, AFileRewrittenWithOtherBytesThatPassTheStructureIsStillRefused) {
  // Same structure (one chunk per chunk), other content: the digest tells.
  Xorb other;
  other.data[0] = random_data(5000, 99);
  other.serialized[0] = chunk(other.data[0], 0);
  Bytes bytes = x.bytes;
  std::copy(other.serialized[0].begin(), other.serialized[0].end(), bytes.begin());
  std::filesystem::remove(file);
  write_cache_file(file, object_cache_key(xorb, whole.start, whole.end), bytes);
  EXPECT_EQ(objects.check_file(xorb, whole, dir.path(), whole_expected()), CacheFile::damaged);
}

TEST_F(XetDownloadObjectsTest, AFileDedupdNeverCheckedIsCheckedOnceAndThenKnown) {
  DownloadObjects fresh(10);  // as after a restart
  EXPECT_FALSE(fresh.covering(xorb, whole.start, whole.end, dir.path()));
  EXPECT_EQ(fresh.check_file(xorb, whole, dir.path(), whole_expected()), CacheFile::intact);
  EXPECT_TRUE(fresh.covering(xorb, whole.start + x.starts[2], whole.end, dir.path()));
  // One that fails the check is removed.
  DownloadObjects other(10);
  auto e = whole_expected();
  e.length -= 1;
  EXPECT_EQ(other.check_file(xorb, whole, dir.path(), e), CacheFile::damaged);
  EXPECT_FALSE(std::filesystem::exists(file));
}

TEST_F(XetDownloadObjectsTest, ARewriteReadsARangeInsideACachedObjectFromIt) {
  DownloadKey key;
  key.fill(3);
  DownloadGrants grants(key, 100);
  const std::uint64_t first = whole.start + x.starts[1], last = whole.start + x.starts[3] - 1;
  nlohmann::json cas = {{"offset_into_first_range", 0},
                        {"terms", nlohmann::json::array()},
                        {"fetch_info",
                         {{xorb,
                           {{{"range", {{"start", 1}, {"end", 3}}},
                             {"url", "https://s/x?Expires=1900000000&Signature=z"},
                             {"url_range", {{"start", first}, {"end", last}}}}}}}}};
  RewriteSettings settings;
  settings.base = "http://127.0.0.1:1";
  settings.now = 1'800'000'000;
  settings.objects = &objects;
  settings.cache_dir = dir.path();
  auto out = rewrite_reconstruction(cas.dump(), settings, grants);
  ASSERT_TRUE(out) << out.error().to_string();
  EXPECT_EQ(out->inside, 1u);
  auto entry = nlohmann::json::parse(out->json)["fetch_info"][xorb][0];
  const std::uint64_t a = x.starts[1], b = x.starts[3] - 1;
  EXPECT_EQ(entry["url_range"], nlohmann::json({{"start", a}, {"end", b}}));
  std::string uri = std::string(entry["url"]).substr(settings.base.size());
  EXPECT_TRUE(uri.starts_with("/xet/o/" + xorb + "/" + std::to_string(whole.start) + "-" + std::to_string(whole.end) +
                              "?r=" + std::to_string(first) + "-" + std::to_string(last) + "&"))
      << uri;
  auto ok = grants.check(uri, "bytes=" + std::to_string(a) + "-" + std::to_string(b), settings.now);
  ASSERT_TRUE(ok.grant) << refusal_name(ok.why);
  EXPECT_EQ(grants.check(uri, "bytes=0-" + std::to_string(b), settings.now).why, Refusal::wrong_range);
  // Off the object's chunk boundaries: an object of its own.
  cas["fetch_info"][xorb][0]["url_range"]["start"] = first + 1;
  out = rewrite_reconstruction(cas.dump(), settings, grants);
  ASSERT_TRUE(out);
  EXPECT_EQ(out->inside, 0u);
  entry = nlohmann::json::parse(out->json)["fetch_info"][xorb][0];
  EXPECT_EQ(entry["url_range"], nlohmann::json({{"start", 0}, {"end", last - first - 1}}));
}

}  // namespace xet_download_cache_test
}  // namespace dedupd::daemon::answers
