#include "api_test_support.hpp"

#include <curl/curl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>

#include <filesystem>

#include "tests/unit/answers/answers_test_support.hpp"

namespace dedupd::daemon::testing {

namespace {

std::size_t collect(char* data, std::size_t size, std::size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

}  // namespace

Client::Client(std::string socket_path) : socket_path_(std::move(socket_path)), curl_(curl_easy_init()) {}

Client::~Client() { curl_easy_cleanup(static_cast<CURL*>(curl_)); }

HttpReply Client::request(const std::string& method, const std::string& path, const std::string& body,
                          const std::vector<std::string>& headers) {
  CURL* c = static_cast<CURL*>(curl_);
  HttpReply reply;
  curl_easy_reset(c);
  curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, socket_path_.c_str());
  std::string url = "http://localhost" + path;
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method.c_str());
  if (method == "HEAD") curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  if (method == "POST" || !body.empty()) {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.size()));
  }
  curl_slist* list = nullptr;
  for (const auto& h : headers) list = curl_slist_append(list, h.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, list);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &collect);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &reply.body);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, &collect);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &reply.headers);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
  CURLcode rc = curl_easy_perform(c);
  curl_slist_free_all(list);
  if (rc != CURLE_OK) {
    reply.status = -1;
    reply.body = curl_easy_strerror(rc);
    return reply;
  }
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &reply.status);
  char* type = nullptr;
  curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &type);
  if (type) reply.content_type = type;
  curl_easy_getinfo(c, CURLINFO_NUM_CONNECTS, &reply.new_connections);
  return reply;
}

int connect_unix(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), std::min(path.size(), sizeof addr.sun_path - 1));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool send_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    data.remove_prefix(std::size_t(n));
  }
  return true;
}

std::string read_until_closed(int fd, int timeout_ms, bool* closed) {
  std::string out;
  *closed = false;
  char buf[4096];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) <= 0) return out;
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) {
      *closed = true;
      return out;
    }
    out.append(buf, std::size_t(n));
  }
}

std::string read_reply(int fd, int timeout_ms) {
  std::string out;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  char buf[4096];
  for (;;) {
    auto end = out.find("\r\n\r\n");
    if (end != std::string::npos) {
      std::string head = out.substr(0, end);
      std::transform(head.begin(), head.end(), head.begin(), [](unsigned char c) { return char(std::tolower(c)); });
      auto cl = head.find("\r\ncontent-length:");
      std::size_t length = cl == std::string::npos ? 0 : std::strtoull(head.c_str() + cl + 17, nullptr, 10);
      if (out.size() >= end + 4 + length) return out;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || poll(&p, 1, int(left.count())) <= 0) return "";
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return "";
    out.append(buf, std::size_t(n));
  }
}

void ApiTest::SetUp() {
  using ::testing::Return;
  socket_path_ = dir_.path() + "/api.sock";
  index_ = answers::testing::open_test_index(dir_.path());
  ASSERT_TRUE(index_);

  ON_CALL(service_, index()).WillByDefault(Return(index_.get()));
  core::XetCacheStatus cache;
  cache.endpoint = "/home/ci/.cache/huggingface/xet/https___cas_serv-AbCd";
  cache.files = 3;
  cache.bytes = 4096;
  cache.chunk_entries = 70;
  cache.max_bytes = 1u << 20;
  cache.max_chunk_entries = 100;
  cache.merges = 2;
  core::StatusInfo status{"0.1.0-test", 4242,        17, socket_path_, dir_.path(), {"/watch/a", "/watch/b"},
                          {cache},      std::nullopt};
  // A fault being survived: one file waits for space, the disk is full,
  // the index is rebuilt after damage.
  status.waiting.count = 1;
  status.waiting.files.push_back({"/watch/a/x.mdb", "index.no_space", "full", 1000, 60, 3, 8});
  status.state_dir_space = {true, 4096, 1u << 30, true};
  status.index_health.state = "rebuilding";
  status.index_health.damage = "data.mdb was truncated";
  status.index_health.moved_to = "/state/index.damaged-20261201T000000Z";
  status.index_health.rebuild_files_total = 10;
  status.index_health.rebuild_files_done = 4;
  ON_CALL(service_, status()).WillByDefault(Return(status));
  core::GlobalDedupKey key{shard::testing::seeded_hash(77), 3600};
  ON_CALL(service_, global_dedup_key()).WillByDefault(Return(key));
  start_server();
}

void ApiTest::TearDown() {
  client_.reset();
  if (server_) server_->stop();
  server_.reset();
  index_.reset();
}

void ApiTest::start_server(const std::function<void(api::http::ServerOptions&)>& tweak) {
  client_.reset();
  server_.reset();
  api::http::ServerOptions o;
  o.socket_path = socket_path_;
  o.max_body_bytes = 4 << 20;
  o.max_connections = 16;
  o.connection_timeout = std::chrono::seconds(10);
  o.threads = 2;
  o.admin_gid = getegid();  // admin routes work whether or not tests run as root
  if (tweak) tweak(o);
  server_ = std::make_unique<api::http::ApiServer>(service_, o, api::routes::api_routes());
  auto started = server_->start();
  ASSERT_TRUE(started.ok()) << started.error().message;
  client_ = std::make_unique<Client>(socket_path_);
}

shard::Hash ApiTest::ingest(const std::vector<std::uint8_t>& bytes, std::uint64_t now) {
  auto view = shard::ShardView::parse(bytes);
  EXPECT_TRUE(view.ok()) << view.error().to_string();
  index::IngestOptions opts;
  opts.now = now;
  auto r = index_->ingest(*view, index::SourceInfo{}, opts);
  EXPECT_TRUE(r.ok()) << r.error().to_string();
  return r->shard;
}

}  // namespace dedupd::daemon::testing
