// Schema 5's upgrade of the chunk entries (index/upgrade.hpp): from the
// index the last release wrote (tests/fixtures/index-v4), read as it is,
// rewritten, and taken up again after a kill between two of its steps.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <lmdb.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <stdexcept>
#include <vector>

#include "index/observer.hpp"
#include "index/records.hpp"
#include "index/schema.hpp"
#include "index/tuning.hpp"
#include "tests/unit/index/support.hpp"

namespace dedupd::index {
namespace {

using gen::copy_of_fixture_index;
using gen::schema_version_on_disk;
using ::testing::IsEmpty;

// Duplicates per width in one chunk table, and every key's duplicates in
// order as LMDB keeps them, read with plain LMDB calls.
struct TableWidths {
  std::map<std::size_t, std::size_t> entries;  // width -> entries
  bool sorted = true;                          // every key's duplicates in memcmp order
};

TableWidths widths(const std::string& dir, const char* table) {
  TableWidths out;
  gen::RawIndex raw(dir);
  auto dbi = raw.table(table);
  EXPECT_TRUE(dbi) << table;
  if (!dbi) return out;
  MDB_cursor* c = nullptr;
  EXPECT_EQ(mdb_cursor_open(raw.txn(), *dbi, &c), 0);
  MDB_val k, v;
  std::vector<std::uint8_t> last;
  int last_key = -1;
  for (int rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
    ++out.entries[v.mv_size];
    const int key = *static_cast<const std::uint8_t*>(k.mv_data);
    std::vector<std::uint8_t> cur(static_cast<const std::uint8_t*>(v.mv_data),
                                  static_cast<const std::uint8_t*>(v.mv_data) + v.mv_size);
    if (key == last_key && !(last < cur)) out.sorted = false;
    last = std::move(cur);
    last_key = key;
  }
  mdb_cursor_close(c);
  return out;
}

// What tests/fixtures/index-v4/README.md says the index holds, asked of it.
class V4Contents {
 public:
  V4Contents() : gpt2_chunk(*Hash::parse("9502eec19d4b0c9f7b389228fa801f68ecdf15d69ccd1da2f9ddbd0219898335")) {}

  // Every raw hash of the live raw shards answers its one location, the
  // real server shard's chunk answers under its key, the expired shard's
  // forms say where it was.
  void expect_answers(const Index& idx, std::uint64_t live_shards = 4) const {
    for (const auto* x : {&x1, &x3, &x4})
      for (std::size_t i = 0; i < x->raw.size(); ++i) {
        auto loc = idx.lookup(x->raw[i]);
        ASSERT_TRUE(loc) << loc.error().to_string();
        ASSERT_EQ(loc->size(), 1u) << i;
        EXPECT_EQ((*loc)[0].chunk_index, i);
      }
    EXPECT_EQ(idx.lookup(gpt2_chunk)->size(), 1u);
    EXPECT_THAT(*idx.lookup(x2.raw[0]), IsEmpty());
    EXPECT_EQ(idx.expired_holders(x2.raw[0])->size(), 1u);
    EXPECT_THAT(*idx.check_invariants(), IsEmpty());
    auto st = idx.stats();
    ASSERT_TRUE(st);
    EXPECT_EQ(st->shards_live, live_shards);
    EXPECT_EQ(st->shards_expired, 1u);
  }

