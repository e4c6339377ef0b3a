// The global-dedup reply, built from a real index (daemon/answers/
// global_dedup) and written as the route writes it (render/global_dedup):
// it must parse as the shard a Xet client expects from the Hugging Face
// server (footer, no files, chunk hashes keyed by the footer key, an expiry)
// and carry the chunk's source shard, own xorb first, within the configured
// bounds.
#include "daemon/api/render/global_dedup.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "api_test_support.hpp"
#include "shard/reader.hpp"
#include "tests/unit/answers/answers_test_support.hpp"
#include "tests/unit/shard/test_support.hpp"

namespace dedupd::daemon::api::http {
namespace {

using answers::kFleetReplyMaxBlockBytes;
using answers::kReplyFramingBytes;
using answers::ReplyBounds;
using answers::ReplySettings;
using answers::xorb_block_bytes;
using shard::Hash;
using shard::Key;
using shard::ShardView;
namespace st = shard::testing;

// A reply's bytes from this index, as the route makes them; nullopt when no
// live shard holds the chunk.
base::Result<std::optional<std::vector<std::uint8_t>>> build_global_dedup_reply(const index::Index& idx,
                                                                                const Hash& raw_chunk,
                                                                                const ReplySettings& settings) {
  using Out = std::optional<std::vector<std::uint8_t>>;
  auto reply = answers::local_reply(idx, raw_chunk, settings);
  if (!reply) return reply.error();
  if (!*reply) return Out();
  return Out(render::global_dedup_reply_bytes(std::move(**reply)));
}

// The same from the fleet shard the chunk came from.
std::optional<std::vector<std::uint8_t>> build_fleet_global_dedup_reply(const fleet::ShardXorbs& source,
                                                                        const ReplySettings& settings) {
  auto reply = answers::fleet_reply(source, settings);
  if (!reply) return std::nullopt;
  return render::global_dedup_reply_bytes(std::move(*reply));
}

constexpr std::uint64_t kNow = 1'760'000'000;
constexpr std::uint64_t kLifetime = 7 * 24 * 3600;

Key key_of(std::uint64_t seed) { return st::seeded_hash(1000 + seed); }

ReplySettings settings(const Key& key, ReplyBounds bounds = {}) { return {key, kNow, kLifetime, bounds}; }

struct Upload {
  std::vector<st::TestXorb> xorbs;
  Hash shard;
};

class GlobalDedupReply : public ::testing::Test {
 protected:
  void SetUp() override {
    index_ = answers::testing::open_test_index(dir_.path());
    ASSERT_TRUE(index_);
  }

  // One shard of xorbs made from `seeds` (`chunks` each), as an upload
  // (raw) or, with a key, as a keyed reply expiring at `expiry`.
  Upload add_shard(std::vector<std::uint64_t> seeds, std::size_t chunks, const Key& key = Key{},
                   std::optional<std::uint64_t> expiry = std::nullopt, std::uint64_t created = kNow - 100,
                   const std::string& cas = "") {
    Upload u;
    for (std::uint64_t seed : seeds) u.xorbs.push_back(st::make_xorb(seed, chunks, key));
    u.shard = answers::testing::ingest_xorbs(*index_, u.xorbs, {key, expiry, created, cas});
    return u;
  }

  std::optional<std::vector<std::uint8_t>> reply(const Hash& raw, const ReplySettings& s) {
    auto r = build_global_dedup_reply(*index_, raw, s);
    EXPECT_TRUE(r.ok()) << r.error().to_string();
    return r.ok() ? *r : std::nullopt;
  }

