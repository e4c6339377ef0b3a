// The Error values the read shard's reader and writer return: a rule of
// theirs (read_shard.hpp, write_shard.hpp), where, and why.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

#include "base/result.hpp"

namespace dedupd::swh {

inline base::Error err(std::string rule, std::uint64_t offset, std::string message) {
  return base::Error{std::move(rule), offset, std::move(message)};
}

// The current errno as text, for messages about a failed system call.
inline std::string errno_text() { return std::strerror(errno); }

}  // namespace dedupd::swh
