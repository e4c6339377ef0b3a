// Turns a complete file from a watched directory (or an uploaded body) into
// index entries: map, validate, ingest, in that order. A file that fails
// validation never reaches the index's entries: it is recorded as rejected
// (with rule and offset), logged once, optionally quarantined, and looked
// at again only when its size or mtime changes.
#pragma once

#include <filesystem>
#include <optional>
#include <span>
#include <string>

#include "daemon/core/counters.hpp"
#include "daemon/core/status.hpp"
#include "daemon/ingest/cas_scope.hpp"
#include "daemon/watch/watcher.hpp"
#include "index/index.hpp"

namespace dedupd::daemon::ingest {

enum class FileOutcome {
  added,            // new shard, now queryable
  already_present,  // same content already indexed (this path recorded)
  previously_gone,  // removed or expired before; stays out
  expired,          // already expired when found: recorded, not indexed
  unchanged,        // seen before with this size and mtime
  rejected,         // failed validation
  vanished,         // gone (or open for writing) when we came to read it
  failed,           // not now (disk/map full, EIO, still being written): last_failure() says why; it waits
};
const char* to_string(FileOutcome o);

class Ingester {
 public:
  Ingester(index::Index& index, core::Counters& counters, CasScopes& scopes)
      : index_(index), counters_(counters), scopes_(scopes) {}

  void set_quarantine_dir(std::optional<std::filesystem::path> dir) { quarantine_ = std::move(dir); }

  FileOutcome ingest_file(const watch::Candidate& file, std::uint64_t now);
  // Why the last ingest_file() that returned `failed` failed.
  const base::Error& last_failure() const { return last_failure_; }

  // POST /v1/admin/ingest: the same checks on bytes with no file behind them.
  // An explicit upload brings back a shard removed earlier (unless expired).
  core::UploadResult ingest_upload(std::span<const std::uint8_t> bytes, const std::string& name, std::uint64_t now);

 private:
  FileOutcome ingest_shard_file(const std::filesystem::path& path, const index::SourceInfo& source, std::uint64_t now);
  FileOutcome ingest_bundle_file(const std::filesystem::path& path, const index::SourceInfo& source, std::uint64_t now);
  FileOutcome still_being_written(const std::filesystem::path& path);
  FileOutcome failed(base::Error why);
  FileOutcome reject(const std::filesystem::path& path, const index::SourceInfo& source, base::Error error,
                     std::uint64_t now, bool quarantine = true);
  FileOutcome record(const index::IngestResult& r, const std::filesystem::path& path, double ms);

  index::Index& index_;
  core::Counters& counters_;
  CasScopes& scopes_;
  std::optional<std::filesystem::path> quarantine_;
  base::Error last_failure_;
};

}  // namespace dedupd::daemon::ingest
