// Admin verbs: ask dedupd to change its state. The daemon decides who may
// (root or its admin_group, by SO_PEERCRED); a 403 comes back as exit 77
// with the daemon's message, which names the group.
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <functional>
#include <memory>
#include <ostream>

#include "api/routes.hpp"
#include "cli/client.hpp"
#include "cli/daemon_verbs.hpp"
#include "cli/output.hpp"
#include "cli/verbs.hpp"
#include "shard/mapped_file.hpp"

namespace dedupctl {

namespace api = dedupd::api;

namespace {

std::string url_encode(std::string_view s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += char(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

int rescan(Context& ctx) {
  Client client(socket_of(ctx), ctx.opt.timeout_s);
  const std::string what = "rescan";
  json doc = call(client, "POST", std::string(api::kRescan), what);
  const auto scanned = need_u64(doc, "scanned", what);
  const auto ingested = need_u64(doc, "ingested", what);
  const auto rejected = need_u64(doc, "rejected", what);
  if (ctx.opt.json) print_json(ctx.out(), doc);
  else if (!ctx.opt.quiet)
    ctx.out() << "scanned " << count(scanned, "file") << ": " << grouped(ingested) << " ingested, "
              << ctx.style.paint(grouped(rejected) + " rejected", rejected ? Color::red : Color::none) << '\n';
  return kOk;
}

// The unit's ExecReload: synchronous, so `systemctl reload dedupd` fails
// with the file's errors instead of leaving them to the journal.
int reload(Context& ctx) {
  Client client(socket_of(ctx), ctx.opt.timeout_s);
  const std::string what = "reload";
  json doc = call(client, "POST", std::string(api::kReload), what);
  const json& not_applied = need_array(doc, "not_applied", what);
  if (ctx.opt.json) {
    print_json(ctx.out(), doc);
    return kOk;
  }
  if (ctx.opt.quiet) return kOk;
  if (!doc.contains("config") || !doc["config"].is_string()) {
    ctx.out() << "dedupd runs on its local defaults (no --config): nothing to reload\n";
    return kOk;
  }
  ctx.out() << "reloaded " << doc["config"].get<std::string>() << '\n';
  for (const auto& k : not_applied)
    if (k.is_string())
      ctx.out() << ctx.style.paint("  not applied until a restart: " + k.get<std::string>(), Color::yellow) << '\n';
  return kOk;
}

int purge(Context& ctx, bool dry_run) {
  Client client(socket_of(ctx), ctx.opt.timeout_s);
  const std::string what = dry_run ? "purge --dry-run" : "purge";
  json doc = call(client, "POST", std::string(api::kPurge) + (dry_run ? "?dry_run=1" : ""), what);
  const json& expired = need_array(doc, "expired", what);
  const json& deleted = need_array(doc, "deleted_files", what);
  for (const auto& s : expired) {
    need_hash(s, "hash", what);
    need_u64(s, "chunks", what);
    need_time(s, "expiry", what);
  }
  if (ctx.opt.json) {
    print_json(ctx.out(), doc);
    return kOk;
  }
  if (ctx.opt.quiet) return kOk;
  std::ostream& out = ctx.out();
  const std::uint64_t now = now_s();
  const std::string verb = dry_run ? "would expire" : "expired";
  if (expired.empty()) {
    out << (dry_run ? "nothing is due: no shard would expire now\n" : "nothing was due: no shard expired\n");
  } else {
    out << verb << ' ' << expired.size() << (expired.size() == 1 ? " shard" : " shards") << ":\n";
    Table t({{"SHARD"}, {"CHUNKS", Table::right}, {"EXPIRED"}}, "  ");
    for (const auto& s : expired) {
      std::optional<std::uint64_t> e;
      if (!s["expiry"].is_null()) e = s["expiry"].get<std::uint64_t>();
      t.add({s["hash"].get<std::string>(), grouped(s["chunks"]), e ? time_text(e, now) : "-"});
    }
    t.print(out, ctx.style);
  }
  if (!deleted.empty()) {
    out << (dry_run ? "would delete " : "deleted ") << deleted.size() << (deleted.size() == 1 ? " file" : " files")
        << " past their grace period:\n";
    for (const auto& p : deleted) out << "  " << (p.is_string() ? p.get<std::string>() : p.dump()) << '\n';
  }
  return kOk;
}

// An admin action on one shard: `method` on `route` + hash, whose answer
// holds the shard's summary under `key`; `say` prints it. nullopt: done
// (printed); a code: the exit code (no such shard).
int shard_action(Context& ctx, const std::string& arg, const char* verb, const char* method, std::string_view route,
                 const char* key, const std::function<void(const json&)>& say) {
  const std::string h = parse_hash_arg(arg, "shard hash");
  Client client(socket_of(ctx), ctx.opt.timeout_s);
  const std::string what = std::string(verb) + " " + h;
  bool not_found = false;
  json doc = call(client, method, std::string(route) + h, what, &not_found);
  if (not_found) {
    if (ctx.opt.json && !doc.empty()) print_json(ctx.out(), doc);
    if (!ctx.opt.quiet) ctx.err() << "dedupctl: " << what << ": no such shard\n";
    return kNotFound;
  }
  const json& shard = need(doc, key, what);
  need_hash(shard, "hash", what);
  need_u64(shard, "chunks", what);
  if (ctx.opt.json) print_json(ctx.out(), doc);
  else if (!ctx.opt.quiet) say(shard);
  return kOk;
}

int remove(Context& ctx, const std::string& arg) {
  return shard_action(ctx, arg, "remove", "DELETE", api::kShard, "removed", [&](const json& s) {
    ctx.out() << "removed shard " << s["hash"].get<std::string>() << " (" << grouped(s["chunks"])
              << " chunks left the index unless another shard holds them)\n";
  });
}

int restore(Context& ctx, const std::string& arg) {
  return shard_action(ctx, arg, "restore", "POST", api::kRestore, "restored", [&](const json& s) {
    ctx.out() << "shard " << s["hash"].get<std::string>() << " answers global-dedup queries again\n";
  });
}

int ingest(Context& ctx, const std::string& path) {
  auto m = dedupd::shard::MappedFile::open(path);
  if (!m) throw CliError(kBadInput, m.error().message);
  Client client(socket_of(ctx), ctx.opt.timeout_s);
  const std::string name = std::filesystem::path(path).filename().string();
  const std::string what = "ingest " + path;
  Response r = client.post(std::string(api::kIngest) + "?name=" + url_encode(name), m->bytes(),
                           "application/octet-stream", /*expect_continue=*/true);
  if (r.status != 200) throw status_error(r, what);
  json doc = parse_body(r, what);
  const json& list = need_array(doc, "shards", what);
  for (const auto& s : list) {
    need_hash(s, "hash", what);
    if (!need(s, "added", what).is_boolean()) throw CliError(kProtocol, what + ": \"added\" is not a boolean");
    need_u64(s, "xorbs", what);
    need_u64(s, "chunks", what);
    need_u64(s, "files", what);
  }
  if (ctx.opt.json) {
    print_json(ctx.out(), doc);
  } else if (!ctx.opt.quiet) {
    Table t({{"SHARD"}, {""}, {"FILES", Table::right}, {"XORBS", Table::right}, {"CHUNKS", Table::right}});
    for (const auto& s : list) {
      const bool added = s["added"].get<bool>();
      t.add({s["hash"].get<std::string>(),
             Table::Cell(added ? "added" : "already indexed", added ? Color::green : Color::none), grouped(s["files"]),
             grouped(s["xorbs"]), grouped(s["chunks"])});
    }
    t.print(ctx.out(), ctx.style);
  }
  return kOk;
}

// The daemon answers 202 and starts again in its process; the rebuild is
// then followed in /v1/status until the files found at start are in. While
// it restarts the socket may refuse a connection for a moment: asked again.
int index_rebuild(Context& ctx, bool wait) {
  const std::string what = "index rebuild";
  const std::uint64_t asked_at = now_s();
  {
    Client client(socket_of(ctx), ctx.opt.timeout_s);
    Response r = client.post(std::string(api::kIndexRebuild), std::string_view());
    if (r.status != 202) throw status_error(r, what);
  }
  if (!ctx.opt.quiet && !ctx.opt.json)
    ctx.out() << "dedupd moves the index aside and rebuilds it from the shards it knows\n";
  if (!wait) return kOk;
  std::string last;
  json doc;
  for (int tries = 0;; ++tries) {
    ::usleep(200 * 1000);
    try {
      Client client(socket_of(ctx), ctx.opt.timeout_s);
      doc = call(client, "GET", std::string(api::kStatus), what);
    } catch (const CliError&) {
      if (tries > 5 * 120) throw;  // two minutes without an answer
      continue;
    }
    const json h = doc.contains("index_health") && doc["index_health"].is_object() ? doc["index_health"] : json();
    if (!h.is_object() || h.value("found_at", std::uint64_t(0)) + 1 < asked_at) continue;  // not restarted yet
    const std::string state = h.value("state", std::string());
    const json rb = h.contains("rebuild") ? h["rebuild"] : json::object();
    std::string line = state + ": " + grouped(rb.value("files_done", std::uint64_t(0))) + " of " +
                       grouped(rb.value("files_total", std::uint64_t(0))) + " files";
    if (line != last && !ctx.opt.quiet && !ctx.opt.json) ctx.out() << line << std::endl;
    last = line;
    if (state == "rebuilt") break;
  }
  if (ctx.opt.json) {
    print_json(ctx.out(), doc["index_health"]);
  } else if (!ctx.opt.quiet) {
    ctx.out() << "the index is rebuilt; the old one is kept at "
              << doc["index_health"].value("moved_to", std::string("?")) << '\n';
  }
  return kOk;
}

}  // namespace

void add_admin_verbs(CLI::App& app, Action& action) {
  {
    auto* index = app.add_subcommand("index", "Admin: the index itself");
    index->require_subcommand(1);
    auto no_wait = std::make_shared<bool>(false);
    auto* rebuild = index->add_subcommand(
        "rebuild", "Admin: move the index aside and rebuild it from the shards dedupd knows, with progress");
    rebuild->add_flag("--no-wait", *no_wait, "Return once dedupd has taken the request");
    rebuild->callback(
        [&action, no_wait] { action = [no_wait](Context& ctx) { return index_rebuild(ctx, !*no_wait); }; });
  }
  app.add_subcommand("rescan", "Admin: scan the watched directories again now")->callback([&action] {
    action = rescan;
  });
  app.add_subcommand("reload",
                     "Admin: read the configuration file again and apply it (as SIGHUP), saying what waits "
                     "for a restart")
      ->callback([&action] { action = reload; });
  {
    auto dry = std::make_shared<bool>(false);
    auto* p = app.add_subcommand("purge", "Admin: expire now what is due (--dry-run lists it)");
    p->add_flag("-n,--dry-run", *dry, "Only list what would expire and which files would be deleted");
    p->callback([&action, dry] { action = [dry](Context& ctx) { return purge(ctx, *dry); }; });
  }
  add_one_argument_verb(app, action, "remove", "Admin: take a shard's entries out of the index", "SHARD", "Shard hash",
                        remove);
  add_one_argument_verb(app, action, "restore",
                        "Admin: a shard set aside after its CAS refused an upload answers global-dedup queries again",
                        "SHARD", "Shard hash", restore);
  add_one_argument_verb(app, action, "ingest", "Admin: send a shard (or .caf bundle) file to dedupd to index", "FILE",
                        "Shard or bundle file", ingest);
}

}  // namespace dedupctl
