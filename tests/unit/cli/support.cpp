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

}  // namespace dedupctl::testing
