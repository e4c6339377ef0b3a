// The fleet outbox: queued in the transaction of the change it reports,
// drained in order, and the schema-1 index of the previous release upgraded
// in place to carry it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <lmdb.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "index/tables.hpp"
#include "shard/mapped_file.hpp"
#include "tests/unit/index/support.hpp"

namespace dedupd::index {
namespace {

using gen::copy_of_fixture_index;
using gen::IndexFixture;
using gen::OwnedShard;
using gen::schema_version_on_disk;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

class Outbox : public IndexFixture {
 protected:
  std::vector<OutboxEntry> entries() {
    auto r = idx->outbox_next(1000);
    EXPECT_TRUE(r) << (r ? "" : r.error().to_string());
    return r ? *r : std::vector<OutboxEntry>{};
  }
  OutboxStats outbox() {
    auto r = idx->outbox_stats();
    EXPECT_TRUE(r);
    return r ? *r : OutboxStats{};
  }
  gen::GenXorb x1 = gen::gen_xorb(1, 40), x2 = gen::gen_xorb(2, 30), x3 = gen::gen_xorb(3, 20);
  OwnedShard shard_of(std::vector<const gen::GenXorb*> xs, std::uint64_t created,
                      std::optional<std::uint64_t> expiry = {}, Key key = {}) {
    gen::ShardSpec spec{std::move(xs)};
    spec.created = created;
    spec.expiry = expiry;
    spec.key = key;
    return gen::own(gen::build_shard(spec));
  }
};

TEST_F(Outbox, OffQueuesNothing) {
  auto a = shard_of({&x1}, 1);
  ingest(a);
  ASSERT_TRUE(idx->remove(a.hash, 5));
  EXPECT_FALSE(outbox().enabled);
  EXPECT_EQ(outbox().depth, 0u);
  EXPECT_THAT(problems(), IsEmpty());
}

TEST_F(Outbox, TurningOnQueuesEveryLiveShardOnce) {
  auto a = shard_of({&x1}, 1), b = shard_of({&x2}, 2), c = shard_of({&x3}, 3);
  ingest(a), ingest(b), ingest(c);
  ASSERT_TRUE(idx->remove(b.hash, 5));
  ASSERT_TRUE(idx->set_outbox(true, 100));
  ASSERT_TRUE(idx->set_outbox(true, 200));  // already on: nothing more
  auto e = entries();
  ASSERT_EQ(e.size(), 2u);
  std::set<Hash> queued{e[0].shard, e[1].shard};
  EXPECT_EQ(queued, (std::set<Hash>{a.hash, c.hash}));
  EXPECT_EQ(e[0].op, OutboxOp::publish);
  EXPECT_EQ(e[0].queued_at, 100u);
  EXPECT_LT(e[0].seq, e[1].seq);
  EXPECT_TRUE(outbox().enabled);
  EXPECT_THAT(problems(), IsEmpty());
  ASSERT_TRUE(idx->set_outbox(false, 300));
  EXPECT_EQ(outbox().depth, 0u);
  EXPECT_FALSE(outbox().enabled);
  EXPECT_THAT(problems(), IsEmpty());
}

TEST_F(Outbox, ChangesQueueTheirEntryAndAcksDrainInOrder) {
  ASSERT_TRUE(idx->set_outbox(true, 1));
  auto a = shard_of({&x1}, 1), b = shard_of({&x2}, 2, 5000);
  IngestOptions o;
  o.now = 1000;
  ingest(a, "/a", o);
  ingest(a, "/a-again", o);  // the same shard: nothing new for the fleet
  ingest(b, "/b", o);
  ASSERT_TRUE(idx->remove(a.hash, 2000));
  ASSERT_TRUE(idx->remove(a.hash, 2001));  // not live any more: no second drop
  auto expired = idx->expire(6000);
  ASSERT_TRUE(expired);
  ASSERT_THAT(*expired, ElementsAre(b.hash));
  auto e = entries();
  ASSERT_EQ(e.size(), 4u);
  EXPECT_EQ(e[0].op, OutboxOp::publish);
  EXPECT_EQ(e[0].shard, a.hash);
  EXPECT_EQ(e[0].queued_at, 1000u);
  EXPECT_EQ(e[1].op, OutboxOp::publish);
  EXPECT_EQ(e[1].shard, b.hash);
  EXPECT_EQ(e[2].op, OutboxOp::drop_hold);
  EXPECT_EQ(e[2].shard, a.hash);
  EXPECT_EQ(e[2].queued_at, 2000u);
  EXPECT_EQ(e[3].op, OutboxOp::drop_hold);
  EXPECT_EQ(e[3].shard, b.hash);
  EXPECT_EQ(e[3].queued_at, 6000u);
  EXPECT_EQ(outbox().depth, 4u);
  EXPECT_EQ(outbox().oldest_queued, 1000u);

  ASSERT_TRUE(idx->outbox_ack(e[1].seq));
  auto rest = entries();
  ASSERT_EQ(rest.size(), 2u);
  EXPECT_EQ(rest[0].seq, e[2].seq);
  EXPECT_EQ(outbox().oldest_queued, 2000u);
  ASSERT_TRUE(idx->outbox_ack(e[1].seq));  // again: harmless
  EXPECT_EQ(entries().size(), 2u);
  // Survives a reopen: it is in the index, not in memory.
  reopen();
  EXPECT_EQ(entries().size(), 2u);
  ASSERT_TRUE(idx->outbox_ack(e[3].seq));
  EXPECT_EQ(outbox().depth, 0u);
  EXPECT_FALSE(outbox().oldest_queued);
  // Sequence numbers keep growing after the queue ran empty.
  auto c = shard_of({&x3}, 3);
  ingest(c);
  auto last = entries();
  ASSERT_EQ(last.size(), 1u);
  EXPECT_GT(last[0].seq, e[3].seq);
  EXPECT_THAT(problems(), IsEmpty());
}

TEST_F(Outbox, RevivedShardIsPublishedAgain) {
  ASSERT_TRUE(idx->set_outbox(true, 1));
  auto a = shard_of({&x1}, 1);
  ingest(a);
  ASSERT_TRUE(idx->remove(a.hash, 2));
  IngestOptions o;
  o.revive = true;
  ingest(a, "", o);
  auto e = entries();
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[2].op, OutboxOp::publish);
  EXPECT_EQ(e[2].shard, a.hash);
}

// Issue 41: a live shard that learns a CAS is published again, so the fleet
// learns it too (a publish of a shard it has merges the CAS set); one that
// learns nothing new, or is not live, queues nothing.
TEST_F(Outbox, AShardThatLearnsACasIsPublishedAgain) {
  ASSERT_TRUE(idx->set_outbox(true, 1));
  auto a = shard_of({&x1}, 1), b = shard_of({&x2}, 2);
  IngestOptions o;
  o.now = 1000;
  o.cas = "https://cas-a.example";
  ingest(a, "/a", o);
  ingest(b, "/b", o);
  ASSERT_TRUE(idx->remove(b.hash, 1500));
  o.now = 2000;
  ingest(a, "/a-again", o);  // a CAS it has: nothing new for the fleet
  o.cas = "https://cas-b.example";
  ingest(b, "/b-again", o);  // not live: not in the fleet either
  o.now = 3000;
  ingest(a, "/a-b", o);
  auto e = entries();
  ASSERT_EQ(e.size(), 4u);
  EXPECT_EQ(e[2].op, OutboxOp::drop_hold);
  EXPECT_EQ(e[3].op, OutboxOp::publish);
  EXPECT_EQ(e[3].shard, a.hash);
  EXPECT_EQ(e[3].queued_at, 3000u);
  auto info = idx->shard(a.hash);
  ASSERT_TRUE(info && *info);
  EXPECT_EQ((*info)->cas, "https://cas-a.example https://cas-b.example");
  EXPECT_THAT(problems(), IsEmpty());
}

// What the publisher hands the fleet when the file is gone: the same
// xorbs, chunks, files, key and expiry as the shard that was indexed.
TEST_F(Outbox, RebuiltShardCarriesTheSameEntries) {
  gen::ShardSpec spec{{&x1, &x2}};
  spec.key = gen::hash_of_seed(77);
  spec.expiry = 4000000000;
  spec.files.push_back(gen::gen_file(11, x1, 0, 40, true, true));
  spec.files.push_back(gen::gen_file(12, x2, 0, 30, true, false));
  auto a = gen::own(gen::build_shard(spec));
  ingest(a);
  auto rebuilt = idx->rebuild_shard(a.hash);
  ASSERT_TRUE(rebuilt) << rebuilt.error().to_string();
  ASSERT_TRUE(*rebuilt);
  auto view = shard::ShardView::parse(**rebuilt);
  ASSERT_TRUE(view) << view.error().to_string();
  EXPECT_EQ(view->chunk_key(), a.view->chunk_key());
  EXPECT_EQ(view->expiry(), a.view->expiry());
  EXPECT_EQ(view->stats().xorbs, 2u);
  EXPECT_EQ(view->stats().chunks, 70u);
  EXPECT_EQ(view->stats().files, 2u);
  // Indexed elsewhere, it answers exactly as the original does here.
  gen::TempDir other;
  Options o;
  o.dir = (other / "idx");
  auto idx2 = Index::open(o);
  ASSERT_TRUE(idx2);
  ASSERT_TRUE((*idx2)->ingest(*view, SourceInfo{}));
  for (const auto* x : {&x1, &x2})
    for (const Hash& raw : x->raw) {
      auto here = idx->lookup(raw), there = (*idx2)->lookup(raw);
      ASSERT_TRUE(here && there);
      ASSERT_EQ(here->size(), 1u);
      ASSERT_EQ(there->size(), 1u);
      EXPECT_EQ((*here)[0].xorb, (*there)[0].xorb);
      EXPECT_EQ((*here)[0].chunk_index, (*there)[0].chunk_index);
      EXPECT_EQ((*here)[0].byte_start, (*there)[0].byte_start);
      EXPECT_EQ((*here)[0].byte_end, (*there)[0].byte_end);
    }
  auto f = (*idx2)->file(spec.files[0].header.file_hash);
  ASSERT_TRUE(f && *f);
  EXPECT_EQ((*f)->verification.size(), 1u);
  EXPECT_TRUE((*f)->sha256);
  // Gone shards have nothing to publish.
  ASSERT_TRUE(idx->remove(a.hash, 9));
  auto none = idx->rebuild_shard(a.hash);
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);
  auto unknown = idx->rebuild_shard(gen::hash_of_seed(5));
  ASSERT_TRUE(unknown);
  EXPECT_FALSE(*unknown);
}

