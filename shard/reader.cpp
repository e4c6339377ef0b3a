#include "shard/reader.hpp"

#include <string>
#include <unordered_map>

namespace dedupd::shard {

namespace {

std::string num(std::uint64_t v) { return std::to_string(v); }

// Walks one section of 48-byte records up to its bookend. `block_size`
// returns the size in entries of the block that starts at a header, or an
// error; it must use 64-bit arithmetic so 32-bit counts cannot overflow.
template <class BlockEntries>
base::Result<std::uint64_t> walk_section(std::span<const std::uint8_t> b, std::uint64_t begin, std::uint64_t limit,
                                         const char* section, std::size_t& blocks, BlockEntries block_entries) {
  std::uint64_t off = begin;
  for (;;) {
    if (off > limit || limit - off < kEntrySize)
      return base::Error{std::string(section) + ".truncated", off,
                         std::string("the ") + section + " section ends without its bookend (file or data cut short)"};
    const std::uint8_t* at = b.data() + off;
    if (is_bookend(at)) return off;
    auto entries = block_entries(at, off);
    if (!entries) return entries.error();
    std::uint64_t room = (limit - off) / kEntrySize - 1;  // entries after this header
    if (*entries > room)
      return base::Error{
          std::string(section) + ".count", off,
          "block declares " + num(*entries) + " entries but only " + num(room) + " fit before the end of the data"};
    off += kEntrySize * (1 + *entries);
    ++blocks;
  }
}

// Index of the first entry whose truncated key is below its predecessor's.
std::optional<std::uint64_t> first_unsorted(const std::uint8_t* table, std::uint64_t count, std::uint64_t entry) {
  for (std::uint64_t i = 1; i < count; ++i)
    if (load_u64(table + entry * i) < load_u64(table + entry * (i - 1))) return i;
  return std::nullopt;
}

base::Error footer_error(const char* rule, std::uint64_t field_offset, std::string message) {
  return base::Error{std::string("footer.") + rule, field_offset, std::move(message)};
}

}  // namespace

std::optional<std::uint64_t> ShardView::expiry() const {
  if (!footer_ || !footer_->expires()) return std::nullopt;
  return footer_->key_expiry;
}

LookupEntry ShardView::file_lookup(std::size_t i) const {
  const std::uint8_t* p = bytes_.data() + footer_->file_lookup_offset + kFileLookupEntrySize * i;
  return {load_u64(p), load_u32(p + 8)};
}
LookupEntry ShardView::xorb_lookup(std::size_t i) const {
  const std::uint8_t* p = bytes_.data() + footer_->xorb_lookup_offset + kXorbLookupEntrySize * i;
  return {load_u64(p), load_u32(p + 8)};
}
ChunkLookupEntry ShardView::chunk_lookup(std::size_t i) const {
  const std::uint8_t* p = bytes_.data() + footer_->chunk_lookup_offset + kChunkLookupEntrySize * i;
  return {load_u64(p), load_u32(p + 8), load_u32(p + 12)};
}

base::Result<ShardView> ShardView::parse(std::span<const std::uint8_t> b) {
  auto v = parse_as(b, false);
  if (v || b.size() < kHeaderSize || load_u64(b.data() + 40) != kFooterSize) return v;
  // hf_xet 1.1.7 to 1.2.x upload a session shard cut where the lookup
  // tables begin, header unchanged: it announces a 200-byte footer that is
  // not there, and the bytes end at the CAS bookend (1.3.0 on write 0 there;
  // 1.1.0-1.1.6 send the whole file). Read so only when the footer the
  // header announces does not parse; its error stands otherwise.
  auto cut = parse_as(b, true);
  return cut ? cut : v;
}

base::Result<ShardView> ShardView::parse_as(std::span<const std::uint8_t> b, bool cut_at_tables) {
  ShardView v;
  v.bytes_ = b;
  const std::uint64_t size = b.size();

  // Header.
  if (size < kHeaderSize)
    return base::Error{"header.truncated", 0, "file is " + num(size) + " bytes, shorter than the 48-byte header"};
  if (std::memcmp(b.data(), kHeaderTag.data(), kHeaderTag.size()) != 0)
    return base::Error{"header.magic", 0, "not an MDB shard (header tag mismatch)"};
  v.header_.version = load_u64(b.data() + 32);
  v.header_.footer_size = load_u64(b.data() + 40);
  if (v.header_.version != kHeaderVersion)
    return base::Error{"header.version", 32, "header version " + num(v.header_.version) + ", only 2 is supported"};
  if (v.header_.footer_size != 0 && v.header_.footer_size != kFooterSize)
    return base::Error{"header.footer_size", 40, "footer size " + num(v.header_.footer_size) + ", must be 0 or 200"};
  // Cut at the tables (parse): no footer, whatever the header says.
  const std::uint64_t footer_size = cut_at_tables ? 0 : v.header_.footer_size;
  if (footer_size > size - kHeaderSize)
    return base::Error{"footer.truncated", size, "header announces a 200-byte footer but the file has no room for it"};
  const std::uint64_t data_end = size - footer_size;

  // File-info section.
  bool first_file = true;
  bool with_verification = false;
  auto file_entries = [&](const std::uint8_t* at, std::uint64_t off) -> base::Result<std::uint64_t> {
    FileHeader h = FileHeader::decode(at);
    if (first_file) {
      with_verification = h.with_verification();
      first_file = false;
    } else if (h.with_verification() != with_verification) {
      return base::Error{"file_info.verification_mixed", off + 32,
                         "file " + h.file_hash.to_string() +
                             (with_verification ? " lacks verification entries that earlier files have"
                                                : " has verification entries that earlier files lack")};
    }
    std::uint64_t n = h.num_entries;
    v.stats_.terms += n;
    return n + (h.with_verification() ? n : 0) + (h.with_metadata_ext() ? 1 : 0);
  };
  auto file_bookend = walk_section(b, kHeaderSize, data_end, "file_info", v.stats_.files, file_entries);
  if (!file_bookend) return file_bookend.error();
  v.file_bookend_ = *file_bookend;

  // CAS section.
  auto xorb_entries = [&](const std::uint8_t* at, std::uint64_t off) -> base::Result<std::uint64_t> {
    XorbHeader h = XorbHeader::decode(at);
    (void)off;
    v.stats_.chunks += h.num_entries;
    return std::uint64_t(h.num_entries);
  };
  auto cas_bookend = walk_section(b, v.cas_begin(), data_end, "cas_info", v.stats_.xorbs, xorb_entries);
  if (!cas_bookend) return cas_bookend.error();
  v.cas_bookend_ = *cas_bookend;

  // Footer, or nothing at all for upload shards.
  if (footer_size == 0) {
    if (v.cas_end() != size)
      return base::Error{"shard.trailing_bytes", v.cas_end(),
                         num(size - v.cas_end()) + " bytes after the CAS bookend of a shard without footer"};
  } else {
    const std::uint64_t fo = data_end;
    ShardFooter f = ShardFooter::decode(b.data() + fo);
    if (f.version != kFooterVersion)
      return footer_error("version", fo, "footer version " + num(f.version) + ", only 1 is supported");
    if (f.footer_offset != fo)
      return footer_error("footer_offset", fo + 192,
                          "footer_offset says " + num(f.footer_offset) + ", the footer is at " + num(fo));
    if (f.file_info_offset != kHeaderSize)
      return footer_error("file_info_offset", fo + 8,
                          "file_info_offset says " + num(f.file_info_offset) + ", the section starts at 48");
    if (f.cas_info_offset != v.cas_begin())
      return footer_error(
          "cas_info_offset", fo + 16,
          "cas_info_offset says " + num(f.cas_info_offset) + ", the CAS section starts at " + num(v.cas_begin()));
    // Lookup tables fill [cas_end, footer) exactly, file/xorb/chunk in that
    // order, as the Rust client writes them; a gap or leftover bytes would be
    // data nothing accounts for (and could not be written back). A zero count
    // says nothing about its offset (writers leave 0 or footer_offset there).
    struct Table {
      const char* name;
      std::uint64_t offset, count, entry, field;
    } tables[] = {
        {"file_lookup", f.file_lookup_offset, f.file_lookup_num_entry, kFileLookupEntrySize, 24},
        {"xorb_lookup", f.xorb_lookup_offset, f.xorb_lookup_num_entry, kXorbLookupEntrySize, 40},
        {"chunk_lookup", f.chunk_lookup_offset, f.chunk_lookup_num_entry, kChunkLookupEntrySize, 56},
    };
    std::uint64_t floor = v.cas_end();
    for (const auto& t : tables) {
      if (t.count == 0) continue;
      if (t.offset != floor)
        return footer_error(t.name, fo + t.field,
                            std::string(t.name) + " offset " + num(t.offset) + ", expected " + num(floor) +
                                " (tables follow the CAS bookend and each other, in order)");
      if (t.count > (fo - t.offset) / t.entry)
        return footer_error(t.name, fo + t.field + 8,
                            std::string(t.name) + " has " + num(t.count) + " entries of " + num(t.entry) +
                                " bytes, more than fit before the footer");
      if (auto unsorted = first_unsorted(b.data() + t.offset, t.count, t.entry))
        return base::Error{"lookup.unsorted", t.offset + t.entry * *unsorted,
                           std::string(t.name) + " entry " + num(*unsorted) +
                               " has a smaller key than the entry before it (tables are sorted)"};
      floor = t.offset + t.count * t.entry;
    }
    if (floor != fo)
      return base::Error{"shard.trailing_bytes", floor,
                         num(fo - floor) + " bytes between the CAS section or lookup tables and the footer"};
    if (f.file_lookup_num_entry > v.stats_.files || f.xorb_lookup_num_entry > v.stats_.xorbs ||
        f.chunk_lookup_num_entry > v.stats_.chunks)
      return footer_error("lookup_count", fo + 24,
                          "a lookup table has more entries than the shard has files, xorbs or chunks");
    v.footer_ = f;
  }

  // Cross references: chunk ranges inside their xorb when it is in the shard,
  // and chunk byte ranges inside their xorb's byte count.
  std::unordered_map<Hash, std::uint32_t> xorb_chunks;
  if (v.stats_.terms > 0) xorb_chunks.reserve(v.stats_.xorbs);
  for (XorbBlock x : v.xorbs()) {
    const std::uint64_t total = x.header().bytes_in_xorb;
    for (std::uint32_t i = 0; i < x.num_chunks(); ++i) {
      ChunkEntry c = x.chunk(i);
      if (std::uint64_t(c.byte_start) + c.unpacked_bytes > total)
        return base::Error{"cas_info.chunk_range", x.offset() + kEntrySize * (1 + i) + 32,
                           "chunk " + num(i) + " of xorb " + x.hash().to_string() + " spans [" + num(c.byte_start) +
                               ", " + num(std::uint64_t(c.byte_start) + c.unpacked_bytes) + ") past the xorb's " +
                               num(total) + " bytes"};
    }
    if (v.stats_.terms > 0) xorb_chunks.emplace(x.hash(), x.num_chunks());
  }
  for (FileBlock file : v.files()) {
    for (std::uint32_t i = 0; i < file.num_terms(); ++i) {
      FileTerm t = file.term(i);
      const std::uint64_t at = file.offset() + kEntrySize * (1 + i);
      if (t.chunk_start >= t.chunk_end)
        return base::Error{"file_info.term_range", at + 40,
                           "term " + num(i) + " of file " + file.hash().to_string() + " has chunk range [" +
                               num(t.chunk_start) + ", " + num(t.chunk_end) + "), which is empty"};
      auto x = xorb_chunks.find(t.xorb_hash);
      if (x != xorb_chunks.end() && t.chunk_end > x->second)
        return base::Error{"file_info.term_range", at + 44,
                           "term " + num(i) + " of file " + file.hash().to_string() + " ends at chunk " +
                               num(t.chunk_end) + " but xorb " + t.xorb_hash.to_string() + " has " + num(x->second) +
                               " chunks"};
    }
  }
  return v;
}

}  // namespace dedupd::shard
