// The command lines of the verbs that ask dedupd what it holds: lookups
// (lookup_requests.hpp), the shard list and status (state_verbs.hpp), dedup-shard.
#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <vector>

#include "cli/dedup_shard.hpp"
#include "cli/lookup_requests.hpp"
#include "cli/state_verbs.hpp"
#include "cli/verbs.hpp"

namespace dedupctl {

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
  add_one_argument_verb(app, action, "file", "A file's reconstruction terms and sha256", "HASH", "File hash", file);
  add_one_argument_verb(app, action, "sha256", "File hashes whose content has this sha256 (e.g. a Git LFS oid)", "HEX",
                        "sha256 as 64 hex digits", sha256);
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
  add_one_argument_verb(app, action, "shard", "One shard's state, paths, times and counts", "HASH",
                        "Shard hash (the <hash> of <hash>.mdb)", shard_info);
  app.add_subcommand("stats", "Index counts and sizes")->callback([&action] { action = stats; });
  app.add_subcommand("status", "Is dedupd up? Version, uptime, socket, counts, next expiry")->callback([&action] {
    action = status;
  });
  {
    auto* x = app.add_subcommand("xet-cache", "The Xet caches dedupd looks after (manage: xet-cache)");
    x->require_subcommand(1);
    x->add_subcommand("status", "Per cache: last pass, before -> after, pending, clients, lock, what is set aside")
        ->callback([&action] { action = xet_cache_status; });
    auto root = std::make_shared<std::string>();
    auto* p = x->add_subcommand("plan", "Dry run of the next pass: what would merge, be deleted or evicted, and why");
    p->add_option("ROOT", *root, "A managed cache (or one endpoint under it); all when left out");
    p->callback([&action, root] { action = [root](Context& ctx) { return xet_cache_plan(ctx, *root); }; });
  }
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
