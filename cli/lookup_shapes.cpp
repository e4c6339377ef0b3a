#include "cli/lookup_shapes.hpp"

#include "cli/fleet_verbs.hpp"

namespace dedupctl {

void check_shard_ref(const json& s, std::string_view what) {
  need_hash(s, "shard", what);
  if (is_fleet_ref(s)) return (void)need_array(s, "holders", what);
  need_time(s, "expiry", what);
  if (!need(s, "keyed", what).is_boolean())
    throw CliError(kProtocol, std::string(what) + ": \"keyed\" is not a boolean");
}

void check_location(const json& loc, std::string_view what) {
  need_hash(loc, "xorb", what);
  need_u64(loc, "chunk_index", what);
  need_u64(loc, "byte_start", what);
  need_u64(loc, "byte_end", what);
  need_u64(loc, "unpacked_bytes", what);
  for (const auto& s : need_array(loc, "shards", what)) check_shard_ref(s, what);
}

void check_result(const json& r, std::string_view what, const std::string& expect_hash) {
  if (need_hash(r, "hash", what) != expect_hash)
    throw CliError(kProtocol, std::string(what) + ": dedupd answered for hash " + r["hash"].get<std::string>() +
                                  ", asked " + expect_hash);
  if (!need(r, "found", what).is_boolean())
    throw CliError(kProtocol, std::string(what) + ": \"found\" is not a boolean");
  for (const auto& loc : need_array(r, "locations", what)) check_location(loc, what);
  if (r["found"].get<bool>() != !r["locations"].empty())
    throw CliError(kProtocol, std::string(what) + ": \"found\" disagrees with \"locations\"");
}

void check_shard_summary(const json& s, std::string_view what) {
  // A rejected entry is a file whose content hash may be unknown (null).
  if (!(need(s, "hash", what).is_null() && s.value("state", std::string()) == "rejected")) need_hash(s, "hash", what);
  need_str(s, "state", what);
  need_array(s, "paths", what);
  need_u64(s, "size", what);
  need_time(s, "created", what);
  need_time(s, "expiry", what);
  need_u64(s, "chunks", what);
  need_u64(s, "xorbs", what);
  need_u64(s, "files", what);
}

void check_stats(const json& s, std::string_view what) {
  const json& shards = need(s, "shards", what);
  for (const char* k : {"live", "expired", "removed", "rejected"}) need_u64(shards, k, what);
  for (const char* k : {"xorbs", "chunks", "files", "keys", "db_bytes", "map_size", "map_used"}) need_u64(s, k, what);
  need_time(s, "next_expiry", what);
}

}  // namespace dedupctl
