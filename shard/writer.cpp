#include "shard/writer.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include "shard/lookup_tables.hpp"

namespace dedupd::shard {

namespace {

// Writer input is trusted (tests, our own replies), so inconsistent records
// are a programming error: throw rather than emit a shard the reader rejects.
std::uint32_t checked_u32(std::uint64_t v, const char* what) {
  if (v > std::numeric_limits<std::uint32_t>::max())
    throw std::invalid_argument(std::string("shard writer: ") + what + " exceeds 32 bits");
  return std::uint32_t(v);
}

std::uint32_t file_flags(const FileRecord& f) {
  std::uint32_t flags = f.header.flags & ~(kFileFlagWithVerification | kFileFlagWithMetadataExt);
  // A file without terms has no verification entries either way; keep its
  // bit as given so it agrees with the other files (the reader demands that).
  bool verification = f.terms.empty() ? f.header.with_verification() : !f.verification.empty();
  if (verification) flags |= kFileFlagWithVerification;
  if (f.metadata_ext) flags |= kFileFlagWithMetadataExt;
  return flags;
}

std::uint64_t entries_of(const FileRecord& f) {
  std::uint64_t n = f.terms.size();
  return 1 + n + (f.verification.empty() ? 0 : n) + (f.metadata_ext ? 1 : 0);
}

class Cursor {
 public:
  explicit Cursor(std::uint8_t* p) : p_(p) {}
  template <class Record>
  void put(const Record& r) {
    r.encode(p_);
    p_ += kEntrySize;
  }
  void bookend() {
    write_bookend(p_);
    p_ += kEntrySize;
  }
  void put_lookup(const LookupEntry& e) {
    store_u64(p_, e.truncated);
    store_u32(p_ + 8, e.index);
    p_ += kFileLookupEntrySize;
  }
  void put_lookup(const ChunkLookupEntry& e) {
    store_u64(p_, e.truncated);
    store_u32(p_ + 8, e.xorb_index);
    store_u32(p_ + 12, e.chunk_offset);
    p_ += kChunkLookupEntrySize;
  }

