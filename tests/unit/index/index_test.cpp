// Behaviour of every index operation, on generated shards and the real
// fixture.
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
#include "tests/unit/index/support.hpp"

namespace dedupd::index::gen {
namespace {

using ::testing::_;
using ::testing::AtLeast;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

std::vector<Hash> shard_hashes(const std::vector<ShardRef>& refs) {
  std::vector<Hash> out;
  for (const auto& r : refs) out.push_back(r.shard);
  return out;
}

// Every IndexTest runs four times: with new chunk entries left in the recent
// table or with every ingest merging them into the main table, each without
// and with the in-memory chunk filter (which must never change an answer).
struct Layout {
  bool merged;
  bool filtered;
};
class IndexTest : public IndexFixture, public ::testing::WithParamInterface<Layout> {
 protected:
  void SetUp() override {
    merge_threshold = GetParam().merged ? 0 : 1u << 30;
    chunk_filter = GetParam().filtered;
    reopen();
  }

  // The layout and size of each stored form of a xorb, read raw (the index
  // is closed for it and opened again).
  std::vector<std::pair<records::XorbLayout, std::size_t>> stored_forms(const Hash& xorb) {
    idx.reset();
    std::vector<std::pair<records::XorbLayout, std::size_t>> out;
    for (const auto& [id, rec] : stored_xorb_records(tmp / "idx")) {
      auto view = records::XorbRecordView::decode(records::val(rec));
      EXPECT_TRUE(view) << "xorb id " << id;
      if (view && view->xorb_hash() == xorb) out.emplace_back(view->layout(), rec.size());
    }
    reopen();
    return out;
  }

