// The scrub's pace (daemon/core/scrub_pace.hpp): a slice that took little waits
// for its period; one that waited on cold pages rests four times as long
// as it worked, so the scrub never takes more than a fifth of the loop.
#include "daemon/core/scrub_pace.hpp"

#include <gtest/gtest.h>

namespace dedupd::daemon::core {
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

// A reload that changes index.scrub_interval: the next pass is timed from
// the end of the last; "never" stops them; a pass under way finishes.
TEST(ScrubPace, AReloadTimesTheNextPassFromTheLastEnd) {
  const Clock::time_point now{100'000s};
  const Clock::time_point last_end = now - 2h;
  const std::optional<std::chrono::seconds> day = 24h, six_hours = 6h, never;
  EXPECT_EQ(next_scrub_pass_after_reload(last_end + 24h, day, six_hours, now), last_end + 6h);
  EXPECT_EQ(next_scrub_pass_after_reload(last_end + 6h, six_hours, std::chrono::seconds(1h), now), last_end + 1h)
      << "due already: it starts at once";
  EXPECT_EQ(next_scrub_pass_after_reload(last_end + 24h, day, never, now), std::nullopt);
  EXPECT_EQ(next_scrub_pass_after_reload(std::nullopt, never, six_hours, now), now)
      << "the scrub was off: a pass starts, as at start";
  EXPECT_EQ(next_scrub_pass_after_reload(std::nullopt, never, never, now), std::nullopt);
}

TEST(ScrubPace, APassUnderWayFinishesWhateverTheReloadSays) {
  const Clock::time_point now{100'000s};
  const Clock::time_point started = now - 1min;
  for (std::optional<std::chrono::seconds> every :
       {std::optional<std::chrono::seconds>(6h), std::optional<std::chrono::seconds>()})
    EXPECT_EQ(next_scrub_pass_after_reload(started, std::chrono::seconds(24h), every, now), started);
}

}  // namespace
}  // namespace dedupd::daemon::core