 private:
  std::uint8_t* p_;
};

}  // namespace

std::vector<std::uint8_t> ShardWriter::write(const WriteOptions& options) const {
  LookupTableSet tables;
  const bool build_tables = options.with_footer && options.lookup_tables == LookupTables::build;

  std::uint64_t file_entries = 0;
  for (const auto& f : files_) {
    if (!f.verification.empty() && f.verification.size() != f.terms.size())
      throw std::invalid_argument("shard writer: a file needs one verification entry per term");
    checked_u32(f.terms.size(), "number of terms");
    if (build_tables)
      tables.files.push_back({f.header.file_hash.truncated(), checked_u32(file_entries, "file entry index")});
    file_entries += entries_of(f);
  }
  std::uint64_t cas_entries = 0;
  for (const auto& x : xorbs_) {
    checked_u32(x.chunks.size(), "number of chunks");
    if (build_tables) {
      auto index = checked_u32(cas_entries, "xorb entry index");
      tables.xorbs.push_back({x.header.xorb_hash.truncated(), index});
      for (std::size_t i = 0; i < x.chunks.size(); ++i)
        tables.chunks.push_back({x.chunks[i].chunk_hash.truncated(), index, std::uint32_t(i)});
    }
    cas_entries += 1 + x.chunks.size();
  }
  sort_lookup_tables(tables);

  const std::uint64_t cas_begin = kHeaderSize + kEntrySize * (file_entries + 1);
  const std::uint64_t cas_end = cas_begin + kEntrySize * (cas_entries + 1);
  const std::uint64_t footer_offset = cas_end + tables.byte_size();
  const std::uint64_t total = footer_offset + (options.with_footer ? kFooterSize : 0);

  std::vector<std::uint8_t> out(total);
  std::memcpy(out.data(), kHeaderTag.data(), kHeaderTag.size());
  store_u64(out.data() + 32, kHeaderVersion);
  store_u64(out.data() + 40, options.with_footer ? kFooterSize : 0);

  Cursor c(out.data() + kHeaderSize);
  for (const auto& f : files_) {
    FileHeader h = f.header;
    h.flags = file_flags(f);
    h.num_entries = std::uint32_t(f.terms.size());
    c.put(h);
    for (const auto& t : f.terms) c.put(t);
    for (const auto& v : f.verification) c.put(v);
    if (f.metadata_ext) c.put(*f.metadata_ext);
  }
  c.bookend();
  for (const auto& x : xorbs_) {
    XorbHeader h = x.header;
    h.num_entries = std::uint32_t(x.chunks.size());
    c.put(h);
    for (const auto& ch : x.chunks) c.put(ch);
  }
  c.bookend();
  if (!options.with_footer) return out;

  for (const auto& e : tables.files) c.put_lookup(e);
  for (const auto& e : tables.xorbs) c.put_lookup(e);
  for (const auto& e : tables.chunks) c.put_lookup(e);

  ShardFooter f = options.footer;
  if (options.derive_byte_totals) {
    f.stored_bytes_on_disk = f.stored_bytes = f.materialized_bytes = 0;
    for (const auto& x : xorbs_) {
      f.stored_bytes_on_disk += x.header.bytes_on_disk;
      f.stored_bytes += x.header.bytes_in_xorb;
    }
    for (const auto& file : files_)
      for (const auto& t : file.terms) f.materialized_bytes += t.unpacked_bytes;
  }
  f.version = kFooterVersion;
  f.file_info_offset = kHeaderSize;
  f.cas_info_offset = cas_begin;
  f.footer_offset = footer_offset;
  f.file_lookup_num_entry = tables.files.size();
  f.xorb_lookup_num_entry = tables.xorbs.size();
  f.chunk_lookup_num_entry = tables.chunks.size();
  switch (options.lookup_tables) {
    case LookupTables::none_server_style:
      f.file_lookup_offset = f.xorb_lookup_offset = f.chunk_lookup_offset = footer_offset;
      break;
    case LookupTables::none_zero_offsets:
      f.file_lookup_offset = f.xorb_lookup_offset = f.chunk_lookup_offset = 0;
      break;
    case LookupTables::build:
      f.file_lookup_offset = cas_end;
      f.xorb_lookup_offset = f.file_lookup_offset + kFileLookupEntrySize * tables.files.size();
      f.chunk_lookup_offset = f.xorb_lookup_offset + kXorbLookupEntrySize * tables.xorbs.size();
      break;
  }
  f.encode(out.data() + footer_offset);
  return out;
}

void ShardWriter::sort_sections_by_hash() {
  std::stable_sort(files_.begin(), files_.end(), [](const FileRecord& a, const FileRecord& b) {
    return xet_order_less(a.header.file_hash, b.header.file_hash);
  });
  std::stable_sort(xorbs_.begin(), xorbs_.end(), [](const XorbRecord& a, const XorbRecord& b) {
    return xet_order_less(a.header.xorb_hash, b.header.xorb_hash);
  });
}

FileRecord record_of(const FileBlock& b) {
  FileRecord f;
  f.header = b.header();
  f.terms.reserve(b.num_terms());
  for (std::uint32_t i = 0; i < b.num_terms(); ++i) f.terms.push_back(b.term(i));
  if (b.has_verification()) {
    f.verification.reserve(b.num_terms());
    for (std::uint32_t i = 0; i < b.num_terms(); ++i) f.verification.push_back(b.verification(i));
  }
  if (b.has_metadata_ext()) f.metadata_ext = b.metadata_ext();
  return f;
}

XorbRecord record_of(const XorbBlock& b) {
  XorbRecord x;
  x.header = b.header();
  x.chunks.reserve(b.num_chunks());
  for (std::uint32_t i = 0; i < b.num_chunks(); ++i) x.chunks.push_back(b.chunk(i));
  return x;
}

ShardWriter ShardWriter::from_view(const ShardView& view) {
  ShardWriter w;
  w.files_.reserve(view.stats().files);
  for (FileBlock b : view.files()) w.files_.push_back(record_of(b));
  w.xorbs_.reserve(view.stats().xorbs);
  for (XorbBlock b : view.xorbs()) w.xorbs_.push_back(record_of(b));
  return w;
}

WriteOptions ShardWriter::options_of(const ShardView& view) {
  WriteOptions o;
  o.with_footer = view.has_footer();
  if (!o.with_footer) return o;
  const ShardFooter& f = *view.footer();
  o.footer = f;
  if (f.file_lookup_num_entry || f.xorb_lookup_num_entry || f.chunk_lookup_num_entry)
    o.lookup_tables = LookupTables::build;
  else if (f.file_lookup_offset == 0 && f.xorb_lookup_offset == 0 && f.chunk_lookup_offset == 0)
    o.lookup_tables = LookupTables::none_zero_offsets;
  else o.lookup_tables = LookupTables::none_server_style;
  return o;
}

}  // namespace dedupd::shard
