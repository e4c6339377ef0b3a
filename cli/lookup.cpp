// Read verbs: ask dedupd what it knows. The daemon's documents are checked
// for the fields we use (a daemon of another version fails loudly, 76, not
// with a half-printed table) and then either printed as they are (--json,
// hashes already in Xet form) or turned into tables.
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <ostream>

#include "api/routes.hpp"
#include "cli/client.hpp"
#include "cli/daemon_verbs.hpp"
#include "cli/fleet_verbs.hpp"
#include "cli/output.hpp"
#include "cli/verbs.hpp"
#include "shard/keys.hpp"
#include "shard/reader.hpp"

namespace dedupctl {

namespace api = dedupd::api;

namespace {

std::uint64_t now_s() { return std::uint64_t(std::time(nullptr)); }

std::string route(std::string_view prefix, std::string_view arg = {}) { return std::string(prefix) + std::string(arg); }

// ---- shapes (docs/API.md) ---------------------------------------------

void check_shard_ref(const json& s, std::string_view what) {
  need_hash(s, "shard", what);
  if (is_fleet_ref(s)) return (void)need_array(s, "holders", what);
  need_time(s, "expiry", what);
  if (!need(s, "keyed", what).is_boolean())
    throw CliError(kProtocol, std::string(what) + ": \"keyed\" is not a boolean");
}

void check_location(const json& loc, std::string_view what) {
  need_hash(loc, "xorb", what);
  need_u64(loc, "chunk_index", what);
  need_u64(loc, "byte_start", what);
  need_u64(loc, "byte_end", what);
  need_u64(loc, "unpacked_bytes", what);
  for (const auto& s : need_array(loc, "shards", what)) check_shard_ref(s, what);
}

void check_result(const json& r, std::string_view what, const std::string& expect_hash) {
  if (need_hash(r, "hash", what) != expect_hash)
    throw CliError(kProtocol, std::string(what) + ": dedupd answered for hash " + r["hash"].get<std::string>() +
                                  ", asked " + expect_hash);
  if (!need(r, "found", what).is_boolean())
    throw CliError(kProtocol, std::string(what) + ": \"found\" is not a boolean");
  for (const auto& loc : need_array(r, "locations", what)) check_location(loc, what);
  if (r["found"].get<bool>() != !r["locations"].empty())
    throw CliError(kProtocol, std::string(what) + ": \"found\" disagrees with \"locations\"");
}

void check_shard_summary(const json& s, std::string_view what) {
  // A rejected entry is a file whose content hash may be unknown (null).
  if (!(need(s, "hash", what).is_null() && s.value("state", std::string()) == "rejected")) need_hash(s, "hash", what);
  need_str(s, "state", what);
  need_array(s, "paths", what);
  need_u64(s, "size", what);
  need_time(s, "created", what);
  need_time(s, "expiry", what);
  need_u64(s, "chunks", what);
  need_u64(s, "xorbs", what);
  need_u64(s, "files", what);
}

void check_stats(const json& s, std::string_view what) {
  const json& shards = need(s, "shards", what);
  for (const char* k : {"live", "expired", "removed", "rejected"}) need_u64(shards, k, what);
  for (const char* k : {"xorbs", "chunks", "files", "keys", "db_bytes", "map_size", "map_used"}) need_u64(s, k, what);
  need_time(s, "next_expiry", what);
}

// ---- presentation -----------------------------------------------------

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
    out << r["hash"].get<std::string>() << "  " << s.paint("not found", Color::red) << '\n';
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

// ---- verbs ------------------------------------------------------------

int query(Context& ctx, const std::vector<std::string>& args, bool local_only) {
  auto [hashes, from_stdin] = chunk_hash_args(ctx, args);
  Client client(socket_of(ctx), ctx.opt.timeout_s);
  const std::uint64_t now = now_s();

  // One hash on the command line: the single-chunk document
  // {"hash","found","locations"}; otherwise the batch document.
  if (args.size() == 1 && !from_stdin) {
    const std::string& h = hashes[0];
    const std::string what = "query " + h;
    bool not_found = false;
    json doc = call(client, "GET", route(api::kChunk, h) + local_only_query(local_only), what, &not_found);
    warn_if_fleet_unavailable(ctx, doc);
    if (not_found) {
      doc = {{"hash", h}, {"found", false}, {"locations", json::array()}};
    } else {
      check_result(doc, what, h);
    }
    const bool found = doc["found"].get<bool>();
    if (ctx.opt.json) print_json(ctx.out(), doc);
    else if (!ctx.opt.quiet) print_result_detail(ctx, doc, now);
    return found ? kOk : kNotFound;
  }

  json results = json::array();
  std::uint64_t found = 0, missing = 0;
  std::string body;
  for (std::size_t at = 0; at < hashes.size(); at += api::kMaxBatchHashes) {
    const std::size_t n = std::min(api::kMaxBatchHashes, hashes.size() - at);
    body.clear();
    body.reserve(16 + n * 67);
    body += "{\"hashes\":[";
    for (std::size_t i = 0; i < n; ++i) {
      if (i) body += ',';
      body += '"';
      body += hashes[at + i];
      body += '"';
    }
    body += "]}";
    const std::string what = "query (batch of " + std::to_string(n) + ")";
    json doc = call(client, "POST", std::string(api::kChunkBatch) + local_only_query(local_only), what, nullptr, body);
    warn_if_fleet_unavailable(ctx, doc);
    need_array(doc, "results", what);
    json& batch = doc["results"];
    if (batch.size() != n)
      throw CliError(kProtocol, what + ": dedupd answered " + std::to_string(batch.size()) + " results for " +
                                    std::to_string(n) + " hashes");
    for (std::size_t i = 0; i < n; ++i) {
      check_result(batch[i], what, hashes[at + i]);
      (batch[i]["found"].get<bool>() ? found : missing) += 1;
      results.push_back(std::move(batch[i]));
    }
  }
  if (ctx.opt.json) {
    print_json(ctx.out(), {{"results", std::move(results)}, {"found", found}, {"missing", missing}});
  } else if (!ctx.opt.quiet) {
    print_results_table(ctx, results, found, missing);
  }
  return missing ? kNotFound : kOk;
}

// GET <prefix><hash>; 404 -> exit 1 (the daemon's document printed with --json).
template <class Check, class Print>
int lookup_one(Context& ctx, std::string_view prefix, const std::string& key, const std::string& what, Check check,
               Print print) {
  Client client(socket_of(ctx), ctx.opt.timeout_s);
  bool not_found = false;
  json doc = call(client, "GET", route(prefix, key), what, &not_found);
  warn_if_fleet_unavailable(ctx, doc);
  if (not_found) {
    if (ctx.opt.json && !doc.empty()) print_json(ctx.out(), doc);
    if (!ctx.opt.quiet) ctx.err() << "dedupctl: " << what << ": not found\n";
    return kNotFound;
  }
  check(doc, what);
  if (ctx.opt.json) print_json(ctx.out(), doc);
  else if (!ctx.opt.quiet) print(doc);
  return kOk;
}

std::string shard_ref_text(const json& sh, std::uint64_t now) {
  if (is_fleet_ref(sh)) return fleet_ref_text(sh);
  std::optional<std::uint64_t> exp;
  if (!sh["expiry"].is_null()) exp = sh["expiry"].get<std::uint64_t>();
  return sh["shard"].get<std::string>() + (sh["keyed"].get<bool>() ? "  keyed" : "  raw") + ", expires " +
         expiry_text(exp, now);
}

int xorb(Context& ctx, const std::string& arg, bool list_chunks) {
  const std::string h = parse_hash_arg(arg, "xorb hash");
  return lookup_one(
      ctx, api::kXorb, h, "xorb " + h,
      [](const json& d, std::string_view what) {
        need_hash(d, "xorb", what);
        need_u64(d, "num_chunks", what);
        need_u64(d, "bytes_in_xorb", what);
        need_u64(d, "bytes_on_disk", what);
        for (const auto& c : need_array(d, "chunks", what)) {
          need_u64(c, "index", what);
          need_hash(c, "hash", what);
          need_u64(c, "byte_start", what);
          need_u64(c, "unpacked_bytes", what);
        }
        for (const auto& s : need_array(d, "shards", what)) check_shard_ref(s, what);
      },
      [&](const json& d) {
        const std::uint64_t now = now_s();
        const bool keyed = d.contains("keyed") && d["keyed"].is_boolean() && d["keyed"].get<bool>();
        Fields f;
        f.add("Xorb", d["xorb"].get<std::string>());
        f.add("Chunks", grouped(d["num_chunks"]));
        f.add("Bytes", human_bytes(d["bytes_in_xorb"]) + " unpacked, " + human_bytes(d["bytes_on_disk"]) + " on disk");
        f.add("Chunk hashes", keyed ? "stored keyed (as the shard holds them)" : "raw");
        for (const auto& s : d["shards"]) f.add("Shard", shard_ref_text(s, now));
        // The same xorb stored under other keys (global-dedup replies).
        if (d.contains("other_forms") && d["other_forms"].is_array())
          for (const auto& o : d["other_forms"]) {
            std::string text = o.value("keyed", false) ? "keyed" : "raw";
            if (o.contains("shards") && o["shards"].is_array())
              for (const auto& s : o["shards"])
                if (s.is_object() && s.contains("shard") && s["shard"].is_string())
                  text += ", shard " + s["shard"].get<std::string>();
            f.add("Other form", text);
          }
        f.print(ctx.out(), ctx.style);
        if (!list_chunks) return;
        ctx.out() << '\n';
        Table t({{"#", Table::right}, {"HASH"}, {"START", Table::right}, {"SIZE", Table::right}, {"FLAGS"}});
        for (const auto& c : d["chunks"]) {
          const bool eligible =
              c.contains("flags") && c["flags"].is_number_unsigned() && (c["flags"].get<std::uint64_t>() & (1u << 31));
          t.add({std::to_string(c["index"].get<std::uint64_t>()), c["hash"].get<std::string>(),
                 grouped(c["byte_start"]), grouped(c["unpacked_bytes"]), eligible ? "eligible" : ""});
        }
        t.print(ctx.out(), ctx.style);
      });
}

int file(Context& ctx, const std::string& arg) {
  const std::string h = parse_hash_arg(arg, "file hash");
  return lookup_one(
      ctx, api::kFile, h, "file " + h,
      [](const json& d, std::string_view what) {
        need_hash(d, "file", what);
        need_u64(d, "size", what);
        const json& sha = need(d, "sha256", what);
        if (!sha.is_null() && !sha.is_string()) throw CliError(kProtocol, std::string(what) + ": bad \"sha256\"");
        for (const auto& t : need_array(d, "terms", what)) {
          need_hash(t, "xorb", what);
          need_u64(t, "chunk_start", what);
          need_u64(t, "chunk_end", what);
          need_u64(t, "unpacked_bytes", what);
        }
        need_array(d, "shards", what);
      },
      [&](const json& d) {
        Fields f;
        f.add("File", d["file"].get<std::string>());
        f.add("Size", grouped(d["size"]) + " bytes (" + human_bytes(d["size"]) + ")");
        f.add("SHA-256", d["sha256"].is_null() ? "-" : d["sha256"].get<std::string>());
        if (d.contains("verification") && d["verification"].is_boolean())
          f.add("Verification", d["verification"].get<bool>() ? "yes" : "no");
        for (const auto& s : d["shards"]) f.add("Shard", s.is_string() ? s.get<std::string>() : s.dump());
        f.print(ctx.out(), ctx.style);
        ctx.out() << '\n' << ctx.style.paint("Terms (" + grouped(d["terms"].size()) + ")", Color::bold) << '\n';
        Table t({{"#", Table::right}, {"XORB"}, {"CHUNKS", Table::right}, {"UNPACKED", Table::right}}, "  ");
        std::size_t i = 0;
        for (const auto& term : d["terms"])
          t.add({std::to_string(i++), term["xorb"].get<std::string>(),
                 std::to_string(term["chunk_start"].get<std::uint64_t>()) + ".." +
                     std::to_string(term["chunk_end"].get<std::uint64_t>()),
                 human_bytes(term["unpacked_bytes"])});
        t.print(ctx.out(), ctx.style);
      });
}

int sha256(Context& ctx, const std::string& arg) {
  // A content sha256 is ordinary hex (the Git LFS oid), not a Xet hash;
  // only its shape is checked here.
  auto parsed = dedupd::shard::Hash::parse_hex_bytes(arg);
  if (!parsed) throw CliError(kBadInput, "malformed sha256 '" + arg.substr(0, 80) + "': " + parsed.error().message);
  const std::string hex = parsed->to_hex_bytes();
  return lookup_one(
      ctx, api::kSha256, hex, "sha256 " + hex,
      [](const json& d, std::string_view what) {
        for (const auto& f : need_array(d, "files", what))
          if (!f.is_string() || !dedupd::shard::Hash::parse(f.get<std::string>()))
            throw CliError(kProtocol, std::string(what) + ": malformed file hash in \"files\"");
      },
      [&](const json& d) {
        for (const auto& f : d["files"]) ctx.out() << f.get<std::string>() << '\n';
      });
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
  if (s.contains("reason") && s["reason"].is_object()) {
    const json& r = s["reason"];
    f.add("Reason",
          r.value("rule", std::string("?")) + " at offset " + std::to_string(r.value("offset", std::uint64_t(0))) +
              ": " + r.value("message", std::string()),
          Color::red);
  }
  f.print(ctx.out(), ctx.style);
}

int shard(Context& ctx, const std::string& arg) {
  const std::string h = parse_hash_arg(arg, "shard hash");
  return lookup_one(ctx, api::kShard, h, "shard " + h, check_shard_summary,
                    [&](const json& d) { print_shard_summary(ctx, d); });
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
    const std::uint64_t now = now_s();
    Table t({{"SHARD"}, {"STATE"}, {"CHUNKS", Table::right}, {"SIZE", Table::right}, {"EXPIRES"}, {"PATH"}});
    for (const auto& s : list) {
      const std::string st = s["state"].get<std::string>();
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
             grouped(s["chunks"]), human_bytes(s["size"]), exp ? iso_local(*exp) : "never", path});
      (void)now;
    }
    if (list.empty()) ctx.out() << "no shards" << (state.empty() ? "" : " in state " + state) << '\n';
    else t.print(ctx.out(), ctx.style);
  }
  return kOk;
}

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
    if (doc.contains("fleet")) add_fleet_status_fields(f, doc["fleet"], now_s());
    f.print(ctx.out(), ctx.style);
  }
  return ready ? kOk : kUnavailable;
}

