// The objects of the endpoint's download cache that dedupd checked, with
// their nginx cache files (daemon/answers/download_objects.hpp): where the
// files are, a range inside an object covered, a file checked once and a
// damaged one removed, and a rewrite that reads a range out of a cached
// object.
#include "daemon/answers/download_objects.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <utime.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "daemon/answers/reconstruction_rewrite.hpp"
#include "serialized_xorbs.hpp"
#include "tests/support/temp_dir.hpp"

// In the namespace of the helpers (serialized_xorbs.hpp), so their
// names are found before another test's of the same name in a unity batch;
// named, not anonymous, for the same reason.
namespace dedupd::daemon::answers::download_testing {
namespace download_objects_test {

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
  EXPECT_EQ(objects.check_file(xorb, whole, dir.path(), [&] { return whole_expected(); }), CacheFile::intact);
  EXPECT_EQ(objects.check_file(xorb, whole, dir.path(), [&] { return whole_expected(); }), CacheFile::intact);
  // Scribbled in the middle, the size kept.
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(std::streamoff(std::filesystem::file_size(file) / 2));
    f.write("scribble", 8);
  }
  ::utime(file.c_str(), nullptr);
  EXPECT_EQ(objects.check_file(xorb, whole, dir.path(), [&] { return whole_expected(); }), CacheFile::damaged);
  EXPECT_FALSE(std::filesystem::exists(file));
  EXPECT_EQ(objects.check_file(xorb, whole, dir.path(), [&] { return whole_expected(); }), CacheFile::absent);
  EXPECT_FALSE(objects.covering(xorb, whole.start, whole.end, dir.path()));
}

TEST_F(XetDownloadObjectsTest, AnUnreadableFileThatCannotBeRemovedIsSaidSo) {
  // A directory where the cache file should be: it cannot be read as one,
  // nor unlinked (whoever runs the test, root included).
  std::filesystem::remove(file);
  std::filesystem::create_directory(file);
  EXPECT_EQ(objects.check_file(xorb, whole, dir.path(), [&] { return whole_expected(); }), CacheFile::stuck);
  EXPECT_TRUE(std::filesystem::exists(file));
  // A file dedupd cannot even stat (here a level directory that is a file:
  // ENOTDIR; another user's cache: EACCES) is not taken for a miss.
  std::filesystem::remove_all(file.parent_path().parent_path());
  tests::write_file(file.parent_path().parent_path().string(), "not a directory");
  EXPECT_EQ(objects.check_file(xorb, whole, dir.path(), [&] { return whole_expected(); }), CacheFile::stuck);
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
  EXPECT_EQ(objects.check_file(xorb, whole, dir.path(), [&] { return whole_expected(); }), CacheFile::damaged);
}

TEST_F(XetDownloadObjectsTest, AFileNeverCheckedIsCheckedAgainstTheIndexWhereItHoldsTheXorb) {
  // A byte of chunk 0's data flipped (stored as it is: the structure still
  // walks), in a file this dedupd knows no check of (a restart, a tier
  // host's fill): with the index's chunks it is found and removed; without
  // them, the structure is all there is to check.
  Bytes scribbled = x.bytes;
  scribbled[8 + 100] ^= 0x01;
  auto with_index = [&] {
    auto e = whole_expected();
    e.known = x.known();
    return e;
  };
  write_cache_file(file, object_cache_key(xorb, whole.start, whole.end), scribbled);
  DownloadObjects fresh(10);
  EXPECT_EQ(fresh.check_file(xorb, whole, dir.path(), [&] { return whole_expected(); }), CacheFile::intact);
  write_cache_file(file, object_cache_key(xorb, whole.start, whole.end), scribbled);
  DownloadObjects restarted(10);
  EXPECT_EQ(restarted.check_file(xorb, whole, dir.path(), with_index), CacheFile::damaged);
  EXPECT_FALSE(std::filesystem::exists(file));
  // The right bytes pass the same check.
  write_cache_file(file, object_cache_key(xorb, whole.start, whole.end), x.bytes);
  DownloadObjects again(10);
  EXPECT_EQ(again.check_file(xorb, whole, dir.path(), with_index), CacheFile::intact);
}

TEST_F(XetDownloadObjectsTest, AFileTheTierFilledIsComparedWithTheTierHostsDigest) {
  // A byte of chunk 0's data flipped in a file this edge kept no digest of
  // and whose xorb its index lacks: the structure passes, the digest of
  // the tier host that checked the bytes (here `objects`, which checked
  // the right ones) does not.
  const auto tier_digest = objects.digest_of(xorb, whole);
  ASSERT_TRUE(tier_digest);
  EXPECT_FALSE(objects.digest_of(xorb, {whole.start, whole.end - 1}));
  Bytes scribbled = x.bytes;
  scribbled[8 + 100] ^= 0x01;
  write_cache_file(file, object_cache_key(xorb, whole.start, whole.end), scribbled);
  int asked = 0;
  auto from_tier = [&]() -> std::optional<shard::Hash> {
    ++asked;
    return tier_digest;
  };
  DownloadObjects edge(10);
  EXPECT_EQ(edge.check_file(
                xorb, whole, dir.path(), [&] { return whole_expected(); }, from_tier),
            CacheFile::damaged);
  EXPECT_EQ(asked, 1);
  EXPECT_FALSE(std::filesystem::exists(file));
  // The right bytes pass, and are then known: the tier is not asked again,
  // and the edge keeps the digest as its own (what it would tell, as a
  // tier host itself).
  write_cache_file(file, object_cache_key(xorb, whole.start, whole.end), x.bytes);
  EXPECT_EQ(edge.check_file(
                xorb, whole, dir.path(), [&] { return whole_expected(); }, from_tier),
            CacheFile::intact);
  EXPECT_EQ(edge.check_file(
                xorb, whole, dir.path(), [&] { return whole_expected(); }, from_tier),
            CacheFile::intact);
  EXPECT_EQ(asked, 2);
  EXPECT_EQ(edge.digest_of(xorb, whole), tier_digest);
  // The tier knowing nothing (down, restarted): the structure alone, as
  // before.
  write_cache_file(file, object_cache_key(xorb, whole.start, whole.end), scribbled);
  DownloadObjects lone(10);
  EXPECT_EQ(lone.check_file(
                xorb, whole, dir.path(), [&] { return whole_expected(); }, [] { return std::optional<shard::Hash>(); }),
            CacheFile::intact);
}

TEST_F(XetDownloadObjectsTest, AFileDedupdNeverCheckedIsCheckedOnceAndThenKnown) {
  DownloadObjects fresh(10);  // as after a restart
  EXPECT_FALSE(fresh.covering(xorb, whole.start, whole.end, dir.path()));
  EXPECT_EQ(fresh.check_file(xorb, whole, dir.path(), [&] { return whole_expected(); }), CacheFile::intact);
  EXPECT_TRUE(fresh.covering(xorb, whole.start + x.starts[2], whole.end, dir.path()));
  // One that fails the check is removed.
  DownloadObjects other(10);
  auto e = whole_expected();
  e.length -= 1;
  EXPECT_EQ(other.check_file(xorb, whole, dir.path(), [&] { return e; }), CacheFile::damaged);
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

}  // namespace download_objects_test
}  // namespace dedupd::daemon::answers::download_testing