// tests/fixtures/index-v1/README.md says how the index was written (by the
// release before the outbox, with these same generated shards).
// The observer hears of each commit that queued entries, and of no other,
// so a publisher can sleep until there is something to publish.
class CountingObserver : public Observer {
 public:
  void map_grown(std::uint64_t, std::uint64_t) override {}
  void stale_readers_cleared(int) override {}
  void merge_failed(const base::Error&) override {}
  void outbox_queued() override { ++queued; }
  int queued = 0;
};

TEST_F(Outbox, TheObserverHearsOfEachCommitThatQueued) {
  CountingObserver obs;
  Options o;
  o.observer = &obs;
  reopen(o);
  auto a = shard_of({&x1}, 1), b = shard_of({&x2}, 2);
  ingest(a);
  EXPECT_EQ(obs.queued, 0) << "the outbox is off: nothing queued";
  ASSERT_TRUE(idx->set_outbox(true, 100));
  EXPECT_EQ(obs.queued, 1);  // a's entry
  ASSERT_TRUE(idx->set_outbox(true, 100));
  EXPECT_EQ(obs.queued, 1) << "already on: nothing queued";
  ingest(b);
  EXPECT_EQ(obs.queued, 2);
  ingest(b);  // the same shard again: nothing new
  EXPECT_EQ(obs.queued, 2);
  ASSERT_TRUE(idx->remove(a.hash, 5));
  EXPECT_EQ(obs.queued, 3);
  auto c = shard_of({&x3}, 3, 50);
  ingest(c);
  EXPECT_EQ(obs.queued, 4);
  auto gone = idx->expire(60);
  ASSERT_TRUE(gone);
  EXPECT_EQ(gone->size(), 1u);
  EXPECT_EQ(obs.queued, 5);
  EXPECT_EQ(entries().size(), 5u);
  reopen();  // before obs goes
}

