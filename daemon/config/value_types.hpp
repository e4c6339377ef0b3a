// The kinds of value a key of dedupd.yaml takes. Each knows how the file
// spells one (parse: the value, or nullopt after an error naming the key and
// its line), how to show one as the file would spell it (the README's
// defaults, a reload's "stays VALUE"; "" for a value that is not set), and
// its bounds in the words the README uses. The key table
// (config/key_table.cpp) binds each key to one of them.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "daemon/config/config.hpp"
#include "daemon/config/yaml_reader.hpp"

namespace dedupd::daemon::config {

// The rule fleet::valid_host_name checks (fleet/host_name.hpp).
bool fleet_host_name_ok(const std::string& s);

struct PathValue {
  using Value = std::filesystem::path;
  std::optional<Value> parse(YamlReader& r, const std::string& key, const YAML::Node& v) const;
  std::string show(const Value& p) const { return p.native(); }
  std::string bounds() const { return ""; }
};

struct FlagValue {
  using Value = bool;
  std::optional<Value> parse(YamlReader& r, const std::string& key, const YAML::Node& v) const;
  std::string show(Value b) const { return b ? "true" : "false"; }
  std::string bounds() const { return ""; }
};

// Any non-empty scalar: a group name, a connection string.
struct TextValue {
  using Value = std::string;
  std::string what;  // "a group name"
  std::optional<Value> parse(YamlReader& r, const std::string& key, const YAML::Node& v) const;
  std::string show(const Value& s) const { return s; }
  std::string bounds() const { return ""; }
};

// The fleet's libpq conninfo: taken like text, never shown (it may carry a
// password), not even in a message about it.
struct SecretTextValue : TextValue {
  std::string show(const Value& s) const { return s.empty() ? "" : "(set, not shown)"; }
};

// A word from a fixed rule, shown as written, with no bounds.
struct WordKind {
  using Value = std::string;
  std::string show(const Value& s) const { return s; }
  std::string bounds() const { return ""; }
};

struct LogLevelValue : WordKind {
  std::optional<Value> parse(YamlReader& r, const std::string& key, const YAML::Node& v) const;
};

struct HostNameValue : WordKind {
  std::optional<Value> parse(YamlReader& r, const std::string& key, const YAML::Node& v) const;
};

template <class T>
struct CountValue {
  using Value = T;
  T min = 0;
  std::optional<Value> parse(YamlReader& r, const std::string& key, const YAML::Node& v) const;
  std::string show(T n) const { return std::to_string(n); }
  std::string bounds() const { return min > 0 ? "at least `" + std::to_string(min) + "`" : ""; }
};

struct DurationValue {
  using Value = std::chrono::seconds;
  Value min{0};
  std::optional<Value> parse(YamlReader& r, const std::string& key, const YAML::Node& v) const;
  std::string show(Value d) const;
  std::string bounds() const;
};

// A duration, or "never" (nullopt).
struct DurationOrNeverValue {
  using Value = std::optional<std::chrono::seconds>;
  std::string example;  // "7d": the duration the "expected" message shows
  std::optional<Value> parse(YamlReader& r, const std::string& key, const YAML::Node& v) const;
  std::string show(const Value& d) const;
  std::string bounds() const { return ""; }
};

// "50ms", or any duration; 1 ms to 60 s.
struct MillisecondsValue {
  using Value = std::chrono::milliseconds;
  std::optional<Value> parse(YamlReader& r, const std::string& key, const YAML::Node& v) const;
  std::string show(Value ms) const;
  std::string bounds() const { return "`1ms` to `60s`"; }
};

struct SizeValue {
  using Value = std::uint64_t;
  Value min = 0;
  std::optional<Value> parse(YamlReader& r, const std::string& key, const YAML::Node& v) const;
  std::string show(Value bytes) const;
  std::string bounds() const;
};

// Normalized (xetcache/cas_url.hpp), as the index keeps it.
struct CasUrlValue : WordKind {
  std::optional<Value> parse(YamlReader& r, const std::string& key, const YAML::Node& v) const;
};

struct ManageValue {
  using Value = Manage;
  std::optional<Value> parse(YamlReader& r, const std::string& key, const YAML::Node& v) const;
  std::string show(Value m) const { return m == Manage::xet_cache ? "xet-cache" : "none"; }
  std::string bounds() const { return ""; }
};

// metrics.listen: HOST:PORT, kept with its parts; empty ("listen:") is off.
struct ListenValue {
  using Value = MetricsConfig;
  std::optional<Value> parse(YamlReader& r, const std::string& key, const YAML::Node& v) const;
  std::string show(const Value& m) const { return m.listen; }
  std::string bounds() const { return ""; }
};

// A value that may be unset. With `null_unsets`, an empty value ("key:")
// unsets it; without, an empty value is an error as for the inner kind.
template <class Inner>
struct OptionalValue {
  using Value = std::optional<typename Inner::Value>;
  Inner inner;
  bool null_unsets = true;
  std::optional<Value> parse(YamlReader& r, const std::string& key, const YAML::Node& v) const {
    if (v.IsNull() && null_unsets) return Value{};
    auto got = inner.parse(r, key, v);
    if (!got) return std::nullopt;
    return Value(std::move(*got));
  }
  std::string show(const Value& v) const { return v ? inner.show(*v) : ""; }
  std::string bounds() const { return inner.bounds(); }
};

}  // namespace dedupd::daemon::config
