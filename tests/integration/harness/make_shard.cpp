#include "harness/make_shard.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "shard/writer.hpp"

namespace dedupd::itest {

namespace {
std::uint64_t splitmix(std::uint64_t& s) {
  std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
}  // namespace

MadeShard make_shard(const ShardSpec& spec) {
  MadeShard out;
  shard::ShardWriter writer;
  std::uint64_t state = spec.seed * 0x100000001B3ull + 7;
  for (std::uint32_t x = 0; x < spec.xorbs; ++x) {
    shard::XorbRecord xr;
    std::vector<shard::HashAndSize> leaves;
    std::uint32_t offset = 0;
    for (std::uint32_t c = 0; c < spec.chunks_per_xorb; ++c) {
      shard::Hash raw;
      for (int w = 0; w < 4; ++w) {
        std::uint64_t v = splitmix(state);
        std::memcpy(raw.bytes.data() + 8 * w, &v, 8);
      }
      std::uint32_t size = 4096 + std::uint32_t(splitmix(state) % 60000);
      if (c == 0) out.first_chunks.push_back(raw);
      out.raw_chunks.push_back(raw);
      leaves.push_back({raw, size});
      shard::ChunkEntry e;
      e.chunk_hash = spec.key ? shard::keyed_chunk_hash(*spec.key, raw) : raw;
      e.byte_start = offset;
      e.unpacked_bytes = size;
      xr.chunks.push_back(e);
      offset += size;
    }
    xr.header.xorb_hash = shard::xorb_hash(leaves);
    xr.header.bytes_in_xorb = offset;
    xr.header.bytes_on_disk = offset / 2;
    out.xorbs.push_back(xr.header.xorb_hash);
    out.chunks += spec.chunks_per_xorb;
    if (spec.client_style) {
      shard::FileRecord f;
      f.header.file_hash = shard::file_hash(leaves);
      shard::FileTerm t;
      t.xorb_hash = xr.header.xorb_hash;
      t.chunk_start = 0;
      t.chunk_end = spec.chunks_per_xorb;
      t.unpacked_bytes = offset;
      f.terms.push_back(t);
      std::vector<shard::Hash> raws;
      for (const auto& l : leaves) raws.push_back(l.hash);
      f.verification.push_back({shard::verification_range_hash(raws)});
      f.metadata_ext = shard::HashRecord{shard::chunk_hash_of_data(f.header.file_hash.bytes)};
      writer.add_file(std::move(f));
    }
    writer.add_xorb(std::move(xr));
  }
  shard::WriteOptions options;
  if (spec.client_style) options.lookup_tables = shard::LookupTables::build;
  options.footer.creation_timestamp = spec.created;
  options.footer.key_expiry = spec.expiry.value_or(shard::kNoExpiry);
  if (spec.key) options.footer.chunk_hash_key = *spec.key;
  out.bytes = writer.write(options);
  out.file_hash = shard::shard_file_hash(out.bytes);
  return out;
}

std::filesystem::path drop_file(const std::filesystem::path& dir, const std::string& name,
                                const std::vector<std::uint8_t>& bytes) {
  auto tmp = dir / ("." + name + ".mdb_temp");
  // O_CLOEXEC: a test that starts a program meanwhile (dedupctl, another
  // dedupd) must not hand it the file open for writing. dedupd 0.1.0 then
  // saw the shard "open for writing" and never took it in (compat tests).
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("cannot create " + tmp.string() + ": " + std::strerror(errno));
  for (std::size_t done = 0; done < bytes.size();) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      throw std::runtime_error("cannot write " + tmp.string() + ": " + std::strerror(errno));
    }
    done += std::size_t(n);
  }
  ::close(fd);
  std::filesystem::rename(tmp, dir / name);
  return dir / name;
}

}  // namespace dedupd::itest
