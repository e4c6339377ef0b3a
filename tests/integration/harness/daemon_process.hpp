// Starts the real dedupd binary for a test and makes sure it is gone after,
// however the test ends. The process runs in its own process group, so
// wrappers (faketime, systemd-socket-activate) die with it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace dedupd::itest {

struct LaunchOptions {
  std::string program;               // "": the dedupd under test
  std::vector<std::string> args;     // after the binary
  std::vector<std::string> wrapper;  // e.g. {"faketime", "2025-08-02 12:00:00"}
  std::vector<std::string> env;      // extra "NAME=value"
  std::filesystem::path log_file;    // stdout+stderr go here
  std::filesystem::path work_dir;
};

class DaemonProcess {
 public:
  DaemonProcess() = default;
  ~DaemonProcess() { kill_hard(); }
  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;

  void start(const LaunchOptions& options);
  bool running();
  pid_t pid() const { return pid_; }
  void signal(int sig);  // to the whole group
  // SIGTERM, then waits; returns the exit status (or -1 if it had to be killed).
  int stop(std::chrono::seconds patience = std::chrono::seconds(20));
  void kill_hard();                                                 // SIGKILL to the group, reaped
  std::optional<int> wait_exit(std::chrono::milliseconds timeout);  // exit code, or -signal

 private:
  pid_t pid_ = -1;
};

// The binary under test (build/daemon/dedupd), set by CMake.
std::string dedupd_binary();
std::filesystem::path fixtures_dir();
// libfaketime.so.1 as found at configure time; empty when not installed.
std::string libfaketime();
// True under CI (CI=true), where a test may not skip for want of a tool or
// a file system: there it fails instead.
bool in_ci();

}  // namespace dedupd::itest