  const Hash gpt2_chunk;
  const gen::GenXorb x1 = gen::gen_xorb(1, 40), x2 = gen::gen_xorb(2, 30), x3 = gen::gen_xorb(3, 1500),
                     x4 = gen::gen_xorb(4, 600);
};

constexpr std::uint64_t kMainEntries = 3657, kRecentEntries = 600;

class ProgressObserver final : public Observer {
 public:
  void map_grown(std::uint64_t, std::uint64_t) override {}
  void stale_readers_cleared(int) override {}
  void merge_failed(const shard::Error&) override {}
  void upgrade_progress(std::uint64_t done, std::uint64_t total) override { steps.emplace_back(done, total); }
  std::vector<std::pair<std::uint64_t, std::uint64_t>> steps;
};

TEST(IndexSchemaUpgrade, Version4IndexOf076bda3IsReadAsItIsThenRewrittenToElevenByteEntries) {
  gen::TempDir tmp;
  const std::string dir = copy_of_fixture_index(tmp, "index-v4");
  ASSERT_EQ(schema_version_on_disk(dir), 4u);
  ASSERT_EQ(widths(dir, "chunks").entries, (std::map<std::size_t, std::size_t>{{12, kMainEntries}}));
  ASSERT_EQ(widths(dir, "chunks_recent").entries, (std::map<std::size_t, std::size_t>{{12, kRecentEntries}}));
  const V4Contents v4;
  Options o;
  o.dir = dir;
  {
    // Read-only (dedupd --check): the 12-byte entries are read as they are.
    Options ro = o;
    ro.read_only = true;
    auto opened = Index::open(ro);
    ASSERT_TRUE(opened) << opened.error().to_string();
    EXPECT_EQ((*opened)->schema_version(), 4u);
    v4.expect_answers(**opened);
    auto filter = (*opened)->build_chunk_filter();
    ASSERT_TRUE(filter) << filter.error().to_string();
    v4.expect_answers(**opened);  // through the filter built from 12-byte entries
  }
  EXPECT_EQ(schema_version_on_disk(dir), 4u) << "a read-only open upgraded";
  {
    // In steps, each told to the observer (the daemon logs them and keeps
    // systemd's start timeout from running out).
    ProgressObserver obs;
    Options w = o;
    w.observer = &obs;
    const auto saved = detail::g_upgrade_step_entries;
    detail::g_upgrade_step_entries = 500;
    auto opened = Index::open(w);
    detail::g_upgrade_step_entries = saved;
    ASSERT_TRUE(opened) << opened.error().to_string();
    EXPECT_EQ((*opened)->schema_version(), 5u);
    v4.expect_answers(**opened);
    ASSERT_GE(obs.steps.size(), 8u);
    EXPECT_TRUE(std::is_sorted(obs.steps.begin(), obs.steps.end()));
    EXPECT_EQ(obs.steps.back(), std::make_pair(kMainEntries + kRecentEntries, kMainEntries + kRecentEntries));
  }
  EXPECT_EQ(schema_version_on_disk(dir), 5u);
  const auto main = widths(dir, "chunks"), recent = widths(dir, "chunks_recent");
  EXPECT_EQ(main.entries, (std::map<std::size_t, std::size_t>{{11, kMainEntries}}));
  EXPECT_EQ(recent.entries, (std::map<std::size_t, std::size_t>{{11, kRecentEntries}}));
  EXPECT_TRUE(main.sorted && recent.sorted);
  // Written to as any index of schema 5: a new shard, the merge, expiry.
  auto opened = Index::open(o);
  ASSERT_TRUE(opened) << opened.error().to_string();
  auto& idx = **opened;
  auto x5 = gen::gen_xorb(5, 700);
  auto s5 = gen::own(gen::build_shard({.xorbs = {&x5}, .created = 1700000005}));
  ASSERT_TRUE(idx.ingest(*s5.view, SourceInfo{}, {.now = 1754000000}));
  ASSERT_TRUE(idx.merge_recent());
  v4.expect_answers(idx, 5);
  for (std::size_t i = 0; i < x5.raw.size(); ++i) EXPECT_EQ(idx.lookup(x5.raw[i])->size(), 1u);
  auto gone = idx.expire(1754664705);
  ASSERT_TRUE(gone) << gone.error().to_string();
  EXPECT_EQ(gone->size(), 1u);
  EXPECT_THAT(*idx.lookup(v4.gpt2_chunk), IsEmpty());
  EXPECT_EQ(idx.expired_holders(v4.gpt2_chunk)->size(), 1u);
  EXPECT_THAT(*idx.check_invariants(), IsEmpty());
}

struct Killed : std::runtime_error {
  Killed() : std::runtime_error("killed") {}
};

// dedupd killed between two steps of the upgrade: the index holds keys of
// both widths and still says version 4. It answers read-only as it is, and
// the next open takes the upgrade up where it stopped.
TEST(IndexSchemaUpgrade, AnUpgradeKilledBetweenStepsGoesOnAtTheNextOpen) {
  gen::TempDir tmp;
  const std::string dir = copy_of_fixture_index(tmp, "index-v4");
  const V4Contents v4;
  Options o;
  o.dir = dir;
  const auto saved = detail::g_upgrade_step_entries;
  detail::g_upgrade_step_entries = 100;  // a few keys a step: dozens of steps
  int steps = 0;
  detail::g_after_upgrade_step = [&] {
    if (++steps == 5) throw Killed();
  };
  EXPECT_THROW((void)Index::open(o), Killed);
  detail::g_after_upgrade_step = nullptr;
  EXPECT_EQ(schema_version_on_disk(dir), 4u);
  const auto half = widths(dir, "chunks");
  EXPECT_EQ(half.entries.size(), 2u) << "both widths after the kill";
  EXPECT_EQ(half.entries.at(11) + half.entries.at(12), kMainEntries);
  EXPECT_EQ(widths(dir, "chunks_recent").entries, (std::map<std::size_t, std::size_t>{{12, kRecentEntries}}));
  {
    Options ro = o;
    ro.read_only = true;
    auto opened = Index::open(ro);
    ASSERT_TRUE(opened) << opened.error().to_string();
    v4.expect_answers(**opened);
  }
  {
    auto opened = Index::open(o);
    ASSERT_TRUE(opened) << opened.error().to_string();
    EXPECT_EQ((*opened)->schema_version(), 5u);
    v4.expect_answers(**opened);
  }
  detail::g_upgrade_step_entries = saved;
  EXPECT_EQ(widths(dir, "chunks").entries, (std::map<std::size_t, std::size_t>{{11, kMainEntries}}));
  EXPECT_EQ(widths(dir, "chunks_recent").entries, (std::map<std::size_t, std::size_t>{{11, kRecentEntries}}));
}

// Dropping the fifth hash byte can reorder a key's entries: two that share
// the first four bytes sorted on the fifth, and now sort on the xorb id.
// Written back unsorted, LMDB's append would refuse them (or a search would
// miss one). Made with plain LMDB calls: no release wrote these two.
TEST(IndexSchemaUpgrade, EntriesThatShareFourHashBytesAreSortedAgain) {
  gen::TempDir tmp;
  Options o;
  o.dir = tmp / "idx";
  ASSERT_TRUE(Index::open(o));
  {
    gen::RawIndex raw(o.dir, true);
    auto chunks = raw.table("chunks", MDB_DUPSORT | MDB_DUPFIXED), meta = raw.table("meta");
    ASSERT_TRUE(chunks && meta);
    std::uint8_t key = 0x42;
    // (hash bytes 1..5, xorb id, index): the fifth byte orders them, 1 < 2,
    // while their xorb ids go 9 then 3.
    std::uint8_t a[12] = {0xaa, 0xbb, 0xcc, 0xdd, 0x01, 0, 0, 0, 9, 0, 0, 7};
    std::uint8_t b[12] = {0xaa, 0xbb, 0xcc, 0xdd, 0x02, 0, 0, 0, 3, 0, 0, 5};
    for (auto* v : {a, b}) {
      MDB_val k{1, &key}, d{12, v};
      ASSERT_EQ(mdb_put(raw.txn(), *chunks, &k, &d, 0), 0);
    }
    std::uint32_t four = 4;
    MDB_val vk{14, const_cast<char*>("schema_version")}, vv{4, &four};
    ASSERT_EQ(mdb_put(raw.txn(), *meta, &vk, &vv, 0), 0);
    ASSERT_EQ(raw.commit(), 0);
  }
  {
    auto opened = Index::open(o);
    ASSERT_TRUE(opened) << opened.error().to_string();
  }
  const auto w = widths(o.dir, "chunks");
  EXPECT_EQ(w.entries, (std::map<std::size_t, std::size_t>{{11, 2}}));
  EXPECT_TRUE(w.sorted);
  // In order: xorb 3 (index 5), then xorb 9 (index 7).
  gen::RawIndex raw(o.dir);
  auto chunks = raw.table("chunks");
  ASSERT_TRUE(chunks);
  MDB_cursor* c = nullptr;
  ASSERT_EQ(mdb_cursor_open(raw.txn(), *chunks, &c), 0);
  MDB_val k, v;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> got;
  for (int rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
    auto p = static_cast<const std::uint8_t*>(v.mv_data);
    got.emplace_back(records::chunk_value_xorb(p, v.mv_size), records::chunk_value_index(p, v.mv_size));
  }
  mdb_cursor_close(c);
  EXPECT_EQ(got, (std::vector<std::pair<std::uint32_t, std::uint32_t>>{{3, 5}, {9, 7}}));
}

}  // namespace
}  // namespace dedupd::index
