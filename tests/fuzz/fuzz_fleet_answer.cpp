// libFuzzer target: the text forms a fleet lookup answer carries (holders
// list with CAS sets, live key list). Malformed input must be an error, never a crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fleet/answer_text.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto shards = dedupd::fleet::parse_shard_list(text);
  if (shards) {
    std::size_t n = 0;
    for (const auto& s : *shards) n += s.holders.size() + s.cas.size();
    (void)n;
  }
  (void)dedupd::fleet::parse_key_list(text);
  return 0;
}
