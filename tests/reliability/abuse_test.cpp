// Abuse of the socket: a thousand connections at once, a 1 GiB body
// streamed in chunks, a slow-drip client, garbage bytes, clients that
// disconnect mid-request. After each, dedupd must still be running and
// answer an ordinary query correctly; the latency of that query is printed,
// not asserted.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <thread>

#include "harness/daemon_test.hpp"
#include "support.hpp"

namespace dedupd::reliability {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

double us_since(Clock::time_point t0) { return std::chrono::duration<double, std::micro>(Clock::now() - t0).count(); }

// Private memory of a process in KiB (anonymous: heap, stacks), from
// smaps_rollup; -1 when unreadable.
long anon_kib(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/smaps_rollup");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("Anonymous:", 0) == 0) return std::atol(line.c_str() + 10);
  return -1;
}

class AbuseTest : public itest::DaemonTest {
 protected:
  void SetUp() override {
    DaemonTest::SetUp();
    auto s = itest::make_shard({.seed = 77, .xorbs = 4, .chunks_per_xorb = 64});
    hash_ = s.first_chunks[2].to_string();
    itest::drop_file(incoming, s.file_name(), s.bytes);
    start();
    ASSERT_TRUE(eventually([&] { return chunk_found(hash_); })) << "the shard was not indexed";
  }

  // The daemon is up and answers an ordinary lookup right; prints latency.
  void expect_answers_normally(const char* after) {
    ASSERT_TRUE(daemon.running()) << "dedupd died after " << after;
    itest::HttpClient c(socket.string());
    std::vector<double> t;
    for (int i = 0; i < 200; ++i) {
      auto t0 = Clock::now();
      auto r = c.get("/v1/chunk/" + hash_);
      t.push_back(us_since(t0));
      ASSERT_EQ(r.status, 200) << "after " << after << ": " << r.body;
      ASSERT_EQ(r.json()["locations"].size(), 1u);
    }
    auto p = percentiles(t);
    std::printf("  after %s: dedupd up (pid %d, %ld KiB anonymous memory), 200 lookups p50 %.0f us, p99 %.0f us\n",
                after, daemon.pid(), anon_kib(daemon.pid()), p.p50, p.p99);
  }

