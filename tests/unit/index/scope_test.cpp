// Each shard's CAS (schema 7): stored with the shard, given by the ingest,
// learned by a shard known without one, carried to every lookup answer, set
// aside from global-dedup answers and restored; and the upgrade of the index
// release 8cf128f wrote (tests/fixtures/index-v6), its shards scoped from
// their paths.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <lmdb.h>

#include <string>
#include <vector>

#include "index/records.hpp"
#include "index/tables.hpp"
#include "shard/cas_scope.hpp"
#include "tests/unit/index/support.hpp"

namespace dedupd::index {
namespace {

using gen::copy_of_fixture_index;
using gen::schema_version_on_disk;
using ::testing::IsEmpty;

constexpr const char* kCasA = "https://cas-a.example";
constexpr const char* kCasB = "https://cas-b.example";

TEST(ShardScopeRecord, ACasAndASetAsideRoundTripAndAnOlderRecordReadsUnknown) {
  records::ShardRecord r;
  r.paths = {"/a/b.mdb", "/c.mdb"};
  r.size = 7;
  auto plain = records::encode(r);
  r.cas = kCasA;
  r.set_aside = true;
  r.set_aside_at = 1754000000;
  r.set_aside_reason = "the CAS refused an upload";
  auto full = records::encode(r);
  auto back = records::decode_shard(records::val(full));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->paths, r.paths);
  EXPECT_EQ(back->cas, kCasA);
  EXPECT_TRUE(back->set_aside);
  EXPECT_EQ(back->set_aside_at, 1754000000u);
  EXPECT_EQ(back->set_aside_reason, r.set_aside_reason);
  // Without the flags (every record schema 6 wrote): unknown, not aside.
  auto old = records::decode_shard(records::val(plain));
  ASSERT_TRUE(old);
  EXPECT_EQ(old->cas, "");
  EXPECT_FALSE(old->set_aside);
  // A flag whose field is missing is a corrupt record, not a guess.
  plain[1] |= records::kShardScoped;
  EXPECT_FALSE(records::decode_shard(records::val(plain)));
}

class ShardScope : public gen::IndexFixture {};

TEST_F(ShardScope, TheIngestGivesTheCasAndEveryAnswerCarriesIt) {
  auto x1 = gen::gen_xorb(1, 20), x2 = gen::gen_xorb(2, 20);
  auto a = gen::own(gen::build_shard({.xorbs = {&x1}})), b = gen::own(gen::build_shard({.xorbs = {&x2}}));
  ASSERT_TRUE(idx->ingest(*a.view, {}, {.now = 1, .cas = kCasA}));
  ASSERT_TRUE(idx->ingest(*b.view, {}, {.now = 1}));
  auto la = idx->lookup(x1.raw[3]);
  ASSERT_TRUE(la && la->size() == 1 && (*la)[0].shards.size() == 1);
  EXPECT_EQ((*la)[0].shards[0].cas, kCasA);
  auto lb = idx->lookup(x2.raw[3]);
  ASSERT_TRUE(lb && lb->size() == 1 && (*lb)[0].shards.size() == 1);
  EXPECT_EQ((*lb)[0].shards[0].cas, "");
  // The batch answers share shard sets: the CAS is there too.
  BatchResult out;
  std::vector<Hash> q = {x1.raw[0], x2.raw[0]};
  ASSERT_TRUE(idx->lookup_batch(q, out));
  std::vector<std::string> seen;
  for (const auto& set : out.shard_sets)
    for (const auto& ref : set) seen.push_back(ref.cas);
  EXPECT_THAT(seen, ::testing::UnorderedElementsAre(kCasA, ""));
  auto info = idx->shard(la->front().shards[0].shard);
  ASSERT_TRUE(info && *info);
  EXPECT_EQ((*info)->cas, kCasA);
  EXPECT_THAT(*idx->check_invariants(), IsEmpty());
}

TEST_F(ShardScope, AShardKnownWithoutACasLearnsOneAndAnotherCasJoinsIt) {
  auto x1 = gen::gen_xorb(1, 20);
  auto a = gen::own(gen::build_shard({.xorbs = {&x1}}));
  auto first = idx->ingest(*a.view, {.path = "/drop/a.mdb"}, {.now = 1});
  ASSERT_TRUE(first);
  EXPECT_EQ((*idx->shard(first->shard))->cas, "");
  ASSERT_TRUE(idx->ingest(*a.view, {}, {.now = 2, .cas = kCasA}));
  EXPECT_EQ((*idx->shard(first->shard))->cas, kCasA);
  // Another CAS accepted the same bytes: it holds the xorbs too. Once is
  // enough.
  ASSERT_TRUE(idx->ingest(*a.view, {.path = "/drop/again.mdb"}, {.now = 3, .cas = kCasB}));
  ASSERT_TRUE(idx->ingest(*a.view, {}, {.now = 4, .cas = kCasA}));
  auto info = *idx->shard(first->shard);
  EXPECT_EQ(info->cas, std::string(kCasA) + " " + kCasB);
  auto loc = idx->lookup(x1.raw[0]);
  ASSERT_TRUE(loc && loc->size() == 1);
  EXPECT_TRUE(shard::CasScope{kCasB}.admits((*loc)[0].shards[0].cas));
  EXPECT_TRUE(shard::CasScope{kCasA}.admits((*loc)[0].shards[0].cas));
  EXPECT_FALSE(shard::CasScope{"https://cas-a.exampl"}.admits((*loc)[0].shards[0].cas));
  EXPECT_THAT(info->paths, ::testing::ElementsAre("/drop/a.mdb", "/drop/again.mdb"));
}

TEST_F(ShardScope, ASetAsideShardSaysSoInItsAnswersUntilRestored) {
  auto x1 = gen::gen_xorb(1, 20);
  auto a = gen::own(gen::build_shard({.xorbs = {&x1}}));
  auto in = idx->ingest(*a.view, {}, {.now = 1, .cas = kCasA});
  ASSERT_TRUE(in);
  auto aside = idx->set_aside(in->shard, "refused", 50);
  ASSERT_TRUE(aside && *aside);
  EXPECT_TRUE((*aside)->set_aside);
  EXPECT_EQ((*aside)->set_aside_reason, "refused");
  // The first reason stays.
  ASSERT_TRUE(idx->set_aside(in->shard, "again", 60));
  auto info = *idx->shard(in->shard);
  EXPECT_EQ(info->set_aside_reason, "refused");
  EXPECT_EQ(info->set_aside_at, 50u);
  EXPECT_EQ(info->cas, kCasA);
  auto loc = idx->lookup(x1.raw[0]);
  ASSERT_TRUE(loc && loc->size() == 1);
  EXPECT_TRUE((*loc)[0].shards[0].set_aside);
  EXPECT_EQ((*loc)[0].shards[0].cas, kCasA);
  ASSERT_TRUE(idx->restore(in->shard));
  loc = idx->lookup(x1.raw[0]);
  EXPECT_FALSE((*loc)[0].shards[0].set_aside);
  EXPECT_FALSE((*idx->shard(in->shard))->set_aside);
  // An unknown shard is nothing to set aside.
  auto none = idx->set_aside(gen::hash_of_seed(5), "x", 1);
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);
  EXPECT_THAT(*idx->check_invariants(), IsEmpty());
}

