// CAF bundles of shards (shard/caf.hpp) on the command line: `bundle
// create`, `bundle list`, and `inspect` of a bundle. No daemon involved.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/verbs.hpp"
#include "shard/caf.hpp"

namespace dedupctl {

void add_bundle_verbs(CLI::App& app, Action& action);  // bundle create, bundle list

// `bundle list --json`: {"path","size","format_version","data_size",
// "index_offset","index_size","members":[{"name","start","end","size",
// "shard"}]} (members in data order, end exclusive).
nlohmann::ordered_json bundle_document(const dedupd::shard::caf::BundleView& bundle, const std::string& path);

// `inspect FILE` when FILE is a bundle (its name ends in .caf, or it is not
// a shard but parses as a bundle): prints it and returns the exit code.
// nullopt: not a bundle, inspect it as a shard.
std::optional<int> inspect_if_bundle(Context& ctx, const std::string& path, bool list_chunks, std::uint64_t now);

}  // namespace dedupctl
