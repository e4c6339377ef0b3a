// A stand-in for dedupd on a Unix socket: raw HTTP/1.1 written by hand so a
// test can answer correctly, or with garbage, a truncated body, a closed
// connection or silence, and see exactly what dedupctl sent.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
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

}  // namespace dedupctl::testing
