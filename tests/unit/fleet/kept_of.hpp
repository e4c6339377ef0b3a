// Key filters as a restart keeps them (KeyFilters::Kept), made from seeds
// for the tests of the set and of its file.
#pragma once

#include <algorithm>
#include <memory>

#include "fleet/key_filters.hpp"
#include "fleet/wire.hpp"
#include "tests/unit/index/gen.hpp"

namespace dedupd::fleet {

// A filter of `n` prefixes from `seed`, and the xorbs it "holds".
inline KeyFilters::Kept kept_of(const shard::Key& key, std::uint64_t seed, std::size_t n, int bits = 16) {
  auto f = std::make_shared<KeyFilter>(n, bits);
  for (std::size_t i = 0; i < n; ++i) f->add(wire::prefix_of(index::gen::hash_of_seed(seed + i).data()));
  KeyFilters::Kept k{key, f, {}};
  for (std::uint64_t x = 0; x < 5; ++x) k.xorbs.push_back(index::gen::hash_of_seed(seed * 1000 + x));
  std::sort(k.xorbs.begin(), k.xorbs.end());
  return k;
}

}  // namespace dedupd::fleet
