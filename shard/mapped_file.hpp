// A read-only memory map of a whole file, the backing store for ShardView.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "base/result.hpp"

namespace dedupd::shard {

class MappedFile {
 public:
  static base::Result<MappedFile> open(const std::string& path);
  MappedFile() = default;
  MappedFile(MappedFile&& o) noexcept;
  MappedFile& operator=(MappedFile&& o) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const std::uint8_t> bytes() const { return {data_, size_}; }
  std::uint64_t size() const { return size_; }

 private:
  const std::uint8_t* data_ = nullptr;
  std::uint64_t size_ = 0;
  bool mapped_ = false;
};

}  // namespace dedupd::shard
