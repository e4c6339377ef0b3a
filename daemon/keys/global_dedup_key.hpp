// The key the global-dedup endpoint keys its replies with. Like the Hugging
// Face server, dedupd hands out chunk hashes only in keyed form, and changes
// the key on a schedule so replies cannot be correlated forever. The key is
// kept in the state directory so a restart does not rotate it early.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <mutex>

#include "shard/keys.hpp"

namespace dedupd::daemon {

class GlobalDedupKeyStore {
 public:
  GlobalDedupKeyStore(std::filesystem::path file, std::chrono::seconds rotation);

  // Loads the stored key, or makes and stores a new one when there is none,
  // it is unreadable, or it is older than the rotation period. Throws
  // std::runtime_error when no random bytes or no file can be had.
  void load_or_create(std::uint64_t now);

  // Rotates when due; returns true when it did. Loop thread.
  bool rotate_if_due(std::uint64_t now);
  std::uint64_t next_rotation() const;  // unix seconds

  void set_rotation(std::chrono::seconds rotation);
  shard::Key current() const;  // any thread

 private:
  void create(std::uint64_t now);

  std::filesystem::path file_;
  mutable std::mutex mutex_;
  std::chrono::seconds rotation_;
  shard::Key key_;
  std::uint64_t created_ = 0;
};

}  // namespace dedupd::daemon
