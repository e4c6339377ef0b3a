// The Xet global-dedup reply: a shard shaped as the Hugging Face server
// answers GET /v1/chunks/default-merkledb/<hash>. A Xet client keys its own
// chunk hashes with the footer key and matches them against the CAS blocks,
// so every chunk hash in the reply must be keyed with that one footer key.
//
// Which xorbs go in (see docs/API.md, "Xet global-dedup endpoint"):
// - xorbs stored with raw chunk hashes are re-keyed with the daemon's key;
//   these are the answer whenever there is at least one;
// - a xorb known only from keyed shards (e.g. a reply the daemon indexed
//   from the Hugging Face server) cannot be re-keyed without its raw hashes.
//   When nothing raw contains the chunk, the reply re-serves one keyed
//   form as it was stored: its key in the footer, its hashes unchanged, and
//   an expiry no later than that source's, so the client sees exactly what
//   the original server told it, for no longer than it was valid.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "shard/format.hpp"
#include "shard/keys.hpp"
#include "shard/writer.hpp"

namespace dedupd::daemon::http {

// One stored form of a xorb that contains the queried chunk.
struct StoredXorb {
  shard::XorbRecord record;             // header and chunk entries as stored
  shard::Key key;                       // zero: chunk hashes stored raw
  std::optional<std::uint64_t> expiry;  // latest expiry of its live shards; nullopt: never
};

struct ReplySettings {
  shard::Key key;                // the daemon's current global-dedup key
  std::uint64_t now = 0;         // unix seconds: the reply's creation time
  std::uint64_t lifetime_s = 0;  // reply expiry = now + lifetime_s
};

// The reply shard's bytes, or nullopt when `forms` is empty (404).
std::optional<std::vector<std::uint8_t>> build_global_dedup_reply(std::span<const StoredXorb> forms,
                                                                  const ReplySettings& settings);

}  // namespace dedupd::daemon::http
