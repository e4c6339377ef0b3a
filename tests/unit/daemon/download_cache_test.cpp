// The walk of the endpoint's download cache (daemon/jobs/download_cache.hpp):
// its files, their bytes and what went since the last walk.
#include "daemon/jobs/download_cache.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <unordered_set>

#include "tests/support/temp_dir.hpp"

namespace dedupd::daemon::jobs {
// Named, not anonymous: the unity build puts other tests' helpers beside these.
namespace download_cache_test {

void write_file(const std::filesystem::path& p, std::size_t bytes) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p) << std::string(bytes, 'x');
}

// nginx's layout (levels=1:2): <dir>/<c>/<cc>/<md5 of the key>.
TEST(DownloadCache, AWalkCountsTheFilesAndWhatWentSinceTheLast) {
  tests::TempDir dir("download-cache");
  const std::filesystem::path root = dir.path();
  const std::string a(32, 'a'), b(32, 'b');
  write_file(root / "a" / "aa" / a, 10000);
  write_file(root / "b" / "bb" / b, 5000);
  write_file(root / "b" / "bb" / (b + ".0000000001"), 100);  // a temp file: counted, not followed
  std::optional<std::unordered_set<std::string>> names;
  core::XetDownloadCache c = jobs::walk_download_cache(root, names);
  ASSERT_TRUE(c.known) << c.problem;
  EXPECT_EQ(c.files, 3u);
  EXPECT_GE(c.bytes, 15100u);  // allocated blocks: at least the sizes
  EXPECT_EQ(c.evictions, 0u);
  std::filesystem::remove(root / "a" / "aa" / a);
  std::filesystem::remove(root / "b" / "bb" / (b + ".0000000001"));
  c = jobs::walk_download_cache(root, names);
  EXPECT_EQ(c.files, 1u);
  EXPECT_EQ(c.evictions, 1u);  // the temp file was renamed, not evicted
  c = jobs::walk_download_cache(root, names);
  EXPECT_EQ(c.evictions, 0u);
  // A directory it may not read: why, and no size.
  c = jobs::walk_download_cache(root / "absent", names);
  EXPECT_FALSE(c.known);
  EXPECT_NE(c.problem.find("absent"), std::string::npos) << c.problem;
}

}  // namespace download_cache_test
}  // namespace dedupd::daemon::jobs
