// PostgreSQL's binary int8[] as the lookup's answer carries it (array_send):
// what Params::int8_array writes reads back, and malformed bytes are
// refused, never read past.
#include <gtest/gtest.h>

#include <string>

#include "fleet/wire.hpp"

namespace dedupd::fleet::wire {
namespace {

std::vector<std::uint8_t> sent(std::span<const std::int64_t> v) {
  Params p;
  p.int8_array(v);
  std::vector<const char*> values;
  std::vector<int> lengths, formats;
  std::vector<unsigned> types;
  p.materialize(values, lengths, formats, types);
  return {reinterpret_cast<const std::uint8_t*>(values[0]),
          reinterpret_cast<const std::uint8_t*>(values[0]) + lengths[0]};
}

TEST(WireInt8Array, WhatIsSentReadsBack) {
  std::vector<std::int64_t> v = {0, -1, std::int64_t(1) << 62, -(std::int64_t(5) << 40), 42};
  std::vector<std::int64_t> out = {7};
  ASSERT_TRUE(read_int8_array(sent(v), out));
  v.insert(v.begin(), 7);
  EXPECT_EQ(out, v);
}

TEST(WireInt8Array, AnEmptyArrayHasNoDimension) {
  // array_send of '{}'::int8[]: ndim 0, no nulls, element type 20.
  std::vector<std::uint8_t> empty = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 20};
  std::vector<std::int64_t> out;
  EXPECT_TRUE(read_int8_array(empty, out));
  EXPECT_TRUE(out.empty());
}

TEST(WireInt8Array, MalformedBytesAreRefused) {
  std::vector<std::int64_t> v = {1, 2, 3};
  auto good = sent(v);
  std::vector<std::int64_t> out;
  for (std::size_t n = 0; n < good.size(); ++n)
    EXPECT_FALSE(read_int8_array(std::span(good).first(n), out)) << "cut at " << n;
  auto null_element = good;
  null_element[20] = 0xff;  // length -1: a NULL element
  null_element[21] = 0xff;
  null_element[22] = 0xff;
  null_element[23] = 0xff;
  EXPECT_FALSE(read_int8_array(null_element, out));
  auto int4_type = good;
  int4_type[11] = 23;
  EXPECT_FALSE(read_int8_array(int4_type, out));
  EXPECT_TRUE(out.empty());
}

}  // namespace
}  // namespace dedupd::fleet::wire
