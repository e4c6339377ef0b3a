#include "cli/lookup_print.hpp"

#include <algorithm>
#include <cstdio>
#include <ctime>

#include "cli/daemon_verbs.hpp"
#include "cli/fleet_verbs.hpp"

namespace dedupctl {

// A location lives until its last shard expires; "never" if any never does.
std::optional<std::uint64_t> lives_until(const json& loc) {
  std::optional<std::uint64_t> latest = 0;
  for (const auto& s : loc["shards"]) {
    if (is_fleet_ref(s) || s["expiry"].is_null()) return std::nullopt;
    latest = std::max(*latest, s["expiry"].get<std::uint64_t>());
  }
  return latest;
}

std::string range_text(const json& loc) {
  return std::to_string(loc["byte_start"].get<std::uint64_t>()) + ".." +
         std::to_string(loc["byte_end"].get<std::uint64_t>());
}

void print_result_detail(Context& ctx, const json& r, std::uint64_t now) {
  std::ostream& out = ctx.out();
  const Style& s = ctx.style;
  const auto& locs = r["locations"];
  if (locs.empty()) {
    out << r["hash"].get<std::string>() << "  " << s.paint("not found", Color::red);
    const json* gone = r.contains("expired_shards") && r["expired_shards"].is_array() ? &r["expired_shards"] : nullptr;
    if (!gone || gone->empty()) {
      out << '\n';
      return;
    }
    // The index still knows who held it: say so, instead of a bare "not
    // found" that reads as "never seen".
    out << ": "
        << (gone->size() == 1 ? "the only shard that held it has expired" : "every shard that held it has expired")
        << '\n';
    Fields f("  ");
    for (const auto& sh : *gone) {
      std::optional<std::uint64_t> exp;
      if (sh.contains("expiry") && sh["expiry"].is_number_unsigned()) exp = sh["expiry"].get<std::uint64_t>();
      f.add("Shard",
            sh["shard"].get<std::string>() + (sh.value("keyed", false) ? "  keyed" : "  raw") + ", expired " +
                expiry_text(exp, now),
            Color::yellow);
    }
    out << '\n';
    f.print(out, s);
    return;
  }
  out << r["hash"].get<std::string>() << "  " << s.paint("found", Color::green) << ", " << locs.size()
      << (locs.size() == 1 ? " location" : " locations") << '\n';
  for (const auto& loc : locs) {
    out << '\n';
    Fields f("  ");
    f.add("Xorb", loc["xorb"].get<std::string>());
    std::string chunk = "#" + std::to_string(loc["chunk_index"].get<std::uint64_t>()) + ", bytes " + range_text(loc) +
                        " of the xorb, " + human_bytes(loc["unpacked_bytes"]) + " unpacked";
    if (loc.contains("flags") && loc["flags"].is_number_unsigned() && (loc["flags"].get<std::uint64_t>() & (1u << 31)))
      chunk += ", eligible for global dedup";
    f.add("Chunk", chunk);
    for (const auto& sh : loc["shards"]) {
      if (is_fleet_ref(sh)) {
        f.add("Shard", fleet_ref_text(sh), Color::none);
        continue;
      }
      std::optional<std::uint64_t> exp;
      if (!sh["expiry"].is_null()) exp = sh["expiry"].get<std::uint64_t>();
      const bool expired = exp && *exp <= now;
      f.add("Shard",
            sh["shard"].get<std::string>() + (sh["keyed"].get<bool>() ? "  keyed" : "  raw") + ", expires " +
                expiry_text(exp, now),
            expired ? Color::yellow : Color::none);
    }
    f.print(out, s);
  }
}

void print_results_table(Context& ctx, const json& results, std::uint64_t found, std::uint64_t missing) {
  Table t({{"CHUNK"},
           {"XORB"},
           {"#", Table::right},
           {"BYTES", Table::right},
           {"SIZE", Table::right},
           {"SHARDS", Table::right},
           {"LIVES UNTIL"}});
  for (const auto& r : results) {
    const std::string h = r["hash"].get<std::string>();
    if (r["locations"].empty()) {
      t.add({h, Table::Cell("not found", Color::red)});
      continue;
    }
    for (const auto& loc : r["locations"]) {
      auto until = lives_until(loc);
      t.add({h, loc["xorb"].get<std::string>(), std::to_string(loc["chunk_index"].get<std::uint64_t>()),
             range_text(loc), human_bytes(loc["unpacked_bytes"]), std::to_string(loc["shards"].size()),
             until ? iso_local(*until) : "never"});
    }
  }
  t.print(ctx.out(), ctx.style);
  ctx.out() << '\n'
            << ctx.style.paint(grouped(found) + " found", found ? Color::green : Color::none) << ", "
            << ctx.style.paint(grouped(missing) + " missing", missing ? Color::red : Color::none) << '\n';
}

std::string shard_ref_text(const json& sh, std::uint64_t now) {
  if (is_fleet_ref(sh)) return fleet_ref_text(sh);
  std::optional<std::uint64_t> exp;
  if (!sh["expiry"].is_null()) exp = sh["expiry"].get<std::uint64_t>();
  std::string text = sh["shard"].get<std::string>() + (sh["keyed"].get<bool>() ? "  keyed" : "  raw") + ", expires " +
                     expiry_text(exp, now);
  text += ", CAS " + (sh.contains("cas") && sh["cas"].is_string() ? sh["cas"].get<std::string>() : "unknown");
  if (sh.value("set_aside", false)) text += ", set aside";
  return text;
}

void print_shard_summary(Context& ctx, const json& s) {
  const std::uint64_t now = now_s();
  Fields f;
  f.add("Shard", s["hash"].is_string() ? s["hash"].get<std::string>() : "(unknown hash)");
  const std::string state = s["state"].get<std::string>();
  f.add("State", state, state == "live" ? Color::green : state == "rejected" ? Color::red : Color::yellow);
  for (const auto& p : s["paths"]) f.add("Path", p.is_string() ? p.get<std::string>() : p.dump());
  f.add("Size", grouped(s["size"]) + " bytes (" + human_bytes(s["size"]) + ")");
  std::optional<std::uint64_t> created, expiry;
  if (!s["created"].is_null()) created = s["created"].get<std::uint64_t>();
  if (!s["expiry"].is_null()) expiry = s["expiry"].get<std::uint64_t>();
  f.add("Created", time_text(created, now));
  f.add("Expires", expiry_text(expiry, now));
  if (s.contains("keyed") && s["keyed"].is_boolean()) f.add("Keyed", s["keyed"].get<bool>() ? "yes" : "no");
  f.add("Contents", count(s["files"], "file") + ", " + count(s["xorbs"], "xorb") + ", " + count(s["chunks"], "chunk"));
  if (s.contains("ingested_at") && s["ingested_at"].is_number_unsigned())
    f.add("Ingested", time_text(s["ingested_at"].get<std::uint64_t>(), now));
  if (s.contains("cas")) f.add("CAS", s["cas"].is_string() ? s["cas"].get<std::string>() : "unknown");
  if (s.contains("set_aside") && s["set_aside"].is_object()) {
    const json& a = s["set_aside"];
    std::optional<std::uint64_t> at;
    if (a.contains("at") && a["at"].is_number_unsigned()) at = a["at"].get<std::uint64_t>();
    f.add("Set aside",
          time_text(at, now) + ": " +
              (a.contains("reason") && a["reason"].is_string() ? a["reason"].get<std::string>() : ""),
          Color::yellow);
  }
  if (s.contains("reason") && s["reason"].is_object()) {
    const json& r = s["reason"];
    f.add("Reason",
          r.value("rule", std::string("?")) + " at offset " + std::to_string(r.value("offset", std::uint64_t(0))) +
              ": " + r.value("message", std::string()),
          Color::red);
  }
  f.print(ctx.out(), ctx.style);
}

namespace {

// Its memory per entry and what that buys: the share of absent forms that
// still cost a search.
void add_chunk_filter_field(Fields& f, const json& c) {
  const std::uint64_t bytes = c.value("bytes", std::uint64_t(0)), entries = c.value("entries", std::uint64_t(0));
  if (bytes == 0) return f.add("Chunk filter", "none yet (lookups search every form)", Color::yellow);
  char per_entry[64] = "";
  if (entries) std::snprintf(per_entry, sizeof per_entry, "%.2f B an entry, ", double(bytes) / double(entries));
  char rate[64];
  std::snprintf(rate, sizeof rate, "%.1f %%", c.value("false_positive_rate", 0.0) * 100);
  const bool at_bound = c.value("at_bound", false), in_service = c.value("in_service", false);
  f.add("Chunk filter",
        human_bytes(bytes) + " of " + human_bytes(c.value("max_bytes", std::uint64_t(0))) + " (" + per_entry +
            grouped(entries) + " entries, room for " + grouped(c.value("capacity", std::uint64_t(0))) +
            (at_bound ? ", at index.filter_memory" : "") + "); " + rate + " of absent forms searched" +
            (in_service ? "" : "; not in service (being built, or another process wrote)"),
        at_bound || !in_service ? Color::yellow : Color::none);
}

}  // namespace

void add_stats_fields(Fields& f, const json& s, std::uint64_t now) {
  const json& sh = s["shards"];
  f.add("Shards", grouped(sh["live"]) + " live, " + grouped(sh["expired"]) + " expired, " + grouped(sh["removed"]) +
                      " removed, " + grouped(sh["rejected"]) + " rejected");
  f.add("Index", count(s["chunks"], "chunk") + ", " + count(s["xorbs"], "xorb") + ", " + count(s["files"], "file") +
                     ", " + count(s["keys"], "key"));
  const std::uint64_t size = s["map_size"], used = s["map_used"];
  f.add("Database", human_bytes(s["db_bytes"]) + " on disk, map " + human_bytes(used) + " of " + human_bytes(size) +
                        " used" + (size ? " (" + std::to_string(used * 100 / size) + "%)" : std::string()));
  std::optional<std::uint64_t> next;
  if (!s["next_expiry"].is_null()) next = s["next_expiry"].get<std::uint64_t>();
  f.add("Next expiry", next ? time_text(next, now) : "none");
  // Older daemons do not report it.
  if (s.contains("chunk_filter") && s["chunk_filter"].is_object()) add_chunk_filter_field(f, s["chunk_filter"]);
}

}  // namespace dedupctl
