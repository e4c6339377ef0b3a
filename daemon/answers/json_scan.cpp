#include "daemon/answers/json_scan.hpp"

#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace dedupd::daemon::answers {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// The bytes a string's plain run stops at: its end, an escape, a control
// character, and the start of a multi-byte UTF-8 sequence.
struct StringStops {
  bool stop[256] = {};
  constexpr StringStops() {
    for (int c = 0; c < 0x20; ++c) stop[c] = true;
    for (int c = 0x80; c < 0x100; ++c) stop[c] = true;
    stop[int('"')] = stop[int('\\')] = true;
  }
};
constexpr StringStops kStringStops;

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

// The length of the UTF-8 sequence at the start of `s` (RFC 3629: no
// overlong forms, no surrogates, nothing past U+10FFFF), 0 when it is none.
std::size_t utf8_sequence(std::string_view s) {
  auto b = [&](std::size_t i) { return i < s.size() ? std::uint8_t(s[i]) : 0; };
  auto cont = [&](std::size_t i, std::uint8_t lo = 0x80, std::uint8_t hi = 0xBF) { return b(i) >= lo && b(i) <= hi; };
  std::uint8_t c = b(0);
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c == 0xE0) return cont(1, 0xA0) && cont(2) ? 3 : 0;
  if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) return cont(1) && cont(2) ? 3 : 0;
  if (c == 0xED) return cont(1, 0x80, 0x9F) && cont(2) ? 3 : 0;
  if (c == 0xF0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (c >= 0xF1 && c <= 0xF3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (c == 0xF4) return cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

}  // namespace

bool JsonScanner::fail(std::string what) {
  if (error_.empty()) error_ = "byte " + std::to_string(at_) + ": " + std::move(what);
  at_ = text_.size();
  return false;
}

void JsonScanner::space() {
  while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\n' || text_[at_] == '\r' || text_[at_] == '\t'))
    ++at_;
}

bool JsonScanner::expect(char c) {
  space();
  if (at_ < text_.size() && text_[at_] == c) {
    ++at_;
    return true;
  }
  return fail(std::string("'") + c + "' expected");
}

char JsonScanner::peek() {
  space();
  return failed() || at_ >= text_.size() ? '\0' : text_[at_];
}

bool JsonScanner::at_end() {
  space();
  return !failed() && at_ == text_.size();
}

bool JsonScanner::object() { return !failed() && expect('{'); }
bool JsonScanner::array() { return !failed() && expect('['); }

bool JsonScanner::key_and_colon(std::string* key) {
  if (peek() != '"') return fail("a member's name expected");
  return scan_string(key) && expect(':');
}

bool JsonScanner::next(char close, bool& first) {
  if (failed()) return false;
  if (peek() == close) {
    ++at_;
    return false;
  }
  if (!first && !expect(',')) return false;
  first = false;
  return true;
}

bool JsonScanner::member(bool& first, std::string& key) {
  if (!next('}', first)) return false;
  key.clear();
  return key_and_colon(&key);
}

bool JsonScanner::element(bool& first) { return next(']', first) && !failed(); }

std::optional<std::size_t> JsonScanner::plain_string_length() const {
  const char* const p = text_.data() + at_;
  const std::size_t n = text_.size() - at_;
  std::size_t i = 0;
  // Most strings (keys, hashes, URLs) are plain up to their closing quote:
  // found a block at a time, with the first byte that is a quote, a
  // backslash, a control character or 0x80 or more (keys are a few bytes:
  // one pass, no memchr call). Sixteen bytes a step where SSE2 is (every
  // x86-64; URLs of a few hundred bytes are most of a reconstruction
  // answer's text), with signed compares: a byte of 0x80 or more is
  // negative, so "below 0x20" flags it too.
#if defined(__SSE2__)
  {
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'), space = _mm_set1_epi8(0x20);
    for (; i + 16 <= n; i += 16) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
      const __m128i special =
          _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)), _mm_cmplt_epi8(v, space));
      const unsigned mask = unsigned(_mm_movemask_epi8(special));
      if (mask != 0) {
        const std::size_t at = i + std::size_t(std::countr_zero(mask));
        if (p[at] == '"') return at;
        return std::nullopt;
      }
    }
  }