TEST(IndexSchemaUpgrade, Version1IndexOfAnEarlierReleaseOpensAsTheCurrentVersion) {
  gen::TempDir tmp;
  const std::string dir = copy_of_fixture_index(tmp, "index-v1");
  ASSERT_EQ(schema_version_on_disk(dir), 1u);

  Options o;
  o.dir = dir;
  auto opened = Index::open(o);
  ASSERT_TRUE(opened) << opened.error().to_string();
  auto& idx = **opened;
  auto problems = idx.check_invariants();
  ASSERT_TRUE(problems);
  EXPECT_THAT(*problems, IsEmpty());
  auto st = idx.stats();
  ASSERT_TRUE(st);
  EXPECT_EQ(st->shards_live, 4u);
  EXPECT_EQ(st->shards_removed, 1u);
  EXPECT_EQ(st->keys, 2u);  // gpt2's and the generated keyed shard's

  // The same answers the previous release gave.
  auto x1 = gen::gen_xorb(1, 40), x2 = gen::gen_xorb(2, 30), x3 = gen::gen_xorb(3, 20);
  for (const auto* x : {&x1, &x2, &x3})
    for (std::size_t i = 0; i < x->raw.size(); ++i) {
      auto r = idx.lookup(x->raw[i]);
      ASSERT_TRUE(r);
      ASSERT_EQ(r->size(), 1u) << "chunk " << i;
      EXPECT_EQ((*r)[0].xorb, x->hash);
      EXPECT_EQ((*r)[0].chunk_index, i);
      EXPECT_EQ((*r)[0].byte_start, x->byte_start(i));
    }
  auto x2_holders = idx.lookup(x2.raw[0]);
  ASSERT_TRUE(x2_holders);
  EXPECT_EQ((*x2_holders)[0].shards.size(), 2u);  // the raw shard and the one sharing x2
  auto gpt2 = idx.xorb(*Hash::parse("16fe54ff57e667703a42fee0714b243eabd2d219773fb88446da2795c901dc0d"));
  ASSERT_TRUE(gpt2);
  ASSERT_EQ(gpt2->size(), 1u);
  EXPECT_TRUE((*gpt2)[0].keyed);
  EXPECT_EQ(idx.shards(ShardState::removed)->size(), 1u);

  // The outbox came with the upgrade, off, and works.
  auto ob = idx.outbox_stats();
  ASSERT_TRUE(ob);
  EXPECT_FALSE(ob->enabled);
  EXPECT_EQ(ob->depth, 0u);
  ASSERT_TRUE(idx.set_outbox(true, 1));
  EXPECT_EQ(idx.outbox_stats()->depth, 4u);
  auto queued = idx.outbox_next(10);
  ASSERT_TRUE(queued);
  for (const auto& e : *queued) {
    auto rebuilt = idx.rebuild_shard(e.shard);
    ASSERT_TRUE(rebuilt);
    ASSERT_TRUE(*rebuilt);
  }
  opened->reset();
  EXPECT_EQ(schema_version_on_disk(dir), schema::kVersion);
  // And opens again as it is.
  auto again = Index::open(o);
  ASSERT_TRUE(again) << again.error().to_string();
  EXPECT_EQ((*again)->outbox_stats()->depth, 4u);
}

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// dedupd --check opens this way: the schema-1 index is read as it is, the
// upgrade waits for a writer, and not a byte of data.mdb changes.
TEST(IndexSchemaUpgrade, AReadOnlyOpenOfVersion1ReadsItAndWritesNothing) {
  gen::TempDir tmp;
  const std::string dir = copy_of_fixture_index(tmp, "index-v1");
  const std::string before = bytes_of(dir + "/data.mdb");
  {
    Options o;
    o.dir = dir;
    o.read_only = true;
    auto opened = Index::open(o);
    ASSERT_TRUE(opened) << opened.error().to_string();
    auto& idx = **opened;
    EXPECT_EQ(idx.schema_version(), 1u);
    auto problems = idx.check_invariants();
    ASSERT_TRUE(problems) << problems.error().to_string();
    EXPECT_THAT(*problems, IsEmpty());
    auto st = idx.stats();
    ASSERT_TRUE(st);
    EXPECT_EQ(st->shards_live, 4u);
    auto x1 = gen::gen_xorb(1, 40);
    auto r = idx.lookup(x1.raw[0]);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->size(), 1u);
    EXPECT_EQ((*r)[0].xorb, x1.hash);
    auto removed = idx.remove(x1.hash, 1);
    ASSERT_FALSE(removed);
    EXPECT_EQ(removed.error().rule, kRuleArgument);
    EXPECT_NE(removed.error().message.find("read-only"), std::string::npos) << removed.error().to_string();
  }
  EXPECT_EQ(schema_version_on_disk(dir), 1u);
  EXPECT_TRUE(bytes_of(dir + "/data.mdb") == before) << "data.mdb changed";
}

