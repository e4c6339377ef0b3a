// How fast the background scrub walks the index (Daemon::scrub_step). A
// slice checks at most kScrubSliceItems items and works at most
// kScrubSliceTime; the next one waits four times as long as the last took,
// and starts kScrubSliceEvery after it at the soonest. So the scrub takes at
// most a fifth of the work loop (which also ingests) and of the disk,
// whatever the page cache holds: a chunk entry's check reads its xorb
// record, a random page, and on an index the cache has dropped a fixed
// count of items was seconds of random reads a slice, back to back.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>

namespace dedupd::daemon {

inline constexpr std::size_t kScrubSliceItems = 16384;
inline constexpr std::chrono::milliseconds kScrubSliceTime{4};
inline constexpr std::chrono::milliseconds kScrubSliceEvery{20};
inline constexpr int kScrubRestPerWork = 4;

// When the slice after one that ran from `started` to `ended` may start.
constexpr std::chrono::steady_clock::time_point next_scrub_slice(std::chrono::steady_clock::time_point started,
                                                                 std::chrono::steady_clock::time_point ended) {
  return std::max(started + kScrubSliceEvery, ended + kScrubRestPerWork * (ended - started));
}

}  // namespace dedupd::daemon
