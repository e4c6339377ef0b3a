// The body of POST /v1/chunk, parsed as it arrives: bytes go in in pieces of
// any size, hashes come out in request order, and nothing but the piece of
// a hash cut at a boundary is kept, so a body of any length costs the same
// few bytes. Two forms (docs/API.md):
//   json:  {"hashes": ["<hash>", ...]} with any JSON whitespace and string
//          escapes; no other field (an unknown field is a mistake worth a 400)
//   lines: one hash a line; blank lines and spaces around a hash are ignored
// Errors name the byte (json) or the line (lines) where the body went wrong.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "shard/hash.hpp"

namespace dedupd::daemon::api::http {

// Receives the hashes, in order.
class HashSink {
 public:
  virtual ~HashSink() = default;
  // false stops the parse (the sink's own failure, e.g. a full disk).
  virtual bool put(const shard::Hash& hash) = 0;
};

class HashStreamParser {
 public:
  enum class Form { json, lines };
  // text/plain is the lines form, anything else json.
  static Form form_of(std::string_view content_type);
  explicit HashStreamParser(Form form, std::uint64_t max_hashes = UINT64_MAX) : form_(form), max_(max_hashes) {}

  // The next bytes of the body. false once the body is known to be bad (or
  // the sink refused a hash); error() says why, and later calls do nothing.
  bool feed(std::string_view bytes, HashSink& sink);
  // The body has ended: false if it ended early (an unclosed document).
  bool finish(HashSink& sink);

  bool failed() const { return !error_.empty(); }
  const std::string& error() const { return error_; }
  std::uint64_t hashes() const { return count_; }

 private:
  enum class State : std::uint8_t {
    start,           // json: before '{'
    key_or_end,      // after '{': a key or '}'
    key_expected,    // after ',': a key
    key,             // in a key string
    colon,           // after the key
    array_open,      // after "hashes": expecting '['
    item_or_close,   // after '[': a string or ']'
    item_expected,   // after ',': a string
    item,            // in a hash string
    comma_or_close,  // after an item
    next_key,        // after the array: ',' (another key) or '}'
    done,            // after the final '}': only whitespace
    line,            // lines: in or between lines
  };

  bool fail(std::string message);
  bool json_byte(char c, HashSink& sink);
  bool string_byte(char c, HashSink& sink);
  bool end_item(HashSink& sink);
  bool end_line(HashSink& sink);
  bool emit(const shard::Hash& h, HashSink& sink);
  bool reject_hash(std::string_view text);

  Form form_;
  std::uint64_t max_;
  State state_ = State::start;
  std::string error_;
  std::uint64_t count_ = 0;
  std::uint64_t at_ = 0;    // bytes consumed: the position errors name
  std::uint64_t line_ = 1;  // lines form: the line being read
  bool seen_hashes_ = false;
  // The string being read (a key or a hash), decoded; only the first
  // kKeep characters are kept, len_ counts them all.
  static constexpr std::size_t kKeep = 72;
  char text_[kKeep] = {};
  std::size_t len_ = 0;
  // Within a string: 0 plain, 1 after '\', 2..5 reading \uXXXX digits.
  std::uint8_t escape_ = 0;
  std::uint32_t code_ = 0;
  bool trailing_space_ = false;  // lines: a space followed the hash
};

// The json form of a whole body at once (tests, fuzzing, benchmarks).
using HashBatch = std::variant<std::vector<shard::Hash>, std::string>;
HashBatch parse_hash_batch(std::string_view body, std::size_t max_hashes);

}  // namespace dedupd::daemon::api::http
