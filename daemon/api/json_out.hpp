// A minimal JSON appender for the hot routes (chunk lookups), where building
// an nlohmann document per location would cost more than the LMDB reads.
// It writes only hashes, integers, booleans and keys we choose, so nothing
// it emits needs escaping.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "shard/hash.hpp"

namespace dedupd::daemon::http {

class JsonOut {
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
  // A hash in the Xet string form, quoted.
  JsonOut& hash(const shard::Hash& h) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::size_t at = out_.size();
    out_.resize(at + 66);
    char* p = out_.data() + at;
    *p++ = '"';
    for (int w = 0; w < 4; ++w) {
      std::uint64_t v = h.word(w);
      for (int d = 15; d >= 0; --d) {
        p[d] = kDigits[v & 0xF];
        v >>= 4;
      }
      p += 16;
    }
    *p = '"';
    return *this;
  }

 private:
  std::string& out_;
};

}  // namespace dedupd::daemon::http