  // The index gives back the CAS block byte for byte, and every chunk's
  // range and flags.
  void expect_rebuilt(const shard::XorbBlock& b) {
    auto forms = idx->xorb(b.hash());
    ASSERT_TRUE(forms);
    ASSERT_EQ(forms->size(), 1u);
    auto raw = b.raw();
    EXPECT_EQ(forms->front().cas_block, std::vector<std::uint8_t>(raw.begin(), raw.end()));
    ASSERT_EQ(forms->front().chunks.size(), b.num_chunks());
    for (std::uint32_t i = 0; i < b.num_chunks(); ++i) {
      shard::ChunkEntry c = b.chunk(i);
      auto locs = find(c.chunk_hash);
      ASSERT_EQ(locs.size(), 1u) << i;
      EXPECT_EQ(locs[0].chunk_index, i);
      EXPECT_EQ(locs[0].byte_start, c.byte_start) << i;
      EXPECT_EQ(locs[0].unpacked_bytes, c.unpacked_bytes) << i;
      EXPECT_EQ(locs[0].flags, c.flags) << i;
      EXPECT_EQ(forms->front().chunks[i].byte_start, c.byte_start) << i;
      EXPECT_EQ(forms->front().chunks[i].unpacked_bytes, c.unpacked_bytes) << i;
    }
  }
};

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
INSTANTIATE_TEST_SUITE_P(Tables, IndexTest,
                         ::testing::Values(Layout{false, false}, Layout{true, false}, Layout{false, true},
                                           Layout{true, true}),
                         [](const auto& test) {
                           return std::string(test.param.merged ? "merged" : "recent") +
                                  (test.param.filtered ? "_filtered" : "");
                         });

TEST_P(IndexTest, NewIndexIsEmptyAndConsistent) {
  Stats s = stats();
  EXPECT_EQ(s.shards_live, 0u);
  EXPECT_EQ(s.chunk_entries, 0u);
  EXPECT_EQ(s.xorbs, 0u);
  EXPECT_GT(s.map_size, 0u);
  EXPECT_GT(s.db_bytes, 0u);
  EXPECT_FALSE(s.next_expiry);
  EXPECT_THAT(problems(), IsEmpty());
  EXPECT_THAT(find(hash_of_seed(1)), IsEmpty());
}

TEST_P(IndexTest, IngestThenEveryChunkAnswersWithItsRange) {
  auto a = gen_xorb(1, 50), b = gen_xorb(2, 7);
  auto s = own(build_shard({.xorbs = {&a, &b}}));
  IngestResult r = ingest(s, "/cache/a.mdb");
  EXPECT_EQ(r.outcome, IngestOutcome::added);
  EXPECT_EQ(r.shard, s.hash);
  EXPECT_EQ(r.xorbs, 2u);
  EXPECT_EQ(r.chunks, 57u);
  EXPECT_EQ(r.new_chunk_entries, 57u);
  for (const GenXorb* x : {&a, &b}) {
    for (std::size_t i = 0; i < x->raw.size(); ++i) {
      auto locs = find(x->raw[i]);
      ASSERT_EQ(locs.size(), 1u);
      EXPECT_EQ(locs[0].xorb, x->hash);
      EXPECT_EQ(locs[0].chunk_index, i);
      EXPECT_EQ(locs[0].byte_start, x->byte_start(i));
      EXPECT_EQ(locs[0].unpacked_bytes, x->sizes[i]);
      EXPECT_EQ(locs[0].byte_end, x->byte_start(i) + x->sizes[i]);
      EXPECT_EQ(locs[0].flags, i == 0 ? shard::kChunkFlagGlobalDedupEligible : 0u);
      ASSERT_EQ(locs[0].shards.size(), 1u);
      EXPECT_EQ(locs[0].shards[0].shard, s.hash);
      EXPECT_FALSE(locs[0].shards[0].keyed);
      EXPECT_FALSE(locs[0].shards[0].expiry);
    }
  }
  Stats st = stats();
  EXPECT_EQ(st.shards_live, 1u);
  EXPECT_EQ(st.xorbs, 2u);
  EXPECT_EQ(st.chunk_entries, 57u);
  EXPECT_THAT(problems(), IsEmpty());
}

TEST_P(IndexTest, AHashSharingTheFirst48BitsIsNotAMatch) {
  auto a = gen_xorb(3, 4);
  auto s = own(build_shard({.xorbs = {&a}}));
  ingest(s);
  Hash near = a.raw[2];
  near.bytes[31] ^= 1;  // same candidate prefix, different hash
  EXPECT_THAT(find(near), IsEmpty());
  near = a.raw[2];
  near.bytes[5] ^= 1;  // last byte of the candidate prefix
  EXPECT_THAT(find(near), IsEmpty());
  EXPECT_EQ(find(a.raw[2]).size(), 1u);
}

TEST_P(IndexTest, SameBytesTwiceIsOneShardWithBothPaths) {
  auto a = gen_xorb(4, 10);
  auto s = own(build_shard({.xorbs = {&a}}));
  ingest(s, "/one/x.mdb");
  Stats before = stats();
  IngestResult r = ingest(s, "/two/x.mdb");
  EXPECT_EQ(r.outcome, IngestOutcome::already_present);
  EXPECT_EQ(r.new_chunk_entries, 0u);
  Stats after = stats();
  EXPECT_EQ(after.shards_live, 1u);
  EXPECT_EQ(after.chunk_entries, before.chunk_entries);
  auto info = idx->shard(s.hash);
  ASSERT_TRUE(info && info->has_value());
  EXPECT_THAT((*info)->paths, ElementsAre("/one/x.mdb", "/two/x.mdb"));
  auto src = idx->source("/two/x.mdb");
  ASSERT_TRUE(src && src->has_value());
  EXPECT_FALSE((*src)->rejected);
  EXPECT_EQ((*src)->shard, s.hash);
  EXPECT_EQ(find(a.raw[0])[0].shards.size(), 1u);
  EXPECT_THAT(problems(), IsEmpty());
}

TEST_P(IndexTest, GivenShardHashIsUsedAsIdentity) {
  auto a = gen_xorb(5, 3);
  auto s = own(build_shard({.xorbs = {&a}}));
  Hash named = hash_of_seed(777);
  IngestResult r = ingest(s, "", IngestOptions{.shard_hash = named});
  EXPECT_EQ(r.shard, named);
  EXPECT_TRUE(idx->shard(named)->has_value());
  EXPECT_FALSE(idx->shard(s.hash)->has_value());
}

TEST_P(IndexTest, ShardInfoDescribesTheShard) {
  auto a = gen_xorb(6, 5);
  Key key = hash_of_seed(66);
  auto s = own(build_shard({.xorbs = {&a}, .key = key, .expiry = 2000000000, .created = 1900000000}));
  ingest(s, "/p.mdb", IngestOptions{.now = 1950000000});
  auto info = idx->shard(s.hash);
  ASSERT_TRUE(info && info->has_value());
  const ShardInfo& i = **info;
  EXPECT_EQ(i.state, ShardState::live);
  EXPECT_EQ(i.size, s.bytes.size());
  EXPECT_TRUE(i.has_footer);
  EXPECT_EQ(i.created, 1900000000u);
  EXPECT_EQ(i.expiry, 2000000000u);
  EXPECT_TRUE(i.keyed);
  EXPECT_EQ(i.key, key);
  EXPECT_EQ(i.xorbs, 1u);
  EXPECT_EQ(i.chunks, 5u);
  EXPECT_EQ(i.ingested_at, 1950000000u);
  EXPECT_THAT(i.paths, ElementsAre("/p.mdb"));
  EXPECT_FALSE(idx->shard(hash_of_seed(1))->has_value());
}

TEST_P(IndexTest, UploadShardWithoutFooterNeverExpires) {
  auto a = gen_xorb(7, 3);
  auto s = own(build_shard({.xorbs = {&a}, .footer = false}));
  ingest(s);
  auto r = idx->shard(s.hash);
  ASSERT_TRUE(r && r->has_value());
  const ShardInfo& info = **r;
  EXPECT_FALSE(info.has_footer);
  EXPECT_FALSE(info.created);
  EXPECT_FALSE(info.expiry);
  EXPECT_FALSE(*idx->next_expiry());
}

TEST_P(IndexTest, KeyedShardAnswersRawQueries) {
  auto a = gen_xorb(8, 20);
  Key key = hash_of_seed(88);
  auto s = own(build_shard({.xorbs = {&a}, .key = key, .expiry = 3000000000}));
  ingest(s);
  auto locs = find(a.raw[13]);
  ASSERT_EQ(locs.size(), 1u);
  EXPECT_EQ(locs[0].chunk_index, 13u);
  ASSERT_EQ(locs[0].shards.size(), 1u);
  EXPECT_TRUE(locs[0].shards[0].keyed);
  EXPECT_EQ(locs[0].shards[0].key, key);
  EXPECT_EQ(locs[0].shards[0].expiry, 3000000000u);
  // The stored (keyed) hash is not a raw hash of anything indexed.
  EXPECT_THAT(find(shard::keyed_chunk_hash(key, a.raw[13])), IsEmpty());
  EXPECT_THAT(*idx->live_keys(), ElementsAre(key));
  EXPECT_EQ(stats().keys, 1u);
}

TEST_P(IndexTest, RealFixtureKeyedServerShard) {
  auto file = shard::MappedFile::open(std::string(DEDUPD_FIXTURE_DIR) + "/gpt2-64-8bits.tflite.shard");
  ASSERT_TRUE(file) << file.error().to_string();
  auto view = shard::ShardView::parse(file->bytes());
  ASSERT_TRUE(view) << view.error().to_string();
  auto r = idx->ingest(*view, SourceInfo{"/fixture.shard", file->size(), 0});
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(r->outcome, IngestOutcome::added);
  EXPECT_EQ(r->chunks, 2117u);
  EXPECT_EQ(r->xorbs, 3u);

  auto raw = *Hash::parse("9502eec19d4b0c9f7b389228fa801f68ecdf15d69ccd1da2f9ddbd0219898335");
  auto locs = find(raw);
  ASSERT_EQ(locs.size(), 1u);
  EXPECT_EQ(locs[0].xorb.to_string(), "213031765f0b4d7bc826ccd5bdda3261f624187e2997a2de61111652d31b081c");
  EXPECT_EQ(locs[0].chunk_index, 0u);
  EXPECT_EQ(locs[0].byte_start, 0u);
  ASSERT_EQ(locs[0].shards.size(), 1u);
  EXPECT_TRUE(locs[0].shards[0].keyed);
  EXPECT_EQ(locs[0].shards[0].key.to_string(), "d6834b04843aaf16f29903e2428a99be635099f9ea5056cc4e95e7ec8a41509f");
  EXPECT_EQ(locs[0].shards[0].expiry, 1754664705u);
  EXPECT_EQ(*idx->next_expiry(), 1754664705u);

  // The xorb record rebuilds the CAS block byte for byte.
  auto xorbs = idx->xorb(locs[0].xorb);
  ASSERT_TRUE(xorbs);
  ASSERT_EQ(xorbs->size(), 1u);
  const XorbInfo& x = xorbs->front();
  EXPECT_TRUE(x.keyed);
  bool found_block = false;
  for (const shard::XorbBlock& b : view->xorbs())
    if (b.hash() == x.hash) {
      auto raw_block = b.raw();
      EXPECT_TRUE(std::equal(raw_block.begin(), raw_block.end(), x.cas_block.begin(), x.cas_block.end()));
      EXPECT_EQ(x.chunks.size(), b.num_chunks());
      found_block = true;
    }
  EXPECT_TRUE(found_block);
  EXPECT_EQ(x.chunks[0].chunk_hash.to_string(), "81b34a5179857460a1a5ba079fcf7231c307a19940ccb769e49240df5ec6c466");

  EXPECT_THAT(*idx->expire(1754664704), IsEmpty());
  EXPECT_EQ(find(raw).size(), 1u);
  auto gone = idx->expire(1754664705);
  ASSERT_TRUE(gone);
  EXPECT_THAT(*gone, ElementsAre(r->shard));
  EXPECT_THAT(find(raw), IsEmpty());
  EXPECT_EQ((*idx->shard(r->shard))->state, ShardState::expired);
  EXPECT_EQ((*idx->shard(r->shard))->ended_at, 1754664705u);
  Stats s = stats();
  EXPECT_EQ(s.chunk_entries, 0u);
  EXPECT_EQ(s.keys, 0u);
  EXPECT_EQ(s.shards_expired, 1u);
  EXPECT_THAT(problems(), IsEmpty());

  // Gone from the answers, but the index can still say who held it.
  auto held = idx->expired_holders(raw);
  ASSERT_TRUE(held) << held.error().to_string();
  ASSERT_EQ(held->size(), 1u);
  EXPECT_EQ((*held)[0].hash, r->shard);
  EXPECT_EQ((*held)[0].expiry, 1754664705u);
  EXPECT_EQ((*held)[0].ended_at, 1754664705u);
  EXPECT_THAT(*idx->expired_holders(*Hash::parse(std::string(64, '7'))), IsEmpty());
}

// The forms of an expired shard are a hint kept 30 days from its expiry in
// the index, then dropped by a later expire(); the shard's record stays.
TEST_P(IndexTest, AnExpiredShardsFormsAreKeptThirtyDaysThenDropped) {
  auto file = shard::MappedFile::open(std::string(DEDUPD_FIXTURE_DIR) + "/gpt2-64-8bits.tflite.shard");
  ASSERT_TRUE(file);
  auto view = shard::ShardView::parse(file->bytes());
  ASSERT_TRUE(view);
  ASSERT_TRUE(idx->ingest(*view, SourceInfo{"/f.mdb", 1, 1}, IngestOptions{.now = 1754000000}));
  const Hash raw = *Hash::parse("9502eec19d4b0c9f7b389228fa801f68ecdf15d69ccd1da2f9ddbd0219898335");
  EXPECT_THAT(*idx->expired_holders(raw), IsEmpty()) << "live: found, not expired";
  ASSERT_TRUE(idx->expire(1754664705));
  const std::uint64_t day = 24 * 3600;
  ASSERT_TRUE(idx->expire(1754664705 + 30 * day - 1));
  EXPECT_EQ(idx->expired_holders(raw)->size(), 1u);
  ASSERT_TRUE(idx->expire(1754664705 + 30 * day));
  EXPECT_THAT(*idx->expired_holders(raw), IsEmpty());
  EXPECT_EQ(idx->shards(ShardState::expired)->size(), 1u);
  EXPECT_THAT(problems(), IsEmpty());
}

// Every shard the real Xet client wrote (fixtures/hf_xet/, hf_xet 1.8.0):
// each goes in, every chunk of its session shards is found where it says,
// and every file it lists, the empty one too, is answered.
TEST_P(IndexTest, ShardsTheRealXetClientWroteAreIndexedWhole) {
  std::ifstream in(std::string(DEDUPD_FIXTURE_DIR) + "/hf_xet/sources.json");
  const auto sources = nlohmann::json::parse(in);
  std::vector<shard::MappedFile> files;
  std::size_t n = 0;
  for (const auto& [name, role] : sources.at("files").items()) {
    auto file = shard::MappedFile::open(std::string(DEDUPD_FIXTURE_DIR) + "/hf_xet/" + name);
    ASSERT_TRUE(file) << name;
    auto view = shard::ShardView::parse(file->bytes());
    ASSERT_TRUE(view) << name << ": " << view.error().to_string();
    auto r = idx->ingest(*view, SourceInfo{"/xet/" + name, file->size(), std::int64_t(++n)},
                         IngestOptions{.now = view->creation_timestamp()});
    ASSERT_TRUE(r) << name << ": " << r.error().to_string();
    EXPECT_EQ(r->outcome, IngestOutcome::added) << name;
    if (!view->keyed()) {
      for (shard::XorbBlock xb : view->xorbs())
        for (std::uint32_t i = 0; i < xb.num_chunks(); ++i) {
          const auto locs = find(xb.chunk(i).chunk_hash);
          ASSERT_FALSE(locs.empty()) << name << " chunk " << i;
          EXPECT_EQ(locs[0].xorb, xb.hash());
          EXPECT_EQ(locs[0].chunk_index, i);
        }
      for (shard::FileBlock fb : view->files()) {
        auto info = idx->file(fb.hash());
        ASSERT_TRUE(info && *info) << name << " file " << fb.hash().to_string();
        EXPECT_EQ((*info)->terms.size(), fb.num_terms());
      }
    }
    files.push_back(std::move(*file));
  }
  EXPECT_EQ(n, 5u);
  EXPECT_THAT(problems(), IsEmpty());
}

TEST_P(IndexTest, FixtureIngestedAfterItsExpiryIsRecordedNotIndexed) {
  auto file = shard::MappedFile::open(std::string(DEDUPD_FIXTURE_DIR) + "/gpt2-64-8bits.tflite.shard");
  ASSERT_TRUE(file);
  auto view = shard::ShardView::parse(file->bytes());
  ASSERT_TRUE(view);
  auto r = idx->ingest(*view, SourceInfo{"/f.mdb", 1, 1}, IngestOptions{.now = 1763794800});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->outcome, IngestOutcome::expired);
  EXPECT_THAT(find(*Hash::parse("9502eec19d4b0c9f7b389228fa801f68ecdf15d69ccd1da2f9ddbd0219898335")), IsEmpty());
  EXPECT_EQ((*idx->shard(r->shard))->state, ShardState::expired);
  EXPECT_EQ(stats().chunk_entries, 0u);
  EXPECT_THAT(problems(), IsEmpty());
  // What the README's example shows: why that hash is not found.
  auto held = idx->expired_holders(*Hash::parse("9502eec19d4b0c9f7b389228fa801f68ecdf15d69ccd1da2f9ddbd0219898335"));
  ASSERT_TRUE(held);
  ASSERT_EQ(held->size(), 1u);
  EXPECT_EQ((*held)[0].hash, r->shard);
  EXPECT_EQ((*held)[0].ended_at, 1763794800u);
}

TEST_P(IndexTest, TwoShardsSharingXorbsKeepThemUntilTheLastGoes) {
  auto shared = gen_xorb(10, 30), only1 = gen_xorb(11, 5), only2 = gen_xorb(12, 6);
  auto s1 = own(build_shard({.xorbs = {&shared, &only1}, .files = {gen_file(1, shared, 0, 30, true, true)}}));
  auto s2 = own(build_shard(
      {.xorbs = {&only2, &shared}, .expiry = 2100000000, .files = {gen_file(1, shared, 0, 30, true, true)}}));
  ingest(s1, "/a.mdb");
  IngestResult r2 = ingest(s2, "/b.mdb");
  EXPECT_EQ(r2.new_xorbs, 1u);  // only `only2` is new
  EXPECT_EQ(r2.new_chunk_entries, 6u);
  EXPECT_EQ(r2.new_files, 0u);
  EXPECT_THAT(shard_hashes(find(shared.raw[3])[0].shards), UnorderedElementsAre(s1.hash, s2.hash));
  EXPECT_EQ(stats().chunk_entries, 41u);

  auto rm = idx->remove(s1.hash, 1234);
  ASSERT_TRUE(rm);
  EXPECT_EQ(rm->outcome, RemoveOutcome::removed);
  EXPECT_EQ(rm->shard->state, ShardState::removed);
  auto locs = find(shared.raw[3]);
  ASSERT_EQ(locs.size(), 1u);
  EXPECT_THAT(shard_hashes(locs[0].shards), ElementsAre(s2.hash));
  EXPECT_THAT(find(only1.raw[0]), IsEmpty());
  EXPECT_EQ(find(only2.raw[0]).size(), 1u);
  EXPECT_TRUE(idx->file(hash_of_seed(1 ^ 0xF11E))->has_value());
  EXPECT_EQ(stats().chunk_entries, 36u);
  EXPECT_THAT(problems(), IsEmpty());

  ASSERT_TRUE(idx->remove(s2.hash));
  EXPECT_THAT(find(shared.raw[3]), IsEmpty());
  EXPECT_THAT(find(only2.raw[0]), IsEmpty());
  EXPECT_FALSE(idx->file(hash_of_seed(1 ^ 0xF11E))->has_value());
  EXPECT_THAT(*idx->files_with_sha256(hash_of_seed(1 ^ 0x5A256)), IsEmpty());
  EXPECT_FALSE(*idx->next_expiry());
  EXPECT_THAT(problems(), IsEmpty());

  // Nothing left but the two small shard records, their sources and meta.
  idx.reset();
  auto items = table_items(tmp / "idx");
  for (const auto& [name, n] : items) {
    if (name == "shards" || name == "sources") {
      EXPECT_EQ(n, 2u) << name;
    } else if (name != "meta") {
      EXPECT_EQ(n, 0u) << name;
    }
  }
}

TEST_P(IndexTest, KeyedAndUnkeyedShardWithTheSameXorb) {
  auto x = gen_xorb(20, 12);
  Key key = hash_of_seed(2020);
  auto plain = own(build_shard({.xorbs = {&x}}));
  auto keyed = own(build_shard({.xorbs = {&x}, .key = key, .expiry = 2200000000}));
  ingest(plain);
  ingest(keyed);
  auto locs = find(x.raw[5]);
  ASSERT_EQ(locs.size(), 1u) << "one chunk of one xorb: one location";
  EXPECT_EQ(locs[0].chunk_index, 5u);
  ASSERT_EQ(locs[0].shards.size(), 2u);
  auto forms = idx->xorb(x.hash);
  ASSERT_TRUE(forms);
  ASSERT_EQ(forms->size(), 2u);
  int keyed_forms = 0;
  for (const auto& f : *forms) {
    keyed_forms += f.keyed;
    EXPECT_EQ(f.chunks[5].chunk_hash, f.keyed ? shard::keyed_chunk_hash(key, x.raw[5]) : x.raw[5]);
    ASSERT_EQ(f.shards.size(), 1u);
    EXPECT_EQ(f.shards[0].shard, f.keyed ? keyed.hash : plain.hash);
  }
  EXPECT_EQ(keyed_forms, 1);
  EXPECT_EQ(stats().chunk_entries, 24u);

  ASSERT_TRUE(idx->remove(keyed.hash));
  locs = find(x.raw[5]);
  ASSERT_EQ(locs.size(), 1u);
  EXPECT_THAT(shard_hashes(locs[0].shards), ElementsAre(plain.hash));
  EXPECT_THAT(*idx->live_keys(), IsEmpty());
  EXPECT_EQ(idx->xorb(x.hash)->size(), 1u);
  EXPECT_THAT(problems(), IsEmpty());

  ASSERT_TRUE(idx->remove(plain.hash));
  EXPECT_THAT(find(x.raw[5]), IsEmpty());
  EXPECT_THAT(*idx->xorb(x.hash), IsEmpty());
  EXPECT_THAT(problems(), IsEmpty());
}

TEST_P(IndexTest, TwoKeyedShardsWithTheSameKeyShareTheXorbForm) {
  auto x = gen_xorb(21, 4);
  Key key = hash_of_seed(2121);
  auto s1 = own(build_shard({.xorbs = {&x}, .key = key, .created = 1}));
  auto s2 = own(build_shard({.xorbs = {&x}, .key = key, .created = 2}));
  ingest(s1);
  EXPECT_EQ(ingest(s2).new_xorbs, 0u);
  EXPECT_EQ(stats().keys, 1u);
  ASSERT_TRUE(idx->remove(s1.hash));
  EXPECT_EQ(stats().keys, 1u) << "the key stays while a shard uses it";
  EXPECT_EQ(find(x.raw[1]).size(), 1u);
  ASSERT_TRUE(idx->remove(s2.hash));
  EXPECT_EQ(stats().keys, 0u);
  EXPECT_THAT(problems(), IsEmpty());
}

TEST_P(IndexTest, AChunkInTwoXorbsAnswersBoth) {
  auto x1 = gen_xorb(30, 5), x2 = gen_xorb(31, 5);
  x2.raw[2] = x1.raw[4];  // two uploads of the same bytes
  auto s = own(build_shard({.xorbs = {&x1, &x2}}));
  ingest(s);
  auto locs = find(x1.raw[4]);
  ASSERT_EQ(locs.size(), 2u);
  std::set<std::pair<Hash, std::uint32_t>> where;
  for (const auto& l : locs) where.insert({l.xorb, l.chunk_index});
  EXPECT_EQ(where, (std::set<std::pair<Hash, std::uint32_t>>{{x1.hash, 4}, {x2.hash, 2}}));
  EXPECT_THAT(problems(), IsEmpty());
}

TEST_P(IndexTest, SameXorbHashWithDifferentContentKeepsBothForms) {
  auto x = gen_xorb(32, 4);
  auto y = x;
  y.sizes[1] += 1;  // another description of "the same" xorb
  auto s1 = own(build_shard({.xorbs = {&x}}));
  auto s2 = own(build_shard({.xorbs = {&y}}));
  ingest(s1);
  EXPECT_EQ(ingest(s2).new_xorbs, 1u);
  EXPECT_EQ(idx->xorb(x.hash)->size(), 2u);
  EXPECT_EQ(find(x.raw[2]).size(), 2u) << "different byte ranges are different locations";
  ASSERT_TRUE(idx->remove(s2.hash));
  auto locs = find(x.raw[2]);
  ASSERT_EQ(locs.size(), 1u);
  EXPECT_EQ(locs[0].byte_start, x.byte_start(2));
  EXPECT_THAT(problems(), IsEmpty());
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

TEST_P(IndexTest, EntriesAnswerFromBothTables) {
  auto x1 = gen_xorb(36, 50), x2 = gen_xorb(37, 50);
  auto s1 = own(build_shard({.xorbs = {&x1}}));
  auto s2 = own(build_shard({.xorbs = {&x2, &x1}}));
  ingest(s1);
  ASSERT_TRUE(idx->merge_recent());
  EXPECT_EQ(stats().recent_chunk_entries, 0u);
  ingest(s2);
  EXPECT_EQ(stats().chunk_entries, 100u);
  EXPECT_EQ(find(x1.raw[10])[0].shards.size(), 2u);
  EXPECT_EQ(find(x2.raw[10]).size(), 1u);
  EXPECT_THAT(problems(), IsEmpty());
  ASSERT_TRUE(idx->remove(s1.hash));
  ASSERT_TRUE(idx->remove(s2.hash));
  EXPECT_EQ(stats().chunk_entries, 0u);
  EXPECT_THAT(find(x1.raw[10]), IsEmpty());
  EXPECT_THAT(problems(), IsEmpty());
}

TEST_P(IndexTest, AXorbListedTwiceInOneShardCountsOnce) {
  auto x = gen_xorb(33, 3);
  auto s = own(build_shard({.xorbs = {&x, &x}}));
  EXPECT_EQ(ingest(s).new_xorbs, 1u);
  EXPECT_EQ(find(x.raw[0])[0].shards.size(), 1u);
  EXPECT_THAT(problems(), IsEmpty());
  ASSERT_TRUE(idx->remove(s.hash));
  EXPECT_EQ(stats().xorbs, 0u);
  EXPECT_THAT(problems(), IsEmpty());
}

TEST_P(IndexTest, RemoveOutcomesAndRevive) {
  auto x = gen_xorb(40, 3);
  auto s = own(build_shard({.xorbs = {&x}}));
  EXPECT_EQ(idx->remove(s.hash)->outcome, RemoveOutcome::not_found);
  ingest(s, "/r.mdb");
  EXPECT_EQ(idx->remove(s.hash, 99)->outcome, RemoveOutcome::removed);
  auto again = idx->remove(s.hash);
  EXPECT_EQ(again->outcome, RemoveOutcome::not_live);
  EXPECT_EQ(again->shard->ended_at, 99u);
  // A rescan finding the file again does not bring it back...
  EXPECT_EQ(ingest(s, "/r.mdb").outcome, IngestOutcome::previously_gone);
  EXPECT_THAT(find(x.raw[0]), IsEmpty());
  auto listed = idx->shards(ShardState::removed);
  ASSERT_TRUE(listed);
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ(listed->front().hash, s.hash);
  // ...an explicit ingest does.
  EXPECT_EQ(ingest(s, "/r.mdb", IngestOptions{.revive = true}).outcome, IngestOutcome::added);
  EXPECT_EQ(find(x.raw[0]).size(), 1u);
  Stats st = stats();
  EXPECT_EQ(st.shards_live, 1u);
  EXPECT_EQ(st.shards_removed, 0u);
  EXPECT_THAT(problems(), IsEmpty());
}

TEST_P(IndexTest, NextExpiryAndExpireFollowExpiryOrder) {
  auto x1 = gen_xorb(50, 2), x2 = gen_xorb(51, 2), x3 = gen_xorb(52, 2), x4 = gen_xorb(53, 2);
  auto late = own(build_shard({.xorbs = {&x1}, .expiry = 3000}));
  auto early = own(build_shard({.xorbs = {&x2}, .expiry = 1000}));
  auto mid = own(build_shard({.xorbs = {&x3}, .expiry = 2000}));
  auto never = own(build_shard({.xorbs = {&x4}}));
  auto zero = own(build_shard({.xorbs = {&x4}, .expiry = 0}));  // JS client: unset
  for (auto* s : {&late, &early, &mid, &never, &zero}) ingest(*s);
  EXPECT_EQ(*idx->next_expiry(), 1000u);
  EXPECT_EQ(stats().next_expiry, 1000u);
  EXPECT_THAT(*idx->due(2000), ElementsAre(early.hash, mid.hash));
  EXPECT_EQ(find(x2.raw[0]).size(), 1u) << "due() is a dry run";
  EXPECT_THAT(*idx->expire(999), IsEmpty());
  EXPECT_THAT(*idx->expire(2500), ElementsAre(early.hash, mid.hash));
  EXPECT_EQ(*idx->next_expiry(), 3000u);
  EXPECT_THAT(find(x2.raw[0]), IsEmpty());
  EXPECT_EQ(find(x1.raw[0]).size(), 1u);
  EXPECT_THAT(*idx->expire(UINT64_MAX - 1), ElementsAre(late.hash));
  EXPECT_FALSE(*idx->next_expiry());
  EXPECT_EQ(find(x4.raw[0]).size(), 1u) << "never-expiring shards stay";
  Stats st = stats();
  EXPECT_EQ(st.shards_expired, 3u);
  EXPECT_EQ(st.shards_live, 2u);
  EXPECT_THAT(problems(), IsEmpty());
}

TEST_P(IndexTest, FilesAndSha256) {
  auto x = gen_xorb(60, 10);
  auto f_plain = gen_file(5, x, 0, 10, false, false);
  auto f_rich = gen_file(5, x, 0, 10, true, true);
  auto other = gen_file(6, x, 2, 4, true, true);
  other.metadata_ext->hash = f_rich.metadata_ext->hash;  // same content sha, other file hash
  auto s1 = own(build_shard({.xorbs = {&x}, .files = {f_plain}}));
  auto s2 = own(build_shard({.xorbs = {&x}, .created = 5, .files = {f_rich, other}}));
  ingest(s1);
  auto f = idx->file(f_plain.header.file_hash);
  ASSERT_TRUE(f && f->has_value());
  EXPECT_FALSE((*f)->sha256);
  EXPECT_THAT((*f)->verification, IsEmpty());
  ASSERT_EQ((*f)->terms.size(), 1u);
  EXPECT_EQ((*f)->terms[0].xorb_hash, x.hash);
  EXPECT_EQ((*f)->terms[0].chunk_end, 10u);
  EXPECT_EQ((*f)->size, x.byte_start(10));

  IngestResult r2 = ingest(s2);
  EXPECT_EQ(r2.new_files, 1u);
  f = idx->file(f_plain.header.file_hash);
  EXPECT_EQ((*f)->sha256, f_rich.metadata_ext->hash) << "the richer description wins";
  ASSERT_EQ((*f)->verification.size(), 1u);
  EXPECT_EQ((*f)->verification[0], f_rich.verification[0].hash);
  EXPECT_THAT((*f)->shards, UnorderedElementsAre(s1.hash, s2.hash));
  EXPECT_THAT(*idx->files_with_sha256(f_rich.metadata_ext->hash),
              UnorderedElementsAre(f_rich.header.file_hash, other.header.file_hash));
  EXPECT_THAT(problems(), IsEmpty());

  ASSERT_TRUE(idx->remove(s2.hash));
  EXPECT_TRUE(idx->file(f_plain.header.file_hash)->has_value());
  EXPECT_FALSE(idx->file(other.header.file_hash)->has_value());
  EXPECT_THAT(*idx->files_with_sha256(f_rich.metadata_ext->hash), ElementsAre(f_rich.header.file_hash));
  EXPECT_THAT(problems(), IsEmpty());
  ASSERT_TRUE(idx->remove(s1.hash));
  EXPECT_EQ(stats().files, 0u);
  EXPECT_THAT(*idx->files_with_sha256(f_rich.metadata_ext->hash), IsEmpty());
  EXPECT_THAT(problems(), IsEmpty());
}

TEST_P(IndexTest, RejectedFilesAreRememberedUntilTheyChange) {
  RejectInfo r{.path = "/cache/bad.mdb",
               .size = 100,
               .mtime_ns = 5,
               .content_hash = hash_of_seed(9),
               .rule = "header.magic",
               .offset = 0,
               .message = "not a shard",
               .recorded_at = 42};
  ASSERT_TRUE(idx->record_rejected(r));
  EXPECT_TRUE(*idx->is_known_rejected("/cache/bad.mdb", 100, 5));
  EXPECT_FALSE(*idx->is_known_rejected("/cache/bad.mdb", 101, 5));
  EXPECT_FALSE(*idx->is_known_rejected("/cache/bad.mdb", 100, 6));
  EXPECT_FALSE(*idx->is_known_rejected("/cache/other.mdb", 100, 5));
  auto list = idx->rejected();
  ASSERT_TRUE(list);
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ(list->front().rule, "header.magic");
  EXPECT_EQ(list->front().message, "not a shard");
  EXPECT_EQ(list->front().content_hash, hash_of_seed(9));
  EXPECT_EQ(list->front().recorded_at, 42u);
  EXPECT_EQ(stats().rejected, 1u);
  // Recording it again (rescan) does not count twice.
  ASSERT_TRUE(idx->record_rejected(r));
  EXPECT_EQ(stats().rejected, 1u);
  EXPECT_THAT(problems(), IsEmpty());

  // The file was replaced by a valid shard.
  auto x = gen_xorb(70, 2);
  auto s = own(build_shard({.xorbs = {&x}}));
  ingest(s, "/cache/bad.mdb");
  EXPECT_FALSE(*idx->is_known_rejected("/cache/bad.mdb", s.bytes.size(), 1));
  EXPECT_THAT(*idx->rejected(), IsEmpty());
  EXPECT_EQ(stats().rejected, 0u);

  ASSERT_TRUE(idx->record_rejected(RejectInfo{.path = "/gone.mdb", .rule = "x"}));
  ASSERT_TRUE(idx->forget_source("/gone.mdb"));
  EXPECT_FALSE(idx->source("/gone.mdb")->has_value());
  EXPECT_EQ(stats().rejected, 0u);
  EXPECT_THAT(problems(), IsEmpty());
  EXPECT_FALSE(idx->record_rejected(RejectInfo{}));
}

TEST_P(IndexTest, LongPathsAreFine) {
  std::string path = "/" + std::string(3000, 'p') + ".mdb";
  auto x = gen_xorb(71, 2);
  auto s = own(build_shard({.xorbs = {&x}}));
  ingest(s, path);
  EXPECT_EQ((*idx->source(path))->path, path);
  EXPECT_THAT((*idx->shard(s.hash))->paths, ElementsAre(path));
}

TEST_P(IndexTest, BatchLookupKeepsRequestOrder) {
  auto x = gen_xorb(80, 100);
  Key key = hash_of_seed(8080);
  auto y = gen_xorb(81, 10);
  ingest(own(build_shard({.xorbs = {&x}})));
  ingest(own(build_shard({.xorbs = {&y}, .key = key})));
  std::vector<Hash> q;
  for (int i = 0; i < 100; ++i) {
    q.push_back(x.raw[std::size_t(i)]);
    q.push_back(hash_of_seed(1000000 + std::uint64_t(i)));  // a miss
    if (i < 10) q.push_back(y.raw[std::size_t(i)]);
  }
  BatchResult out;
  ASSERT_TRUE(idx->lookup_batch(q, out));
  ASSERT_EQ(out.size(), q.size());
  std::size_t k = 0;
  for (int i = 0; i < 100; ++i) {
    auto hit = out.of(k++);
    ASSERT_EQ(hit.size(), 1u);
    EXPECT_EQ(hit[0].xorb, x.hash);
    EXPECT_EQ(hit[0].chunk_index, std::uint32_t(i));
    EXPECT_FALSE(out.shards(hit[0])[0].keyed);
    EXPECT_TRUE(out.of(k++).empty());
    if (i < 10) {
      auto khit = out.of(k++);
      ASSERT_EQ(khit.size(), 1u);
      EXPECT_EQ(khit[0].xorb, y.hash);
      EXPECT_TRUE(out.shards(khit[0])[0].keyed);
    }
  }
  // A xorb's chunks share one shard set.
  EXPECT_EQ(out.shard_sets.size(), 2u);
  // Reused output is cleared first.
  ASSERT_TRUE(idx->lookup_batch(std::span(q.data(), 1), out));
  EXPECT_EQ(out.size(), 1u);
}

// Searches are made in hash order, a span of queries at a time; the
// answers must still come back in the order of the queries, across spans.
TEST_P(IndexTest, BatchLookupLongerThanASortSpanKeepsRequestOrder) {
  auto x = gen_xorb(82, 100);
  auto y = gen_xorb(83, 10);
  ingest(own(build_shard({.xorbs = {&x}})));
  ingest(own(build_shard({.xorbs = {&y}, .key = hash_of_seed(8282)})));
  std::vector<Hash> q;
  for (std::uint64_t i = 0; i < 9000; ++i) {
    if (i % 3 == 0) q.push_back(x.raw[i % 100]);
    else if (i % 3 == 1) q.push_back(hash_of_seed(2000000 + i));
    else q.push_back(y.raw[i % 10]);
  }
  BatchResult out;
  ASSERT_TRUE(idx->lookup_batch(q, out));
  ASSERT_EQ(out.size(), q.size());
  for (std::uint64_t i = 0; i < q.size(); ++i) {
    auto hit = out.of(i);
    if (i % 3 == 1) {
      EXPECT_TRUE(hit.empty()) << i;
      continue;
    }
    ASSERT_EQ(hit.size(), 1u) << i;
    EXPECT_EQ(hit[0].xorb, i % 3 == 0 ? x.hash : y.hash) << i;
    EXPECT_EQ(hit[0].chunk_index, std::uint32_t(i % 3 == 0 ? i % 100 : i % 10)) << i;
  }
}

TEST_P(IndexTest, DataSurvivesReopen) {
  auto x = gen_xorb(90, 40);
  auto s = own(build_shard({.xorbs = {&x}, .expiry = 5000}));
  ingest(s);
  reopen();
  EXPECT_EQ(find(x.raw[39]).size(), 1u);
  EXPECT_EQ(*idx->next_expiry(), 5000u);
  EXPECT_THAT(problems(), IsEmpty());
}

TEST_P(IndexTest, SecondOpenInTheSameProcessIsRefused) {
  Options o;
  o.dir = tmp / "idx";
  auto second = Index::open(o);
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().rule, kRuleAlreadyOpen);
  idx.reset();
  EXPECT_TRUE(Index::open(o)) << "closing frees the directory again";
}

// ---- schema -----------------------------------------------------------------

void set_schema_version(const std::string& dir, std::uint32_t version) {
  MDB_env* env;
  ASSERT_EQ(mdb_env_create(&env), 0);
  mdb_env_set_maxdbs(env, 32);
  ASSERT_EQ(mdb_env_open(env, dir.c_str(), 0, 0640), 0);
  MDB_txn* txn;
  ASSERT_EQ(mdb_txn_begin(env, nullptr, 0, &txn), 0);
  MDB_dbi meta;
  ASSERT_EQ(mdb_dbi_open(txn, "meta", 0, &meta), 0);
  MDB_val k{14, const_cast<char*>("schema_version")}, v{4, &version};
  ASSERT_EQ(mdb_put(txn, meta, &k, &v, 0), 0);
  ASSERT_EQ(mdb_txn_commit(txn), 0);
  mdb_env_close(env);
}

TEST_P(IndexTest, AnotherSchemaVersionIsAClearError) {
  idx.reset();
  set_schema_version(tmp / "idx", 99);
  Options o;
  o.dir = tmp / "idx";
  auto r = Index::open(o);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().rule, kRuleSchema);
  EXPECT_THAT(r.error().message, HasSubstr("schema version 99"));
  EXPECT_THAT(r.error().message, HasSubstr("reads version " + std::to_string(schema::kVersion)));
  EXPECT_THAT(r.error().message, HasSubstr("newer dedupd"));
  // Refusing must not have touched it.
  EXPECT_EQ(table_items(tmp / "idx")["meta"], 1u);
  set_schema_version(tmp / "idx", 0);
  r = Index::open(o);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("no upgrade path"));
}