// The paths a schema-6 index may hold for its shards, written into the
// committed one with plain LMDB calls in the layout 8cf128f wrote (the paths
// after the fixed head): its generator recorded none.
void give_paths(const std::string& dir, const std::vector<std::vector<std::string>>& paths_by_order) {
  gen::RawIndex raw(dir, true);
  auto shards = raw.table("shards");
  ASSERT_TRUE(shards);
  MDB_cursor* c = nullptr;
  ASSERT_EQ(mdb_cursor_open(raw.txn(), *shards, &c), 0);
  std::vector<std::pair<std::vector<std::uint8_t>, std::vector<std::uint8_t>>> rewritten;
  MDB_val k, v;
  std::size_t i = 0;
  for (int rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0 && i < paths_by_order.size();
       rc = mdb_cursor_get(c, &k, &v, MDB_NEXT), ++i) {
    auto p = static_cast<const std::uint8_t*>(v.mv_data);
    ASSERT_EQ(v.mv_size, records::kShardRecordHead) << "the fixture's records have no paths";
    std::vector<std::uint8_t> rec(p, p + v.mv_size);
    std::uint32_t n = std::uint32_t(paths_by_order[i].size());
    std::memcpy(rec.data() + 4, &n, 4);  // little-endian on the machines we test
    for (const std::string& path : paths_by_order[i]) {
      std::uint32_t len = std::uint32_t(path.size());
      rec.insert(rec.end(), reinterpret_cast<const std::uint8_t*>(&len),
                 reinterpret_cast<const std::uint8_t*>(&len) + 4);
      rec.insert(rec.end(), path.begin(), path.end());
    }
    auto kp = static_cast<const std::uint8_t*>(k.mv_data);
    rewritten.emplace_back(std::vector<std::uint8_t>(kp, kp + k.mv_size), std::move(rec));
  }
  mdb_cursor_close(c);
  for (auto& [key, rec] : rewritten) {
    MDB_val kk{key.size(), key.data()}, vv{rec.size(), rec.data()};
    ASSERT_EQ(mdb_put(raw.txn(), *shards, &kk, &vv, 0), 0);
  }
  ASSERT_EQ(raw.commit(), 0);
}

