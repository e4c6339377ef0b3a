// Which CAS a shard file belongs to, from where it was found, so its
// answers go only to clients of that CAS (a CAS holds only its own xorbs):
// the `cas:` of the watch entry it is under; else the client's cache
// directory it sits in (<cache root>/<name>/shard-cache/...), whose name the
// client derives from the CAS URL (xetcache/cas_url.hpp), matched against
// the CAS URLs dedupd knows; else unknown (""). A cache of the local Xet
// endpoint's own CAS port holds shards of the endpoint's upstream CAS.
#pragma once

#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "daemon/config/config.hpp"

namespace dedupd::daemon::ingest {

class CasScopes {
 public:
  // The watch entries and the endpoint's settings file (read again when it
  // changes: the endpoint's ports and upstream are its to say).
  void configure(const std::vector<config::WatchDir>& watch, const std::filesystem::path& endpoint_settings);

  // The normalized CAS of a shard found at `path`; "" when unknown.
  std::string of_path(const std::string& path);

  // Files this says the CAS of before anything else: the copies of learned
  // shards (daemon/learn/copies.hpp), which a rebuild takes in.
  using Override = std::function<std::optional<std::string>(const std::string& path)>;
  void set_override(Override o);

  // The endpoint's upstream CAS (normalized), what it learns is scoped to;
  // "" when no endpoint is configured or its URL is not one.
  std::string endpoint_cas();

 private:
  struct Known {
    std::string dir_name;  // the client's cache directory for one spelling
    std::string cas;       // what a cache of it holds
  };
  void refresh_endpoint();  // under mu_

  std::mutex mu_;  // the work loop and the upgrade at start ask; reloads change it
  std::vector<config::WatchDir> watch_;
  std::filesystem::path settings_;
  std::filesystem::file_time_type settings_mtime_{};
  bool settings_read_ = false;
  std::string endpoint_cas_;
  std::vector<Known> known_;
  Override override_;
};

}  // namespace dedupd::daemon::ingest
