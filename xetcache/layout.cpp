#include "xetcache/layout.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "xetcache/constants.hpp"

namespace dedupd::xetcache {

namespace fs = std::filesystem;

namespace {

Error layout_error(const std::string& path, const std::string& what) {
  return Error{"xetcache.layout", 0, path + ": " + what, false};
}

bool is_dir(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Child directory names of `dir`, sorted; symbolic links are not followed
// (a link out of a managed root must not make dedupd write elsewhere).
Result<std::vector<std::string>> child_dirs(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code sec;
    if (it->is_directory(sec) && !it->is_symlink(sec)) out.push_back(it->path().filename().string());
  }
  if (ec) return layout_error(dir, ec.message());
  std::sort(out.begin(), out.end());
  return out;
}

Result<SessionDir> session_dir(const std::string& path) {
  auto shards = list_shard_files(path);
  if (!shards) return shards.error();
  return SessionDir{path, std::move(*shards)};
}

}  // namespace

bool is_loadable_shard_name(std::string_view name) {
  constexpr std::string_view kSuffix = ".mdb";
  if (name.size() != 64 + kSuffix.size() || !name.ends_with(kSuffix)) return false;
  return std::all_of(name.begin(), name.begin() + 64, [](char c) { return std::isxdigit((unsigned char)c) != 0; });
}

bool is_steward_temp_name(std::string_view name) {
  return name.size() > kStewardTempPrefix.size() + kTempSuffix.size() && name.starts_with(kStewardTempPrefix) &&
         name.ends_with(kTempSuffix);
}

namespace {

Result<std::vector<ShardFile>> list_files_named(const std::string& dir, bool (*wanted)(std::string_view)) {
  std::vector<ShardFile> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (!wanted(name)) continue;
    std::string path = it->path().string();
    struct stat st {};
    // A file the client renamed away or deleted between listing and stat is
    // simply gone: not an error of the listing.
    if (::lstat(path.c_str(), &st) != 0) {
      if (errno == ENOENT) continue;
      return layout_error(path, std::strerror(errno));
    }
    if (!S_ISREG(st.st_mode)) continue;
    out.push_back({std::move(path), std::uint64_t(st.st_size),
                   std::int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec});
  }
  if (ec) return layout_error(dir, ec.message());
  std::sort(out.begin(), out.end(), [](const ShardFile& a, const ShardFile& b) { return a.path < b.path; });
  return out;
}

}  // namespace

Result<std::vector<ShardFile>> list_shard_files(const std::string& dir) {
  return list_files_named(dir, is_loadable_shard_name);
}

Result<std::vector<ShardFile>> list_steward_temps(const std::string& dir) {
  return list_files_named(dir, is_steward_temp_name);
}

Result<std::optional<EndpointCache>> endpoint_at(const std::string& dir) {
  EndpointCache c;
  c.dir = dir;
  std::string cache = dir + "/" + std::string(kShardCacheDir);
  std::string sessions = dir + "/" + std::string(kStagingDir) + "/" + std::string(kShardSessionDir);
  bool has_cache = is_dir(cache);
  if (!has_cache && !is_dir(dir + "/" + std::string(kStagingDir))) return std::optional<EndpointCache>{};
  if (has_cache) {
    c.shard_cache = cache;
    auto files = list_shard_files(cache);
    if (files) c.shards = std::move(*files);
    else c.problems.push_back(files.error());
  }
  if (is_dir(sessions)) {
    auto children = child_dirs(sessions);
    if (!children) c.problems.push_back(children.error());
    for (const auto& child : children ? *children : std::vector<std::string>{}) {
      std::string path = sessions + "/" + child;
      auto s = session_dir(path);
      if (!s && !is_dir(path)) continue;  // the session ended while we looked
      if (!s) {
        c.problems.push_back(s.error());
        continue;
      }
      if (child == kXorbMetadataDir) c.xorb_metadata = std::move(*s);
      else c.sessions.push_back(std::move(*s));
    }
  }
  return std::optional<EndpointCache>{std::move(c)};
}

Result<std::vector<EndpointCache>> discover(const std::string& root) {
  if (!is_dir(root)) return layout_error(root, "not a directory");
  std::vector<EndpointCache> out;
  // A root that is itself one endpoint's directory is that one endpoint.
  auto self = endpoint_at(root);
  if (!self) return self.error();
  if (*self) {
    out.push_back(std::move(**self));
    return out;
  }
  auto endpoints = child_dirs(root);
  if (!endpoints) return endpoints.error();
  for (const auto& name : *endpoints) {
    auto c = endpoint_at(root + "/" + name);
    if (!c) {
      EndpointCache broken;
      broken.dir = root + "/" + name;
      broken.problems.push_back(c.error());
      out.push_back(std::move(broken));
      continue;
    }
    if (*c) out.push_back(std::move(**c));
  }
  return out;
}

}  // namespace dedupd::xetcache