TEST(IndexSchema, ForeignLmdbEnvironmentIsRefused) {
  TempDir tmp;
  MDB_env* env;
  ASSERT_EQ(mdb_env_create(&env), 0);
  ASSERT_EQ(mdb_env_open(env, tmp.path().c_str(), 0, 0640), 0);
  MDB_txn* txn;
  ASSERT_EQ(mdb_txn_begin(env, nullptr, 0, &txn), 0);
  MDB_dbi main;
  ASSERT_EQ(mdb_dbi_open(txn, nullptr, 0, &main), 0);
  MDB_val k{3, const_cast<char*>("foo")}, v{3, const_cast<char*>("bar")};
  ASSERT_EQ(mdb_put(txn, main, &k, &v, 0), 0);
  ASSERT_EQ(mdb_txn_commit(txn), 0);
  mdb_env_close(env);
  auto r = Index::open(Options{.dir = tmp.path()});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().rule, kRuleSchema);
  EXPECT_THAT(r.error().message, HasSubstr("not a dedupd index"));
}

// ---- growth, space, stale readers -------------------------------------------

class MockObserver : public Observer {
 public:
  MOCK_METHOD(void, map_grown, (std::uint64_t old_size, std::uint64_t new_size), (override));
  MOCK_METHOD(void, stale_readers_cleared, (int count), (override));
  MOCK_METHOD(void, merge_failed, (const shard::Error& error), (override));
};

