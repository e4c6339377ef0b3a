// libFuzzer target: the Software Heritage read-shard reader (dedupctl
// lookup-snapshot opens files it is given). Malformed input must be an error,
// never a crash, and every slot it accepts must look up without one.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "swh/read_shard.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto reader = dedupd::swh::Reader::from_bytes(std::span<const std::uint8_t>(data, size));
  if (!reader) return 0;
  dedupd::swh::Key key{};
  const std::size_t take = size < key.size() ? size : key.size();
  if (take) std::memcpy(key.data(), data + size - take, take);
  (void)reader->lookup(key);
  for (std::uint64_t s = 0; s < reader->slots() && s < 64; ++s) {
    auto e = reader->entry(s);
    if (!e.empty()) (void)reader->lookup(e.key);
  }
  return 0;
}
