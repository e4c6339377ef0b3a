// A minimal JSON appender for the hot routes (chunk lookups), where building
// an nlohmann document per location would cost more than the LMDB reads.
// It writes only hashes, integers, booleans and keys we choose, so nothing
// it emits needs escaping.
#pragma once

#include <array>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "shard/hash.hpp"

namespace dedupd::daemon::api::render {

class JsonOut {
  static constexpr std::array<char, 512> kHexPairs = [] {
    std::array<char, 512> t{};
    constexpr char kDigits[] = "0123456789abcdef";
    for (int i = 0; i < 256; ++i) t[2 * i] = kDigits[i >> 4], t[2 * i + 1] = kDigits[i & 15];
    return t;
  }();

 public:
  explicit JsonOut(std::string& out) : out_(out) {}

  JsonOut& raw(std::string_view s) {
    out_.append(s);
    return *this;
  }
  JsonOut& ch(char c) {
    out_.push_back(c);
    return *this;
  }
  // "name": (the name is one of ours: no escaping)
  JsonOut& key(std::string_view name) {
    out_.push_back('"');
    out_.append(name);
    out_.append("\":");
    return *this;
  }
  JsonOut& num(std::uint64_t v) {
    char buf[24];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    (void)ec;  // 24 digits always fit a u64
    out_.append(buf, end);
    return *this;
  }
  JsonOut& opt_num(const std::optional<std::uint64_t>& v) { return v ? num(*v) : raw("null"); }
  JsonOut& boolean(bool v) { return raw(v ? "true" : "false"); }
  // A hash in the Xet string form, quoted: each word's bytes most
  // significant first, two digits a byte from one table.
  JsonOut& hash(const shard::Hash& h) {
    std::size_t at = out_.size();
    out_.resize(at + 66);
    char* p = out_.data() + at;
    *p++ = '"';
    for (int w = 0; w < 4; ++w) {
      std::uint64_t v = h.word(w);
      for (int b = 7; b >= 0; --b, v >>= 8) std::memcpy(p + 2 * b, kHexPairs.data() + 2 * (v & 0xFF), 2);
      p += 16;
    }
    *p = '"';
    return *this;
  }

 private:
  std::string& out_;
};

}  // namespace dedupd::daemon::api::render
