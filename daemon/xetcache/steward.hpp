// Looks after the Xet client caches of `manage: xet-cache` watch entries
// (dedupd.yaml(5)): merges many small shards of each shard-cache/ into few
// (xetcache/), deletes what a merge replaced once no client process can
// still read it, and keeps each cache under its byte and chunk-entry caps,
// all the time rather than at the client's session start.
//
// It runs on the work loop: it reads the index to know which files dedupd
// took (it merges and deletes only those, unchanged since), and writes only
// in shard-cache/. The merged file is then indexed like any new shard.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "daemon/config/config.hpp"
#include "daemon/status.hpp"
#include "index/index.hpp"
#include "xetcache/shards.hpp"

namespace dedupd::daemon {

// Client processes that may hold shards they loaded: the Xet client (hf_xet
// 1.8.0) writes <root>/logs/xet_<UTC start>_<pid>.log for each process. A
// pid counts while it runs and started no later than its log says (so a
// reused pid does not).
std::vector<pid_t> live_xet_clients(const std::filesystem::path& cache_root);

class CacheSteward {
 public:
  explicit CacheSteward(const index::Index& index) : index_(index) {}

  void configure(std::vector<std::filesystem::path> roots, const XetCacheConfig& config);
  bool any() const { return !roots_.empty(); }

  // One pass at `now` over every managed cache: deletes replaced originals
  // that no client can still read (or whose grace is over), merges at most
  // one group per cache, evicts past the caps. Returns true when it wrote
  // or deleted a file.
  bool run(std::uint64_t now);

  // Any thread.
  std::vector<XetCacheStatus> status() const;

 private:
  struct Pending {
    std::string path;
    std::uint64_t replaced_at = 0;
  };
  // A shard file as last described, valid while its size and mtime hold:
  // a pass then parses only the files that are new or changed.
  struct Described {
    std::uint64_t size = 0;
    std::int64_t mtime_ns = 0;
    xetcache::ShardDesc desc;
  };
  struct EndpointState {
    XetCacheStatus status;
    std::vector<Pending> pending;                // originals of merges, still on disk
    std::map<std::string, Described> described;  // by path
  };

  bool run_endpoint(const std::string& dir, const std::string& shard_cache, std::uint64_t now,
                    std::size_t live_clients);
  // The file is the very one the index took (same size and mtime, not
  // rejected): dedupd deletes nothing else.
  bool indexed_unchanged(const std::string& path) const;
  bool delete_indexed(const std::string& path, const char* why);

  const index::Index& index_;
  std::vector<std::filesystem::path> roots_;
  XetCacheConfig config_;
  std::map<std::string, EndpointState> endpoints_;  // by endpoint dir
  mutable std::mutex status_mu_;
  std::vector<XetCacheStatus> published_;
};

}  // namespace dedupd::daemon
