#include "test_support.hpp"

#include <fstream>
#include <iterator>
#include <stdexcept>

namespace dedupd::shard::testing {

Hash seeded_hash(std::uint64_t seed) {
  std::uint8_t msg[8];
  store_u64(msg, seed);
  return blake3_keyed(kDataKey, msg);
}

TestXorb make_xorb(std::uint64_t seed, std::size_t chunks, const Key& key) {
  TestXorb x;
  std::vector<HashAndSize> leaves;
  std::uint32_t at = 0;
  for (std::size_t i = 0; i < chunks; ++i) {
    Hash raw = seeded_hash(seed * 1000003 + i);
    // Sizes like a CDC chunker's: 8..72 KiB, derived from the hash.
    std::uint32_t size = 8192 + std::uint32_t(raw.word(1) % 65536);
    ChunkEntry c;
    c.chunk_hash = keyed_chunk_hash(key, raw);
    c.byte_start = at;
    c.unpacked_bytes = size;
    if (i == 0 || raw.word(3) % 1024 == 0) c.flags = kChunkFlagGlobalDedupEligible;
    x.record.chunks.push_back(c);
    x.raw.push_back(raw);
    leaves.push_back({raw, size});
    at += size;
  }
  x.record.header.xorb_hash = xorb_hash(leaves);
  x.record.header.num_entries = std::uint32_t(chunks);
  x.record.header.bytes_in_xorb = at;
  x.record.header.bytes_on_disk = at / 2 + 48 * std::uint32_t(chunks);
  return x;
}

FileRecord make_file(std::uint64_t seed, const std::vector<TermSpec>& terms, bool verification, bool metadata_ext) {
  FileRecord f;
  std::vector<HashAndSize> leaves;
  for (const auto& t : terms) {
    FileTerm term;
    term.xorb_hash = t.xorb->record.header.xorb_hash;
    term.chunk_start = t.start;
    term.chunk_end = t.end;
    for (std::uint32_t i = t.start; i < t.end; ++i) {
      term.unpacked_bytes += t.xorb->record.chunks[i].unpacked_bytes;
      leaves.push_back({t.xorb->raw[i], t.xorb->record.chunks[i].unpacked_bytes});
    }
    f.terms.push_back(term);
    if (verification) {
      HashRecord v;
      v.hash = verification_range_hash(std::span(t.xorb->raw).subspan(t.start, t.end - t.start));
      f.verification.push_back(v);
    }
  }
  f.header.file_hash = file_hash(leaves);
  if (metadata_ext) f.metadata_ext = HashRecord{seeded_hash(seed), {}};
  return f;
}

SmallShard small_shard(bool verification, bool metadata_ext) {
  SmallShard s;
  s.xorbs.push_back(make_xorb(1, 12));
  s.xorbs.push_back(make_xorb(2, 5));
  const TestXorb* a = &s.xorbs[0];
  const TestXorb* b = &s.xorbs[1];
  s.writer.add_file(make_file(10, {{a, 0, 12}}, verification, metadata_ext));
  s.writer.add_file(make_file(11, {{a, 3, 7}, {b, 0, 5}, {a, 11, 12}}, verification, metadata_ext));
  for (const auto& x : s.xorbs) s.writer.add_xorb(x.record);
  return s;
}

std::vector<std::uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string fixture_path(const std::string& name) { return std::string(DEDUPD_FIXTURE_DIR) + "/" + name; }

std::vector<std::uint8_t> fixture_bytes() { return read_file(fixture_path("gpt2-64-8bits.tflite.shard")); }

}  // namespace dedupd::shard::testing
