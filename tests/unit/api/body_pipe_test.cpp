// BodyPipe (daemon/api/http/body_pipe.hpp): an answer's body written by a
// handler's thread while the server sends it. First the pipe alone (order,
// room, parking and waking, the ways a body ends short), then through a
// real ApiServer: the answer reaches its client before its body is all
// written, a failed body closes the connection short of its length, and
// stopping the server ends a piped answer in flight.
#include "daemon/api/http/body_pipe.hpp"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "api_test_support.hpp"
#include "daemon/api/http/server.hpp"

namespace dedupd::daemon::api::http {
namespace body_pipe_test {

using Bytes = std::vector<std::uint8_t>;

Bytes counting(std::size_t n, std::size_t from = 0) {
  Bytes out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = std::uint8_t((from + i) * 7 + (from + i) / 251);
  return out;
}

const std::function<void()> kNoPark = [] {};

// What a reader gets until it would park, or the body ended either way.
struct Drained {
  Bytes bytes;
  BodyPipe::Got last;
};
Drained drain(BodyPipe& pipe, std::size_t piece = 5) {
  Drained out{{}, BodyPipe::Got::bytes};
  std::vector<char> buf(piece);
  for (;;) {
    auto r = pipe.read(buf.data(), buf.size(), kNoPark);
    if (r.got != BodyPipe::Got::bytes) {
      out.last = r.got;
      return out;
    }
    out.bytes.insert(out.bytes.end(), buf.begin(), buf.begin() + std::ptrdiff_t(r.n));
  }
}

TEST(BodyPipe, BytesComeOutInOrderAcrossTheRingsEnd) {
  const Bytes body = counting(100);
  BodyPipe pipe(body.size(), 16);
  Bytes got;
  // Pieces of sizes that never divide the ring, read in other sizes.
  std::size_t at = 0;
  for (std::size_t n : {7u, 9u, 3u, 16u, 11u, 5u, 13u, 16u, 16u, 4u}) {
    // No more than the room: no wait.
    ASSERT_TRUE(pipe.write(std::span<const std::uint8_t>(body).subspan(at, n)));
    at += n;
    auto d = drain(pipe, 6);
    EXPECT_EQ(d.last, BodyPipe::Got::not_yet);
    got.insert(got.end(), d.bytes.begin(), d.bytes.end());
  }
  ASSERT_EQ(at, body.size());
  pipe.end();
  auto d = drain(pipe);
  EXPECT_TRUE(d.bytes.empty());
  EXPECT_EQ(d.last, BodyPipe::Got::end);
  EXPECT_EQ(got, body);
}

TEST(BodyPipe, AWriterWaitsForRoomAndHoldsNoMoreThanTheCapacity) {
  const Bytes body = counting(1 << 20);
  BodyPipe pipe(body.size(), 1000);
  std::atomic<bool> done{false};
  std::thread writer([&] {
    // One write far larger than the pipe: it goes in as room is made.
    EXPECT_TRUE(pipe.write(body));
    pipe.end();
    done = true;
  });
  Bytes got;
  std::mutex mu;
  std::condition_variable cv;
  bool woken = false;
  pipe.set_waker([&] {
    std::lock_guard lock(mu);
    woken = true;
    cv.notify_one();
  });
  std::vector<char> buf(4096);
  for (;;) {
    auto r = pipe.read(buf.data(), buf.size(), [&] { woken = false; });
    if (r.got == BodyPipe::Got::bytes) {
      EXPECT_LE(r.n, 1000u);  // never more than the pipe holds
      got.insert(got.end(), buf.begin(), buf.begin() + std::ptrdiff_t(r.n));
      continue;
    }
    if (r.got != BodyPipe::Got::not_yet) {
      EXPECT_EQ(r.got, BodyPipe::Got::end);
      break;
    }
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return woken; })) << "a wake was lost";
  }
  writer.join();
  EXPECT_TRUE(done);
  EXPECT_EQ(got, body);
}

