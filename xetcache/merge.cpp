#include "xetcache/merge.hpp"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <unordered_map>

#include "shard/integrity.hpp"
#include "shard/writer.hpp"
#include "xetcache/layout.hpp"
#include "xetcache/shards.hpp"

namespace dedupd::xetcache {

namespace {

// Entry indices in the lookup tables are u32 counts of 48-byte entries; stay
// far below that rather than let the writer throw.
constexpr std::uint64_t kMaxMergedBytes = 4ull << 30;

Error merge_error(const char* rule, std::string message) { return Error{rule, 0, std::move(message), false}; }

// Of two records of one file, the one that says more (verification entries,
// then the sha256 extension), filled in from the other where it says less:
// what xet-core's own shard union does for a file in both inputs.
void combine_file(shard::FileRecord& kept, shard::FileRecord&& other) {
  if (kept.verification.empty() && !other.verification.empty()) {
    if (!other.metadata_ext) other.metadata_ext = kept.metadata_ext;
    kept = std::move(other);
    return;
  }
  if (!kept.metadata_ext) kept.metadata_ext = other.metadata_ext;
}

// Of two descriptions of one xorb the fuller one: more chunks listed, then a
// known size on disk (server replies write 0 there).
bool better_xorb(const shard::XorbBlock& candidate, const shard::XorbRecord& kept) {
  if (candidate.num_chunks() != kept.chunks.size()) return candidate.num_chunks() > kept.chunks.size();
  return kept.header.bytes_on_disk == 0 && candidate.header().bytes_on_disk != 0;
}

// Each file or xorb once, in the order first seen; a later block with the
// same hash goes to `combine` with the record kept.
template <class Record>
struct RecordsByHash {
  std::vector<Record> records;
  std::unordered_map<shard::Hash, std::size_t> at;
  std::uint64_t duplicates = 0;

