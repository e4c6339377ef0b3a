// Any bytes through the shard reader, the integrity checks, verify_shard and,
// when they parse, the writer. Malformed input must be an error value; a
// parsed shard must be fully iterable and must survive a rewrite.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "shard/integrity.hpp"
#include "shard/lookup_tables.hpp"
#include "shard/reader.hpp"
#include "shard/verify.hpp"
#include "shard/writer.hpp"

using namespace dedupd::shard;

namespace {

void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_shard: property violated: %s\n", what);
    std::abort();
  }
}

// Touches every field through the public iteration API.
std::uint64_t walk(const ShardView& v) {
  std::uint64_t sink = 0;
  std::size_t files = 0, terms = 0, xorbs = 0, chunks = 0;
  for (FileBlock f : v.files()) {
    ++files;
    sink += f.hash().word(0) + f.header().flags;
    for (std::uint32_t i = 0; i < f.num_terms(); ++i, ++terms) {
      FileTerm t = f.term(i);
      sink += t.chunk_start + t.chunk_end + t.unpacked_bytes;
      if (f.has_verification()) sink += f.verification(i).hash.word(1);
    }
    if (auto s = f.sha256()) sink += s->word(2);
  }
  for (XorbBlock x : v.xorbs()) {
    ++xorbs;
    sink += x.hash().word(3) + x.raw().size();
    for (std::uint32_t i = 0; i < x.num_chunks(); ++i, ++chunks) {
      ChunkEntry c = x.chunk(i);
      sink += c.byte_start + c.unpacked_bytes + c.global_dedup_eligible();
    }
  }
  require(files == v.stats().files && terms == v.stats().terms, "file counts match stats");
  require(xorbs == v.stats().xorbs && chunks == v.stats().chunks, "xorb counts match stats");
  for (std::size_t i = 0; i < v.file_lookup_size(); ++i) sink += v.file_lookup(i).index;
  for (std::size_t i = 0; i < v.xorb_lookup_size(); ++i) sink += v.xorb_lookup(i).index;
  for (std::size_t i = 0; i < v.chunk_lookup_size(); ++i) sink += v.chunk_lookup(i).chunk_offset;
  sink += v.expiry().value_or(0) + v.creation_timestamp() + v.chunk_key().word(0);
  return sink;
}

// True when the shard's lookup fields and tables are exactly what the writer
// would produce for it; then the rewrite must be byte-identical.
bool lookup_as_writer_makes_it(const ShardView& v, LookupTables mode) {
  const ShardFooter& f = *v.footer();
  const std::uint64_t fo = f.footer_offset;
  switch (mode) {
    case LookupTables::none_server_style:
      return f.file_lookup_offset == fo && f.xorb_lookup_offset == fo && f.chunk_lookup_offset == fo;
    case LookupTables::none_zero_offsets:
      return true;  // options_of picks it only when all offsets are 0
    case LookupTables::build:
      break;
  }
  LookupTableSet c = canonical_lookup_tables(v);
  if (f.file_lookup_num_entry != c.files.size() || f.xorb_lookup_num_entry != c.xorbs.size() ||
      f.chunk_lookup_num_entry != c.chunks.size())
    return false;
  const std::uint64_t xo = v.cas_end() + kFileLookupEntrySize * c.files.size();
  if (f.file_lookup_offset != v.cas_end() || f.xorb_lookup_offset != xo ||
      f.chunk_lookup_offset != xo + kXorbLookupEntrySize * c.xorbs.size())
    return false;
  for (std::size_t i = 0; i < c.files.size(); ++i)
    if (!lookup_equal(v.file_lookup(i), c.files[i])) return false;
  for (std::size_t i = 0; i < c.xorbs.size(); ++i)
    if (!lookup_equal(v.xorb_lookup(i), c.xorbs[i])) return false;
  for (std::size_t i = 0; i < c.chunks.size(); ++i)
    if (!lookup_equal(v.chunk_lookup(i), c.chunks[i])) return false;
  return true;
}

bool same_footer_but_lookup(const ShardFooter& a, const ShardFooter& b) {
  return a.version == b.version && a.file_info_offset == b.file_info_offset && a.cas_info_offset == b.cas_info_offset &&
         a.chunk_hash_key == b.chunk_hash_key && a.creation_timestamp == b.creation_timestamp &&
         a.key_expiry == b.key_expiry && a.reserved == b.reserved && a.stored_bytes_on_disk == b.stored_bytes_on_disk &&
         a.materialized_bytes == b.materialized_bytes && a.stored_bytes == b.stored_bytes;
}

void check_rewrite(std::span<const std::uint8_t> in, const ShardView& v) {
  const WriteOptions options = ShardWriter::options_of(v);
  const std::vector<std::uint8_t> out = ShardWriter::from_view(v).write(options);
  auto again = ShardView::parse(out);
  require(again.ok(), "a rewritten shard parses");
  const ShardView& w = *again;
  require(w.stats().files == v.stats().files && w.stats().chunks == v.stats().chunks &&
              w.stats().terms == v.stats().terms && w.stats().xorbs == v.stats().xorbs,
          "a rewrite keeps every entry");
  // A shard cut at its tables with the header's footer size left at 200 (as
  // hf_xet 1.1.7-1.2.x upload it) parses without footer, and the writer
  // writes 0 there: the header's footer size is the one byte range that
  // differs.
  const bool cut = !v.has_footer() && v.header().footer_size != 0;
  auto same = [&](std::size_t n) {
    if (!cut) return std::memcmp(out.data(), in.data(), n) == 0;
    return std::memcmp(out.data(), in.data(), 40) == 0 && load_u64(out.data() + 40) == 0 &&
           std::memcmp(out.data() + 48, in.data() + 48, n - 48) == 0;
  };
  require(w.cas_end() == v.cas_end() && same(v.cas_end()), "header, file and CAS sections are rewritten byte for byte");
  require(v.has_footer() == w.has_footer(), "a rewrite keeps the footer or its absence");
  if (v.has_footer()) require(same_footer_but_lookup(*v.footer(), *w.footer()), "footer fields survive a rewrite");
  if (!v.has_footer() || lookup_as_writer_makes_it(v, options.lookup_tables))
    require(out.size() == in.size() && same(in.size()), "a shard as the writer makes it rewrites byte-identical");
  const std::vector<std::uint8_t> out2 = ShardWriter::from_view(w).write(ShardWriter::options_of(w));
  require(out2 == out, "a rewrite is a fixed point");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::span<const std::uint8_t> in(data, size);
  // A name of the checked form, so the file-name path runs too.
  const char* name = "0000000000000000000000000000000000000000000000000000000000000000.mdb";
  auto problems = verify_shard(in, name);
  for (const auto& e : problems) require(!e.rule.empty() && !e.message.empty(), "errors are named");

  auto view = ShardView::parse(in);
  if (!view) {
    require(view.error().offset <= size, "error offsets lie within the input");
    require(!problems.empty() && problems[0].rule == view.error().rule,
            "verify_shard reports the structural error first");
    return 0;
  }
  volatile std::uint64_t sink = walk(*view);
  (void)sink;
  for (const auto& e : check_integrity(*view)) require(e.offset < size, "integrity problems point inside the shard");
  check_rewrite(in, *view);
  return 0;
}
