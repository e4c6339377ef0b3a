#include "daemon/ingest/cas_scope.hpp"

#include <algorithm>
#include <system_error>

#include "daemon/config/xet_endpoint.hpp"
#include "xetcache/cas_url.hpp"

namespace dedupd::daemon::ingest {

namespace {

// The CAS of the Hugging Face Hub: the one a cache of a host that never set
// HF_ENDPOINT belongs to.
constexpr const char* kHubCas = "https://cas-server.xethub.hf.co";

bool under(const std::string& path, const std::filesystem::path& dir) {
  std::string d = dir.string();
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  return path.size() > d.size() && path.compare(0, d.size(), d) == 0 && path[d.size()] == '/';
}

// The client cache directory's name in a path ".../<name>/shard-cache/..."
// or ".../<name>/staging/...": the last such component; "" when none.
std::string cache_dir_name(const std::string& path) {
  std::string found;
  std::size_t start = 0;
  std::string prev;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    std::string part = path.substr(start, end - start);
    if ((part == "shard-cache" || part == "staging") && !prev.empty()) found = prev;
    prev = part;
    start = end + 1;
  }
  return found;
}

}  // namespace

void CasScopes::configure(const std::vector<config::WatchDir>& watch, const std::filesystem::path& endpoint_settings) {
  std::lock_guard lock(mu_);
  watch_ = watch;
  // The longest path first: a nested entry's word wins over its parent's.
  std::sort(watch_.begin(), watch_.end(), [](const config::WatchDir& a, const config::WatchDir& b) {
    return a.path.string().size() > b.path.string().size();
  });
  settings_ = endpoint_settings;
  settings_read_ = false;
  refresh_endpoint();
}

void CasScopes::refresh_endpoint() {
  std::error_code ec;
  auto mtime = settings_.empty() ? std::filesystem::file_time_type{} : std::filesystem::last_write_time(settings_, ec);
  if (ec) mtime = {};
  if (settings_read_ && mtime == settings_mtime_) return;
  settings_read_ = true;
  settings_mtime_ = mtime;
  endpoint_cas_.clear();
  known_.clear();
  // Each URL as given and with a trailing slash, the spellings a client is
  // handed; their directory names computed once, not at each shard found.
  auto add = [&](const std::string& spelled, const std::string& cas) {
    if (spelled.empty() || cas.empty()) return;
    for (const std::string& s : {spelled, spelled + "/"})
      known_.push_back({dedupd::xetcache::client_cache_dir_name(s), cas});
  };
  if (!settings_.empty()) {
    config::XetEndpointSettings s = config::read_xet_endpoint_settings(settings_);
    endpoint_cas_ = dedupd::xetcache::normalize_cas_url(s.cas_upstream).value_or("");
    // The client is handed the endpoint's CAS port (token replies name it):
    // its cache is named after that URL, and holds the upstream's shards.
    for (const char* host : {"127.0.0.1", "localhost"})
      add("http://" + std::string(host) + ":" + std::to_string(s.cas_port), endpoint_cas_);
    add(endpoint_cas_, endpoint_cas_);
    add(s.cas_upstream, endpoint_cas_);
  }
  for (const config::WatchDir& w : watch_) add(w.cas, w.cas);
  add(kHubCas, kHubCas);
}

void CasScopes::set_override(Override o) {
  std::lock_guard lock(mu_);
  override_ = std::move(o);
}

std::string CasScopes::of_path(const std::string& path) {
  std::lock_guard lock(mu_);
  if (override_)
    if (auto cas = override_(path)) return *cas;
  for (const config::WatchDir& w : watch_)
    if (!w.cas.empty() && under(path, w.path)) return w.cas;
  std::string name = cache_dir_name(path);
  if (name.empty()) return "";
  refresh_endpoint();
  for (const Known& k : known_)
    if (k.dir_name == name) return k.cas;
  return "";
}

std::string CasScopes::endpoint_cas() {
  std::lock_guard lock(mu_);
  refresh_endpoint();
  return endpoint_cas_;
}

}  // namespace dedupd::daemon::ingest
