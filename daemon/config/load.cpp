#include "daemon/config/load.hpp"

#include <yaml-cpp/yaml.h>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <sstream>

#include "daemon/config/units.hpp"
#include "xetcache/cas_url.hpp"

namespace dedupd::daemon {

std::string ConfigError::to_string(const std::string& file) const {
  std::string out = file;
  if (line > 0) out += ":" + std::to_string(line);
  out += ": ";
  if (!key.empty()) out += key + ": ";
  return out + message;
}

namespace {

namespace fs = std::filesystem;

// The rule fleet::valid_host_name checks (fleet/host_name.hpp).
bool fleet_host_name_ok(const std::string& s) {
  if (s.empty() || s.size() > 253) return false;
  for (char ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '_' && ch != '-') return false;
  return true;
}

std::string this_host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "";
  return buf;
}

int line_of(const YAML::Node& n) { return n.Mark().is_null() ? 0 : n.Mark().line + 1; }

// Walks the document with const nodes only (yaml-cpp's non-const operator[]
// would insert the keys it is asked about) and collects every problem.
class Loader {
 public:
  Loader(fs::path base) : base_(std::move(base)) {}

  void load(const YAML::Node& root, Config& c) {
    if (root.IsNull()) return;  // an empty file: all defaults
    if (!root.IsMap()) {
      fail("", root, "the configuration must be a mapping of keys to values");
      return;
    }
    for (auto it = root.begin(); it != root.end(); ++it) {
      const std::string name = at_key(it);
      const YAML::Node v = it->second;
      if (name == "state_dir") path(name, v, c.state_dir);
      else if (name == "socket") path(name, v, c.socket);
      else if (name == "watch") watch(name, v, c.watch);
      else if (name == "expiry") expiry(name, v, c.expiry);
      else if (name == "quarantine_dir") optional_path(name, v, c.quarantine_dir);
      else if (name == "admin_group") optional_string(name, v, c.admin_group);
      else if (name == "log_level") log_level(name, v, c.log_level);
      else if (name == "limits") limits(name, v, c.limits);
      else if (name == "global_dedup") global_dedup(name, v, c.global_dedup);
      else if (name == "xet_cache") xet_cache(name, v, c.xet_cache);
      else if (name == "xet_endpoint") xet_endpoint(name, v, c.xet_endpoint);
      else if (name == "fleet") fleet(name, v, c.fleet);
      else if (name == "index") index(name, v, c.index);
      else if (name == "metrics") metrics(name, v, c.metrics);
      else
        unknown(name, it->first,
                "state_dir, socket, watch, expiry, quarantine_dir, admin_group, log_level, "
                "limits, global_dedup, xet_cache, xet_endpoint, fleet, index, metrics");
    }
    // An entry cap set by hand wins; with the endpoint on, the client's
    // cache need hold only what starts a session fast (dedupd answers for
    // the rest). On only when said here: the package's default settings
    // file is there whether or not its unit runs, and a client that does
    // not go through the endpoint needs its whole cache.
    if (endpoint_config_set_ && c.xet_endpoint.enabled() &&
        c.xet_cache.max_chunk_entries_source != CapSource::configured) {
      c.xet_cache.max_chunk_entries = kXetEndpointCacheEntries;
      c.xet_cache.max_chunk_entries_source = CapSource::xet_endpoint;
    }
  }

  std::vector<ConfigError> errors;

 private:
  bool endpoint_config_set_ = false;  // xet_endpoint.config in the file
  void fail(const std::string& key, const YAML::Node& at, std::string message) {
    // An empty value ("socket:") has its mark on the following line; the
    // key's own line is what the user wants to see.
    int line = at.IsNull() || line_of(at) == 0 ? key_line_ : line_of(at);
    errors.push_back({key, line, std::move(message)});
  }
  // Remembers the line of the key being looked at, for fail() above.
  const std::string& at_key(const YAML::const_iterator& it) {
    key_line_ = line_of(it->first);
    return it->first.Scalar();
  }
  int key_line_ = 0;
  void unknown(const std::string& key, const YAML::Node& at, const char* known) {
    fail(key, at, std::string("unknown key (known here: ") + known + ")");
  }

