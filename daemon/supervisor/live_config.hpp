// The configuration dedupd runs with: the work loop replaces it at a
// reload and reads it as it likes (it is the only writer); any other thread
// (status, the admin routes' bounds) reads what it needs under the lock.
#pragma once

#include <mutex>

#include "daemon/config/config.hpp"

namespace dedupd::daemon::supervisor {

class LiveConfig {
 public:
  explicit LiveConfig(config::Config config) : config_(std::move(config)) {}

  // Loop thread.
  const config::Config& loop() const { return config_; }
  void replace(config::Config next) {
    std::lock_guard lock(mu_);
    config_ = std::move(next);
  }
  // Any thread: `read(config)`'s result, under the lock.
  template <class Read>
  auto read(Read&& read) const {
    std::lock_guard lock(mu_);
    return read(config_);
  }

 private:
  mutable std::mutex mu_;
  config::Config config_;
};

}  // namespace dedupd::daemon::supervisor
