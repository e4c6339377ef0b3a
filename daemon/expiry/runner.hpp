// Applies the expiry policy: takes expired shards' entries out of the index
// at their expiry, deletes their files once the grace has passed (only files
// the index recorded, unchanged since, inside a watched directory), and
// enforces the optional size cap on expiring shards' files.
#pragma once

#include <chrono>
#include <optional>
#include <variant>
#include <vector>

#include "daemon/config/config.hpp"
#include "daemon/core/counters.hpp"
#include "daemon/core/status.hpp"
#include "daemon/expiry/policy.hpp"
#include "daemon/watch/watcher.hpp"
#include "index/index.hpp"

namespace dedupd::daemon::expiry {

class Runner {
 public:
  Runner(index::Index& index, const watch::Watcher& watcher, core::Counters& counters)
      : index_(index), watcher_(watcher), counters_(counters) {}

  void set_config(const config::ExpiryConfig& c) { config_ = c; }

  // Does (or, dry_run, only reports) everything due at `now`. An index
  // failure stops the pass where it happened (what was done stays done).
  [[nodiscard]] base::Result<core::PurgeResult> run(std::uint64_t now, bool dry_run);

  // The earliest moment something becomes due after the last run: an index
  // expiry or a file's end of grace.
  std::optional<std::uint64_t> next_due(std::uint64_t now) const;

 private:
  base::Result<std::vector<ShardRecord>> expired_records(std::vector<shard::Hash> also_due) const;
  // Checks and, unless dry_run, deletes one file; true when it is (or would be) gone.
  bool delete_file(const shard::Hash& shard, const std::string& path, bool dry_run);
  [[nodiscard]] base::Result<std::monostate> enforce_cap(std::uint64_t now, bool dry_run, core::PurgeResult& out);

  index::Index& index_;
  const watch::Watcher& watcher_;
  core::Counters& counters_;
  config::ExpiryConfig config_;
  std::optional<std::uint64_t> next_deletion_;
};

}  // namespace dedupd::daemon::expiry
