// GET /v1/chunks/default-merkledb/<hash> (and /v1/chunks/default/<hash>):
// the Xet global-dedup query, answered with a shard (global_dedup.hpp).
#include <algorithm>
#include <ctime>

#include "daemon/api/global_dedup.hpp"
#include "daemon/api/metrics.hpp"
#include "daemon/api/route_util.hpp"
#include "daemon/api/routes.hpp"

namespace dedupd::daemon::http {

namespace {

// Latest expiry among the shards holding a form; nullopt if one never expires.
std::optional<std::uint64_t> form_expiry(const index::XorbInfo& form) {
  std::uint64_t latest = 0;
  for (const auto& s : form.shards) {
    if (!s.expiry) return std::nullopt;
    latest = std::max(latest, *s.expiry);
  }
  return latest;
}

}  // namespace

Response get_global_dedup(Context& ctx, Request& req) {
  Response bad;
  auto chunk = hash_param(req.tail, "chunk", &bad);
  if (!chunk) return bad;
  const index::Index* idx = open_index(ctx);
  if (!idx) return not_ready();

  auto locations = idx->lookup(*chunk);
  if (!locations) return index_failure(req, locations.error());

  // Every stored form of every xorb holding the chunk; the builder decides
  // which of them a client can use (raw ones re-keyed, else one keyed set).
  std::vector<StoredXorb> forms;
  std::vector<shard::Hash> seen;
  for (const auto& loc : *locations) {
    if (std::find(seen.begin(), seen.end(), loc.xorb) != seen.end()) continue;
    seen.push_back(loc.xorb);
    auto stored = idx->xorb(loc.xorb);
    if (!stored) return index_failure(req, stored.error());
    for (auto& f : *stored) {
      if (f.shards.empty()) continue;  // no live shard vouches for it
      forms.push_back(
          {shard::XorbRecord{f.header, std::move(f.chunks)}, f.keyed ? f.key : shard::Key{}, form_expiry(f)});
    }
  }

  GlobalDedupKey key = ctx.service.global_dedup_key();
  auto reply = build_global_dedup_reply(forms, {key.key, std::uint64_t(std::time(nullptr)), key.reply_lifetime_s});
  ctx.metrics.count_global_dedup(reply.has_value());
  if (!reply) return error(kNotFound, "chunk not in the index");

  Response r;
  r.content_type = std::string(kOctets);
  r.body.assign(reinterpret_cast<const char*>(reply->data()), reply->size());
  return r;
}

}  // namespace dedupd::daemon::http