// tests/fixtures/index-v2/README.md says how the index was written (by
// release c91351c, whose publisher acknowledged three shards it could not
// rebuild).
TEST(IndexSchemaUpgrade, Version2IndexOfC91351cOpensAsTheCurrentVersionAndItsShardsRebuild) {
  gen::TempDir tmp;
  const std::string dir = copy_of_fixture_index(tmp, "index-v2");
  ASSERT_EQ(schema_version_on_disk(dir), 2u);
  Options o;
  o.dir = dir;
  {
    auto opened = Index::open(o);
    ASSERT_TRUE(opened) << opened.error().to_string();
    auto& idx = **opened;
    EXPECT_EQ(idx.schema_version(), schema::kVersion);
    auto problems = idx.check_invariants();
    ASSERT_TRUE(problems);
    EXPECT_THAT(*problems, IsEmpty());
    auto ob = idx.outbox_stats();
    ASSERT_TRUE(ob);
    EXPECT_TRUE(ob->enabled);
    EXPECT_EQ(ob->depth, 0u) << "that release acknowledged everything";
    EXPECT_EQ(ob->parked, 0u);
    auto live = idx.shards(ShardState::live);
    ASSERT_TRUE(live);
    ASSERT_EQ(live->size(), 4u);
    // Refs written before schema 3 do not say each file's flags: the
    // rebuild follows the rest of the shard for the empty file, so it
    // parses, and keeps every file with terms as it was.
    for (const auto& s : *live) {
      auto bytes = idx.rebuild_shard(s.hash);
      ASSERT_TRUE(bytes) << bytes.error().to_string();
      ASSERT_TRUE(*bytes);
      auto view = shard::ShardView::parse(**bytes);
      ASSERT_TRUE(view) << s.hash.to_string() << ": " << view.error().to_string();
    }
    // Parking works on the upgraded index.
    OutboxEntry e;
    e.seq = 99;
    e.shard = (*live)[0].hash;
    ASSERT_TRUE(idx.outbox_park(e, "index.rebuild: a test", 5));
    EXPECT_EQ(idx.outbox_stats()->parked, 1u);
  }
  EXPECT_EQ(schema_version_on_disk(dir), schema::kVersion);
  auto again = Index::open(o);
  ASSERT_TRUE(again) << again.error().to_string();
  auto parked = (*again)->outbox_parked(10);
  ASSERT_TRUE(parked);
  ASSERT_EQ(parked->size(), 1u);
  EXPECT_EQ((*parked)[0].reason, "index.rebuild: a test");
  EXPECT_EQ((*parked)[0].parked_at, 5u);
}

