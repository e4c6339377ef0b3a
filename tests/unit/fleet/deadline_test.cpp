// When a wait on the fleet database ends: at its bound for a server that
// does not answer, later while the server answers, never past the cap.
#include <gtest/gtest.h>

#include "fleet/deadline.hpp"

namespace dedupd::fleet {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

TEST(FleetDeadline, ABareBoundEndsAtItsBound) {
  const auto t = Clock::now() + 50ms;
  Deadline d(t);
  EXPECT_EQ(d.end(), t);
  EXPECT_EQ(Deadline(Clock::time_point::max()).end(), Clock::time_point::max());
}

TEST(FleetDeadline, WithoutAnAnswerAPatientDeadlineEndsAtItsBound) {
  Patience p(50ms);  // the server never answered
  Deadline d = Deadline::patient(50ms, p, 2s);
  EXPECT_EQ(d.end(), d.at);
  EXPECT_FALSE(p.answering());
}

TEST(FleetDeadline, WhileTheServerAnswersTheWaitGoesOnOneSilenceAfterItsLastAnswer) {
  Patience p(50ms);
  Deadline d = Deadline::patient(50ms, p, 2s);
  const auto answered = d.at + 30ms;  // a ping came back after the bound
  p.answered(answered);
  EXPECT_EQ(d.end(), answered + 50ms);
  EXPECT_TRUE(p.answering(answered + 49ms));
  EXPECT_FALSE(p.answering(answered + 50ms));
  // An older answer reported late does not move the evidence back.
  p.answered(d.at - 1s);
  EXPECT_EQ(d.end(), answered + 50ms);
}

TEST(FleetDeadline, HoweverWellTheServerAnswersTheWaitEndsAtTheCap) {
  Patience p(50ms);
  Deadline d = Deadline::patient(50ms, p, 200ms);
  p.answered(d.cap + 1s);
  EXPECT_EQ(d.end(), d.cap);
}

TEST(FleetDeadline, AShorterSilenceEndsTheWaitSooner) {
  Patience p(50ms);
  Deadline d = Deadline::patient(10ms, p, 2s);
  const auto answered = d.at + 100ms;
  p.answered(answered);
  p.set_silence(20ms);
  EXPECT_EQ(d.end(), answered + 20ms);
}

}  // namespace
}  // namespace dedupd::fleet