  bool scalar(const std::string& key, const YAML::Node& v, const char* what, std::string& out) {
    if (!v.IsScalar() || v.Scalar().empty()) {
      fail(key, v,
           std::string("expected ") + what +
               (v.IsSequence() ? ", got a list"
                : v.IsMap()    ? ", got a mapping"
                               : ", got nothing"));
      return false;
    }
    out = v.Scalar();
    return true;
  }

  void path(const std::string& key, const YAML::Node& v, fs::path& out) {
    std::string s;
    if (scalar(key, v, "a path", s)) out = clean_path(base_ / s);
  }
  void optional_path(const std::string& key, const YAML::Node& v, std::optional<fs::path>& out) {
    fs::path p;
    if (v.IsNull()) return out.reset();
    path(key, v, p);
    if (!p.empty()) out = p;
  }
  void optional_string(const std::string& key, const YAML::Node& v, std::optional<std::string>& out) {
    std::string s;
    if (v.IsNull()) return out.reset();
    if (scalar(key, v, "a string", s)) out = s;
  }
  void boolean(const std::string& key, const YAML::Node& v, bool& out) {
    std::string s;
    if (!scalar(key, v, "true or false", s)) return;
    try {
      out = v.as<bool>();
    } catch (const YAML::Exception&) {
      fail(key, v, "expected true or false, got \"" + s + "\"");
    }
  }
  template <class T>
  void count(const std::string& key, const YAML::Node& v, T& out, T min) {
    std::string s;
    if (!scalar(key, v, "a whole number", s)) return;
    T n{};
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (ec != std::errc{} || ptr != s.data() + s.size())
      return fail(key, v, "expected a whole number, got \"" + s + "\"");
    if (n < min) return fail(key, v, "must be at least " + std::to_string(min));
    out = n;
  }
  void duration(const std::string& key, const YAML::Node& v, std::chrono::seconds& out,
                std::chrono::seconds min = std::chrono::seconds(0)) {
    std::string s;
    if (!scalar(key, v, "a duration such as \"30s\" or \"7d\"", s)) return;
    auto d = parse_duration(s);
    if (auto* e = std::get_if<ParseError>(&d)) return fail(key, v, e->message);
    if (std::get<std::chrono::seconds>(d) < min) return fail(key, v, "must be at least " + format_duration(min));
    out = std::get<std::chrono::seconds>(d);
  }
  void size(const std::string& key, const YAML::Node& v, std::uint64_t& out, std::uint64_t min = 0) {
    std::string s;
    if (!scalar(key, v, "a size such as \"16G\"", s)) return;
    auto n = parse_size(s);
    if (auto* e = std::get_if<ParseError>(&n)) return fail(key, v, e->message);
    if (std::get<std::uint64_t>(n) < min) return fail(key, v, "must be at least " + format_size(min));
    out = std::get<std::uint64_t>(n);
  }

  void cas_url(const std::string& key, const YAML::Node& v, std::string& out) {
    std::string s;
    if (!scalar(key, v, "a CAS URL such as https://cas-server.xethub.hf.co", s)) return;
    auto normal = xetcache::normalize_cas_url(s);
    if (!normal) return fail(key, v, "\"" + s + "\" is not a CAS URL (http:// or https://, a host, no query)");
    out = *normal;
  }

  void manage(const std::string& key, const YAML::Node& v, Manage& out) {
    std::string s;
    if (!scalar(key, v, "xet-cache or none", s)) return;
    if (s == "xet-cache") out = Manage::xet_cache;
    else if (s == "none") out = Manage::none;
    else fail(key, v, "expected xet-cache or none, got \"" + s + "\"");
  }