TEST(IndexGrowth, MapGrowsFromATinyMap) {
  TempDir tmp;
  MockObserver obs;
  std::uint64_t last = 0;
  EXPECT_CALL(obs, map_grown(_, _)).Times(AtLeast(3)).WillRepeatedly([&](std::uint64_t o, std::uint64_t n) {
    EXPECT_GT(n, o);
    EXPECT_GE(o, last);
    last = n;
  });
  EXPECT_CALL(obs, stale_readers_cleared(_)).Times(0);
  auto idx = Index::open(Options{.dir = tmp.path(), .map_size = 64 * 1024, .observer = &obs});
  ASSERT_TRUE(idx) << idx.error().to_string();
  std::vector<GenXorb> xs;
  for (int i = 0; i < 20; ++i) xs.push_back(gen_xorb(100 + std::uint64_t(i), 2000));
  for (int i = 0; i < 20; ++i) {
    auto s = own(build_shard({.xorbs = {&xs[std::size_t(i)]}}));
    auto r = (*idx)->ingest(*s.view, {});
    ASSERT_TRUE(r) << r.error().to_string();
    ASSERT_EQ(r->outcome, IngestOutcome::added);
  }
  for (const auto& x : xs) EXPECT_EQ((*idx)->lookup(x.raw[1999])->size(), 1u);
  auto st = (*idx)->stats();
  EXPECT_GT(st->map_size, 64u * 1024);
  EXPECT_EQ(st->map_size, last);
  EXPECT_THAT(*(*idx)->check_invariants(), IsEmpty());
}

