// The daemon's side of the learning path (daemon/learn/learner), over a real
// index, a real event loop and the learning socket: what a mirrored body
// must be to be held, an accepted shard learned under its CAS (whichever of
// body and status came first) with its copy kept, a refusal setting aside the
// shards that answered with what it relied on, and a set-aside shard the CAS
// accepts again answering again. Its parts are in pending_test,
// confirm_socket_test, heal_test and copies_test.
#include "daemon/learn/learner.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "daemon/learn/copies.hpp"
#include "daemon/loop/event_loop.hpp"
#include "index/index.hpp"
#include "test_support.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/unit/daemon/index_in.hpp"
#include "tests/unit/daemon/learn_ids.hpp"

namespace dedupd::daemon::learn {
namespace {

namespace st = shard::testing;
using testing::kId;
using testing::kId2;
using Outcome = core::LearnHold::Outcome;
using namespace std::chrono_literals;

const std::string kLearnCas = "https://cas-a.example";

std::vector<std::uint8_t> shard_of(const st::TestXorb& x, std::uint64_t created) {
  shard::ShardWriter w;
  w.add_xorb(x.record);
  shard::WriteOptions wo;
  wo.footer.creation_timestamp = created;
  return w.write(wo);
}

class LearnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    idx = daemon::testing::open_index_in(dir / "index");
    ASSERT_TRUE(idx);
    learner = std::make_unique<Learner>(*idx, loop);
    learner->set_copies(&copies);
    learner->set_events(
        {.set_aside = [this](const shard::Hash& h, const std::string& cas,
                             const std::string&) { set_aside.emplace_back(h, cas); },
         .accepted = [this](const shard::Hash& h, const std::string& cas) { accepted.emplace_back(h, cas); },
         .relied_on = [this](const std::vector<shard::Hash>& xorbs, const std::string&, bool,
                             const std::string&) { relied_on = xorbs; }});
  }

  void listen() {
    auto on = learner->listen(socket_path);
    ASSERT_TRUE(on) << on.error().to_string();
  }

