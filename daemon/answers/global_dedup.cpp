#include "daemon/answers/global_dedup.hpp"

#include "shard/reader.hpp"
#include "shard/writer.hpp"

namespace dedupd::daemon::answers {

namespace {

GlobalDedupReply empty_reply(const ReplyPlan& plan, const ReplySettings& settings) {
  GlobalDedupReply reply;
  reply.rekey = plan.rekey;
  reply.key = plan.key;
  reply.expiry = plan.expiry;
  reply.created = settings.now;
  return reply;
}

// A chunk this index lacks: the reply from the fleet shard it came from,
// within the fleet lookup bound. `reach` says how the fleet part went.
std::optional<GlobalDedupReply> ask_fleet(const Lookups& lookups, FleetPort& fleet, const shard::Hash& chunk,
                                          const ReplySettings& settings, Reach& reach) {
  std::optional<std::string> cas;
  if (settings.scope) cas = settings.scope->cas;
  // A shard this host set aside (its CAS refused an upload relying on it)
  // must not come back through the fleet's copy of it; nor one the fleet
  // marks set aside for this CAS: another host's CAS refused an upload
  // relying on it.
  auto excluded = [&](const shard::Hash& shard) {
    if (fleet.marked_set_aside(shard, cas)) return true;
    auto info = lookups.index().shard(shard);
    return info && *info && (*info)->set_aside;
  };
  std::optional<fleet::ShardXorbs> source;
  reach =
      fleet.source_shard(chunk, fleet_source_bounds(settings.bounds), settings.now, settings.scope, excluded, source);
  if (reach != Reach::answered || !source) return std::nullopt;
  return fleet_reply(*source, settings);
}

}  // namespace

base::Result<std::optional<GlobalDedupReply>> local_reply(const index::Index& index, const shard::Hash& raw_chunk,
                                                          const ReplySettings& settings) {
  using Out = std::optional<GlobalDedupReply>;
  auto locations = index.lookup(raw_chunk);
  if (!locations) return locations.error();
  std::vector<SourceShard> holders;
  for (const index::Location& loc : *locations)
    for (const index::ShardRef& s : loc.shards)
      if (!s.set_aside && (!settings.scope || settings.scope->admits(s.cas))) holders.push_back({s, loc.xorb});
  std::optional<ReplyPlan> plan = plan_reply(holders, settings);
  if (!plan) return Out();

  GlobalDedupReply reply = empty_reply(*plan, settings);
  XorbChoice choice(settings.bounds);
  for (const SourceShard& source : plan->sources) {
    auto records = index.shard_xorbs(source.shard.shard, [&](std::span<const index::Index::XorbHead> heads) {
      return choice.choose(heads, source.xorb);
    });
    if (!records) return records.error();
    if (!*records) continue;  // removed since the lookup
    for (shard::XorbRecord& rec : **records) reply.xorbs.push_back(std::move(rec));
    if (choice.full()) break;
  }
  // Every source went away since the lookup.
  if (reply.xorbs.empty()) return Out();
  return Out(std::move(reply));
}

std::optional<GlobalDedupReply> fleet_reply(const fleet::ShardXorbs& source, const ReplySettings& settings) {
  ReplyPlan plan = plan_fleet_reply(source, settings);
  // A keyed source that expired since the fleet answered gives nothing. The
  // reply itself may expire as it is made: the endpoint's answers do
  // (xet_endpoint.reply_expiry 0), so that a later process asks again.
  if (source.key && source.expiry && *source.expiry <= settings.now) return std::nullopt;
  GlobalDedupReply reply = empty_reply(plan, settings);
  // The fleet applied the bounds; applied again so a reply never passes them.
  XorbChoice choice(settings.bounds);
  for (const fleet::ShardXorb& x : source.xorbs) {
    shard::XorbBlock block(x.cas_block.data(), 0);  // whole: checked by fleet::Reader
    index::Index::XorbHead head{block.hash(), block.num_chunks()};
    if (!choice.choose(std::span(&head, 1), head.hash).empty()) reply.xorbs.push_back(shard::record_of(block));
    if (choice.full()) break;
  }
  if (reply.xorbs.empty()) return std::nullopt;
  return reply;
}

base::Result<GlobalDedupAnswer> answer_global_dedup(const Lookups& lookups, const GlobalDedupQuestion& question,
                                                    std::uint64_t now) {
  const core::GlobalDedupKey key = lookups.global_dedup_key();
  // The endpoint's clients keep what they get until a process finds it
  // expired: theirs expires soon (xet_endpoint.reply_expiry), so an answer
  // the CAS has since refused is asked again, not reused.
  ReplySettings settings{key.key,
                         now,
                         question.via_endpoint ? key.endpoint_reply_lifetime_s : key.reply_lifetime_s,
                         {key.reply_max_xorbs, key.reply_max_bytes}};
  // A query naming its CAS: a shard of another would have the client skip
  // xorbs its CAS lacks.
  if (question.cas) settings.scope = shard::CasScope{*question.cas, key.unknown_cas_answers};
  auto local = local_reply(lookups.index(), question.chunk, settings);
  if (!local) return local.error();
  GlobalDedupAnswer answer;
  answer.reply = std::move(*local);
  if (!answer.reply && lookups.fleet())
    answer.reply = ask_fleet(lookups, *lookups.fleet(), question.chunk, settings, answer.fleet);
  return answer;
}

}  // namespace dedupd::daemon::answers
