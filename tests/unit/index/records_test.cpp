// Xorb records: dense or compact, each rebuilding the CAS block exactly,
// and the checker finding a damaged one.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "index/index.hpp"
#include "index/records.hpp"
#include "index/tables.hpp"
#include "shard/mapped_file.hpp"
#include "tests/unit/index/layouts.hpp"
#include "tests/unit/index/support.hpp"

namespace dedupd::index::gen {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;

// A raw shard of one xorb whose chunks have these sizes, laid out as every
// writer does (byte_start the running sum), every third chunk eligible for
// global dedup.
OwnedShard shard_of_sizes(const GenXorb& g, const std::vector<std::uint32_t>& sizes) {
  shard::XorbRecord r;
  r.header.xorb_hash = g.hash;
  std::uint32_t at = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    shard::ChunkEntry c;
    c.chunk_hash = g.raw[i];
    c.byte_start = at;
    c.unpacked_bytes = sizes[i];
    c.flags = i % 3 == 0 ? shard::kChunkFlagGlobalDedupEligible : 0;
    at += sizes[i];
    r.chunks.push_back(c);
  }
  r.header.bytes_in_xorb = at;
  r.header.bytes_on_disk = at / 2;
  shard::ShardWriter w;
  w.add_xorb(std::move(r));
  return own(w.write(shard::WriteOptions{}));
}

// Xorb records are stored dense when that rebuilds the exact bytes; a xorb
// with unusual fields is kept verbatim. Both give back the CAS block byte
// for byte and the right ranges.
TEST_P(IndexTest, XorbRecordsRebuildTheCasBlockExactly) {
  auto canon = gen_xorb(34, 9);
  auto odd = gen_xorb(35, 9);
  shard::ShardWriter w;
  for (const GenXorb* g : {&canon, &odd}) {
    shard::XorbRecord r;
    r.header.xorb_hash = g->hash;
    r.header.bytes_on_disk = 777;
    std::uint32_t at = 0;
    for (std::size_t i = 0; i < g->raw.size(); ++i) {
      shard::ChunkEntry c;
      c.chunk_hash = g->raw[i];
      c.unpacked_bytes = g->sizes[i];
      c.byte_start = at;
      c.flags = i % 3 == 0 ? shard::kChunkFlagGlobalDedupEligible : 0;
      if (g == &odd) {
        c.byte_start = at + 5 * std::uint32_t(i);  // gaps
        c.flags |= 0x10;
        c.unused = std::uint32_t(i);
      }
      at += g->sizes[i];
      r.chunks.push_back(c);
    }
    r.header.bytes_in_xorb = at + (g == &odd ? 5 * std::uint32_t(g->raw.size()) : 0);
    w.add_xorb(std::move(r));
  }
  auto s = own(w.write(shard::WriteOptions{}));
  ingest(s);
  using records::XorbLayout;
  EXPECT_THAT(stored_forms(canon.hash), ElementsAre(Pair(XorbLayout::dense, 96u + 35 * 9 + 4)));
  EXPECT_THAT(stored_forms(odd.hash), ElementsAre(Pair(XorbLayout::verbatim, 96u + 48 * 9)));
  for (const shard::XorbBlock& b : s.view->xorbs()) {
    auto forms = idx->xorb(b.hash());
    ASSERT_TRUE(forms);
    ASSERT_EQ(forms->size(), 1u);
    auto raw = b.raw();
    EXPECT_EQ(forms->front().cas_block, std::vector<std::uint8_t>(raw.begin(), raw.end()));
    for (std::uint32_t i = 0; i < b.num_chunks(); ++i) {
      shard::ChunkEntry c = b.chunk(i);
      auto locs = find(c.chunk_hash);
      ASSERT_EQ(locs.size(), 1u);
      EXPECT_EQ(locs[0].byte_start, c.byte_start);
      EXPECT_EQ(locs[0].unpacked_bytes, c.unpacked_bytes);
      EXPECT_EQ(locs[0].flags, c.flags);
      EXPECT_EQ(forms->front().chunks[i].unused, c.unused);
    }
  }
  // Ingesting the same content again shares the stored forms.
  shard::WriteOptions upload;
  upload.with_footer = false;
  auto again = own(w.write(upload));
  EXPECT_EQ(ingest(again).new_xorbs, 0u);
  EXPECT_THAT(problems(), IsEmpty());
}

// A xorb whose every chunk starts less than 2^23 bytes after the first of
// its group of 64 (every real one) is stored dense: 35 bytes a chunk and a
// checkpoint a group, here over three full groups and a partial one.
TEST_P(IndexTest, XorbRecordsAreDenseWhenEveryGroupOf64Fits) {
  auto g = gen_xorb(41, 200);
  auto s = shard_of_sizes(g, g.sizes);
  ingest(s);
  const shard::XorbBlock b = *s.view->xorbs().begin();
  expect_rebuilt(b);
  using records::XorbLayout;
  EXPECT_THAT(stored_forms(g.hash), ElementsAre(Pair(XorbLayout::dense, 96u + 35 * 200 + 4 * 4)));
  expect_rebuilt(b);
  EXPECT_THAT(problems(), IsEmpty());
}