  void watch(const std::string& key, const YAML::Node& v, std::vector<WatchDir>& out) {
    if (v.IsNull()) return out.clear();
    if (!v.IsSequence()) return fail(key, v, "expected a list of directories");
    out.clear();
    lines_.clear();
    for (std::size_t i = 0; i < v.size(); ++i) {
      const YAML::Node item = v[i];
      std::string k = key + "[" + std::to_string(i) + "]";
      WatchDir w;
      if (item.IsMap()) {
        bool has_path = false;
        for (auto it = item.begin(); it != item.end(); ++it) {
          const std::string name = at_key(it);
          if (name == "path") {
            path(k + ".path", it->second, w.path);
            has_path = true;
          } else if (name == "recursive") {
            boolean(k + ".recursive", it->second, w.recursive);
          } else if (name == "manage") {
            manage(k + ".manage", it->second, w.manage);
          } else if (name == "cas") {
            cas_url(k + ".cas", it->second, w.cas);
          } else {
            unknown(k + "." + name, it->first, "path, recursive, manage, cas");
          }
        }
        if (!has_path) fail(k, item, "a watch entry needs a path");
        if (w.manage == Manage::xet_cache && !w.recursive)
          fail(k + ".recursive", item,
               "a managed Xet cache nests <endpoint>/shard-cache/: it must be watched recursively");
      } else {
        path(k, item, w.path);
      }
      if (!w.path.empty()) {
        if (w.manage == Manage::xet_cache) managed_overlap(k, item, w.path, out);
        out.push_back(w);
        lines_.push_back(line_of(item));
      }
    }
  }

  // Two managed entries over one cache make two stewards deleting under
  // each other's merges (issue 30 saw 34 originals go under a running
  // client): the same directory twice, or one inside the other, is refused.
  void managed_overlap(const std::string& key, const YAML::Node& at, const fs::path& path,
                       const std::vector<WatchDir>& earlier) {
    auto inside = [](const fs::path& outer, const fs::path& inner) {
      auto [o, i] = std::mismatch(outer.begin(), outer.end(), inner.begin(), inner.end());
      return o == outer.end();
    };
    for (std::size_t j = 0; j < earlier.size(); ++j) {
      if (earlier[j].manage != Manage::xet_cache) continue;
      const fs::path& other = earlier[j].path;
      if (!inside(other, path) && !inside(path, other)) continue;
      const char* how = other == path ? "is the same directory as" : "overlaps";
      fail(key, at,
           "managed Xet cache " + path.string() + " " + how + " the managed cache " + other.string() + " on line " +
               std::to_string(lines_[j]) + ": one cache, one steward");
      return;
    }
  }
  std::vector<int> lines_;  // of each entry of the watch list being read, as in `out`

  void expiry(const std::string& key, const YAML::Node& v, ExpiryConfig& out) {
    if (!v.IsMap()) return fail(key, v, "expected a mapping (delete_after, max_bytes, check_interval)");
    for (auto it = v.begin(); it != v.end(); ++it) {
      const std::string name = at_key(it);
      const std::string k = key + "." + name;
      const YAML::Node val = it->second;
      if (name == "delete_after") {
        std::string s;
        if (!scalar(k, val, "a duration such as \"7d\", or \"never\"", s)) continue;
        auto d = parse_duration_or_never(s);
        if (auto* e = std::get_if<ParseError>(&d)) fail(k, val, e->message);
        else out.delete_after = std::get<0>(d);
      } else if (name == "max_bytes") {
        if (val.IsNull()) {
          out.max_bytes.reset();
          continue;
        }
        std::uint64_t n = 0;
        std::size_t before = errors.size();
        size(k, val, n);
        if (errors.size() == before) out.max_bytes = n;
      } else if (name == "check_interval") {
        duration(k, val, out.check_interval, std::chrono::seconds(1));
      } else {
        unknown(k, it->first, "delete_after, max_bytes, check_interval");
      }
    }
  }

