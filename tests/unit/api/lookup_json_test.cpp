// The documents of the single lookups (daemon/api/render/lookup_json), each
// from its typed answer: a chunk found here or in the fleet, or not found
// with the expired shards that held it; a xorb's primary form first and the
// others after it; a file and a sha256, local or the fleet's; a 404 body that
// says whether the fleet was asked.
#include "daemon/api/render/lookup_json.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "daemon/api/render/json_shapes.hpp"

namespace dedupd::daemon::api::render {
namespace {

using answers::Reach;

shard::Hash byte_hash(std::uint8_t b) {
  shard::Hash h;
  h.bytes.fill(b);
  return h;
}

index::Location local_location() {
  index::Location l;
  l.xorb = byte_hash(0x10);
  l.chunk_index = 1;
  l.byte_end = 100;
  l.unpacked_bytes = 100;
  l.shards = {index::ShardRef{byte_hash(0x11), std::nullopt, false, {}, {}, false}};
  return l;
}

TEST(LookupJson, AChunkFoundHereHasItsLocationsAndNoError) {
  answers::ChunkAnswer a;
  a.local = {local_location()};
  const Json j = Json::parse(chunk_json(byte_hash(1), a));
  EXPECT_EQ(j["hash"], byte_hash(1).to_string());
  EXPECT_EQ(j["found"], true);
  ASSERT_EQ(j["locations"].size(), 1u);
  EXPECT_EQ(j["locations"][0]["origin"], "local");
  EXPECT_FALSE(j.contains("fleet")) << "no fleet, nothing said of one";
  EXPECT_FALSE(j.contains("error"));
  EXPECT_FALSE(j.contains("expired_shards"));
}

TEST(LookupJson, AChunkTheFleetFoundIsMarkedSo) {
  answers::ChunkAnswer a;
  a.remote.reach = Reach::answered;
  a.remote.queries = {0};
  fleet::ChunkLocation loc;
  loc.xorb = byte_hash(0x20);
  loc.shard_set = 0;
  a.remote.answers.first = {0, 1};
  a.remote.answers.locations = {loc};
  a.remote.answers.shard_sets = {{fleet::FleetShardRef{byte_hash(0x21), {"web-1"}, ""}}};
  const Json j = Json::parse(chunk_json(byte_hash(2), a));
  EXPECT_EQ(j["found"], true);
  EXPECT_EQ(j["fleet"], "ok");
  ASSERT_EQ(j["locations"].size(), 1u);
  EXPECT_EQ(j["locations"][0]["origin"], "fleet");
  EXPECT_EQ(j["locations"][0]["shards"][0]["holders"], Json::array({"web-1"}));
}

TEST(LookupJson, NotFoundSaysWhyWithTheLookupsShape) {
  answers::ChunkAnswer none;
  none.remote.reach = Reach::unavailable;
  Json j = Json::parse(chunk_json(byte_hash(3), none));
  EXPECT_EQ(j["found"], false);
  EXPECT_EQ(j["locations"], Json::array());
  EXPECT_EQ(j["fleet"], "unavailable");
  EXPECT_EQ(j["expired_shards"], Json::array());
  EXPECT_EQ(j["error"], Json({{"code", "not_found"}, {"message", "chunk not in the index"}}));

  answers::ChunkAnswer expired;
  index::ShardInfo gone;
  gone.hash = byte_hash(4);
  gone.keyed = true;
  gone.expiry = 1754664705;
  gone.ended_at = 1754664800;
  expired.expired = {gone};
  j = Json::parse(chunk_json(byte_hash(3), expired));
  EXPECT_EQ(j["expired_shards"], Json::array({{{"shard", byte_hash(4).to_string()},
                                               {"keyed", true},
                                               {"expiry", 1754664705},
                                               {"expired_at", 1754664800}}}));
  EXPECT_EQ(j["error"]["message"], "every shard that held this chunk has expired");
}

TEST(LookupJson, AXorbsPrimaryFormComesFirstTheOthersAfter) {
  answers::XorbAnswer a;
  index::XorbInfo keyed, raw;
  keyed.hash = raw.hash = byte_hash(5);
  keyed.keyed = true;
  a.local = {keyed, raw};
  a.primary = 1;
  Json j = xorb_answer_json(a);
  EXPECT_EQ(j["keyed"], false);
  ASSERT_EQ(j["other_forms"].size(), 1u);
  EXPECT_EQ(j["other_forms"][0]["keyed"], true);
  a.local = {raw};
  a.primary = 0;
  j = xorb_answer_json(a);
  EXPECT_FALSE(j.contains("other_forms")) << "one form, no list";
  EXPECT_FALSE(j.contains("fleet"));

  answers::XorbAnswer remote;
  remote.reach = Reach::answered;
  remote.remote = fleet::XorbAnswer{byte_hash(6), {fleet::XorbForm{}, fleet::XorbForm{true, {}, {}, {}}}};
  remote.primary = 0;
  j = xorb_answer_json(remote);
  EXPECT_EQ(j["origin"], "fleet");
  EXPECT_EQ(j["fleet"], "ok");
  EXPECT_EQ(j["other_forms"].size(), 1u);
}

TEST(LookupJson, AFileAndASha256LocalOrTheFleets) {
  answers::FileAnswer local;
  index::FileInfo f;
  f.hash = byte_hash(7);
  local.local = f;
  local.reach = Reach::answered;
  Json j = file_answer_json(local);
  EXPECT_EQ(j["origin"], "local");
  EXPECT_FALSE(j.contains("fleet")) << "found here: the fleet was not asked";

  answers::FileAnswer remote;
  remote.remote = fleet::FileAnswer{byte_hash(8), {}, std::nullopt, {}};
  remote.reach = Reach::answered;
  j = file_answer_json(remote);
  EXPECT_EQ(j["origin"], "fleet");
  EXPECT_EQ(j["fleet"], "ok");

  answers::Sha256Answer sha;
  sha.files = {byte_hash(9)};
  j = sha256_answer_json(byte_hash(10), sha);
  EXPECT_EQ(j, Json({{"sha256", byte_hash(10).to_string()}, {"files", {byte_hash(9).to_string()}}}));
  sha.from_fleet = true;
  sha.reach = Reach::answered;
  j = sha256_answer_json(byte_hash(10), sha);
  EXPECT_EQ(j["origin"], "fleet");
  EXPECT_EQ(j["fleet"], "ok");
  answers::Sha256Answer none;
  none.reach = Reach::unavailable;
  j = sha256_answer_json(byte_hash(10), none);
  EXPECT_EQ(j["files"], Json::array());
  EXPECT_EQ(j["error"], Json({{"code", "not_found"}, {"message", "no file with this sha256"}}));
  EXPECT_EQ(j["fleet"], "unavailable");
}

TEST(LookupJson, ANotFoundBodySaysWhetherTheFleetCouldAnswer) {
  EXPECT_EQ(not_found_json(Reach::off, "xorb not in the index"),
            Json({{"error", {{"code", "not_found"}, {"message", "xorb not in the index"}}}}));
  EXPECT_EQ(not_found_json(Reach::unavailable, "x")["fleet"], "unavailable");
  EXPECT_EQ(not_found_json(Reach::answered, "x")["fleet"], "ok");
}

}  // namespace
}  // namespace dedupd::daemon::api::render
