// ShardWriter: builds any shard the reader accepts. Used by tests, the
// global-dedup reply, bundle tools and benchmarks. Content goes in as decoded
// values; write() lays it out exactly (bookends, lookup tables, footer).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "shard/format.hpp"
#include "shard/keys.hpp"
#include "shard/reader.hpp"

namespace dedupd::shard {

struct FileRecord {
  FileHeader header;  // flags are derived from the vectors below
  std::vector<FileTerm> terms;
  std::vector<HashRecord> verification;    // empty, or one per term
  std::optional<HashRecord> metadata_ext;  // sha256 of the content
};

struct XorbRecord {
  XorbHeader header;               // num_entries is derived from chunks
  std::vector<ChunkEntry> chunks;  // hashes as stored (already keyed if keyed)
};

// One block of a parsed shard as writer input (copied out of the view).
FileRecord record_of(const FileBlock& block);
XorbRecord record_of(const XorbBlock& block);

enum class LookupTables {
  none_server_style,  // counts 0, offsets = footer_offset (HF server replies)
  none_zero_offsets,  // counts 0, offsets 0 (the JavaScript client)
  build,              // sorted file/xorb/chunk tables (the Rust client)
};

struct WriteOptions {
  bool with_footer = true;
  LookupTables lookup_tables = LookupTables::none_server_style;
  // Footer fields the writer does not derive (key, times, reserved, totals).
  ShardFooter footer;
  // Sets the footer's byte totals from the content, as xet-core does for a
  // shard it writes: stored_bytes_on_disk and stored_bytes sum the xorbs'
  // on-disk and unpacked bytes, materialized_bytes the files' terms.
  bool derive_byte_totals = false;
};

class ShardWriter {
 public:
  void add_file(FileRecord f) { files_.push_back(std::move(f)); }
  void add_xorb(XorbRecord x) { xorbs_.push_back(std::move(x)); }
  std::vector<std::uint8_t> write(const WriteOptions& options) const;

  // Files and xorbs in xet-core's hash order (xet_order_less), the layout
  // its own writer gives every shard it writes.
  void sort_sections_by_hash();

  // Everything in a view, ready to rewrite: write(options_of(view)) of a
  // parsed shard gives back the same bytes.
  static ShardWriter from_view(const ShardView& view);
  static WriteOptions options_of(const ShardView& view);

 private:
  std::vector<FileRecord> files_;
  std::vector<XorbRecord> xorbs_;
};

}  // namespace dedupd::shard
