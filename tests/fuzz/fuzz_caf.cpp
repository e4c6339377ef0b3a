// libFuzzer target: CAF bundle reader (and every *.mdb member through the
// shard reader, as the daemon does). Malformed input must be an error, never
// a crash. The Software Heritage reader has its own target (fuzz_swh).
#include <cstddef>
#include <cstdint>
#include <span>

#include "shard/caf.hpp"
#include "shard/reader.hpp"

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
  return 0;
}
