// The shard sequence of the crash test, identical in the child that writes
// and the parent that checks: shard i has one xorb of its own, one of five
// shared xorbs, a key for every third shard and an expiry for every fourth.
#pragma once

#include <cstdint>
#include <vector>

#include "tests/unit/index/gen.hpp"

namespace dedupd::index::gen {

struct CrashShard {
  GenXorb own, shared;
  OwnedShard shard;
};

inline Key crash_key(std::uint64_t i) { return i % 3 == 0 ? hash_of_seed(0xC0FFEE + i % 2) : Key{}; }

inline CrashShard crash_shard(std::uint64_t i) {
  CrashShard c;
  c.own = gen_xorb(100000 + i, 20 + i % 50);
  c.shared = gen_xorb(500 + i % 5, 30);
  ShardSpec spec;
  spec.xorbs = {&c.own, &c.shared};
  spec.key = crash_key(i);
  if (i % 4 == 0) spec.expiry = 4000000000 + i;
  spec.created = i;
  spec.files = {gen_file(i, c.own, 0, std::uint32_t(c.own.raw.size()), false, i % 2 == 0)};
  c.shard = own(build_shard(spec));
  return c;
}

// The child removes shard i - 2 after ingesting shard i, when i % 3 == 1.
inline bool crash_removes_after(std::uint64_t i) { return i >= 2 && i % 3 == 1; }

}  // namespace dedupd::index::gen
