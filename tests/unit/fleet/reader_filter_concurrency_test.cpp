// Readers on their own threads sharing one set of key filters, as a
// daemon's pool does, while keyed shards are published between rounds: one
// Reader steps a key while the others read the filter complete for the
// generation they see. Every answer holds every entry published before it;
// the dev script runs this under TSan.
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <thread>

#include "fleet/fleet.hpp"
#include "fleet/key_filters.hpp"
#include "tests/unit/fleet/answer_support.hpp"
#include "tests/unit/fleet/pg_support.hpp"
#include "tests/unit/index/gen.hpp"

namespace dedupd::fleet::key_filter_concurrency_test {

using index::gen::GenXorb;
using test::Cluster;
using test::kDeadline;

TEST(FleetKeyFilterThreads, ReadersSharingFiltersNeverMissWhatWasPublishedBeforeTheirLookup) {
  const std::string url = Cluster::shared().primary_url(Cluster::shared().new_database());
  ConnectOptions o;
  o.url = url;
  o.host_name = "a";
  o.retry_after = std::chrono::milliseconds(0);
  o.connect_timeout = kDeadline;
  auto writer = Writer::connect(o);
  ASSERT_TRUE(writer) << writer.error().to_string();
  o.key_filters_shared = make_key_filters();

  constexpr int kThreads = 3, kPhases = 6, kLookupsPerPhase = 4;
  constexpr std::uint32_t kChunks = 150;
  const Key keys[2] = {index::gen::hash_of_seed(1201), index::gen::hash_of_seed(1202)};
  std::vector<GenXorb> xorbs;
  for (int p = 0; p < kPhases; ++p) xorbs.push_back(index::gen::gen_xorb(60 + std::uint64_t(p), kChunks));
  std::vector<Hash> asked;  // every raw hash of every phase, published or not yet
  for (const auto& x : xorbs) asked.insert(asked.end(), x.raw.begin(), x.raw.end());

  std::atomic<int> published{0};
  std::atomic<std::uint64_t> wrong{0}, failed{0}, filtered{0};
  std::barrier sync(kThreads + 1);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      auto reader = Reader::lazy(o);
      ChunkAnswers out;
      for (int p = 0; p < kPhases; ++p) {
        sync.arrive_and_wait();  // phase p's shard is published
        const std::size_t found_before = std::size_t(published.load()) * kChunks;
        for (int i = 0; i < kLookupsPerPhase; ++i) {
          if (!reader->lookup_chunks(asked, out, Deadline::in(kDeadline))) {
            ++failed;
            continue;
          }
          filtered += reader->last_lookup().filtered_keys;
          for (std::size_t q = 0; q < asked.size(); ++q)
            if (out.of(std::uint32_t(q)).size() != (q < found_before ? 1u : 0u)) ++wrong;
        }
        sync.arrive_and_wait();  // every lookup of phase p is done
      }
    });
  for (int p = 0; p < kPhases; ++p) {
    index::gen::ShardSpec spec;
    spec.xorbs = {&xorbs[std::size_t(p)]};
    spec.created = std::uint64_t(p) + 1;
    spec.key = keys[p % 2];
    spec.expiry = 4000000000ull;
    test::publish(**writer, index::gen::own(index::gen::build_shard(spec)));
    published = p + 1;
    sync.arrive_and_wait();
    sync.arrive_and_wait();
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failed.load(), 0u);
  EXPECT_EQ(wrong.load(), 0u) << "an answer missed an entry published before it, or found one not published";
  EXPECT_GT(filtered.load(), 0u) << "the shared filters were never used";
  // Each xorb's entries were fetched once for the set, not once a Reader.
  EXPECT_LE(o.key_filters_shared->entries_fetched(), std::uint64_t(kPhases) * kChunks);
}

}  // namespace dedupd::fleet::key_filter_concurrency_test