  void limits(const std::string& key, const YAML::Node& v, LimitsConfig& out) {
    static const char* const kKnown =
        "max_body_bytes, max_query_body_bytes, max_body_memory, max_connections, request_timeout, "
        "header_timeout";
    if (!v.IsMap()) return fail(key, v, std::string("expected a mapping (") + kKnown + ")");
    // Smaller bodies could carry neither a shard nor a useful batch.
    constexpr std::uint64_t kMinBody = 1024;
    int memory_line = key_line_;  // of max_body_memory if set, else of "limits:"
    const std::size_t errors_before = errors.size();
    for (auto it = v.begin(); it != v.end(); ++it) {
      const std::string name = at_key(it);
      const std::string k = key + "." + name;
      if (name == "max_body_bytes") size(k, it->second, out.max_body_bytes, kMinBody);
      else if (name == "max_query_body_bytes") size(k, it->second, out.max_query_body_bytes, kMinBody);
      else if (name == "max_body_memory") {
        size(k, it->second, out.max_body_memory);
        memory_line = key_line_;
      } else if (name == "max_connections") count<unsigned>(k, it->second, out.max_connections, 1);
      else if (name == "request_timeout") duration(k, it->second, out.request_timeout, std::chrono::seconds(1));
      else if (name == "header_timeout") duration(k, it->second, out.header_timeout, std::chrono::seconds(1));
      else unknown(k, it->first, kKnown);
    }
    // One upload of the largest size must fit beside a batch query: queries
    // get only what room for an upload leaves (daemon/api/http/server.hpp).
    if (errors.size() == errors_before && out.max_body_memory < out.max_body_bytes + out.max_query_body_bytes)
      errors.push_back({key + ".max_body_memory", memory_line,
                        "must be at least max_body_bytes + max_query_body_bytes (" + format_size(out.max_body_bytes) +
                            " + " + format_size(out.max_query_body_bytes) +
                            "), so that one upload of the largest size and one batch query fit at once"});
  }

  void index(const std::string& key, const YAML::Node& v, IndexConfig& out) {
    if (v.IsNull()) return;  // "index:" alone: the defaults
    if (!v.IsMap()) return fail(key, v, "expected a mapping (filter_memory, scrub_interval)");
    // Below that the filters would saturate at a million entries or so.
    constexpr std::uint64_t kMinFilterMemory = std::uint64_t(1) << 20;
    for (auto it = v.begin(); it != v.end(); ++it) {
      const std::string name = at_key(it);
      const std::string k = key + "." + name;
      if (name == "filter_memory") {
        size(k, it->second, out.filter_memory, kMinFilterMemory);
      } else if (name == "scrub_interval") {
        std::string s;
        if (!scalar(k, it->second, "a duration such as \"1d\", or \"never\"", s)) continue;
        auto d = parse_duration_or_never(s);
        if (auto* e = std::get_if<ParseError>(&d)) fail(k, it->second, e->message);
        else out.scrub_interval = std::get<0>(d);
      } else {
        unknown(k, it->first, "filter_memory, scrub_interval");
      }
    }
  }

  void metrics(const std::string& key, const YAML::Node& v, MetricsConfig& out) {
    if (v.IsNull()) return;  // "metrics:" alone: off
    if (!v.IsMap()) return fail(key, v, "expected a mapping (listen)");
    for (auto it = v.begin(); it != v.end(); ++it) {
      const std::string name = at_key(it);
      const std::string k = key + "." + name;
      if (name != "listen") {
        unknown(k, it->first, "listen");
        continue;
      }
      if (it->second.IsNull()) {  // "listen:" alone: off, as without the key
        out = {};
        continue;
      }
      std::string s;
      if (!scalar(k, it->second, "HOST:PORT, e.g. \"127.0.0.1:9953\" (quoted when IPv6: \"[::1]:9953\")", s)) continue;
      auto a = parse_listen_address(s);
      if (auto* e = std::get_if<ParseError>(&a)) {
        fail(k, it->second, e->message);
        continue;
      }
      const ListenAddress& l = std::get<ListenAddress>(a);
      out = {s, l.host, l.port};
    }
  }

