// Error values of the index. The index reuses base::Error/base::Result so
// the daemon handles one error type; `rule` is a stable identifier starting
// with "index." (see kRule* below). Index errors are about no input's bytes:
// their offset is 0 and not printed. Expected failures never throw.
#pragma once

#include <string>

#include "base/result.hpp"

namespace dedupd::index {

using base::Error;
using base::Result;

// The value of a successful operation that returns nothing else.
struct Ok {};
using Status = Result<Ok>;

inline constexpr const char* kRuleLmdb = "index.lmdb";         // an LMDB call failed
inline constexpr const char* kRuleNoSpace = "index.no_space";  // disk full / file size limit
inline constexpr const char* kRuleIo = "index.io";  // EIO (LMDB also reports a short write, as on a full disk, so)
inline constexpr const char* kRuleMapFull = "index.map_full";  // max_map_size reached
inline constexpr const char* kRuleSchema = "index.schema";     // other schema version / not ours
inline constexpr const char* kRuleAlreadyOpen = "index.already_open";
inline constexpr const char* kRuleCorrupt = "index.corrupt";  // a record fails to decode
inline constexpr const char* kRuleLimit = "index.limit";      // beyond what the records encode
inline constexpr const char* kRuleArgument = "index.argument";
// Another process wrote while this one needed to see every write (a filter build).
inline constexpr const char* kRuleOtherWriter = "index.other_writer";
// A shard the index cannot give back as it was (its records lost what it said).
inline constexpr const char* kRuleRebuild = "index.rebuild";

inline Error make_error(const char* rule, std::string message) {
  return Error{rule, 0, std::move(message), /*has_offset=*/false};
}

}  // namespace dedupd::index
