#include "tests/unit/index/gen.hpp"

#include <stdexcept>

namespace dedupd::index::gen {

namespace {
std::uint64_t splitmix(std::uint64_t& s) {
  std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
}  // namespace

Hash hash_of_seed(std::uint64_t seed) {
  Hash h;
  std::uint64_t s = seed * 0x2545F4914F6CDD1Dull + 12345;
  for (int i = 0; i < 4; ++i) shard::store_u64(h.bytes.data() + 8 * i, splitmix(s));
  return h;
}

std::uint32_t GenXorb::byte_start(std::size_t i) const {
  std::uint32_t at = 0;
  for (std::size_t j = 0; j < i; ++j) at += sizes[j];
  return at;
}

GenXorb gen_xorb(std::uint64_t seed, std::size_t n) {
  GenXorb x;
  x.hash = hash_of_seed(~seed);
  x.raw.reserve(n);
  x.sizes.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    x.raw.push_back(hash_of_seed((seed << 20) + i));
    x.sizes.push_back(8192 + std::uint32_t(x.raw.back().word(1) % 65536));
  }
  return x;
}

std::vector<std::uint8_t> build_shard(const ShardSpec& spec) {
  shard::ShardWriter w;
  for (const GenXorb* g : spec.xorbs) {
    shard::XorbRecord r;
    r.header.xorb_hash = g->hash;
    std::uint32_t at = 0;
    r.chunks.reserve(g->raw.size());
    for (std::size_t i = 0; i < g->raw.size(); ++i) {
      shard::ChunkEntry c;
      c.chunk_hash = shard::keyed_chunk_hash(spec.key, g->raw[i]);
      c.byte_start = at;
      c.unpacked_bytes = g->sizes[i];
      if (i == 0) c.flags = shard::kChunkFlagGlobalDedupEligible;
      r.chunks.push_back(c);
      at += g->sizes[i];
    }
    r.header.bytes_in_xorb = at;
    r.header.bytes_on_disk = at / 2;
    w.add_xorb(std::move(r));
  }
  for (const auto& f : spec.files) w.add_file(f);
  shard::WriteOptions o;
  o.with_footer = spec.footer;
  o.footer.chunk_hash_key = spec.key;
  o.footer.creation_timestamp = spec.created;
  o.footer.key_expiry = spec.expiry.value_or(shard::kNoExpiry);
  return w.write(o);
}

shard::FileRecord gen_file(std::uint64_t seed, const GenXorb& x, std::uint32_t start, std::uint32_t end,
                           bool verification, bool sha256) {
  shard::FileRecord f;
  f.header.file_hash = hash_of_seed(seed ^ 0xF11E);
  shard::FileTerm t;
  t.xorb_hash = x.hash;
  t.chunk_start = start;
  t.chunk_end = end;
  for (std::uint32_t i = start; i < end; ++i) t.unpacked_bytes += x.sizes[i];
  f.terms.push_back(t);
  if (verification) {
    std::vector<Hash> raws(x.raw.begin() + start, x.raw.begin() + end);
    shard::HashRecord v;
    v.hash = shard::verification_range_hash(raws);
    f.verification.push_back(v);
  }
  if (sha256) {
    shard::HashRecord m;
    m.hash = hash_of_seed(seed ^ 0x5A256);
    f.metadata_ext = m;
  }
  return f;
}

OwnedShard own(std::vector<std::uint8_t> bytes) {
  OwnedShard s;
  s.bytes = std::move(bytes);
  auto v = shard::ShardView::parse(s.bytes);
  if (!v) throw std::runtime_error("generated shard does not parse: " + v.error().to_string());
  s.view = *v;
  s.hash = shard::shard_file_hash(s.bytes);
  return s;
}

}  // namespace dedupd::index::gen
