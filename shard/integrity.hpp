// Integrity checks: does the content of a structurally valid shard agree
// with itself? Separate from parsing because they cost hashing, and because
// some cannot apply (keyed shards store keyed chunk hashes, a term may name a
// xorb another shard describes). Each check can be switched off.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "shard/reader.hpp"

namespace dedupd::shard {

struct IntegrityOptions {
  bool xorb_hashes = true;    // xorb hash = merkle root of its chunks (unkeyed only)
  bool verification = true;   // range hashes match the chunks (unkeyed, xorb in shard)
  bool term_sizes = true;     // a term's unpacked bytes = its chunks' (xorb in shard)
  bool lookup_tables = true;  // tables hold exactly the shard's entries
  bool file_name = true;      // "<hash>.mdb" names the hash of the bytes
};

// Rule names: integrity.xorb_hash, integrity.verification,
// integrity.term_bytes, integrity.lookup_table, integrity.file_name.
void check_xorb_hashes(const ShardView& view, std::vector<base::Error>& out);
void check_verification(const ShardView& view, std::vector<base::Error>& out);
void check_term_sizes(const ShardView& view, std::vector<base::Error>& out);
void check_lookup_tables(const ShardView& view, std::vector<base::Error>& out);
// Applies only when the last path component has the form <64 hex>.mdb.
void check_file_name(std::span<const std::uint8_t> bytes, std::string_view path, std::vector<base::Error>& out);

// True when the last path component has the form <64 hex digits>.mdb.
bool is_shard_file_name(std::string_view path);

// Every enabled check; one base::Error per problem, in file order per check.
std::vector<base::Error> check_integrity(const ShardView& view, std::optional<std::string_view> path = std::nullopt,
                                         const IntegrityOptions& options = {});

}  // namespace dedupd::shard
