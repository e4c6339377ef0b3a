// The TCP metrics listener: what the socket answers for /metrics and
// /healthz, nothing else, and never stuck behind its clients or the socket.
#include "daemon/api/http/metrics_listener.hpp"

#include <curl/curl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <set>
#include <sstream>
#include <thread>

#include "api/routes.hpp"
#include "api_test_support.hpp"
#include "json_checks.hpp"

namespace dedupd::daemon::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Return;
using Clock = std::chrono::steady_clock;

std::size_t append_to(char* data, std::size_t size, std::size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

// One request over TCP on a connection of its own.
HttpReply tcp_request(const std::string& url, const std::string& method, const std::string& body = {}) {
  HttpReply reply;
  CURL* c = curl_easy_init();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method.c_str());
  if (method == "HEAD") curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  if (!body.empty()) {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.size()));
  }
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &append_to);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &reply.body);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, &append_to);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &reply.headers);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
  if (curl_easy_perform(c) == CURLE_OK) {
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &reply.status);
    char* type = nullptr;
    curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &type);
    if (type) reply.content_type = type;
  } else {
    reply.status = -1;
  }
  curl_easy_cleanup(c);
  return reply;
}

// The metric families a page declares ("# TYPE name type" lines).
std::set<std::string> families(const std::string& page) {
  std::set<std::string> out;
  std::istringstream in(page);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("# TYPE ", 0) == 0) out.insert(line);
  return out;
}

// A Unix socket that takes connections into its backlog and never answers.
class SilentSocket {
 public:
  explicit SilentSocket(const std::string& path) {
    fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
    unlink(path.c_str());
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(listen(fd_, 16), 0);
  }
  ~SilentSocket() { close(fd_); }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};

class MetricsListenerTest : public ApiTest {
 protected:
  void TearDown() override {
    if (listener_) listener_->stop();
    listener_.reset();
    ApiTest::TearDown();
  }

  void start_listener(const std::function<void(api::http::MetricsListenerOptions&)>& tweak = {}) {
    api::http::MetricsListenerOptions o;
    o.host = "127.0.0.1";
    o.port = 0;
    o.socket_path = socket_path_;
    o.paths = {std::string(dedupd::api::kMetrics), std::string(dedupd::api::kHealth)};
    if (tweak) tweak(o);
    listener_ = std::make_unique<api::http::MetricsListener>(o);
    auto started = listener_->start();
    ASSERT_TRUE(started.ok()) << started.error().message;
    ASSERT_NE(listener_->port(), 0);
  }
  std::string url(const std::string& path) const { return "http://" + listener_->address() + path; }
  HttpReply tcp(const std::string& method, const std::string& path, const std::string& body = {}) {
    return tcp_request(url(path), method, body);
  }

  std::unique_ptr<api::http::MetricsListener> listener_;
};

TEST_F(MetricsListenerTest, MetricsAreTheSocketsPage) {
  start_listener();
  auto over_tcp = tcp("GET", "/metrics");
  ASSERT_EQ(over_tcp.status, 200) << over_tcp.body;
  EXPECT_EQ(over_tcp.content_type, "text/plain; version=0.0.4; charset=utf-8");
  auto on_socket = client_->get("/metrics");
  ASSERT_EQ(on_socket.status, 200);
  EXPECT_EQ(families(over_tcp.body), families(on_socket.body));
  EXPECT_GT(families(over_tcp.body).size(), 20u);
  // The request counters are the socket's own: the scrape over TCP was
  // counted there.
  EXPECT_THAT(on_socket.body, HasSubstr("dedupd_http_requests_total{route=\"metrics\",status=\"200\"} 1\n"));
  EXPECT_THAT(over_tcp.body, HasSubstr("\ndedupd_build_info{version=\""));
  EXPECT_THAT(over_tcp.body, HasSubstr("\nprocess_open_fds "));
  EXPECT_THAT(over_tcp.body, HasSubstr("\nprocess_start_time_seconds "));
  EXPECT_THAT(over_tcp.body, HasSubstr("\nprocess_resident_memory_bytes "));
}

TEST_F(MetricsListenerTest, HealthzIsTheSocketsAnswerStartingToo) {
  start_listener();
  auto ok = tcp("GET", "/healthz");
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.body, R"({"status":"ok"})");
  ON_CALL(service_, index()).WillByDefault(Return(nullptr));
  auto starting = tcp("GET", "/healthz");
  EXPECT_EQ(starting.status, 503);
  EXPECT_EQ(starting.body, client_->get("/healthz").body);
  EXPECT_EQ(starting.json()["status"], "starting");
}