TEST(IndexGrowth, MaxMapSizeIsAnErrorAndTheIndexStaysConsistent) {
  TempDir tmp;
  auto idx = Index::open(Options{.dir = tmp.path(), .map_size = 256 * 1024, .max_map_size = 512 * 1024});
  ASSERT_TRUE(idx);
  std::vector<GenXorb> xs;
  std::vector<Hash> added;
  std::optional<Error> failure;
  for (int i = 0; i < 50 && !failure; ++i) {
    xs.push_back(gen_xorb(200 + std::uint64_t(i), 500));
    auto s = own(build_shard({.xorbs = {&xs.back()}}));
    auto r = (*idx)->ingest(*s.view, {});
    if (r) added.push_back(s.hash);
    else failure = r.error();
  }
  ASSERT_TRUE(failure) << "500 x 50 chunks cannot fit in 512 KiB";
  EXPECT_EQ(failure->rule, kRuleMapFull);
  EXPECT_THAT((*idx)->check_invariants().value(), IsEmpty());
  EXPECT_EQ((*idx)->stats()->shards_live, added.size());
  for (std::size_t i = 0; i < added.size(); ++i) EXPECT_EQ((*idx)->lookup(xs[i].raw[7])->size(), 1u);
  EXPECT_THAT(*(*idx)->lookup(xs.back().raw[7]), IsEmpty());
}