// tests/fixtures/index-v3/README.md says how the index was written (by
// release fd0e0e3): the real server shard live, a raw shard, and a keyed
// one that expired under that release.
TEST(IndexSchemaUpgrade, Version3IndexOfFd0e0e3OpensAsTheCurrentVersionAndKeepsTheFormsOfShardsThatExpireFromThenOn) {
  gen::TempDir tmp;
  const std::string dir = copy_of_fixture_index(tmp, "index-v3");
  ASSERT_EQ(schema_version_on_disk(dir), 3u);
  Options o;
  o.dir = dir;
  const Hash gpt2_chunk = *Hash::parse("9502eec19d4b0c9f7b389228fa801f68ecdf15d69ccd1da2f9ddbd0219898335");
  auto x1 = gen::gen_xorb(1, 40), x2 = gen::gen_xorb(2, 30);
  {
    // Read-only first: the older layout is read as it is.
    Options ro = o;
    ro.read_only = true;
    auto opened = Index::open(ro);
    ASSERT_TRUE(opened) << opened.error().to_string();
    EXPECT_EQ((*opened)->schema_version(), 3u);
    EXPECT_THAT(*(*opened)->expired_holders(x2.raw[0]), IsEmpty());
    EXPECT_THAT(*(*opened)->check_invariants(), IsEmpty());
  }
  {
    auto opened = Index::open(o);
    ASSERT_TRUE(opened) << opened.error().to_string();
    auto& idx = **opened;
    EXPECT_EQ(idx.schema_version(), schema::kVersion);
    EXPECT_THAT(*idx.check_invariants(), IsEmpty());
    auto st = idx.stats();
    ASSERT_TRUE(st);
    EXPECT_EQ(st->shards_live, 2u);
    EXPECT_EQ(st->shards_expired, 1u);
    EXPECT_EQ(idx.lookup(gpt2_chunk)->size(), 1u);
    EXPECT_EQ(idx.lookup(x1.raw[0])->size(), 1u);
    // Expired under the old release: nothing kept, so nothing to say.
    EXPECT_THAT(*idx.lookup(x2.raw[0]), IsEmpty());
    EXPECT_THAT(*idx.expired_holders(x2.raw[0]), IsEmpty());
    // Expiring now: kept.
    auto gone = idx.expire(1754664705);
    ASSERT_TRUE(gone) << gone.error().to_string();
    ASSERT_EQ(gone->size(), 1u);
    EXPECT_THAT(*idx.lookup(gpt2_chunk), IsEmpty());
    auto held = idx.expired_holders(gpt2_chunk);
    ASSERT_TRUE(held);
    ASSERT_EQ(held->size(), 1u);
    EXPECT_EQ((*held)[0].hash, gone->front());
    EXPECT_THAT(*idx.check_invariants(), IsEmpty());
  }
  EXPECT_EQ(schema_version_on_disk(dir), schema::kVersion);
}

