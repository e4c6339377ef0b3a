#include "serialized_xorbs.hpp"

#include <lz4.h>

#include <algorithm>
#include <fstream>
#include <random>
#include <span>
#include <utility>

namespace dedupd::daemon::answers::download_testing {

Bytes chunk(const Bytes& data, std::uint8_t scheme, std::uint8_t version) {
  Bytes stored = data;
  if (scheme != 0) {
    Bytes in = data;
    if (scheme == 2) {  // group bytes by position mod 4, as xet-core does before LZ4
      std::size_t at = 0;
      for (std::size_t g = 0; g < 4; ++g)
        for (std::size_t i = g; i < data.size(); i += 4) in[at++] = data[i];
    }
    stored.resize(std::size_t(LZ4_compressBound(int(in.size()))));
    int n = LZ4_compress_default(reinterpret_cast<const char*>(in.data()), reinterpret_cast<char*>(stored.data()),
                                 int(in.size()), int(stored.size()));
    stored.resize(std::size_t(n));
  }
  auto u24 = [](std::size_t v) { return Bytes{std::uint8_t(v), std::uint8_t(v >> 8), std::uint8_t(v >> 16)}; };
  Bytes out{version};
  for (auto b : u24(stored.size())) out.push_back(b);
  out.push_back(scheme);
  for (auto b : u24(data.size())) out.push_back(b);
  out.insert(out.end(), stored.begin(), stored.end());
  return out;
}

Bytes random_data(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  Bytes out(n);
  for (auto& b : out) b = std::uint8_t(rng());
  return out;
}

Bytes text_data(std::size_t n, unsigned seed) {
  Bytes out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = std::uint8_t('a' + (i * 7 + seed + i / 13) % 5);
  return out;
}

Xorb::Xorb() {
  data = {random_data(5000, 1), text_data(9000, 2), text_data(7003, 3), random_data(3001, 4)};
  const std::uint8_t schemes[] = {0, 1, 2, 0};
  std::vector<shard::HashAndSize> leaves;
  for (std::size_t i = 0; i < data.size(); ++i) {
    serialized.push_back(chunk(data[i], schemes[i]));
    starts.push_back(std::uint32_t(bytes.size()));
    bytes.insert(bytes.end(), serialized.back().begin(), serialized.back().end());
    leaves.push_back({shard::chunk_hash_of_data(data[i]), data[i].size()});
  }
  starts.push_back(std::uint32_t(bytes.size()));
  hash = shard::xorb_hash(leaves);
}

Bytes Xorb::range(std::size_t a, std::size_t b) const {
  return Bytes(bytes.begin() + starts[a], bytes.begin() + starts[b]);
}

RangeExpectation Xorb::expect(std::uint32_t a, std::uint32_t b) const {
  RangeExpectation e;
  e.xorb = hash;
  e.length = starts[b] - starts[a];
  e.first_chunk = a;
  e.end_chunk = b;
  return e;
}

std::vector<KnownChunk> Xorb::known(const std::optional<shard::Key>& key) const {
  std::vector<KnownChunk> out;
  for (const auto& d : data) {
    auto raw = shard::chunk_hash_of_data(d);
    out.push_back({key ? shard::keyed_chunk_hash(*key, raw) : raw, std::uint32_t(d.size())});
  }
  return out;
}

void write_cache_file(const std::filesystem::path& file, const std::string& key, const Bytes& body) {
  std::filesystem::create_directories(file.parent_path());
  std::string head(40, '\x01');
  head += "\nKEY: " + key + "\nHTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  std::ofstream f(file, std::ios::binary | std::ios::trunc);
  f.write(head.data(), std::streamsize(head.size()));
  f.write(reinterpret_cast<const char*>(body.data()), std::streamsize(body.size()));
}

base::Result<CheckedRange> check(const Bytes& bytes, RangeExpectation e, std::size_t piece) {
  RangeChecker checker(std::move(e));
  for (std::size_t at = 0; at < bytes.size(); at += piece) {
    auto fed = checker.feed(std::span<const std::uint8_t>(bytes).subspan(at, std::min(piece, bytes.size() - at)));
    if (!fed) return fed.error();
  }
  return checker.finish();
}

}  // namespace dedupd::daemon::answers::download_testing
