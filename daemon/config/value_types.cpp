#include "daemon/config/value_types.hpp"

#include <cctype>
#include <charconv>

#include "daemon/config/units.hpp"
#include "xetcache/cas_url.hpp"

namespace dedupd::daemon::config {

namespace {

// A scalar as `parse` (units.hpp) reads it, refused below `min`, which the
// message spells as `format` does.
template <class T>
std::optional<T> parse_at_least(YamlReader& r, const std::string& key, const YAML::Node& v, const char* what,
                                Parsed<T> (*parse)(std::string_view), T min, std::string (*format)(T)) {
  std::string s;
  if (!r.scalar(key, v, what, s)) return std::nullopt;
  auto got = parse(s);
  if (auto* e = std::get_if<ParseError>(&got)) {
    r.fail(key, v, e->message);
    return std::nullopt;
  }
  if (std::get<T>(got) < min) {
    r.fail(key, v, "must be at least " + format(min));
    return std::nullopt;
  }
  return std::get<T>(got);
}

}  // namespace

bool fleet_host_name_ok(const std::string& s) {
  if (s.empty() || s.size() > 253) return false;
  for (char ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '_' && ch != '-') return false;
  return true;
}

std::optional<PathValue::Value> PathValue::parse(YamlReader& r, const std::string& key, const YAML::Node& v) const {
  std::string s;
  if (!r.scalar(key, v, "a path", s)) return std::nullopt;
  return clean_path(r.base() / s);
}

std::optional<bool> FlagValue::parse(YamlReader& r, const std::string& key, const YAML::Node& v) const {
  std::string s;
  if (!r.scalar(key, v, "true or false", s)) return std::nullopt;
  try {
    return v.as<bool>();
  } catch (const YAML::Exception&) {
    r.fail(key, v, "expected true or false, got \"" + s + "\"");
    return std::nullopt;
  }
}

std::optional<std::string> TextValue::parse(YamlReader& r, const std::string& key, const YAML::Node& v) const {
  std::string s;
  if (!r.scalar(key, v, what, s)) return std::nullopt;
  return s;
}

std::optional<std::string> LogLevelValue::parse(YamlReader& r, const std::string& key, const YAML::Node& v) const {
  std::string s;
  if (!r.scalar(key, v, "a log level", s)) return std::nullopt;
  static const char* const kLevels[] = {"trace", "debug", "info", "warn", "error", "critical", "off"};
  for (const char* l : kLevels)
    if (s == l) return s;
  r.fail(key, v, "unknown log level \"" + s + "\" (use trace, debug, info, warn, error, critical or off)");
  return std::nullopt;
}

std::optional<std::string> HostNameValue::parse(YamlReader& r, const std::string& key, const YAML::Node& v) const {
  std::string s;
  if (!r.scalar(key, v, "a host name", s)) return std::nullopt;
  if (fleet_host_name_ok(s)) return s;
  r.fail(key, v, "\"" + s + "\" is not a host name (1-253 of letters, digits, '.', '_', '-')");
  return std::nullopt;
}

template <class T>
std::optional<T> CountValue<T>::parse(YamlReader& r, const std::string& key, const YAML::Node& v) const {
  std::string s;
  if (!r.scalar(key, v, "a whole number", s)) return std::nullopt;
  T n{};
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc{} || ptr != s.data() + s.size()) {
    r.fail(key, v, "expected a whole number, got \"" + s + "\"");
    return std::nullopt;
  }
  if (n < min) {
    r.fail(key, v, "must be at least " + std::to_string(min));
    return std::nullopt;
  }
  return n;
}
template struct CountValue<unsigned>;
template struct CountValue<std::uint64_t>;

std::optional<std::chrono::seconds> DurationValue::parse(YamlReader& r, const std::string& key,
                                                         const YAML::Node& v) const {
  return parse_at_least<std::chrono::seconds>(r, key, v, "a duration such as \"30s\" or \"7d\"", parse_duration, min,
                                              format_duration);
}

std::string DurationValue::show(Value d) const { return format_duration(d); }

std::string DurationValue::bounds() const { return min > Value(0) ? "at least `" + format_duration(min) + "`" : ""; }

