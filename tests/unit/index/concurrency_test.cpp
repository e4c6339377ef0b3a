// Readers hammer lookups while one writer ingests, removes, merges and grows
// the map. Every read must see each shard whole or not at all, and readers
// must keep going while the writer works; the chunk filter is in service
// and rebuilt under the readers' feet. Run under ThreadSanitizer by the
// dev script (ctest -L concurrency).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>

#include "index/index.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/unit/index/gen.hpp"

namespace dedupd::index::gen {

using tests::TempDir;
namespace {

constexpr int kShards = 24;
constexpr int kReaders = 3;
constexpr int kWriterRounds = 3;

struct World {
  std::vector<GenXorb> own, shared;
  std::vector<OwnedShard> shards;
};

World make_world() {
  World w;
  w.own.reserve(kShards);
  w.shared.reserve(4);
  for (int i = 0; i < 4; ++i) w.shared.push_back(gen_xorb(7000 + std::uint64_t(i), 40));
  for (int i = 0; i < kShards; ++i) w.own.push_back(gen_xorb(8000 + std::uint64_t(i), 30 + std::uint64_t(i)));
  for (int i = 0; i < kShards; ++i) {
    ShardSpec spec;
    spec.xorbs = {&w.own[std::size_t(i)], &w.shared[std::size_t(i % 4)]};
    if (i % 3 == 0) spec.key = hash_of_seed(9000 + std::uint64_t(i % 2));
    if (i % 2 == 0) spec.expiry = 1000 + std::uint64_t(i);
    spec.created = std::uint64_t(i);
    w.shards.push_back(own(build_shard(spec)));
  }
  return w;
}

TEST(IndexConcurrency, ReadersSeeWholeShardsWhileTheWriterWorks) {
  TempDir tmp;
  World w = make_world();
  auto opened = Index::open(Options{.dir = tmp.path(), .map_size = 128 * 1024, .merge_threshold = 500});
  ASSERT_TRUE(opened) << opened.error().to_string();
  Index& idx = **opened;
  ASSERT_TRUE(idx.build_chunk_filter());

  std::atomic<bool> done{false};
  std::atomic<std::uint64_t> reads{0}, reads_during_writes{0}, half_seen{0}, errors{0};
  std::atomic<bool> writing{false};

  auto reader = [&](unsigned seed) {
    std::mt19937 rng(seed);
    BatchResult out;
    while (!done.load()) {
      int j = int(rng() % kShards);
      const OwnedShard& s = w.shards[std::size_t(j)];
      std::vector<Hash> q(w.own[std::size_t(j)].raw);
      const auto& sh = w.shared[std::size_t(j % 4)].raw;
      q.insert(q.end(), sh.begin(), sh.end());
      if (!idx.lookup_batch(q, out)) {
        ++errors;
        continue;
      }
      std::size_t listed = 0;
      for (std::size_t k = 0; k < q.size(); ++k) {
        bool here = false;
        for (const auto& l : out.of(k))
          for (const auto& r : out.shards(l)) here |= r.shard == s.hash;
        listed += here;
      }
      if (listed != 0 && listed != q.size()) ++half_seen;
      // The other read paths must hold up under the writer too.
      auto one = idx.lookup(q[rng() % q.size()]);
      auto st = idx.stats();
      auto xo = idx.xorb(w.shared[std::size_t(j % 4)].hash);
      auto ne = idx.next_expiry();
      if (!one || !st || !xo || !ne) ++errors;
      ++reads;
      if (writing.load()) ++reads_during_writes;
    }
  };

  std::vector<std::thread> readers;
  for (int r = 0; r < kReaders; ++r) readers.emplace_back(reader, 1234u + unsigned(r));

  std::uint64_t write_errors = 0;
  writing = true;
  for (int round = 0; round < kWriterRounds; ++round) {
    for (int i = 0; i < kShards; ++i) {
      auto r = idx.ingest(*w.shards[std::size_t(i)].view, {}, IngestOptions{.revive = true});
      write_errors += !r;
      if (i >= 4) write_errors += !idx.remove(w.shards[std::size_t(i - 4)].hash);
    }
    write_errors += !idx.expire(1000 + kShards);  // the even shards still live
    write_errors += !idx.merge_recent();
    write_errors += !idx.build_chunk_filter();
    for (int i = 0; i < kShards; ++i) write_errors += !idx.remove(w.shards[std::size_t(i)].hash);
  }
  writing = false;
  done = true;
  for (auto& t : readers) t.join();

  EXPECT_EQ(write_errors, 0u);
  EXPECT_EQ(errors.load(), 0u);
  EXPECT_EQ(half_seen.load(), 0u) << "a reader saw part of a shard";
  EXPECT_GT(reads_during_writes.load(), 0u) << "readers must make progress while the writer works";
  EXPECT_GT(idx.stats()->map_size, 128u * 1024) << "the map should have grown under the readers";
  auto problems = idx.check_invariants();
  ASSERT_TRUE(problems);
  EXPECT_THAT(*problems, ::testing::IsEmpty());
  EXPECT_EQ(idx.stats()->chunk_entries, 0u);
  std::printf("concurrency: %llu reads (%llu while writing)\n", static_cast<unsigned long long>(reads.load()),
              static_cast<unsigned long long>(reads_during_writes.load()));
}

// Chunk filter builds read without the writer lock and catch up on what the
// writer committed meanwhile: with builds running back to back beside it,
// every shard the writer just ingested (and merged, and grew the map for)
// must be found, through whichever filter is in service.
TEST(IndexConcurrency, FilterBuildsBesideTheWriterMissNothing) {
  TempDir tmp;
  World w = make_world();
  auto opened = Index::open(Options{
      .dir = tmp.path(), .map_size = 128 * 1024, .merge_threshold = 200, .filter_build_entries_per_snapshot = 16});
  ASSERT_TRUE(opened) << opened.error().to_string();
  Index& idx = **opened;
  std::atomic<bool> writing{true};
  std::atomic<std::uint64_t> builds{0}, build_errors{0};
  std::thread builder([&] {
    while (writing.load()) {
      auto b = idx.build_chunk_filter();
      b ? ++builds : ++build_errors;
    }
  });
  std::uint64_t misses = 0, write_errors = 0;
  for (int round = 0; round < kWriterRounds; ++round) {
    for (int i = 0; i < kShards; ++i) {
      write_errors += !idx.ingest(*w.shards[std::size_t(i)].view, {}, IngestOptions{.revive = true});
      for (const Hash& h : w.own[std::size_t(i)].raw) {
        auto found = idx.lookup(h);
        misses += !found || found->empty();
      }
    }
    write_errors += !idx.merge_recent();
    for (int i = 0; i < kShards; ++i) write_errors += !idx.remove(w.shards[std::size_t(i)].hash);
  }
  writing = false;
  builder.join();
  EXPECT_EQ(write_errors, 0u);
  EXPECT_EQ(misses, 0u);
  EXPECT_EQ(build_errors.load(), 0u);
  EXPECT_GT(builds.load(), 0u);
  std::printf("filter builds beside the writer: %llu\n", static_cast<unsigned long long>(builds.load()));
}

}  // namespace
}  // namespace dedupd::index::gen
