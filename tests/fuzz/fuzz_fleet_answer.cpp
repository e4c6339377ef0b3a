// libFuzzer target: what a fleet lookup answer carries, its text forms
// (holders list, live key list) and its binary int8[] columns (the probe's
// prefixes and xorb ids). Malformed input must be an error, never a crash.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "fleet/answer_text.hpp"
#include "fleet/wire.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto shards = dedupd::fleet::parse_shard_list(text);
  if (shards) {
    std::size_t n = 0;
    for (const auto& s : *shards) n += s.holders.size();
    (void)n;
  }
  (void)dedupd::fleet::parse_key_list(text);
  std::vector<std::int64_t> values{7};
  const bool read = dedupd::fleet::wire::read_int8_array(std::span(data, size), values);
  // Refused bytes leave what was there; read ones append every element.
  if (!read && values.size() != 1) __builtin_trap();
  if (read && size > 20 && values.size() != 1 + (size - 20) / 12) __builtin_trap();
  return 0;
}