TEST_F(MetricsListenerTest, OtherPathsAreNotFoundAndNeverReachTheSocket) {
  start_listener();
  EXPECT_CALL(service_, rescan()).Times(0);
  EXPECT_CALL(service_, fleet_status()).Times(0);
  for (const char* path : {"/v1/status", "/v1/stats", "/v1/fleet/status", "/", "/metrics/", "/healthz/x",
                           "/v1/chunk/0000000000000000000000000000000000000000000000000000000000000000"}) {
    auto r = tcp("GET", path);
    EXPECT_EQ(r.status, 404) << path;
    expect_error(r.json(), "not_found");
  }
  // Not 405: the path is unknown here whatever the socket does with it.
  EXPECT_EQ(tcp("POST", std::string(dedupd::api::kRescan)).status, 404);
  auto on_socket = client_->get("/metrics");
  EXPECT_THAT(on_socket.body, ::testing::Not(HasSubstr("route=\"status\"")));
  EXPECT_THAT(on_socket.body, ::testing::Not(HasSubstr("route=\"unmatched\"")));
}

TEST_F(MetricsListenerTest, OtherMethodsAreNotAllowedAndHeadIsServed) {
  start_listener();
  for (const char* method : {"POST", "PUT", "DELETE", "OPTIONS"}) {
    auto r = tcp(method, "/metrics");
    EXPECT_EQ(r.status, 405) << method;
    EXPECT_THAT(r.headers, HasSubstr("Allow: GET, HEAD\r\n")) << method;
    expect_error(r.json(), "method_not_allowed");
  }
  EXPECT_EQ(tcp("POST", "/healthz").status, 405);
  auto head = tcp("HEAD", "/metrics");
  EXPECT_EQ(head.status, 200);
  EXPECT_TRUE(head.body.empty());
}

TEST_F(MetricsListenerTest, ARequestWithABodyIsRefused) {
  start_listener();
  auto r = tcp("GET", "/metrics", "{}");
  EXPECT_EQ(r.status, 400);
  expect_error(r.json(), "bad_request");
  EXPECT_THAT(r.json()["error"]["message"].get<std::string>(), HasSubstr("no request body"));
  // Malformed requests get libmicrohttpd's own 4xx.
  for (auto [request, status] : {std::pair<std::string, std::string>{"GET /metrics HTTP/1.1\r\nNoColon\r\n\r\n", "400"},
                                 {"GET /" + std::string(20'000, 'x') + " HTTP/1.1\r\nHost: x\r\n\r\n", "414"}}) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(listener_->port());
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ASSERT_TRUE(send_all(fd, request));
    bool closed = false;
    std::string reply = read_until_closed(fd, 10'000, &closed);
    close(fd);
    EXPECT_THAT(reply, ::testing::StartsWith("HTTP/1.1 " + status)) << status;
  }
  EXPECT_EQ(tcp("GET", "/healthz").status, 200);
}

TEST_F(MetricsListenerTest, ASocketThatIsGoneOrSilentIsA503WithTheReason) {
  start_listener([](api::http::MetricsListenerOptions& o) { o.timeout = std::chrono::milliseconds(500); });
  server_->stop();
  auto gone = tcp("GET", "/metrics");
  EXPECT_EQ(gone.status, 503);
  EXPECT_THAT(gone.json()["error"]["message"].get<std::string>(), HasSubstr("cannot connect to " + socket_path_));
  SilentSocket silent(socket_path_);
  auto t0 = Clock::now();
  auto r = tcp("GET", "/healthz");
  EXPECT_EQ(r.status, 503);
  EXPECT_THAT(r.json()["error"]["message"].get<std::string>(), HasSubstr("did not answer /healthz within 500 ms"));
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5));
}

TEST_F(MetricsListenerTest, StopDoesNotWaitForASilentSocket) {
  server_->stop();
  SilentSocket silent(socket_path_);
  start_listener([](api::http::MetricsListenerOptions& o) { o.timeout = std::chrono::seconds(60); });
  std::atomic<long> status{0};
  std::thread scraper([&] { status = tcp("GET", "/metrics").status; });
  // The request is waiting on the socket once the socket's backlog holds it.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto t0 = Clock::now();
  listener_->stop();
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5));
  scraper.join();
  EXPECT_NE(status.load(), 200);
}