  // What the endpoint's nginx sends: "<request id> <status>".
  void report(const std::string& id, int status) {
    const std::string msg = id + " " + std::to_string(status);
    int out = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(out, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
    ASSERT_EQ(::sendto(out, msg.data(), msg.size(), 0, reinterpret_cast<sockaddr*>(&addr), sizeof addr),
              ssize_t(msg.size()));
    ::close(out);
    loop.run_once(10s);  // the datagram is there: this returns once it is read
  }

  std::optional<index::ShardInfo> info(const shard::Hash& h) {
    auto s = idx->shard(h);
    EXPECT_TRUE(s);
    return s ? *s : std::nullopt;
  }

  tests::TempDir dir{"learner"};
  std::string socket_path = dir / "learn.sock";
  std::unique_ptr<index::Index> idx;
  loop::EventLoop loop;
  LearnedCopies copies{dir / "learned"};
  std::unique_ptr<Learner> learner;
  std::vector<std::pair<shard::Hash, std::string>> set_aside, accepted;
  std::vector<shard::Hash> relied_on;
};

TEST_F(LearnerTest, ABodyIsHeldOnlyWhileListeningAndOnlyWhenItIsAShardOfACas) {
  const auto bytes = shard_of(st::make_xorb(1, 4), 1);
  EXPECT_EQ(learner->hold(kId, kLearnCas, bytes).outcome, Outcome::off);
  EXPECT_FALSE(learner->stats().listening);
  listen();
  EXPECT_TRUE(learner->stats().listening);
  EXPECT_EQ(learner->hold("not-an-id", kLearnCas, bytes).outcome, Outcome::bad_id);
  EXPECT_EQ(learner->hold(kId, "ftp://cas", bytes).outcome, Outcome::bad_cas);
  auto junk = learner->hold(kId, kLearnCas, std::vector<std::uint8_t>(100, 0x42));
  EXPECT_EQ(junk.outcome, Outcome::not_a_shard);
  ASSERT_TRUE(junk.error);
  EXPECT_EQ(junk.error->rule, "header.magic");
  EXPECT_EQ(learner->hold(kId, kLearnCas, bytes).outcome, Outcome::held);
  EXPECT_EQ(learner->hold(kId, kLearnCas, bytes).outcome, Outcome::duplicate);
  EXPECT_EQ(learner->stats().held, 1u);
  // Listening elsewhere, or not at all.
  EXPECT_FALSE(*learner->listen(""));
  EXPECT_FALSE(learner->stats().listening);
  EXPECT_EQ(learner->hold(kId2, kLearnCas, bytes).outcome, Outcome::off);
}

TEST_F(LearnerTest, AnAcceptedShardIsLearnedUnderItsCasWithItsCopyKept) {
  listen();
  const auto bytes = shard_of(st::make_xorb(2, 4), 2);
  const shard::Hash hash = shard::shard_file_hash(bytes);
  ASSERT_EQ(learner->hold(kId, "HTTPS://CAS-A.example/", bytes).outcome, Outcome::held);
  EXPECT_FALSE(info(hash)) << "nothing is learned before the CAS's status";
  report(kId, 200);
  auto learned = info(hash);
  ASSERT_TRUE(learned);
  EXPECT_EQ(learned->cas, kLearnCas) << "the CAS as normalized";
  EXPECT_EQ(accepted, (std::vector<std::pair<shard::Hash, std::string>>{{hash, kLearnCas}}));
  ASSERT_EQ(copies.all().size(), 1u);
  EXPECT_EQ(copies.all()[0].cas, kLearnCas);
  const auto s = learner->stats();
  EXPECT_EQ(s.accepted, 1u);
  EXPECT_EQ(s.learned, 1u);
  EXPECT_EQ(s.held, 0u);
  EXPECT_TRUE(set_aside.empty());
}

TEST_F(LearnerTest, AStatusThatComesBeforeItsBodyWaitsForIt) {
  listen();
  const auto bytes = shard_of(st::make_xorb(3, 4), 3);
  report(kId2, 201);
  EXPECT_EQ(learner->stats().learned, 0u);
  ASSERT_EQ(learner->hold(kId2, kLearnCas, bytes).outcome, Outcome::held);
  loop.run_once(10s);  // the hold posted the settling to the loop
  EXPECT_TRUE(info(shard::shard_file_hash(bytes)));
  EXPECT_EQ(learner->stats().learned, 1u);
}

TEST_F(LearnerTest, ARefusalSetsAsideWhatAnsweredWithItsXorbsAndAnAcceptanceBringsItBack) {
  listen();
  // A shard of this CAS in the index holds `stale`; a client relied on it
  // and uploaded a shard naming it without carrying it.
  const auto stale = st::make_xorb(4, 4), carried = st::make_xorb(5, 4);
  const auto answering = shard_of(stale, 4);
  auto view = shard::ShardView::parse(answering);
  ASSERT_TRUE(view);
  auto in = idx->ingest(*view, {}, {.now = 1, .cas = kLearnCas});
  ASSERT_TRUE(in);
  shard::ShardWriter w;
  w.add_xorb(carried.record);
  w.add_file(st::make_file(9, {{&carried, 0, 4}, {&stale, 0, 4}}, false, false));
  const auto refused = w.write({});
  ASSERT_EQ(learner->hold(kId, kLearnCas, refused).outcome, Outcome::held);
  report(kId, 400);
  EXPECT_EQ(set_aside, (std::vector<std::pair<shard::Hash, std::string>>{{in->shard, kLearnCas}}));
  EXPECT_EQ(relied_on, std::vector<shard::Hash>{stale.record.header.xorb_hash});
  ASSERT_TRUE(info(in->shard));
  EXPECT_TRUE(info(in->shard)->set_aside);
  EXPECT_FALSE(info(shard::shard_file_hash(refused))) << "a refused shard is not learned";
  EXPECT_EQ(learner->stats().set_aside, 1u);
  EXPECT_EQ(learner->stats().refused, 1u);

  // The CAS later accepts the very bytes of the set-aside shard: it holds
  // every xorb they name, so the shard answers again.
  ASSERT_EQ(learner->hold(kId2, kLearnCas, answering).outcome, Outcome::held);
  report(kId2, 200);
  EXPECT_FALSE(info(in->shard)->set_aside);
  EXPECT_EQ(learner->stats().restored, 1u);
  EXPECT_EQ(learner->stats().already_known, 1u);
}

}  // namespace
}  // namespace dedupd::daemon::learn