TEST(BodyPipe, AParkedReaderIsWokenOnceByTheNextBytesAndNeverUnparked) {
  BodyPipe pipe(10, 10);
  int parks = 0, wakes = 0;
  pipe.set_waker([&] { ++wakes; });
  // Bytes and no reader parked: no wake.
  ASSERT_TRUE(pipe.write(counting(2)));
  EXPECT_EQ(wakes, 0);
  char buf[10];
  EXPECT_EQ(pipe.read(buf, sizeof buf, [&] { ++parks; }).got, BodyPipe::Got::bytes);
  EXPECT_EQ(pipe.read(buf, sizeof buf, [&] { ++parks; }).got, BodyPipe::Got::not_yet);
  EXPECT_EQ(parks, 1);
  ASSERT_TRUE(pipe.write(counting(3)));
  ASSERT_TRUE(pipe.write(counting(3)));
  EXPECT_EQ(wakes, 1);  // one wake for one park
  EXPECT_EQ(pipe.read(buf, sizeof buf, kNoPark).n, 6u);
  // Parked again: the end wakes it, and it reads the end.
  EXPECT_EQ(pipe.read(buf, sizeof buf, [&] { ++parks; }).got, BodyPipe::Got::not_yet);
  ASSERT_TRUE(pipe.write(counting(2)));
  EXPECT_EQ(wakes, 2);
  EXPECT_EQ(pipe.read(buf, sizeof buf, kNoPark).n, 2u);
  EXPECT_EQ(pipe.read(buf, sizeof buf, [&] { ++parks; }).got, BodyPipe::Got::not_yet);
  pipe.end();
  EXPECT_EQ(wakes, 3);
  EXPECT_EQ(pipe.read(buf, sizeof buf, kNoPark).got, BodyPipe::Got::end);
  EXPECT_EQ(parks, 3);
}

TEST(BodyPipe, ABodyThatCannotBeWholeEndsInError) {
  char buf[64];
  {  // Ended short of its length.
    BodyPipe pipe(10, 64);
    ASSERT_TRUE(pipe.write(counting(9)));
    pipe.end();
    EXPECT_EQ(pipe.read(buf, sizeof buf, kNoPark).got, BodyPipe::Got::error);
  }
  {  // Written past its length: the write fails, and so does the body.
    BodyPipe pipe(10, 64);
    ASSERT_TRUE(pipe.write(counting(9)));
    EXPECT_FALSE(pipe.write(counting(2)));
    EXPECT_EQ(pipe.read(buf, sizeof buf, kNoPark).got, BodyPipe::Got::error);
  }
  {  // Failed: at once, the bytes not read yet dropped; a later end changes nothing.
    BodyPipe pipe(10, 64);
    ASSERT_TRUE(pipe.write(counting(10)));
    pipe.fail();
    pipe.end();
    EXPECT_EQ(pipe.read(buf, sizeof buf, kNoPark).got, BodyPipe::Got::error);
    EXPECT_FALSE(pipe.write(counting(1)));
  }
  {  // A parked reader is woken by the failure.
    BodyPipe pipe(10, 64);
    int wakes = 0;
    pipe.set_waker([&] { ++wakes; });
    EXPECT_EQ(pipe.read(buf, sizeof buf, kNoPark).got, BodyPipe::Got::not_yet);
    pipe.fail();
    EXPECT_EQ(wakes, 1);
    EXPECT_EQ(pipe.read(buf, sizeof buf, kNoPark).got, BodyPipe::Got::error);
  }
  {  // Whole: failing it afterwards is a no-op.
    BodyPipe pipe(3, 64);
    ASSERT_TRUE(pipe.write(counting(3)));
    pipe.end();
    pipe.fail();
    auto d = drain(pipe);
    EXPECT_EQ(d.bytes.size(), 3u);
    EXPECT_EQ(d.last, BodyPipe::Got::end);
  }
}

TEST(BodyPipe, AWriterWaitingForRoomGivesUpWhenTheReaderGoesOrTheServerStops) {
  for (bool stop : {false, true}) {
    BodyPipe pipe(1000, 10);
    std::atomic<int> wrote{-1};
    std::thread writer([&] { wrote = pipe.write(counting(100)) ? 1 : 0; });
    // Some of the write read, ten bytes at most at a time: the writer
    // waits for room between them, and is left waiting.
    std::size_t read = 0;
    char buf[64];
    while (read < 30) {
      auto r = pipe.read(buf, sizeof buf, [] {});
      if (r.got == BodyPipe::Got::bytes) {
        EXPECT_LE(r.n, 10u);
        read += r.n;
      } else {
        std::this_thread::yield();
      }
    }
    if (stop) pipe.stop();
    else pipe.close();
    writer.join();
    EXPECT_EQ(wrote, 0);
    EXPECT_FALSE(pipe.write(counting(1)));
    if (stop) {
      EXPECT_EQ(pipe.read(buf, sizeof buf, kNoPark).got, BodyPipe::Got::error);
    }
  }
}

