// sha256 of a file's content as the Xet client reports it (chunk/sha256):
// the standard's known answers, and a hasher ready again after finish().
#include "chunk/sha256.hpp"

#include <gtest/gtest.h>

#include <span>
#include <string_view>

namespace dedupd::chunk {
namespace {

TEST(Sha256, KnownAnswers) {
  Sha256 s;
  const std::string_view abc = "abc";
  s.update(std::span(reinterpret_cast<const std::uint8_t*>(abc.data()), abc.size()));
  auto d = s.finish();
  ASSERT_TRUE(d);
  EXPECT_EQ(d->to_hex_bytes(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // Ready again after finish: the empty message.
  auto e = s.finish();
  ASSERT_TRUE(e);
  EXPECT_EQ(e->to_hex_bytes(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

}  // namespace
}  // namespace dedupd::chunk
