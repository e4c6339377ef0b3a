// Parse+validate (and iterate every chunk) of a ~64 MiB writer-made shard,
// next to a memcpy of the same bytes: the ratio says how far structural
// validation is from just touching the memory once.
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "shard/reader.hpp"
#include "shard/writer.hpp"

namespace {

using namespace dedupd::shard;

// Cheap distinct hashes: the reader does not check hash values, and BLAKE3
// over a million chunks would dominate set-up time.
Hash fake_hash(std::uint64_t seed) {
  Hash h;
  for (int w = 0; w < 4; ++w) {
    std::uint64_t z = (seed += 0x9e3779b97f4a7c15);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9;
    z = (z ^ (z >> 27)) * 0x94d049bb133111eb;
    z ^= z >> 31;
    std::memcpy(h.bytes.data() + 8 * w, &z, 8);
  }
  return h;
}

// Shaped like a big upload: xorbs of ~8k chunks of 8..72 KiB, and files
// whose terms cover ranges of those xorbs, with verification entries.
const std::vector<std::uint8_t>& shard_64mib() {
  static const std::vector<std::uint8_t> bytes = [] {
    constexpr std::uint64_t kTarget = 64ull << 20;
    constexpr std::uint32_t kChunksPerXorb = 8192;
    ShardWriter w;
    std::vector<XorbHeader> xorbs;
    std::uint64_t size = 0, seed = 1;
    while (size < kTarget - 2 * (kChunksPerXorb + 1) * kEntrySize) {
      XorbRecord x;
      std::uint32_t at = 0;
      for (std::uint32_t i = 0; i < kChunksPerXorb; ++i) {
        ChunkEntry c;
        c.chunk_hash = fake_hash(seed++);
        c.byte_start = at;
        c.unpacked_bytes = 8192 + std::uint32_t(c.chunk_hash.word(1) % 65536);
        at += c.unpacked_bytes;
        x.chunks.push_back(c);
      }
      x.header.xorb_hash = fake_hash(seed++);
      x.header.bytes_in_xorb = at;
      xorbs.push_back(x.header);
      size += (kChunksPerXorb + 1) * kEntrySize;
      w.add_xorb(std::move(x));
    }
    for (std::size_t f = 0; f < 4 * xorbs.size(); ++f) {
      FileRecord file;
      file.header.file_hash = fake_hash(seed++);
      for (std::uint32_t t = 0; t < 16; ++t) {
        FileTerm term;
        term.xorb_hash = xorbs[(f + t) % xorbs.size()].xorb_hash;
        term.chunk_start = (t * 512) % kChunksPerXorb;
        term.chunk_end = term.chunk_start + 512;
        file.terms.push_back(term);
        file.verification.push_back({fake_hash(seed++), {}});
      }
      w.add_file(std::move(file));
    }
    return w.write({});
  }();
  return bytes;
}

void BM_Memcpy(benchmark::State& state) {
  const auto& in = shard_64mib();
  std::vector<std::uint8_t> out(in.size());
  for (auto _ : state) {
    std::memcpy(out.data(), in.data(), in.size());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(std::int64_t(state.iterations()) * std::int64_t(in.size()));
}

void BM_ParseValidate(benchmark::State& state) {
  const auto& in = shard_64mib();
  for (auto _ : state) {
    auto v = ShardView::parse(in);
    if (!v) state.SkipWithError(v.error().to_string().c_str());
    benchmark::DoNotOptimize(v);
  }
  state.SetBytesProcessed(std::int64_t(state.iterations()) * std::int64_t(in.size()));
}

void BM_ParseValidateIterateChunks(benchmark::State& state) {
  const auto& in = shard_64mib();
  std::uint64_t chunks = 0;
  for (auto _ : state) {
    auto v = ShardView::parse(in);
    if (!v) {
      state.SkipWithError(v.error().to_string().c_str());
      break;
    }
    std::uint64_t sum = 0;
    chunks = 0;
    for (XorbBlock x : v->xorbs())
      for (std::uint32_t i = 0; i < x.num_chunks(); ++i, ++chunks) {
        ChunkEntry c = x.chunk(i);
        sum += c.chunk_hash.truncated() + c.unpacked_bytes;
      }
    benchmark::DoNotOptimize(sum);
  }
  state.SetBytesProcessed(std::int64_t(state.iterations()) * std::int64_t(in.size()));
  state.counters["chunks"] = double(chunks);
}

BENCHMARK(BM_Memcpy)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ParseValidate)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ParseValidateIterateChunks)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
