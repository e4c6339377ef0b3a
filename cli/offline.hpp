// Offline verbs: read a shard file directly, no daemon involved.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "shard/reader.hpp"

namespace dedupctl {

// The `inspect --json` document (documented in dedupctl(1)). `now` only
// decides the "expired" flag, so tests can pin it.
nlohmann::ordered_json inspect_document(const dedupd::shard::ShardView& view, const std::string& path,
                                        std::uint64_t now);

struct Context;
// The human form of an inspect document (also used for a bundle's members).
void print_inspect(Context& ctx, const nlohmann::ordered_json& doc, bool list_chunks, std::uint64_t now);

}  // namespace dedupctl
