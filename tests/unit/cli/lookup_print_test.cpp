// The lookup documents as people read them (cli/lookup_print): how long a
// location lives, a chunk in detail or in a table, a shard reference and
// summary, the index counts. Local times depend on TZ; the texts checked
// here are the parts that do not.
#include "cli/lookup_print.hpp"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "cli/context.hpp"

namespace dedupctl {
namespace {

const std::string kChunk(64, 'c');
const std::string kXorb(64, 'x');
const std::string kShard(64, 's');

// A Context over string streams, colour off.
struct Printed {
  std::ostringstream out, err;
  std::istringstream in;
  Io io{out, err, in, false, [](const char*) { return std::optional<std::string>(); }};
  Context ctx{io, {}, {}};
};

json location(json shards) {
  return json{{"xorb", kXorb},   {"chunk_index", 3},       {"byte_start", 100},
              {"byte_end", 200}, {"unpacked_bytes", 2048}, {"shards", std::move(shards)}};
}

json local_shard(std::optional<std::uint64_t> expiry, bool keyed = false) {
  json s = {{"shard", kShard}, {"keyed", keyed}, {"expiry", nullptr}};
  if (expiry) s["expiry"] = *expiry;
  return s;
}

TEST(LookupPrint, ALocationLivesUntilItsLastShardExpiresOrForever) {
  EXPECT_EQ(lives_until(location(json::array({local_shard(100), local_shard(300), local_shard(200)}))), 300u);
  EXPECT_EQ(lives_until(location(json::array({local_shard(100), local_shard(std::nullopt)}))), std::nullopt);
  // The fleet's shards are not this host's to expire.
  json fleet = {{"shard", kShard}, {"holders", json::array({"web-1"})}};
  EXPECT_EQ(lives_until(location(json::array({local_shard(100), fleet}))), std::nullopt);
  EXPECT_EQ(lives_until(location(json::array())), 0u);
  EXPECT_EQ(range_text(location(json::array())), "100..200");
}

TEST(LookupPrint, AFoundChunkShowsEachLocationAndShard) {
  Printed p;
  json fleet = {{"shard", std::string(64, 'f')}, {"holders", json::array({"web-1", "web-2"})}};
  json loc = location(json::array({local_shard(std::nullopt, true), fleet}));
  loc["flags"] = 1u << 31;
  print_result_detail(p.ctx, json{{"hash", kChunk}, {"locations", json::array({loc})}}, 1000);
  const std::string out = p.out.str();
  EXPECT_EQ(out.rfind(kChunk + "  found, 1 location\n", 0), 0u) << out;
  EXPECT_NE(out.find("Xorb   " + kXorb), std::string::npos) << out;
  EXPECT_NE(out.find("#3, bytes 100..200 of the xorb, 2.0 KiB unpacked, eligible for global dedup"), std::string::npos)
      << out;
  EXPECT_NE(out.find(kShard + "  keyed, expires never"), std::string::npos) << out;
  EXPECT_NE(out.find(std::string(64, 'f') + "  fleet, held by web-1, web-2"), std::string::npos) << out;
  EXPECT_EQ(p.err.str(), "");
}

TEST(LookupPrint, NotFoundSaysWhenEveryShardThatHeldItExpired) {
  Printed bare;
  print_result_detail(bare.ctx, json{{"hash", kChunk}, {"locations", json::array()}}, 1000);
  EXPECT_EQ(bare.out.str(), kChunk + "  not found\n");

  Printed one;
  print_result_detail(one.ctx,
                      json{{"hash", kChunk},
                           {"locations", json::array()},
                           {"expired_shards", json::array({{{"shard", kShard}, {"keyed", true}, {"expiry", 900}}})}},
                      1000);
  EXPECT_EQ(one.out.str().rfind(kChunk + "  not found: the only shard that held it has expired\n", 0), 0u)
      << one.out.str();
  EXPECT_NE(one.out.str().find(kShard + "  keyed, expired "), std::string::npos) << one.out.str();

  Printed two;
  print_result_detail(
      two.ctx,
      json{{"hash", kChunk},
           {"locations", json::array()},
           {"expired_shards", json::array({{{"shard", kShard}}, {{"shard", std::string(64, 't')}, {"expiry", 5}}})}},
      1000);
  EXPECT_NE(two.out.str().find("every shard that held it has expired"), std::string::npos) << two.out.str();
  EXPECT_NE(two.out.str().find(kShard + "  raw, expired never"), std::string::npos) << two.out.str();
}

TEST(LookupPrint, TheTableHasARowPerLocationAndTheCounts) {
  Printed p;
  json results = json::array(
      {json{{"hash", kChunk}, {"locations", json::array({location(json::array({local_shard(std::nullopt)}))})}},
       json{{"hash", std::string(64, 'd')}, {"locations", json::array()}}});
  print_results_table(p.ctx, results, 1, 1);
  std::istringstream lines(p.out.str());
  std::string header, found, missing, blank, counts;
  std::getline(lines, header);
  std::getline(lines, found);
  std::getline(lines, missing);
  std::getline(lines, blank);
  std::getline(lines, counts);
  EXPECT_EQ(header.rfind("CHUNK", 0), 0u) << header;
  for (const char* column : {"XORB", "#", "BYTES", "SIZE", "SHARDS", "LIVES UNTIL"})
    EXPECT_NE(header.find(column), std::string::npos) << column;
  EXPECT_EQ(found.rfind(kChunk, 0), 0u);
  for (const std::string& cell : {kXorb, std::string("100..200"), std::string("2.0 KiB"), std::string("never")})
    EXPECT_NE(found.find(cell), std::string::npos) << cell << " in " << found;
  EXPECT_EQ(missing, std::string(64, 'd') + "  not found");
  EXPECT_EQ(blank, "");
  EXPECT_EQ(counts, "1 found, 1 missing");
}

TEST(LookupPrint, AShardReferenceNamesItsFormCasAndWhetherItIsSetAside) {
  json s = local_shard(std::nullopt, true);
  EXPECT_EQ(shard_ref_text(s, 1000), kShard + "  keyed, expires never, CAS unknown");
  s["cas"] = "https://cas.example";
  s["set_aside"] = true;
  EXPECT_EQ(shard_ref_text(s, 1000), kShard + "  keyed, expires never, CAS https://cas.example, set aside");
  EXPECT_EQ(shard_ref_text(json{{"shard", kShard}, {"holders", json::array()}}, 1000),
            kShard + "  fleet, held by nobody");
}

TEST(LookupPrint, AShardSummaryShowsItsStateContentsAndWhy) {
  Printed p;
  print_shard_summary(p.ctx, json{{"hash", kShard},
                                  {"state", "rejected"},
                                  {"paths", json::array({"/srv/a.mdb"})},
                                  {"size", 102104},
                                  {"created", nullptr},
                                  {"expiry", nullptr},
                                  {"keyed", false},
                                  {"files", 1},
                                  {"xorbs", 2},
                                  {"chunks", 0},
                                  {"cas", nullptr},
                                  {"set_aside", {{"reason", "refused shard R"}}},
                                  {"reason", {{"rule", "header.magic"}, {"offset", 8}, {"message", "not a shard"}}}});
  const std::string out = p.out.str();
  for (const std::string& line :
       {"Shard      " + kShard, std::string("State      rejected"), std::string("Path       /srv/a.mdb"),
        std::string("Size       102,104 bytes (99.7 KiB)"), std::string("Created    -"),
        std::string("Expires    never"), std::string("Keyed      no"),
        std::string("Contents   1 file, 2 xorbs, 0 chunks"), std::string("CAS        unknown"),
        std::string("Set aside  -: refused shard R"), std::string("Reason     header.magic at offset 8: not a shard")})
    EXPECT_NE(out.find(line + "\n"), std::string::npos) << line << " in\n" << out;
  EXPECT_EQ(out.find("Ingested"), std::string::npos);
}

TEST(LookupPrint, TheIndexCountsAndItsChunkFilter) {
  json stats = {{"shards", {{"live", 1200}, {"expired", 2}, {"removed", 0}, {"rejected", 1}}},
                {"chunks", 1},
                {"xorbs", 3},
                {"files", 0},
                {"keys", 2},
                {"db_bytes", 1 << 20},
                {"map_size", 1 << 30},
                {"map_used", 1 << 28},
                {"next_expiry", nullptr}};
  auto printed = [](const json& s) {
    Fields f;
    add_stats_fields(f, s, 1000);
    std::ostringstream out;
    f.print(out, Style{});
    return out.str();
  };
  std::string out = printed(stats);
  EXPECT_NE(out.find("1,200 live, 2 expired, 0 removed, 1 rejected"), std::string::npos) << out;
  EXPECT_NE(out.find("1 chunk, 3 xorbs, 0 files, 2 keys"), std::string::npos) << out;
  EXPECT_NE(out.find("1.0 MiB on disk, map 256.0 MiB of 1.0 GiB used (25%)"), std::string::npos) << out;
  EXPECT_NE(out.find("Next expiry  none"), std::string::npos) << out;
  EXPECT_EQ(out.find("Chunk filter"), std::string::npos) << "an older daemon reports none";

  stats["chunk_filter"] = {{"bytes", 0}};
  EXPECT_NE(printed(stats).find("none yet (lookups search every form)"), std::string::npos);
  stats["chunk_filter"] = {{"bytes", 4096},    {"entries", 1024},     {"max_bytes", 1 << 20},        {"capacity", 2000},
                           {"at_bound", true}, {"in_service", false}, {"false_positive_rate", 0.015}};
  out = printed(stats);
  EXPECT_NE(out.find("4.0 KiB of 1.0 MiB (4.00 B an entry, 1,024 entries, room for 2,000, at index.filter_memory); "
                     "1.5 % of absent forms searched; not in service"),
            std::string::npos)
      << out;
}

}  // namespace
}  // namespace dedupctl
