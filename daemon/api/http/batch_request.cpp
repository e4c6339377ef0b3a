#include "daemon/api/http/batch_request.hpp"

#include <fmt/format.h>

#include <array>
#include <cstring>

namespace dedupd::daemon::api::http {

namespace {

constexpr std::string_view kShape = R"(body must be {"hashes": ["<hash>", ...]})";

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

// The Xet string form of exactly 64 digits, as shard::Hash::parse reads it;
// false on any other byte (the caller asks Hash::parse for the message).
bool parse_hash_fast(const char* text, shard::Hash& out) {
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

bool json_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
bool line_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// A key or hash for an error message: printable ASCII only, shortened.
std::string shown(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, 64)) out += (c >= 0x20 && c < 0x7F) ? c : '?';
  if (text.size() > 64) out += "...";
  return out;
}

}  // namespace

HashStreamParser::Form HashStreamParser::form_of(std::string_view content_type) {
  std::string_view type = content_type.substr(0, content_type.find(';'));
  while (!type.empty() && type.back() == ' ') type.remove_suffix(1);
  return type == "text/plain" ? Form::lines : Form::json;
}

bool HashStreamParser::fail(std::string message) {
  if (error_.empty()) error_ = std::move(message);
  return false;
}

bool HashStreamParser::emit(const shard::Hash& h, HashSink& sink) {
  if (count_ == max_) return fail(fmt::format("too many hashes: at most {} per request", max_));
  ++count_;
  if (!sink.put(h)) return fail("the hashes could not be kept for the answer");
  return true;
}

bool HashStreamParser::reject_hash(std::string_view text) {
  std::string why;
  if (len_ > kKeep) {
    why = fmt::format("{} characters, a hash has 64", len_);
  } else {
    auto parsed = shard::Hash::parse(text);
    why = parsed ? std::string("not in the Xet string form") : parsed.error().message;
  }
  if (form_ == Form::lines) return fail(fmt::format("line {} is not a hash: {} ('{}')", line_, why, shown(text)));
  return fail(fmt::format("hashes[{}] is not a hash: {}", count_, why));
}

bool HashStreamParser::end_item(HashSink& sink) {
  shard::Hash h;
  if (len_ == 64 && parse_hash_fast(text_, h)) return emit(h, sink);
  return reject_hash(std::string_view(text_, std::min(len_, kKeep)));
}

bool HashStreamParser::end_line(HashSink& sink) {
  bool ok = true;
  if (len_ > 0) {
    shard::Hash h;
    ok = len_ == 64 && parse_hash_fast(text_, h) ? emit(h, sink)
                                                 : reject_hash(std::string_view(text_, std::min(len_, kKeep)));
  }
  len_ = 0;
  trailing_space_ = false;
  ++line_;
  return ok;
}

// One character of a key or hash string (after the opening quote).
bool HashStreamParser::string_byte(char c, HashSink& sink) {
  auto keep = [this](char k) {
    if (len_ < kKeep) text_[len_] = k;
    ++len_;
  };
  if (escape_ == 1) {
    escape_ = 0;
    switch (c) {
      case '"':
      case '\\':
      case '/':
        keep(c);
        return true;
      case 'b':
        keep('\b');
        return true;
      case 'f':
        keep('\f');
        return true;
      case 'n':
        keep('\n');
        return true;
      case 'r':
        keep('\r');
        return true;
      case 't':
        keep('\t');
        return true;
      case 'u':
        escape_ = 2;
        code_ = 0;
        return true;
      default:
        return fail(fmt::format("body is not valid JSON: bad escape '\\{}' at byte {}", shown({&c, 1}), at_));
    }
  }
  if (escape_ >= 2) {
    std::uint8_t v = kHexValue[static_cast<unsigned char>(c)];
    if (v == 0xFF) return fail(fmt::format("body is not valid JSON: bad \\u escape at byte {}", at_));
    code_ = code_ << 4 | v;
    if (++escape_ == 6) {
      escape_ = 0;
      // Nothing outside ASCII is part of a hash or of the key "hashes".
      keep(code_ < 0x80 ? char(code_) : char(0x7F));
    }
    return true;
  }
  if (c == '\\') {
    escape_ = 1;
    return true;
  }
  if (static_cast<unsigned char>(c) < 0x20)
    return fail(fmt::format("body is not valid JSON: control character in a string at byte {}", at_));
  if (c != '"') {
    keep(c);
    return true;
  }
  if (state_ == State::item) {
    state_ = State::comma_or_close;
    return end_item(sink);
  }
  // The end of a key: only "hashes" is one.
  std::string_view key(text_, std::min(len_, kKeep));
  if (len_ != 6 || key != "hashes")
    return fail(fmt::format("{}: unknown field \"{}\" at byte {}", kShape, shown(key), at_));
  if (seen_hashes_) return fail(fmt::format("{}: \"hashes\" appears twice (byte {})", kShape, at_));
  seen_hashes_ = true;
  state_ = State::colon;
  return true;
}