  void xet_cache(const std::string& key, const YAML::Node& v, XetCacheConfig& out) {
    static const char* const kKnown = "interval, replaced_grace, max_bytes, max_chunk_entries";
    if (!v.IsMap()) return fail(key, v, std::string("expected a mapping (") + kKnown + ")");
    for (auto it = v.begin(); it != v.end(); ++it) {
      const std::string name = at_key(it);
      const std::string k = key + "." + name;
      if (name == "interval") duration(k, it->second, out.interval, std::chrono::seconds(1));
      else if (name == "replaced_grace") duration(k, it->second, out.replaced_grace);
      else if (name == "max_bytes") size(k, it->second, out.max_bytes, 1);
      else if (name == "max_chunk_entries") {
        count<std::uint64_t>(k, it->second, out.max_chunk_entries, 1);
        out.max_chunk_entries_source = CapSource::configured;
      } else unknown(k, it->first, kKnown);
    }
  }

  void xet_endpoint(const std::string& key, const YAML::Node& v, XetEndpointConfig& out) {
    if (v.IsNull()) {  // "xet_endpoint:" alone: none, not even the package's
      out = XetEndpointConfig{};
      return;
    }
    if (!v.IsMap())
      return fail(key, v, "expected a mapping (config, unknown_cas_answers, group, learn_socket, reply_expiry)");
    for (auto it = v.begin(); it != v.end(); ++it) {
      const std::string name = at_key(it);
      const std::string k = key + "." + name;
      if (name == "config") {
        path(k, it->second, out.config);
        endpoint_config_set_ = true;
      } else if (name == "unknown_cas_answers") boolean(k, it->second, out.unknown_cas_answers);
      else if (name == "learn_socket") path(k, it->second, out.learn_socket);
      else if (name == "reply_expiry") duration(k, it->second, out.reply_expiry);
      else if (name == "group") {
        std::string g;
        if (scalar(k, it->second, "a group name", g)) out.group = g;
      } else unknown(k, it->first, "config, unknown_cas_answers, group, learn_socket, reply_expiry");
    }
  }

  void global_dedup(const std::string& key, const YAML::Node& v, GlobalDedupConfig& out) {
    static const char* const kKnown = "key_rotation, reply_expiry, reply_max_xorbs, reply_max_bytes";
    if (!v.IsMap()) return fail(key, v, std::string("expected a mapping (") + kKnown + ")");
    // One xorb of the Xet client (8,192 chunk entries at most) fits.
    constexpr std::uint64_t kMinReplyBytes = 1ull << 20;
    for (auto it = v.begin(); it != v.end(); ++it) {
      const std::string name = at_key(it);
      const std::string k = key + "." + name;
      if (name == "key_rotation") duration(k, it->second, out.key_rotation, std::chrono::seconds(60));
      else if (name == "reply_expiry") duration(k, it->second, out.reply_expiry, std::chrono::seconds(1));
      else if (name == "reply_max_xorbs") count<std::uint64_t>(k, it->second, out.reply_max_xorbs, 1);
      else if (name == "reply_max_bytes") size(k, it->second, out.reply_max_bytes, kMinReplyBytes);
      else unknown(k, it->first, kKnown);
    }
  }