// The last bytes of a body: the reader may read them and be gone (MHD has
// sent the whole length and drops the answer) before the write returns.
TEST(BodyPipe, AWriteWhoseBytesAllWentInSucceedsThoughTheReaderThenGoes) {
  BodyPipe pipe(4, 64);
  char buf[8];
  pipe.set_waker([&] {
    EXPECT_EQ(pipe.read(buf, sizeof buf, kNoPark).n, 4u);
    pipe.close();
  });
  ASSERT_EQ(pipe.read(buf, sizeof buf, kNoPark).got, BodyPipe::Got::not_yet);
  EXPECT_TRUE(pipe.write(counting(4)));
  EXPECT_FALSE(pipe.write(counting(1)));
}

TEST(BodyPipe, AClosedPipeNeverWakesItsGoneReader) {
  BodyPipe pipe(10, 64);
  int wakes = 0;
  pipe.set_waker([&] { ++wakes; });
  char buf[10];
  EXPECT_EQ(pipe.read(buf, sizeof buf, kNoPark).got, BodyPipe::Got::not_yet);
  pipe.close();
  EXPECT_FALSE(pipe.write(counting(1)));
  pipe.end();
  pipe.stop();
  EXPECT_EQ(wakes, 0);
}

// Through the server: a route that answers at once with a pipe of kLength
// bytes, writes the first half, and then does what the test says.
constexpr std::size_t kLength = 4 << 20;
constexpr std::size_t kHalf = kLength / 2;

struct Script {
  enum class Then { end, fail, wait_for_stop } then = Then::end;
  std::size_t capacity = 64 << 10;
  std::mutex mu;
  std::condition_variable cv;
  bool started = false;        // the handler answered
  bool go_on = false;          // the test lets the handler write the rest
  bool first_half = false;     // the handler's write of it returned
  bool first_half_ok = false;  // and succeeded
  bool returned = false;
  bool wrote_all = false;
};
Script* script = nullptr;

Response piped(Context&, Request& req) {
  Script& s = *script;
  auto pipe = std::make_shared<BodyPipe>(kLength, s.capacity);
  std::stop_callback on_stop(req.stopping, [&] {
    pipe->stop();
    std::lock_guard lock(s.mu);
    s.cv.notify_all();
  });
  Response r;
  r.content_type = "application/octet-stream";
  r.pipe = pipe;
  req.answer_now(std::move(r));
  {
    std::lock_guard lock(s.mu);
    s.started = true;
    s.cv.notify_all();
  }
  const Bytes body = counting(kLength);
  bool ok = pipe->write(std::span<const std::uint8_t>(body).first(kHalf));
  {
    std::unique_lock lock(s.mu);
    s.first_half = true;
    s.first_half_ok = ok;
    s.cv.notify_all();
    s.cv.wait(lock, [&] { return s.go_on || req.stopping.stop_requested(); });
  }
  if (s.then == Script::Then::fail) pipe->fail();
  else if (s.then == Script::Then::end) {
    ok = ok && pipe->write(std::span<const std::uint8_t>(body).subspan(kHalf));
    pipe->end();
  }
  if (s.then != Script::Then::end || !ok) pipe->fail();
  std::lock_guard lock(s.mu);
  s.wrote_all = ok && s.then == Script::Then::end;
  s.returned = true;
  s.cv.notify_all();
  return error(kInternal, "dropped: answered already");
}

