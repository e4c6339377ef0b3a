#include "chunk/sha256.hpp"

#include <openssl/evp.h>

namespace dedupd::chunk {

namespace {
EVP_MD_CTX* as_ctx(void* p) { return static_cast<EVP_MD_CTX*>(p); }
}  // namespace

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  failed_ = ctx_ == nullptr || EVP_DigestInit_ex(as_ctx(ctx_), EVP_sha256(), nullptr) != 1;
}

Sha256::~Sha256() { EVP_MD_CTX_free(as_ctx(ctx_)); }

void Sha256::update(std::span<const std::uint8_t> data) {
  if (failed_ || data.empty()) return;
  failed_ = EVP_DigestUpdate(as_ctx(ctx_), data.data(), data.size()) != 1;
}

base::Result<shard::Hash> Sha256::finish() {
  shard::Hash out;
  unsigned int len = 0;
  const bool ok = !failed_ && EVP_DigestFinal_ex(as_ctx(ctx_), out.bytes.data(), &len) == 1 && len == 32;
  failed_ = ctx_ == nullptr || EVP_DigestInit_ex(as_ctx(ctx_), EVP_sha256(), nullptr) != 1;
  if (!ok) return base::Error{"sha256.openssl", 0, "OpenSSL could not compute SHA-256"};
  return out;
}

}  // namespace dedupd::chunk
