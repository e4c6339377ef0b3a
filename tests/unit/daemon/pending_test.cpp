// Bodies held until the CAS's status (daemon/learn/pending): what is handed
// on to learn, forgotten, expired or not held at all.
#include "daemon/learn/pending.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>
#include "tests/unit/daemon/learn_ids.hpp"

namespace dedupd::daemon::learn {
namespace {

using testing::kId;
using testing::kId2;

using Clock = PendingShards::Clock;
using Kind = Settled::Kind;

Pending body(std::size_t n, const std::string& cas = "https://cas.example") {
  return Pending{std::vector<std::uint8_t>(n, 7), cas};
}

TEST(PendingShards, OnlyWhatTheCasAcceptedIsHandedOnToLearn) {
  PendingShards p;
  auto t = Clock::now();
  std::optional<Settled> now;
  ASSERT_TRUE(p.hold(kId, body(10), t, now));
  EXPECT_FALSE(now);
  ASSERT_TRUE(p.hold(kId2, body(20), t, now));
  EXPECT_EQ(p.stats().held_bytes, 30u);
  Settled a = p.confirm(kId, 200, t);
  EXPECT_EQ(a.kind, Kind::accepted);
  ASSERT_TRUE(a.pending);
  EXPECT_EQ(a.pending->bytes.size(), 10u);
  EXPECT_EQ(a.pending->cas, "https://cas.example");
  // Refused: handed on, to find the stale answers it relied on.
  Settled r = p.confirm(kId2, 400, t);
  EXPECT_EQ(r.kind, Kind::refused);
  EXPECT_TRUE(r.pending);
  EXPECT_EQ(p.stats().held_bytes, 0u);
  // Confirmed twice: nothing more.
  EXPECT_EQ(p.confirm(kId, 200, t).kind, Kind::duplicate);
  EXPECT_FALSE(p.confirm(kId, 200, t).pending);
  // Its body sent again: refused as a duplicate.
  EXPECT_FALSE(p.hold(kId, body(10), t, now));
  ASSERT_TRUE(now);
  EXPECT_EQ(now->kind, Kind::duplicate);
}

TEST(PendingShards, AServerErrorForgetsTheBody) {
  PendingShards p;
  auto t = Clock::now();
  std::optional<Settled> now;
  ASSERT_TRUE(p.hold(kId, body(10), t, now));
  Settled f = p.confirm(kId, 502, t);
  EXPECT_EQ(f.kind, Kind::failed);
  EXPECT_FALSE(f.pending);
  EXPECT_EQ(p.stats().failed, 1u);
}

TEST(PendingShards, AClientThatHungUpIsNoRefusal) {
  // @huggingface/hub, its upload failed on one shard, hung up on the other
  // mid-request: nginx logs 499, and the CAS never answered.
  PendingShards p;
  auto t = Clock::now();
  std::optional<Settled> now;
  ASSERT_TRUE(p.hold(kId, body(10), t, now));
  Settled f = p.confirm(kId, 499, t);
  EXPECT_EQ(f.kind, Kind::failed);
  EXPECT_FALSE(f.pending);
  EXPECT_EQ(p.stats().refused, 0u);
  EXPECT_EQ(p.stats().failed, 1u);
}

TEST(PendingShards, AConfirmationForNothingWaitsForItsBodyThenExpires) {
  PendingShards p(1 << 20, std::chrono::seconds(60));
  auto t = Clock::now();
  EXPECT_EQ(p.confirm(kId, 201, t).kind, Kind::early);
  EXPECT_EQ(p.stats().unmatched, 1u);
  std::optional<Settled> now;
  ASSERT_TRUE(p.hold(kId, body(5), t + std::chrono::seconds(1), now));
  ASSERT_TRUE(now);
  EXPECT_EQ(now->kind, Kind::accepted);
  // One that never gets its body is dropped at the ttl; so is a body that
  // never gets its status.
  EXPECT_EQ(p.confirm(kId2, 200, t).kind, Kind::early);
  ASSERT_TRUE(p.hold("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", body(5), t, now));
  EXPECT_EQ(p.expire(t + std::chrono::seconds(59)), 0u);
  EXPECT_EQ(p.expire(t + std::chrono::seconds(61)), 1u);
  EXPECT_EQ(p.stats().held, 0u);
  ASSERT_TRUE(p.hold(kId2, body(5), t + std::chrono::seconds(62), now));
  EXPECT_FALSE(now) << "the early status expired: the body waits for a new one";
}

TEST(PendingShards, ABodyPastTheMemoryCapIsNotHeld) {
  PendingShards p(100);
  auto t = Clock::now();
  std::optional<Settled> now;
  ASSERT_TRUE(p.hold(kId, body(60), t, now));
  EXPECT_FALSE(p.hold(kId2, body(60), t, now));
  EXPECT_EQ(p.stats().dropped_full, 1u);
  EXPECT_EQ(p.confirm(kId, 200, t).kind, Kind::accepted);
  EXPECT_TRUE(p.hold(kId2, body(60), t, now));
}

}  // namespace
}  // namespace dedupd::daemon::learn
