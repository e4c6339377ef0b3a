// Expiry decisions, kept free of I/O so they can be tested with plain
// numbers: which files are past their grace, when the timer must next wake,
// and which shards a size cap evicts. The runner (expiry/runner.hpp) applies
// them to the index and the file system.
#pragma once

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "shard/hash.hpp"

namespace dedupd::daemon::expiry {

// What the policy needs to know of one shard record of the index.
struct ShardRecord {
  shard::Hash hash;
  bool live = true;                     // false: its entries already left at expiry
  std::optional<std::uint64_t> expiry;  // unix seconds; nullopt: never expires
  std::uint64_t created = 0;            // unix seconds; 0 unknown
  std::vector<std::string> paths;       // files it was read from
};

struct FileDue {
  shard::Hash shard;
  std::string path;
};

// When the file of an expired shard may go: expiry + grace (nullopt when
// the shard never expires or files are kept forever).
std::optional<std::uint64_t> deletion_time(const ShardRecord& s, std::optional<std::chrono::seconds> grace);

// Files of expired shards whose grace has ended at `now`, in record order.
std::vector<FileDue> files_past_grace(const std::vector<ShardRecord>& shards, std::uint64_t now,
                                      std::optional<std::chrono::seconds> grace);

// The earliest future moment a file of these (expired) shards becomes due.
std::optional<std::uint64_t> next_deletion(const std::vector<ShardRecord>& shards, std::uint64_t now,
                                           std::optional<std::chrono::seconds> grace);

// One shard's share of the disk for the size cap.
struct ShardBytes {
  shard::Hash hash;
  std::uint64_t created = 0;
  std::optional<std::uint64_t> expiry;
  std::uint64_t bytes = 0;  // its files that still exist
};

// Shards to evict, oldest first (creation time, then expiry, then hash), until
// the total of the rest is at most `max_bytes`. Only shards that expire count.
std::vector<shard::Hash> evictions_for_cap(std::vector<ShardBytes> shards, std::uint64_t max_bytes);

// When the work loop must next look: the earliest of `moments` (the next
// expiry or file deletion, a key rotation, a periodic scan; nullopt = none),
// and no later than one safety tick from now. Never earlier than now.
std::uint64_t next_wake(std::uint64_t now, std::initializer_list<std::optional<std::uint64_t>> moments,
                        std::chrono::seconds tick);

// Milliseconds from `now_ms` (unix ms) until second `at` has begun.
std::chrono::milliseconds delay_until(std::uint64_t at, std::uint64_t now_ms);

}  // namespace dedupd::daemon::expiry
