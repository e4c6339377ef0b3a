// The endpoint's download cache seen from outside: every minute a walk of
// nginx's cache directory (xet-endpoint.conf's cache_dir) counts its files
// and the disk they take, and which cache files went since the last walk
// (nginx's cache manager evicts on its own; it tells no one). A walk is a
// stat per file: a 10 GB cache of ranges of a few MiB is a few thousand.
// nginx creates the directory's levels owner-only: dedupd reads them when it
// runs as the endpoint's user (or root), else the status says why not.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>

#include "daemon/core/status.hpp"
#include "daemon/jobs/job.hpp"

namespace dedupd::daemon::jobs {

// One walk of `dir`: its regular files and their allocated bytes, and how
// many of the cache files named in `previous` are gone (`previous` becomes
// this walk's cache files: nginx names each by the 32 hex digits of its
// key's MD5; its temp files carry a suffix and are counted, not followed).
core::XetDownloadCache walk_download_cache(const std::filesystem::path& dir,
                                           std::optional<std::unordered_set<std::string>>& previous);

class DownloadCacheJob final : public Job {
 public:
  const char* name() const override { return "xet download cache"; }
  std::optional<std::chrono::milliseconds> due_in() override;
  void run() override;
  // The endpoint's settings file (xet_endpoint.config), read at each walk
  // for its cache_dir; a walk at once.
  void configure(const config::Config& config, Apply when) override;

  // The last walk's (any thread); nullopt before the first one.
  std::optional<core::XetDownloadCache> status() const;

  static constexpr std::chrono::seconds kInterval{60};

 private:
  std::filesystem::path endpoint_config_;
  std::uint64_t next_ = 0;                                // unix s
  std::optional<std::unordered_set<std::string>> names_;  // the last walk's cache files
  std::string dir_;                                       // they are of
  std::uint64_t evictions_ = 0;
  mutable std::mutex mu_;
  std::optional<core::XetDownloadCache> last_;
};

}  // namespace dedupd::daemon::jobs
