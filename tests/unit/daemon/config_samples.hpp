// One value other than the default for every key of the key table, as a
// file writes it and as the table shows it back: the tests of the table,
// the reload's list and the README's table each go over every key with it.
// A key without a sample fails them (samples_cover_the_table).
#pragma once

#include <string>
#include <vector>

#include "daemon/config/key_table.hpp"
#include "daemon/config/load.hpp"

namespace dedupd::daemon::config_samples {

struct Sample {
  std::string key;    // dotted
  std::string value;  // as the file writes it
  std::string shown;  // as ConfigKey::show gives it back
};

inline const std::vector<Sample>& samples() {
  static const std::vector<Sample> all{
      {"state_dir", "/srv/dd", "/srv/dd"},
      {"socket", "/srv/dd.sock", "/srv/dd.sock"},
      {"watch", "[/srv/a, /srv/b]", "/srv/a, /srv/b"},
      {"expiry.delete_after", "never", "never"},
      {"expiry.max_bytes", "16G", "16G"},
      {"expiry.check_interval", "10m", "10m"},
      {"quarantine_dir", "/srv/q", "/srv/q"},
      {"admin_group", "staff", "staff"},
      {"log_level", "debug", "debug"},
      {"limits.max_body_bytes", "64M", "64M"},
      {"limits.max_query_body_bytes", "2M", "2M"},
      {"limits.max_body_memory", "1G", "1G"},
      {"limits.max_connections", "32", "32"},
      {"limits.request_timeout", "5s", "5s"},
      {"limits.header_timeout", "3s", "3s"},
      {"global_dedup.key_rotation", "12h", "12h"},
      {"global_dedup.reply_expiry", "3d", "3d"},
      {"global_dedup.reply_max_xorbs", "7", "7"},
      {"global_dedup.reply_max_bytes", "2M", "2M"},
      {"xet_cache.interval", "5s", "5s"},
      {"xet_cache.replaced_grace", "0s", "0s"},
      {"xet_cache.max_bytes", "2G", "2G"},
      {"xet_cache.max_chunk_entries", "1000", "1000"},
      {"xet_endpoint.config", "/srv/e.conf", "/srv/e.conf"},
      {"xet_endpoint.unknown_cas_answers", "true", "true"},
      {"xet_endpoint.group", "nginx", "nginx"},
      {"xet_endpoint.learn_socket", "/srv/learn.sock", "/srv/learn.sock"},
      {"xet_endpoint.reply_expiry", "1h", "1h"},
      {"xet_endpoint.downloads.enabled", "false", "false"},
      {"xet_endpoint.downloads.max_url_lifetime", "2m", "2m"},
      {"xet_endpoint.downloads.max_held_urls", "500", "500"},
      {"xet_endpoint.downloads.key_file", "/srv/dl.key", "/srv/dl.key"},
      {"fleet.url", "\"host=db password=s3cret\"", "(set, not shown)"},
      {"fleet.host", "build-07", "build-07"},
      {"fleet.lookup_timeout", "120ms", "120ms"},
      {"fleet.lookup_cache", "0", "0"},
      {"fleet.key_filter_memory", "1G", "1G"},
      {"fleet.reconcile_interval", "1h", "1h"},
      {"fleet.reconcile_batch", "500", "500"},
      {"index.filter_memory", "1G", "1G"},
      {"index.scrub_interval", "6h", "6h"},
      {"metrics.listen", "127.0.0.1:9953", "127.0.0.1:9953"},
  };
  return all;
}

// The file that sets `s.key` alone (and the url a fleet section needs).
inline std::string file_setting(const Sample& s) {
  std::string out, indent;
  std::size_t at = 0;
  for (std::size_t dot; (dot = s.key.find('.', at)) != std::string::npos; at = dot + 1, indent += "  ")
    out += indent + s.key.substr(at, dot - at) + ":\n";
  out += indent + s.key.substr(at) + ": " + s.value + "\n";
  if (s.key.starts_with("fleet.") && s.key != "fleet.url") out += "  url: postgresql://db/dedupd\n";
  return out;
}

// The configuration of that file, or the errors it got, as the loader reads it.
inline config::ConfigResult load_setting(const Sample& s) {
  return config::load_config_text(file_setting(s), "/etc/dedupd");
}

}  // namespace dedupd::daemon::config_samples
