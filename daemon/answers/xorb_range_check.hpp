// The check of a xorb range's bytes as they arrive from the storage, before
// the endpoint's cache may keep them (docs/XET-ENDPOINT.md, "Downloads").
// What the format lets dedupd check, strongest last:
//   structure  chunk headers walk to exactly the range's length, as many
//              chunks as the CAS's chunk range says, each decompressing
//              (none, LZ4, byte-grouped LZ4) to its declared size;
//   index      each chunk's hash is the one this index holds for the xorb
//              at its place (the CAS's chunk range, or, not said, where
//              the range's chunks are found in the xorb in a row);
//   xorb hash  the range starts at chunk 0 and the merkle root of its
//              chunks is the xorb's hash: the bytes are the whole xorb.
// Any thread; one checker per range.
#pragma once

#include <blake3.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <variant>
#include <vector>

#include "base/result.hpp"
#include "shard/keys.hpp"

namespace dedupd::daemon::answers {

// A chunk of the xorb as a shard records it: its stored hash (keyed with
// the shard's key when it is keyed) and its unpacked size.
struct KnownChunk {
  shard::Hash stored;
  std::uint32_t unpacked = 0;
};

struct RangeExpectation {
  shard::Hash xorb{};
  std::uint64_t length = 0;  // bytes: url_range's end - start + 1
  // The CAS's chunk range [first_chunk, end_chunk); end_chunk 0: not said
  // (then, with `known`, the range's chunks are found in the xorb by their
  // hashes: the first's places, and each next one following).
  std::uint32_t first_chunk = 0;
  std::uint32_t end_chunk = 0;
  // Every chunk of the xorb as this index holds it (empty: not held).
  std::vector<KnownChunk> known;
  std::optional<shard::Key> key;  // set when `known` holds keyed hashes
};

enum class CheckLevel : std::uint8_t { structure, index, xorb_hash };
std::string_view check_level_name(CheckLevel level);

struct CheckedRange {
  // Where each chunk starts in the range, and the range's length last:
  // the sub-ranges of it that begin and end on chunk boundaries.
  std::vector<std::uint32_t> chunk_starts;
  // To know the bytes again in a file: BLAKE3 over each chunk's header
  // (scheme, stored and unpacked size) and the hash of what it unpacks to,
  // in order. Bytes that pass the structure check with this digest unpack
  // to the same chunks at the same places; the chunk hashes are computed
  // anyway, so the range's bytes are hashed once, not twice.
  shard::Hash digest{};
  CheckLevel level = CheckLevel::structure;
};

// The largest unpacked chunk (xet-core: 128 KiB).
inline constexpr std::uint32_t kMaxChunkBytes = 128 * 1024;

class RangeChecker {
 public:
  explicit RangeChecker(RangeExpectation expected);

  // The next bytes of the range. An error (rule "xet_download.verify",
  // the offset in the range) means these are not the bytes the CAS named.
  base::Result<std::monostate> feed(std::span<const std::uint8_t> bytes);
  // After the last byte.
  base::Result<CheckedRange> finish();
  // How many leading bytes of the range are whole chunks that passed
  // their check (structure, and the index's hash where it holds the
  // xorb): what may be relayed before the range is all in. What only the
  // end decides (the chunk count, the xorb hash) is finish()'s: a relay
  // holds the range's last chunk back until then.
  std::uint64_t checked_bytes() const { return checked_; }
  // Where the last chunk that passed starts: once checked_bytes() is the
  // range's length, what a relay may pass before finish().
  std::uint64_t last_checked_start() const { return last_checked_start_; }

 private:
  // A chunk's header at `at` in the range: checked, and its size known.
  base::Result<std::monostate> begin_chunk(const std::uint8_t* header, std::uint64_t at);
  // A whole chunk, header first.
  base::Result<std::monostate> chunk_done(std::span<const std::uint8_t> whole);
  base::Error fail(std::uint64_t at, std::string message) const;

  RangeExpectation expected_;
  blake3_hasher digest_;
  std::uint64_t seen_ = 0;
  std::uint64_t checked_ = 0;
  std::uint64_t last_checked_start_ = 0;
  std::vector<std::uint8_t> chunk_;  // the chunk in progress, header first
  std::uint32_t chunk_size_ = 0;     // header + compressed, once the header is in
  std::vector<std::uint8_t> unpacked_;
  std::vector<std::uint8_t> grouped_;
  std::vector<shard::HashAndSize> hashes_;
  // Where in the xorb the range may start, when the CAS did not say and
  // the index holds the xorb: the places of its first chunk that every
  // chunk since has followed.
  std::vector<std::size_t> places_;
  CheckedRange out_;
};

// Undoes xet-core's 4-byte grouping (scheme 2, after LZ4): `grouped` holds
// every 4th byte from offset 0, then from 1, 2 and 3.
void ungroup4(std::span<const std::uint8_t> grouped, std::uint8_t* out);

}  // namespace dedupd::daemon::answers
