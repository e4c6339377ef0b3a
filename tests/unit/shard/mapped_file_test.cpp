// A read-only map of a whole file (shard/mapped_file): the bytes as on disk,
// an empty file as no bytes, what cannot be mapped as an error naming the
// path, and a map that moves without being unmapped twice.
#include "shard/mapped_file.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/temp_dir.hpp"

namespace dedupd::shard {
namespace {

using tests::TempDir;

std::vector<std::uint8_t> bytes_of(const MappedFile& m) { return {m.bytes().begin(), m.bytes().end()}; }

TEST(MappedFile, MapsTheWholeFile) {
  TempDir dir;
  const std::string text(100'000, 'x');
  tests::write_file(dir / "f", text + "end");
  auto m = MappedFile::open(dir / "f");
  ASSERT_TRUE(m) << m.error().to_string();
  EXPECT_EQ(m->size(), text.size() + 3);
  EXPECT_EQ(m->bytes().size(), text.size() + 3);
  EXPECT_EQ(std::string(m->bytes().begin() + 100'000, m->bytes().end()), "end");
  EXPECT_EQ(m->bytes()[0], 'x');
}

TEST(MappedFile, AnEmptyFileIsNoBytes) {
  TempDir dir;
  tests::write_file(dir / "empty", "");
  auto m = MappedFile::open(dir / "empty");
  ASSERT_TRUE(m) << m.error().to_string();
  EXPECT_EQ(m->size(), 0u);
  EXPECT_TRUE(m->bytes().empty());
}

TEST(MappedFile, WhatCannotBeMappedIsAnErrorNamingThePath) {
  TempDir dir;
  auto missing = MappedFile::open(dir / "missing");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().rule, "file.open");
  EXPECT_NE(missing.error().message.find(dir / "missing"), std::string::npos) << missing.error().message;
  EXPECT_NE(missing.error().message.find("No such file"), std::string::npos) << missing.error().message;
  auto directory = MappedFile::open(dir.path());
  ASSERT_FALSE(directory);
  EXPECT_EQ(directory.error().rule, "file.open");
  EXPECT_EQ(directory.error().message, dir.path() + ": not a regular file");
}

TEST(MappedFile, AMoveHandsTheMapOverAndLeavesNothingBehind) {
  TempDir dir;
  tests::write_file(dir / "a", "alpha");
  tests::write_file(dir / "b", "beta!!");
  auto a = MappedFile::open(dir / "a");
  auto b = MappedFile::open(dir / "b");
  ASSERT_TRUE(a && b);
  MappedFile moved(std::move(*a));
  EXPECT_EQ(bytes_of(moved), (std::vector<std::uint8_t>{'a', 'l', 'p', 'h', 'a'}));
  EXPECT_EQ(a->size(), 0u);  // NOLINT(bugprone-use-after-move): what a move leaves is the point
  EXPECT_TRUE(a->bytes().empty());
  // Assigning over a live map unmaps it and takes the other.
  moved = std::move(*b);
  EXPECT_EQ(moved.size(), 6u);
  EXPECT_EQ(bytes_of(moved), (std::vector<std::uint8_t>{'b', 'e', 't', 'a', '!', '!'}));
  EXPECT_EQ(b->size(), 0u);  // NOLINT(bugprone-use-after-move)
  // The file may go: the map stays readable.
  std::filesystem::remove(dir / "b");
  EXPECT_EQ(moved.bytes()[5], '!');
}

}  // namespace
}  // namespace dedupd::shard
