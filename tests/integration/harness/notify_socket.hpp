// A stand-in for systemd's notification socket: an AF_UNIX datagram socket
// whose path goes into NOTIFY_SOCKET, collecting what sd_notify sends.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

namespace dedupd::itest {

class NotifySocket {
 public:
  explicit NotifySocket(std::filesystem::path path);
  ~NotifySocket();
  NotifySocket(const NotifySocket&) = delete;
  NotifySocket& operator=(const NotifySocket&) = delete;

  std::string env() const { return "NOTIFY_SOCKET=" + path_.string(); }
  // Waits until a message contains `line` (e.g. "READY=1"); every message
  // received so far stays in messages().
  bool wait_for(const std::string& line, std::chrono::milliseconds timeout);
  const std::vector<std::string>& messages() const { return messages_; }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  std::vector<std::string> messages_;
  std::size_t matched_ = 0;  // messages already consumed by wait_for
};

}  // namespace dedupd::itest