// Writes next to the target and renames, so a failed fetch never leaves a
// half shard where a Xet client would load it.
void write_atomically(const std::string& path, const std::string& bytes) {
  const std::string tmp = path + ".dedupctl-tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw CliError(kBadInput, "cannot write " + tmp + ": " + std::strerror(errno));
    f.write(bytes.data(), std::streamsize(bytes.size()));
    f.flush();
    if (!f) {
      std::remove(tmp.c_str());
      throw CliError(kBadInput, "cannot write " + tmp + ": " + std::strerror(errno));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    std::remove(tmp.c_str());
    throw CliError(kBadInput, "cannot rename " + tmp + " to " + path + ": " + std::strerror(e));
  }
}

int dedup_shard(Context& ctx, const std::string& arg, const std::string& output) {
  const std::string h = parse_hash_arg(arg, "chunk hash");
  if (output == "-" && ctx.opt.json)
    throw CliError(kUsage, "--json and -o - both want stdout; write the shard to a file");
  Client client(socket_of(ctx), ctx.opt.timeout_s);
  const std::string what = "dedup-shard " + h;
  Response r = client.get(route(api::kGlobalDedup, h));
  if (r.status == 404) {
    if (!ctx.opt.quiet) ctx.err() << "dedupctl: " << what << ": no xorb holds this chunk\n";
    return kNotFound;
  }
  if (r.status != 200) throw status_error(r, what);
  // The reply must be a shard a Xet client can load: check before writing.
  auto bytes = std::span(reinterpret_cast<const std::uint8_t*>(r.body.data()), r.body.size());
  auto view = dedupd::shard::ShardView::parse(bytes);
  if (!view) throw CliError(kProtocol, what + ": dedupd sent an invalid shard: " + view.error().to_string());
  const std::string shard_hash = dedupd::shard::shard_file_hash(bytes).to_string();

  if (output == "-") {
    ctx.out().write(r.body.data(), std::streamsize(r.body.size()));
  } else {
    write_atomically(output, r.body);
  }
  const auto& st = view->stats();
  const auto expiry = view->expiry();
  const std::uint64_t created = view->creation_timestamp();
  if (ctx.opt.json) {
    print_json(ctx.out(), {{"chunk", h},
                           {"path", output},
                           {"size", r.body.size()},
                           {"shard_hash", shard_hash},
                           {"xorbs", st.xorbs},
                           {"chunks", st.chunks},
                           {"keyed", view->keyed()},
                           {"hmac_key", view->chunk_key().to_string()},
                           {"created", view->has_footer() ? json(created) : json(nullptr)},
                           {"expiry", expiry ? json(*expiry) : json(nullptr)}});
  } else if (!ctx.opt.quiet) {
    // With -o - the shard owns stdout; the summary goes to stderr.
    std::ostream& out = output == "-" ? ctx.err() : ctx.out();
    const std::uint64_t now = now_s();
    Fields f;
    f.add("Wrote", grouped(r.body.size()) + " bytes to " + (output == "-" ? "stdout" : output));
    f.add("Shard hash", shard_hash);
    f.add("Holds", count(st.xorbs, "xorb") + ", " + count(st.chunks, "chunk") + " (the xorbs that have the chunk)");
    f.add("Chunk key", view->keyed() ? view->chunk_key().to_string() + " (hashes keyed)" : "zero (raw hashes)");
    if (view->has_footer()) f.add("Created", time_text(created, now));
    f.add("Expires", expiry_text(expiry, now));
    f.print(out, ctx.style);
  }
  return kOk;
}

}  // namespace