class PipedAnswers : public ::testing::Test {
 protected:
  void SetUp() override {
    script = &script_;
    ServerOptions o;
    o.socket_path = dir_.path() + "/api.sock";
    o.max_connections = 8;
    o.connection_timeout = std::chrono::seconds(30);
    o.threads = 2;
    std::vector<Route> routes{
        {"piped", "/v1/test/piped", false, {{"GET", piped, Access::read, Body::none, Wait::storage}}}};
    server_ = std::make_unique<ApiServer>(service_, o, std::move(routes));
    auto started = server_->start();
    ASSERT_TRUE(started.ok()) << started.error().message;
    fd_ = testing::connect_unix(o.socket_path);
    ASSERT_GE(fd_, 0);
  }
  // The request, once the test has set the script.
  void ask() { ASSERT_TRUE(testing::send_all(fd_, "GET /v1/test/piped HTTP/1.1\r\nHost: x\r\n\r\n")); }
  void TearDown() override {
    if (fd_ >= 0) ::close(fd_);
    {
      std::lock_guard lock(script_.mu);
      script_.go_on = true;
      script_.cv.notify_all();
    }
    server_.reset();
    script = nullptr;
  }
  // Reads until `n` more body bytes are in, or the connection closed: the
  // header block and those body bytes.
  std::pair<std::string, std::string> read_body(std::size_t n) {
    char buf[65536];
    for (;;) {
      if (head_.empty()) {
        auto end = in_.find("\r\n\r\n");
        if (end != std::string::npos) {
          head_ = in_.substr(0, end);
          in_.erase(0, end + 4);
        }
      }
      if (!head_.empty() && in_.size() >= n) break;
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 30000) <= 0) break;
      ssize_t got = recv(fd_, buf, sizeof buf, 0);
      if (got <= 0) {
        closed_ = true;
        break;
      }
      in_.append(buf, std::size_t(got));
    }
    std::string body = in_.substr(0, std::min(n, in_.size()));
    in_.erase(0, body.size());
    return {head_, body};
  }
  void go_on() {
    std::lock_guard lock(script_.mu);
    script_.go_on = true;
    script_.cv.notify_all();
  }
  void wait_returned() {
    std::unique_lock lock(script_.mu);
    ASSERT_TRUE(script_.cv.wait_for(lock, std::chrono::seconds(30), [&] { return script_.returned; }));
  }
  static std::string expected(std::size_t from, std::size_t n) {
    Bytes b = counting(kLength);
    return std::string(b.begin() + std::ptrdiff_t(from), b.begin() + std::ptrdiff_t(from + n));
  }

  Script script_;
  tests::TempDir dir_{"pipe"};
  ::testing::NiceMock<testing::MockService> service_;
  std::unique_ptr<ApiServer> server_;
  int fd_ = -1;
  std::string head_, in_;
  bool closed_ = false;
};

TEST_F(PipedAnswers, TheAnswerReachesItsClientBeforeItsBodyIsAllWritten) {
  ask();
  // The first half, while the handler holds the rest back: the client has
  // the status, the whole length, and those bytes.
  auto [head, first] = read_body(kHalf);
  EXPECT_NE(head.find("HTTP/1.1 200"), std::string::npos) << head;
  EXPECT_NE(head.find("Content-Length: " + std::to_string(kLength)), std::string::npos) << head;
  ASSERT_EQ(first.size(), kHalf);
  EXPECT_EQ(first, expected(0, kHalf));
  {
    std::lock_guard lock(script_.mu);
    EXPECT_FALSE(script_.returned);
  }
  // Its reader found the pipe empty and parked (the connection
  // suspended): the rest wakes it.
  go_on();
  auto [_, rest] = read_body(kHalf);
  ASSERT_EQ(rest.size(), kHalf);
  EXPECT_EQ(rest, expected(kHalf, kHalf));
  wait_returned();
  EXPECT_TRUE(script_.wrote_all);
  // The connection stays for the next request (the body was whole).
  EXPECT_FALSE(closed_);
}

TEST_F(PipedAnswers, AFailedBodyClosesTheConnectionShortOfItsLength) {
  script_.then = Script::Then::fail;
  ask();
  auto [head, first] = read_body(kHalf);
  ASSERT_EQ(first.size(), kHalf);
  go_on();
  auto [_, rest] = read_body(1);
  EXPECT_TRUE(closed_);
  EXPECT_TRUE(rest.empty());
  wait_returned();
}

TEST_F(PipedAnswers, StoppingTheServerEndsAnAnswerWhoseReaderWaits) {
  // The handler waits (a storage that sends nothing) with its reader
  // parked: stop() must neither hang nor leave the connection suspended.
  script_.then = Script::Then::wait_for_stop;
  ask();
  auto [head, first] = read_body(kHalf);
  ASSERT_EQ(first.size(), kHalf);
  server_->stop();
  wait_returned();
  auto [_, rest] = read_body(1);
  EXPECT_TRUE(closed_);
}

TEST_F(PipedAnswers, StoppingTheServerEndsAWriterWaitingForRoom) {
  // The client reads nothing: the first half (2 MiB) is more than the
  // socket, MHD's block and the pipe hold, so its write waits for room
  // until the server stops.
  script_.capacity = 4096;
  ask();
  {
    std::unique_lock lock(script_.mu);
    ASSERT_TRUE(script_.cv.wait_for(lock, std::chrono::seconds(30), [&] { return script_.started; }));
  }
  server_->stop();
  wait_returned();
  EXPECT_TRUE(script_.first_half);
  EXPECT_FALSE(script_.first_half_ok);
  EXPECT_FALSE(script_.wrote_all);
}

}  // namespace body_pipe_test
}  // namespace dedupd::daemon::api::http
