// A fleet shard's xorbs for a global-dedup reply, and which shard answers,
// against a real PostgreSQL.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "fleet/fleet.hpp"
#include "fleet/migrations.hpp"
#include "fleet/partitions.hpp"
#include "fleet/schema_version.hpp"
#include "fleet/xorb_cache.hpp"
#include "tests/unit/fleet/answer_support.hpp"
#include "tests/unit/fleet/fleet_fixture.hpp"
#include "tests/unit/fleet/pg_support.hpp"
#include "tests/unit/index/gen.hpp"

namespace dedupd::fleet {
namespace {

// FleetTest, its Writer and Reader, the server and the shards (fleet_fixture.hpp).
using namespace test;

// A global-dedup reply from the fleet takes a shard's xorbs as a local one
// does: the chunk's xorb, then those after it, then those before, within
// the bounds; a keyed shard comes with its key and expiry, an expired one
// never.
TEST_F(FleetTest, AShardsXorbsComeInReplyOrderWithinTheBounds) {
  auto w = writer(url_, "host-a");
  auto r = reader(url_);
  ASSERT_TRUE(w && r);
  GenXorb x1 = index::gen::gen_xorb(31, 3), x2 = index::gen::gen_xorb(32, 4), x3 = index::gen::gen_xorb(33, 5),
          x4 = index::gen::gen_xorb(34, 6);
  auto s = make_shard({&x1, &x2, &x3, &x4}, 1);
  publish(*w, s);
  auto ask = [&](const Hash& shard, const Hash& first, std::uint64_t max_xorbs, std::uint64_t max_bytes,
                 std::uint64_t now = 100) {
    const ShardCandidate one{shard, first};
    auto a = r->shard_xorbs(std::span(&one, 1), {max_xorbs, max_bytes}, now, Deadline::in(kDeadline));
    EXPECT_TRUE(a) << (a ? "" : a.error().to_string());
    return a ? *a : std::optional<ShardXorbs>{};
  };
  auto hashes = [](const std::optional<ShardXorbs>& a) {
    std::vector<Hash> out;
    if (a)
      for (const auto& x : a->xorbs) out.push_back(x.hash);
    return out;
  };
  auto block = [](std::uint64_t chunks) { return shard::kEntrySize * (1 + chunks); };

  auto all = ask(s.hash, x3.hash, 100, 1 << 20);
  ASSERT_TRUE(all);
  EXPECT_EQ(hashes(all), (std::vector<Hash>{x3.hash, x4.hash, x1.hash, x2.hash}));
  EXPECT_FALSE(all->key);
  EXPECT_FALSE(all->expiry);
  ASSERT_EQ(all->xorbs[0].cas_block.size(), block(5));
  shard::XorbBlock stored(all->xorbs[0].cas_block.data(), 0);
  EXPECT_EQ(stored.hash(), x3.hash);
  EXPECT_EQ(stored.chunk(0).chunk_hash, x3.raw[0]);
  EXPECT_EQ(hashes(ask(s.hash, x3.hash, 2, 1 << 20)), (std::vector<Hash>{x3.hash, x4.hash}));
  EXPECT_EQ(hashes(ask(s.hash, x3.hash, 100, block(5) + block(6))), (std::vector<Hash>{x3.hash, x4.hash}));
  EXPECT_EQ(hashes(ask(s.hash, x3.hash, 100, block(5) + block(6) - 1)), (std::vector<Hash>{x3.hash}));
  EXPECT_EQ(hashes(ask(s.hash, x3.hash, 100, 1)), (std::vector<Hash>{x3.hash})) << "the chunk's xorb always goes in";
  EXPECT_EQ(hashes(ask(s.hash, x1.hash, 100, 1 << 20)), (std::vector<Hash>{x1.hash, x2.hash, x3.hash, x4.hash}));
  EXPECT_FALSE(ask(s.hash, index::gen::hash_of_seed(777), 100, 1 << 20)) << "a xorb the shard does not list";
  EXPECT_FALSE(ask(index::gen::hash_of_seed(778), x1.hash, 100, 1 << 20)) << "no such shard";

  Key key = index::gen::hash_of_seed(779);
  GenXorb x5 = index::gen::gen_xorb(35, 2);
  auto keyed = make_shard({&x5}, 2, key, 1000);
  publish(*w, keyed);
  auto k = ask(keyed.hash, x5.hash, 100, 1 << 20, 999);
  ASSERT_TRUE(k);
  ASSERT_TRUE(k->key);
  EXPECT_EQ(*k->key, key);
  EXPECT_EQ(k->expiry, std::optional<std::uint64_t>(1000));
  ASSERT_EQ(hashes(k), std::vector<Hash>{x5.hash});
  ASSERT_EQ(k->xorbs[0].cas_block.size(), block(2));
  shard::XorbBlock kb(k->xorbs[0].cas_block.data(), 0);
  EXPECT_EQ(kb.chunk(0).chunk_hash, shard::keyed_chunk_hash(key, x5.raw[0])) << "served as stored, keyed";
  EXPECT_FALSE(ask(keyed.hash, x5.hash, 100, 1 << 20, 1000)) << "expired at its shard_key_expiry";
  EXPECT_FALSE(r->shard_xorbs({}, {100, 1 << 20}, 100, Deadline::in(kDeadline)).value()) << "no candidate";
}

// Of several shards holding a chunk, the fleet answers with the one a local
// reply prefers: raw, else the keyed one that expires last; expired ones and
// ones that do not list the chunk's xorb are passed over.
TEST_F(FleetTest, TheBestCandidateShardAnswers) {
  auto w = writer(url_, "host-a");
  auto r = reader(url_);
  ASSERT_TRUE(w && r);
  GenXorb x = index::gen::gen_xorb(41, 3), y = index::gen::gen_xorb(42, 2);
  const Key k1 = index::gen::hash_of_seed(781), k2 = index::gen::hash_of_seed(782);
  auto soon = make_shard({&x}, 11, k1, 500);
  auto late = make_shard({&x, &y}, 12, k2, 900);
  auto raw = make_shard({&y, &x}, 13);
  for (const auto* s : {&soon, &late, &raw}) publish(*w, *s);
  auto best = [&](std::vector<ShardCandidate> c, std::uint64_t now = 100) {
    auto a = r->shard_xorbs(c, {100, 1 << 20}, now, Deadline::in(kDeadline));
    EXPECT_TRUE(a) << (a ? "" : a.error().to_string());
    return a && *a ? (*a)->shard : Hash{};
  };
  const ShardCandidate c_soon{soon.hash, x.hash}, c_late{late.hash, x.hash}, c_raw{raw.hash, x.hash};
  EXPECT_EQ(best({c_soon, c_late, c_raw}), raw.hash) << "raw first";
  auto from_raw = r->shard_xorbs(std::vector{c_raw}, {100, 1 << 20}, 100, Deadline::in(kDeadline)).value();
  ASSERT_TRUE(from_raw);
  EXPECT_FALSE(from_raw->key);
  ASSERT_EQ(from_raw->xorbs.size(), 2u);
  EXPECT_EQ(from_raw->xorbs[0].hash, x.hash) << "the chunk's xorb first, then the one before it";
  EXPECT_EQ(from_raw->xorbs[1].hash, y.hash);
  EXPECT_EQ(best({c_soon, c_late}), late.hash) << "the key that expires last";
  EXPECT_EQ(best({c_late, c_soon}), late.hash);
  EXPECT_EQ(best({c_soon, c_late}, 900), Hash{}) << "both expired";
  EXPECT_EQ(best({c_soon, c_late}, 600), late.hash);
  EXPECT_EQ(best({{soon.hash, y.hash}, c_late}), late.hash) << "a shard that does not list the xorb is passed over";
  EXPECT_EQ(best({{index::gen::hash_of_seed(783), x.hash}, c_soon}), soon.hash) << "an unknown shard is passed over";
}

}  // namespace
}  // namespace dedupd::fleet
