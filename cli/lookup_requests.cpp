// Lookups: ask dedupd what it knows about one thing. The daemon's documents
// are checked (lookup_shapes.hpp) and then either printed as they are
// (--json, hashes already in Xet form) or turned into tables
// (lookup_print.hpp); query - streams (query_stream.hpp).
#include "cli/lookup_requests.hpp"

#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <ostream>
#include <sstream>

#include "api/routes.hpp"
#include "cli/client.hpp"
#include "cli/daemon_verbs.hpp"
#include "cli/fleet_verbs.hpp"
#include "cli/lookup_print.hpp"
#include "cli/lookup_shapes.hpp"
#include "cli/output.hpp"
#include "cli/query_stream.hpp"
#include "shard/keys.hpp"
#include "shard/reader.hpp"

namespace dedupctl {

namespace api = dedupd::api;

namespace {

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

}  // namespace

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
      json answer = {{"hash", h}, {"found", false}, {"locations", json::array()}};
      // Why, when dedupd can tell: the shards that held it, all expired.
      if (doc.is_object() && doc.contains("expired_shards") && doc["expired_shards"].is_array())
        answer["expired_shards"] = std::move(doc["expired_shards"]);
      doc = std::move(answer);
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

int shard_info(Context& ctx, const std::string& arg) {
  const std::string h = parse_hash_arg(arg, "shard hash");
  return lookup_one(ctx, api::kShard, h, "shard " + h, check_shard_summary,
                    [&](const json& d) { print_shard_summary(ctx, d); });
}

}  // namespace dedupctl
