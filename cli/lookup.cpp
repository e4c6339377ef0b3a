// Read verbs: ask dedupd what it knows, and their command lines. The daemon's
// documents are checked (lookup_shapes.hpp) and then either printed as they
// are (--json, hashes already in Xet form) or turned into tables
// (lookup_print.hpp); query - streams (query_stream.hpp).
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <ostream>
#include <sstream>

#include "api/routes.hpp"
#include "cli/atomic_file.hpp"
#include "cli/client.hpp"
#include "cli/daemon_verbs.hpp"
#include "cli/fleet_verbs.hpp"
#include "cli/lookup_print.hpp"
#include "cli/lookup_shapes.hpp"
#include "cli/output.hpp"
#include "cli/query_stream.hpp"
#include "cli/verbs.hpp"
#include "shard/keys.hpp"
#include "shard/reader.hpp"

namespace dedupctl {

namespace api = dedupd::api;

namespace {

std::uint64_t now_s() { return std::uint64_t(std::time(nullptr)); }

std::string route(std::string_view prefix, std::string_view arg = {}) { return std::string(prefix) + std::string(arg); }

// ---- verbs ------------------------------------------------------------

struct QueryArgs {
  std::vector<std::string> hashes;  // HASH arguments, "-" for stdin
  std::string from;                 // --from FILE
  std::string format;               // --format; "" = table, or json with --json
  bool json_lines = false;
  std::string fields;
  bool local_only = false;  // --local-only
};

QueryFormat query_format(Context& ctx, const QueryArgs& q) {
  if (q.json_lines) {
    if (!q.format.empty() && q.format != "json-lines")
      throw CliError(kUsage, "--json-lines and --format " + q.format + " ask for two formats");
    return QueryFormat::json_lines;
  }
  if (q.format == "json-lines") return QueryFormat::json_lines;
  if (q.format == "short") return QueryFormat::short_text;
  if (q.format == "json" || (q.format.empty() && ctx.opt.json)) return QueryFormat::json_document;
  return QueryFormat::table;
}

int query(Context& ctx, const QueryArgs& q) {
  const std::vector<std::string>& args = q.hashes;
  const bool dash = std::find(args.begin(), args.end(), "-") != args.end();
  const QueryFormat format = query_format(ctx, q);
  QueryStreamOptions stream{format, q.fields, q.local_only};
  if (dash || !q.from.empty()) {
    if (args.size() > (dash ? 1u : 0u) || (dash && !q.from.empty()))
      throw CliError(kUsage, "give hashes as arguments, or with - (stdin) or --from FILE, one of them");
    if (q.from.empty()) return query_stream(ctx, ctx.io.in, "stdin", stream);
    std::ifstream file(q.from, std::ios::binary);
    if (!file) throw CliError(kBadInput, "cannot open " + q.from + ": " + std::strerror(errno));
    return query_stream(ctx, file, q.from, stream);
  }
  if (args.empty()) throw CliError(kUsage, "query needs a HASH, - (stdin) or --from FILE");
  auto [hashes, from_stdin] = chunk_hash_args(ctx, args);
  // The formats for scripts (and a field choice) stream from the arguments
  // too; the table and --json of a few hashes keep the documents.
  if (format == QueryFormat::json_lines || format == QueryFormat::short_text || !q.fields.empty()) {
    std::string text;
    for (const auto& h : hashes) text += h + "\n";
    std::istringstream in(text);
    return query_stream(ctx, in, "arguments", stream);
  }
  Client client(socket_of(ctx), ctx.opt.timeout_s);
  const std::uint64_t now = now_s();

  // One hash on the command line: the single-chunk document
  // {"hash","found","locations"}; otherwise the batch document.
  if (args.size() == 1 && !from_stdin) {
    const std::string& h = hashes[0];
    const std::string what = "query " + h;
    bool not_found = false;
    json doc = call(client, "GET", route(api::kChunk, h) + local_only_query(q.local_only), what, &not_found);
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
    json doc =
        call(client, "POST", std::string(api::kChunkBatch) + local_only_query(q.local_only), what, nullptr, body);
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
    // Complete or absent: a failed fetch never leaves a half shard where a
    // Xet client would load it.
    AtomicFile file(output);
    file.write(bytes);
    file.commit();
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
    auto args = std::make_shared<QueryArgs>();
    auto* q = app.add_subcommand("query", "Where does a chunk live? (raw chunk hashes; - reads stdin)");
    q->add_option("HASH", args->hashes, "Chunk hashes in Xet string form, or - for one per line on stdin");
    q->add_option("--from", args->from, "Read the hashes from FILE, one per line (any number, streamed)");
    q->add_option("--format", args->format, "Output: table (default), json, json-lines, short")
        ->check(CLI::IsMember({"table", "json", "json-lines", "short"}));
    q->add_flag("--json-lines", args->json_lines, "One JSON object per hash, in input order (--format json-lines)");
    q->add_option("--fields", args->fields,
                  "Fields of each result: hash,found,locations or xorb,chunk_index,byte_start,byte_end,"
                  "unpacked_bytes,flags,shards,origin (not with the table)");
    q->add_flag("--local-only", args->local_only, "Ask this host's index only, not the fleet");
    q->callback([&action, args] { action = [args](Context& ctx) { return query(ctx, *args); }; });
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