std::optional<DurationOrNeverValue::Value> DurationOrNeverValue::parse(YamlReader& r, const std::string& key,
                                                                       const YAML::Node& v) const {
  std::string s;
  if (!r.scalar(key, v, "a duration such as \"" + example + "\", or \"never\"", s)) return std::nullopt;
  auto d = parse_duration_or_never(s);
  if (auto* e = std::get_if<ParseError>(&d)) {
    r.fail(key, v, e->message);
    return std::nullopt;
  }
  return std::get<Value>(d);
}

std::string DurationOrNeverValue::show(const Value& d) const { return d ? format_duration(*d) : "never"; }

std::optional<std::chrono::milliseconds> MillisecondsValue::parse(YamlReader& r, const std::string& key,
                                                                  const YAML::Node& v) const {
  std::string s;
  if (!r.scalar(key, v, "a duration such as \"50ms\" or \"1s\"", s)) return std::nullopt;
  std::chrono::milliseconds ms{};
  if (s.size() > 2 && s.ends_with("ms")) {
    std::uint64_t n = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size() - 2, n);
    if (ec != std::errc{} || ptr != s.data() + s.size() - 2 || n > 60000) {
      r.fail(key, v, "expected a duration such as \"50ms\" or \"1s\", got \"" + s + "\"");
      return std::nullopt;
    }
    ms = std::chrono::milliseconds(n);
  } else {
    auto d = parse_duration(s);
    if (auto* e = std::get_if<ParseError>(&d)) {
      r.fail(key, v, e->message + " (or milliseconds: \"50ms\")");
      return std::nullopt;
    }
    ms = std::get<std::chrono::seconds>(d);
  }
  if (ms < std::chrono::milliseconds(1) || ms > std::chrono::seconds(60)) {
    r.fail(key, v, "must be between 1ms and 60s");
    return std::nullopt;
  }
  return ms;
}

std::string MillisecondsValue::show(Value ms) const {
  if (ms.count() % 1000 == 0) return format_duration(std::chrono::duration_cast<std::chrono::seconds>(ms));
  return std::to_string(ms.count()) + "ms";
}

std::optional<std::uint64_t> SizeValue::parse(YamlReader& r, const std::string& key, const YAML::Node& v) const {
  return parse_at_least<std::uint64_t>(r, key, v, "a size such as \"16G\"", parse_size, min, format_size);
}

std::string SizeValue::show(Value bytes) const {
  // A unit only where it reads shorter: the Xet cache's 16 GB is the
  // client's decimal 16000000000, which "15625000K" would hide.
  std::string with_unit = format_size(bytes);
  return with_unit.size() <= 6 ? with_unit : std::to_string(bytes);
}

std::string SizeValue::bounds() const { return min > 0 ? "at least `" + format_size(min) + "`" : ""; }

std::optional<std::string> CasUrlValue::parse(YamlReader& r, const std::string& key, const YAML::Node& v) const {
  std::string s;
  if (!r.scalar(key, v, "a CAS URL such as https://cas-server.xethub.hf.co", s)) return std::nullopt;
  auto normal = dedupd::xetcache::normalize_cas_url(s);
  if (!normal) {
    r.fail(key, v, "\"" + s + "\" is not a CAS URL (http:// or https://, a host, no query)");
    return std::nullopt;
  }
  return *normal;
}

std::optional<Manage> ManageValue::parse(YamlReader& r, const std::string& key, const YAML::Node& v) const {
  std::string s;
  if (!r.scalar(key, v, "xet-cache or none", s)) return std::nullopt;
  if (s == "xet-cache") return Manage::xet_cache;
  if (s == "none") return Manage::none;
  r.fail(key, v, "expected xet-cache or none, got \"" + s + "\"");
  return std::nullopt;
}

std::optional<MetricsConfig> ListenValue::parse(YamlReader& r, const std::string& key, const YAML::Node& v) const {
  if (v.IsNull()) return MetricsConfig{};  // "listen:" alone: off, as without the key
  std::string s;
  if (!r.scalar(key, v, "HOST:PORT, e.g. \"127.0.0.1:9953\" (quoted when IPv6: \"[::1]:9953\")", s))
    return std::nullopt;
  auto a = parse_listen_address(s);
  if (auto* e = std::get_if<ParseError>(&a)) {
    r.fail(key, v, e->message);
    return std::nullopt;
  }
  const ListenAddress& l = std::get<ListenAddress>(a);
  return MetricsConfig{s, l.host, l.port};
}

}  // namespace dedupd::daemon::config
