// Writes a Xet client shard cache of a chosen number of files and bytes for
// bench_xet_cache.py (issue 24): the cache xet-core issue #853 measured
// (708 files, 90 MB) is what a build host collects over a few weeks, and no
// real client can write that many sessions in a benchmark's time.
//
//   make_xet_cache --dir SHARD_CACHE --shards N --mib M [--keyed-percent P]
//                  [--keys K] [--seed S] [--now UNIX_SECONDS]
//
// Every file is a shard as hf_xet 1.8.0 writes it (docs/FORMAT.md, "What the
// real Xet client writes"), named <shard hash>.mdb, written through a dot-temp
// file and renamed as the client does, mtime = its creation:
// - exported upload-session shards: zero key, footer, file/xorb/chunk lookup
//   tables, every file with the verification and metadata-ext flags and one
//   verification entry per term, expiry = creation + 3 weeks, creation within
//   the last 20 days; some sessions re-list a file of an earlier one (a
//   re-upload: its terms name xorbs that shard does not hold);
// - P% global-dedup replies: keyed chunk hashes under one of K keys, one to
//   four xorbs, no files, no lookup tables, expiry = creation + 7 days.
// Sizes spread over a factor of 256 (most sessions are small, a few large)
// and are scaled so the files total about M MiB. Prints a JSON summary.
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "shard/keys.hpp"
#include "shard/writer.hpp"

namespace {

namespace fs = std::filesystem;
using namespace dedupd;

constexpr std::uint64_t kDay = 24 * 3600;
// xet-core's xorb limits: 64 MiB of chunk data or 8,192 chunks. With chunks
// of 8-128 KiB (64 KiB on average, as its chunker gives) the byte limit is
// reached first, near 1,024 chunks.
constexpr std::uint64_t kXorbMaxBytes = 64ull << 20;
constexpr std::uint32_t kXorbMaxChunks = 8192;
// What one chunk costs a shard: its 48-byte CAS entry and 16-byte lookup
// entry. Sizes are met by chunk count; the rest is small per-file overhead.
constexpr std::uint64_t kBytesPerChunk = 64;
constexpr std::uint64_t kShardOverhead = 48 + 3 * 48 + 200;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "make_xet_cache: %s\n", what.c_str());
  std::exit(2);
}

struct Options {
  fs::path dir;
  std::uint32_t shards = 700;
  double mib = 86;  // 90 MB
  std::uint32_t keyed_percent = 15;
  std::uint32_t keys = 3;
  std::uint64_t seed = 1;
  std::uint64_t now = std::uint64_t(std::time(nullptr));
};

class Generator {
 public:
  explicit Generator(const Options& o) : rng_(o.seed) {
    for (std::uint32_t k = 0; k < std::max<std::uint32_t>(1, o.keys); ++k) keys_.push_back(random_hash());
  }

