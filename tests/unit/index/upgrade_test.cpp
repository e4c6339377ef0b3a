// The upgrade of the chunk entries to the current 10 bytes (index/upgrade.hpp):
// from the indexes the last releases wrote (tests/fixtures/index-v5, 11-byte
// entries, and index-v4, 12-byte), read as they are, rewritten, and taken up
// again after a kill between two of the steps.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <lmdb.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <ostream>
#include <stdexcept>
#include <vector>

#include "index/observer.hpp"
#include "index/records.hpp"
#include "index/tables.hpp"
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

// What tests/fixtures/index-v4/README.md (and index-v5's) say the index
// holds, asked of it.
class FixtureContents {
 public:
  FixtureContents() : gpt2_chunk(*Hash::parse("9502eec19d4b0c9f7b389228fa801f68ecdf15d69ccd1da2f9ddbd0219898335")) {}

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
  void merge_failed(const base::Error&) override {}
  void upgrade_progress(std::uint64_t done, std::uint64_t total) override { steps.emplace_back(done, total); }
  std::vector<std::pair<std::uint64_t, std::uint64_t>> steps;
};

// An index a release wrote: its directory under tests/fixtures, the schema
// version and chunk entry width it has on disk.
struct Written {
  const char* fixture;
  std::uint32_t version;
  std::size_t width;
};
std::ostream& operator<<(std::ostream& os, const Written& w) { return os << w.fixture; }

class IndexSchemaUpgrade : public ::testing::TestWithParam<Written> {};

INSTANTIATE_TEST_SUITE_P(Releases, IndexSchemaUpgrade,
                         ::testing::Values(Written{"index-v5", 5, records::kChunkValueBytesV5},
                                           Written{"index-v4", 4, records::kChunkValueBytesV4}),
                         [](const auto& p) { return "V" + std::to_string(p.param.version); });

constexpr std::size_t kCurrent = records::kChunkValueBytes;

TEST_P(IndexSchemaUpgrade, AnIndexIsReadAsItIsThenRewrittenToTenByteEntries) {
  const Written& written = GetParam();
  gen::TempDir tmp;
  const std::string dir = copy_of_fixture_index(tmp, written.fixture);
  ASSERT_EQ(schema_version_on_disk(dir), written.version);
  ASSERT_EQ(widths(dir, "chunks").entries, (std::map<std::size_t, std::size_t>{{written.width, kMainEntries}}));
  ASSERT_EQ(widths(dir, "chunks_recent").entries,
            (std::map<std::size_t, std::size_t>{{written.width, kRecentEntries}}));
  const FixtureContents contents;
  Options o;
  o.dir = dir;
  {
    // Read-only (dedupd --check): the older entries are read as they are.
    Options ro = o;
    ro.read_only = true;
    auto opened = Index::open(ro);
    ASSERT_TRUE(opened) << opened.error().to_string();
    EXPECT_EQ((*opened)->schema_version(), written.version);
    contents.expect_answers(**opened);
    auto filter = (*opened)->build_chunk_filter();
    ASSERT_TRUE(filter) << filter.error().to_string();
    contents.expect_answers(**opened);  // through the filter built from the older entries
  }
  EXPECT_EQ(schema_version_on_disk(dir), written.version) << "a read-only open upgraded";
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
    EXPECT_EQ((*opened)->schema_version(), schema::kVersion);
    contents.expect_answers(**opened);
    ASSERT_GE(obs.steps.size(), 8u);
    EXPECT_TRUE(std::is_sorted(obs.steps.begin(), obs.steps.end()));
    EXPECT_EQ(obs.steps.back(), std::make_pair(kMainEntries + kRecentEntries, kMainEntries + kRecentEntries));
  }
  EXPECT_EQ(schema_version_on_disk(dir), schema::kVersion);
  const auto main = widths(dir, "chunks"), recent = widths(dir, "chunks_recent");
  EXPECT_EQ(main.entries, (std::map<std::size_t, std::size_t>{{kCurrent, kMainEntries}}));
  EXPECT_EQ(recent.entries, (std::map<std::size_t, std::size_t>{{kCurrent, kRecentEntries}}));
  EXPECT_TRUE(main.sorted && recent.sorted);
  // Written to as any current index: a new shard, the merge, expiry.
  auto opened = Index::open(o);
  ASSERT_TRUE(opened) << opened.error().to_string();
  auto& idx = **opened;
  auto x5 = gen::gen_xorb(5, 700);
  auto s5 = gen::own(gen::build_shard({.xorbs = {&x5}, .created = 1700000005}));
  ASSERT_TRUE(idx.ingest(*s5.view, SourceInfo{}, {.now = 1754000000}));
  ASSERT_TRUE(idx.merge_recent());
  contents.expect_answers(idx, 5);
  for (std::size_t i = 0; i < x5.raw.size(); ++i) EXPECT_EQ(idx.lookup(x5.raw[i])->size(), 1u);
  auto gone = idx.expire(1754664705);
  ASSERT_TRUE(gone) << gone.error().to_string();
  EXPECT_EQ(gone->size(), 1u);
  EXPECT_THAT(*idx.lookup(contents.gpt2_chunk), IsEmpty());
  EXPECT_EQ(idx.expired_holders(contents.gpt2_chunk)->size(), 1u);
  EXPECT_THAT(*idx.check_invariants(), IsEmpty());
}

