#include "daemon/ingest/ingester.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include <spdlog/spdlog.h>

#include "daemon/ingest/quarantine.hpp"
#include "daemon/ingest/read_lease.hpp"
#include "daemon/ingest/validate.hpp"
#include "daemon/ingest/waiting.hpp"
#include "daemon/log/logging.hpp"
#include "shard/caf.hpp"
#include "shard/mapped_file.hpp"

namespace dedupd::daemon::ingest {

namespace fs = std::filesystem;

const char* to_string(FileOutcome o) {
  switch (o) {
    case FileOutcome::added:
      return "added";
    case FileOutcome::already_present:
      return "already_present";
    case FileOutcome::previously_gone:
      return "previously_gone";
    case FileOutcome::expired:
      return "expired";
    case FileOutcome::unchanged:
      return "unchanged";
    case FileOutcome::rejected:
      return "rejected";
    case FileOutcome::vanished:
      return "vanished";
    case FileOutcome::failed:
      return "failed";
  }
  return "?";
}

namespace {
// A file that cannot be opened or mapped for a reason of the machine's, not
// of its bytes: it waits, it is not rejected (nor quarantined).
bool passing_open_error(const base::Error& e) {
  for (int code : {EIO, EMFILE, ENFILE, ENOMEM, EAGAIN})
    if (e.message.ends_with(std::strerror(code))) return true;
  return false;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

FileOutcome Ingester::ingest_file(const watch::Candidate& file, std::uint64_t now) {
  struct stat st {};
  if (::lstat(file.path.c_str(), &st) != 0) {
    spdlog::debug("{} vanished before it could be read", file.path);
    return FileOutcome::vanished;
  }
  if (!S_ISREG(st.st_mode)) return FileOutcome::vanished;  // replaced by a link or directory

  index::SourceInfo source;
  source.path = file.path.native();
  source.size = std::uint64_t(st.st_size);
  source.mtime_ns = std::int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;

  // Seen with this size and mtime, accepted or rejected: nothing to do. This
  // is what keeps restarts and rescans cheap and bad files logged once.
  auto known = index_.source(source.path);
  if (known && *known && (*known)->size == source.size && (*known)->mtime_ns == source.mtime_ns)
    return FileOutcome::unchanged;

  return file.kind == watch::FileKind::bundle ? ingest_bundle_file(file.path, source, now)
                                              : ingest_shard_file(file.path, source, now);
}

FileOutcome Ingester::still_being_written(const fs::path& path) {
  // Someone has it open for writing (a scan found it mid-write); its
  // close-after-write event brings it back, and the waiting list's retry
  // does should that event never come (a writer in another mount namespace).
  spdlog::debug("{} is open for writing; waiting for it to be closed", path);
  return failed(base::Error{kRuleStillWritten, 0, path.native() + " is open for writing", false});
}

FileOutcome Ingester::failed(base::Error why) {
  last_failure_ = std::move(why);
  return FileOutcome::failed;
}

FileOutcome Ingester::ingest_shard_file(const fs::path& path, const index::SourceInfo& source, std::uint64_t now) {
  auto t0 = std::chrono::steady_clock::now();
  ReadLease lease(path);
  if (lease.state() == ReadLease::State::busy) return still_being_written(path);
  auto mapped = shard::MappedFile::open(path);
  if (!mapped) {
    if (!fs::exists(path)) return FileOutcome::vanished;
    if (passing_open_error(mapped.error())) {
      spdlog::error("cannot read {}: {}; it waits and is tried again", path, mapped.error());
      return failed(base::Error{kRuleReadIo, 0, mapped.error().message, false});
    }
    return reject(path, source, mapped.error(), now);
  }
  if (mapped->size() != source.size) return FileOutcome::vanished;  // rewritten meanwhile; its close event follows

  auto valid = validate_shard(mapped->bytes(), path.native());
  if (!valid) return reject(path, source, valid.error(), now);
  double validate_ms = ms_since(t0);

  index::IngestOptions options;
  options.now = now;
  options.shard_hash = valid->content_hash;
  options.cas = scopes_.of_path(path.native());
  auto result = index_.ingest(valid->view, source, options);
  spdlog::debug("{}: validated in {:.1f} ms, index transaction {:.1f} ms", path, validate_ms,
                ms_since(t0) - validate_ms);
  if (!result) {
    // The index's trouble (disk or map full), not the file's: not recorded as
    // rejected; it waits for its retry (daemon/ingest/waiting.hpp).
    spdlog::error("cannot index {}: {}", path, result.error());
    return failed(result.error());
  }
  return record(*result, path, ms_since(t0));
}

FileOutcome Ingester::ingest_bundle_file(const fs::path& path, const index::SourceInfo& source, std::uint64_t now) {
  ReadLease lease(path);
  if (lease.state() == ReadLease::State::busy) return still_being_written(path);
  auto mapped = shard::MappedFile::open(path);
  if (!mapped) {
    if (!fs::exists(path)) return FileOutcome::vanished;
    if (passing_open_error(mapped.error())) {
      spdlog::error("cannot read {}: {}; it waits and is tried again", path, mapped.error());
      return failed(base::Error{kRuleReadIo, 0, mapped.error().message, false});
    }
    return reject(path, source, mapped.error(), now);
  }
  if (mapped->size() != source.size) return FileOutcome::vanished;
  auto bundle = shard::caf::BundleView::parse(mapped->bytes());
  if (!bundle) return reject(path, source, bundle.error(), now);

  // Each member is a source of its own, "<bundle>#<member>", carrying the
  // bundle's size and mtime: an unchanged bundle costs one lookup per
  // member, and a bad member is recorded without condemning the others.
  // The bundle file itself is never deleted at expiry: it is not one shard.
  FileOutcome overall = FileOutcome::unchanged;
  bool any_failed = false;  // then the bundle waits, and its retry takes the members still missing
  auto note = [&](FileOutcome o) {
    any_failed |= o == FileOutcome::failed;
    if (o == FileOutcome::added || overall == FileOutcome::unchanged) overall = o;
  };
  for (const shard::caf::Member* m : bundle->shard_members()) {
    index::SourceInfo member = source;
    member.path = source.path + "#" + m->name;
    auto known = index_.source(member.path);
    if (known && *known && (*known)->size == member.size && (*known)->mtime_ns == member.mtime_ns) continue;
    auto t0 = std::chrono::steady_clock::now();
    auto valid = validate_shard(m->bytes, m->name);
    if (!valid) {
      base::Error e = valid.error();
      e.offset += m->start;  // where in the bundle file
      note(reject(member.path, member, e, now, /*quarantine=*/false));
      continue;
    }
    index::IngestOptions options;
    options.now = now;
    options.shard_hash = valid->content_hash;
    options.cas = scopes_.of_path(path.native());
    auto result = index_.ingest(valid->view, member, options);
    if (!result) {
      spdlog::error("cannot index {}: {}", member.path, result.error());
      last_failure_ = result.error();
      note(FileOutcome::failed);
      continue;
    }
    note(record(*result, member.path, ms_since(t0)));
  }
  for (const shard::caf::Member* m : bundle->other_members())
    spdlog::debug("{}: member {} is not a shard; ignored", path, m->name);
  return any_failed ? FileOutcome::failed : overall;
}

FileOutcome Ingester::reject(const fs::path& path, const index::SourceInfo& source, base::Error error,
                             std::uint64_t now, bool quarantine) {
  counters_.shards_rejected++;
  std::string where;
  if (quarantine && quarantine_) {
    auto moved = move_to_quarantine(path, *quarantine_);
    if (auto* to = std::get_if<fs::path>(&moved)) where = " (moved to " + to->native() + ")";
    else spdlog::warn("cannot quarantine {}: {}", path, std::get<std::string>(moved));
  }
  spdlog::warn("rejected {}: {}{}", path, error, where);

  index::RejectInfo r;
  r.path = source.path;
  r.size = source.size;
  r.mtime_ns = source.mtime_ns;
  r.rule = error.rule;
  r.offset = error.offset;
  r.message = error.message + where;
  r.recorded_at = now;
  if (auto st = index_.record_rejected(r); !st)
    spdlog::error("cannot record the rejection of {}: {}", path, st.error());
  return FileOutcome::rejected;
}

FileOutcome Ingester::record(const index::IngestResult& r, const fs::path& path, double ms) {
  switch (r.outcome) {
    case index::IngestOutcome::added:
      counters_.shards_ingested++;
      counters_.chunks_ingested += r.chunks;
      spdlog::info("indexed {}: shard {}, {} xorbs, {} chunks ({} new entries), {} files in {:.1f} ms", path, r.shard,
                   r.xorbs, r.chunks, r.new_chunk_entries, r.files, ms);
      return FileOutcome::added;
    case index::IngestOutcome::already_present:
      counters_.shards_duplicate++;
      spdlog::debug("{}: shard {} is already indexed", path, r.shard);
      return FileOutcome::already_present;
    case index::IngestOutcome::previously_gone:
      spdlog::info("{}: shard {} was removed or expired before; not indexed again", path, r.shard);
      return FileOutcome::previously_gone;
    case index::IngestOutcome::expired:
      spdlog::info("{}: shard {} had already expired; recorded, not indexed", path, r.shard);
      return FileOutcome::expired;
  }
  return FileOutcome::failed;
}

core::UploadResult Ingester::ingest_upload(std::span<const std::uint8_t> bytes, const std::string& name,
                                           std::uint64_t now) {
  // The shards of the body: the body itself, or a bundle's *.mdb members.
  struct Part {
    std::string name;
    std::span<const std::uint8_t> bytes;
    std::uint64_t offset;  // in the body, for error offsets
  };
  std::vector<Part> parts;
  if (name.ends_with(".caf")) {
    auto bundle = shard::caf::BundleView::parse(bytes);
    if (!bundle) return bundle.error();
    for (const auto* m : bundle->shard_members()) parts.push_back({m->name, m->bytes, m->start});
  } else {
    parts.push_back({name, bytes, 0});
  }
  // All or nothing: every part must be valid before any is indexed.
  std::vector<ValidShard> valid;
  for (const auto& p : parts) {
    auto v = validate_shard(p.bytes, p.name);
    if (!v) {
      base::Error e = v.error();
      e.offset += p.offset;
      if (parts.size() > 1) e.message = p.name + ": " + e.message;
      spdlog::info("upload{}{} rejected: {}", name.empty() ? "" : " ", name, e);
      return e;
    }
    valid.push_back(std::move(v).value());
  }
  std::vector<core::IngestedShard> out;
  for (std::size_t i = 0; i < valid.size(); ++i) {
    index::IngestOptions options;
    options.now = now;
    options.revive = true;  // an explicit upload brings back a removed shard
    options.shard_hash = valid[i].content_hash;
    auto r = index_.ingest(valid[i].view, index::SourceInfo{}, options);
    if (!r) {
      // An index failure, not the upload's: its "index.*" rule tells the
      // HTTP layer so (a 500 or 503, never the 422 of a bad shard).
      base::Error e = r.error();
      e.message =
          "cannot index the uploaded shard" + (parts[i].name.empty() ? "" : " " + parts[i].name) + ": " + e.message;
      return e;
    }
    record(*r, "(upload) " + (parts[i].name.empty() ? std::string("body") : parts[i].name), 0);
    out.push_back({r->shard, r->outcome == index::IngestOutcome::added, r->xorbs, r->chunks, r->files});
  }
  return out;
}

}  // namespace dedupd::daemon::ingest
