#include "cli/dedup_shard.hpp"

#include <optional>
#include <ostream>
#include <span>

#include "api/routes.hpp"
#include "cli/atomic_file.hpp"
#include "cli/client.hpp"
#include "cli/daemon_verbs.hpp"
#include "cli/output.hpp"
#include "shard/keys.hpp"
#include "shard/reader.hpp"

namespace dedupctl {

namespace api = dedupd::api;

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

}  // namespace dedupctl