struct Killed : std::runtime_error {
  Killed() : std::runtime_error("killed") {}
};

// dedupd killed between two steps of the upgrade: the index holds keys of
// both widths and still says its old version. It answers read-only as it is,
// and the next open takes the upgrade up where it stopped.
TEST_P(IndexSchemaUpgrade, AnUpgradeKilledBetweenStepsGoesOnAtTheNextOpen) {
  const Written& written = GetParam();
  gen::TempDir tmp;
  const std::string dir = copy_of_fixture_index(tmp, written.fixture);
  const FixtureContents contents;
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
  EXPECT_EQ(schema_version_on_disk(dir), written.version);
  const auto half = widths(dir, "chunks");
  EXPECT_EQ(half.entries.size(), 2u) << "both widths after the kill";
  EXPECT_EQ(half.entries.at(kCurrent) + half.entries.at(written.width), kMainEntries);
  EXPECT_EQ(widths(dir, "chunks_recent").entries,
            (std::map<std::size_t, std::size_t>{{written.width, kRecentEntries}}));
  {
    Options ro = o;
    ro.read_only = true;
    auto opened = Index::open(ro);
    ASSERT_TRUE(opened) << opened.error().to_string();
    contents.expect_answers(**opened);
  }
  {
    auto opened = Index::open(o);
    ASSERT_TRUE(opened) << opened.error().to_string();
    EXPECT_EQ((*opened)->schema_version(), schema::kVersion);
    contents.expect_answers(**opened);
  }
  detail::g_upgrade_step_entries = saved;
  EXPECT_EQ(widths(dir, "chunks").entries, (std::map<std::size_t, std::size_t>{{kCurrent, kMainEntries}}));
  EXPECT_EQ(widths(dir, "chunks_recent").entries, (std::map<std::size_t, std::size_t>{{kCurrent, kRecentEntries}}));
}

// Dropping hash bytes can reorder a key's entries: two that share the first
// three bytes sorted on a later one, and now sort on the xorb id. Written
// back unsorted, LMDB's append would refuse them (or a search would miss
// one). Made with plain LMDB calls: no release wrote these two.
void expect_resorted(const Written& written) {
  gen::TempDir tmp;
  Options o;
  o.dir = tmp / "idx";
  ASSERT_TRUE(Index::open(o));
  {
    gen::RawIndex raw(o.dir, true);
    auto chunks = raw.table("chunks", MDB_DUPSORT | MDB_DUPFIXED), meta = raw.table("meta");
    ASSERT_TRUE(chunks && meta);
    std::uint8_t key = 0x42;
    // (hash bytes 1.., xorb id, index): the first hash byte past the three
    // kept orders them, 1 < 2, while their xorb ids go 9 then 3.
    std::vector<std::uint8_t> a = {0xaa, 0xbb, 0xcc, 0x01}, b = {0xaa, 0xbb, 0xcc, 0x02};
    a.resize(written.width - 7), b.resize(written.width - 7);
    for (std::uint8_t x : {0, 0, 0, 9, 0, 0, 7}) a.push_back(x);
    for (std::uint8_t x : {0, 0, 0, 3, 0, 0, 5}) b.push_back(x);
    for (auto* v : {&a, &b}) {
      MDB_val k{1, &key}, d{v->size(), v->data()};
      ASSERT_EQ(mdb_put(raw.txn(), *chunks, &k, &d, 0), 0);
    }
    std::uint32_t version = written.version;
    MDB_val vk{14, const_cast<char*>("schema_version")}, vv{4, &version};
    ASSERT_EQ(mdb_put(raw.txn(), *meta, &vk, &vv, 0), 0);
    ASSERT_EQ(raw.commit(), 0);
  }
  {
    auto opened = Index::open(o);
    ASSERT_TRUE(opened) << opened.error().to_string();
  }
  const auto w = widths(o.dir, "chunks");
  EXPECT_EQ(w.entries, (std::map<std::size_t, std::size_t>{{kCurrent, 2}}));
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

TEST_P(IndexSchemaUpgrade, EntriesThatShareThreeHashBytesAreSortedAgain) { expect_resorted(GetParam()); }

}  // namespace
}  // namespace dedupd::index