// A parked entry leaves the queue with its reason and comes back at the end
// of it on retry; turning the outbox off forgets it with the rest.
TEST_F(Outbox, AParkedEntryStaysWithItsReasonUntilRetried) {
  ASSERT_TRUE(idx->set_outbox(true, 100));
  auto a = shard_of({&x1}, 1), b = shard_of({&x2}, 2);
  ingest(a);
  ingest(b);
  auto q = entries();
  ASSERT_EQ(q.size(), 2u);
  ASSERT_TRUE(idx->outbox_park(q[0], "fleet.argument: refused", 200));
  EXPECT_EQ(outbox().depth, 1u);
  EXPECT_EQ(outbox().parked, 1u);
  EXPECT_THAT(problems(), IsEmpty());
  reopen();
  auto parked = idx->outbox_parked(10);
  ASSERT_TRUE(parked);
  ASSERT_EQ(parked->size(), 1u);
  EXPECT_EQ((*parked)[0].entry.shard, a.hash);
  EXPECT_EQ((*parked)[0].entry.op, OutboxOp::publish);
  EXPECT_EQ((*parked)[0].reason, "fleet.argument: refused");
  auto moved = idx->outbox_retry_parked(300);
  ASSERT_TRUE(moved);
  EXPECT_EQ(*moved, 1u);
  auto again = idx->outbox_retry_parked(300);
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, 0u);
  q = entries();
  ASSERT_EQ(q.size(), 2u);
  EXPECT_EQ(q[0].shard, b.hash);
  EXPECT_EQ(q[1].shard, a.hash);
  EXPECT_EQ(outbox().parked, 0u);
  ASSERT_TRUE(idx->outbox_park(q[1], "again", 400));
  ASSERT_TRUE(idx->set_outbox(false, 500));
  EXPECT_EQ(outbox().parked, 0u);
  EXPECT_THAT(problems(), IsEmpty());
}

// Anti-entropy compares CAS sets too (issue 58): a shard the fleet holds
// without a CAS that accepted it here (the entry that said so was lost) is
// published again; one whose CASes the fleet has, or of unknown CAS here,
// queues nothing.
TEST_F(Outbox, ReconcilePublishesAgainAShardTheFleetHoldsWithoutOneOfItsCases) {
  auto a = shard_of({&x1}, 1), b = shard_of({&x2}, 2), c = shard_of({&x3}, 3);
  IngestOptions o;
  o.now = 1000;
  o.cas = "https://cas-a.example";
  ingest(a, "/a", o);
  ingest(b, "/b", o);
  o.cas = "https://cas-b.example";
  ingest(a, "/a-b", o);
  ingest(c, "/c");  // unknown CAS
  ASSERT_TRUE(idx->set_outbox(true, 2000));
  ASSERT_TRUE(idx->outbox_ack(entries().back().seq));
  std::vector<std::pair<Hash, std::string>> fleet{
      {a.hash, "https://cas-a.example"}, {b.hash, "https://cas-a.example https://cas-c.example"}, {c.hash, ""}};
  std::sort(fleet.begin(), fleet.end());
  std::vector<Hash> held;
  std::vector<std::string> cas;
  for (const auto& [h, set] : fleet) held.push_back(h), cas.push_back(set);
  auto r = idx->outbox_reconcile(std::nullopt, held, false, 100, 3000, cas);
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(r->publish + r->drop, 0u);
  EXPECT_EQ(r->cas, 1u);
  auto e = entries();
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].op, OutboxOp::publish);
  EXPECT_EQ(e[0].shard, a.hash);
  // Without the CAS sets, holds alone: nothing differs.
  ASSERT_TRUE(idx->outbox_ack(e[0].seq));
  auto holds_only = idx->outbox_reconcile(std::nullopt, held, false, 100, 3100);
  ASSERT_TRUE(holds_only);
  EXPECT_EQ(holds_only->publish + holds_only->drop + holds_only->cas, 0u);
  EXPECT_THAT(problems(), IsEmpty());
}

