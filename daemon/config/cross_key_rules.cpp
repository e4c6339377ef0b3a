#include "daemon/config/cross_key_rules.hpp"

#include <unistd.h>

#include "daemon/config/units.hpp"
#include "daemon/config/value_types.hpp"

namespace dedupd::daemon::config {

namespace {

std::string this_host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "";
  return buf;
}

}  // namespace

void check_body_memory(YamlReader& r, Config& c) {
  // A key already wrong is the one error said.
  if (!r.section_clean()) return;
  const LimitsConfig& l = c.limits;
  if (l.max_body_memory >= l.max_body_bytes + l.max_query_body_bytes) return;
  // Queries get only what room for an upload leaves (daemon/api/http/server.hpp).
  r.fail_at("limits.max_body_memory", r.line_set("limits.max_body_memory").value_or(r.line_set("limits").value_or(0)),
            "must be at least max_body_bytes + max_query_body_bytes (" + format_size(l.max_body_bytes) + " + " +
                format_size(l.max_query_body_bytes) +
                "), so that one upload of the largest size and one batch query fit at once");
}

void settle_fleet_identity(YamlReader& r, Config& c) {
  const int section_line = r.line_set("fleet").value_or(0);
  if (!r.line_set("fleet.url")) {
    r.fail_at("fleet.url", section_line, "the fleet section needs a url (or leave fleet out)");
    c.fleet.url.clear();
  }
  if (!c.fleet.host.empty()) return;
  c.fleet.host = this_host_name();
  if (!fleet_host_name_ok(c.fleet.host))
    r.fail_at("fleet.host", section_line,
              "this machine's hostname \"" + c.fleet.host + "\" cannot name it in the fleet: set fleet.host");
}

void settle_cache_entry_cap(YamlReader& r, Config& c) {
  XetCacheConfig& x = c.xet_cache;
  if (r.line_set("xet_cache.max_chunk_entries")) x.max_chunk_entries_source = CapSource::configured;
  // An entry cap set by hand wins; with the endpoint on, the client's
  // cache need hold only what starts a session fast (dedupd answers for
  // the rest). On only when said in the file: the package's default
  // settings file is there whether or not its unit runs, and a client that
  // does not go through the endpoint needs its whole cache.
  if (r.line_set("xet_endpoint.config") && c.xet_endpoint.enabled() &&
      x.max_chunk_entries_source != CapSource::configured) {
    x.max_chunk_entries = kXetEndpointCacheEntries;
    x.max_chunk_entries_source = CapSource::xet_endpoint;
  }
}

void check_quarantine_outside_watch(YamlReader& r, Config& c) {
  // Quarantining into a watched tree would feed rejected files back in.
  if (!c.quarantine_dir) return;
  for (const auto& w : c.watch) {
    auto rel = c.quarantine_dir->lexically_relative(w.path);
    if (!rel.empty() && *rel.begin() != "..")
      r.fail_at("quarantine_dir", 0, "must not be inside the watched directory " + w.path.string());
  }
}

}  // namespace dedupd::daemon::config