// Disk full, simulated by the file size limit in a child process: LMDB sees
// a short write (EIO) or EFBIG. The failed ingest is an error value, and the
// index on disk holds whole shards only.
TEST(IndexGrowth, DiskFullIsAnErrorAndLeavesWholeShards) {
  TempDir tmp;
  const int kShards = 40;
  std::vector<GenXorb> xs;
  for (int i = 0; i < kShards; ++i) xs.push_back(gen_xorb(300 + std::uint64_t(i), 300));
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim {
      256 * 1024, 256 * 1024
    };
    setrlimit(RLIMIT_FSIZE, &lim);
    // The map is a file of its size (MDB_WRITEMAP): start below the limit.
    auto idx = Index::open(Options{.dir = tmp.path(), .map_size = 64 << 10});
    if (!idx) _exit(2);
    for (int i = 0; i < kShards; ++i) {
      auto s = own(build_shard({.xorbs = {&xs[std::size_t(i)]}}));
      auto r = (*idx)->ingest(*s.view, {});
      if (!r) {
        fprintf(stderr, "child: %s\n", r.error().to_string().c_str());
        _exit(r.error().rule == kRuleNoSpace || r.error().rule == kRuleIo ? 0 : 3);
      }
    }
    _exit(4);  // never ran out of space
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0) << "the child should hit the size limit and get index.no_space or index.io";
  auto idx = Index::open(Options{.dir = tmp.path()});
  ASSERT_TRUE(idx) << idx.error().to_string();
  EXPECT_THAT((*idx)->check_invariants().value(), IsEmpty());
  std::uint64_t live = (*idx)->stats()->shards_live;
  EXPECT_GT(live, 0u);
  EXPECT_LT(live, std::uint64_t(kShards));
  for (const auto& x : xs) {
    std::size_t answered = 0;
    for (const auto& h : x.raw) answered += (*idx)->lookup(h)->size();
    EXPECT_TRUE(answered == 0 || answered == x.raw.size()) << answered;
  }
}

