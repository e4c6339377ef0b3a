// PostgreSQL's binary int8[] as the lookup sends its prefixes: what
// Params::int8_array writes is what array_recv reads.
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

// array_recv's layout (PostgreSQL's arrayfuncs.c): ndim, has-nulls, the
// element type's oid, then per dimension its length and lower bound, then
// each element's length and big-endian bytes.
TEST(WireInt8Array, WhatIsSentIsArraySendsLayout) {
  std::vector<std::int64_t> v = {1, -2};
  std::vector<std::uint8_t> want = {0, 0, 0, 1, 0, 0, 0,    0,    0,    0,    0,    20,   0,    0,   0,
                                    2, 0, 0, 0, 1, 0, 0,    0,    8,    0,    0,    0,    0,    0,   0,
                                    0, 1, 0, 0, 0, 8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe};
  EXPECT_EQ(sent(v), want);
}

}  // namespace
}  // namespace dedupd::fleet::wire
