// The shapes of the daemon's lookup documents (docs/API.md), checked for
// the fields dedupctl uses before anything is printed: a daemon of another
// version fails loudly (76), not with a half-printed table.
#pragma once

#include <string>
#include <string_view>

#include "cli/client.hpp"

namespace dedupctl {

void check_shard_ref(const json& s, std::string_view what);
void check_location(const json& loc, std::string_view what);
// A lookup result for `expect_hash`: {"hash", "found", "locations"}.
void check_result(const json& r, std::string_view what, const std::string& expect_hash);
void check_shard_summary(const json& s, std::string_view what);
void check_stats(const json& s, std::string_view what);

}  // namespace dedupctl
