// The key the global-dedup endpoint keys its replies with. Like the Hugging
// Face server, dedupd hands out chunk hashes only in keyed form, and changes
// the key on a schedule so replies cannot be correlated forever. The key is
// kept in the state directory so a restart does not rotate it early.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <variant>

#include "base/result.hpp"
#include "shard/keys.hpp"

namespace dedupd::daemon::keys {

// No random bytes, or no key file written: rule "global_dedup.key", naming the file.
inline constexpr const char* kRuleKeyStore = "global_dedup.key";

class GlobalDedupKeyStore {
 public:
  GlobalDedupKeyStore(std::filesystem::path file, std::chrono::seconds rotation);

  // Loads the stored key, or makes and stores a new one when there is none,
  // it is unreadable, or it is older than the rotation period; a
  // kRuleKeyStore error when no random bytes or no file can be had.
  [[nodiscard]] base::Result<std::monostate> load_or_create(std::uint64_t now);

  // Rotates when due; true when it did. On an error the old key stays. Loop thread.
  [[nodiscard]] base::Result<bool> rotate_if_due(std::uint64_t now);
  std::uint64_t next_rotation() const;  // unix seconds

  void set_rotation(std::chrono::seconds rotation);
  shard::Key current() const;  // any thread

 private:
  base::Result<std::monostate> create(std::uint64_t now);

  std::filesystem::path file_;
  mutable std::mutex mutex_;
  std::chrono::seconds rotation_;
  shard::Key key_;
  std::uint64_t created_ = 0;
};

}  // namespace dedupd::daemon::keys