// Anti-entropy rounds: what differs within the hashes both sides cover is
// queued, a bounded number of records per round, never a shard whose entry
// is queued or parked already.
TEST_F(Outbox, ReconcileQueuesWhatDiffersRoundByRound) {
  std::vector<OwnedShard> s;
  std::vector<gen::GenXorb> xs;
  for (std::uint64_t i = 0; i < 6; ++i) xs.push_back(gen::gen_xorb(50 + i, 2));
  for (std::uint64_t i = 0; i < 6; ++i) s.push_back(shard_of({&xs[i]}, 10 + i));
  for (const auto& x : s) ingest(x);
  std::vector<Hash> live;
  for (const auto& x : s) live.push_back(x.hash);
  std::sort(live.begin(), live.end());
  // Off: nothing queued, the pass is over.
  auto off = idx->outbox_reconcile(std::nullopt, {}, false, 100, 1);
  ASSERT_TRUE(off);
  EXPECT_EQ(off->publish + off->drop, 0u);
  EXPECT_FALSE(off->through);
  ASSERT_TRUE(idx->set_outbox(true, 100));
  ASSERT_TRUE(idx->outbox_ack(entries().back().seq));
  // The fleet holds live[0], live[2] and a shard this host does not have.
  Hash gone = gen::hash_of_seed(4242);
  std::vector<Hash> fleet{live[0], live[2], gone};
  std::sort(fleet.begin(), fleet.end());
  // live[1] is already parked: it gets there by itself.
  OutboxEntry p;
  p.seq = 1000;
  p.shard = live[1];
  ASSERT_TRUE(idx->outbox_park(p, "parked", 1));
  std::size_t publish = 0, drop = 0, rounds = 0;
  std::optional<Hash> after;
  do {
    std::vector<Hash> page;
    for (const Hash& h : fleet)
      if ((!after || h > *after) && page.size() < 2) page.push_back(h);
    const bool more = page.size() == 2 && page.back() != fleet.back();
    auto r = idx->outbox_reconcile(after, page, more, 2, 200);
    ASSERT_TRUE(r) << r.error().to_string();
    publish += r->publish, drop += r->drop, ++rounds;
    after = r->through;
  } while (after && rounds < 20);
  EXPECT_GE(rounds, 3u) << "2 records a round";
  EXPECT_EQ(publish, 3u);  // live[3..5]
  EXPECT_EQ(drop, 1u);     // gone
  std::set<Hash> published, dropped;
  for (const auto& e : entries()) (e.op == OutboxOp::publish ? published : dropped).insert(e.shard);
  EXPECT_EQ(published, (std::set<Hash>{live[3], live[4], live[5]}));
  EXPECT_EQ(dropped, (std::set<Hash>{gone}));
  // Queued now: a second pass queues nothing.
  auto again = idx->outbox_reconcile(std::nullopt, fleet, false, 100, 300);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->publish + again->drop, 0u);
  EXPECT_THAT(problems(), IsEmpty());
}

TEST(IndexSchemaUpgrade, AReadOnlyOpenNeverCreatesAnIndex) {
  gen::TempDir tmp;
  Options o;
  o.dir = tmp / "none";
  o.read_only = true;
  EXPECT_FALSE(Index::open(o));
  EXPECT_FALSE(std::filesystem::exists(tmp / "none"));
}

}  // namespace
}  // namespace dedupd::index
