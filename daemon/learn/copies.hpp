// The bytes of every shard the endpoint taught the index, kept in
// state_dir/learned/<the client's cache name of its CAS>/<hash>.mdb with the
// CAS URL in a file `cas` beside them: the index is not the only place they
// are, so a damaged index is rebuilt with them too (daemon/supervisor, at
// start).
// They cost what the client's upload shards cost: a 48-byte CAS entry a
// chunk and a few per file, some 0.1 % of the bytes uploaded through the
// endpoint at the client's 64 KiB chunks.
#pragma once

#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/result.hpp"

namespace dedupd::daemon::learn {

class LearnedCopies {
 public:
  explicit LearnedCopies(std::filesystem::path root = {}) : root_(std::move(root)) {}
  const std::filesystem::path& root() const { return root_; }

  // Writes the copy (temporary file, fsync, rename, fsync of the folder):
  // its path, or why not. Nothing when the same copy is there already.
  base::Result<std::filesystem::path> keep(std::span<const std::uint8_t> bytes, const std::string& shard_hash,
                                           const std::string& cas);

  // Every copy kept, with its CAS.
  struct Copy {
    std::filesystem::path path;
    std::string cas;
  };
  std::vector<Copy> all() const;

  // The CAS a copy at `path` was learned under; nullopt when `path` is not
  // one of these copies.
  std::optional<std::string> cas_of(const std::filesystem::path& path) const;

 private:
  std::filesystem::path root_;
};

}  // namespace dedupd::daemon::learn
