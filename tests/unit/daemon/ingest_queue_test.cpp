// daemon/ingest/ingest_queue: real shard files into a real index through the
// real Ingester, as the work loop drives the queue. The one stand-in is the
// free space under state_dir (a test cannot free a disk's blocks); a full
// index is a real one, its map held at its maximum.
#include "daemon/ingest/ingest_queue.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "daemon/core/counters.hpp"
#include "daemon/ingest/cas_scope.hpp"
#include "daemon/ingest/ingester.hpp"
#include "index/index.hpp"
#include "test_support.hpp"
#include "tests/support/temp_dir.hpp"

namespace dedupd::daemon::ingest {
namespace {

namespace st = shard::testing;
using namespace std::chrono_literals;
using Clock = IngestQueue::Clock;

class IngestQueueTest : public ::testing::Test {
 protected:
  // `max_map`: the most the index's map may grow to (0: no bound).
  void open(std::uint64_t max_map = 0) {
    index::Options o;
    o.dir = dir / "index";
    if (max_map != 0) o.max_map_size = max_map;
    auto opened = index::Index::open(o);
    ASSERT_TRUE(opened) << opened.error().to_string();
    index = std::move(opened).value();
    ingester = std::make_unique<Ingester>(*index, counters, scopes);
    queue = std::make_unique<IngestQueue>(*ingester, dir.path(), health,
                                          [this](const std::filesystem::path&) { return space; });
    queue->set_events({.expiry_may_move = [this] { ++expiry_may_move; },
                       .expired_found = [this] { ++expired_found; },
                       .between_files = [this] { ++between_files; },
                       .drained = [this] { ++drained; }});
  }