bool HashStreamParser::json_byte(char c, HashSink& sink) {
  if (state_ == State::key || state_ == State::item) return string_byte(c, sink);
  if (json_space(c)) return true;
  auto syntax = [&](std::string_view want) {
    return fail(fmt::format("body is not valid JSON: {} expected at byte {}, found '{}'", want, at_, shown({&c, 1})));
  };
  switch (state_) {
    case State::start:
      if (c == '{') {
        state_ = State::key_or_end;
        return true;
      }
      return fail(fmt::format("{}; it does not start with '{{'", kShape));
    case State::key_or_end:
      if (c == '}') return fail(fmt::format("{}; \"hashes\" is missing", kShape));
      [[fallthrough]];
    case State::key_expected:
      if (c != '"') return syntax("a key");
      state_ = State::key;
      len_ = 0;
      return true;
    case State::colon:
      if (c != ':') return syntax("':'");
      state_ = State::array_open;
      return true;
    case State::array_open:
      if (c != '[') return fail(fmt::format("{}; \"hashes\" is not an array (byte {})", kShape, at_));
      state_ = State::item_or_close;
      return true;
    case State::item_or_close:
      if (c == ']') {
        state_ = State::next_key;
        return true;
      }
      [[fallthrough]];
    case State::item_expected:
      if (c != '"') {
        if (c == '{' || c == '[' || c == '-' || (c >= '0' && c <= '9') || c == 't' || c == 'f' || c == 'n')
          return fail(fmt::format("hashes[{}] is not a string", count_));
        return syntax("a string");
      }
      state_ = State::item;
      len_ = 0;
      return true;
    case State::comma_or_close:
      if (c == ',') {
        state_ = State::item_expected;
        return true;
      }
      if (c == ']') {
        state_ = State::next_key;
        return true;
      }
      return syntax("',' or ']'");
    case State::next_key:
      if (c == ',') {
        state_ = State::key_expected;
        return true;
      }
      if (c == '}') {
        state_ = State::done;
        return true;
      }
      return syntax("',' or '}'");
    case State::done:
      return fail(fmt::format("body is not valid JSON: text after the document at byte {}", at_));
    default:
      return fail("internal: unexpected parser state");
  }
}

bool HashStreamParser::feed(std::string_view bytes, HashSink& sink) {
  if (failed()) return false;
  if (form_ == Form::lines && state_ == State::start) state_ = State::line;
  const char* p = bytes.data();
  const char* end = p + bytes.size();
  shard::Hash h;
  while (p < end) {
    if (form_ == Form::lines) {
      // The common line, a whole hash and its newline in this piece.
      if (len_ == 0 && !trailing_space_ && end - p >= 65 && p[64] == '\n' && parse_hash_fast(p, h)) {
        if (!emit(h, sink)) return false;
        p += 65;
        at_ += 65;
        ++line_;
        continue;
      }
      char c = *p++;
      ++at_;
      if (c == '\n') {
        if (!end_line(sink)) return false;
      } else if (line_space(c)) {
        trailing_space_ = len_ > 0;
      } else if (trailing_space_) {
        return fail(fmt::format("line {} has more than one word; one hash a line", line_));
      } else {
        if (len_ < kKeep) text_[len_] = c;
        ++len_;
      }
      continue;
    }
    // A whole quoted hash in this piece, without escapes.
    if ((state_ == State::item_or_close || state_ == State::item_expected) && *p == '"' && end - p >= 66 &&
        p[65] == '"' && parse_hash_fast(p + 1, h)) {
      if (!emit(h, sink)) return false;
      p += 66;
      at_ += 66;
      state_ = State::comma_or_close;
      continue;
    }
    if (!json_byte(*p++, sink)) return false;
    ++at_;
  }
  return true;
}

bool HashStreamParser::finish(HashSink& sink) {
  if (failed()) return false;
  if (form_ == Form::lines) return len_ == 0 || end_line(sink);
  switch (state_) {
    case State::done:
      return true;
    case State::start:
      return fail("body is not valid JSON: it is empty");
    default:
      return fail(fmt::format("body is not valid JSON: it ends at byte {} inside the document", at_));
  }
}

namespace {
struct VectorSink : HashSink {
  std::vector<shard::Hash> hashes;
  bool put(const shard::Hash& h) override {
    hashes.push_back(h);
    return true;
  }
};
}  // namespace

HashBatch parse_hash_batch(std::string_view body, std::size_t max_hashes) {
  HashStreamParser parser(HashStreamParser::Form::json, max_hashes);
  VectorSink sink;
  if (!parser.feed(body, sink) || !parser.finish(sink)) return parser.error();
  return std::move(sink.hashes);
}

}  // namespace dedupd::daemon::api::http
