// scan DIR takes the files `hf upload REPO DIR` would: real directories in a
// temp dir, with links, a loop and what huggingface_hub leaves out.
#include "cli/upload_walk.hpp"

#include <sys/stat.h>

#include <gtest/gtest.h>

#include <filesystem>

#include "tests/support/temp_dir.hpp"

namespace dedupctl {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> rel(const std::vector<WalkedFile>& files, const fs::path& root) {
  std::vector<std::string> out;
  for (const auto& f : files) out.push_back(fs::path(f.path).lexically_relative(root).generic_string());
  return out;
}

TEST(UploadWalk, TakesEveryRegularFileInPathOrderFollowingLinks) {
  dedupd::tests::TempDir dir;
  fs::create_directories(dir / "b/c");
  dedupd::tests::write_file(dir / "b/c/z.bin", "zz");
  dedupd::tests::write_file(dir / "a.txt", "a");
  dedupd::tests::write_file(dir / ".hidden", "h");  // uploaded: only .git and .cache/huggingface are not
  dedupd::tests::write_file(dir / "b/y.bin", "yyy");
  fs::create_directory_symlink(dir / "b/c", dir / "linked");
  fs::create_symlink(dir / "a.txt", dir / "link.txt");
  auto set = walk_upload_paths({dir.path()});
  EXPECT_EQ(rel(set.files, dir.path()),
            (std::vector<std::string>{".hidden", "a.txt", "b/c/z.bin", "b/y.bin", "link.txt", "linked/z.bin"}));
  EXPECT_EQ(set.files[2].size, 2u);
  EXPECT_TRUE(set.skipped.empty());
}

TEST(UploadWalk, SaysWhatItSkipsAndWhy) {
  dedupd::tests::TempDir dir;
  fs::create_directories(dir / ".git/objects");
  dedupd::tests::write_file(dir / ".git/HEAD", "ref");
  fs::create_directories(dir / "sub/.cache/huggingface");
  dedupd::tests::write_file(dir / "sub/.cache/huggingface/upload.lock", "x");
  dedupd::tests::write_file(dir / "sub/.cache/other", "kept");
  fs::create_directory_symlink(dir.path(), dir / "sub/loop");
  fs::create_symlink(dir / "nowhere", dir / "dangling");
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  auto set = walk_upload_paths({dir.path()});
  EXPECT_EQ(rel(set.files, dir.path()), std::vector<std::string>{"sub/.cache/other"});
  std::vector<std::string> skipped;
  for (const auto& s : set.skipped)
    skipped.push_back(fs::path(s.path).lexically_relative(dir.path()).generic_string() + ": " + s.reason);
  EXPECT_EQ(skipped, (std::vector<std::string>{
                         ".git: a .git directory: huggingface_hub never uploads it",
                         "dangling: a dangling symlink",
                         "fifo: not a regular file",
                         "sub/.cache/huggingface: huggingface_hub's own metadata (.cache/huggingface): never uploaded",
                         "sub/loop: a symlink to a directory that contains it (a loop)",
                     }));
}

TEST(UploadWalk, FileArgumentsAreTakenAsGivenEvenWhenMissing) {
  dedupd::tests::TempDir dir;
  fs::create_directories(dir / ".git");
  dedupd::tests::write_file(dir / ".git/config", "c");
  auto set = walk_upload_paths({dir / ".git/config", dir / "missing"});
  ASSERT_EQ(set.files.size(), 2u);
  EXPECT_EQ(set.files[0].size, 1u);
  EXPECT_EQ(set.files[1].path, dir / "missing");
  EXPECT_TRUE(set.skipped.empty());
}

}  // namespace
}  // namespace dedupctl
