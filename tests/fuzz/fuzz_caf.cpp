// libFuzzer target: CAF bundle reader (and every *.mdb member through the
// shard reader, as the daemon does), plus the Software Heritage read-shard
// reader on the same bytes. Malformed input must be an error, never a crash.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "shard/caf.hpp"
#include "shard/reader.hpp"
#include "swh/read_shard.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::span<const std::uint8_t> bytes(data, size);

  auto bundle = dedupd::shard::caf::BundleView::parse(bytes);
  if (bundle) {
    for (const auto* m : bundle->shard_members()) {
      auto shard = dedupd::shard::ShardView::parse(m->bytes);
      if (shard) {
        std::size_t n = 0;
        for (auto x : shard->xorbs()) n += x.num_chunks();
        (void)n;
      }
    }
    (void)bundle->other_members();
  }

  auto reader = dedupd::swh::Reader::from_bytes(bytes);
  if (reader) {
    dedupd::swh::Key key{};
    const std::size_t take = size < key.size() ? size : key.size();
    if (take) std::memcpy(key.data(), data + size - take, take);
    (void)reader->lookup(key);
    for (std::uint64_t s = 0; s < reader->slots() && s < 64; ++s) {
      auto e = reader->entry(s);
      if (!e.empty()) (void)reader->lookup(e.key);
    }
  }
  return 0;
}
