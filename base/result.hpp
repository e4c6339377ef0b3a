// The project's one error type, and the result that carries a value or it.
// Every library and program reports failures this way, as values: a parser
// never throws past its API and never crashes, it names the rule and the
// offset; an error about no input's bytes (an LMDB call, a full disk) names
// the rule alone. It lives apart from every library so that none of them
// depends on another (the shard parser) just to say what went wrong.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>

namespace dedupd::base {

struct Error {
  std::string rule;      // short stable identifier, e.g. "header.magic"
  std::uint64_t offset;  // byte offset in the input where the problem is
  std::string message;   // human explanation
  // False for errors about no input's bytes (an LMDB call, a full disk):
  // their offset is 0 and means nothing, so it is not printed.
  bool has_offset = true;

  std::string to_string() const {
    if (!has_offset) return rule + ": " + message;
    return rule + " at offset " + std::to_string(offset) + ": " + message;
  }
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}
  Result(Error error) : v_(std::move(error)) {}

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &std::get<0>(v_); }
  const T* operator->() const { return &std::get<0>(v_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

}  // namespace dedupd::base
