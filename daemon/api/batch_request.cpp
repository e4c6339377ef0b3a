#include "daemon/api/batch_request.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>

namespace dedupd::daemon::http {

namespace {

std::string too_many(std::size_t max) { return fmt::format("too many hashes: at most {} per request", max); }

std::string bad_hash(std::size_t i, const shard::Error& e) {
  return fmt::format("hashes[{}] is not a hash: {}", i, e.message);
}

// Hex digit values, 0xFF for anything else. Table lookups instead of range
// tests: request hashes are random hex, on which per-digit branches
// mispredict and cost more than the LMDB reads.
constexpr std::array<std::uint8_t, 256> kHexValue = [] {
  std::array<std::uint8_t, 256> t{};
  t.fill(0xFF);
  for (int c = 0; c < 10; ++c) t['0' + c] = std::uint8_t(c);
  for (int c = 0; c < 6; ++c) t['a' + c] = t['A' + c] = std::uint8_t(10 + c);
  return t;
}();

// The Xet string form, as shard::Hash::parse reads it; false on any bad
// digit or length (the caller asks Hash::parse for the message).
bool parse_hash_fast(std::string_view text, shard::Hash& out) {
  if (text.size() != 64) return false;
  std::uint8_t bad = 0;
  for (int w = 0; w < 4; ++w) {
    std::uint64_t v = 0;
    for (int d = 0; d < 16; ++d) {
      std::uint8_t x = kHexValue[static_cast<unsigned char>(text[w * 16 + d])];
      bad |= x;
      v = (v << 4) | (x & 0xF);
    }
    std::memcpy(out.bytes.data() + 8 * w, &v, 8);
  }
  return !(bad & 0x80);
}

struct Scanner {
  const char* p;
  const char* end;

  void ws() {
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) ++p;
  }
  bool take(char c) {
    ws();
    if (p < end && *p == c) {
      ++p;
      return true;
    }
    return false;
  }
  bool take(std::string_view s) {
    ws();
    if (std::size_t(end - p) >= s.size() && std::memcmp(p, s.data(), s.size()) == 0) {
      p += s.size();
      return true;
    }
    return false;
  }
};

// nullopt: not the plain shape, use the full parser.
std::optional<HashBatch> scan_plain(std::string_view body, std::size_t max) {
  Scanner s{body.data(), body.data() + body.size()};
  if (!s.take('{') || !s.take("\"hashes\"") || !s.take(':') || !s.take('[')) return std::nullopt;
  std::vector<shard::Hash> out;
  // Most hashes take 67 bytes ("<64>",); reserve from that, within the cap.
  out.reserve(std::min(max, body.size() / 67 + 1));
  if (!s.take(']')) {
    for (;;) {
      if (!s.take('"')) return std::nullopt;
      const char* close = static_cast<const char*>(std::memchr(s.p, '"', std::size_t(s.end - s.p)));
      if (!close) return std::nullopt;
      std::string_view text(s.p, std::size_t(close - s.p));
      if (text.find('\\') != std::string_view::npos) return std::nullopt;
      s.p = close + 1;
      if (out.size() == max) return HashBatch(too_many(max));
      shard::Hash& h = out.emplace_back();
      if (!parse_hash_fast(text, h)) {
        out.pop_back();
        auto parsed = shard::Hash::parse(text);
        if (!parsed) return HashBatch(bad_hash(out.size(), parsed.error()));
        out.push_back(*parsed);  // not expected: both parsers accept the same
      }
      if (s.take(',')) continue;
      if (s.take(']')) break;
      return std::nullopt;
    }
  }
  if (!s.take('}')) return std::nullopt;
  s.ws();
  if (s.p != s.end) return std::nullopt;
  return HashBatch(std::move(out));
}

HashBatch parse_full(std::string_view body, std::size_t max) {
  nlohmann::json doc = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return std::string("body is not valid JSON");
  if (!doc.is_object() || !doc.contains("hashes") || !doc["hashes"].is_array())
    return std::string(R"(body must be {"hashes": ["<hash>", ...]})");
  const auto& list = doc["hashes"];
  if (list.size() > max) return too_many(max);
  std::vector<shard::Hash> out;
  out.reserve(list.size());
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (!list[i].is_string()) return fmt::format("hashes[{}] is not a string", i);
    auto h = shard::Hash::parse(list[i].get_ref<const std::string&>());
    if (!h) return bad_hash(i, h.error());
    out.push_back(*h);
  }
  return out;
}

}  // namespace

HashBatch parse_hash_batch(std::string_view body, std::size_t max_hashes) {
  if (auto plain = scan_plain(body, max_hashes)) return std::move(*plain);
  return parse_full(body, max_hashes);
}

}  // namespace dedupd::daemon::http
