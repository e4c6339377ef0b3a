// dedupd.yaml's loader (daemon/config/load.hpp), walked through the key
// table: any text gives a configuration or errors, never a crash or an
// escaped exception.
//
// Properties beyond "no crash": every error says something and names a line
// of the text (or none); a configuration it accepts keeps the rules across
// keys (a body memory that holds an upload and a query, no managed cache
// twice, the quarantine outside the watched trees, a fleet with its host)
// and the bounds of the keys that have one.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "daemon/config/load.hpp"
#include "daemon/config/value_types.hpp"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

using namespace dedupd::daemon;

void check_accepted(const config::Config& c) {
  const config::LimitsConfig& l = c.limits;
  check(l.max_body_bytes >= 1024 && l.max_query_body_bytes >= 1024);
  check(l.max_body_memory >= l.max_body_bytes + l.max_query_body_bytes);
  check(l.max_connections >= 1 && l.request_timeout.count() >= 1 && l.header_timeout.count() >= 1);
  check(c.expiry.check_interval.count() >= 1);
  check(c.global_dedup.key_rotation.count() >= 60 && c.global_dedup.reply_max_xorbs >= 1);
  check(c.global_dedup.reply_max_bytes >= (1u << 20));
  check(c.xet_cache.interval.count() >= 1 && c.xet_cache.max_bytes >= 1 && c.xet_cache.max_chunk_entries >= 1);
  check(c.index.filter_memory >= (1u << 20));
  check(!c.fleet.enabled() || config::fleet_host_name_ok(c.fleet.host));
  check(c.fleet.lookup_timeout.count() >= 1 && c.fleet.lookup_timeout.count() <= 60000);
  check(c.fleet.reconcile_batch >= 1);
  check(c.metrics.enabled() == (c.metrics.port != 0));
  for (std::size_t i = 0; i < c.watch.size(); ++i) {
    check(!c.watch[i].path.empty());
    check(c.watch[i].manage != config::Manage::xet_cache || c.watch[i].recursive);
    for (std::size_t j = 0; j < i; ++j)
      check(c.watch[i].manage != config::Manage::xet_cache || c.watch[j].manage != config::Manage::xet_cache ||
            c.watch[i].path != c.watch[j].path);
  }
  if (c.quarantine_dir)
    for (const auto& w : c.watch) {
      auto rel = c.quarantine_dir->lexically_relative(w.path);
      check(rel.empty() || *rel.begin() == "..");
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const auto lines = std::count(text.begin(), text.end(), '\n') + 1;
  auto r = config::load_config_text(text, "/etc/dedupd");
  if (const auto* c = std::get_if<config::Config>(&r)) {
    check_accepted(*c);
    return 0;
  }
  const auto& errors = std::get<std::vector<config::ConfigError>>(r);
  check(!errors.empty());
  for (const auto& e : errors) {
    check(!e.message.empty());
    check(e.line >= 0 && e.line <= lines + 1);
  }
  return 0;
}
