#include "cli/state_verbs.hpp"

#include <cctype>
#include <optional>

#include "api/routes.hpp"
#include "cli/client.hpp"
#include "cli/daemon_verbs.hpp"
#include "cli/fleet_verbs.hpp"
#include "cli/lookup_print.hpp"
#include "cli/lookup_shapes.hpp"
#include "cli/output.hpp"

namespace dedupctl {

namespace api = dedupd::api;

namespace {

// Why a managed cache's entry cap is what it is, in words.
std::string entry_cap_why(const json& c) {
  std::string why = c.contains("max_chunk_entries_why") && c["max_chunk_entries_why"].is_string()
                        ? c["max_chunk_entries_why"].get<std::string>()
                        : std::string();
  if (why == "xet_endpoint") return "small: the local Xet endpoint is on, dedupd answers for the rest";
  if (why == "configured") return "xet_cache.max_chunk_entries";
  if (why == "client_default") return "the client's own";
  return why;
}

// The local Xet endpoint: where it forwards, and which of the chunk queries
// it passed to dedupd were answered here.
void add_xet_endpoint_fields(Fields& f, const json& e, std::uint64_t now) {
  auto n = [&](const char* key) {
    return e.contains(key) && e[key].is_number_unsigned() ? e[key].get<std::uint64_t>() : std::uint64_t(0);
  };
  const json up = e.contains("upstreams") && e["upstreams"].is_object() ? e["upstreams"] : json();
  const json cfg = e.contains("config") && e["config"].is_object() ? e["config"] : json();
  if (up.is_object())
    f.add("Xet endpoint", "Hub " + up.value("hub", std::string("?")) + ", CAS " + up.value("cas", std::string("?")));
  else f.add("Xet endpoint", "upstreams unknown (xet_endpoint.config not set)", Color::yellow);
  if (cfg.is_object()) {
    const std::string path = cfg.value("path", std::string("?"));
    const std::string problem = cfg.value("problem", std::string());
    if (!problem.empty()) f.add("Endpoint conf", problem, Color::red);
    else f.add("Endpoint conf", path + (cfg.value("present", false) ? "" : " (absent: the defaults)"));
  }
  const std::uint64_t local = n("local"), forwarded = n("forwarded");
  std::string line = grouped(local) + " answered here, " + grouped(forwarded) + " sent upstream";
  if (local + forwarded != 0) line += " (" + std::to_string(local * 100 / (local + forwarded)) + " % here)";
  f.add("Chunk queries", line + ", since " + time_text(n("since"), now));
  // The package's dedupd knows its endpoint's settings whether or not the
  // endpoint runs: say when nothing came from it, so its lines above are
  // not read as an endpoint at work.
  const json learning = e.contains("learning") && e["learning"].is_object() ? e["learning"] : json();
  auto heard = [&](const char* key) { return learning.is_object() && learning.value(key, std::uint64_t(0)) != 0; };
  if (local + forwarded == 0 && !heard("accepted") && !heard("refused") && !heard("failed") && !heard("held"))
    f.add("Endpoint", "nothing from it since dedupd started: off or idle (systemctl status dedupd-xet-endpoint)");
  if (e.contains("learning") && e["learning"].is_object()) {
    const json& l = e["learning"];
    auto m = [&](const char* key) {
      return l.contains(key) && l[key].is_number_unsigned() ? l[key].get<std::uint64_t>() : std::uint64_t(0);
    };
    if (!l.value("listening", false)) {
      f.add("Learning", "off (no endpoint configured, or its socket could not be bound: see the log)", Color::yellow);
    } else {
      std::string text = grouped(m("learned")) + " shards learned, " + grouped(m("already_known")) + " known, " +
                         grouped(m("refused")) + " refused by the CAS";
      if (m("set_aside")) text += " (" + grouped(m("set_aside")) + " shards set aside)";
      if (m("held")) text += ", " + grouped(m("held")) + " waiting";
      f.add("Learning", text, m("set_aside") ? Color::yellow : Color::none);
    }
  }
}

// "why n, ..." of the reasons counted at least once; "" when none.
std::string by_reason(const json& counts) {
  std::string out;
  if (!counts.is_object()) return out;
  for (const auto& [why, count] : counts.items())
    if (count.is_number_unsigned() && count.get<std::uint64_t>() != 0)
      out += (out.empty() ? "" : ", ") + why + " " + grouped(count.get<std::uint64_t>());
  return out;
}

// The endpoint's downloads: where the bytes its clients got came from, its
// cache, and the fleet's cache tier when nginx asked one.
void add_xet_download_fields(Fields& f, const json& d) {
  auto n = [](const json& o, const char* key) {
    return o.is_object() && o.contains(key) && o[key].is_number_unsigned() ? o[key].get<std::uint64_t>()
                                                                           : std::uint64_t(0);
  };
  if (!d.value("enabled", true)) {
    f.add("Downloads", "off (xet_endpoint.downloads.enabled): clients fetch from the CAS's storage", Color::yellow);
    return;
  }
  const json bytes = d.contains("bytes") ? d["bytes"] : json();
  const std::uint64_t local = n(bytes, "local_cache"), tier = n(bytes, "tier"), internet = n(bytes, "internet");
  f.add("Downloads", human_bytes(local) + " from the local cache, " + human_bytes(tier) + " from the tier, " +
                         human_bytes(internet) + " from the internet");
  if (local + tier + internet != 0)
    f.add("Hit ratio",
          std::to_string(local * 100 / (local + tier + internet)) + " % of the bytes from the local cache");
  const json requests = d.contains("requests") ? d["requests"] : json();
  if (n(requests, "refused") + n(requests, "failed") != 0) {
    const std::string why = by_reason(d.contains("refused") ? d["refused"] : json());
    f.add("Range URLs", grouped(n(requests, "refused")) + " refused (the client asks again" +
                            (why.empty() ? "" : "; " + why) + "), " + grouped(n(requests, "failed")) + " failed");
  }
  const json fills = d.contains("fill_failed") ? d["fill_failed"] : json();
  std::uint64_t failed_fills = 0;
  if (fills.is_object())
    for (const auto& [why, count] : fills.items())
      failed_fills += count.is_number_unsigned() ? count.get<std::uint64_t>() : 0;
  if (failed_fills != 0)
    f.add("Failed fills",
          grouped(failed_fills) + " (" + by_reason(fills) + "), " + human_bytes(n(d, "fill_failed_bytes")) +
              " fetched from the storage for nothing",
          Color::yellow);
  if (const std::uint64_t damaged = n(d, "cache_damaged"); damaged != 0)
    f.add("Damaged cache files",
          grouped(damaged) + " found at a grant (changed since their check, or failing it): removed, fetched again",
          Color::yellow);
  const json cache = d.contains("cache") ? d["cache"] : json();
  if (!cache.is_object()) f.add("Download cache", "not looked at yet");
  else if (!cache.value("known", false))
    f.add("Download cache", "size unknown: " + cache.value("problem", std::string("?")), Color::yellow);
  else
    f.add("Download cache", human_bytes(n(cache, "bytes")) + " in " + grouped(n(cache, "files")) + " files, " +
                                grouped(n(cache, "evictions")) + " evicted (" + cache.value("dir", std::string("?")) +
                                ")");
  if (!d.contains("tier") || !d["tier"].is_array() || d["tier"].empty()) return;
  std::string down;
  std::size_t hosts = 0, up = 0;
  for (const auto& h : d["tier"]) {
    ++hosts;
    if (h.value("up", false)) ++up;
    else down += (down.empty() ? "" : ", ") + h.value("host", std::string("?"));
  }
  if (down.empty()) f.add("Cache tier", std::to_string(hosts) + " host(s), all answering");
  else
    f.add("Cache tier", std::to_string(hosts - up) + " of " + std::to_string(hosts) + " host(s) not answering: " + down,
          up == 0 ? Color::red : Color::yellow);
}

}  // namespace

// The caches dedupd looks after (`manage: xet-cache`), each against its
// caps: what the Xet client loads at every session start.
void print_managed_caches(Context& ctx, Client& client) {
  bool not_found = false;  // a daemon from before managed caches
  json doc = call(client, "GET", std::string(api::kStatus), "status", &not_found);
  if (not_found || !doc.contains("xet_caches") || !doc["xet_caches"].is_array() || doc["xet_caches"].empty()) return;
  Table t({{"MANAGED XET CACHE"},
           {"FILES", Table::right},
           {"SIZE", Table::right},
           {"OF", Table::right},
           {"CHUNK ENTRIES", Table::right},
           {"OF", Table::right},
           {"MERGES", Table::right},
           {"EVICTED", Table::right},
           {"WAITING", Table::right}});
  for (const auto& c : doc["xet_caches"]) {
    auto n = [&](const char* key) { return c.contains(key) && c[key].is_number() ? c[key].get<std::uint64_t>() : 0; };
    t.add({c.value("endpoint", std::string("?")), grouped(n("files")), human_bytes(n("bytes")),
           human_bytes(n("max_bytes")), grouped(n("chunk_entries")), grouped(n("max_chunk_entries")),
           grouped(n("merges")), grouped(n("evicted")), grouped(n("pending_deletions"))});
  }
  ctx.out() << '\n';
  t.print(ctx.out(), ctx.style);
  // Why the steward holds back, per cache: what a table cell cannot say.
  auto text = [](const json& c, const char* key) {
    return c.contains(key) && c[key].is_string() ? c[key].get<std::string>() : std::string();
  };
  for (const auto& c : doc["xet_caches"]) {
    const std::string where = c.value("endpoint", std::string("?"));
    if (c.value("standing_by", false))
      ctx.out() << where << ": standing by, " << text(c, "lock_holder") << " stewards it\n";
    if (!text(c, "problem").empty()) ctx.out() << where << ": " << text(c, "problem") << '\n';
    if (text(c, "max_chunk_entries_why") == "xet_endpoint" || text(c, "max_chunk_entries_why") == "configured")
      ctx.out() << where << ": entry cap " << grouped(c.value("max_chunk_entries", std::uint64_t(0))) << ": "
                << entry_cap_why(c) << '\n';
    if (!c.value("standing_by", false) && c.contains("liveness") && c["liveness"].is_object() &&
        !c["liveness"].value("established", true))
      ctx.out() << where << ": clients unknown, originals wait for replaced_grace: "
                << c["liveness"].value("why", std::string("?")) << '\n';
    if (c.contains("holds_removed") && c["holds_removed"].is_array())
      for (const auto& r : c["holds_removed"])
        if (r.is_string()) ctx.out() << where << ": " << r.get<std::string>() << '\n';
    if (c.contains("set_aside") && c["set_aside"].is_array())
      for (const auto& r : c["set_aside"])
        if (r.is_string()) ctx.out() << where << ": held back " << r.get<std::string>() << '\n';
  }
}

int xet_cache_status(Context& ctx) {
  Client client(socket_of(ctx), ctx.opt.timeout_s);
  const std::string what = "xet-cache status";
  json doc = call(client, "GET", std::string(api::kStatus), what);
  const json& caches = need_array(doc, "xet_caches", what);
  if (ctx.opt.json) {
    print_json(ctx.out(), json{{"xet_caches", caches}});
    return kOk;
  }
  if (ctx.opt.quiet) return kOk;
  if (caches.empty()) {
    ctx.out() << "no managed Xet cache (watch entries with manage: xet-cache)\n";
    return kOk;
  }
  const std::uint64_t now = now_s();
  auto n = [](const json& c, const char* key) {
    return c.contains(key) && c[key].is_number_unsigned() ? c[key].get<std::uint64_t>() : std::uint64_t(0);
  };
  auto text = [](const json& c, const char* key) {
    return c.contains(key) && c[key].is_string() ? c[key].get<std::string>() : std::string();
  };
  bool first = true;
  for (const auto& c : caches) {
    if (!first) ctx.out() << '\n';
    first = false;
    Fields f;
    f.add("Cache", text(c, "endpoint"));
    if (c.value("standing_by", false)) {
      f.add("Lock", "standing by: " + text(c, "lock_holder") + " stewards it", Color::yellow);
      f.print(ctx.out(), ctx.style);
      continue;
    }
    if (!text(c, "problem").empty()) f.add("Problem", text(c, "problem"), Color::red);
    f.add("Last pass", n(c, "last_pass") == 0 ? std::string("none yet") : time_text(n(c, "last_pass"), now));
    f.add("Files", grouped(n(c, "files_before")) + " -> " + grouped(n(c, "files")));
    f.add("Size", human_bytes(n(c, "bytes_before")) + " -> " + human_bytes(n(c, "bytes")) + " of " +
                      human_bytes(n(c, "max_bytes")));
    const std::string cap_why = entry_cap_why(c);
    f.add("Chunk entries", grouped(n(c, "chunk_entries")) + " of " + grouped(n(c, "max_chunk_entries")) +
                               (cap_why.empty() ? "" : " (" + cap_why + ")"));
    f.add("Pending", grouped(n(c, "pending_deletions")) + " originals, " + human_bytes(n(c, "pending_bytes")));
    f.add("Done", grouped(n(c, "merges")) + " merges, " + grouped(n(c, "merged_away")) + " originals deleted, " +
                      grouped(n(c, "evicted")) + " evicted");
    const json liveness = c.contains("liveness") && c["liveness"].is_object() ? c["liveness"] : json::object();
    const bool known = liveness.value("established", false);
    std::string pids;
    if (c.contains("client_pids") && c["client_pids"].is_array())
      for (const auto& p : c["client_pids"]) pids += (pids.empty() ? " (pid " : ", ") + p.dump();
    if (!pids.empty()) pids += ")";
    f.add("Clients",
          (known ? grouped(n(c, "live_clients")) + " running" + pids
                 : "unknown, all count as alive: " + liveness.value("why", std::string("?"))),
          known ? Color::none : Color::yellow);
    f.add("Lock", "held by this dedupd");
    if (n(c, "removed_kept") != 0)
      f.add("Removed", grouped(n(c, "removed_kept")) + " files of removed shards, left alone");
    if (c.contains("pass") && c["pass"].is_object() && c["pass"].value("running", false))
      f.add("Pass", "under way, " + grouped(c["pass"].value("files_read", std::uint64_t(0))) + " files read");
    if (c.contains("holds_removed") && c["holds_removed"].is_array())
      for (const auto& r : c["holds_removed"])
        if (r.is_string()) f.add("Remove too", r.get<std::string>(), Color::red);
    if (c.contains("set_aside") && c["set_aside"].is_array())
      for (const auto& r : c["set_aside"])
        if (r.is_string()) f.add("Held back", r.get<std::string>(), Color::yellow);
    f.print(ctx.out(), ctx.style);
  }
  return kOk;
}

int xet_cache_plan(Context& ctx, const std::string& root) {
  Client client(socket_of(ctx), ctx.opt.timeout_s);
  const std::string what = "xet-cache plan";
  std::string query;
  if (!root.empty()) {
    query = "?root=";
    static const char* const kHex = "0123456789ABCDEF";
    for (unsigned char c : root) {
      if (std::isalnum(c) || c == '/' || c == '-' || c == '_' || c == '.' || c == '~') {
        query += char(c);
      } else {
        query += '%';
        query += kHex[c >> 4];
        query += kHex[c & 15];
      }
    }
  }
  json doc = call(client, "GET", route(api::kXetCachePlan, query), what);
  const json& caches = need_array(doc, "xet_caches", what);
  if (ctx.opt.json) {
    print_json(ctx.out(), doc);
    return kOk;
  }
  if (ctx.opt.quiet) return kOk;
  if (caches.empty()) ctx.out() << "no managed Xet cache" << (root.empty() ? "" : " under " + root) << '\n';
  bool first = true;
  for (const auto& c : caches) {
    if (!first) ctx.out() << '\n';
    first = false;
    const std::string where = c.value("endpoint", std::string("?"));
    if (c.value("standing_by", false)) {
      ctx.out() << where << ": standing by, " << c.value("lock_holder", std::string("?")) << " stewards it\n";
      continue;
    }
    const json liveness = c.contains("liveness") && c["liveness"].is_object() ? c["liveness"] : json::object();
    ctx.out() << where << ": " << (liveness.value("established", false) ? "" : "clients unknown, all count as alive: ")
              << liveness.value("why", std::string()) << '\n';
    const json steps = c.contains("steps") && c["steps"].is_array() ? c["steps"] : json::array();
    if (steps.empty()) {
      ctx.out() << "nothing to do\n";
    } else {
      Table t({{"ACTION"}, {"FILES", Table::right}, {"SAVES", Table::right}, {"ENTRIES", Table::right}, {"WHY"}});
      for (const auto& s : steps) {
        const std::size_t files = s.contains("files") && s["files"].is_array() ? s["files"].size() : 0;
        const std::string one = files == 1 && s["files"][0].is_string() ? s["files"][0].get<std::string>() : "";
        t.add({s.value("action", std::string("?")), grouped(files),
               human_bytes(s.value("bytes_saved", std::uint64_t(0))),
               grouped(s.value("entries_saved", std::uint64_t(0))),
               s.value("why", std::string()) + (one.empty() ? "" : " (" + one + ")")});
      }
      t.print(ctx.out(), ctx.style);
    }
    if (c.contains("set_aside") && c["set_aside"].is_array())
      for (const auto& r : c["set_aside"])
        if (r.is_string()) ctx.out() << "held back: " << r.get<std::string>() << '\n';
  }
  return kOk;
}

int shards(Context& ctx, const std::string& state) {
  Client client(socket_of(ctx), ctx.opt.timeout_s);
  const std::string what = "shards";
  json doc = call(client, "GET", route(api::kShards, state.empty() ? "" : "?state=" + state), what);
  const json& list = need_array(doc, "shards", what);
  for (const auto& s : list) check_shard_summary(s, what);
  if (ctx.opt.json) {
    print_json(ctx.out(), doc);
  } else if (!ctx.opt.quiet) {
    Table t({{"SHARD"}, {"STATE"}, {"CHUNKS", Table::right}, {"SIZE", Table::right}, {"EXPIRES"}, {"CAS"}, {"PATH"}});
    for (const auto& s : list) {
      std::string st = s["state"].get<std::string>();
      if (st == "live" && s.contains("set_aside") && s["set_aside"].is_object()) st = "set aside";
      std::optional<std::uint64_t> exp;
      if (!s["expiry"].is_null()) exp = s["expiry"].get<std::uint64_t>();
      std::string path = s["paths"].empty() ? "-" : s["paths"][0].is_string() ? s["paths"][0].get<std::string>() : "?";
      if (s["paths"].size() > 1) path += " (+" + std::to_string(s["paths"].size() - 1) + ")";
      if (st == "rejected" && s.contains("reason") && s["reason"].is_object())
        path += "  [" + s["reason"].value("rule", std::string("?")) + "]";
      t.add({s["hash"].is_string() ? s["hash"].get<std::string>() : "-",
             Table::Cell(st, st == "live"       ? Color::green
                             : st == "rejected" ? Color::red
                                                : Color::yellow),
             grouped(s["chunks"]), human_bytes(s["size"]), exp ? iso_local(*exp) : "never",
             s.contains("cas") && s["cas"].is_string() ? s["cas"].get<std::string>() : "unknown", path});
    }
    if (list.empty()) ctx.out() << "no shards" << (state.empty() ? "" : " in state " + state) << '\n';
    else t.print(ctx.out(), ctx.style);
    print_managed_caches(ctx, client);
  }
  return kOk;
}

int stats(Context& ctx) {
  Client client(socket_of(ctx), ctx.opt.timeout_s);
  json doc = call(client, "GET", std::string(api::kStats), "stats");
  check_stats(doc, "stats");
  if (ctx.opt.json) {
    print_json(ctx.out(), doc);
  } else if (!ctx.opt.quiet) {
    Fields f;
    add_stats_fields(f, doc, now_s());
    f.print(ctx.out(), ctx.style);
  }
  return kOk;
}

namespace {

// What went wrong and is being survived: a damaged index moved aside,
// files waiting for space, the state dir's free space.
void add_fault_fields(Fields& f, const json& doc) {
  if (doc.contains("index_health") && doc["index_health"].is_object()) {
    const json& h = doc["index_health"];
    const std::string state = h.value("state", std::string("ok"));
    if (state != "ok") {
      std::string line = state == "rebuilding" ? "DAMAGED, rebuilding from the shards" : "rebuilt after damage";
      if (h.contains("rebuild") && h["rebuild"].is_object())
        line += " (" + grouped(h["rebuild"].value("files_done", std::uint64_t(0))) + " of " +
                grouped(h["rebuild"].value("files_total", std::uint64_t(0))) + " files)";
      f.add("Index health", line, state == "rebuilding" ? Color::red : Color::yellow);
      f.add("Damage", h.value("damage", std::string()));
      if (!h.value("moved_to", std::string()).empty()) f.add("Kept at", h.value("moved_to", std::string()));
    }
  }
  if (doc.contains("state_dir_space") && doc["state_dir_space"].is_object()) {
    const json& sp = doc["state_dir_space"];
    const bool full = sp.value("disk_full", false);
    if (sp.contains("free_bytes") && sp["free_bytes"].is_number_unsigned())
      f.add("Free space",
            human_bytes(sp["free_bytes"]) + " of " + human_bytes(sp.value("size_bytes", std::uint64_t(0))) +
                (full ? ": DISK FULL, index writes fail" : ""),
            full ? Color::red : Color::none);
    else if (full) f.add("Free space", "DISK FULL, index writes fail", Color::red);
  }
  if (doc.contains("waiting") && doc["waiting"].is_object()) {
    const json& w = doc["waiting"];
    const std::uint64_t n = w.value("count", std::uint64_t(0));
    if (n > 0) {
      f.add("Waiting", grouped(n) + " file" + (n == 1 ? "" : "s") + " not indexed yet, retried by themselves",
            Color::yellow);
      if (w.contains("files") && w["files"].is_array() && !w["files"].empty()) {
        const json& o = w["files"][0];
        f.add("Oldest", o.value("path", std::string("?")) + ": " + o.value("rule", std::string("?")) + " for " +
                            duration(o.value("age_s", std::uint64_t(0))) + ", " +
                            std::to_string(o.value("attempts", std::uint64_t(0))) + " attempt(s)");
      }
    }
  }
}

}  // namespace

int status(Context& ctx) {
  Client client(socket_of(ctx), ctx.opt.timeout_s);
  const std::string what = "status";
  json doc = call(client, "GET", std::string(api::kStatus), what);
  need_str(doc, "version", what);
  need_u64(doc, "pid", what);
  need_u64(doc, "uptime_s", what);
  // While the index opens the daemon answers with "ready": false and no
  // stats; that is "up but not serving yet", exit 69 so scripts can wait.
  const bool ready = !doc.contains("ready") || (doc["ready"].is_boolean() && doc["ready"].get<bool>());
  if (ready) check_stats(need(doc, "stats", what), what);
  if (ctx.opt.json) {
    print_json(ctx.out(), doc);
  } else if (!ctx.opt.quiet) {
    Fields f;
    f.add("dedupd",
          std::string(ready ? "running" : "starting (index not open yet)") + ", version " +
              doc["version"].get<std::string>() + ", pid " + std::to_string(doc["pid"].get<std::uint64_t>()) + ", up " +
              duration(doc["uptime_s"].get<std::uint64_t>()),
          ready ? Color::green : Color::yellow);
    f.add("Socket",
          doc.contains("socket") && doc["socket"].is_string() ? doc["socket"].get<std::string>() : client.socket());
    if (doc.contains("state_dir") && doc["state_dir"].is_string())
      f.add("State dir", doc["state_dir"].get<std::string>());
    if (doc.contains("watch") && doc["watch"].is_array())
      for (const auto& w : doc["watch"]) f.add("Watching", w.is_string() ? w.get<std::string>() : w.dump());
    if (ready) add_stats_fields(f, doc["stats"], now_s());
    add_fault_fields(f, doc);
    if (doc.contains("fleet")) add_fleet_status_fields(f, doc["fleet"], now_s());
    if (doc.contains("xet_endpoint") && doc["xet_endpoint"].is_object())
      add_xet_endpoint_fields(f, doc["xet_endpoint"], now_s());
    if (doc.contains("xet_downloads") && doc["xet_downloads"].is_object())
      add_xet_download_fields(f, doc["xet_downloads"]);
    f.print(ctx.out(), ctx.style);
  }
  return ready ? kOk : kUnavailable;
}

}  // namespace dedupctl
