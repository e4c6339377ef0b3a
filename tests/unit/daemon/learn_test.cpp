// The learning path's parts (daemon/learn/): bodies held until the CAS's
// status, the datagrams that carry it and who may send them, and the shards a
// refusal sets aside.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "daemon/learn/confirm_socket.hpp"
#include "daemon/learn/heal.hpp"
#include "daemon/learn/pending.hpp"
#include "daemon/learn/report.hpp"
#include "test_support.hpp"
#include "tests/support/temp_dir.hpp"

namespace dedupd::daemon::learn {
namespace {

namespace st = shard::testing;
using Clock = PendingShards::Clock;
using Kind = Settled::Kind;

const std::string kId = "0123456789abcdef0123456789abcdef";
const std::string kId2 = "fedcba9876543210fedcba9876543210";

Pending body(std::size_t n, const std::string& cas = "https://cas.example") {
  return Pending{std::vector<std::uint8_t>(n, 7), cas};
}

TEST(LearnRequestId, IsNginxsThirtyTwoLowerCaseHexDigits) {
  EXPECT_TRUE(is_request_id(kId));
  EXPECT_FALSE(is_request_id(""));
  EXPECT_FALSE(is_request_id(kId.substr(1)));
  EXPECT_FALSE(is_request_id(kId + "0"));
  EXPECT_FALSE(is_request_id("0123456789ABCDEF0123456789abcdef"));
  EXPECT_FALSE(is_request_id("0123456789abcdef0123456789abcde/"));
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

TEST(LearnConfirmation, ParsesNginxsSyslogLineAndNothingElse) {
  auto c = parse_confirmation("<190>Nov 27 10:00:00 dedupd_learn: " + kId + " 200");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->request_id, kId);
  EXPECT_EQ(c->status, 200u);
  auto bare = parse_confirmation(kId + " 400\n");
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->status, 400u);
  for (const std::string& bad : {std::string(""), kId, kId + " ", kId + " 20x", kId + " 99", kId + " 600",
                                 "<190>no colon " + kId + " 200", "x" + kId + " 200", kId + " 200 300"})
    EXPECT_FALSE(parse_confirmation(bad)) << bad;
}

TEST(LearnConfirmation, OnlyRootDedupdsUserOrTheEndpointsGroupIsBelieved) {
  const uid_t me = geteuid();
  EXPECT_TRUE(may_confirm({getpid(), 0, 12345}, std::nullopt));
  EXPECT_TRUE(may_confirm({getpid(), me, 12345}, std::nullopt));
  const uid_t stranger = me == 0 ? 4242 : me + 1;
  EXPECT_FALSE(may_confirm({getpid(), stranger, 4243}, std::nullopt));
  EXPECT_FALSE(may_confirm({getpid(), stranger, 4243}, gid_t(4244)));
  EXPECT_TRUE(may_confirm({getpid(), stranger, 4244}, gid_t(4244)));
  // A supplementary group, as the kernel lists this process's.
  std::vector<gid_t> groups(64);
  int n = getgroups(int(groups.size()), groups.data());
  if (n > 0 && groups[0] != 4243) {
    EXPECT_TRUE(may_confirm({getpid(), stranger, 4243}, groups[0]));
  }
}

TEST(LearnConfirmation, TheSocketTakesDatagramsAndSaysWhoSentThem) {
  tests::TempDir dir("learn");
  const std::string path = dir.path() + "/learn.sock";
  auto s = ConfirmSocket::bind(path);
  ASSERT_TRUE(s) << s.error().to_string();
  int out = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(out, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  // A shard upload's report, a download's (download_report.hpp), and neither.
  for (std::string msg : {"<190>Nov 27 10:00:00 dedupd_learn: " + kId + " 200",
                          std::string("<190>Nov 27 10:00:00 dedupd_learn: xet-download 206 4096 HIT h:443 \"-\" \"-\""),
                          std::string("garbage")})
    ASSERT_EQ(::sendto(out, msg.data(), msg.size(), 0, reinterpret_cast<sockaddr*>(&addr), sizeof addr),
              ssize_t(msg.size()));
  ::close(out);
  auto got = s->receive(std::nullopt);  // this process is dedupd's own user
  ASSERT_EQ(got.believed.size(), 1u);
  EXPECT_EQ(got.believed[0].request_id, kId);
  ASSERT_EQ(got.downloads.size(), 1u);
  EXPECT_EQ(got.downloads[0].body_bytes, 4096u);
  EXPECT_EQ(got.unreadable, 1u);
  EXPECT_EQ(got.refused_senders, 0u);
  EXPECT_TRUE(s->receive(std::nullopt).believed.empty());
  // A second dedupd's socket replaces a stale one; the file goes with it.
  { auto again = ConfirmSocket::bind(dir.path() + "/other.sock"); }
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/other.sock"));
  auto bad = ConfirmSocket::bind(dir.path() + "/" + std::string(200, 'x'));
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().rule, "learn.socket");
}

// The socket dedupd.socket passes: taken as it is (credentials turned on,
// its path read back for messages), and left in place when dedupd lets it
// go, since the unit keeps listening on it across dedupd's restarts.
TEST(LearnConfirmation, AnAdoptedSocketIsBelievedAndNeverRemoved) {
  tests::TempDir dir("learn-adopt");
  const std::string path = dir.path() + "/passed.sock";
  int fd = ::socket(AF_UNIX, SOCK_DGRAM, 0);  // as systemd makes it: no SO_PASSCRED asked
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  {
    auto s = ConfirmSocket::adopt(fd);
    ASSERT_TRUE(s) << s.error().to_string();
    EXPECT_EQ(s->path(), path);
    EXPECT_TRUE(s->from_systemd());
    int out = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    const std::string msg = kId + " 201";
    ASSERT_EQ(::sendto(out, msg.data(), msg.size(), 0, reinterpret_cast<sockaddr*>(&addr), sizeof addr),
              ssize_t(msg.size()));
    ::close(out);
    auto got = s->receive(std::nullopt);
    ASSERT_EQ(got.believed.size(), 1u);  // the sender's credentials came with it
    EXPECT_EQ(got.refused_senders, 0u);
  }
  EXPECT_TRUE(std::filesystem::exists(path));
}

// A shard whose one file uses a xorb it carries and one it does not: the
// second is what the client was told it need not upload.
TEST(LearnHeal, TheXorbsAShardNamesWithoutCarryingThemAreTheStaleOnes) {
  auto carried = st::make_xorb(1, 4), named = st::make_xorb(2, 4);
  shard::ShardWriter w;
  w.add_xorb(carried.record);
  w.add_file(st::make_file(9, {{&carried, 0, 4}, {&named, 0, 2}, {&named, 2, 4}}, false, false));
  auto bytes = w.write({});
  auto view = shard::ShardView::parse(bytes);
  ASSERT_TRUE(view) << view.error().to_string();
  EXPECT_THAT(xorbs_named_not_carried(*view), ::testing::ElementsAre(named.record.header.xorb_hash));
  EXPECT_TRUE(xorbs_named_not_carried(*view, 0).empty());
}

TEST(LearnHeal, ARefusalSetsAsideTheShardsOfThatCasHoldingTheStaleXorbs) {
  tests::TempDir dir("heal");
  index::Options o;
  o.dir = dir.path() + "/index";
  auto idx = index::Index::open(o);
  ASSERT_TRUE(idx) << idx.error().to_string();
  auto stale = st::make_xorb(2, 4), other = st::make_xorb(3, 4);
  auto put = [&](const st::TestXorb& x, const std::string& cas, std::uint64_t created) {
    shard::ShardWriter w;
    w.add_xorb(x.record);
    shard::WriteOptions wo;
    wo.footer.creation_timestamp = created;
    auto bytes = w.write(wo);
    auto view = shard::ShardView::parse(bytes);
    EXPECT_TRUE(view);
    auto r = (*idx)->ingest(*view, {}, {.now = 1, .cas = cas});
    EXPECT_TRUE(r);
    return r->shard;
  };
  const std::string a = "https://cas-a.example", b = "https://cas-b.example";
  shard::Hash of_a = put(stale, a, 1), of_b = put(stale, b, 2), unknown = put(stale, "", 3), apart = put(other, a, 4);
  auto carried = st::make_xorb(1, 4);
  shard::ShardWriter w;
  w.add_xorb(carried.record);
  w.add_file(st::make_file(9, {{&carried, 0, 4}, {&stale, 0, 4}}, false, false));
  auto bytes = w.write({});
  auto refused = shard::ShardView::parse(bytes);
  ASSERT_TRUE(refused);
  auto healed = set_aside_stale(**idx, *refused, "R", a, /*unknown_too=*/false, 100);
  ASSERT_TRUE(healed) << healed.error().to_string();
  EXPECT_EQ(healed->xorbs_named, 1u);
  EXPECT_THAT(healed->set_aside, ::testing::ElementsAre(of_a));
  auto info = *(*idx)->shard(of_a);
  EXPECT_TRUE(info->set_aside);
  EXPECT_THAT(info->set_aside_reason, ::testing::HasSubstr("refused shard R"));
  EXPECT_THAT(info->set_aside_reason, ::testing::HasSubstr(stale.record.header.xorb_hash.to_string()));
  // Another CAS's shard, an unknown one and one without the xorb stay.
  for (const auto& h : {of_b, unknown, apart}) EXPECT_FALSE((*(*idx)->shard(h))->set_aside);
  // Where unknown shards answered too, they go as well; once aside, a
  // shard is not set aside again.
  healed = set_aside_stale(**idx, *refused, "R2", a, /*unknown_too=*/true, 101);
  ASSERT_TRUE(healed);
  EXPECT_THAT(healed->set_aside, ::testing::ElementsAre(unknown));
  EXPECT_THAT((*(*idx)->shard(of_a))->set_aside_reason, ::testing::HasSubstr("refused shard R,"));
}

}  // namespace
}  // namespace dedupd::daemon::learn