// Idle and trickling clients hold every connection: a scraper still gets in
// (the idle ones make room), and the socket's own clients never notice.
TEST_F(MetricsListenerTest, ClientsHoldingEveryConnectionDoNotLockAScrapeOut) {
  start_listener([](api::http::MetricsListenerOptions& o) {
    o.max_connections = 4;
    o.header_timeout = std::chrono::seconds(2);
  });
  std::vector<int> held;
  for (int i = 0; i < 8; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(listener_->port());
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    if (i % 2) send_all(fd, "GET /metr");  // trickling: never ends its headers
    held.push_back(fd);
  }
  auto t0 = Clock::now();
  auto r = tcp("GET", "/metrics");
  EXPECT_EQ(r.status, 200);
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(8));
  EXPECT_EQ(client_->get("/healthz").status, 200);
  for (int fd : held) close(fd);
}

TEST_F(MetricsListenerTest, AnAddressInUseIsAnErrorNamingIt) {
  start_listener();
  api::http::MetricsListenerOptions o;
  o.host = "127.0.0.1";
  o.port = listener_->port();
  o.socket_path = socket_path_;
  o.paths = {"/metrics"};
  api::http::MetricsListener second(o);
  auto started = second.start();
  ASSERT_FALSE(started.ok());
  EXPECT_EQ(started.error().rule, "metrics.listen");
  EXPECT_THAT(started.error().message, HasSubstr("cannot listen on 127.0.0.1:" + std::to_string(o.port)));
}

TEST_F(MetricsListenerTest, IPv6LoopbackWorksWhereTheMachineHasIt) {
  int probe = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_addr = in6addr_loopback;
  bool v6 = probe >= 0 && bind(probe, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  if (probe >= 0) close(probe);
  if (!v6) GTEST_SKIP() << "no IPv6 loopback here";
  start_listener([](api::http::MetricsListenerOptions& o) { o.host = "::1"; });
  EXPECT_EQ(listener_->address(), "[::1]:" + std::to_string(listener_->port()));
  EXPECT_EQ(tcp("GET", "/healthz").status, 200);
}

// What a server on a Unix socket says, taken apart as it says it.
class UnixAnswerTest : public ::testing::Test {
 protected:
  // Serves `reply` to the first connection, then closes it.
  void serve(std::string reply) {
    fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path_.c_str(), sizeof a.sun_path - 1);
    ASSERT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ASSERT_EQ(listen(fd_, 4), 0);
    thread_ = std::thread([this, reply = std::move(reply)] {
      int c = accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      char buf[4096];
      std::string request;
      while (request.find("\r\n\r\n") == std::string::npos) {
        ssize_t n = recv(c, buf, sizeof buf, 0);
        if (n <= 0) break;
        request.append(buf, std::size_t(n));
      }
      request_ = request;
      send_all(c, reply);
      close(c);
    });
  }
  void TearDown() override {
    if (thread_.joinable()) thread_.join();
    if (fd_ >= 0) close(fd_);
  }
  TempDir dir_{"unix-answer"};
  std::string path_ = dir_.path() + "/s.sock";
  int fd_ = -1;
  std::thread thread_;
  std::string request_;
};

TEST_F(UnixAnswerTest, AChunkedAnswerIsPutTogether) {
  serve(
      "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5\r\nhello\r\n7;x=y\r\n, world\r\n0\r\n\r\n");
  auto a = api::http::get_over_unix(path_, "/metrics", std::chrono::seconds(10), 1 << 20);
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->status, 200u);
  EXPECT_EQ(a->content_type, "text/plain");
  EXPECT_EQ(a->body, "hello, world");
  thread_.join();
  EXPECT_THAT(request_, ::testing::StartsWith("GET /metrics HTTP/1.1\r\n"));
}

TEST_F(UnixAnswerTest, AnAnswerCutShortIsAnError) {
  serve("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this");
  auto a = api::http::get_over_unix(path_, "/metrics", std::chrono::seconds(10), 1 << 20);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().rule, "metrics.upstream");
  EXPECT_THAT(a.error().message, HasSubstr("short"));
}

TEST_F(UnixAnswerTest, AnAnswerOverTheBoundIsAnError) {
  serve("HTTP/1.1 200 OK\r\nContent-Length: 4096\r\n\r\n" + std::string(4096, 'x'));
  auto a = api::http::get_over_unix(path_, "/metrics", std::chrono::seconds(10), 1000);
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(a.error().message, HasSubstr("over 1000 bytes"));
}

TEST_F(UnixAnswerTest, SomethingThatIsNotHttpIsAnError) {
  serve("SSH-2.0-OpenSSH\r\n\r\n");
  auto a = api::http::get_over_unix(path_, "/metrics", std::chrono::seconds(10), 1 << 20);
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(a.error().message, HasSubstr("no HTTP answer"));
}

}  // namespace
}  // namespace dedupd::daemon::testing
