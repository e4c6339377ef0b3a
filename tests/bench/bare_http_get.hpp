// The bench's side of bare_http_get (bare_http_get.cpp): the bare HTTP
// server started on a bare LMDB and a socket path, ready once the socket
// accepts, stopped with the object. Spawned as its own process, as dedupd
// is (harness/daemon_process.hpp), so both are measured the same way.
#pragma once

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>

#include "harness/daemon_process.hpp"

namespace dedupd::bench {

class BareHttpGet {
 public:
  BareHttpGet(const std::string& program, const std::filesystem::path& lmdb_dir, const std::filesystem::path& socket,
              const std::filesystem::path& log)
      : socket_(socket) {
    itest::LaunchOptions o;
    o.program = program;
    o.args = {lmdb_dir.string(), socket.string()};
    o.log_file = log;
    proc_.start(o);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!accepts()) {
      if (!proc_.running() || std::chrono::steady_clock::now() > deadline)
        throw std::runtime_error("bare_http_get did not listen on " + socket.string() + "; see " + log.string());
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  ~BareHttpGet() { proc_.stop(); }
  BareHttpGet(const BareHttpGet&) = delete;
  BareHttpGet& operator=(const BareHttpGet&) = delete;

  pid_t pid() const { return proc_.pid(); }
  const std::filesystem::path& socket() const { return socket_; }

 private:
  bool accepts() const {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, socket_.c_str(), sizeof addr.sun_path - 1);
    const bool ok = fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    if (fd >= 0) ::close(fd);
    return ok;
  }

  std::filesystem::path socket_;
  itest::DaemonProcess proc_;
};

}  // namespace dedupd::bench