  template <class Block, class Combine>
  void add(const Block& block, Combine combine) {
    auto [it, fresh] = at.try_emplace(block.hash(), records.size());
    if (fresh) {
      records.push_back(shard::record_of(block));
      return;
    }
    ++duplicates;
    combine(records[it->second], block);
  }
};

std::string uuid4_text() {
  std::uint8_t b[16] = {};
  std::size_t got = 0;
  while (got < sizeof b) {
    ssize_t n = ::getrandom(b + got, sizeof b - got, 0);
    if (n > 0) got += std::size_t(n);
    else if (errno != EINTR) break;  // the pid and address below still make the name unique here
  }
  if (got < sizeof b) {
    auto pid = std::uint64_t(::getpid());
    auto addr = std::uint64_t(reinterpret_cast<std::uintptr_t>(&got));
    std::memcpy(b, &pid, 8);
    std::memcpy(b + 8, &addr, 8);
  }
  b[6] = std::uint8_t((b[6] & 0x0F) | 0x40);  // version 4
  b[8] = std::uint8_t((b[8] & 0x3F) | 0x80);  // RFC 4122 variant
  char text[37];
  std::snprintf(text, sizeof text, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return text;
}

Error write_error(const std::string& path, const char* what, int err) {
  return merge_error("xetcache.write", path + ": " + what + ": " + std::strerror(err));
}

bool write_all(int fd, std::span<const std::uint8_t> bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes = bytes.subspan(std::size_t(n));
  }
  return true;
}

// The access time is left as it is: only the modification time says how
// recent the content is.
bool set_mtime(int fd, std::int64_t mtime_ns) {
  const struct timespec times[2] = {{0, UTIME_OMIT}, {mtime_ns / 1'000'000'000, mtime_ns % 1'000'000'000}};
  return ::futimens(fd, times) == 0;
}

}  // namespace

Result<MergedShard> merge_views(std::span<const shard::ShardView> members, const MergeOptions& options) {
  MergedShard out;
  std::uint64_t input_bytes = 0;
  std::uint64_t newest = 0;
  for (std::size_t i = 0; i < members.size(); ++i) {
    const shard::ShardView& v = members[i];
    if (i == 0) out.key = v.chunk_key();
    else if (v.chunk_key() != out.key)
      return merge_error("xetcache.key_mismatch", "member " + std::to_string(i) + " is keyed with " +
                                                      v.chunk_key().to_string() + ", member 0 with " +
                                                      out.key.to_string());
    input_bytes += v.bytes().size();
    if (v.has_footer()) {
      out.expiry = std::min(out.expiry, v.footer()->key_expiry);
      newest = std::max(newest, v.footer()->creation_timestamp);
    }
  }
  if (input_bytes > kMaxMergedBytes)
    return merge_error("xetcache.too_large", std::to_string(input_bytes) + " bytes of members, at most " +
                                                 std::to_string(kMaxMergedBytes) + " merge into one shard");
  out.creation = options.creation != 0 ? options.creation : newest;

  RecordsByHash<shard::FileRecord> files;
  RecordsByHash<shard::XorbRecord> xorbs;
  for (const shard::ShardView& v : members) {
    for (shard::FileBlock b : v.files())
      files.add(b, [](shard::FileRecord& kept, const shard::FileBlock& again) {
        combine_file(kept, shard::record_of(again));
      });
    for (shard::XorbBlock b : v.xorbs())
      xorbs.add(b, [](shard::XorbRecord& kept, const shard::XorbBlock& again) {
        if (better_xorb(again, kept)) kept = shard::record_of(again);
      });
  }
  out.stats.duplicate_files = files.duplicates;
  out.stats.duplicate_xorbs = xorbs.duplicates;

  std::optional<bool> verified;
  for (const auto& f : files.records) {
    if (f.terms.empty()) continue;
    bool has = !f.verification.empty();
    if (verified && *verified != has)
      return merge_error("xetcache.verification_mixed",
                         "file " + f.header.file_hash.to_string() + (has ? " has" : " lacks") +
                             " verification entries and an earlier file does not: xet-core rejects such a shard");
    verified = has;
  }
  // A file without terms (the empty file) has no verification entries to
  // carry, only the flag, and every file's flag must agree.
  for (auto& f : files.records) {
    if (!f.terms.empty()) continue;
    if (!verified) verified = f.header.with_verification();
    if (*verified) f.header.flags |= shard::kFileFlagWithVerification;
    else f.header.flags &= ~shard::kFileFlagWithVerification;
  }

  shard::ShardWriter writer;
  out.stats.files = files.records.size();
  out.stats.xorbs = xorbs.records.size();
  for (auto& f : files.records) writer.add_file(std::move(f));
  for (auto& x : xorbs.records) {
    out.stats.chunks += x.chunks.size();
    writer.add_xorb(std::move(x));
  }
  writer.sort_sections_by_hash();
  shard::WriteOptions wo;
  wo.lookup_tables = shard::LookupTables::build;
  wo.derive_byte_totals = true;
  wo.footer.chunk_hash_key = out.key;
  wo.footer.creation_timestamp = out.creation;
  wo.footer.key_expiry = out.expiry;
  out.bytes = writer.write(wo);

  // The writer is trusted, but what goes into the client's cache is checked
  // once more: a shard the client misreads would cost it dedup silently.
  auto view = shard::ShardView::parse(out.bytes);
  if (!view) return merge_error("xetcache.self_check", view.error().to_string());
  std::vector<Error> problems;
  shard::check_lookup_tables(*view, problems);
  if (!problems.empty()) return merge_error("xetcache.self_check", problems.front().to_string());
  out.hash = shard::shard_file_hash(out.bytes);
  return out;
}

std::string steward_temp_path(const std::string& dir) {
  return dir + "/" + std::string(kStewardTempPrefix) + uuid4_text() + std::string(kTempSuffix);
}

Result<WrittenShard> write_shard_file(const std::string& dir, std::span<const std::uint8_t> bytes, mode_t mode,
                                      std::int64_t mtime_ns) {
  WrittenShard w;
  w.hash = shard::shard_file_hash(bytes);
  w.size = bytes.size();
  w.path = dir + "/" + w.hash.to_string() + ".mdb";
  const std::string temp = steward_temp_path(dir);
  // The same merge again (its originals are still there) finds its result
  // in place: the name is the content hash, so equal bytes under that name
  // are the file, and rewriting and fsyncing it every pass buys nothing.
  if (auto existing = read_regular_file(w.path);
      existing && existing->size() == bytes.size() && std::equal(bytes.begin(), bytes.end(), existing->begin())) {
    w.existed = true;
    return w;
  }

  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return write_error(temp, "create", errno);
  const char* failed = nullptr;
  if (!write_all(fd, bytes)) failed = "write";
  else if (::fchmod(fd, mode) != 0) failed = "chmod";
  else if (mtime_ns != 0 && !set_mtime(fd, mtime_ns)) failed = "set the modification time of";
  else if (::fsync(fd) != 0) failed = "fsync";
  int err = errno;
  if (::close(fd) != 0 && !failed) {
    failed = "close";
    err = errno;
  }
  if (!failed && ::rename(temp.c_str(), w.path.c_str()) != 0) {
    failed = "rename into place";
    err = errno;
  }
  if (failed) {
    ::unlink(temp.c_str());
    return write_error(temp, failed, err);
  }
  // The rename is durable only once the directory is; the name is the
  // content hash, so a crash before this leaves either no name or the right one.
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return write_error(dir, "open directory", errno);
  bool synced = ::fsync(dfd) == 0;
  err = errno;
  ::close(dfd);
  if (!synced) return write_error(dir, "fsync directory", err);
  return w;
}

Result<MergeOutcome> merge_files(std::span<const std::string> member_paths, const std::string& dir,
                                 const MergeOptions& options) {
  std::vector<std::vector<std::uint8_t>> contents;
  std::vector<shard::ShardView> views;
  contents.reserve(member_paths.size());
  views.reserve(member_paths.size());
  std::int64_t newest_mtime_ns = 0;
  for (const auto& path : member_paths) {
    auto m = read_regular_file(path);
    if (!m) return m.error();
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0)
      newest_mtime_ns = std::max(newest_mtime_ns, std::int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec);
    contents.push_back(std::move(*m));
    auto v = shard::ShardView::parse(contents.back());
    if (!v) {
      Error e = v.error();
      e.message = path + ": " + e.message;
      return e;
    }
    views.push_back(*v);
  }
  auto merged = merge_views(views, options);
  if (!merged) return merged.error();
  auto written = write_shard_file(dir, merged->bytes, options.file_mode, newest_mtime_ns);
  if (!written) return written.error();
  MergeOutcome out{std::move(*written), {}, merged->key, merged->creation, merged->expiry, merged->stats};
  for (std::size_t i = 0; i < member_paths.size(); ++i)
    if (views[i].bytes().size() != merged->bytes.size() || shard::shard_file_hash(views[i].bytes()) != out.file.hash)
      out.replaced.push_back(member_paths[i]);
  return out;
}

}  // namespace dedupd::xetcache
