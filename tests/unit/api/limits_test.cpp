// Bounded request size, connections and time, and nothing on the socket
// brings the server down or locks other clients out.
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "api/routes.hpp"
#include "api_test_support.hpp"
#include "json_checks.hpp"

namespace dedupd::daemon::testing {
namespace {

using ::testing::_;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr int kWaitMs = 10'000;  // generous bound, not a timing assertion

class LimitsTest : public ApiTest {};

TEST_F(LimitsTest, AnnouncedOversizedBodyIsRefusedBeforeItIsSent) {
  start_server([](api::http::ServerOptions& o) { o.max_body_bytes = 1024; });
  EXPECT_CALL(service_, ingest(_, _)).Times(0);
  // With "Expect: 100-continue" the client only sends the body when asked.
  auto r = client_->request("POST", std::string(dedupd::api::kIngest), std::string(64 * 1024, 'x'),
                            {"Expect: 100-continue"});
  ASSERT_EQ(r.status, 413) << r.body;
  expect_error(r.json(), "too_large");
  EXPECT_EQ(client_->get(std::string(dedupd::api::kHealth)).status, 200);
}

TEST_F(LimitsTest, ChunkedOversizedBodyIsDroppedWhileReceived) {
  start_server([](api::http::ServerOptions& o) { o.max_body_bytes = 1024; });
  EXPECT_CALL(service_, ingest(_, _)).Times(0);
  int fd = connect_unix(socket_path_);
  ASSERT_GE(fd, 0);
  std::string req = "POST /v1/admin/ingest HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  std::string chunk(4096, 'y');
  for (int i = 0; i < 64; ++i) req += "1000\r\n" + chunk + "\r\n";  // 256 KiB in 4 KiB chunks
  req += "0\r\n\r\n";
  ASSERT_TRUE(send_all(fd, req));
  shutdown(fd, SHUT_WR);
  bool closed = false;
  std::string reply = read_until_closed(fd, kWaitMs, &closed);
  close(fd);
  EXPECT_THAT(reply, StartsWith("HTTP/1.1 413"));
  EXPECT_THAT(reply, HasSubstr("too_large"));
}

// A batch has no size limit: its body is parsed as it arrives and its
// answer streamed, so one larger than the bodies the server holds at once,
// and than the old 100,000-hash limit, is answered in full.
TEST_F(LimitsTest, ABatchOfAnySizeIsAnswered) {
  start_server([](api::http::ServerOptions& o) {
    o.max_body_bytes = 1 << 20;
    o.max_query_body_bytes = 1 << 20;
    o.max_body_memory = 3 << 20;  // 2 MiB for queries: a tenth of the body
  });
  const std::size_t n = dedupd::api::kMaxBatchHashes + 50'000;
  std::string body = R"({"hashes":[)";
  body.reserve(n * 67 + 16);
  const std::string h = "\"" + std::string(64, '0') + "\"";
  for (std::size_t i = 0; i < n; ++i) body += (i ? "," : "") + h;
  body += "]}";
  auto r = client_->post(std::string(dedupd::api::kChunkBatch), body);
  ASSERT_EQ(r.status, 200) << r.body.substr(0, 300);
  auto doc = r.json();
  EXPECT_EQ(doc["results"].size(), n);
  EXPECT_EQ(doc["missing"], n);
}

// A request line and headers, with an announced body of `length` bytes.
std::string post_head(std::string_view path, std::uint64_t length) {
  return "POST " + std::string(path) + " HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(length) + "\r\n\r\n";
}

int status_of(const std::string& reply) { return reply.rfind("HTTP/1.1 ", 0) == 0 ? std::atoi(reply.c_str() + 9) : 0; }

// Each body route gets room for what it reads: a stray body on a route
// that takes none is refused, while the upload route takes it.
TEST_F(LimitsTest, EachRouteHasTheBodyLimitOfWhatItReads) {
  start_server([](api::http::ServerOptions& o) { o.max_body_bytes = 4 << 20; });
  // A body on a route that takes none: a stray "{}" is fine, more is not.
  auto r = client_->request("GET", std::string(dedupd::api::kHealth), "{}");
  EXPECT_EQ(r.status, 200) << r.body;
  r = client_->request("GET", std::string(dedupd::api::kHealth), std::string(4096, ' '));
  EXPECT_EQ(r.status, 413) << r.body;

  // The upload route takes the same body.
  EXPECT_CALL(service_, ingest(_, _)).WillOnce([](std::vector<std::uint8_t> bytes, std::string) {
    EXPECT_EQ(bytes.size(), std::size_t(1) << 20);
    return core::UploadResult(std::vector<core::IngestedShard>{});
  });
  r = client_->post(std::string(dedupd::api::kIngest), std::string(1 << 20, 'x'));
  EXPECT_EQ(r.status, 200) << r.body;
  // And a batch that fits its limit is answered.
  r = client_->post(std::string(dedupd::api::kChunkBatch), R"({"hashes":[]})");
  EXPECT_EQ(r.status, 200) << r.body;
}

// Bodies held at once have one bound however many clients send them: with
// two batches in flight (each holds a fixed room from its headers on), a
// third that would not fit is told to come back (503 busy) before it sends
// its body; room comes back when a request ends.
TEST_F(LimitsTest, BodiesHeldAtOnceAreBounded) {
  start_server([](api::http::ServerOptions& o) {
    o.max_body_bytes = 1 << 20;
    o.max_query_body_bytes = 1 << 20;
    o.max_body_memory = 3 << 20;  // queries: 3 MiB - room for one upload = 2 MiB
  });
  const std::uint64_t announced = 1'000'000;
  std::string part(900'000, ' ');
  int a = connect_unix(socket_path_), b = connect_unix(socket_path_);
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  for (int fd : {a, b}) ASSERT_TRUE(send_all(fd, post_head(dedupd::api::kChunkBatch, announced) + part));

  // Ask until the server has read the headers of a and b.
  std::string reply;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kWaitMs);
  while (status_of(reply) != 503 && std::chrono::steady_clock::now() < deadline) {
    int c = connect_unix(socket_path_);
    ASSERT_GE(c, 0);
    (void)send_all(c, post_head(dedupd::api::kChunkBatch, announced));
    reply = read_reply(c, 200);  // nothing yet: it waits for c's body
    close(c);
  }
  ASSERT_EQ(status_of(reply), 503) << reply;
  EXPECT_THAT(reply, HasSubstr(R"("code":"busy")"));
  EXPECT_THAT(reply, HasSubstr("Retry-After: 1"));

  // A chunked body, which announces nothing, is refused the same way.
  int d = connect_unix(socket_path_);
  ASSERT_GE(d, 0);
  std::string chunked = "POST /v1/chunk HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  ASSERT_TRUE(send_all(d, chunked));
  reply = read_reply(d, kWaitMs);
  close(d);
  EXPECT_EQ(status_of(reply), 503) << reply;

  // a ends (its body is not JSON: 400); its room is free again.
  ASSERT_TRUE(send_all(a, std::string(announced - part.size(), ' ')));
  reply = read_reply(a, kWaitMs);
  EXPECT_EQ(status_of(reply), 400) << reply;
  close(a);
  std::string body = R"({"hashes":[)" + std::string(announced - 13, ' ') + "]}";
  auto r = client_->post(std::string(dedupd::api::kChunkBatch), body);
  EXPECT_EQ(r.status, 200) << r.body;
  close(b);
}

// A chunked body that goes on far past its limit, or past the point where
// it is known to be bad, is not read to its end: the connection is closed,
// so the client stops sending early.
TEST_F(LimitsTest, AStreamedBodyFarPastItsLimitIsCutOff) {
  start_server([](api::http::ServerOptions& o) { o.max_body_bytes = 64 << 10; });
  int fd = connect_unix(socket_path_);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(send_all(fd,
                       "POST /v1/chunk HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                       "c\r\n{\"hashes\": x\r\n"));
  std::string chunk = "100000\r\n" + std::string(1 << 20, ' ') + "\r\n";
  std::uint64_t sent = 0;
  while (sent < (256u << 20) && send_all(fd, chunk)) sent += 1 << 20;
  close(fd);
  EXPECT_LT(sent, 16u << 20) << "the server read " << (sent >> 20) << " MiB of a body known to be bad";

  fd = connect_unix(socket_path_);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(send_all(fd, "POST /v1/admin/ingest HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"));
  sent = 0;
  while (sent < (256u << 20) && send_all(fd, chunk)) sent += 1 << 20;
  close(fd);
  EXPECT_LT(sent, 16u << 20) << "the server read " << (sent >> 20) << " MiB of a body over its 64 KiB limit";
  EXPECT_EQ(client_->get(std::string(dedupd::api::kHealth)).status, 200);
}

// At the connection limit, the connection that has waited longest without
// a request is closed so that a newcomer is served, long before any
// timeout would free a slot.
TEST_F(LimitsTest, AtTheLimitTheLongestIdleConnectionMakesRoom) {
  start_server([](api::http::ServerOptions& o) {
    o.max_connections = 2;
    o.threads = 1;  // the limit is per daemon; one pool thread keeps it exact
    o.connection_timeout = std::chrono::seconds(60);
    o.header_timeout = std::chrono::seconds(60);
  });
  int a = connect_unix(socket_path_), b = connect_unix(socket_path_);
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  // Both served and then idle (kept alive), a first.
  std::string get = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
  for (int fd : {a, b}) {
    ASSERT_TRUE(send_all(fd, get));
    ASSERT_EQ(status_of(read_reply(fd, kWaitMs)), 200);
  }
  int c = connect_unix(socket_path_);
  ASSERT_GE(c, 0);
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(send_all(c, get));
  std::string reply = read_reply(c, kWaitMs);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  EXPECT_EQ(status_of(reply), 200) << "a newcomer at the limit was not served within " << kWaitMs << " ms";
  std::printf("  newcomer at the limit answered after %lld ms\n", static_cast<long long>(ms.count()));
  bool closed = false;
  read_until_closed(a, kWaitMs, &closed);
  EXPECT_TRUE(closed) << "the longest idle connection is the one closed";
  ASSERT_TRUE(send_all(b, get));
  EXPECT_EQ(status_of(read_reply(b, kWaitMs)), 200) << "the other one is still served";
  close(a);
  close(b);
  close(c);
}

// Connections in a request (here: receiving a body) are never closed to
// make room: a newcomer then waits in the listen backlog until one ends.
TEST_F(LimitsTest, ConnectionsInARequestAreNotClosedToMakeRoom) {
  start_server([](api::http::ServerOptions& o) {
    o.max_connections = 2;
    o.threads = 1;
    o.connection_timeout = std::chrono::seconds(60);
  });
  int a = connect_unix(socket_path_), b = connect_unix(socket_path_);
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  for (int fd : {a, b}) ASSERT_TRUE(send_all(fd, post_head(dedupd::api::kChunkBatch, 100) + "{\"hashes\""));
  int c = connect_unix(socket_path_);
  ASSERT_GE(c, 0);
  ASSERT_TRUE(send_all(c, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  bool closed = false;
  // Well past the grace a waiting connection gets before it may be closed.
  EXPECT_EQ(read_until_closed(c, 2'500, &closed), "");
  EXPECT_FALSE(closed);
  // One ends: the waiting one is taken and answered.
  close(a);
  std::string reply = read_until_closed(c, kWaitMs, &closed);
  EXPECT_THAT(reply, StartsWith("HTTP/1.1 200"));
  close(c);
  close(b);
}

// MHD's own timeout restarts with every byte; the header deadline does not,
// so a client trickling its headers (or poking an idle connection) cannot
// hold a connection for ever.
TEST_F(LimitsTest, RequestHeadersMustArriveInTime) {
  start_server([](api::http::ServerOptions& o) {
    o.connection_timeout = std::chrono::seconds(60);
    o.header_timeout = std::chrono::seconds(1);
  });
  int fd = connect_unix(socket_path_);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(send_all(fd, "GET /healthz HTTP/1.1\r\nX-Drip: "));
  auto t0 = std::chrono::steady_clock::now();
  bool closed = false;
  while (!closed && std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(kWaitMs)) {
    if (!send_all(fd, "a")) break;  // the server has closed it
    read_until_closed(fd, 100, &closed);
  }
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  close(fd);
  EXPECT_LT(ms.count(), kWaitMs) << "a client trickling its headers kept its connection";
  std::printf("  trickling client cut off after %lld ms\n", static_cast<long long>(ms.count()));

  // Headers that come in time are served, and the kept-alive connection
  // then has the same deadline for its next request.
  fd = connect_unix(socket_path_);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(send_all(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_EQ(status_of(read_reply(fd, kWaitMs)), 200);
  read_until_closed(fd, kWaitMs, &closed);
  EXPECT_TRUE(closed);
  close(fd);
  EXPECT_EQ(client_->get(std::string(dedupd::api::kHealth)).status, 200);
}

TEST_F(LimitsTest, GarbageOnTheSocketGetsA4xxAndTheServerStaysUp) {
  for (const std::string& junk : {std::string("\x16\x03\x01\x02\x00", 5), std::string("GET\r\n\r\n"),
                                  std::string("GET /healthz HTTP/9.9\r\n\r\n"),
                                  std::string("POST /v1/chunk HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n"),
                                  std::string(100'000, 'A') + "\r\n\r\n"}) {
    int fd = connect_unix(socket_path_);
    ASSERT_GE(fd, 0);
    send_all(fd, junk);
    shutdown(fd, SHUT_WR);
    bool closed = false;
    std::string reply = read_until_closed(fd, kWaitMs, &closed);
    close(fd);
    // A 4xx, or 505 for an HTTP version MHD does not speak; never a 500.
    if (!reply.empty()) {
      EXPECT_THAT(reply, ::testing::AnyOf(StartsWith("HTTP/1.1 4"), StartsWith("HTTP/1.1 505")));
    }
  }
  EXPECT_EQ(client_->get(std::string(dedupd::api::kHealth)).status, 200);
}

TEST_F(LimitsTest, ALiveSocketIsNotTakenOverAndAStaleOneIs) {
  api::http::ServerOptions o;
  o.socket_path = socket_path_;
  api::http::ApiServer second(service_, o, api::routes::api_routes());
  auto started = second.start();
  ASSERT_FALSE(started.ok());
  EXPECT_THAT(started.error().message, HasSubstr("in use"));
  // The first one is unharmed.
  EXPECT_EQ(client_->get(std::string(dedupd::api::kHealth)).status, 200);
  client_.reset();
  server_.reset();

  // A socket file left behind by a dead server is replaced.
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", socket_path_.c_str());
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  close(fd);  // bound, never listened: stale
  start_server();
  EXPECT_EQ(client_->get(std::string(dedupd::api::kHealth)).status, 200);
  struct stat st {};
  ASSERT_EQ(stat(socket_path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0660u);
}

TEST_F(LimitsTest, AdoptsAnAlreadyListeningSocket) {
  client_.reset();
  server_.reset();
  std::string path = dir_.path() + "/activated.sock";
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(fd, 16), 0);
  api::http::ServerOptions o;
  o.listen_fd = fd;
  o.socket_path = path;
  server_ = std::make_unique<api::http::ApiServer>(service_, o, api::routes::api_routes());
  ASSERT_TRUE(server_->start().ok());
  Client c(path);
  EXPECT_EQ(c.get(std::string(dedupd::api::kHealth)).status, 200);
}

}  // namespace
}  // namespace dedupd::daemon::testing
