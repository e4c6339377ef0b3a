// What the answer layer's tests share: a real index in a temp dir, a fleet
// that answers what a test told it and records what it was asked, and the
// Sources that hand both out.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "daemon/answers/lookups.hpp"
#include "index/index.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/unit/shard/test_support.hpp"

namespace dedupd::daemon::answers::testing {

inline constexpr std::uint64_t kNow = 1'760'000'000;

// A real index under `dir` (index/), kept without fsync: tests want speed
// over machine-crash safety.
std::unique_ptr<index::Index> open_test_index(const std::string& dir);

// How a test shard is written and taken in (at kNow).
struct TestShard {
  shard::Key key{};                       // zero: raw
  std::optional<std::uint64_t> expiry{};  // the footer's key expiry; nullopt: never
  std::uint64_t created = kNow - 100;     // the footer's creation time
  std::string cas{};                      // the CAS it belongs to; empty: unknown
};
// A shard of `xorbs` ingested into `index`; its hash.
shard::Hash ingest_xorbs(index::Index& index, const std::vector<shard::testing::TestXorb>& xorbs,
                         const TestShard& how = {});

// The fleet location it gives a raw hash: chunk 7 of a xorb named after it.
fleet::ChunkLocation fleet_location_of(const shard::Hash& raw);

class FakeFleet final : public FleetPort {
 public:
  // What a test sets, before the answers ask.
  bool on = true;                      // configured
  Reach reach = Reach::answered;       // what every question answers
  int unavailable_for = 0;             // the next this many chunks() calls answer unavailable
  int busy_for = 0;                    // the next this many chunks() calls asked with `busy` find the pool lent out
  bool answer_short = false;           // chunks() answers one query fewer than asked
  std::set<shard::Hash> known_chunks;  // raw hashes with a fleet location
  std::optional<fleet::XorbAnswer> xorb_answer;
  std::optional<fleet::FileAnswer> file_answer;
  std::vector<shard::Hash> sha256_files;
  // source_shard's candidates, in the fleet's order: the first that is not
  // excluded answers.
  std::vector<fleet::ShardXorbs> source_candidates;
  std::set<std::pair<shard::Hash, std::optional<std::string>>> marks;  // marked_set_aside

  // What it was asked.
  std::vector<std::vector<shard::Hash>> chunk_asks() const;
  int other_asks = 0;  // xorb, file, sha256, source_shard
  std::optional<fleet::ShardXorbBounds> source_bounds;
  std::optional<std::uint64_t> source_now;
  std::optional<shard::CasScope> source_scope;
  std::vector<shard::Hash> excluded;  // source candidates the answer layer excluded

  bool configured() const override { return on; }
  Reach chunks(std::span<const shard::Hash> raw, fleet::ChunkAnswers& out, bool* busy) override;
  Reach xorb(const shard::Hash& xorb, std::optional<fleet::XorbAnswer>& out) override;
  Reach file(const shard::Hash& file, std::optional<fleet::FileAnswer>& out) override;
  Reach files_with_sha256(const shard::Hash& sha256, std::vector<shard::Hash>& out) override;
  Reach source_shard(const shard::Hash& raw_chunk, const fleet::ShardXorbBounds& bounds, std::uint64_t now,
                     const std::optional<shard::CasScope>& scope,
                     const std::function<bool(const shard::Hash& shard)>& is_excluded,
                     std::optional<fleet::ShardXorbs>& out) override;
  bool marked_set_aside(const shard::Hash& shard, const std::optional<std::string>& cas) const override {
    return marks.contains({shard, cas});
  }

 private:
  mutable std::mutex mu_;  // chunks() runs on the batch's helper threads
  std::vector<std::vector<shard::Hash>> chunk_asks_;
};

class TestSources final : public Sources {
 public:
  const index::Index* open_index = nullptr;
  core::GlobalDedupKey key{shard::testing::seeded_hash(77), 3600};
  FakeFleet fake_fleet;

  const index::Index* index() const override { return open_index; }
  core::GlobalDedupKey global_dedup_key() const override { return key; }
  FleetPort& fleet() override { return fake_fleet; }
};

class AnswersTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override { index_.reset(); }

  // Ingests a shard of `xorbs`; returns its hash.
  shard::Hash ingest(const std::vector<shard::testing::TestXorb>& xorbs, const std::string& cas = "",
                     std::optional<std::uint64_t> expiry = std::nullopt, const shard::Key& key = shard::Key{}) {
    return ingest_xorbs(*index_, xorbs, {key, expiry, kNow - 100, cas});
  }
  Lookups lookups(Lookups::Scope scope = Lookups::Scope::with_fleet);

  tests::TempDir dir_{"answers"};
  std::unique_ptr<index::Index> index_;
  TestSources sources_;
};

}  // namespace dedupd::daemon::answers::testing