  shard::Hash random_hash() {
    shard::Hash h;
    for (std::size_t w = 0; w < 4; ++w) {
      std::uint64_t v = rng_();
      for (std::size_t b = 0; b < 8; ++b) h.bytes[8 * w + b] = std::uint8_t(v >> (8 * b));
    }
    return h;
  }
  std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : rng_() % n; }

  // Chunks of 8-128 KiB, packed into xorbs in order as the client packs a
  // session's new data; `raw` receives the unkeyed chunk hashes per xorb.
  std::vector<shard::XorbRecord> xorbs_of(std::uint64_t chunks, const shard::Key* key,
                                          std::vector<std::vector<shard::HashAndSize>>& raw) {
    std::vector<shard::XorbRecord> out;
    std::vector<shard::HashAndSize> leaves;
    shard::XorbRecord x;
    std::uint64_t bytes = 0;
    auto close = [&] {
      if (leaves.empty()) return;
      x.header.xorb_hash = shard::xorb_hash(leaves);
      x.header.bytes_in_xorb = std::uint32_t(bytes);
      x.header.bytes_on_disk = 0;  // as the client's exported shards carry it
      out.push_back(std::move(x));
      raw.push_back(std::move(leaves));
      x = {};
      leaves.clear();
      bytes = 0;
    };
    for (std::uint64_t c = 0; c < chunks; ++c) {
      std::uint32_t size = 8192 + std::uint32_t(below(120 * 1024));
      if (bytes + size > kXorbMaxBytes || leaves.size() == kXorbMaxChunks) close();
      shard::HashAndSize leaf{random_hash(), size};
      shard::ChunkEntry e;
      e.chunk_hash = key ? shard::keyed_chunk_hash(*key, leaf.hash) : leaf.hash;
      e.byte_start = std::uint32_t(bytes);
      e.unpacked_bytes = size;
      x.chunks.push_back(e);
      leaves.push_back(leaf);
      bytes += size;
    }
    close();
    return out;
  }

  std::vector<std::uint8_t> upload_shard(std::uint64_t chunks, std::uint64_t created) {
    std::vector<std::vector<shard::HashAndSize>> raw;
    auto xorbs = xorbs_of(chunks, nullptr, raw);
    // The session's files take consecutive runs of its chunks; a run that
    // crosses a xorb boundary becomes one term per xorb.
    std::uint64_t files = 1 + below(std::min<std::uint64_t>(8, chunks));
    std::vector<std::uint64_t> cuts{0, chunks};
    for (std::uint64_t f = 1; f < files; ++f) cuts.push_back(1 + below(chunks - 1));
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());

    shard::ShardWriter w;
    std::uint64_t materialized = 0, stored = 0;
    for (const auto& x : xorbs) stored += x.header.bytes_in_xorb;
    for (std::size_t f = 0; f + 1 < cuts.size(); ++f) {
      shard::FileRecord rec;
      std::vector<shard::HashAndSize> file_leaves;
      std::uint64_t at = 0;  // chunk index over the whole session
      for (std::size_t xi = 0; xi < xorbs.size(); ++xi) {
        std::uint64_t lo = std::max(cuts[f], at), hi = std::min(cuts[f + 1], at + raw[xi].size());
        if (lo < hi) {
          shard::FileTerm t;
          t.xorb_hash = xorbs[xi].header.xorb_hash;
          t.chunk_start = std::uint32_t(lo - at);
          t.chunk_end = std::uint32_t(hi - at);
          std::vector<shard::Hash> term_raw;
          for (std::uint64_t c = lo - at; c < hi - at; ++c) {
            term_raw.push_back(raw[xi][c].hash);
            file_leaves.push_back(raw[xi][c]);
            t.unpacked_bytes += std::uint32_t(raw[xi][c].size);
          }
          materialized += t.unpacked_bytes;
          rec.terms.push_back(t);
          rec.verification.push_back({shard::verification_range_hash(term_raw)});
        }
        at += raw[xi].size();
      }
      rec.header.file_hash = shard::file_hash(file_leaves);
      rec.metadata_ext = shard::HashRecord{random_hash()};  // the content's sha256: no content here
      earlier_files_.push_back(rec);
      w.add_file(std::move(rec));
    }
    // A re-upload in a later session lists the file again, its terms naming
    // the earlier session's xorbs: the same record in two shards, which a
    // merge writes once.
    if (earlier_files_.size() > files && below(10) == 0) {
      const auto& again = earlier_files_[below(earlier_files_.size() - files)];
      for (const auto& t : again.terms) materialized += t.unpacked_bytes;
      w.add_file(again);
    }
    for (auto& x : xorbs) w.add_xorb(std::move(x));
    w.sort_sections_by_hash();
    shard::WriteOptions wo;
    wo.lookup_tables = shard::LookupTables::build;
    wo.footer.creation_timestamp = created;
    wo.footer.key_expiry = created + 21 * kDay;
    wo.footer.materialized_bytes = materialized;
    wo.footer.stored_bytes = stored;
    return w.write(wo);
  }

  // `chunks` is rounded down to a multiple of the xorb count.
  std::vector<std::uint8_t> reply_shard(std::uint64_t& chunks, std::uint64_t created) {
    const shard::Key& key = keys_[below(keys_.size())];
    std::vector<std::vector<shard::HashAndSize>> raw;
    // A reply names the xorbs that hold the asked chunk: one to four.
    const std::uint64_t n = std::min<std::uint64_t>(chunks, 1 + below(4));
    chunks -= chunks % n;
    shard::ShardWriter w;
    std::uint64_t stored = 0;
    for (std::uint64_t i = 0; i < n; ++i) {
      for (auto& x : xorbs_of(chunks / n, &key, raw)) {
        stored += x.header.bytes_in_xorb;
        w.add_xorb(std::move(x));
      }
    }
    shard::WriteOptions wo;  // the server's layout: no lookup tables
    wo.footer.chunk_hash_key = key;
    wo.footer.creation_timestamp = created;
    wo.footer.key_expiry = created + 7 * kDay;
    wo.footer.stored_bytes = stored;
    return w.write(wo);
  }

  std::uint64_t pick(std::uint64_t lo, std::uint64_t hi) { return lo + below(hi - lo); }

 private:
  std::mt19937_64 rng_;
  std::vector<shard::Key> keys_;
  std::vector<shard::FileRecord> earlier_files_;
};

