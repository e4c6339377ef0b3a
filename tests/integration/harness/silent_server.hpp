// A "PostgreSQL server" that accepts connections on a Unix socket and never
// says a word: libpq waits for the answer to its startup packet forever.
// For the fleet outage test and bench_fleet_outage. Counts what it
// accepted and keeps it open until destroyed.
#pragma once

#include <cstddef>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace dedupd::itest {

class SilentServer {
 public:
  // Listens on DIR/.s.PGSQL.PORT, where libpq looks for host=DIR port=PORT.
  SilentServer(const std::filesystem::path& dir, int port);
  ~SilentServer();
  SilentServer(const SilentServer&) = delete;
  SilentServer& operator=(const SilentServer&) = delete;

  // Empty when listening; otherwise why not.
  const std::string& error() const { return error_; }
  std::size_t accepted();

 private:
  std::filesystem::path path_;
  std::string error_;
  int fd_ = -1;
  std::mutex mu_;
  std::vector<int> held_;
  std::thread thread_;
};

}  // namespace dedupd::itest
