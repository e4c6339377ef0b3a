#include "daemon/keys/global_dedup_key.hpp"

#include <openssl/rand.h>

#include <fstream>

#include <spdlog/spdlog.h>

#include "daemon/keys/secret_file.hpp"
#include "daemon/log/logging.hpp"

namespace dedupd::daemon::keys {

namespace fs = std::filesystem;

// File layout: one text line "<unix seconds created> <key in Xet string form>".
// Text keeps it inspectable; the file is 0600 and written by rename.

GlobalDedupKeyStore::GlobalDedupKeyStore(fs::path file, std::chrono::seconds rotation)
    : file_(std::move(file)), rotation_(rotation) {}

namespace {
base::Error key_error(std::string message) { return base::Error{kRuleKeyStore, 0, std::move(message), false}; }
}  // namespace

base::Result<std::monostate> GlobalDedupKeyStore::load_or_create(std::uint64_t now) {
  std::ifstream in(file_);
  std::uint64_t created = 0;
  std::string text;
  if (in >> created >> text) {
    auto key = shard::Hash::parse(text);
    if (key && !key->is_zero() && created <= now && now - created < std::uint64_t(rotation_.count())) {
      std::lock_guard lock(mutex_);
      key_ = *key;
      created_ = created;
      return std::monostate{};
    }
  } else if (fs::exists(file_)) {
    spdlog::warn("global-dedup key file {} is unreadable; making a new key", file_);
  }
  return create(now);
}

base::Result<std::monostate> GlobalDedupKeyStore::create(std::uint64_t now) {
  shard::Key key;
  // A zero key would mean "stored raw"; RAND_bytes never gives one in practice.
  do {
    if (RAND_bytes(key.bytes.data(), int(key.bytes.size())) != 1)
      return key_error("no random bytes for the global-dedup key (RAND_bytes failed)");
  } while (key.is_zero());

  if (auto failed = write_secret_file(file_, std::to_string(now) + " " + key.to_string() + "\n"))
    return key_error("the global-dedup key: " + *failed);
  std::lock_guard lock(mutex_);
  key_ = key;
  created_ = now;
  spdlog::info("new global-dedup key (rotates every {}s)", rotation_.count());
  return std::monostate{};
}

base::Result<bool> GlobalDedupKeyStore::rotate_if_due(std::uint64_t now) {
  if (now < next_rotation()) return false;
  auto made = create(now);
  if (!made) return made.error();
  return true;
}

std::uint64_t GlobalDedupKeyStore::next_rotation() const {
  std::lock_guard lock(mutex_);
  return created_ + std::uint64_t(rotation_.count());
}

void GlobalDedupKeyStore::set_rotation(std::chrono::seconds rotation) {
  std::lock_guard lock(mutex_);
  rotation_ = rotation;
}

shard::Key GlobalDedupKeyStore::current() const {
  std::lock_guard lock(mutex_);
  return key_;
}

}  // namespace dedupd::daemon::keys