TEST(ShardScopeUpgrade, TheIndexOfSchemaSixOpensWithItsShardsScopedFromTheirPaths) {
  gen::TempDir tmp;
  const std::string dir = copy_of_fixture_index(tmp, "index-v6");
  ASSERT_EQ(schema_version_on_disk(dir), 6u);
  // Five shards in hash order: the first two were seen in a client cache of
  // CAS A, the third in a drop directory, the others through an upload.
  give_paths(dir, {{"/home/u/.cache/huggingface/xet/cas-a/shard-cache/x.mdb"},
                   {"/srv/drop/y.mdb", "/home/v/.cache/huggingface/xet/cas-a/shard-cache/y.mdb"},
                   {"/srv/drop/z.mdb"}});
  std::vector<std::string> asked;
  Options o;
  o.dir = dir;
  o.scope_of_path = [&](const std::string& path) -> std::string {
    asked.push_back(path);
    return path.find("/xet/cas-a/") != std::string::npos ? kCasA : "";
  };
  {
    // Read-only (dedupd --check): as it is, every shard unknown.
    Options ro = o;
    ro.read_only = true;
    auto opened = Index::open(ro);
    ASSERT_TRUE(opened) << opened.error().to_string();
    EXPECT_EQ((*opened)->schema_version(), 6u);
    auto as_it_is = (*opened)->shards();
    ASSERT_TRUE(as_it_is);
    for (const auto& s : *as_it_is) EXPECT_EQ(s.cas, "");
    EXPECT_THAT(asked, IsEmpty());
  }
  EXPECT_EQ(schema_version_on_disk(dir), 6u);
  auto opened = Index::open(o);
  ASSERT_TRUE(opened) << opened.error().to_string();
  auto& idx = **opened;
  EXPECT_EQ(idx.schema_version(), schema::kVersion);
  EXPECT_EQ(schema_version_on_disk(dir), schema::kVersion);
  auto all = idx.shards();
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 5u);
  std::vector<std::string> cas;
  for (const auto& s : *all) cas.push_back(s.cas);
  EXPECT_EQ(cas, (std::vector<std::string>{kCasA, kCasA, "", "", ""}));
  // Each path asked once; a shard's later paths only when an earlier one
  // named no CAS.
  EXPECT_EQ(asked.size(), 4u);
  // Everything answers as before, the CAS with it.
  auto gpt2 = idx.lookup(*Hash::parse("9502eec19d4b0c9f7b389228fa801f68ecdf15d69ccd1da2f9ddbd0219898335"));
  ASSERT_TRUE(gpt2);
  EXPECT_EQ(gpt2->size(), 1u);
  auto x1 = gen::gen_xorb(1, 40);
  for (const Hash& h : x1.raw) EXPECT_EQ(idx.lookup(h)->size(), 1u);
  EXPECT_THAT(*idx.check_invariants(), IsEmpty());
  // Opened again: nothing left to do, nothing asked.
  asked.clear();
  opened->reset();
  auto again = Index::open(o);
  ASSERT_TRUE(again) << again.error().to_string();
  EXPECT_THAT(asked, IsEmpty());
}

}  // namespace
}  // namespace dedupd::index
