#include "daemon/api/global_dedup.hpp"

#include <algorithm>
#include <unordered_set>

#include "shard/writer.hpp"

namespace dedupd::daemon::http {

namespace {

std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) {
  return a > shard::kNoExpiry - b ? shard::kNoExpiry : a + b;
}

// How long a reply built from this shard stays valid for the client.
std::uint64_t reply_expiry(const index::ShardRef& s, const ReplySettings& settings) {
  std::uint64_t full = saturating_add(settings.now, settings.lifetime_s);
  if (!s.keyed || !s.expiry) return full;
  return std::min(full, *s.expiry);
}

// Best source first: raw before keyed, then the longest-lived answer, then
// the shard that stays in the index longest, then by hash (stable replies).
bool better(const SourceShard& a, const SourceShard& b, const ReplySettings& settings) {
  if (a.shard.keyed != b.shard.keyed) return !a.shard.keyed;
  std::uint64_t ea = reply_expiry(a.shard, settings), eb = reply_expiry(b.shard, settings);
  if (ea != eb) return ea > eb;
  std::uint64_t la = a.shard.expiry.value_or(shard::kNoExpiry), lb = b.shard.expiry.value_or(shard::kNoExpiry);
  if (la != lb) return la > lb;
  return a.shard.shard < b.shard.shard;
}

}  // namespace

std::optional<ReplyPlan> plan_reply(std::span<const SourceShard> holders, const ReplySettings& settings) {
  // One entry per shard: a chunk stored twice in one shard answers once.
  std::vector<SourceShard> sources;
  for (const SourceShard& h : holders)
    if (std::none_of(sources.begin(), sources.end(),
                     [&](const SourceShard& s) { return s.shard.shard == h.shard.shard; }))
      sources.push_back(h);
  if (sources.empty()) return std::nullopt;
  std::sort(sources.begin(), sources.end(),
            [&](const SourceShard& a, const SourceShard& b) { return better(a, b, settings); });

  ReplyPlan plan;
  const index::ShardRef& best = sources.front().shard;
  plan.rekey = !best.keyed;
  plan.key = best.keyed ? best.key : settings.key;
  plan.expiry = reply_expiry(best, settings);
  for (const SourceShard& s : sources) {
    bool same_key = plan.rekey ? !s.shard.keyed : s.shard.keyed && s.shard.key == best.key;
    if (same_key && reply_expiry(s.shard, settings) >= plan.expiry) plan.sources.push_back(s);
  }
  return plan;
}

std::vector<std::size_t> xorb_order(std::size_t count, std::size_t first) {
  std::vector<std::size_t> order;
  if (first >= count) first = 0;
  order.reserve(count);
  for (std::size_t i = first; i < count; ++i) order.push_back(i);
  for (std::size_t i = 0; i < first; ++i) order.push_back(i);
  return order;
}

namespace {

// Fills a reply from source shards in plan order within the bounds.
class ReplyFiller {
 public:
  explicit ReplyFiller(const ReplyBounds& bounds)
      : xorbs_left_(bounds.max_xorbs),
        bytes_left_(bounds.max_bytes > kReplyFramingBytes ? bounds.max_bytes - kReplyFramingBytes : 0) {}

  // The positions of `heads` to take from a shard whose xorb `own` holds the
  // chunk; sets full() once the next xorb did not fit.
  std::vector<std::size_t> choose(std::span<const index::Index::XorbHead> heads, const shard::Hash& own) {
    std::size_t first = 0;
    while (first < heads.size() && heads[first].hash != own) ++first;
    std::vector<std::size_t> wanted;
    for (std::size_t pos : xorb_order(heads.size(), first)) {
      const index::Index::XorbHead& h = heads[pos];
      if (taken_.contains(h.hash)) continue;
      std::uint64_t cost = xorb_block_bytes(h.chunks);
      bool must = taken_.empty();  // the chunk's own xorb: the answer itself
      if (!must && (xorbs_left_ == 0 || cost > bytes_left_)) {
        full_ = true;
        break;
      }
      wanted.push_back(pos);
      taken_.insert(h.hash);
      xorbs_left_ -= std::min<std::uint64_t>(xorbs_left_, 1);
      bytes_left_ -= std::min(bytes_left_, cost);
    }
    return wanted;
  }
  bool full() const { return full_; }

 private:
  std::uint64_t xorbs_left_, bytes_left_;
  std::unordered_set<shard::Hash> taken_;
  bool full_ = false;
};

}  // namespace

shard::Result<std::optional<std::vector<std::uint8_t>>> build_global_dedup_reply(const index::Index& idx,
                                                                                 const shard::Hash& raw_chunk,
                                                                                 const ReplySettings& settings) {
  using Out = std::optional<std::vector<std::uint8_t>>;
  auto locations = idx.lookup(raw_chunk);
  if (!locations) return locations.error();
  std::vector<SourceShard> holders;
  for (const index::Location& loc : *locations)
    for (const index::ShardRef& s : loc.shards) holders.push_back({s, loc.xorb});
  std::optional<ReplyPlan> plan = plan_reply(holders, settings);
  if (!plan) return Out();

  shard::ShardWriter writer;
  std::uint64_t on_disk = 0, in_xorbs = 0, xorbs = 0;
  ReplyFiller filler(settings.bounds);
  for (const SourceShard& source : plan->sources) {
    auto records = idx.shard_xorbs(source.shard.shard, [&](std::span<const index::Index::XorbHead> heads) {
      return filler.choose(heads, source.xorb);
    });
    if (!records) return records.error();
    if (!*records) continue;  // removed since the lookup
    for (shard::XorbRecord& rec : **records) {
      if (plan->rekey)
        for (shard::ChunkEntry& c : rec.chunks) c.chunk_hash = shard::keyed_chunk_hash(plan->key, c.chunk_hash);
      on_disk += rec.header.bytes_on_disk;
      in_xorbs += rec.header.bytes_in_xorb;
      ++xorbs;
      writer.add_xorb(std::move(rec));
    }
    if (filler.full()) break;
  }
  if (xorbs == 0) return Out();  // every holder went away since the lookup

  shard::WriteOptions options;
  options.with_footer = true;
  // As the server: no lookup tables, all their offsets = footer_offset.
  options.lookup_tables = shard::LookupTables::none_server_style;
  options.footer.creation_timestamp = settings.now;
  options.footer.chunk_hash_key = plan->key;
  options.footer.key_expiry = plan->expiry;
  options.footer.stored_bytes_on_disk = on_disk;
  options.footer.stored_bytes = in_xorbs;
  options.footer.materialized_bytes = 0;  // no files in a reply
  return Out(writer.write(options));
}

}  // namespace dedupd::daemon::http
