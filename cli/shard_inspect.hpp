// What `inspect` shows of one shard: the document (`inspect --json`,
// documented in dedupctl(1)) and its human form. Both the shard verbs
// (offline.cpp) and a bundle's members (bundle_verbs.cpp) are shown so.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "shard/reader.hpp"

namespace dedupctl {

// The `inspect --json` document. `now` only decides the "expired" flag, so
// tests can pin it.
nlohmann::ordered_json inspect_document(const dedupd::shard::ShardView& view, const std::string& path,
                                        std::uint64_t now);

struct Context;
// The human form of an inspect document.
void print_inspect(Context& ctx, const nlohmann::ordered_json& doc, bool list_chunks, std::uint64_t now);

}  // namespace dedupctl