// LMDB writes into the mapped data.mdb (MDB_WRITEMAP), so a map page
// without a disk block would be SIGBUS on first write. The map is reserved
// on disk before any write may touch it: on a full disk (here the file size
// limit) growth takes what is left in smaller steps, then fails cleanly, and
// the process goes on reading what it committed.
TEST(IndexGrowth, AFullDiskUnderTheWriteMapIsNoSpaceNotSigbus) {
  TempDir tmp;
  constexpr std::uint64_t kLimit = 1 << 20;
  std::vector<GenXorb> xs;
  for (int i = 0; i < 60; ++i) xs.push_back(gen_xorb(400 + std::uint64_t(i), 600));
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim {
      kLimit, kLimit
    };
    setrlimit(RLIMIT_FSIZE, &lim);
    auto idx = Index::open(Options{.dir = tmp.path(), .map_size = 64 << 10});
    if (!idx) _exit(2);
    for (std::size_t i = 0; i < xs.size(); ++i) {
      auto s = own(build_shard({.xorbs = {&xs[i]}}));
      auto r = (*idx)->ingest(*s.view, {});
      if (r) continue;
      if (r.error().rule != kRuleNoSpace) _exit(3);
      if (i == 0) _exit(4);
      // Growth went on in smaller steps up to the limit.
      if ((*idx)->stats()->map_size + (128 << 10) < kLimit) _exit(5);
      // Still reading what was committed, in the same process.
      if ((*idx)->lookup(xs[0].raw[5])->size() != 1) _exit(6);
      if (!(*idx)->lookup(xs[i].raw[5])->empty()) _exit(7);
      _exit(0);
    }
    _exit(8);  // never ran out of space
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  ASSERT_EQ(WEXITSTATUS(status), 0);
  // Every byte of data.mdb has its blocks: no page of the map is a hole.
  struct stat st {};
  ASSERT_EQ(::stat((tmp.path() + "/data.mdb").c_str(), &st), 0);
  EXPECT_GE(std::uint64_t(st.st_blocks) * 512, std::uint64_t(st.st_size));
  auto idx = Index::open(Options{.dir = tmp.path()});
  ASSERT_TRUE(idx) << idx.error().to_string();
  EXPECT_THAT((*idx)->check_invariants().value(), IsEmpty());
}

