// The objects of the endpoint's download cache that dedupd has checked
// (docs/XET-ENDPOINT.md, "Downloads"). An object is the bytes of one range
// [start, end] of a xorb that the CAS signed, fetched once from the storage
// through dedupd, checked (xorb_range_check.hpp) and kept by nginx as a 200
// in its cache file. dedupd remembers, in memory, each object's chunk
// boundaries and digest, so that
//   - a later answer naming a range of the same xorb inside an object, on
//     its chunk boundaries, is served from that object (nginx's range filter
//     cuts exactly the granted bytes out of the cached 200), and
//   - a cache file changed since it was checked (its stat differs) is
//     hashed again before it is served, and dropped when it differs.
// Forgotten at restart: objects are then filled again under their own
// range, as any miss. Any thread.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "daemon/answers/object_checks_file.hpp"
#include "daemon/answers/xorb_range_check.hpp"

namespace dedupd::daemon::answers {

class Sources;

// What the bytes [start, end] of `xorb` (chunks [first_chunk, end_chunk),
// end_chunk 0 when not known) must be: with this index's chunks of the
// xorb when it holds the xorb (an index read: only when bytes are to be
// checked).
RangeExpectation range_expectation(Sources& sources, std::string_view xorb, std::uint64_t start, std::uint64_t end,
                                   std::uint32_t first_chunk, std::uint32_t end_chunk);

// nginx's proxy_cache_key of an object: xorb coordinates, the same on
// every host.
std::string object_cache_key(std::string_view xorb, std::uint64_t start, std::uint64_t end);
// Where nginx keeps it: <dir>/<levels 1:2 of md5(key)>/<md5(key)>.
std::filesystem::path object_cache_file(const std::filesystem::path& dir, std::string_view key);

struct ObjectSpan {
  std::uint64_t start = 0, end = 0;  // bytes of the xorb, end inclusive
};

// What a cache file is, seen from a grant.
enum class CacheFile : std::uint8_t {
  absent,   // not (or no longer) in the cache: a miss
  intact,   // its body is the bytes dedupd checked
  damaged,  // it changed: removed, never to be served
  stuck,    // damaged or out of dedupd's sight, and not removed: nothing of it may be served
};

class DownloadObjects {
 public:
  // `checks`, when given, keeps each checked object's digest across
  // restarts (object_checks_file.hpp): load_checks() reads it back.
  explicit DownloadObjects(std::size_t capacity, std::optional<ObjectChecksFile> checks = std::nullopt);

  // The digests the checks file kept: how many were read back, or why
  // none could be (then objects are checked as after a first start).
  base::Result<ObjectChecksFile::Loaded> load_checks();

  void add(std::string_view xorb, ObjectSpan span, CheckedRange checked);

  // An object holding bytes [first, last] of `xorb` that begin and end on
  // its chunk boundaries and whose cache file is there; the smallest such.
  // The range's own object is named without a look at its file: a range
  // URL of it is the same whether or not the file is there (a miss fills
  // it), and none is smaller.
  std::optional<ObjectSpan> covering(std::string_view xorb, std::uint64_t first, std::uint64_t last,
                                     const std::filesystem::path& cache_dir) const;

  // The object's cache file, checked again (its body through a
  // RangeChecker of what `expected()` says, asked only then) when its stat
  // changed since its last check, or when dedupd knows no check of it (a
  // restart, a fill of the tier's): intact then, and remembered, or
  // damaged and removed. Its digest must then be the one this host kept,
  // or, where it kept none (a file the fleet's tier filled), the one
  // `reference()` gives when it gives one (the tier host's: it checked
  // those bytes as they came from the storage).
  CacheFile check_file(std::string_view xorb, ObjectSpan span, const std::filesystem::path& cache_dir,
                       const std::function<RangeExpectation()>& expected,
                       const std::function<std::optional<shard::Hash>()>& reference = {});

  // The digest of the object's bytes as this host checked them (this run,
  // or one the checks file kept): what a tier host tells an edge.
  std::optional<shard::Hash> digest_of(std::string_view xorb, ObjectSpan span) const;

  std::size_t size() const;

 private:
  struct Stamp {
    dev_t dev = 0;
    ino_t ino = 0;
    off_t size = 0;
    std::int64_t mtime_ns = 0, ctime_ns = 0;
    bool operator==(const Stamp&) const = default;
  };
  struct Object {
    CheckedRange checked;
    std::optional<Stamp> stamp;  // the cache file when its body was last found intact
    std::uint64_t added = 0;     // order, for the capacity
  };
  using Key = std::tuple<std::string, std::uint64_t, std::uint64_t>;  // xorb, start, end
  using KeyView = std::tuple<std::string_view, std::uint64_t, std::uint64_t>;
  // Orders keys and views of them alike, so an object is found by a view of
  // its xorb's name, without a copy of it.
  struct KeyLess {
    using is_transparent = void;
    static KeyView view(const Key& k) { return {std::get<0>(k), std::get<1>(k), std::get<2>(k)}; }
    static const KeyView& view(const KeyView& k) { return k; }
    template <class A, class B>
    bool operator()(const A& a, const B& b) const {
      return view(a) < view(b);
    }
  };

  void keep_digest(const std::string& key, const shard::Hash& digest);

  std::size_t capacity_;
  mutable std::mutex mutex_;
  std::map<Key, Object, KeyLess> objects_;  // by xorb, then start: a xorb's objects side by side
  std::uint64_t next_ = 0;
  // Digests of objects checked before (this run's and, read back, an
  // earlier one's), by cache key: what a cache file dedupd has no Object
  // of is compared with.
  std::optional<ObjectChecksFile> checks_;
  std::map<std::string, shard::Hash, std::less<>> kept_;
  std::size_t kept_lines_ = 0;  // lines in the file
};

// The body of an nginx cache file (after its "KEY: <key>" line and the
// upstream's header block) through a RangeChecker of `expected`; an error
// when the file is not a cache file of `key` or its body fails the check;
// nullopt when there is no such file.
base::Result<std::optional<CheckedRange>> check_cache_file(const std::filesystem::path& file, std::string_view key,
                                                           const RangeExpectation& expected);

}  // namespace dedupd::daemon::answers
