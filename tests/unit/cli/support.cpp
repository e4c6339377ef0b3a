#include "support.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "cli/app.hpp"

namespace dedupctl::testing {

SmallXorb small_xorb(std::uint8_t first) {
  namespace shard = dedupd::shard;
  SmallXorb x;
  for (std::uint32_t i = 0; i < 3; ++i) {
    shard::ChunkEntry c;
    c.chunk_hash.bytes.fill(std::uint8_t(first + i));
    c.byte_start = i * 1000;
    c.unpacked_bytes = 1000;
    x.leaves.push_back({c.chunk_hash, 1000});
    x.record.chunks.push_back(c);
  }
  x.record.header.xorb_hash = shard::xorb_hash(x.leaves);
  x.record.header.bytes_in_xorb = 3000;
  x.record.header.bytes_on_disk = 2000;
  return x;
}

Outcome run_cli(const std::vector<std::string>& args, const RunOptions& options) {
  std::ostringstream out, err;
  std::istringstream in(options.stdin_text);
  Io io{out, err, in, options.tty, [&](const char* name) -> std::optional<std::string> {
          auto it = options.env.find(name);
          if (it == options.env.end()) return std::nullopt;
          return it->second;
        }};
  int code = run(args, io);
  return {code, out.str(), err.str()};
}

std::string fixture(const std::string& name) { return std::string(DEDUPD_FIXTURE_DIR) + "/" + name; }

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + path);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

std::vector<std::uint8_t> shard_with_file(bool with_footer) {
  namespace shard = dedupd::shard;
  shard::ShardWriter w;
  auto [x, leaves] = small_xorb(1);
  shard::FileRecord f;
  f.header.file_hash = shard::file_hash(leaves);
  shard::FileTerm t;
  t.xorb_hash = x.header.xorb_hash;
  t.chunk_start = 0;
  t.chunk_end = 3;
  t.unpacked_bytes = 3000;
  f.terms.push_back(t);
  std::vector<shard::Hash> raw = {leaves[0].hash, leaves[1].hash, leaves[2].hash};
  shard::HashRecord v;
  v.hash = shard::verification_range_hash(raw);
  f.verification.push_back(v);
  shard::HashRecord sha;
  sha.hash = shard::Hash::parse_hex_bytes(std::string(64, 'a')).value();
  f.metadata_ext = sha;
  w.add_xorb(x);
  w.add_file(f);
  shard::WriteOptions o;
  o.with_footer = with_footer;
  o.lookup_tables = shard::LookupTables::build;
  o.footer.creation_timestamp = 1754059905;
  o.footer.key_expiry = shard::kNoExpiry;
  return w.write(o);
}

}  // namespace dedupctl::testing
