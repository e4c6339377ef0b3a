// Ingest: what a shard brings is answered, from generated shards, the real
// fixtures and the shards the real Xet client wrote, under the four layouts.
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
using ::testing::IsEmpty;

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

TEST_P(IndexTest, LongPathsAreFine) {
  std::string path = "/" + std::string(3000, 'p') + ".mdb";
  auto x = gen_xorb(71, 2);
  auto s = own(build_shard({.xorbs = {&x}}));
  ingest(s, path);
  EXPECT_EQ((*idx->source(path))->path, path);
  EXPECT_THAT((*idx->shard(s.hash))->paths, ElementsAre(path));
}

}  // namespace
}  // namespace dedupd::index::gen