#endif
  // Then (or elsewhere) eight bytes a step. In each mask the lowest byte
  // flagged is exact (a borrow only flags bytes above a flagged one), so
  // the lowest of them all is the first such byte: a little-endian word's
  // lowest byte comes first in the text.
  if constexpr (std::endian::native == std::endian::little) {
    constexpr std::uint64_t ones = 0x0101010101010101ull, tops = 0x8080808080808080ull;
    auto zero_bytes = [](std::uint64_t x) { return (x - ones) & ~x & tops; };
    for (; i + 8 <= n; i += 8) {
      std::uint64_t w;
      std::memcpy(&w, p + i, 8);
      const std::uint64_t special =
          zero_bytes(w ^ (ones * '"')) | zero_bytes(w ^ (ones * '\\')) | ((w - ones * 0x20) & ~w & tops) | (w & tops);
      if (special != 0) {
        const std::size_t at = i + std::size_t(std::countr_zero(special)) / 8;
        if (p[at] == '"') return at;
        return std::nullopt;
      }
    }
  }
  for (; i < n; ++i) {
    const auto c = std::uint8_t(p[i]);
    if (c == '"') return i;
    if (c < 0x20 || c >= 0x80 || c == '\\') return std::nullopt;
  }
  return std::nullopt;
}

bool JsonScanner::scan_string(std::string* decoded) {
  ++at_;  // the opening quote
  const char* const s = text_.data();
  const std::size_t n = text_.size();
  if (auto len = plain_string_length()) {
    if (decoded) decoded->append(s + at_, *len);
    at_ += *len + 1;
    return true;
  }
  for (;;) {
    std::size_t run = at_;
    while (run < n && !kStringStops.stop[std::uint8_t(s[run])]) ++run;
    if (decoded) decoded->append(s + at_, run - at_);
    at_ = run;
    if (at_ >= n) return fail("a string runs past the end");
    const std::uint8_t c = std::uint8_t(s[at_]);
    if (c == '"') {
      ++at_;
      return true;
    }
    if (c < 0x20) return fail("a control character in a string");
    if (c >= 0x80) {
      std::size_t len = utf8_sequence(text_.substr(at_));
      if (len == 0) return fail("a string is not UTF-8");
      if (decoded) decoded->append(s + at_, len);
      at_ += len;
      continue;
    }
    // An escape.
    if (at_ + 1 >= n) return fail("a string runs past the end");
    const char e = s[at_ + 1];
    static constexpr std::string_view kSimple = "\"\\/bfnrt", kMeant = "\"\\/\b\f\n\r\t";
    if (auto k = kSimple.find(e); k != std::string_view::npos) {
      if (decoded) *decoded += kMeant[k];
      at_ += 2;
      continue;
    }
    if (e != 'u') return fail("a string's escape is not JSON's");
    auto code = [&](std::size_t at) -> int {
      if (at + 6 > n || s[at] != '\\' || s[at + 1] != 'u') return -1;
      int v = 0;
      for (std::size_t i = at + 2; i < at + 6; ++i) {
        int d = hex_digit(s[i]);
        if (d < 0) return -1;
        v = v * 16 + d;
      }
      return v;
    };
    int cp = code(at_);
    if (cp < 0) return fail("a string's \\u escape is not four hex digits");
    at_ += 6;
    if (cp >= 0xDC00 && cp <= 0xDFFF) return fail("a string has a low surrogate alone");
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      int low = code(at_);
      if (low < 0xDC00 || low > 0xDFFF) return fail("a string has a high surrogate alone");
      at_ += 6;
      cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    }
    if (decoded) append_utf8(*decoded, std::uint32_t(cp));
  }
}

