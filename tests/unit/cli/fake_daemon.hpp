// A stand-in for dedupd on a Unix socket: raw HTTP/1.1 written by hand so a
// test can answer correctly, or with garbage, a truncated body, a closed
// connection or silence, and see exactly what dedupctl sent.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "support.hpp"

namespace dedupctl::testing {

struct Request {
  std::string method;
  std::string target;                          // path and query
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  int connection = 0;  // which accepted connection carried it
};

struct Reply {
  std::string raw;           // bytes to write
  bool close_after = false;  // close the connection after writing
  bool hang = false;         // write raw, then say nothing until the test ends
};

// A well-formed answer with Content-Length.
Reply http(int status, const std::string& body, const std::string& content_type = "application/json");
// {"error": {"code", "message"}} as the daemon sends it.
Reply http_error(int status, const std::string& code, const std::string& message);

class FakeDaemon {
 public:
  using Handler = std::function<Reply(const Request&)>;
  explicit FakeDaemon(Handler handler);
  ~FakeDaemon();
  FakeDaemon(const FakeDaemon&) = delete;
  FakeDaemon& operator=(const FakeDaemon&) = delete;

  // Called for a request that sends "Expect: 100-continue", with headers
  // only: a non-empty reply refuses the body (and closes), else the fake
  // answers "100 Continue".
  void on_expect(Handler h) { on_expect_ = std::move(h); }

  const std::string& socket() const { return socket_; }
  std::vector<Request> requests() const;
  int connections() const { return connections_; }

 private:
  void serve();
  void serve_connection(int fd, int id);

  TempDir dir_;
  std::string socket_;
  Handler handler_;
  Handler on_expect_;
  int listen_fd_ = -1;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  mutable std::mutex mu_;
  std::vector<Request> requests_;
  std::thread thread_;
};

// What a verb test against the fake daemon names unqualified (`using
// namespace testing::verb_test;`), and the hashes its canned answers use.
namespace verb_test {
using testing::FakeDaemon;
using testing::http;
using testing::http_error;
using testing::Reply;
using testing::Request;
using testing::run_cli;
using testing::TempDir;

inline const std::string kRaw = "9502eec19d4b0c9f7b389228fa801f68ecdf15d69ccd1da2f9ddbd0219898335";
inline const std::string kXorb = "213031765f0b4d7bc826ccd5bdda3261f624187e2997a2de61111652d31b081c";
inline const std::string kShard = "d83a309e41cadb87a8b02b4d129bec6919d54ab5e84e08b7b5b4a83358643f16";
inline const std::string kFile = "0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20";
inline const std::string kSha = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

inline nlohmann::json shard_summary(const std::string& state = "live") {
  nlohmann::json s = {{"hash", kShard},
                      {"state", state},
                      {"paths", {"/var/cache/xet/shard-cache/" + kShard + ".mdb"}},
                      {"size", 102104},
                      {"created", 1754059905},
                      {"expiry", 1754664705},
                      {"keyed", true},
                      {"xorbs", 3},
                      {"chunks", 2117},
                      {"files", 0},
                      {"ingested_at", 1754100000}};
  if (state == "rejected") s["reason"] = {{"rule", "header.magic"}, {"offset", 0}, {"message", "not a shard"}};
  return s;
}

// Routes the fake answers, by "METHOD target".
inline FakeDaemon daemon_with(std::map<std::string, Reply> routes) {
  return FakeDaemon([routes = std::move(routes)](const Request& r) {
    auto it = routes.find(r.method + " " + r.target);
    if (it == routes.end()) return http_error(404, "not_found", "no route " + r.target);
    return it->second;
  });
}

inline std::vector<std::string> with(const FakeDaemon& d, std::vector<std::string> args) {
  args.insert(args.begin(), {"--socket", d.socket()});
  return args;
}
}  // namespace verb_test

}  // namespace dedupctl::testing