  daemon::testing::TempDir dir_;
  std::unique_ptr<index::Index> index_;
};

std::vector<Hash> xorb_hashes(const ShardView& view) {
  std::vector<Hash> out;
  for (auto block : view.xorbs()) out.push_back(block.hash());
  return out;
}

std::vector<Hash> hashes_of(const Upload& u, std::initializer_list<std::size_t> order) {
  std::vector<Hash> out;
  for (std::size_t i : order) out.push_back(u.xorbs[i].record.header.xorb_hash);
  return out;
}

bool reply_has_chunk(const ShardView& view, const Hash& raw) {
  Hash keyed = shard::keyed_chunk_hash(view.chunk_key(), raw);
  for (auto block : view.xorbs())
    for (std::size_t i = 0; i < block.num_chunks(); ++i)
      if (block.chunk(i).chunk_hash == keyed) return true;
  return false;
}

TEST_F(GlobalDedupReply, UnknownChunkIsNotFound) {
  add_shard({1, 2}, 4);
  EXPECT_FALSE(reply(st::seeded_hash(999'999), settings(key_of(1))).has_value());
}

TEST_F(GlobalDedupReply, WholeSourceShardOwnXorbFirstKeyedAsTheServerShapesIt) {
  Upload u = add_shard({11, 12, 13, 14, 15}, 6);
  const Key key = key_of(1);
  const Hash& asked = u.xorbs[2].raw[3];
  auto bytes = reply(asked, settings(key));
  ASSERT_TRUE(bytes);
  auto view = ShardView::parse(*bytes);
  ASSERT_TRUE(view.ok()) << view.error().to_string();

  // The chunk's xorb, those after it, then those before it.
  EXPECT_EQ(xorb_hashes(*view), hashes_of(u, {2, 3, 4, 0, 1}));
  ASSERT_TRUE(view->has_footer());
  const shard::ShardFooter& f = *view->footer();
  EXPECT_TRUE(view->keyed());
  EXPECT_EQ(view->chunk_key(), key);
  EXPECT_EQ(f.creation_timestamp, kNow);
  EXPECT_EQ(view->expiry(), std::optional<std::uint64_t>(kNow + kLifetime));
  EXPECT_EQ(view->stats().files, 0u);
  // Server style: lookup offsets all at the footer, counts 0.
  EXPECT_EQ(f.footer_offset, bytes->size() - shard::kFooterSize);
  for (auto [off, n] : {std::pair{f.file_lookup_offset, f.file_lookup_num_entry},
                        std::pair{f.xorb_lookup_offset, f.xorb_lookup_num_entry},
                        std::pair{f.chunk_lookup_offset, f.chunk_lookup_num_entry}}) {
    EXPECT_EQ(off, f.footer_offset);
    EXPECT_EQ(n, 0u);
  }
  EXPECT_EQ(bytes->size(), kReplyFramingBytes + 5 * xorb_block_bytes(6));

  // Every chunk under its keyed hash, in order, with ranges and flags (bit
  // 31, global-dedup eligible, included) as the upload stored them.
  std::uint64_t on_disk = 0, eligible = 0;
  std::size_t n = 0;
  for (auto block : view->xorbs()) {
    const st::TestXorb& src = *std::find_if(u.xorbs.begin(), u.xorbs.end(), [&](const st::TestXorb& x) {
      return x.record.header.xorb_hash == block.hash();
    });
    on_disk += src.record.header.bytes_on_disk;
    EXPECT_EQ(block.header().bytes_in_xorb, src.record.header.bytes_in_xorb);
    ASSERT_EQ(block.num_chunks(), src.raw.size());
    for (std::size_t i = 0; i < src.raw.size(); ++i, ++n) {
      EXPECT_EQ(block.chunk(i).chunk_hash, shard::keyed_chunk_hash(key, src.raw[i]));
      EXPECT_EQ(block.chunk(i).byte_start, src.record.chunks[i].byte_start);
      EXPECT_EQ(block.chunk(i).unpacked_bytes, src.record.chunks[i].unpacked_bytes);
      EXPECT_EQ(block.chunk(i).flags, src.record.chunks[i].flags);
      eligible += block.chunk(i).global_dedup_eligible();
    }
  }
  EXPECT_EQ(n, 30u);
  EXPECT_GE(eligible, 5u);  // every xorb's first chunk is flagged
  EXPECT_EQ(f.stored_bytes_on_disk, on_disk);
  EXPECT_TRUE(reply_has_chunk(*view, asked));
}

TEST_F(GlobalDedupReply, LastXorbsChunkWrapsToTheShardsStart) {
  Upload u = add_shard({21, 22, 23}, 3);
  auto bytes = reply(u.xorbs[2].raw[0], settings(key_of(2)));
  ASSERT_TRUE(bytes);
  auto view = ShardView::parse(*bytes);
  ASSERT_TRUE(view.ok());
  EXPECT_EQ(xorb_hashes(*view), hashes_of(u, {2, 0, 1}));
}

TEST_F(GlobalDedupReply, XorbBoundTakesTheOwnXorbAndThoseAfterIt) {
  Upload u = add_shard({31, 32, 33, 34, 35}, 4);
  for (auto [max, expected] : {std::pair{1ull, hashes_of(u, {1})}, std::pair{2ull, hashes_of(u, {1, 2})},
                               std::pair{4ull, hashes_of(u, {1, 2, 3, 4})}}) {
    auto bytes = reply(u.xorbs[1].raw[0], settings(key_of(3), {max, 64ull << 20}));
    ASSERT_TRUE(bytes);
    auto view = ShardView::parse(*bytes);
    ASSERT_TRUE(view.ok());
    EXPECT_EQ(xorb_hashes(*view), expected) << "max_xorbs " << max;
  }
}

TEST_F(GlobalDedupReply, ByteBoundStopsBeforeTheXorbThatWouldPassIt) {
  Upload u = add_shard({41, 42, 43, 44}, 10);
  const std::uint64_t block = xorb_block_bytes(10);
  // Room for the framing and three blocks, less one byte.
  ReplyBounds bounds{100, kReplyFramingBytes + 3 * block - 1};
  auto bytes = reply(u.xorbs[0].raw[5], settings(key_of(4), bounds));
  ASSERT_TRUE(bytes);
  EXPECT_LE(bytes->size(), bounds.max_bytes);
  auto view = ShardView::parse(*bytes);
  ASSERT_TRUE(view.ok());
  EXPECT_EQ(xorb_hashes(*view), hashes_of(u, {0, 1}));

  // Exactly three blocks fit.
  bytes = reply(u.xorbs[0].raw[5], settings(key_of(4), {100, kReplyFramingBytes + 3 * block}));
  ASSERT_TRUE(bytes);
  EXPECT_EQ(bytes->size(), kReplyFramingBytes + 3 * block);

  // The chunk's own xorb goes in even when it alone is over the bound.
  bytes = reply(u.xorbs[3].raw[0], settings(key_of(4), {100, 10}));
  ASSERT_TRUE(bytes);
  view = ShardView::parse(*bytes);
  ASSERT_TRUE(view.ok());
  EXPECT_EQ(xorb_hashes(*view), hashes_of(u, {3}));
}

TEST_F(GlobalDedupReply, RawShardsWinOverKeyedOnesAndFillTheRoomLeft) {
  // The same xorb in a keyed server reply and in two raw uploads: raw ones
  // are re-keyed with the daemon key; the never-expiring one goes first.
  st::TestXorb shared = st::make_xorb(50, 5);
  add_shard({50, 51}, 5, key_of(9), kNow + 10);
  Upload expiring = add_shard({52, 50}, 5, Key{}, kNow + 3600);
  Upload forever = add_shard({50, 53, 54}, 5);
  auto bytes = reply(shared.raw[1], settings(key_of(5)));
  ASSERT_TRUE(bytes);
  auto view = ShardView::parse(*bytes);
  ASSERT_TRUE(view.ok()) << view.error().to_string();
  EXPECT_EQ(view->chunk_key(), key_of(5));
  EXPECT_EQ(view->expiry(), std::optional<std::uint64_t>(kNow + kLifetime));
  std::vector<Hash> expected = hashes_of(forever, {0, 1, 2});
  expected.push_back(expiring.xorbs[0].record.header.xorb_hash);  // after the shared one, once
  EXPECT_EQ(xorb_hashes(*view), expected);
  EXPECT_TRUE(reply_has_chunk(*view, expiring.xorbs[0].raw[2]));
}

TEST_F(GlobalDedupReply, KeyedOnlySourceIsReservedAsStoredUntilItsExpiry) {
  const Key source_key = key_of(7);
  const std::uint64_t source_expiry = kNow + 3600;  // sooner than a reply lifetime
  Upload u = add_shard({61, 62}, 4, source_key, source_expiry);
  auto bytes = reply(u.xorbs[1].raw[2], settings(key_of(4)));
  ASSERT_TRUE(bytes);
  auto view = ShardView::parse(*bytes);
  ASSERT_TRUE(view.ok()) << view.error().to_string();
  EXPECT_EQ(view->chunk_key(), source_key);
  EXPECT_EQ(view->expiry(), std::optional<std::uint64_t>(source_expiry));
  EXPECT_EQ(xorb_hashes(*view), hashes_of(u, {1, 0}));
  for (auto block : view->xorbs())  // stored keyed hashes, unchanged
    EXPECT_EQ(block.chunk(0).chunk_hash, block.hash() == u.xorbs[0].record.header.xorb_hash
                                             ? u.xorbs[0].record.chunks[0].chunk_hash
                                             : u.xorbs[1].record.chunks[0].chunk_hash);
  EXPECT_TRUE(reply_has_chunk(*view, u.xorbs[0].raw[3]));
}

TEST_F(GlobalDedupReply, KeyedSourcesWithDifferentKeysPickTheLongestLived) {
  st::TestXorb shared = st::make_xorb(70, 2);
  add_shard({70, 71}, 2, key_of(10), kNow + 60);
  Upload long_lived = add_shard({72, 70}, 2, key_of(11), kNow + 7200);
  auto bytes = reply(shared.raw[0], settings(key_of(5)));
  ASSERT_TRUE(bytes);
  auto view = ShardView::parse(*bytes);
  ASSERT_TRUE(view.ok()) << view.error().to_string();
  EXPECT_EQ(view->chunk_key(), key_of(11));
  EXPECT_EQ(xorb_hashes(*view), hashes_of(long_lived, {1, 0}));
  EXPECT_EQ(view->expiry(), std::optional<std::uint64_t>(kNow + 7200));
}

TEST_F(GlobalDedupReply, RemovedShardsAreNotServed) {
  Upload u = add_shard({81, 82}, 3);
  ASSERT_TRUE(reply(u.xorbs[0].raw[0], settings(key_of(6))));
  auto removed = index_->remove(u.shard, kNow);
  ASSERT_TRUE(removed.ok()) << removed.error().to_string();
  EXPECT_FALSE(reply(u.xorbs[0].raw[0], settings(key_of(6))).has_value());
}

// Issue 41: a query naming its CAS is answered only by shards of that CAS
// (and of unknown CAS where the operator allows it): another CAS's shard
// would have the client skip xorbs its CAS lacks.
TEST_F(GlobalDedupReply, AQueryNamingItsCasIsAnsweredOnlyByShardsOfThatCas) {
  const std::string cas_a = "https://cas-a.example", cas_b = "https://cas-b.example";
  Upload a = add_shard({91, 92}, 3, Key{}, std::nullopt, kNow - 100, cas_a);
  Upload b = add_shard({93}, 3, Key{}, std::nullopt, kNow - 90, cas_b);
  Upload unknown = add_shard({94}, 3, Key{}, std::nullopt, kNow - 80);
  // The same xorb in a shard of each CAS: each answers its own.
  Upload shared_b = add_shard({91}, 3, Key{}, std::nullopt, kNow - 70, cas_b);
  auto scoped = [&](const std::string& cas, bool unknown_too) {
    ReplySettings s = settings(key_of(7));
    s.scope = shard::CasScope{cas, unknown_too};
    return s;
  };
  auto xorbs_of = [](const std::optional<std::vector<std::uint8_t>>& r) {
    auto view = ShardView::parse(*r);
    EXPECT_TRUE(view.ok());
    return view.ok() ? xorb_hashes(*view) : std::vector<Hash>{};
  };
  // No scope (dedupctl, scripts): any shard, as before.
  EXPECT_TRUE(reply(b.xorbs[0].raw[0], settings(key_of(7))));
  EXPECT_TRUE(reply(unknown.xorbs[0].raw[0], settings(key_of(7))));
  // CAS A: its own shard, whole; never B's, nor unknown ones.
  auto ra = reply(a.xorbs[0].raw[1], scoped(cas_a, false));
  ASSERT_TRUE(ra);
  EXPECT_EQ(xorbs_of(ra), hashes_of(a, {0, 1}));
  EXPECT_FALSE(reply(b.xorbs[0].raw[1], scoped(cas_a, false)));
  EXPECT_FALSE(reply(unknown.xorbs[0].raw[1], scoped(cas_a, false)));
  // CAS B asking for the shared xorb gets B's shard, not A's two xorbs.
  auto rb = reply(a.xorbs[0].raw[1], scoped(cas_b, false));
  ASSERT_TRUE(rb);
  EXPECT_EQ(xorbs_of(rb), hashes_of(shared_b, {0}));
  // Unknown shards answer only where allowed.
  EXPECT_TRUE(reply(unknown.xorbs[0].raw[1], scoped(cas_a, true)));
  EXPECT_FALSE(reply(b.xorbs[0].raw[1], scoped(cas_a, true)));
}

TEST_F(GlobalDedupReply, ASetAsideShardAnswersNoQuery) {
  Upload u = add_shard({95}, 3, Key{}, std::nullopt, kNow - 100, "https://cas-a.example");
  ASSERT_TRUE(reply(u.xorbs[0].raw[0], settings(key_of(8))));
  ASSERT_TRUE(index_->set_aside(u.shard, "the CAS refused it", kNow));
  EXPECT_FALSE(reply(u.xorbs[0].raw[0], settings(key_of(8))));
  ReplySettings s = settings(key_of(8));
  s.scope = shard::CasScope{"https://cas-a.example", true};
  EXPECT_FALSE(reply(u.xorbs[0].raw[0], s));
  ASSERT_TRUE(index_->restore(u.shard));
  EXPECT_TRUE(reply(u.xorbs[0].raw[0], s));
}

// The real server shard as the only source: the known raw chunk of xorb #1
// is findable in the reply with the reply's key (FORMAT-NOTES, keyed hashes).
TEST_F(GlobalDedupReply, RealServerShardAsKeyedSource) {
  std::vector<std::uint8_t> fixture = st::fixture_bytes();
  auto src = ShardView::parse(fixture);
  ASSERT_TRUE(src.ok()) << src.error().to_string();
  index::IngestOptions io;
  io.now = src->creation_timestamp();  // inside the fixture's lifetime
  ASSERT_TRUE(index_->ingest(*src, index::SourceInfo{}, io).ok());
  auto raw = Hash::parse("9502eec19d4b0c9f7b389228fa801f68ecdf15d69ccd1da2f9ddbd0219898335");
  ASSERT_TRUE(raw.ok());

  ReplySettings s{key_of(6), src->creation_timestamp(), kLifetime, {}};
  auto bytes = reply(*raw, s);
  ASSERT_TRUE(bytes);
  auto view = ShardView::parse(*bytes);
  ASSERT_TRUE(view.ok()) << view.error().to_string();
  EXPECT_EQ(view->chunk_key(), src->chunk_key());
  EXPECT_EQ(view->stats().xorbs, src->stats().xorbs);
  auto second = *std::next(src->xorbs().begin());  // xorb #1 holds the chunk
  EXPECT_EQ(xorb_hashes(*view).front(), second.hash());
  EXPECT_TRUE(reply_has_chunk(*view, *raw));
  EXPECT_EQ(view->expiry(), src->expiry());
}

// ---- a chunk answered from the fleet's stored CAS blocks -------------------

std::vector<std::uint8_t> cas_block_of(const shard::XorbRecord& rec) {
  shard::ShardWriter w;
  w.add_xorb(rec);
  auto bytes = w.write({});
  auto view = ShardView::parse(bytes);
  EXPECT_TRUE(view.ok());
  for (auto block : view->xorbs()) return {block.raw().begin(), block.raw().end()};
  return {};
}

fleet::ShardXorb fleet_xorb(const st::TestXorb& x) { return {x.record.header.xorb_hash, cas_block_of(x.record)}; }

TEST(GlobalDedupFleetReply, ARawSourceShardIsRekeyedWithTheReplyKeyInTheFleetsOrder) {
  st::TestXorb own = st::make_xorb(71, 5), after = st::make_xorb(72, 3), before = st::make_xorb(73, 2);
  fleet::ShardXorbs source{
      st::seeded_hash(4242), std::nullopt, std::nullopt, {fleet_xorb(own), fleet_xorb(after), fleet_xorb(before)}};
  const Key key = key_of(2);

  auto bytes = build_fleet_global_dedup_reply(source, settings(key));
  ASSERT_TRUE(bytes);
  auto view = ShardView::parse(*bytes);
  ASSERT_TRUE(view.ok()) << view.error().to_string();
  EXPECT_EQ(view->chunk_key(), key);
  EXPECT_EQ(view->expiry(), std::optional<std::uint64_t>(kNow + kLifetime));
  EXPECT_EQ(view->stats().files, 0u);
  EXPECT_EQ(xorb_hashes(*view), (std::vector<Hash>{own.record.header.xorb_hash, after.record.header.xorb_hash,
                                                   before.record.header.xorb_hash}));
  EXPECT_EQ(bytes->size(), kReplyFramingBytes + xorb_block_bytes(5) + xorb_block_bytes(3) + xorb_block_bytes(2));
  EXPECT_TRUE(reply_has_chunk(*view, own.raw[3]));
  EXPECT_TRUE(reply_has_chunk(*view, before.raw[1]));

  // The bounds hold as for local sources, whatever the fleet sent: the
  // chunk's own xorb always goes in.
  auto one = build_fleet_global_dedup_reply(source, settings(key, {.max_xorbs = 1, .max_bytes = 1}));
  ASSERT_TRUE(one);
  auto one_view = ShardView::parse(*one);
  ASSERT_TRUE(one_view.ok());
  EXPECT_EQ(xorb_hashes(*one_view), (std::vector<Hash>{own.record.header.xorb_hash}));
  ReplyBounds two_blocks{.max_xorbs = 10, .max_bytes = kReplyFramingBytes + xorb_block_bytes(5) + xorb_block_bytes(3)};
  EXPECT_EQ(answers::fleet_source_bounds(two_blocks).max_block_bytes, xorb_block_bytes(5) + xorb_block_bytes(3));
  EXPECT_EQ(answers::fleet_source_bounds(ReplyBounds{}).max_block_bytes, kFleetReplyMaxBlockBytes)
      << "what crosses the network within the fleet bound";
  EXPECT_EQ(answers::fleet_source_bounds(ReplyBounds{}).max_xorbs, ReplyBounds{}.max_xorbs);
  auto two = build_fleet_global_dedup_reply(source, settings(key, two_blocks));
  ASSERT_TRUE(two);
  EXPECT_EQ(two->size(), two_blocks.max_bytes);

  EXPECT_FALSE(build_fleet_global_dedup_reply(fleet::ShardXorbs{}, settings(key)).has_value()) << "no xorb";
}

// The local Xet endpoint's answers expire as they are made (reply_expiry 0 by
// default): the fleet's answer is one too, not none. Through 0.2.0 it
// was dropped as expired, so no endpoint client ever got a fleet hit.
TEST(GlobalDedupFleetReply, AnAnswerThatExpiresAsItIsMadeIsStillMade) {
  st::TestXorb own = st::make_xorb(75, 4);
  fleet::ShardXorbs source{st::seeded_hash(4244), std::nullopt, std::nullopt, {fleet_xorb(own)}};
  ReplySettings at_once{key_of(2), kNow, 0, {}};
  auto bytes = build_fleet_global_dedup_reply(source, at_once);
  ASSERT_TRUE(bytes) << "a raw source with reply lifetime 0";
  auto view = ShardView::parse(*bytes);
  ASSERT_TRUE(view.ok()) << view.error().to_string();
  EXPECT_EQ(view->expiry(), std::optional<std::uint64_t>(kNow));
  EXPECT_TRUE(reply_has_chunk(*view, own.raw[1]));

  const Key stored_key = key_of(9);
  fleet::ShardXorbs keyed{st::seeded_hash(4245), stored_key, kNow + 60, {fleet_xorb(st::make_xorb(76, 3, stored_key))}};
  auto keyed_bytes = build_fleet_global_dedup_reply(keyed, at_once);
  ASSERT_TRUE(keyed_bytes) << "a keyed source still live";
  EXPECT_EQ(ShardView::parse(*keyed_bytes)->expiry(), std::optional<std::uint64_t>(kNow));
  keyed.expiry = kNow;
  EXPECT_FALSE(build_fleet_global_dedup_reply(keyed, at_once).has_value()) << "a keyed source expired";
}

TEST(GlobalDedupFleetReply, AKeyedSourceShardIsServedAsStoredForNoLongerThanItsExpiry) {
  const Key stored_key = key_of(9);
  st::TestXorb own = st::make_xorb(74, 4, stored_key);
  fleet::ShardXorbs source{st::seeded_hash(4243), stored_key, kNow + 60, {fleet_xorb(own)}};

  auto bytes = build_fleet_global_dedup_reply(source, settings(key_of(2)));
  ASSERT_TRUE(bytes);
  auto view = ShardView::parse(*bytes);
  ASSERT_TRUE(view.ok()) << view.error().to_string();
  EXPECT_EQ(view->chunk_key(), stored_key) << "not re-keyed: the raw hashes are not known";
  EXPECT_EQ(view->expiry(), std::optional<std::uint64_t>(kNow + 60));
  EXPECT_TRUE(reply_has_chunk(*view, own.raw[2])) << "the client's keyed hash matches the stored one";

  source.expiry = kNow + 10 * kLifetime;
  view = ShardView::parse(build_fleet_global_dedup_reply(source, settings(key_of(2))).value());
  ASSERT_TRUE(view.ok());
  EXPECT_EQ(view->expiry(), std::optional<std::uint64_t>(kNow + kLifetime)) << "no longer than a reply lives";
  source.expiry = std::nullopt;
  view = ShardView::parse(build_fleet_global_dedup_reply(source, settings(key_of(2))).value());
  ASSERT_TRUE(view.ok());
  EXPECT_EQ(view->expiry(), std::optional<std::uint64_t>(kNow + kLifetime));
  source.expiry = kNow;
  EXPECT_FALSE(build_fleet_global_dedup_reply(source, settings(key_of(2))).has_value()) << "expired: no reply";
}

}  // namespace
}  // namespace dedupd::daemon::api::http