bool JsonScanner::scan_number(std::optional<std::uint64_t>* unsigned_value) {
  const std::size_t begin = at_;
  const char* const s = text_.data();
  const std::size_t n = text_.size();
  const bool negative = s[at_] == '-';
  if (negative) ++at_;
  if (at_ >= n || !is_digit(s[at_])) return fail("a number has no digits");
  std::uint64_t value = 0;
  bool overflow = false;
  if (s[at_] == '0') {
    ++at_;
  } else {
    while (at_ < n && is_digit(s[at_])) {
      const std::uint64_t d = std::uint64_t(s[at_] - '0');
      if (value > (UINT64_MAX - d) / 10) overflow = true;
      value = value * 10 + d;
      ++at_;
    }
  }
  bool integer = true;
  if (at_ < n && s[at_] == '.') {
    integer = false;
    if (++at_ >= n || !is_digit(s[at_])) return fail("a number has no digits after its point");
    while (at_ < n && is_digit(s[at_])) ++at_;
  }
  if (at_ < n && (s[at_] == 'e' || s[at_] == 'E')) {
    integer = false;
    ++at_;
    if (at_ < n && (s[at_] == '+' || s[at_] == '-')) ++at_;
    if (at_ >= n || !is_digit(s[at_])) return fail("a number has no digits in its exponent");
    while (at_ < n && is_digit(s[at_])) ++at_;
  }
  const bool fits = integer && !overflow && (!negative || value <= std::uint64_t(INT64_MAX) + 1);
  if (!fits) {
    // Read as a double, as nlohmann does, which refuses one out of range.
    const std::string copy(text_.substr(begin, at_ - begin));
    if (!std::isfinite(std::strtod(copy.c_str(), nullptr))) return fail("a number out of range");
  }
  if (unsigned_value && fits && !negative) *unsigned_value = value;
  return true;
}

bool JsonScanner::scan_literal() {
  for (std::string_view word : {"true", "false", "null"}) {
    if (text_.substr(at_, word.size()) == word) {
      at_ += word.size();
      return true;
    }
  }
  return fail("a value expected");
}

bool JsonScanner::scan_scalar() {
  const char c = peek();
  if (c == '"') return scan_string(nullptr);
  if (c == '-' || is_digit(c)) return scan_number(nullptr);
  return scan_literal();
}

std::optional<JsonSpan> JsonScanner::skip() {
  if (failed()) return std::nullopt;
  space();
  JsonSpan span{at_, at_};
  // The containers open, each its closing character; no recursion, so
  // nesting costs memory only.
  std::vector<char> open;
  for (;;) {
    const char c = peek();
    if (c == '{' || c == '[') {
      ++at_;
      const char close = c == '{' ? '}' : ']';
      if (peek() == close) {
        ++at_;
      } else {
        open.push_back(close);
        if (close == '}' && !key_and_colon(nullptr)) return std::nullopt;
        continue;
      }
    } else if (!scan_scalar()) {
      return std::nullopt;
    }
    // After a value: the next one of its container, or its end.
    for (;;) {
      if (open.empty()) {
        span.end = at_;
        return span;
      }
      const char d = peek();
      if (d == open.back()) {
        ++at_;
        open.pop_back();
        continue;
      }
      if (d != ',') {
        fail(std::string("',' or '") + open.back() + "' expected");
        return std::nullopt;
      }
      ++at_;
      if (open.back() == '}' && !key_and_colon(nullptr)) return std::nullopt;
      break;
    }
  }
}

std::optional<std::string> JsonScanner::string(JsonSpan* where) {
  if (peek() != '"') {
    skip();
    return std::nullopt;
  }
  std::string out;
  const std::size_t begin = at_;
  if (!scan_string(&out)) return std::nullopt;
  if (where) *where = JsonSpan{begin, at_};
  return out;
}

std::optional<std::string_view> JsonScanner::string_view(std::string& scratch, JsonSpan* where) {
  if (peek() != '"') {
    skip();
    return std::nullopt;
  }
  const std::size_t begin = at_;
  ++at_;
  if (auto len = plain_string_length()) {
    const std::string_view view = text_.substr(at_, *len);
    at_ += *len + 1;
    if (where) *where = JsonSpan{begin, at_};
    return view;
  }
  at_ = begin;
  scratch.clear();
  if (!scan_string(&scratch)) return std::nullopt;
  if (where) *where = JsonSpan{begin, at_};
  return std::string_view(scratch);
}

std::optional<std::uint64_t> JsonScanner::unsigned_number() {
  const char c = peek();
  if (c != '-' && !is_digit(c)) {
    skip();
    return std::nullopt;
  }
  std::optional<std::uint64_t> value;
  if (!scan_number(&value)) return std::nullopt;
  return value;
}

}  // namespace dedupd::daemon::answers
