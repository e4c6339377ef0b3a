// The Xet global-dedup endpoint as a Xet client would use it.
#include "harness/daemon_test.hpp"
#include "harness/make_shard.hpp"
#include "shard/keys.hpp"
#include "shard/reader.hpp"

namespace dedupd::itest {
namespace {

using GlobalDedup = DaemonTest;

shard::Key reply_key(const std::string& body, const shard::Hash& xorb, const shard::Hash& raw_chunk) {
  std::span<const std::uint8_t> bytes(reinterpret_cast<const std::uint8_t*>(body.data()), body.size());
  auto view = shard::ShardView::parse(bytes);
  EXPECT_TRUE(view.ok()) << (view.ok() ? "" : view.error().to_string());
  if (!view) return {};
  EXPECT_TRUE(view->has_footer());
  EXPECT_TRUE(view->keyed());
  EXPECT_TRUE(view->files().empty());
  EXPECT_TRUE(view->expiry().has_value());
  shard::Hash keyed = shard::keyed_chunk_hash(view->chunk_key(), raw_chunk);
  bool xorb_found = false, chunk_found = false;
  for (auto x : view->xorbs()) {
    if (x.hash() != xorb) continue;
    xorb_found = true;
    for (std::size_t i = 0; i < x.num_chunks(); ++i) chunk_found |= x.chunk(i).chunk_hash == keyed;
  }
  EXPECT_TRUE(xorb_found);
  EXPECT_TRUE(chunk_found);
  return view->chunk_key();
}

TEST_F(GlobalDedup, ReplyIsAKeyedShardHoldingTheChunksXorb) {
  start();
  auto shard = make_shard({.seed = 61, .xorbs = 3, .chunks_per_xorb = 8});
  drop_file(incoming, shard.file_name(), shard.bytes);
  std::string chunk = shard.first_chunks[1].to_string();
  ASSERT_TRUE(eventually([&] { return chunk_found(chunk); }));

  auto r = http().get("/v1/chunks/default-merkledb/" + chunk);
  ASSERT_EQ(r.status, 200) << r.body;
  auto key = reply_key(r.body, shard.xorbs[1], shard.first_chunks[1]);
  auto short_prefix = http().get("/v1/chunks/default/" + chunk);
  ASSERT_EQ(short_prefix.status, 200);
  EXPECT_EQ(reply_key(short_prefix.body, shard.xorbs[1], shard.first_chunks[1]), key);

  EXPECT_EQ(http().get("/v1/chunks/default-merkledb/" + std::string(64, '0')).status, 404);
  EXPECT_EQ(http().get("/v1/chunks/default-merkledb/nothex").status, 400);

  // The key lives in the state directory: a restart keeps it.
  EXPECT_EQ(daemon.stop(), 0);
  start();
  auto again = http().get("/v1/chunks/default-merkledb/" + chunk);
  ASSERT_EQ(again.status, 200);
  EXPECT_EQ(reply_key(again.body, shard.xorbs[1], shard.first_chunks[1]), key);
}

}  // namespace
}  // namespace dedupd::itest
