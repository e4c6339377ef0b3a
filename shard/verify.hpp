// verify_shard: everything `dedupctl verify` reports about one shard file.
// Structure stops at its first problem (nothing after it can be located);
// integrity checks then report every problem they find.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "shard/integrity.hpp"

namespace dedupd::shard {

// `path` (or just a file name) enables the "<hash>.mdb" check. An empty
// result means the shard is clean.
std::vector<base::Error> verify_shard(std::span<const std::uint8_t> bytes,
                                      std::optional<std::string_view> path = std::nullopt,
                                      const IntegrityOptions& options = {});

}  // namespace dedupd::shard