  // A valid shard of `xorbs` xorbs of `chunks` chunks each, written as
  // `name` (expiring at `expiry` when given).
  watch::Candidate shard_file(const std::string& name, std::uint64_t seed, std::size_t xorbs = 1,
                              std::size_t chunks = 8, std::optional<std::uint64_t> expiry = std::nullopt) {
    shard::ShardWriter w;
    for (std::size_t i = 0; i < xorbs; ++i) w.add_xorb(st::make_xorb(seed * 1000 + i, chunks).record);
    shard::WriteOptions wo;
    if (expiry) wo.footer.key_expiry = *expiry;
    const auto bytes = w.write(wo);
    const std::string path = dir / name;
    tests::write_file(path, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
    return watch::Candidate{path, watch::FileKind::shard};
  }

  tests::TempDir dir{"ingest-queue"};
  core::Counters counters;
  CasScopes scopes;
  core::IndexHealthBoard health;
  core::StateDirSpace space{.known = true, .free_bytes = 100u << 20, .size_bytes = 1u << 30};
  std::unique_ptr<index::Index> index;
  std::unique_ptr<Ingester> ingester;
  std::unique_ptr<IngestQueue> queue;
  int expiry_may_move = 0, expired_found = 0, between_files = 0, drained = 0;
};

TEST_F(IngestQueueTest, AFileQueuedTwiceGoesInOnce) {
  open();
  const watch::Candidate a = shard_file("a.mdb", 1);
  queue->add({a, a});
  queue->add({a});
  EXPECT_EQ(queue->queued(), 1u);
  queue->ingest(1h);
  EXPECT_TRUE(queue->idle());
  EXPECT_EQ(counters.shards_ingested, 1u);
}

TEST_F(IngestQueueTest, EachFileTellsTheOtherPartsWhatChanged) {
  open();
  queue->add({shard_file("a.mdb", 1), shard_file("b.mdb", 2), shard_file("gone.mdb", 3, 1, 8, /*expiry=*/1000)});
  queue->ingest(1h);
  EXPECT_EQ(counters.shards_ingested, 2u);
  EXPECT_EQ(expiry_may_move, 2) << "each shard that went in may expire first";
  EXPECT_EQ(expired_found, 1) << "the shard expired when found: its file may be due";
  EXPECT_EQ(between_files, 3) << "the watchdog between files";
  EXPECT_EQ(drained, 1);
  queue->ingest(1h);
  EXPECT_EQ(drained, 1) << "an empty queue drains nothing";
}

// A file open for writing is not complete: it waits, and comes back when
// another write goes through (it may fit now too), never dropped.
TEST_F(IngestQueueTest, AFileStillWrittenWaitsAndComesBackWhenAWriteGoesThrough) {
  open();
  const watch::Candidate busy = shard_file("busy.mdb", 1);
  const int writer = ::open(busy.path.c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(writer, 0);
  queue->add({busy});
  queue->ingest(1h);
  EXPECT_EQ(counters.shards_ingested, 0u);
  EXPECT_TRUE(queue->idle());
  EXPECT_EQ(queue->waiting(), 1u);
  EXPECT_FALSE(queue->out_of_space());
  EXPECT_TRUE(queue->next_retry()) << "a waiting file is looked at again";
  EXPECT_EQ(queue->waiting_status(0).files.at(0).rule, kRuleStillWritten);
  ::close(writer);

  queue->retry_waiting(Clock::now());
  EXPECT_TRUE(queue->idle()) << "its backoff has not passed";
  queue->add({shard_file("other.mdb", 2)});
  queue->ingest(1h);
  EXPECT_EQ(counters.shards_ingested, 1u);
  queue->retry_waiting(Clock::now());
  EXPECT_EQ(queue->queued(), 1u) << "a write went through: the waiting file is due at once";
  queue->ingest(1h);
  EXPECT_EQ(counters.shards_ingested, 2u);
  EXPECT_EQ(queue->waiting(), 0u);
  EXPECT_FALSE(queue->next_retry());
}

// The index's map at its maximum: a shard that needs more waits, out of
// space, and is tried again when expiry gives pages back, or when the free
// space under state_dir grows by kSpaceReturned (looked at once every
// kSpaceCheckEvery, before its backoff of 2 s, then 4 s, has passed).
TEST_F(IngestQueueTest, AFullIndexMakesFilesWaitUntilSpaceComesBack) {
  open(/*max_map=*/1u << 20);
  queue->add({shard_file("big.mdb", 1, 16, 2048)});
  queue->ingest(1h);
  ASSERT_EQ(queue->waiting(), 1u) << "the shard fit in the map after all: make it bigger";
  EXPECT_TRUE(queue->out_of_space());
  EXPECT_TRUE(queue->state_dir_space().full);
  const auto t = Clock::now();
  const auto check = IngestQueue::kSpaceCheckEvery;

  queue->retry_waiting(t);  // the first look at the free space
  EXPECT_TRUE(queue->idle()) << "neither its backoff has passed nor space come back";
  space.free_bytes += IngestQueue::kSpaceReturned - 1;
  queue->retry_waiting(t + check);
  EXPECT_TRUE(queue->idle()) << "less than kSpaceReturned came back";

  queue->space_freed(t + check);
  queue->retry_waiting(t + check);
  EXPECT_EQ(queue->queued(), 1u) << "expiry gave pages back: tried again";
  queue->ingest(1h);
  EXPECT_EQ(queue->waiting(), 1u) << "still too big: it waits again, never dropped";
  EXPECT_EQ(queue->waiting_status(0).files.at(0).attempts, 2u);

  space.free_bytes += IngestQueue::kSpaceReturned;
  queue->retry_waiting(t + 2 * check - 1ms);
  EXPECT_TRUE(queue->idle()) << "the free space is looked at once every kSpaceCheckEvery";
  queue->retry_waiting(t + 2 * check);
  EXPECT_EQ(queue->queued(), 1u) << "space came back: the waiting file is tried again";
}

TEST_F(IngestQueueTest, ARescanIngestsAtOnceWhatItFindsAndItLeavesTheQueue) {
  open();
  const watch::Candidate a = shard_file("a.mdb", 1), b = shard_file("b.mdb", 2);
  queue->add({a, b});
  const core::RescanResult r = queue->ingest_now({a});
  EXPECT_EQ(r.scanned, 1u);
  EXPECT_EQ(r.ingested, 1u);
  EXPECT_EQ(queue->queued(), 1u) << "b stays queued";
  queue->ingest(1h);
  EXPECT_EQ(counters.shards_ingested, 2u);
}

// While a damaged index is rebuilt, the queue the start filled is the
// rebuild: it is done when that queue has drained.
TEST_F(IngestQueueTest, TheRebuildIsDoneWhenTheQueueTheStartFilledHasDrained) {
  open();
  health.set_rebuilding(true);
  health.update([](core::IndexHealth& h) { h.state = "rebuilding"; });
  queue->add({shard_file("a.mdb", 1), shard_file("b.mdb", 2)});
  queue->track_rebuild();
  EXPECT_EQ(health.get().rebuild_files_total, 2u);
  EXPECT_EQ(health.get().rebuild_files_done, 0u);
  queue->ingest(0ms);
  EXPECT_TRUE(health.rebuilding()) << "nothing taken in yet";
  queue->ingest(1h);
  EXPECT_FALSE(health.rebuilding());
  EXPECT_EQ(health.get().state, "rebuilt");
  EXPECT_EQ(health.get().rebuild_files_done, 2u);
}

TEST_F(IngestQueueTest, ARebuildWithNothingToTakeInIsDoneAtOnce) {
  open();
  health.set_rebuilding(true);
  queue->track_rebuild();
  EXPECT_FALSE(health.rebuilding());
  EXPECT_EQ(health.get().state, "rebuilt");
}

}  // namespace
}  // namespace dedupd::daemon::ingest
