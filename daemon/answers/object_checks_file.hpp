// The digests of download-cache objects dedupd checked, kept in a file of
// the state dir so that a restart still knows them: a cache file of a xorb
// this index does not hold can then be compared with what the fill saw,
// where its structure alone would pass a flipped data byte
// (docs/XET-ENDPOINT.md, "Downloads").
//
// One line an object, appended as each fill passes its check:
//   <digest, 64 hex> <nginx cache key: xet1:<xorb>:<start>-<end>>
// A later line of the same key wins. A line that does not read so (the
// torn last line of a crash, a scribble) is skipped and counted: it costs
// that object the structure-only check, never a refusal. Not fsynced, for
// the same reason. Rewritten with only the newest lines when it holds more
// than twice the lines it needs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>

#include "base/result.hpp"
#include "shard/hash.hpp"

namespace dedupd::daemon::answers {

class ObjectChecksFile {
 public:
  struct Loaded {
    std::map<std::string, shard::Hash, std::less<>> digests;  // by cache key
    std::size_t lines = 0, skipped = 0;
  };

  // At most `keep` objects are kept (the newest lines).
  ObjectChecksFile(std::filesystem::path path, std::size_t keep) : path_(std::move(path)), keep_(keep) {}

  // What the file holds; none when it is not there.
  base::Result<Loaded> load() const;
  // What a file's text holds, at most `keep` objects.
  static Loaded parse(std::string_view text, std::size_t keep);
  // One more object's digest.
  base::Result<std::monostate> append(std::string_view key, const shard::Hash& digest);
  // The file again with only `digests` (write, rename).
  base::Result<std::monostate> rewrite(const std::map<std::string, shard::Hash, std::less<>>& digests);

  const std::filesystem::path& path() const { return path_; }
  std::size_t keep() const { return keep_; }

 private:
  std::filesystem::path path_;
  std::size_t keep_;
};

}  // namespace dedupd::daemon::answers
