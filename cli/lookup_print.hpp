// The lookup documents as people read them: a chunk's locations in detail
// or as a table, a shard summary, the index counts. Input is checked first
// (lookup_shapes.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "cli/client.hpp"
#include "cli/context.hpp"
#include "cli/output.hpp"

namespace dedupctl {

// A location lives until its last shard expires; nullopt ("never") if any never does.
std::optional<std::uint64_t> lives_until(const json& loc);
std::string range_text(const json& loc);
void print_result_detail(Context& ctx, const json& r, std::uint64_t now);
void print_results_table(Context& ctx, const json& results, std::uint64_t found, std::uint64_t missing);
std::string shard_ref_text(const json& sh, std::uint64_t now);
void print_shard_summary(Context& ctx, const json& s);
void add_stats_fields(Fields& f, const json& s, std::uint64_t now);

}  // namespace dedupctl
