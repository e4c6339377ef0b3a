#include "daemon/api/render/global_dedup.hpp"

#include <algorithm>
#include <unordered_set>

#include "shard/reader.hpp"
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

// The reply's bytes: xorbs in plan order, their chunk hashes keyed with the
// plan's key when the sources are raw; the footer says key and expiry.
class ReplyShard {
 public:
  explicit ReplyShard(const ReplyPlan& plan) : plan_(plan) {}

  void add(shard::XorbRecord rec) {
    if (plan_.rekey)
      for (shard::ChunkEntry& c : rec.chunks) c.chunk_hash = shard::keyed_chunk_hash(plan_.key, c.chunk_hash);
    on_disk_ += rec.header.bytes_on_disk;
    in_xorbs_ += rec.header.bytes_in_xorb;
    ++xorbs_;
    writer_.add_xorb(std::move(rec));
  }

  // nullopt when no xorb went in (every source went away).
  std::optional<std::vector<std::uint8_t>> write(std::uint64_t now) const {
    if (xorbs_ == 0) return std::nullopt;
    shard::WriteOptions options;
    options.with_footer = true;
    // As the server: no lookup tables, all their offsets = footer_offset.
    options.lookup_tables = shard::LookupTables::none_server_style;
    options.footer.creation_timestamp = now;
    options.footer.chunk_hash_key = plan_.key;
    options.footer.key_expiry = plan_.expiry;
    options.footer.stored_bytes_on_disk = on_disk_;
    options.footer.stored_bytes = in_xorbs_;
    options.footer.materialized_bytes = 0;  // no files in a reply
    return writer_.write(options);
  }

 private:
  const ReplyPlan& plan_;
  shard::ShardWriter writer_;
  std::uint64_t on_disk_ = 0, in_xorbs_ = 0, xorbs_ = 0;
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
    for (const index::ShardRef& s : loc.shards)
      if (!s.set_aside && (!settings.scope || settings.scope->admits(s.cas))) holders.push_back({s, loc.xorb});
  std::optional<ReplyPlan> plan = plan_reply(holders, settings);
  if (!plan) return Out();

  ReplyShard reply(*plan);
  ReplyFiller filler(settings.bounds);
  for (const SourceShard& source : plan->sources) {
    auto records = idx.shard_xorbs(source.shard.shard, [&](std::span<const index::Index::XorbHead> heads) {
      return filler.choose(heads, source.xorb);
    });
    if (!records) return records.error();
    if (!*records) continue;  // removed since the lookup
    for (shard::XorbRecord& rec : **records) reply.add(std::move(rec));
    if (filler.full()) break;
  }
  return Out(reply.write(settings.now));
}

fleet::ShardXorbBounds fleet_source_bounds(const ReplyBounds& bounds) {
  std::uint64_t blocks = bounds.max_bytes > kReplyFramingBytes ? bounds.max_bytes - kReplyFramingBytes : 0;
  return {bounds.max_xorbs, std::min(blocks, kFleetReplyMaxBlockBytes)};
}

std::optional<std::vector<std::uint8_t>> build_fleet_global_dedup_reply(const fleet::ShardXorbs& source,
                                                                        const ReplySettings& settings) {
  index::ShardRef as_local;
  as_local.keyed = source.key.has_value();
  as_local.key = source.key.value_or(shard::Key{});
  as_local.expiry = source.expiry;
  ReplyPlan plan;
  plan.rekey = !as_local.keyed;
  plan.key = as_local.keyed ? as_local.key : settings.key;
  plan.expiry = reply_expiry(as_local, settings);
  // A keyed source that expired since the fleet answered gives nothing. The
  // reply itself may expire as it is made: the endpoint's answers do
  // (xet_endpoint.reply_expiry 0), so that a later process asks again.
  if (as_local.keyed && as_local.expiry && *as_local.expiry <= settings.now) return std::nullopt;
  ReplyShard reply(plan);
  // The fleet applied the bounds; applied again so a reply never passes them.
  ReplyFiller filler(settings.bounds);
  for (const fleet::ShardXorb& x : source.xorbs) {
    shard::XorbBlock block(x.cas_block.data(), 0);  // whole: checked by fleet::Reader
    index::Index::XorbHead head{block.hash(), block.num_chunks()};
    if (!filler.choose(std::span(&head, 1), head.hash).empty())
      reply.add(shard::record_of(block));  // checked whole by fleet::Reader
    if (filler.full()) break;
  }
  return reply.write(settings.now);
}

}  // namespace dedupd::daemon::http
