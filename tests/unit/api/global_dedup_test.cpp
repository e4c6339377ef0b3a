// The global-dedup reply must parse as the shard a Xet client expects from
// the Hugging Face server: footer, empty file-info section, the xorbs that
// contain the chunk with hashes keyed by the footer key, and an expiry.
#include "daemon/api/global_dedup.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "shard/reader.hpp"
#include "tests/unit/shard/test_support.hpp"

namespace dedupd::daemon::http {
namespace {

using shard::Hash;
using shard::Key;
using shard::ShardView;
namespace st = shard::testing;

constexpr std::uint64_t kNow = 1'760'000'000;
constexpr std::uint64_t kLifetime = 7 * 24 * 3600;

Key key_of(std::uint64_t seed) { return st::seeded_hash(1000 + seed); }

StoredXorb raw_form(const st::TestXorb& x) { return {x.record, Key{}, std::nullopt}; }

bool reply_has_chunk(const ShardView& view, const Hash& stored) {
  for (auto block : view.xorbs())
    for (std::size_t i = 0; i < block.num_chunks(); ++i)
      if (block.chunk(i).chunk_hash == stored) return true;
  return false;
}

std::vector<Hash> xorb_hashes(const ShardView& view) {
  std::vector<Hash> out;
  for (auto block : view.xorbs()) out.push_back(block.hash());
  return out;
}

TEST(GlobalDedupReply, EmptyInputIsNotFound) {
  EXPECT_FALSE(build_global_dedup_reply({}, {key_of(1), kNow, kLifetime}).has_value());
}

TEST(GlobalDedupReply, RawXorbsAreKeyedWithTheDaemonKeyAsTheServerShapesIt) {
  st::TestXorb a = st::make_xorb(1, 5);
  st::TestXorb b = st::make_xorb(2, 3);
  a.record.header.bytes_on_disk = 4321;  // kept as stored
  std::vector<StoredXorb> forms = {raw_form(a), raw_form(b)};
  const Key key = key_of(1);

  auto bytes = build_global_dedup_reply(forms, {key, kNow, kLifetime});
  ASSERT_TRUE(bytes.has_value());
  auto view = ShardView::parse(*bytes);
  ASSERT_TRUE(view.ok()) << view.error().to_string();

  ASSERT_TRUE(view->has_footer());
  const shard::ShardFooter& f = *view->footer();
  EXPECT_EQ(view->header().footer_size, shard::kFooterSize);
  EXPECT_TRUE(view->keyed());
  EXPECT_EQ(view->chunk_key(), key);
  EXPECT_EQ(f.creation_timestamp, kNow);
  EXPECT_EQ(view->expiry(), std::optional<std::uint64_t>(kNow + kLifetime));
  // Server style: lookup offsets all at the footer, counts 0.
  EXPECT_EQ(f.footer_offset, bytes->size() - shard::kFooterSize);
  for (auto [off, n] : {std::pair{f.file_lookup_offset, f.file_lookup_num_entry},
                        std::pair{f.xorb_lookup_offset, f.xorb_lookup_num_entry},
                        std::pair{f.chunk_lookup_offset, f.chunk_lookup_num_entry}}) {
    EXPECT_EQ(off, f.footer_offset);
    EXPECT_EQ(n, 0u);
  }
  EXPECT_EQ(view->stats().files, 0u);
  EXPECT_EQ(xorb_hashes(*view), (std::vector<Hash>{a.record.header.xorb_hash, b.record.header.xorb_hash}));

  // Every chunk is there under its keyed hash, in order, with its ranges.
  auto blocks = view->xorbs().begin();
  auto first = *blocks;
  EXPECT_EQ(first.header().bytes_on_disk, 4321u);
  EXPECT_EQ(first.header().bytes_in_xorb, a.record.header.bytes_in_xorb);
  ASSERT_EQ(first.num_chunks(), a.raw.size());
  for (std::size_t i = 0; i < a.raw.size(); ++i) {
    EXPECT_EQ(first.chunk(i).chunk_hash, shard::keyed_chunk_hash(key, a.raw[i]));
    EXPECT_EQ(first.chunk(i).byte_start, a.record.chunks[i].byte_start);
    EXPECT_EQ(first.chunk(i).unpacked_bytes, a.record.chunks[i].unpacked_bytes);
    EXPECT_EQ(first.chunk(i).flags, a.record.chunks[i].flags);
  }
  EXPECT_EQ(f.stored_bytes_on_disk, 4321u + b.record.header.bytes_on_disk);
}

TEST(GlobalDedupReply, TheSameXorbStoredTwiceIsOneBlock) {
  st::TestXorb a = st::make_xorb(3, 4);
  std::vector<StoredXorb> forms = {raw_form(a), raw_form(a)};
  auto bytes = build_global_dedup_reply(forms, {key_of(2), kNow, kLifetime});
  ASSERT_TRUE(bytes);
  auto view = ShardView::parse(*bytes);
  ASSERT_TRUE(view.ok()) << view.error().to_string();
  EXPECT_EQ(view->stats().xorbs, 1u);
}

TEST(GlobalDedupReply, RawFormsWinOverKeyedOnes) {
  st::TestXorb raw = st::make_xorb(4, 3);
  st::TestXorb keyed = st::make_xorb(5, 3, key_of(9));
  std::vector<StoredXorb> forms = {{keyed.record, key_of(9), kNow + 10}, raw_form(raw)};
  auto bytes = build_global_dedup_reply(forms, {key_of(3), kNow, kLifetime});
  ASSERT_TRUE(bytes);
  auto view = ShardView::parse(*bytes);
  ASSERT_TRUE(view.ok()) << view.error().to_string();
  EXPECT_EQ(view->chunk_key(), key_of(3));
  EXPECT_EQ(xorb_hashes(*view), std::vector<Hash>{raw.record.header.xorb_hash});
  EXPECT_EQ(view->expiry(), std::optional<std::uint64_t>(kNow + kLifetime));
}

TEST(GlobalDedupReply, KeyedOnlySourceIsReservedAsStoredUntilItsExpiry) {
  const Key source_key = key_of(7);
  st::TestXorb x = st::make_xorb(6, 4, source_key);
  const std::uint64_t source_expiry = kNow + 3600;  // sooner than a reply lifetime
  std::vector<StoredXorb> forms = {{x.record, source_key, source_expiry}};
  auto bytes = build_global_dedup_reply(forms, {key_of(4), kNow, kLifetime});
  ASSERT_TRUE(bytes);
  auto view = ShardView::parse(*bytes);
  ASSERT_TRUE(view.ok()) << view.error().to_string();
  EXPECT_EQ(view->chunk_key(), source_key);
  EXPECT_EQ(view->expiry(), std::optional<std::uint64_t>(source_expiry));
  // A client keys its raw hash with the footer key and finds it.
  EXPECT_TRUE(reply_has_chunk(*view, shard::keyed_chunk_hash(view->chunk_key(), x.raw[2])));
}

TEST(GlobalDedupReply, KeyedSourcesWithDifferentKeysPickTheLongestLived) {
  st::TestXorb short_lived = st::make_xorb(7, 2, key_of(10));
  st::TestXorb long_lived = st::make_xorb(8, 2, key_of(11));
  std::vector<StoredXorb> forms = {{short_lived.record, key_of(10), kNow + 60},
                                   {long_lived.record, key_of(11), kNow + 7200}};
  auto bytes = build_global_dedup_reply(forms, {key_of(5), kNow, kLifetime});
  ASSERT_TRUE(bytes);
  auto view = ShardView::parse(*bytes);
  ASSERT_TRUE(view.ok()) << view.error().to_string();
  EXPECT_EQ(view->chunk_key(), key_of(11));
  EXPECT_EQ(xorb_hashes(*view), std::vector<Hash>{long_lived.record.header.xorb_hash});
  EXPECT_EQ(view->expiry(), std::optional<std::uint64_t>(kNow + 7200));
}

// The real server shard as the only source: the known raw chunk of xorb #1
// is findable in the reply with the reply's key (FORMAT-NOTES, keyed hashes).
TEST(GlobalDedupReply, RealServerShardAsKeyedSource) {
  std::vector<std::uint8_t> fixture = st::fixture_bytes();
  auto src = ShardView::parse(fixture);
  ASSERT_TRUE(src.ok()) << src.error().to_string();
  auto raw = Hash::parse("9502eec19d4b0c9f7b389228fa801f68ecdf15d69ccd1da2f9ddbd0219898335");
  ASSERT_TRUE(raw.ok());

  std::vector<StoredXorb> forms;
  auto it = src->xorbs().begin();
  ++it;  // xorb #1 holds the chunk
  auto block = *it;
  shard::XorbRecord rec{block.header(), {}};
  for (std::size_t i = 0; i < block.num_chunks(); ++i) rec.chunks.push_back(block.chunk(i));
  forms.push_back({rec, src->chunk_key(), src->expiry()});

  // "now" inside the fixture's lifetime.
  auto bytes = build_global_dedup_reply(forms, {key_of(6), src->creation_timestamp(), kLifetime});
  ASSERT_TRUE(bytes);
  auto view = ShardView::parse(*bytes);
  ASSERT_TRUE(view.ok()) << view.error().to_string();
  EXPECT_EQ(xorb_hashes(*view), std::vector<Hash>{block.hash()});
  EXPECT_TRUE(reply_has_chunk(*view, shard::keyed_chunk_hash(view->chunk_key(), *raw)));
  EXPECT_EQ(view->expiry(), src->expiry());
}

}  // namespace
}  // namespace dedupd::daemon::http