  std::string hash_;
};

TEST_F(AbuseTest, AThousandConcurrentConnections) {
  rlimit r{};
  ::getrlimit(RLIMIT_NOFILE, &r);
  if (r.rlim_cur < 1200 && r.rlim_max >= 1200) {
    r.rlim_cur = std::min<rlim_t>(r.rlim_max, 4096);
    ::setrlimit(RLIMIT_NOFILE, &r);
  }
  const int n = r.rlim_cur >= 1200 ? 1000 : int(r.rlim_cur) - 100;
  std::vector<int> fds;
  int refused = 0;
  for (int i = 0; i < n; ++i) {
    int fd = connect_unix(socket);
    if (fd < 0) {
      ++refused;
      continue;
    }
    fds.push_back(fd);
  }
  std::string req = "GET /v1/chunk/" + hash_ + " HTTP/1.1\r\nHost: x\r\n\r\n";
  for (int fd : fds) send_all(fd, req);
  // Collect what each connection gets: an answer, a close, or nothing yet.
  std::vector<std::string> got(fds.size());
  std::vector<bool> done(fds.size(), false);
  auto deadline = Clock::now() + 60s;
  std::size_t open = fds.size();
  while (open && Clock::now() < deadline) {
    std::vector<pollfd> p;
    std::vector<std::size_t> which;
    for (std::size_t i = 0; i < fds.size(); ++i)
      if (!done[i]) p.push_back({fds[i], POLLIN, 0}), which.push_back(i);
    if (::poll(p.data(), p.size(), 500) <= 0) break;  // nothing more is coming
    for (std::size_t k = 0; k < p.size(); ++k) {
      if (!p[k].revents) continue;
      std::size_t i = which[k];
      char buf[8192];
      ssize_t m = ::recv(fds[i], buf, sizeof buf, MSG_DONTWAIT);
      if (m > 0) got[i].append(buf, std::size_t(m));
      if (m <= 0 || got[i].find("\r\n\r\n") != std::string::npos) done[i] = true, --open;
    }
  }
  int ok = 0, closed = 0, other = 0;
  for (std::size_t i = 0; i < fds.size(); ++i) {
    int st = status_of(got[i]);
    if (st == 200) ++ok;
    else if (st == 0) ++closed;
    else ++other;
    ASSERT_TRUE(st == 0 || st == 200 || st == 503) << "connection " << i << " got " << got[i].substr(0, 200);
  }
  std::printf("  %d connections at once: %zu connected, %d refused at connect; %d answered 200, %d closed or "
              "unanswered, %d other\n",
              n, fds.size(), refused, ok, closed, other);
  EXPECT_GT(ok, 0) << "no connection was served at all";
  // While they are all held open, a newcomer waits for a free slot (up to
  // the request timeout): reported, not asserted.
  {
    int fd = connect_unix(socket);
    auto t0 = Clock::now();
    send_all(fd, req);
    int st = status_of(read_response(fd, 3'000));
    ::close(fd);
    std::printf("  a newcomer while %zu connections are held open: %s after %.0f ms\n", fds.size(),
                st ? ("answered " + std::to_string(st)).c_str() : "no answer", us_since(t0) / 1000);
  }
  for (int fd : fds) ::close(fd);
  expect_answers_normally("a thousand connections");
}

TEST_F(AbuseTest, AGibibyteBodyIsRefusedAndDropped) {
  // Announced: refused from Content-Length before any byte of it is sent.
  {
    int fd = connect_unix(socket);
    ASSERT_GE(fd, 0);
    send_all(fd, "POST /v1/chunk HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 "Content-Length: 1073741824\r\n\r\n");
    std::string reply = read_response(fd, 10'000);
    ::close(fd);
    EXPECT_EQ(status_of(reply), 413) << reply.substr(0, 300);
  }
  // Streamed in chunks, no length announced: 1 GiB from one 1 MiB buffer.
  int fd = connect_unix(socket);
  ASSERT_GE(fd, 0);
  std::string chunk(1 << 20, ' ');
  chunk.front() = '{';
  char size_line[32];
  std::snprintf(size_line, sizeof size_line, "%zx\r\n", chunk.size());
  ASSERT_TRUE(send_all(fd, "POST /v1/chunk HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                           "Transfer-Encoding: chunked\r\n\r\n"));
  std::atomic<long> peak_kib{0};
  std::atomic<bool> sending{true};
  std::thread watch([&] {
    while (sending) {
      peak_kib = std::max<long>(peak_kib, anon_kib(daemon.pid()));
      std::this_thread::sleep_for(50ms);
    }
  });
  auto t0 = Clock::now();
  std::uint64_t sent = 0;
  bool cut = false;
  for (int i = 0; i < 1024 && !cut; ++i) {
    cut = !send_all(fd, size_line) || !send_all(fd, chunk) || !send_all(fd, "\r\n");
    if (!cut) sent += chunk.size();
  }
  if (!cut) send_all(fd, "0\r\n\r\n");
  std::string reply = read_response(fd, 30'000);
  sending = false;
  watch.join();
  ::close(fd);
  int st = status_of(reply);
  std::printf("  streamed %llu MiB in %.1f s (%s); answer %d; dedupd's anonymous memory peaked at %ld MiB\n",
              (unsigned long long)(sent >> 20), us_since(t0) / 1e6, cut ? "the server cut it short" : "all sent",
              st, peak_kib.load() / 1024);
  EXPECT_TRUE(st == 413 || (st == 0 && cut)) << "a body over the limit must be a 413: " << reply.substr(0, 300);
  expect_answers_normally("a 1 GiB body");
}

TEST_F(AbuseTest, ASlowDripClientHoldsUpNobody) {
  int fd = connect_unix(socket);
  ASSERT_GE(fd, 0);
  std::string req = "GET /v1/chunk/" + hash_ + " HTTP/1.1\r\nHost: drip\r\n\r\n";
  std::atomic<bool> dripping{true};
  std::atomic<int> others_ok{0}, others_bad{0};
  std::thread others([&] {
    itest::HttpClient c(socket.string());
    while (dripping) {
      (c.get("/v1/chunk/" + hash_).status == 200 ? others_ok : others_bad)++;
      std::this_thread::sleep_for(5ms);
    }
  });
  auto t0 = Clock::now();
  for (char ch : req) {
    ASSERT_TRUE(send_all(fd, std::string_view(&ch, 1))) << "the server dropped a slow but live client";
    std::this_thread::sleep_for(20ms);
  }
  std::string reply = read_response(fd, 10'000);
  dripping = false;
  others.join();
  ::close(fd);
  std::printf("  dripped %zu bytes over %.1f s; meanwhile %d other lookups answered, %d failed; drip got %d\n",
              req.size(), us_since(t0) / 1e6, others_ok.load(), others_bad.load(), status_of(reply));
  EXPECT_EQ(status_of(reply), 200);
  EXPECT_GT(others_ok.load(), 0);
  EXPECT_EQ(others_bad.load(), 0);
  expect_answers_normally("a slow-drip client");
}

TEST_F(AbuseTest, GarbageBytesGetAClientErrorOrAClose) {
  std::mt19937_64 rng(12345);
  std::string random_bytes(64 << 10, '\0');
  for (auto& c : random_bytes) c = char(rng());
  std::string tls_hello("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11);
  tls_hello += std::string(500, '\x42');
  std::string many_headers = "GET /v1/stats HTTP/1.1\r\nHost: x\r\n";
  for (int i = 0; i < 10000; ++i) many_headers += "X-" + std::to_string(i) + ": y\r\n";
  many_headers += "\r\n";
  const std::vector<std::pair<const char*, std::string>> cases = {
      {"random bytes", random_bytes},
      {"TLS hello", tls_hello},
      {"HTTP/2 preface", std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")},
      {"bare CRLFs", std::string("\r\n\r\n\r\n\r\n")},
      {"no version", std::string("GET /v1/stats\r\n\r\n")},
      {"1 MiB request line", "GET /" + std::string(1 << 20, 'a') + " HTTP/1.1\r\n\r\n"},
      {"header without colon", std::string("GET /v1/stats HTTP/1.1\r\nHost x\r\nno colon here\r\n\r\n")},
      {"negative length", std::string("POST /v1/chunk HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n{}")},
      {"huge length", std::string("POST /v1/chunk HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\n")},
      {"two lengths", std::string("POST /v1/chunk HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 9\r\n\r\n{}")},
      {"bad chunk size", std::string("POST /v1/chunk HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n")},
      {"NUL in the path", std::string("GET /v1/chunk/\0\0\0 HTTP/1.1\r\nHost: x\r\n\r\n", 38)},
      {"escapes in the path", std::string("GET /v1/chunk/%00%ff%2e%2e/../../etc HTTP/1.1\r\nHost: x\r\n\r\n")},
      {"10,000 headers", many_headers},
      {"odd method", std::string("BREW /v1/stats HTTP/1.1\r\nHost: x\r\n\r\n")},
      {"batch of junk", std::string("POST /v1/chunk HTTP/1.1\r\nHost: x\r\nContent-Length: 12\r\n\r\n{\"hashes\":[1")},
  };
  for (const auto& [name, bytes] : cases) {
    int fd = connect_unix(socket);
    ASSERT_GE(fd, 0);
    send_all(fd, bytes);
    ::shutdown(fd, SHUT_WR);
    std::string reply = read_response(fd, 2'000);
    ::close(fd);
    int st = status_of(reply);
    std::printf("  %-22s -> %s\n", name, st ? std::to_string(st).c_str() : "closed without an answer");
    EXPECT_TRUE(st == 0 || (st >= 400 && st < 500) || st == 505) << name << ": " << reply.substr(0, 300);
    ASSERT_TRUE(daemon.running()) << "dedupd died on " << name;
  }
  expect_answers_normally("garbage bytes");
}

TEST_F(AbuseTest, ClientsThatDisconnectMidRequest) {
  std::string batch = "{\"hashes\":[";
  for (int i = 0; i < 100000; ++i) batch += std::string(i ? ",\"" : "\"") + hash_ + "\"";
  batch += "]}";
  const std::string batch_req = "POST /v1/chunk HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
                                std::to_string(batch.size()) + "\r\n\r\n" + batch;
  const std::vector<std::pair<const char*, std::string>> cases = {
      {"half a request line", std::string("GET /v1/chu")},
      {"headers, no blank line", std::string("GET /v1/stats HTTP/1.1\r\nHost: x\r\n")},
      {"10 of 1000 body bytes", std::string("POST /v1/chunk HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"hashes\"")},
      {"half a chunked body", std::string("POST /v1/chunk HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n100\r\n{\"h")},
      {"admin upload, half", std::string("POST /v1/admin/ingest HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\nMDB")},
      {"admin rescan, gone", std::string("POST /v1/admin/rescan HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")},
      {"11 MB answer unread", batch_req},
  };
  for (const auto& [name, bytes] : cases) {
    for (int i = 0; i < 20; ++i) {
      int fd = connect_unix(socket);
      ASSERT_GE(fd, 0);
      send_all(fd, bytes);
      if (i % 2) std::this_thread::sleep_for(2ms);  // sometimes after the server has started on it
      if (i % 4 == 3) ::shutdown(fd, SHUT_WR);      // sometimes half-closed first
      ::close(fd);
    }
    std::this_thread::sleep_for(50ms);
    ASSERT_TRUE(daemon.running()) << "dedupd died after " << name;
    std::printf("  20 x %s: dedupd up\n", name);
  }
  expect_answers_normally("clients that disconnect mid-request");
}

}  // namespace
}  // namespace dedupd::reliability
