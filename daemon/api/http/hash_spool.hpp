// Where the hashes of a POST /v1/chunk wait for its answer. libmicrohttpd
// answers a request only once its whole body is in, so a batch of any size
// has to be kept somewhere until then: the first block in memory, the rest
// in an unlinked temporary file (32 bytes a hash), read back a block at a
// time while the answer is written. Memory per request stays one block
// whatever the batch holds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "daemon/api/http/batch_request.hpp"
#include "shard/hash.hpp"

namespace dedupd::daemon::api::http {

class HashSpool : public HashSink {
 public:
  // Hashes looked up together: one read transaction, one answer block.
  static constexpr std::size_t kBlockHashes = 4096;
  static constexpr std::size_t kMemoryBytes = kBlockHashes * sizeof(shard::Hash);

  // `dir`: where the temporary file goes once the batch outgrows the block
  // (created only then); empty: $TMPDIR, else /tmp.
  explicit HashSpool(std::string dir = {});
  ~HashSpool() override;
  HashSpool(const HashSpool&) = delete;
  HashSpool& operator=(const HashSpool&) = delete;

  bool put(const shard::Hash& hash) override;
  // Why put() failed (cannot create or write the file).
  const std::string& error() const { return error_; }
  std::uint64_t size() const { return count_; }

  // Reading back, after the last put(): the next block of up to
  // kBlockHashes hashes in order; empty at the end. Valid until the next call.
  base::Result<std::span<const shard::Hash>> next();

 private:
  bool flush();

  std::string dir_;
  std::string error_;
  std::vector<shard::Hash> block_;
  int fd_ = -1;
  std::uint64_t count_ = 0;
  std::uint64_t in_file_ = 0;  // hashes written to the file
  std::uint64_t read_ = 0;     // hashes handed out by next()
  bool reading_ = false;
};

}  // namespace dedupd::daemon::api::http
