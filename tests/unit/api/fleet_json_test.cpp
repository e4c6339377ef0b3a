// The fleet half of answers in JSON (daemon/api/render/fleet_json): the
// fleet's reach said only with a fleet, a fleet location with its holders,
// a xorb form and a file read from the blocks the publishing shard stored
// (only what fits in them), and the publisher's state for /v1/status.
#include "daemon/api/render/fleet_json.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "daemon/api/render/json_out.hpp"
#include "shard/format.hpp"

namespace dedupd::daemon::api::render {
namespace {

using fleet_link::Reach;

shard::Hash of_byte(std::uint8_t b) {
  shard::Hash h;
  h.bytes.fill(b);
  return h;
}

std::vector<std::uint8_t> entries(std::size_t n) { return std::vector<std::uint8_t>(shard::kEntrySize * n); }

TEST(FleetJson, TheReachIsSaidOnlyWithAFleet) {
  auto reach = [](Reach r) {
    std::string out = "{\"a\":1";
    JsonOut o(out);
    write_fleet_reach(o, r);
    return out + "}";
  };
  EXPECT_EQ(reach(Reach::off), "{\"a\":1}");
  EXPECT_EQ(reach(Reach::answered), "{\"a\":1,\"fleet\":\"ok\"}");
  EXPECT_EQ(reach(Reach::unavailable), "{\"a\":1,\"fleet\":\"unavailable\"}");
  Json doc = {{"a", 1}};
  mark_fleet(doc, Reach::off);
  EXPECT_FALSE(doc.contains("fleet"));
  mark_fleet(doc, Reach::unavailable);
  EXPECT_EQ(doc["fleet"], "unavailable");
  mark_fleet(doc, Reach::answered);
  EXPECT_EQ(doc["fleet"], "ok");
}

TEST(FleetJson, AFleetLocationNamesItsShardsHoldersAndCas) {
  fleet::ChunkLocation loc;
  loc.xorb = of_byte(0xAB);
  loc.chunk_index = 4;
  loc.byte_start = 10;
  loc.byte_end = 30;
  loc.unpacked_bytes = 20;
  loc.keyed = true;
  const std::vector<fleet::FleetShardRef> shards = {{of_byte(1), {"web-1", "web-2"}, ""},
                                                    {of_byte(2), {}, "https://cas.example/\"odd\""}};
  std::string out;
  JsonOut o(out);
  write_fleet_location(o, loc, shards);
  const Json j = Json::parse(out);
  EXPECT_EQ(j["xorb"], of_byte(0xAB).to_string());
  EXPECT_EQ(j["chunk_index"], 4);
  EXPECT_EQ(j["byte_start"], 10);
  EXPECT_EQ(j["byte_end"], 30);
  EXPECT_EQ(j["origin"], "fleet");
  EXPECT_EQ(j["shards"],
            Json::array({{{"shard", of_byte(1).to_string()}, {"keyed", true}, {"holders", {"web-1", "web-2"}}},
                         {{"shard", of_byte(2).to_string()},
                          {"keyed", true},
                          {"holders", Json::array()},
                          {"cas", "https://cas.example/\"odd\""}}}))
      << "another host's CAS text is escaped";
  EXPECT_EQ(
      fleet_shard_refs_json(shards),
      Json::array(
          {{{"shard", of_byte(1).to_string()}, {"holders", {"web-1", "web-2"}}},
           {{"shard", of_byte(2).to_string()}, {"holders", Json::array()}, {"cas", "https://cas.example/\"odd\""}}}));
}

TEST(FleetJson, AXorbFormIsReadFromItsCasBlock) {
  fleet::XorbForm form;
  form.keyed = false;
  form.cas_block = entries(3);
  shard::XorbHeader{of_byte(5), 0, 2, 3000, 1200}.encode(form.cas_block.data());
  shard::ChunkEntry{of_byte(6), 0, 1000, 0, 0}.encode(form.cas_block.data() + shard::kEntrySize);
  shard::ChunkEntry{of_byte(7), 1000, 2000, 1u << 31, 0}.encode(form.cas_block.data() + 2 * shard::kEntrySize);
  form.shards = {{of_byte(8), {"web-3"}, ""}};
  const fleet::XorbAnswer answer{of_byte(5), {form}};
  const Json j = fleet_xorb_json(answer, form);
  EXPECT_EQ(j["xorb"], of_byte(5).to_string());
  EXPECT_EQ(j["origin"], "fleet");
  EXPECT_EQ(j["keyed"], false);
  EXPECT_EQ(j["num_chunks"], 2);
  EXPECT_EQ(j["bytes_in_xorb"], 3000);
  EXPECT_EQ(j["bytes_on_disk"], 1200);
  EXPECT_EQ(j["chunks"][1], Json({{"index", 1},
                                  {"hash", of_byte(7).to_string()},
                                  {"byte_start", 1000},
                                  {"unpacked_bytes", 2000},
                                  {"flags", 1u << 31}}));
  EXPECT_EQ(j["shards"], Json::array({{{"shard", of_byte(8).to_string()}, {"holders", {"web-3"}}}}));
  // A block too short for a header says nothing of chunks.
  form.cas_block.resize(10);
  const Json bare = fleet_xorb_json(answer, form);
  EXPECT_FALSE(bare.contains("chunks"));
  EXPECT_FALSE(bare.contains("num_chunks"));
  EXPECT_EQ(bare["shards"].size(), 1u);
}

TEST(FleetJson, AFileIsReadFromItsBlockCountingOnlyTheTermsThatFit) {
  fleet::FileAnswer f;
  f.hash = of_byte(9);
  f.block = entries(3);
  shard::FileHeader{of_byte(9), 0, 2, 0}.encode(f.block.data());
  shard::FileTerm{of_byte(10), 0, 1000, 0, 2}.encode(f.block.data() + shard::kEntrySize);
  shard::FileTerm{of_byte(11), 0, 500, 2, 3}.encode(f.block.data() + 2 * shard::kEntrySize);
  f.shards = {{of_byte(12), {"web-1"}, ""}};
  Json j = fleet_file_json(f);
  EXPECT_EQ(j["file"], of_byte(9).to_string());
  EXPECT_EQ(j["origin"], "fleet");
  EXPECT_TRUE(j["sha256"].is_null());
  EXPECT_EQ(j["size"], 1500);
  EXPECT_EQ(j["verification"], false);
  EXPECT_EQ(j["terms"],
            Json::array(
                {{{"xorb", of_byte(10).to_string()}, {"chunk_start", 0}, {"chunk_end", 2}, {"unpacked_bytes", 1000}},
                 {{"xorb", of_byte(11).to_string()}, {"chunk_start", 2}, {"chunk_end", 3}, {"unpacked_bytes", 500}}}));
  // The header promises more terms than the stored block holds.
  f.block.resize(2 * shard::kEntrySize);
  f.sha256 = of_byte(13);
  j = fleet_file_json(f);
  EXPECT_EQ(j["terms"].size(), 1u);
  EXPECT_EQ(j["size"], 1000);
  EXPECT_EQ(j["sha256"], of_byte(13).to_string());
}

TEST(FleetJson, ThePublishersStateHasItsNullsAndCounts) {
  fleet_link::PublisherState s;
  s.host = "web-1";
  s.outbox_depth = 3;
  s.parked = 1;
  s.parked_items = {{"publish", std::string(64, 'a'), "shard too large", 1754000000}};
  s.published = 7;
  s.set_aside_marks = 2;
  Json j = publisher_json(s);
  EXPECT_EQ(j["state"], "off");
  EXPECT_EQ(j["host"], "web-1");
  EXPECT_EQ(j["outbox"], Json({{"depth", 3}, {"oldest_age_s", nullptr}, {"parked", 1}}));
  EXPECT_EQ(j["parked"], Json::array({{{"op", "publish"},
                                       {"shard", std::string(64, 'a')},
                                       {"reason", "shard too large"},
                                       {"parked_at", 1754000000}}}));
  EXPECT_EQ(j["published"], 7);
  EXPECT_EQ(j["set_aside"]["marks"], 2);
  EXPECT_TRUE(j["last_contact"].is_null());
  EXPECT_TRUE(j["last_error"].is_null());
  EXPECT_TRUE(j["primary"].is_null());
  EXPECT_TRUE(j["failover"]["from"].is_null());
  EXPECT_TRUE(j["lookup_memory"]["key_filters"].contains("thinnest_bits_per_entry"));
  s.last_error = "fleet.connect: refused";
  s.last_contact = 1754000001;
  s.primary = "db-1:5432";
  j = publisher_json(s);
  EXPECT_EQ(j["last_error"], "fleet.connect: refused");
  EXPECT_EQ(j["last_contact"], 1754000001);
  EXPECT_EQ(j["primary"], "db-1:5432");
}

}  // namespace
}  // namespace dedupd::daemon::api::render