void write_shard(const fs::path& dir, const std::vector<std::uint8_t>& bytes, std::uint64_t mtime) {
  const std::string name = shard::shard_file_hash(bytes).to_string() + ".mdb";
  const fs::path tmp = dir / ("." + name.substr(0, 64) + ".mdb_temp");
  {
    std::ofstream f(tmp, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    if (!f) die("cannot write " + tmp.string());
  }
  const timespec times[2] = {{std::time_t(mtime), 0}, {std::time_t(mtime), 0}};
  if (::utimensat(AT_FDCWD, tmp.c_str(), times, 0) != 0) die("cannot set the mtime of " + tmp.string());
  fs::rename(tmp, dir / name);
}

Options parse(int argc, char** argv) {
  Options o;
  auto need = [&](int& i) -> const char* {
    if (i + 1 >= argc) die(std::string(argv[i]) + " needs a value");
    return argv[++i];
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--dir") o.dir = need(i);
    else if (a == "--shards") o.shards = std::uint32_t(std::strtoul(need(i), nullptr, 10));
    else if (a == "--mib") o.mib = std::strtod(need(i), nullptr);
    else if (a == "--keyed-percent") o.keyed_percent = std::uint32_t(std::strtoul(need(i), nullptr, 10));
    else if (a == "--keys") o.keys = std::uint32_t(std::strtoul(need(i), nullptr, 10));
    else if (a == "--seed") o.seed = std::strtoull(need(i), nullptr, 10);
    else if (a == "--now") o.now = std::strtoull(need(i), nullptr, 10);
    else
      die("usage: make_xet_cache --dir SHARD_CACHE --shards N --mib M [--keyed-percent P] [--keys K] "
          "[--seed S] [--now UNIX_SECONDS]");
  }
  if (o.dir.empty() || o.shards == 0 || o.mib <= 0 || o.keyed_percent > 100) die("--dir, --shards and --mib needed");
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  fs::create_directories(o.dir);
  Generator g(o);

  // Log-uniform weights over [1, 256], scaled to the total.
  std::vector<double> weights(o.shards);
  double sum = 0;
  for (auto& w : weights) {
    w = std::exp(std::log(256.0) * double(g.below(1u << 20)) / double(1u << 20));
    sum += w;
  }
  const double total = o.mib * 1024 * 1024;
  std::uint64_t bytes = 0, chunks = 0, keyed = 0;
  for (std::uint32_t i = 0; i < o.shards; ++i) {
    const auto target = std::uint64_t(total * weights[i] / sum);
    std::uint64_t n = std::max<std::uint64_t>(1, (target - std::min(target, kShardOverhead)) / kBytesPerChunk);
    const bool is_reply = g.below(100) < o.keyed_percent;
    // Creation: replies within the week they live, sessions within 20 days,
    // so nothing is expired when the benchmark runs.
    const std::uint64_t created =
        is_reply ? g.pick(o.now - 6 * kDay, o.now - 600) : g.pick(o.now - 20 * kDay, o.now - 600);
    auto shard_bytes = is_reply ? g.reply_shard(n, created) : g.upload_shard(n, created);
    write_shard(o.dir, shard_bytes, created);
    bytes += shard_bytes.size();
    chunks += n;
    keyed += is_reply;
  }
  std::printf("{\"files\": %u, \"bytes\": %llu, \"chunk_entries\": %llu, \"keyed\": %llu}\n", o.shards,
              (unsigned long long)bytes, (unsigned long long)chunks, (unsigned long long)keyed);
  return 0;
}
