// The body of POST /v1/chunk: {"hashes": ["<hash>", ...]}. Up to 100,000
// hashes arrive per call, so the usual compact form is scanned directly;
// anything else (other key order, extra fields, escapes) goes through the
// full JSON parser, which also produces the error messages for broken JSON.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "shard/hash.hpp"

namespace dedupd::daemon::http {

// The hashes in request order, or a message for a 400.
using HashBatch = std::variant<std::vector<shard::Hash>, std::string>;

HashBatch parse_hash_batch(std::string_view body, std::size_t max_hashes);

}  // namespace dedupd::daemon::http
