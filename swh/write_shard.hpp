// Writes a Software Heritage read-only shard (layout: swh/format.hpp).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "swh/format.hpp"

namespace dedupd::swh {

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

}  // namespace dedupd::swh
