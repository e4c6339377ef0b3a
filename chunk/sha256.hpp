// SHA-256 of a stream through OpenSSL's EVP interface, which uses the CPU's
// SHA extensions when it has them (several times sha256sum's speed here).
// The content sha256 is what Git LFS calls the oid and what shards record
// in a file's metadata extension.
#pragma once

#include <cstdint>
#include <span>

#include "base/result.hpp"
#include "shard/hash.hpp"

namespace dedupd::chunk {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(std::span<const std::uint8_t> data);
  // The digest in byte order (print it with Hash::to_hex_bytes()). An
  // OpenSSL failure at any step is reported here. Ready for a new stream after.
  base::Result<shard::Hash> finish();

 private:
  void* ctx_;  // EVP_MD_CTX*
  bool failed_ = false;
};

}  // namespace dedupd::chunk