// The offsets count from each group's first chunk, not from the xorb's: a
// group may start anywhere. A chunk 2^23 bytes or more after its group's
// first does not fit, and the xorb is stored compact, exact all the same.
TEST_P(IndexTest, XorbRecordsAreCompactWhenAGroupSpans8MiB) {
  using records::XorbLayout;
  for (std::uint32_t over : {0u, 1u}) {
    SCOPED_TRACE(over);
    auto g = gen_xorb(42 + over, 140);
    // Group 1 (chunks 64..127, from 6.4 MB on): chunk 127 starts
    // 2^23 - 1 + over bytes after chunk 64.
    std::vector<std::uint32_t> sizes(140, 100000);
    sizes[64] = (1u << 23) - 63 + over;
    for (std::size_t i = 65; i < 128; ++i) sizes[i] = 1;
    auto s = shard_of_sizes(g, sizes);
    ingest(s);
    const shard::XorbBlock b = *s.view->xorbs().begin();
    ASSERT_EQ(b.chunk(127).byte_start - b.chunk(64).byte_start, (1u << 23) - 1 + over);
    expect_rebuilt(b);
    EXPECT_THAT(stored_forms(g.hash), ElementsAre(over ? Pair(XorbLayout::compact, 96u + 36 * 140)
                                                       : Pair(XorbLayout::dense, 96u + 35 * 140 + 4 * 3)));
    expect_rebuilt(b);
  }
  EXPECT_THAT(problems(), IsEmpty());
}

// Compact and dense records keep only where chunks start: the checker
// finds starts that do not run up from 0 to bytes_in_xorb (here a damaged
// checkpoint, below the chunk before it), which would answer absurd sizes.
TEST_P(IndexTest, TheCheckerFindsADamagedDenseRecord) {
  auto g = gen_xorb(45, 130);
  ingest(own(build_shard({.xorbs = {&g}})));
  EXPECT_THAT(problems(), IsEmpty());
  idx.reset();
  {
    auto recs = stored_xorb_records(tmp / "idx");
    ASSERT_EQ(recs.size(), 1u);
    auto [id, rec] = *recs.begin();
    ASSERT_EQ(rec.size(), 96u + 35 * 130 + 4 * 3);
    shard::store_u32(rec.data() + 96 + 35 * 130 + 4, 0);  // group 1's checkpoint
    RawIndex raw(tmp / "idx", true);
    auto xorbs = raw.table("xorbs");
    ASSERT_TRUE(xorbs);
    records::IdKey k(id);
    MDB_val kv = k.mdb(), v = records::val(rec);
    ASSERT_EQ(mdb_put(raw.txn(), *xorbs, &kv, &v, 0), 0);
    ASSERT_EQ(raw.commit(), 0);
  }
  reopen();
  EXPECT_THAT(problems(), ElementsAre(HasSubstr("chunk ranges do not run up from 0 to bytes_in_xorb")));
}

// An index written before the dense layout (tests/fixtures/index-v5) holds
// compact records of xorbs the writer now lays out dense. They keep
// answering, and a new shard with one of those xorbs shares its stored form
// instead of adding a second one, though the bytes it would write differ.
TEST(IndexXorbRecords, CompactRecordsOfAnOlderIndexAnswerAndAreShared) {
  TempDir tmp;
  const std::string dir = copy_of_fixture_index(tmp, "index-v5");
  auto layouts = [&] {
    std::map<records::XorbLayout, std::size_t> n;
    for (const auto& [id, rec] : stored_xorb_records(dir)) {
      auto view = records::XorbRecordView::decode(records::val(rec));
      EXPECT_TRUE(view) << "xorb id " << id;
      if (view) ++n[view->layout()];
    }
    return n;
  };
  using records::XorbLayout;
  const auto before = layouts();
  ASSERT_EQ(before.size(), 1u);
  ASSERT_EQ(before.begin()->first, XorbLayout::compact);
  {
    Options o;
    o.dir = dir;
    auto opened = Index::open(o);
    ASSERT_TRUE(opened) << opened.error().to_string();
    auto& idx = **opened;
    // The fixture's "big" shard holds x3; this one is another shard with it.
    auto x3 = gen_xorb(3, 1500), x6 = gen_xorb(6, 300);
    auto again = own(build_shard({.xorbs = {&x3}, .created = 1700000009}));
    auto fresh = own(build_shard({.xorbs = {&x6}, .created = 1700000010}));
    auto r = idx.ingest(*again.view, SourceInfo{}, {.now = 1754000000});
    ASSERT_TRUE(r) << r.error().to_string();
    EXPECT_EQ(r->new_xorbs, 0u);
    r = idx.ingest(*fresh.view, SourceInfo{}, {.now = 1754000000});
    ASSERT_TRUE(r) << r.error().to_string();
    EXPECT_EQ(r->new_xorbs, 1u);
    for (const GenXorb* x : {&x3, &x6})
      for (std::uint32_t i = 0; i < x->raw.size(); ++i) {
        auto locs = idx.lookup(x->raw[i]);
        ASSERT_TRUE(locs) << locs.error().to_string();
        ASSERT_EQ(locs->size(), 1u) << i;
        const Location& l = locs->front();
        EXPECT_EQ(l.chunk_index, i);
        EXPECT_EQ(l.byte_start, x->byte_start(i)) << i;
        EXPECT_EQ(l.unpacked_bytes, x->sizes[i]) << i;
        EXPECT_EQ(l.flags, i == 0 ? shard::kChunkFlagGlobalDedupEligible : 0u) << i;
        EXPECT_EQ(l.shards.size(), x == &x3 ? 2u : 1u) << i;
      }
    EXPECT_THAT(*idx.check_invariants(), IsEmpty());
  }
  auto after = layouts();
  EXPECT_EQ(after[XorbLayout::compact], before.at(XorbLayout::compact));
  EXPECT_EQ(after[XorbLayout::dense], 1u);
}

}  // namespace
}  // namespace dedupd::index::gen
