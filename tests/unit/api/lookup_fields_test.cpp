// One result of the chunk lookup answer (daemon/api/render/lookup_fields):
// every field by default, the fields a selection picks, hashes in the Xet
// string form.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "daemon/api/render/json_out.hpp"
#include "daemon/api/render/lookup_fields.hpp"
#include "daemon/api/routes/lookup_params.hpp"

namespace dedupd::daemon::api::http {
namespace {

using nlohmann::json;

shard::Hash hash_of(std::uint8_t b) {
  shard::Hash h;
  h.bytes.fill(b);
  return h;
}

// One hit with one location in two shards (one never expires), one miss.
index::BatchResult two_results() {
  index::BatchResult r;
  r.first = {0, 1, 1};
  index::BatchLocation loc;
  loc.xorb = hash_of(0xAB);
  loc.chunk_index = 3;
  loc.byte_start = 100;
  loc.byte_end = 250;
  loc.unpacked_bytes = 150;
  loc.flags = 0x80000000u;
  loc.shard_set = 0;
  r.locations.push_back(loc);
  r.shard_sets.push_back({index::ShardRef{hash_of(1), std::nullopt, false, {}},
                          index::ShardRef{hash_of(2), 1'800'000'000ull, true, hash_of(9)}});
  return r;
}

json write(const render::LookupFields& f, std::size_t i) {
  auto r = two_results();
  std::string out;
  render::JsonOut o(out);
  render::write_lookup_result(o, f, hash_of(std::uint8_t(0x10 + i)), r.of(i), r);
  return json::parse(out);
}

render::LookupFields fields(std::string_view list) {
  auto parsed = routes::parse_lookup_fields(list);
  EXPECT_TRUE(std::holds_alternative<render::LookupFields>(parsed))
      << (std::holds_alternative<std::string>(parsed) ? std::get<std::string>(parsed) : "");
  return std::holds_alternative<render::LookupFields>(parsed) ? std::get<render::LookupFields>(parsed)
                                                              : render::LookupFields{};
}

TEST(LookupAnswer, AllFieldsByDefault) {
  json hit = write(render::LookupFields{}, 0);
  EXPECT_EQ(hit["hash"], hash_of(0x10).to_string());
  EXPECT_EQ(hit["found"], true);
  ASSERT_EQ(hit["locations"].size(), 1u);
  const json& loc = hit["locations"][0];
  EXPECT_EQ(loc["xorb"], hash_of(0xAB).to_string());
  EXPECT_EQ(loc["chunk_index"], 3);
  EXPECT_EQ(loc["byte_start"], 100);
  EXPECT_EQ(loc["byte_end"], 250);
  EXPECT_EQ(loc["unpacked_bytes"], 150);
  EXPECT_EQ(loc["flags"], 0x80000000u);
  ASSERT_EQ(loc["shards"].size(), 2u);
  EXPECT_TRUE(loc["shards"][0]["expiry"].is_null());
  EXPECT_EQ(loc["shards"][1]["expiry"], 1'800'000'000ull);
  EXPECT_EQ(loc["shards"][1]["keyed"], true);

  json miss = write(render::LookupFields{}, 1);
  EXPECT_EQ(miss, json({{"hash", hash_of(0x11).to_string()}, {"found", false}, {"locations", json::array()}}));
}

TEST(LookupAnswer, HashesAreWrittenInTheXetStringForm) {
  shard::Hash h;
  for (std::uint8_t i = 0; i < 32; ++i) h.bytes[i] = std::uint8_t(i * 37 + 5);
  std::string out;
  render::JsonOut(out).hash(h);
  EXPECT_EQ(out, '"' + h.to_string() + '"');
}

TEST(LookupAnswer, FieldsPickWhatIsWritten) {
  EXPECT_EQ(write(fields("hash,found"), 0), json({{"hash", hash_of(0x10).to_string()}, {"found", true}}));
  EXPECT_EQ(write(fields("found"), 1), json({{"found", false}}));
  json some = write(fields("hash,xorb,chunk_index"), 0);
  EXPECT_FALSE(some.contains("found"));
  EXPECT_EQ(some["locations"][0], json({{"xorb", hash_of(0xAB).to_string()}, {"chunk_index", 3}}));
  // xorb, chunk_index, byte_start, byte_end, unpacked_bytes, flags, origin, shards
  json all = write(fields("locations"), 0)["locations"][0];
  EXPECT_EQ(all.size(), 8u);
  EXPECT_EQ(all["origin"], "local");
}

}  // namespace
}  // namespace dedupd::daemon::api::http
