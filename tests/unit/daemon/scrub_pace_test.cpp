// The scrub's pace (daemon/scrub_pace.hpp): a slice that took little waits
// for its period; one that waited on cold pages rests four times as long
// as it worked, so the scrub never takes more than a fifth of the loop.
#include "daemon/scrub_pace.hpp"

#include <gtest/gtest.h>

namespace dedupd::daemon {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

TEST(ScrubPace, AQuickSliceWaitsForItsPeriod) {
  const Clock::time_point start{1000s};
  EXPECT_EQ(next_scrub_slice(start, start), start + kScrubSliceEvery);
  EXPECT_EQ(next_scrub_slice(start, start + 2ms), start + kScrubSliceEvery);
  EXPECT_EQ(next_scrub_slice(start, start + kScrubSliceTime), start + kScrubSliceEvery)
      << "a slice that used all its time still runs one period in five";
}

TEST(ScrubPace, ASlowSliceRestsFourTimesAsLongAsItWorked) {
  const Clock::time_point start{1000s};
  EXPECT_EQ(next_scrub_slice(start, start + 10ms), start + 10ms + 40ms);
  EXPECT_EQ(next_scrub_slice(start, start + 3s), start + 3s + 12s) << "seconds of reads from a cold disk";
  for (std::chrono::milliseconds took : {1ms, 4ms, 5ms, 50ms, 700ms, 3000ms}) {
    const auto next = next_scrub_slice(start, start + took);
    EXPECT_LE(took * 5, next - start) << "the scrub's share of the loop stays at a fifth or less";
  }
}

}  // namespace
}  // namespace dedupd::daemon