  void fleet(const std::string& key, const YAML::Node& v, FleetConfig& out) {
    if (v.IsNull()) return;  // "fleet:" alone: off
    if (!v.IsMap())
      return fail(key, v,
                  "expected a mapping (url, host, lookup_timeout, lookup_cache, key_filter_memory, reconcile_interval, "
                  "reconcile_batch)");
    const int section_line = key_line_;
    bool has_url = false;
    for (auto it = v.begin(); it != v.end(); ++it) {
      const std::string name = at_key(it);
      const std::string k = key + "." + name;
      const YAML::Node val = it->second;
      if (name == "url") {
        // Never echo the value: it may hold a password.
        has_url = true;
        scalar(k, val, "a libpq connection string or URI", out.url);
      } else if (name == "host") {
        std::string s;
        if (!scalar(k, val, "a host name", s)) continue;
        if (!fleet_host_name_ok(s))
          fail(k, val, "\"" + s + "\" is not a host name (1-253 of letters, digits, '.', '_', '-')");
        else out.host = s;
      } else if (name == "lookup_timeout") {
        milliseconds(k, val, out.lookup_timeout);
      } else if (name == "lookup_cache") {
        size(k, val, out.lookup_cache);
      } else if (name == "key_filter_memory") {
        size(k, val, out.key_filter_memory);
      } else if (name == "reconcile_interval") {
        duration(k, val, out.reconcile_interval, std::chrono::seconds(1));
      } else if (name == "reconcile_batch") {
        count(k, val, out.reconcile_batch, std::uint32_t(1));
      } else {
        unknown(k, it->first,
                "url, host, lookup_timeout, lookup_cache, key_filter_memory, reconcile_interval, reconcile_batch");
      }
    }
    if (!has_url) {
      errors.push_back({key + ".url", section_line, "the fleet section needs a url (or leave fleet out)"});
      out.url.clear();
    }
    if (out.host.empty()) {
      out.host = this_host_name();
      if (!fleet_host_name_ok(out.host))
        errors.push_back({key + ".host", section_line,
                          "this machine's hostname \"" + out.host + "\" cannot name it in the fleet: set fleet.host"});
    }
  }
  // "50ms", or any duration parse_duration takes; 1 ms to 60 s.
  void milliseconds(const std::string& key, const YAML::Node& v, std::chrono::milliseconds& out) {
    std::string s;
    if (!scalar(key, v, "a duration such as \"50ms\" or \"1s\"", s)) return;
    std::chrono::milliseconds ms{};
    if (s.size() > 2 && s.ends_with("ms")) {
      std::uint64_t n = 0;
      auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size() - 2, n);
      if (ec != std::errc{} || ptr != s.data() + s.size() - 2 || n > 60000)
        return fail(key, v, "expected a duration such as \"50ms\" or \"1s\", got \"" + s + "\"");
      ms = std::chrono::milliseconds(n);
    } else {
      auto d = parse_duration(s);
      if (auto* e = std::get_if<ParseError>(&d)) return fail(key, v, e->message + " (or milliseconds: \"50ms\")");
      ms = std::get<std::chrono::seconds>(d);
    }
    if (ms < std::chrono::milliseconds(1) || ms > std::chrono::seconds(60))
      return fail(key, v, "must be between 1ms and 60s");
    out = ms;
  }

  void log_level(const std::string& key, const YAML::Node& v, std::string& out) {
    std::string s;
    if (!scalar(key, v, "a log level", s)) return;
    static const char* const kLevels[] = {"trace", "debug", "info", "warn", "error", "critical", "off"};
    for (const char* l : kLevels)
      if (s == l) {
        out = s;
        return;
      }
    fail(key, v, "unknown log level \"" + s + "\" (use trace, debug, info, warn, error, critical or off)");
  }

  fs::path base_;
};

void check_consistency(const Config& c, std::vector<ConfigError>& errors) {
  // Quarantining into a watched tree would feed rejected files back in.
  if (c.quarantine_dir)
    for (const auto& w : c.watch) {
      auto rel = c.quarantine_dir->lexically_relative(w.path);
      if (!rel.empty() && *rel.begin() != "..")
        errors.push_back({"quarantine_dir", 0, "must not be inside the watched directory " + w.path.string()});
    }
}

}  // namespace

ConfigResult load_config_text(const std::string& yaml, const fs::path& base_dir) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::ParserException& e) {
    return std::vector<ConfigError>{{"", e.mark.is_null() ? 0 : e.mark.line + 1, e.msg}};
  } catch (const YAML::Exception& e) {
    return std::vector<ConfigError>{{"", 0, e.what()}};
  }
  Config c = installed_defaults();
  Loader loader(base_dir);
  try {
    loader.load(root, c);
  } catch (const YAML::Exception& e) {  // defensive: a node shape the walk did not expect
    loader.errors.push_back({"", e.mark.is_null() ? 0 : e.mark.line + 1, e.msg});
  }
  check_consistency(c, loader.errors);
  if (!loader.errors.empty()) return loader.errors;
  return c;
}

ConfigResult load_config_file(const fs::path& file) {
  std::ifstream in(file);
  if (!in) return std::vector<ConfigError>{{"", 0, "cannot read the file"}};
  std::stringstream text;
  text << in.rdbuf();
  fs::path base = fs::absolute(file).parent_path();
  return load_config_text(text.str(), base);
}

}  // namespace dedupd::daemon
