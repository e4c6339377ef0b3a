// A reader of JSON text that checks it as it goes (RFC 8259: what
// nlohmann's parser accepts, but a byte order mark and a NUL byte after the
// value, where nlohmann ends its input) and says where each
// value lies in it, without building a document. The download rewrite
// (reconstruction_rewrite.hpp) renames a few values of an answer of
// hundreds of KB and copies the rest as the CAS wrote it: a parse into a
// document and its dump cost it ten times the 2 ms it may take (issue 72;
// docs/PERFORMANCE.md, "Downloads").
//
// The caller walks the containers it wants to read (object, member,
// array, element) and skips the values it does not (skip). Any error
// stops the scanner: every call after it returns false or nothing, and
// error() says what and at which byte.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dedupd::daemon::answers {

// Bytes [begin, end) of the text.
struct JsonSpan {
  std::size_t begin = 0;
  std::size_t end = 0;
  std::size_t size() const { return end - begin; }
};

class JsonScanner {
 public:
  explicit JsonScanner(std::string_view text) : text_(text) {}

  // The next value's first byte ('{', '[', '"', a digit, '-', 't', 'f',
  // 'n'), after whitespace; '\0' at the end or after an error.
  char peek();

  // '{' of an object (false: no object here, an error).
  bool object();
  // The object's next member: true with its key decoded, the scanner at
  // its value (read it or skip it before the next call); false at the
  // object's end, or on an error. `first` is the caller's, true before the
  // first call of each object.
  bool member(bool& first, std::string& key);
  // '[' of an array, and its next element, as object() and member().
  bool array();
  bool element(bool& first);

  // Any value, checked whole; where it lies, or nothing on an error.
  std::optional<JsonSpan> skip();
  // A string value decoded, and where it lies (quotes included); nothing
  // when the value is no string (it is skipped) or on an error.
  std::optional<std::string> string(JsonSpan* where = nullptr);
  // The same without a copy where it can: a view of the text when the
  // string has no escape (URLs, hashes), else of `scratch`, decoded into it.
  std::optional<std::string_view> string_view(std::string& scratch, JsonSpan* where = nullptr);
  // A number value that is an integer from 0 to 2^64 - 1 written without
  // fraction or exponent (nlohmann's unsigned); nothing for any other
  // value (it is skipped) or on an error.
  std::optional<std::uint64_t> unsigned_number();

  // Whether only whitespace is left (the text is one value).
  bool at_end();

  std::size_t offset() const { return at_; }
  bool failed() const { return !error_.empty(); }
  const std::string& error() const { return error_; }

 private:
  bool fail(std::string what);
  void space();
  bool expect(char c);
  bool scan_string(std::string* decoded);
  // The plain run of a string from at_ (its content, no quote): the bytes
  // before the first quote when none of them needs decoding or is not
  // ASCII; nullopt otherwise (the scanner has not moved).
  std::optional<std::size_t> plain_string_length() const;
  bool scan_number(std::optional<std::uint64_t>* unsigned_value);
  bool scan_literal();
  bool scan_scalar();
  bool key_and_colon(std::string* key);
  // Past a ',' to the container's next entry, or past `close` (false).
  bool next(char close, bool& first);

  std::string_view text_;
  std::size_t at_ = 0;
  std::string error_;
};

}  // namespace dedupd::daemon::answers
