// What a Reader's lookup sends and the key rows of its answer: the probe
// and fill statements (their text, built once), the live keys' rows every
// answer carries, and how those rows are read.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fleet/connection.hpp"
#include "fleet/fleet.hpp"
#include "fleet/xorb_cache.hpp"

namespace dedupd::fleet::reader_sql {

// The names the statements are prepared under, once per connection
// (Reader::ensure_connected).
inline constexpr const char* kLookupStatement = "dedupd_fleet_lookup";
inline constexpr const char* kLookupEntriesStatement = "dedupd_fleet_lookup_entries";
inline constexpr const char* kFillStatement = "dedupd_fleet_fill";

// The live keys' rows alone (a statement of their own, and the tail of
// lookup_sql's answer), the raw forms' row among them.
const std::string& key_rows_sql();
// The raw generation, as an SQL expression: "raw " and a digest of every
// raw_publish row's host id and xmin (schema 5). A publish that adds raw
// xorbs updates its host's row last (fleet/writer.cpp), and nothing else
// does (a heartbeat updates the host row), so while a snapshot shows the
// same digest it shows the same raw xorbs, and a raw filter complete for
// it hides none.
// One row per host, not one row for all: a host's publishes are serial
// already, the fleet's are not, and one row would serialize them.
extern const char* const kRawGeneration;
// The probe: one int8[] of prefixes per chunk partition; each hit row with
// hash_check, byte_start, unpacked_bytes and flags when `with_entries`
// (NULL in the key rows).
const std::string& lookup_sql(bool with_entries);
// What the probe's hits need that the xorb cache lacks.
const std::string& fill_sql();

// Fetching a whole CAS block costs about as much as slicing this many bytes
// of it out entry by entry (measured on PostgreSQL 15, EXTERNAL storage: a
// slice is a TOAST index descent, about 3 us; a block comes at about 1.4 ms
// per MB), so a xorb hit at least once per kWholeBlockBytesPerHit bytes of
// its block is fetched whole (and cached), else sliced. The hits are this
// lookup's and those the cache still counts of earlier ones.
inline constexpr std::int64_t kWholeBlockBytesPerHit = XorbCache::kBytesPerHit;

struct KeyRows {
  std::string_view digest;  // "hex,hex" of the live keys
  std::string_view epoch;
};
Result<KeyRows> read_key_rows(const detail::Rows& rows, std::vector<detail::LiveKey>& live);
// What the cache holds of tables named `epoch` is what the Reader may use:
// other tables (a restore, a new schema) or another server may reuse row
// ids, and are another era. Asked with every answer: the cache's owner may
// have ended every era since (XorbCache::clear).
void note_epoch(XorbCache& cache, std::string& known, std::uint32_t& era, std::string_view epoch);

}  // namespace dedupd::fleet::reader_sql
