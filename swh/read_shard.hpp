// Reads a Software Heritage read-only shard (layout: swh/format.hpp).
//
// A perfect hash maps any absent key to some slot, so lookup() compares the
// slot's stored key with the query; a UINT64_MAX offset means "no object"
// whatever the key (key 0...0 is a valid key: see the test vector).
//
// The reader never hands unchecked bytes to cmph: before cmph_load it walks
// the whole dump (names, lengths, the compressed displacement sequence and
// its select structure) and checks every position cmph_search can touch, so
// a corrupted or hostile file is an Error, never a crash. Rules:
//   swh.truncated  file shorter than the header
//   swh.magic      no "SWHShard\0" at 0
//   swh.version    header version != 1
//   swh.header     positions/sizes inconsistent or outside the file
//   swh.hash       the cmph dump is malformed or does not fit the index
//   swh.object     an index entry points outside the objects section, or an
//                  object's size runs past it (reported by lookup)
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "shard/mapped_file.hpp"
#include "swh/format.hpp"

namespace dedupd::swh {

class Reader {
 public:
  // Maps the file read-only and validates header and hash function.
  static Result<Reader> open(const std::string& path);
  // Over bytes the caller keeps alive (tests, fuzzing).
  static Result<Reader> from_bytes(std::span<const std::uint8_t> bytes);
  Reader(Reader&&) noexcept;
  Reader& operator=(Reader&&) noexcept;
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;
  ~Reader();

  const Header& header() const { return header_; }
  std::uint64_t slots() const { return header_.index_size / kIndexEntrySize; }
  IndexEntry entry(std::uint64_t slot) const;   // slot < slots()
  std::uint64_t slot_of(const Key& key) const;  // cmph_search
  // The object's bytes (a view into the file), nullopt when absent; an
  // Error (swh.object) when the index or the object is corrupt.
  Result<std::optional<std::span<const std::uint8_t>>> lookup(const Key& key) const;
  // File size the content needs (the original's "endpos + 1"): where the
  // hash dump ends.
  std::uint64_t content_end() const { return content_end_; }

 private:
  Reader() = default;
  static Result<Reader> init(Reader r);
  shard::MappedFile file_;
  std::span<const std::uint8_t> bytes_;
  Header header_;
  std::uint64_t content_end_ = 0;
  void* hash_ = nullptr;  // cmph_t*
};

}  // namespace dedupd::swh
