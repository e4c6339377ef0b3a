// How fast the background scrub walks the index (daemon/jobs/scrub). A
// slice checks at most kScrubSliceItems items and works at most
// kScrubSliceTime; the next one waits four times as long as the last took,
// and starts kScrubSliceEvery after it at the soonest. So the scrub takes at
// most a fifth of the work loop (which also ingests) and of the disk,
// whatever the page cache holds: a chunk entry's check reads its xorb
// record, a random page, and on an index the cache has dropped a count of
// items alone would be seconds of random reads a slice, back to back.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <optional>

namespace dedupd::daemon::core {

inline constexpr std::size_t kScrubSliceItems = 16384;
inline constexpr std::chrono::milliseconds kScrubSliceTime{4};
inline constexpr std::chrono::milliseconds kScrubSliceEvery{20};
inline constexpr int kScrubRestPerWork = 4;

// When the slice after one that ran from `started` to `ended` may start.
constexpr std::chrono::steady_clock::time_point next_scrub_slice(std::chrono::steady_clock::time_point started,
                                                                 std::chrono::steady_clock::time_point ended) {
  return std::max(started + kScrubSliceEvery, ended + kScrubRestPerWork * (ended - started));
}

// When the next pass is due after a reload changed index.scrub_interval
// from `was` to `every`, the next pass having been due at `next` (nullopt:
// none). A pass under way (due already) goes on to its end, which takes the
// new interval; "never" then starts no other. Otherwise the next pass is
// the new interval after the last one's end, or, with none before (the
// scrub was off), starts now as it would at start.
inline std::optional<std::chrono::steady_clock::time_point> next_scrub_pass_after_reload(
    std::optional<std::chrono::steady_clock::time_point> next, std::optional<std::chrono::seconds> was,
    std::optional<std::chrono::seconds> every, std::chrono::steady_clock::time_point now) {
  if (next && *next <= now) return next;
  if (!every) return std::nullopt;
  if (next && was) return *next - *was + *every;
  return now;
}

}  // namespace dedupd::daemon::core
