// The Software Heritage read-only shard (seed 003), byte for byte as the
// original C implementation writes it (SoftwareHeritage/swh-perfecthash,
// src/_shard/shard.c and shard.h):
//
//   0    magic area, 32 bytes: "SWHShard\0" (9 bytes written), rest zero
//   32   header, 7 x u64 BIG-endian: version (1), objects_count,
//        objects_position (512), objects_size, index_position, index_size,
//        hash_position
//   88   zero up to objects_position
//   512  objects in insertion order: u64 BE size, then the bytes
//   ip   index = objects_position + objects_size: cmph_size() entries of
//        40 bytes: 32-byte key, u64 BE absolute offset of the object's size
//        prefix; unused slots (and deleted objects) are a zero key with
//        offset UINT64_MAX
//   hp   index_position + index_size: the hash function as cmph_dump writes
//        it (CMPH_CHD_PH, graphsize 0.99, keys_per_bin 1, b 4, cmph's
//        default Jenkins hash; cmph's own fields are native = little-endian)
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

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "shard/mapped_file.hpp"
#include "shard/result.hpp"

namespace dedupd::swh {

using shard::Error;
using shard::Result;

inline constexpr std::uint64_t kMagicAreaSize = 32;
inline constexpr char kMagic[] = "SWHShard";  // written with its NUL: 9 bytes
inline constexpr std::uint64_t kMagicWritten = sizeof(kMagic);
inline constexpr std::uint64_t kHeaderOffset = 32;
inline constexpr std::uint64_t kHeaderSize = 7 * 8;
inline constexpr std::uint64_t kObjectsOffset = 512;  // SHARD_OFFSET_HEADER
inline constexpr std::uint64_t kVersion = 1;
inline constexpr std::uint64_t kKeySize = 32;
inline constexpr std::uint64_t kIndexEntrySize = kKeySize + 8;
inline constexpr std::uint64_t kNoObject = UINT64_MAX;

using Key = std::array<std::uint8_t, kKeySize>;

struct Header {
  std::uint64_t version = kVersion;
  std::uint64_t objects_count = 0;
  std::uint64_t objects_position = kObjectsOffset;
  std::uint64_t objects_size = 0;
  std::uint64_t index_position = 0;
  std::uint64_t index_size = 0;
  std::uint64_t hash_position = 0;
};

struct IndexEntry {
  Key key{};
  std::uint64_t object_offset = kNoObject;
  bool empty() const { return object_offset == kNoObject; }
};

// Streams objects to the file through a 1 MiB buffer (nothing but 40 bytes per
// key stays in memory: the key and its object offset, which cmph and the index
// need), then
// finish() builds the hash, writes the index, the dump, the header and the
// magic, fsyncs and renames the temporary file onto `path`. Nothing is left at
// `path` unless finish() succeeds; the destructor removes the temporary file.
class Writer {
 public:
  static Result<Writer> create(const std::string& path);
  Writer(Writer&&) noexcept;
  Writer& operator=(Writer&&) noexcept;
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;
  ~Writer();

  // Appends one object; returns its offset in the file. Rule swh.io on I/O
  // failure (offset = where the write was attempted).
  Result<std::uint64_t> add(const Key& key, std::span<const std::uint8_t> value);
  std::uint64_t count() const { return records_.size(); }
  // Rules: swh.duplicate (two objects with one key), swh.too_many (cmph
  // counts keys in 32 bits), swh.cmph (cmph could not build), swh.io.
  Result<Header> finish();

 private:
  Writer() = default;
  struct Record {
    Key key;
    std::uint64_t offset;
  };
  void discard();
  bool flush();
  std::string path_;
  std::string tmp_path_;
  int fd_ = -1;
  std::uint64_t pos_ = kObjectsOffset;
  std::vector<Record> records_;
  std::vector<std::uint8_t> buffer_;  // objects not yet written, ending at pos_
  bool finished_ = false;
};

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