void add_lookup_verbs(CLI::App& app, Action& action) {
  {
    auto hashes = std::make_shared<std::vector<std::string>>();
    auto local_only = std::make_shared<bool>(false);
    auto* q = app.add_subcommand("query", "Where does a chunk live? (raw chunk hashes; - reads stdin)");
    q->add_option("HASH", *hashes, "Chunk hashes in Xet string form, or - for one per line on stdin")->required();
    q->add_flag("--local-only", *local_only, "Ask this host's index only, not the fleet");
    q->callback([&action, hashes, local_only] {
      action = [hashes, local_only](Context& ctx) { return query(ctx, *hashes, *local_only); };
    });
  }
  {
    auto h = std::make_shared<std::string>();
    auto chunks = std::make_shared<bool>(false);
    auto* x = app.add_subcommand("xorb", "A xorb's chunks, sizes and shards");
    x->add_option("HASH", *h, "Xorb hash")->required();
    x->add_flag("--chunks", *chunks, "List every chunk");
    x->callback([&action, h, chunks] { action = [h, chunks](Context& ctx) { return xorb(ctx, *h, *chunks); }; });
  }
  {
    auto h = std::make_shared<std::string>();
    auto* f = app.add_subcommand("file", "A file's reconstruction terms and sha256");
    f->add_option("HASH", *h, "File hash")->required();
    f->callback([&action, h] { action = [h](Context& ctx) { return file(ctx, *h); }; });
  }
  {
    auto h = std::make_shared<std::string>();
    auto* s = app.add_subcommand("sha256", "File hashes whose content has this sha256 (e.g. a Git LFS oid)");
    s->add_option("HEX", *h, "sha256 as 64 hex digits")->required();
    s->callback([&action, h] { action = [h](Context& ctx) { return sha256(ctx, *h); }; });
  }
  {
    auto state = std::make_shared<std::string>();
    auto* s = app.add_subcommand("shards", "List indexed shards and their state");
    auto* live = s->add_flag_callback(
        "--live", [state] { *state = "live"; }, "Only live shards");
    auto* expired = s->add_flag_callback(
        "--expired", [state] { *state = "expired"; }, "Only expired shards");
    auto* rejected = s->add_flag_callback(
        "--rejected", [state] { *state = "rejected"; }, "Only rejected files");
    auto* removed = s->add_flag_callback(
        "--removed", [state] { *state = "removed"; }, "Only removed shards");
    std::vector<CLI::Option*> all{live, expired, rejected, removed};
    for (auto* a : all)
      for (auto* b : all)
        if (a != b) a->excludes(b);
    s->callback([&action, state] { action = [state](Context& ctx) { return shards(ctx, *state); }; });
  }
  {
    auto h = std::make_shared<std::string>();
    auto* s = app.add_subcommand("shard", "One shard's state, paths, times and counts");
    s->add_option("HASH", *h, "Shard hash (the <hash> of <hash>.mdb)")->required();
    s->callback([&action, h] { action = [h](Context& ctx) { return shard(ctx, *h); }; });
  }
  app.add_subcommand("stats", "Index counts and sizes")->callback([&action] { action = stats; });
  app.add_subcommand("status", "Is dedupd up? Version, uptime, socket, counts, next expiry")->callback([&action] {
    action = status;
  });
  {
    auto h = std::make_shared<std::string>();
    auto out = std::make_shared<std::string>();
    auto* d = app.add_subcommand("dedup-shard", "Fetch the Xet global-dedup reply for a chunk as a shard file");
    d->add_option("HASH", *h, "Chunk hash")->required();
    d->add_option("-o,--output", *out, "Where to write the shard (- for stdout)")->required();
    d->callback([&action, h, out] { action = [h, out](Context& ctx) { return dedup_shard(ctx, *h, *out); }; });
  }
}

}  // namespace dedupctl
