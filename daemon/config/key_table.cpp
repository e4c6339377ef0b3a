#include "daemon/config/key_table.hpp"

#include <algorithm>
#include <type_traits>

#include "daemon/config/cross_key_rules.hpp"
#include "daemon/config/value_types.hpp"
#include "daemon/config/watch_list.hpp"

namespace dedupd::daemon::config {

namespace {

using namespace std::chrono_literals;

constexpr Reload applied = Reload::applied;
constexpr Reload restart = Reload::restart;

// Where a key lives in Config, for reading and writing alike.
template <class M>
auto at(M Config::*m) {
  return [m](auto& c) -> auto& { return c.*m; };
}
template <class S, class M>
auto at(S Config::*s, M S::*m) {
  return [ s, m ](auto& c) -> auto& { return (c.*s).*m; };
}
template <class S, class T, class M>
auto at(S Config::*s, T S::*t, M T::*m) {
  return [ s, t, m ](auto& c) -> auto& { return ((c.*s).*t).*m; };
}

// A row: the key bound to its field through the kind of value it takes.
template <class Get, class Kind>
ConfigKey key(std::string name, Get get, Kind kind, Reload reload, std::string doc) {
  using Field = std::remove_cvref_t<decltype(get(std::declval<Config&>()))>;
  static_assert(std::is_same_v<Field, typename Kind::Value>, "a key's kind of value must be its field's type");
  ConfigKey k;
  k.name = std::move(name);
  k.reload = reload;
  k.doc = std::move(doc);
  k.bounds = kind.bounds();
  k.load = [get, kind, name = k.name](YamlReader& r, const YAML::Node& v, Config& c) {
    if (auto got = kind.parse(r, name, v)) get(c) = std::move(*got);
  };
  k.show = [get, kind](const Config& c) { return kind.show(get(c)); };
  k.same = [get](const Config& a, const Config& b) { return get(a) == get(b); };
  k.copy = [get](const Config& from, Config& to) { get(to) = get(from); };
  return k;
}

ConfigKey unset_means(ConfigKey k, std::string text) {
  k.unset = std::move(text);
  return k;
}

// Smaller bodies could carry neither a shard nor a useful batch.
constexpr std::uint64_t kMinBody = 1024;
// One xorb of the Xet client (8,192 chunk entries at most) fits.
constexpr std::uint64_t kMinReplyBytes = 1ull << 20;
// Below that the chunk filters would saturate at a million entries or so.
constexpr std::uint64_t kMinFilterMemory = 1ull << 20;

std::vector<ConfigKey> make_keys() {
  return {
      key("state_dir", at(&Config::state_dir), PathValue{}, restart,
          "index (`index/`), the global-dedup key file, the learned shards' copies (`learned/`) and, with a fleet, "
          "its lookup filters kept across restarts (`fleet-key-filters`, at most `fleet.key_filter_memory`)"),
      key("socket", at(&Config::socket), PathValue{}, restart, "bound with mode 0660 unless systemd passes a socket"),
      key("watch", at(&Config::watch), WatchListValue{}, applied,
          "list of `PATH` or `{path: PATH, recursive: true\\|false, manage: none\\|xet-cache, cas: URL}` (recursive "
          "by default); `manage: xet-cache` (recursive only) lets dedupd merge and cap the Xet client's "
          "`shard-cache/` directories in that tree (`xetcache/`); `cas:` the CAS every shard under it belongs to "
          "(otherwise the client cache directory it sits in says it, else unknown: `docs/XET-ENDPOINT.md`, "
          "\"Scopes\")"),
      key("expiry.delete_after", at(&Config::expiry, &ExpiryConfig::delete_after), DurationOrNeverValue{"7d"}, applied,
          "grace between a shard's expiry and deleting its file; `0s` at once, `never` keeps files"),
      key("expiry.max_bytes", at(&Config::expiry, &ExpiryConfig::max_bytes), OptionalValue<SizeValue>{}, applied,
          "cap on the files of expiring shards (`16G`, `512M`, bytes); oldest shards are evicted first"),
      key("expiry.check_interval", at(&Config::expiry, &ExpiryConfig::check_interval), DurationValue{1s}, applied,
          "safety tick: rescan of the watched trees and expiry check even when no timer is due (at least `1s`)"),
      key("quarantine_dir", at(&Config::quarantine_dir), OptionalValue<PathValue>{}, applied,
          "rejected files are moved here (must be outside the watched trees)"),
      key("admin_group", at(&Config::admin_group), OptionalValue<TextValue>{{"a string"}}, applied,
          "members may use admin routes; root always may"),
      key("log_level", at(&Config::log_level), LogLevelValue{}, applied,
          "trace, debug, info, warn, error, critical, off"),

      key("limits.max_body_bytes", at(&Config::limits, &LimitsConfig::max_body_bytes), SizeValue{kMinBody}, restart,
          "an uploaded shard or bundle (`POST /v1/admin/ingest`), at least `1K`"),
      key("limits.max_query_body_bytes", at(&Config::limits, &LimitsConfig::max_query_body_bytes), SizeValue{kMinBody},
          restart,
          "room `max_body_memory` keeps for batch queries beside one upload (a batch itself takes any number of "
          "hashes, streamed, 1 MiB of room each while in flight), at least `1K`"),
      key("limits.max_body_memory", at(&Config::limits, &LimitsConfig::max_body_memory), SizeValue{}, restart,
          "request bodies and unread answers over 128 KiB held at once (503 `busy` beyond); queries get what room "
          "for one upload leaves; at least `max_body_bytes` + `max_query_body_bytes`"),
      key("limits.max_connections", at(&Config::limits, &LimitsConfig::max_connections), CountValue<unsigned>{1},
          restart,
          "connections served at once (at least `1`; the descriptor limit is raised to match); at the limit the "
          "longest idle ones make room for newcomers"),
      // Read by each admin call, not by the server: a reload applies it.
      key("limits.request_timeout", at(&Config::limits, &LimitsConfig::request_timeout), DurationValue{1s}, applied,
          "a connection in a request without progress, and how long an admin call waits for the work loop (then "
          "503 `in_progress`: it still runs), at least `1s`"),
      key("limits.header_timeout", at(&Config::limits, &LimitsConfig::header_timeout), DurationValue{1s}, restart,
          "to send a request's complete headers after connecting or after the previous answer (closes idle "
          "kept-alive connections too), at least `1s`"),

      key("global_dedup.key_rotation", at(&Config::global_dedup, &GlobalDedupConfig::key_rotation), DurationValue{60s},
          applied, "life of the key replies are keyed with (kept in `state_dir`), at least `1m`"),
      key("global_dedup.reply_expiry", at(&Config::global_dedup, &GlobalDedupConfig::reply_expiry), DurationValue{1s},
          applied, "expiry written into global-dedup replies (at least `1s`)"),
      key("global_dedup.reply_max_xorbs", at(&Config::global_dedup, &GlobalDedupConfig::reply_max_xorbs),
          CountValue<std::uint64_t>{1}, applied,
          "xorbs of the chunk's source shard one reply may carry (at least `1`; the chunk's own xorb always goes "
          "in)"),
      key("global_dedup.reply_max_bytes", at(&Config::global_dedup, &GlobalDedupConfig::reply_max_bytes),
          SizeValue{kMinReplyBytes}, applied,
          "size of one reply (at least `1M`); with the default a whole 64 MiB upload shard of the Xet client fits "
          "(`docs/API.md`)"),

      key("xet_cache.interval", at(&Config::xet_cache, &XetCacheConfig::interval), DurationValue{1s}, applied,
          "time between passes over the `manage: xet-cache` caches (one merge per cache a pass; at least `1s`)"),
      key("xet_cache.replaced_grace", at(&Config::xet_cache, &XetCacheConfig::replaced_grace), DurationValue{}, applied,
          "how long a merge's originals wait for client processes that may still read them"),
      key("xet_cache.max_bytes", at(&Config::xet_cache, &XetCacheConfig::max_bytes), SizeValue{1}, applied,
          "byte cap of each managed cache (the client's 16 GB; at least `1`)"),
      key("xet_cache.max_chunk_entries", at(&Config::xet_cache, &XetCacheConfig::max_chunk_entries),
          CountValue<std::uint64_t>{1}, applied,
          "chunk-entry cap of each managed cache (the client's `HF_XET_SHARD_CHUNK_INDEX_TABLE_MAX_SIZE`; at least "
          "`1`); " +
              std::to_string(kXetEndpointCacheEntries) +
              " when this file sets `xet_endpoint.config` (dedupd answers the client for what no longer fits)"),

      key("xet_endpoint.config", at(&Config::xet_endpoint, &XetEndpointConfig::config), PathValue{}, applied,
          "the local Xet endpoint's settings file: its upstreams and ports (`docs/XET-ENDPOINT.md`); "
          "`xet_endpoint:` alone clears it (no endpoint)"),
      key("xet_endpoint.unknown_cas_answers", at(&Config::xet_endpoint, &XetEndpointConfig::unknown_cas_answers),
          FlagValue{}, applied,
          "shards of unknown CAS answer the endpoint's queries too (off: an answer from another CAS's shard fails "
          "the client's upload)"),
      unset_means(key("xet_endpoint.group", at(&Config::xet_endpoint, &XetEndpointConfig::group),
                      OptionalValue<TextValue>{{"a group name"}, false}, applied,
                      "the endpoint's nginx group: with root and dedupd's own user the only ones who may teach "
                      "dedupd a shard (`docs/XET-ENDPOINT.md`, \"Learning\")"),
                  std::string("the package's `") + kPackageEndpointGroup + "` where the system has it"),
      unset_means(key("xet_endpoint.learn_socket", at(&Config::xet_endpoint, &XetEndpointConfig::learn_socket),
                      PathValue{}, applied,
                      "the datagram socket the endpoint's nginx reports the CAS's statuses on; under systemd "
                      "`dedupd.socket` passes its own and this is not used"),
                  "`dedupd-learn.sock` beside `socket`"),
      key("xet_endpoint.reply_expiry", at(&Config::xet_endpoint, &XetEndpointConfig::reply_expiry), DurationValue{},
          applied,
          "the expiry written into the global-dedup answers of the endpoint's clients, from now; at 0 an answer "
          "serves the client process that asked and no later one, so a retry after the CAS refused an upload asks "
          "again instead of reusing the stale answer (`docs/XET-ENDPOINT.md`)"),
      key("xet_endpoint.downloads.enabled",
          at(&Config::xet_endpoint, &XetEndpointConfig::downloads, &XetDownloadsConfig::enabled), FlagValue{}, applied,
          "downloads through the endpoint: the range URLs of the CAS's reconstruction answers renamed to the "
          "endpoint's, whose nginx caches the bytes by xorb and range (`docs/XET-ENDPOINT.md`, \"Downloads\"); "
          "off: the CAS's answers go out as they came and clients fetch from its storage"),
      key("xet_endpoint.downloads.max_url_lifetime",
          at(&Config::xet_endpoint, &XetEndpointConfig::downloads, &XetDownloadsConfig::max_url_lifetime),
          DurationValue{1s}, applied,
          "a range URL expires no later than the CAS's URL it stands for, and no later than this after the "
          "rewrite (at least `1s`); an expired one is refused and the client asks again"),
      key("xet_endpoint.downloads.max_held_urls",
          at(&Config::xet_endpoint, &XetEndpointConfig::downloads, &XetDownloadsConfig::max_held_urls),
          CountValue<std::uint64_t>{1}, restart,
          "the CAS URLs held in memory for outstanding range URLs, a few hundred bytes each (at least `1`); past "
          "it the oldest go and their range URLs are refused"),
      unset_means(key("xet_endpoint.downloads.key_file",
                      at(&Config::xet_endpoint, &XetEndpointConfig::downloads, &XetDownloadsConfig::key_file),
                      PathValue{}, restart,
                      "the key range URLs are signed with (made at the first start, 0600); a fleet's cache tier "
                      "uses the same file on every host"),
                  "`xet-download.key` in `state_dir`"),

      unset_means(key("fleet.url", at(&Config::fleet, &FleetConfig::url),
                      SecretTextValue{{"a libpq connection string or URI"}}, applied,
                      "libpq connection string or URI of the fleet database (`docs/FLEET.md`); may list several "
                      "hosts; never logged (it may carry a password: prefer `passfile`/`PGPASSFILE`)"),
                  "none (no fleet)"),
      unset_means(key("fleet.host", at(&Config::fleet, &FleetConfig::host), HostNameValue{}, applied,
                      "this host's name in the fleet: 1-253 of letters, digits, `.`, `_`, `-`"),
                  "the hostname"),
      key("fleet.lookup_timeout", at(&Config::fleet, &FleetConfig::lookup_timeout), MillisecondsValue{}, applied,
          "how long an answer waits for a fleet database that does not answer (`50ms`, `1s`; `1ms` to `60s`); past "
          "it the local answer goes out marked `\"fleet\": \"unavailable\"`. While the database answers (a "
          "heartbeat pings it on a connection of its own during lookups; silent for no longer than the bound, or "
          "250 ms if longer), a lookup may work on past it, up to 1 ms more per hash asked (about 4 s for a "
          "4,096-hash block of a stream): slow is not down (`docs/FLEET.md`, \"Outage\")"),
      key("fleet.lookup_cache", at(&Config::fleet, &FleetConfig::lookup_cache), SizeValue{}, applied,
          "what lookups keep of the fleet's xorbs for the next ones (hashes, keys, holders, the CAS blocks of xorbs "
          "hit often), one cache for every connection; hits on blocks it does not hold cost one more read each "
          "(`docs/FLEET.md`, \"Memory\"); 0 keeps nothing"),
      key("fleet.key_filter_memory", at(&Config::fleet, &FleetConfig::key_filter_memory), SizeValue{}, applied,
          "the most the fleet's lookup filters take together (they take what the fleet's entries need, up to "
          "this): one per live fleet key, of the prefixes stored under it, and the raw filter, of every raw "
          "entry's, in at most half of it, so a miss is usually asked nothing (about 3 B an entry at 16 bits; past "
          "what fits, thinner filters down to 4 bits, then a key or the raw forms asked in every form; "
          "`docs/FLEET.md`, \"Key filters\" and \"The raw filter\"); shown by `dedupctl status` and `/metrics`; "
          "kept in `state_dir/fleet-key-filters` across restarts"),
      key("fleet.reconcile_interval", at(&Config::fleet, &FleetConfig::reconcile_interval), DurationValue{1s}, applied,
          "anti-entropy: how often (and after each connect, so at start) this host compares the shards the fleet "
          "lists for it with its live local shards and queues what differs (at least `1s`)"),
      key("fleet.reconcile_batch", at(&Config::fleet, &FleetConfig::reconcile_batch), CountValue<std::uint32_t>{1},
          applied,
          "the most shards of each side one anti-entropy round compares; a pass is several rounds, the outbox "
          "drained between them (at least `1`)"),

      // The index takes it when it opens: a new bound needs a new open.
      key("index.filter_memory", at(&Config::index, &IndexConfig::filter_memory), SizeValue{kMinFilterMemory}, restart,
          "the most the in-memory chunk filters take together (at least `1M`): sized from the index at about "
          "1.7 B an entry, bounded by this; past it lookups search more absent forms, same answers (\"The chunk "
          "filters' memory\" below)"),
      key("index.scrub_interval", at(&Config::index, &IndexConfig::scrub_interval), DurationOrNeverValue{"1d"}, applied,
          "time between the ends of two passes of the background scrub, which walks the index a slice at a time "
          "for damage (`docs/OPERATIONS.md`, \"When things go wrong\"); the first pass starts once the files found "
          "at start are in; `never` turns it off"),

      // Bound once, at start (daemon/wiring/api_frontend).
      unset_means(key("metrics.listen", at(&Config::metrics), ListenValue{}, restart,
                      "`HOST:PORT` (an IP address, `[v6]` quoted, or `localhost`) where `GET /metrics` and `GET "
                      "/healthz` are also served over TCP, the socket's own answers passed on, nothing else; for "
                      "Prometheus on another machine (`docs/OPERATIONS.md`, \"Monitoring\": the systemd drop-in it "
                      "needs, the rules and dashboard)"),
                  "off"),
  };
}

}  // namespace

const std::vector<ConfigKey>& config_keys() {
  static const std::vector<ConfigKey> keys = make_keys();
  return keys;
}

const std::vector<ConfigSection>& config_sections() {
  static const std::vector<ConfigSection> sections{
      {"expiry", WhenEmpty::refused},
      {"limits", WhenEmpty::refused, check_body_memory},
      {"global_dedup", WhenEmpty::refused},
      {"xet_cache", WhenEmpty::refused},
      // "xet_endpoint:" alone: no endpoint, not even the package's.
      {"xet_endpoint", WhenEmpty::cleared},
      // "fleet:" alone: off.
      {"fleet", WhenEmpty::defaults, settle_fleet_identity},
      {"index", WhenEmpty::defaults},
      // "metrics:" alone: off.
      {"metrics", WhenEmpty::defaults},
  };
  return sections;
}

const std::vector<ConfigRule>& config_rules() {
  static const std::vector<ConfigRule> rules{settle_cache_entry_cap, check_quarantine_outside_watch};
  return rules;
}

std::string_view ConfigKey::section() const {
  const auto dot = name.find('.');
  return dot == std::string::npos ? std::string_view() : std::string_view(name).substr(0, dot);
}

std::string ConfigKey::shown(const Config& c) const {
  std::string s = show(c);
  return s.empty() ? unset : s;
}

const ConfigKey* find_config_key(std::string_view dotted) {
  const auto& keys = config_keys();
  auto it = std::find_if(keys.begin(), keys.end(), [&](const ConfigKey& k) { return k.name == dotted; });
  return it == keys.end() ? nullptr : &*it;
}

const ConfigSection* find_config_section(std::string_view name) {
  const auto& sections = config_sections();
  auto it = std::find_if(sections.begin(), sections.end(), [&](const ConfigSection& s) { return s.name == name; });
  return it == sections.end() ? nullptr : &*it;
}

std::string config_names_under(std::string_view section) {
  std::vector<std::string_view> names;
  for (const auto& k : config_keys()) {
    std::string_view name = k.name;
    if (!section.empty()) {
      if (!name.starts_with(section) || name.size() <= section.size() || name[section.size()] != '.') continue;
      name.remove_prefix(section.size() + 1);
    }
    name = name.substr(0, name.find('.'));  // a mapping of keys below: its name
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  std::string out;
  for (auto n : names) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

}  // namespace dedupd::daemon::config
