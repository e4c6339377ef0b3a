#include "shard/integrity.hpp"

#include <algorithm>
#include <string>
#include <unordered_map>

#include "shard/keys.hpp"
#include "shard/lookup_tables.hpp"

namespace dedupd::shard {

namespace {

std::string decimal(std::uint64_t v) { return std::to_string(v); }

// The first block of each xorb hash, as the reader resolves term ranges.
std::unordered_map<Hash, XorbBlock> xorbs_by_hash(const ShardView& view) {
  std::unordered_map<Hash, XorbBlock> m;
  m.reserve(view.stats().xorbs);
  for (XorbBlock x : view.xorbs()) m.emplace(x.hash(), x);
  return m;
}

std::string_view base_name(std::string_view path) {
  auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

template <class Entry>
void compare_table(const char* name, std::uint64_t offset, std::uint64_t entry_size, std::vector<Entry> actual,
                   const std::vector<Entry>& expected, std::vector<base::Error>& out) {
  if (actual.empty()) return;  // absent tables are allowed
  if (actual.size() != expected.size()) {
    out.push_back(
        {"integrity.lookup_table", offset,
         std::string(name) + " has " + decimal(actual.size()) + " entries, the shard has " + decimal(expected.size())});
    return;
  }
  // Writers sort by key only, so equal keys may come in any index order.
  std::vector<std::size_t> order(actual.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return lookup_less(actual[a], actual[b]); });
  for (std::size_t i = 0; i < order.size(); ++i)
    if (!lookup_equal(actual[order[i]], expected[i])) {
      out.push_back(
          {"integrity.lookup_table", offset + entry_size * order[i],
           std::string(name) + " entry " + decimal(order[i]) + " does not point at a matching entry of the shard"});
      return;  // one wrong entry shifts the rest; report the table once
    }
}

// True when the chunk lookup table holds exactly the shard's chunk entries
// as a multiset (all that compare_table checks), found without copying or
// sorting either table: each entry is checked in place against the chunk
// it names, and a bitmap proves no chunk is named twice. compare_table's
// copies and sorts hold 48 bytes per chunk (48 MB for the Rust client's
// largest shards) and take five times as long. False sends the caller to
// compare_table, which names the first wrong entry.
bool chunk_table_matches(const ShardView& view) {
  const std::size_t n = view.chunk_lookup_size();
  if (n != view.stats().chunks) return false;
  // Each xorb block by its index as canonical_lookup_tables numbers it;
  // the indices apart, searched without branches (one per table entry).
  std::vector<std::uint32_t> index;
  std::vector<XorbBlock> blocks;
  std::vector<std::uint64_t> first;  // ordinal of the block's first chunk
  index.reserve(view.stats().xorbs);
  blocks.reserve(view.stats().xorbs);
  first.reserve(view.stats().xorbs);
  std::uint64_t chunks = 0;
  for (XorbBlock x : view.xorbs()) {
    auto at = std::uint32_t((x.offset() - view.cas_begin()) / kEntrySize);
    if (!index.empty() && at <= index.back()) return false;  // not searchable: the slow way
    index.push_back(at);
    blocks.push_back(x);
    first.push_back(chunks);
    chunks += x.num_chunks();
  }
  if (index.empty()) return false;
  // The last block whose index is <= xorb_index.
  auto block_of = [&](std::uint32_t xorb_index) {
    std::size_t lo = 0;
    for (std::size_t len = index.size(); len > 1;) {
      std::size_t half = len / 2;
      lo = index[lo + half] <= xorb_index ? lo + half : lo;
      len -= half;
    }
    return lo;
  };
  // The table is in key order, so the chunks it names are all over the
  // file: asking for the hash a few entries ahead keeps misses in flight.
  constexpr std::size_t kAhead = 8;
  std::vector<bool> named(chunks);
  for (std::size_t i = 0; i < n; ++i) {
    if (i + kAhead < n) {
      ChunkLookupEntry next = view.chunk_lookup(i + kAhead);
      const XorbBlock& b = blocks[block_of(next.xorb_index)];
      if (next.chunk_offset < b.num_chunks()) __builtin_prefetch(b.chunk_hash_bytes(next.chunk_offset));
    }
    ChunkLookupEntry e = view.chunk_lookup(i);
    std::size_t lo = block_of(e.xorb_index);
    const XorbBlock& b = blocks[lo];
    if (index[lo] != e.xorb_index || e.chunk_offset >= b.num_chunks()) return false;
    if (load_u64(b.chunk_hash_bytes(e.chunk_offset)) != e.truncated) return false;
    std::uint64_t at = first[lo] + e.chunk_offset;
    if (named[at]) return false;
    named[at] = true;
  }
  return true;
}

}  // namespace

void check_xorb_hashes(const ShardView& view, std::vector<base::Error>& out) {
  if (view.keyed()) return;  // stored hashes are keyed: the root cannot be recomputed
  std::vector<HashAndSize> leaves;
  for (XorbBlock x : view.xorbs()) {
    leaves.clear();
    leaves.reserve(x.num_chunks());
    for (std::uint32_t i = 0; i < x.num_chunks(); ++i) {
      ChunkEntry c = x.chunk(i);
      leaves.push_back({c.chunk_hash, c.unpacked_bytes});
    }
    Hash computed = xorb_hash(leaves);
    if (computed != x.hash())
      out.push_back({"integrity.xorb_hash", x.offset(),
                     "xorb " + x.hash().to_string() + " does not match its " + decimal(x.num_chunks()) +
                         " chunks, which hash to " + computed.to_string()});
  }
}

void check_verification(const ShardView& view, std::vector<base::Error>& out) {
  if (view.keyed() || view.stats().terms == 0) return;
  auto xorbs = xorbs_by_hash(view);
  std::vector<Hash> raw;
  for (FileBlock f : view.files()) {
    if (!f.has_verification()) continue;
    for (std::uint32_t i = 0; i < f.num_terms(); ++i) {
      FileTerm t = f.term(i);
      auto x = xorbs.find(t.xorb_hash);
      if (x == xorbs.end()) continue;  // described by another shard: cannot check here
      raw.clear();
      for (std::uint32_t c = t.chunk_start; c < t.chunk_end; ++c)
        raw.push_back(Hash::from_bytes({x->second.chunk_hash_bytes(c), 32}));
      Hash computed = verification_range_hash(raw);
      if (computed != f.verification(i).hash)
        out.push_back({"integrity.verification", f.offset() + kEntrySize * (1 + f.num_terms() + i),
                       "verification entry " + decimal(i) + " of file " + f.hash().to_string() +
                           " does not match chunks [" + decimal(t.chunk_start) + ", " + decimal(t.chunk_end) +
                           ") of xorb " + t.xorb_hash.to_string()});
    }
  }
}

void check_term_sizes(const ShardView& view, std::vector<base::Error>& out) {
  if (view.stats().terms == 0) return;
  auto xorbs = xorbs_by_hash(view);
  for (FileBlock f : view.files()) {
    for (std::uint32_t i = 0; i < f.num_terms(); ++i) {
      FileTerm t = f.term(i);
      auto x = xorbs.find(t.xorb_hash);
      if (x == xorbs.end()) continue;
      std::uint64_t sum = 0;
      for (std::uint32_t c = t.chunk_start; c < t.chunk_end; ++c) sum += x->second.chunk(c).unpacked_bytes;
      if (sum != t.unpacked_bytes)
        out.push_back({"integrity.term_bytes", f.offset() + kEntrySize * (1 + i) + 36,
                       "term " + decimal(i) + " of file " + f.hash().to_string() + " says " +
                           decimal(t.unpacked_bytes) + " bytes, its chunks hold " + decimal(sum)});
    }
  }
}

void check_lookup_tables(const ShardView& view, std::vector<base::Error>& out) {
  if (!view.has_footer()) return;
  if (!view.file_lookup_size() && !view.xorb_lookup_size() && !view.chunk_lookup_size()) return;
  const ShardFooter& f = *view.footer();
  const bool chunks_match = view.chunk_lookup_size() == 0 || chunk_table_matches(view);
  LookupTableSet expected = canonical_lookup_tables(view, !chunks_match);
  std::vector<LookupEntry> files, xorbs;
  std::vector<ChunkLookupEntry> chunks;
  for (std::size_t i = 0; i < view.file_lookup_size(); ++i) files.push_back(view.file_lookup(i));
  for (std::size_t i = 0; i < view.xorb_lookup_size(); ++i) xorbs.push_back(view.xorb_lookup(i));
  if (!chunks_match)
    for (std::size_t i = 0; i < view.chunk_lookup_size(); ++i) chunks.push_back(view.chunk_lookup(i));
  compare_table("file lookup table", f.file_lookup_offset, kFileLookupEntrySize, std::move(files), expected.files, out);
  compare_table("xorb lookup table", f.xorb_lookup_offset, kXorbLookupEntrySize, std::move(xorbs), expected.xorbs, out);
  compare_table("chunk lookup table", f.chunk_lookup_offset, kChunkLookupEntrySize, std::move(chunks), expected.chunks,
                out);
}

bool is_shard_file_name(std::string_view path) {
  std::string_view name = base_name(path);
  constexpr std::string_view kSuffix = ".mdb";
  if (name.size() != 64 + kSuffix.size() || !name.ends_with(kSuffix)) return false;
  return Hash::parse(name.substr(0, 64)).ok();
}

void check_file_name(std::span<const std::uint8_t> bytes, std::string_view path, std::vector<base::Error>& out) {
  if (!is_shard_file_name(path)) return;
  Hash named = *Hash::parse(base_name(path).substr(0, 64));
  Hash actual = shard_file_hash(bytes);
  if (named != actual)
    out.push_back({"integrity.file_name", 0,
                   "file is named " + named.to_string() + ".mdb but its bytes hash to " + actual.to_string()});
}

std::vector<base::Error> check_integrity(const ShardView& view, std::optional<std::string_view> path,
                                         const IntegrityOptions& options) {
  std::vector<base::Error> out;
  if (options.xorb_hashes) check_xorb_hashes(view, out);
  if (options.verification) check_verification(view, out);
  if (options.term_sizes) check_term_sizes(view, out);
  if (options.lookup_tables) check_lookup_tables(view, out);
  if (options.file_name && path) check_file_name(view.bytes(), *path, out);
  return out;
}

}  // namespace dedupd::shard