TEST(IndexGrowth, StaleReaderSlotsOfDeadProcessesAreCleared) {
  TempDir tmp;
  { ASSERT_TRUE(Index::open(Options{.dir = tmp.path()})); }
  auto open_raw = [&](MDB_env*& env) {
    mdb_env_create(&env);
    mdb_env_set_maxdbs(env, 32);
    mdb_env_set_maxreaders(env, 256);
    return mdb_env_open(env, tmp.path().c_str(), MDB_NOTLS, 0640);
  };
  // A process that keeps the environment open, so the next opener does not
  // get the lock file to itself (the first opener resets the reader table).
  int hold[2], ready[2];
  ASSERT_EQ(pipe(hold), 0);
  ASSERT_EQ(pipe(ready), 0);
  pid_t holder = fork();
  ASSERT_GE(holder, 0);
  if (holder == 0) {
    close(hold[1]);
    MDB_env* env;
    if (open_raw(env)) _exit(2);
    char c = 1;
    if (write(ready[1], &c, 1) != 1) _exit(3);
    if (read(hold[0], &c, 1) < 0) _exit(4);
    _exit(0);
  }
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  pid_t reader = fork();
  ASSERT_GE(reader, 0);
  if (reader == 0) {
    // A reader that dies holding its slot (no cleanup runs after _exit).
    MDB_env* env;
    if (open_raw(env)) _exit(2);
    MDB_txn* txn;
    if (mdb_txn_begin(env, nullptr, MDB_RDONLY, &txn)) _exit(3);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(reader, &status, 0), reader);
  ASSERT_EQ(WEXITSTATUS(status), 0);
  {
    MockObserver obs;
    EXPECT_CALL(obs, stale_readers_cleared(1));
    auto idx = Index::open(Options{.dir = tmp.path(), .observer = &obs});
    ASSERT_TRUE(idx);
  }
  close(hold[1]);
  ASSERT_EQ(waitpid(holder, &status, 0), holder);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST_P(IndexTest, StatsReportSpace) {
  auto x = gen_xorb(400, 2000);
  ingest(own(build_shard({.xorbs = {&x}})));
  Stats s = stats();
  EXPECT_EQ(s.chunk_entries, 2000u);
  EXPECT_EQ(s.page_size, 4096u);
  EXPECT_GE(s.map_used, 2000u * 48);
  EXPECT_GE(s.db_bytes, s.map_used - s.page_size * 2);
  EXPECT_LE(s.map_used, s.map_size);
}

// counts() is what READY=1 waits for: the same counters as stats(), none
// of its walks, on an index whose counters differ from one another.
TEST_P(IndexTest, CountsAreStatsCounters) {
  auto a = gen_xorb(410, 300), b = gen_xorb(411, 200), c = gen_xorb(412, 100);
  auto s1 = own(build_shard({.xorbs = {&a, &b}}));
  auto s2 = own(build_shard({.xorbs = {&c}}));
  ingest(s1, "/a.mdb");
  ingest(s2, "/b.mdb");
  ASSERT_TRUE(idx->remove(s2.hash));
  ASSERT_TRUE(idx->record_rejected(RejectInfo{.path = "/bad.mdb", .rule = "x"}));
  ASSERT_TRUE(idx->record_rejected(RejectInfo{.path = "/worse.mdb", .rule = "x"}));
  ASSERT_TRUE(idx->record_rejected(RejectInfo{.path = "/worst.mdb", .rule = "x"}));
  Stats s = stats();
  auto n = idx->counts();
  ASSERT_TRUE(n) << n.error().to_string();
  EXPECT_EQ(n->shards_live, 1u);
  EXPECT_EQ(n->shards_removed, 1u);
  EXPECT_EQ(n->rejected, 3u);
  EXPECT_EQ(n->chunk_entries, 500u);
  EXPECT_EQ(n->xorbs, 2u);
  const Counts& from_stats = s;
  EXPECT_EQ(n->shards_live, from_stats.shards_live);
  EXPECT_EQ(n->shards_expired, from_stats.shards_expired);
  EXPECT_EQ(n->shards_removed, from_stats.shards_removed);
  EXPECT_EQ(n->rejected, from_stats.rejected);
  EXPECT_EQ(n->xorbs, from_stats.xorbs);
  EXPECT_EQ(n->chunk_entries, from_stats.chunk_entries);
  EXPECT_EQ(n->recent_chunk_entries, from_stats.recent_chunk_entries);
  EXPECT_EQ(n->files, from_stats.files);
}

}  // namespace
}  // namespace dedupd::index::gen
