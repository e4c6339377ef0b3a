#include "daemon/answers/download_objects.hpp"

#include "daemon/answers/lookups.hpp"
#include "daemon/answers/xorb.hpp"

#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <set>

namespace dedupd::daemon::answers {

namespace {

// nginx writes a cache file's header (its own struct, the KEY line, the
// upstream's status line and headers) within proxy_buffer_size; this is
// far past any.
constexpr std::size_t kMaxHeaderBytes = 64 * 1024;
constexpr std::size_t kReadBlock = 1 << 20;

base::Error file_error(const std::filesystem::path& file, std::string message) {
  return base::Error{"xet_download.cache_file", 0, file.string() + ": " + std::move(message), false};
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

RangeExpectation range_expectation(Sources& sources, std::string_view xorb, std::uint64_t start, std::uint64_t end,
                                   std::uint32_t first_chunk, std::uint32_t end_chunk) {
  RangeExpectation e;
  if (auto hash = shard::Hash::parse(xorb)) e.xorb = *hash;
  e.length = end - start + 1;
  e.first_chunk = first_chunk;
  e.end_chunk = end_chunk;
  // This host's index only: a fill does not wait on the fleet.
  auto lookups = Lookups::open(sources, Lookups::Scope::local_only);
  if (!lookups) return e;
  auto forms = lookups->index().xorb(e.xorb);
  if (!forms || forms->empty()) return e;
  const index::XorbInfo& form = (*forms)[primary_form(*forms)];
  if (end_chunk > form.chunks.size()) return e;
  for (const auto& c : form.chunks) e.known.push_back({c.chunk_hash, c.unpacked_bytes});
  if (form.keyed) e.key = form.key;
  return e;
}

std::string object_cache_key(std::string_view xorb, std::uint64_t start, std::uint64_t end) {
  return "xet1:" + std::string(xorb) + ":" + std::to_string(start) + "-" + std::to_string(end);
}

std::filesystem::path object_cache_file(const std::filesystem::path& dir, std::string_view key) {
  // (Looked up once: OpenSSL 3 looks EVP_md5() up by name at each digest.)
  static EVP_MD* const md5 = EVP_MD_fetch(nullptr, "MD5", nullptr);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(key.data(), key.size(), md, &n, md5, nullptr);
  static constexpr char digits[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < n; ++i) {
    hex += digits[md[i] >> 4];
    hex += digits[md[i] & 15];
  }
  // levels=1:2: the last digit, then the two before it.
  return dir / hex.substr(hex.size() - 1) / hex.substr(hex.size() - 3, 2) / hex;
}

base::Result<std::optional<CheckedRange>> check_cache_file(const std::filesystem::path& file, std::string_view key,
                                                           const RangeExpectation& expected) {
  Fd f{::open(file.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) {
    if (errno == ENOENT) return std::optional<CheckedRange>();
    return file_error(file, std::string("cannot open: ") + std::strerror(errno));
  }
  std::vector<std::uint8_t> buf(kReadBlock);
  ssize_t got = ::pread(f.fd, buf.data(), kMaxHeaderBytes, 0);
  if (got < 0) return file_error(file, std::string("cannot read: ") + std::strerror(errno));
  std::string_view head(reinterpret_cast<const char*>(buf.data()), std::size_t(got));
  const std::string key_line = "\nKEY: " + std::string(key) + "\n";
  auto k = head.find(key_line);
  auto blank = k == std::string_view::npos ? k : head.find("\r\n\r\n", k + key_line.size());
  if (blank == std::string_view::npos) return file_error(file, "not an nginx cache file of " + std::string(key));
  off_t at = off_t(blank + 4);
  RangeChecker checker(expected);
  for (;;) {
    ssize_t n = ::pread(f.fd, buf.data(), buf.size(), at);
    if (n < 0) return file_error(file, std::string("cannot read: ") + std::strerror(errno));
    if (n == 0) break;
    at += n;
    auto fed = checker.feed(std::span<const std::uint8_t>(buf.data(), std::size_t(n)));
    if (!fed) return fed.error();
  }
  auto done = checker.finish();
  if (!done) return done.error();
  return std::optional<CheckedRange>(std::move(*done));
}

DownloadObjects::DownloadObjects(std::size_t capacity, std::optional<ObjectChecksFile> checks)
    : capacity_(capacity), checks_(std::move(checks)) {}

base::Result<ObjectChecksFile::Loaded> DownloadObjects::load_checks() {
  if (!checks_) return ObjectChecksFile::Loaded{};
  auto loaded = checks_->load();
  if (!loaded) return loaded;
  std::lock_guard lock(mutex_);
  kept_ = loaded->digests;
  kept_lines_ = loaded->lines;
  return loaded;
}

void DownloadObjects::keep_digest(const std::string& key, const shard::Hash& digest) {
  // (Under mutex_.) A digest that cannot be written costs that object the
  // structure-only check after a restart, nothing now.
  if (!checks_) return;
  kept_[key] = digest;
  if (checks_->append(key, digest)) ++kept_lines_;
  if (kept_lines_ <= 2 * checks_->keep()) return;
  // Past its bound: the digests of objects not in memory go first.
  std::set<std::string, std::less<>> in_memory{key};
  for (const auto& [k, object] : objects_)
    in_memory.insert(object_cache_key(std::get<0>(k), std::get<1>(k), std::get<2>(k)));
  for (auto it = kept_.begin(); it != kept_.end() && kept_.size() > checks_->keep();)
    it = in_memory.count(it->first) ? std::next(it) : kept_.erase(it);
  if (checks_->rewrite(kept_)) kept_lines_ = kept_.size();
}

void DownloadObjects::add(std::string_view xorb, ObjectSpan span, CheckedRange checked) {
  std::lock_guard lock(mutex_);
  keep_digest(object_cache_key(xorb, span.start, span.end), checked.digest);
  objects_[Key{std::string(xorb), span.start, span.end}] = Object{std::move(checked), std::nullopt, next_++};
  if (objects_.size() > capacity_) {
    // Past the capacity the oldest check goes: its object is filled again
    // (its own range) or its file checked again (a covering one) when next asked.
    auto oldest = std::min_element(objects_.begin(), objects_.end(),
                                   [](const auto& a, const auto& b) { return a.second.added < b.second.added; });
    objects_.erase(oldest);
  }
}

std::optional<ObjectSpan> DownloadObjects::covering(std::string_view xorb, std::uint64_t first, std::uint64_t last,
                                                    const std::filesystem::path& cache_dir) const {
  std::lock_guard lock(mutex_);
  std::optional<ObjectSpan> best;
  auto it = objects_.lower_bound(KeyView{xorb, 0, 0});
  auto stop = objects_.upper_bound(KeyView{xorb, first, std::numeric_limits<std::uint64_t>::max()});
  for (; it != stop; ++it) {
    const auto& [start, end] = std::pair{std::get<1>(it->first), std::get<2>(it->first)};
    if (end < last || (best && end - start >= best->end - best->start)) continue;
    // The range's own object: named whatever its file (a miss fills it),
    // and none is smaller; no stat (a second host's answer names only
    // these, 1,000 of them for a 64 GB file).
    if (start == first && end == last) return ObjectSpan{start, end};
    const auto& starts = it->second.checked.chunk_starts;
    auto on_boundary = [&](std::uint64_t offset) { return std::binary_search(starts.begin(), starts.end(), offset); };
    if (!on_boundary(first - start) || !on_boundary(last + 1 - start)) continue;
    struct stat st {};
    if (::stat(object_cache_file(cache_dir, object_cache_key(xorb, start, end)).c_str(), &st) != 0) continue;
    best = ObjectSpan{start, end};
  }
  return best;
}

CacheFile DownloadObjects::check_file(std::string_view xorb, ObjectSpan span, const std::filesystem::path& cache_dir,
                                      const std::function<RangeExpectation()>& expected,
                                      const std::function<std::optional<shard::Hash>()>& reference) {
  const std::string key = object_cache_key(xorb, span.start, span.end);
  const auto file = object_cache_file(cache_dir, key);
  const Key k{std::string(xorb), span.start, span.end};
  struct stat st {};
  // Not there: a miss. There but out of dedupd's sight (another user's
  // cache): nothing of it may be served unchecked.
  if (::stat(file.c_str(), &st) != 0) return errno == ENOENT ? CacheFile::absent : CacheFile::stuck;
  const Stamp now{st.st_dev, st.st_ino, st.st_size, std::int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec,
                  std::int64_t(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec};
  std::optional<shard::Hash> digest;
  {
    std::lock_guard lock(mutex_);
    auto it = objects_.find(k);
    if (it != objects_.end()) {
      if (it->second.stamp == now) return CacheFile::intact;
      digest = it->second.checked.digest;
    } else if (auto kept = kept_.find(key); kept != kept_.end()) {
      digest = kept->second;  // checked by an earlier run
    }
  }
  // (Outside the lock: a tier host's answer takes a round trip.)
  const bool kept_here = digest.has_value();
  if (!digest && reference) digest = reference();
  // Changed since its check, or never checked by this process: its body
  // again, outside the lock (up to 64 MiB).
  auto checked = check_cache_file(file, key, expected());
  if (checked && !*checked) return CacheFile::absent;
  if (!checked || (digest && (*checked)->digest != *digest)) {
    const bool removed = ::unlink(file.c_str()) == 0 || errno == ENOENT;
    std::lock_guard lock(mutex_);
    objects_.erase(k);
    kept_.erase(key);
    return removed ? CacheFile::damaged : CacheFile::stuck;
  }
  std::lock_guard lock(mutex_);
  auto it = objects_.find(k);
  if (it == objects_.end()) {
    // (A tier's fill, or a file from before the file of digests.)
    if (!kept_here) keep_digest(key, (*checked)->digest);
    it = objects_.emplace(k, Object{std::move(**checked), std::nullopt, next_++}).first;
  }
  it->second.stamp = now;
  return CacheFile::intact;
}

std::optional<shard::Hash> DownloadObjects::digest_of(std::string_view xorb, ObjectSpan span) const {
  std::lock_guard lock(mutex_);
  if (auto it = objects_.find(KeyView{xorb, span.start, span.end}); it != objects_.end())
    return it->second.checked.digest;
  if (auto kept = kept_.find(object_cache_key(xorb, span.start, span.end)); kept != kept_.end()) return kept->second;
  return std::nullopt;
}

std::size_t DownloadObjects::size() const {
  std::lock_guard lock(mutex_);
  return objects_.size();
}

}  // namespace dedupd::daemon::answers
