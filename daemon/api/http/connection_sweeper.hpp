// The thread that applies the ConnectionTable's rules (connections.hpp)
// every tick: the header deadline, room for newcomers at the connection
// limit, and giving freed connection buffers back once a crowd has gone.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <thread>

#include "daemon/api/http/connections.hpp"

namespace dedupd::daemon::api::http {

class ConnectionSweeper {
 public:
  // `listen_fd`: polled to see whether a newcomer waits; `limit`: the
  // connection limit MHD was given.
  ConnectionSweeper(ConnectionTable& table, int listen_fd, std::size_t limit, std::chrono::seconds header_timeout);
  ~ConnectionSweeper();  // stops and joins
  ConnectionSweeper(const ConnectionSweeper&) = delete;
  ConnectionSweeper& operator=(const ConnectionSweeper&) = delete;

 private:
  void loop();
  bool newcomer_waiting() const;

  ConnectionTable& table_;
  int listen_fd_;
  std::size_t limit_;
  std::chrono::seconds header_timeout_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace dedupd::daemon::api::http
