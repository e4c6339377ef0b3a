// The documents of docs/API.md built from index values (daemon/api/render/
// json_shapes), each field checked as a client reads it: locations and their
// shard references (CAS and set-aside said only when known), shard and
// rejected-file summaries, the stats, a xorb form and a file.
#include "daemon/api/render/json_shapes.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "daemon/api/render/json_out.hpp"

namespace dedupd::daemon::api::render {
namespace {

shard::Hash filled(std::uint8_t b) {
  shard::Hash h;
  h.bytes.fill(b);
  return h;
}

index::ShardRef plain_ref() { return index::ShardRef{filled(1), std::nullopt, false, {}, {}, false}; }

index::ShardRef scoped_ref() {
  return index::ShardRef{filled(2), 1'800'000'000ull, true, filled(9), "https://cas.example", true};
}

Json written(auto&& write) {
  std::string out;
  JsonOut o(out);
  write(o);
  return Json::parse(out);
}

TEST(JsonShapes, AShardReferenceSaysItsCasAndSetAsideOnlyWhenKnown) {
  EXPECT_EQ(shard_ref_json(plain_ref()),
            Json({{"shard", filled(1).to_string()}, {"expiry", nullptr}, {"keyed", false}}));
  EXPECT_EQ(shard_ref_json(scoped_ref()), Json({{"shard", filled(2).to_string()},
                                                {"expiry", 1'800'000'000ull},
                                                {"keyed", true},
                                                {"cas", "https://cas.example"},
                                                {"set_aside", true}}));
  // The streamed writer gives the same objects as the document one.
  const Json refs = written([](JsonOut& o) { write_shard_refs(o, {plain_ref(), scoped_ref()}); });
  EXPECT_EQ(refs, Json::array({shard_ref_json(plain_ref()), shard_ref_json(scoped_ref())}));
  EXPECT_EQ(written([](JsonOut& o) { write_shard_refs(o, {}); }), Json::array());
}

TEST(JsonShapes, ALocationHasItsPlaceItsOriginAndItsShards) {
  index::Location loc;
  loc.xorb = filled(0xAB);
  loc.chunk_index = 3;
  loc.byte_start = 100;
  loc.byte_end = 250;
  loc.unpacked_bytes = 150;
  loc.flags = 0x80000000u;
  loc.shards = {plain_ref(), scoped_ref()};
  const Json expected = {{"xorb", filled(0xAB).to_string()},
                         {"chunk_index", 3},
                         {"byte_start", 100},
                         {"byte_end", 250},
                         {"unpacked_bytes", 150},
                         {"flags", 0x80000000u},
                         {"origin", "local"},
                         {"shards", Json::array({shard_ref_json(plain_ref()), shard_ref_json(scoped_ref())})}};
  EXPECT_EQ(written([&](JsonOut& o) { write_location(o, loc); }), expected);
  index::BatchLocation batch;
  static_cast<shard::ChunkPlace&>(batch) = loc;
  EXPECT_EQ(written([&](JsonOut& o) { write_location(o, batch, loc.shards); }), expected);
}

TEST(JsonShapes, AShardSummaryHasEveryFieldNullWhenUnknown) {
  index::ShardInfo info;
  info.hash = filled(4);
  info.state = index::ShardState::expired;
  info.paths = {"/srv/a.mdb", "/srv/b.mdb"};
  info.size = 102104;
  info.xorbs = 3;
  info.chunks = 2117;
  info.ingested_at = 1754100000;
  const Json bare = shard_summary(info);
  EXPECT_EQ(bare["hash"], filled(4).to_string());
  EXPECT_EQ(bare["state"], "expired");
  EXPECT_EQ(bare["paths"], Json::array({"/srv/a.mdb", "/srv/b.mdb"}));
  EXPECT_EQ(bare["size"], 102104);
  EXPECT_TRUE(bare["created"].is_null());
  EXPECT_TRUE(bare["expiry"].is_null());
  EXPECT_EQ(bare["keyed"], false);
  EXPECT_EQ(bare["xorbs"], 3);
  EXPECT_EQ(bare["chunks"], 2117);
  EXPECT_EQ(bare["files"], 0);
  EXPECT_EQ(bare["ingested_at"], 1754100000);
  EXPECT_TRUE(bare["cas"].is_null());
  EXPECT_TRUE(bare["set_aside"].is_null());
  EXPECT_FALSE(bare.contains("reason")) << "only rejected files have one";

  info.created = 1754059905;
  info.expiry = 1754664705;
  info.keyed = true;
  info.cas = "https://cas.example";
  info.set_aside = true;
  info.set_aside_at = 1754200000;
  info.set_aside_reason = "refused shard R";
  const Json full = shard_summary(info);
  EXPECT_EQ(full["created"], 1754059905);
  EXPECT_EQ(full["expiry"], 1754664705);
  EXPECT_EQ(full["keyed"], true);
  EXPECT_EQ(full["cas"], "https://cas.example");
  EXPECT_EQ(full["set_aside"], Json({{"at", 1754200000}, {"reason", "refused shard R"}}));
}

TEST(JsonShapes, ARejectedFileIsASummaryWithItsReason) {
  index::RejectInfo r;
  r.path = "/srv/bad.mdb";
  r.size = 10;
  r.rule = "header.magic";
  r.offset = 0;
  r.message = "not a shard";
  r.recorded_at = 1754100000;
  Json j = rejected_summary(r);
  EXPECT_TRUE(j["hash"].is_null()) << "its content hash was not computed";
  EXPECT_EQ(j["state"], "rejected");
  EXPECT_EQ(j["paths"], Json::array({"/srv/bad.mdb"}));
  EXPECT_EQ(j["size"], 10);
  EXPECT_EQ(j["ingested_at"], 1754100000);
  EXPECT_EQ(j["reason"], Json({{"rule", "header.magic"}, {"offset", 0}, {"message", "not a shard"}}));
  // Same fields as a shard's summary, so a client reads both alike.
  const Json summary = shard_summary(index::ShardInfo{});
  for (const auto& [key, value] : summary.items()) EXPECT_TRUE(j.contains(key)) << key;
  r.content_hash = filled(5);
  EXPECT_EQ(rejected_summary(r)["hash"], filled(5).to_string());
}

TEST(JsonShapes, TheStatsAndTheChunkFilter) {
  index::Stats s;
  s.shards_live = 1;
  s.shards_expired = 2;
  s.shards_removed = 3;
  s.rejected = 4;
  s.xorbs = 5;
  s.chunk_entries = 6;
  s.files = 7;
  s.keys = 8;
  s.db_bytes = 9;
  s.map_size = 10;
  s.map_used = 11;
  s.chunk_filter.in_service = true;
  s.chunk_filter.bytes = 12;
  s.chunk_filter.max_bytes = 13;
  s.chunk_filter.capacity = 14;
  s.chunk_filter.added = 15;
  s.chunk_filter.false_positive_rate = 0.25;
  const Json j = stats_json(s);
  EXPECT_EQ(j["shards"], Json({{"live", 1}, {"expired", 2}, {"removed", 3}, {"rejected", 4}}));
  EXPECT_EQ(j["xorbs"], 5);
  EXPECT_EQ(j["chunks"], 6);
  EXPECT_EQ(j["files"], 7);
  EXPECT_EQ(j["keys"], 8);
  EXPECT_EQ(j["db_bytes"], 9);
  EXPECT_EQ(j["map_size"], 10);
  EXPECT_EQ(j["map_used"], 11);
  EXPECT_TRUE(j["next_expiry"].is_null());
  EXPECT_EQ(j["chunk_filter"], Json({{"in_service", true},
                                     {"bytes", 12},
                                     {"max_bytes", 13},
                                     {"capacity", 14},
                                     {"entries", 15},
                                     {"at_bound", false},
                                     {"false_positive_rate", 0.25}}));
  s.next_expiry = 1754664705;
  EXPECT_EQ(stats_json(s)["next_expiry"], 1754664705);
}

TEST(JsonShapes, AXorbFormListsItsChunksAndShards) {
  index::XorbInfo x;
  x.hash = filled(6);
  x.keyed = true;
  x.header.bytes_in_xorb = 3000;
  x.header.bytes_on_disk = 1500;
  x.chunks = {shard::ChunkEntry{filled(7), 0, 1000, 0, 0}, shard::ChunkEntry{filled(8), 1000, 2000, 1u << 31, 0}};
  x.shards = {scoped_ref()};
  const Json j = xorb_json(x);
  EXPECT_EQ(j["xorb"], filled(6).to_string());
  EXPECT_EQ(j["num_chunks"], 2);
  EXPECT_EQ(j["bytes_in_xorb"], 3000);
  EXPECT_EQ(j["bytes_on_disk"], 1500);
  EXPECT_EQ(j["keyed"], true);
  EXPECT_EQ(j["origin"], "local");
  ASSERT_EQ(j["chunks"].size(), 2u);
  EXPECT_EQ(j["chunks"][1], Json({{"index", 1},
                                  {"hash", filled(8).to_string()},
                                  {"byte_start", 1000},
                                  {"unpacked_bytes", 2000},
                                  {"flags", 1u << 31}}));
  EXPECT_EQ(j["shards"], Json::array({shard_ref_json(scoped_ref())}));
}

TEST(JsonShapes, AFileHasItsTermsSha256AndShards) {
  index::FileInfo f;
  f.hash = filled(10);
  f.size = 3000;
  f.terms = {shard::FileTerm{filled(11), 0, 3000, 0, 3}};
  f.shards = {filled(12), filled(13)};
  Json j = file_json(f);
  EXPECT_EQ(j["file"], filled(10).to_string());
  EXPECT_EQ(j["size"], 3000);
  EXPECT_TRUE(j["sha256"].is_null());
  EXPECT_EQ(j["verification"], false);
  EXPECT_EQ(j["terms"],
            Json::array(
                {{{"xorb", filled(11).to_string()}, {"chunk_start", 0}, {"chunk_end", 3}, {"unpacked_bytes", 3000}}}));
  EXPECT_EQ(j["origin"], "local");
  EXPECT_EQ(j["shards"], Json::array({filled(12).to_string(), filled(13).to_string()}));
  f.sha256 = filled(14);
  f.verification = {filled(15)};
  j = file_json(f);
  EXPECT_EQ(j["sha256"], filled(14).to_string());
  EXPECT_EQ(j["verification"], true);
}

TEST(JsonShapes, UntrustedTextIsDumpedWithoutThrowing) {
  const Json doc = {{"path", std::string("/srv/\xff\xfe.mdb")}};
  std::string out;
  ASSERT_NO_THROW(out = dump(doc));
  EXPECT_EQ(out.rfind("{\"path\":\"/srv/", 0), 0u) << out;
  EXPECT_NE(out.find("\xef\xbf\xbd"), std::string::npos) << "replaced by U+FFFD";
  EXPECT_EQ(dump(Json{{"a", 1}}), "{\"a\":1}");
}

}  // namespace
}  // namespace dedupd::daemon::api::render
