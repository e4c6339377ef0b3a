// ShardView: a zero-copy, validated view over the bytes of one MDB shard.
// parse() checks the whole structure once (every count, offset and bookend),
// so iteration afterwards cannot run off the end and never allocates.
#pragma once

#include <cstdint>
#include <iterator>
#include <optional>
#include <span>

#include "base/result.hpp"
#include "shard/format.hpp"
#include "shard/keys.hpp"

namespace dedupd::shard {

class XorbBlock {
 public:
  XorbBlock(const std::uint8_t* at, std::uint64_t offset) : at_(at), offset_(offset), header_(XorbHeader::decode(at)) {}

  const XorbHeader& header() const { return header_; }
  const Hash& hash() const { return header_.xorb_hash; }
  std::uint32_t num_chunks() const { return header_.num_entries; }
  ChunkEntry chunk(std::size_t i) const { return ChunkEntry::decode(entry(i)); }
  // The stored chunk hash bytes in place (keyed when the shard is keyed).
  const std::uint8_t* chunk_hash_bytes(std::size_t i) const { return entry(i); }
  std::uint64_t offset() const { return offset_; }  // of the block header
  std::uint64_t byte_size() const { return kEntrySize * (1 + std::uint64_t(num_chunks())); }
  // The whole block (header + entries), e.g. to copy into a reply shard.
  std::span<const std::uint8_t> raw() const { return {at_, byte_size()}; }

 private:
  const std::uint8_t* entry(std::size_t i) const { return at_ + kEntrySize * (1 + i); }
  const std::uint8_t* at_;
  std::uint64_t offset_;
  XorbHeader header_;
};

class FileBlock {
 public:
  FileBlock(const std::uint8_t* at, std::uint64_t offset) : at_(at), offset_(offset), header_(FileHeader::decode(at)) {}

  const FileHeader& header() const { return header_; }
  const Hash& hash() const { return header_.file_hash; }
  std::uint32_t num_terms() const { return header_.num_entries; }
  FileTerm term(std::size_t i) const { return FileTerm::decode(at_ + kEntrySize * (1 + i)); }
  bool has_verification() const { return header_.with_verification(); }
  // Range hash of term i; only when has_verification().
  HashRecord verification(std::size_t i) const { return HashRecord::decode(at_ + kEntrySize * (1 + num_terms() + i)); }
  bool has_metadata_ext() const { return header_.with_metadata_ext(); }
  // FileMetadataExt: the content sha256; only when has_metadata_ext().
  HashRecord metadata_ext() const { return HashRecord::decode(at_ + byte_size() - kEntrySize); }
  std::optional<Hash> sha256() const {
    if (!has_metadata_ext()) return std::nullopt;
    return metadata_ext().hash;
  }
  std::uint64_t offset() const { return offset_; }
  std::uint64_t byte_size() const {
    std::uint64_t n = num_terms();
    return kEntrySize * (1 + n + (has_verification() ? n : 0) + (has_metadata_ext() ? 1 : 0));
  }

 private:
  const std::uint8_t* at_;
  std::uint64_t offset_;
  FileHeader header_;
};

// Forward range over consecutive variable-size blocks up to a bookend.
template <class Block>
class BlockRange {
 public:
  class iterator {
   public:
    using value_type = Block;
    using difference_type = std::ptrdiff_t;
    iterator() = default;
    iterator(const std::uint8_t* base, std::uint64_t off, std::uint64_t end) : base_(base), off_(off), end_(end) {}
    Block operator*() const { return Block(base_ + off_, off_); }
    iterator& operator++() {
      off_ += Block(base_ + off_, off_).byte_size();
      return *this;
    }
    iterator operator++(int) {
      auto t = *this;
      ++*this;
      return t;
    }
    bool operator==(const iterator& o) const { return off_ == o.off_; }

   private:
    const std::uint8_t* base_ = nullptr;
    std::uint64_t off_ = 0;
    std::uint64_t end_ = 0;
  };

  BlockRange(const std::uint8_t* base, std::uint64_t begin, std::uint64_t end, std::size_t count)
      : base_(base), begin_(begin), end_(end), count_(count) {}
  iterator begin() const { return {base_, begin_, end_}; }
  iterator end() const { return {base_, end_, end_}; }
  std::size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }

 private:
  const std::uint8_t* base_;
  std::uint64_t begin_, end_;  // end = offset of the bookend
  std::size_t count_;
};

struct ShardStats {
  std::size_t files = 0;
  std::size_t terms = 0;
  std::size_t xorbs = 0;
  std::size_t chunks = 0;
};

class ShardView {
 public:
  // Validates structure (see docs/FORMAT.md, "Validation rules") and returns
  // the first problem found, with its rule name and byte offset.
  // A header announcing a footer over bytes that end at the CAS bookend,
  // as hf_xet 1.1.7-1.2.x upload their shards, parses as a shard without
  // footer (has_footer() false; header() says what the bytes say).
  static base::Result<ShardView> parse(std::span<const std::uint8_t> bytes);

  std::span<const std::uint8_t> bytes() const { return bytes_; }
  const ShardHeader& header() const { return header_; }
  const std::optional<ShardFooter>& footer() const { return footer_; }
  bool has_footer() const { return footer_.has_value(); }

  BlockRange<FileBlock> files() const { return {bytes_.data(), kHeaderSize, file_bookend_, stats_.files}; }
  BlockRange<XorbBlock> xorbs() const { return {bytes_.data(), cas_begin(), cas_bookend_, stats_.xorbs}; }
  const ShardStats& stats() const { return stats_; }

  // The key chunk hashes are stored under; zero when raw or no footer.
  Key chunk_key() const { return footer_ ? footer_->chunk_hash_key : Key{}; }
  bool keyed() const { return footer_ && footer_->keyed(); }
  // Expiry in unix seconds, or nullopt when the shard never expires
  // (no footer, UINT64_MAX, or 0 as the JavaScript client leaves it).
  std::optional<std::uint64_t> expiry() const;
  std::uint64_t creation_timestamp() const { return footer_ ? footer_->creation_timestamp : 0; }

  std::uint64_t file_section_offset() const { return kHeaderSize; }
  std::uint64_t cas_begin() const { return file_bookend_ + kEntrySize; }
  std::uint64_t cas_end() const { return cas_bookend_ + kEntrySize; }  // after the bookend

  std::size_t file_lookup_size() const { return footer_ ? footer_->file_lookup_num_entry : 0; }
  std::size_t xorb_lookup_size() const { return footer_ ? footer_->xorb_lookup_num_entry : 0; }
  std::size_t chunk_lookup_size() const { return footer_ ? footer_->chunk_lookup_num_entry : 0; }
  LookupEntry file_lookup(std::size_t i) const;
  LookupEntry xorb_lookup(std::size_t i) const;
  ChunkLookupEntry chunk_lookup(std::size_t i) const;

 private:
  static base::Result<ShardView> parse_as(std::span<const std::uint8_t> bytes, bool cut_at_tables);

  ShardView() = default;
  std::span<const std::uint8_t> bytes_;
  ShardHeader header_;
  std::optional<ShardFooter> footer_;
  std::uint64_t file_bookend_ = 0;  // offset of the file-info bookend
  std::uint64_t cas_bookend_ = 0;   // offset of the CAS bookend
  ShardStats stats_;
};

}  // namespace dedupd::shard
