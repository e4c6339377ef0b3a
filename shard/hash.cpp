#include "shard/hash.hpp"

#include <bit>

namespace dedupd::shard {

static_assert(std::endian::native == std::endian::little, "dedupd reads little-endian shard fields in place");

namespace {
constexpr char kDigits[] = "0123456789abcdef";

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

base::Result<Hash> check_length(std::string_view text) {
  if (text.size() != 64)
    return base::Error{"hash.length", 0, "a hash has exactly 64 hex digits, got " + std::to_string(text.size())};
  for (std::size_t i = 0; i < text.size(); ++i)
    if (hex_value(text[i]) < 0) return base::Error{"hash.digit", i, std::string("not a hex digit: '") + text[i] + "'"};
  return Hash{};
}
}  // namespace

base::Result<Hash> Hash::parse(std::string_view text) {
  auto checked = check_length(text);
  if (!checked) return checked.error();
  Hash h;
  for (int w = 0; w < 4; ++w) {
    std::uint64_t v = 0;
    for (int d = 0; d < 16; ++d) v = (v << 4) | std::uint64_t(hex_value(text[w * 16 + d]));
    std::memcpy(h.bytes.data() + 8 * w, &v, 8);
  }
  return h;
}

base::Result<Hash> Hash::parse_hex_bytes(std::string_view text) {
  auto checked = check_length(text);
  if (!checked) return checked.error();
  Hash h;
  for (int i = 0; i < 32; ++i) h.bytes[i] = std::uint8_t(hex_value(text[2 * i]) << 4 | hex_value(text[2 * i + 1]));
  return h;
}

std::string Hash::to_string() const {
  std::string out(64, '0');
  for (int w = 0; w < 4; ++w) {
    std::uint64_t v = word(w);
    for (int d = 15; d >= 0; --d) {
      out[w * 16 + d] = kDigits[v & 0xF];
      v >>= 4;
    }
  }
  return out;
}

std::string Hash::to_hex_bytes() const {
  std::string out(64, '0');
  for (int i = 0; i < 32; ++i) {
    out[2 * i] = kDigits[bytes[i] >> 4];
    out[2 * i + 1] = kDigits[bytes[i] & 0xF];
  }
  return out;
}

bool Hash::is_zero() const {
  for (auto b : bytes)
    if (b) return false;
  return true;
}

}  // namespace dedupd::shard
