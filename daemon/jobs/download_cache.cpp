#include "daemon/jobs/download_cache.hpp"

#include <sys/stat.h>

#include <algorithm>

#include "daemon/config/xet_endpoint.hpp"
#include "daemon/core/clock.hpp"
#include "daemon/expiry/policy.hpp"

namespace dedupd::daemon::jobs {

namespace fs = std::filesystem;

namespace {

bool is_cache_file_name(const std::string& name) {
  return name.size() == 32 &&
         std::all_of(name.begin(), name.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

}  // namespace

core::XetDownloadCache walk_download_cache(const fs::path& dir,
                                           std::optional<std::unordered_set<std::string>>& previous) {
  core::XetDownloadCache out;
  out.dir = dir.native();
  out.walked_at = core::unix_now();
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, fs::directory_options::none, ec), end;
  std::unordered_set<std::string> names;
  for (; !ec && it != end; it.increment(ec)) {
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    ++out.files;
    out.bytes += std::uint64_t(st.st_blocks) * 512;
    std::string name = it->path().filename().native();
    if (is_cache_file_name(name)) names.insert(std::move(name));
  }
  if (ec) {
    // Nothing counted of a walk cut short: a partial size would read as
    // evictions at the next whole one.
    out.problem = "cannot read " + dir.native() + ": " + ec.message();
    return out;
  }
  out.known = true;
  if (previous)
    for (const auto& n : *previous) out.evictions += !names.contains(n);
  previous = std::move(names);
  return out;
}

std::optional<std::chrono::milliseconds> DownloadCacheJob::due_in() {
  if (endpoint_config_.empty()) return std::nullopt;
  return expiry::delay_until(next_, core::unix_now_ms());
}

void DownloadCacheJob::run() {
  next_ = core::unix_now() + std::uint64_t(kInterval.count());
  const std::string dir = config::read_xet_endpoint_settings(endpoint_config_).cache_dir;
  if (dir != dir_) names_.reset(), dir_ = dir;  // another cache: nothing of it went
  core::XetDownloadCache walked = walk_download_cache(dir, names_);
  evictions_ += walked.evictions;
  walked.evictions = evictions_;
  std::lock_guard lock(mu_);
  last_ = std::move(walked);
}

void DownloadCacheJob::configure(const config::Config& config, Apply) {
  endpoint_config_ = config.xet_endpoint.config;
  next_ = core::unix_now();
  if (endpoint_config_.empty()) {
    std::lock_guard lock(mu_);
    last_.reset();
  }
}

std::optional<core::XetDownloadCache> DownloadCacheJob::status() const {
  std::lock_guard lock(mu_);
  return last_;
}

}  // namespace dedupd::daemon::jobs
