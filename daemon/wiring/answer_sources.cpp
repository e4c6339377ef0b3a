// Each question goes to the fleet only while one is configured; a fleet
// that is off costs nothing and answers Reach::off. Each waits at most the
// configured bound (FleetLookup).
#include "daemon/wiring/answer_sources.hpp"

namespace dedupd::daemon::wiring {

using answers::Reach;

Reach AnswerSources::chunks(std::span<const shard::Hash> raw, fleet::ChunkAnswers& out, bool* busy) {
  if (!ops_.fleet_enabled()) return Reach::off;
  return lookup_.chunks(raw, out, busy);
}

Reach AnswerSources::xorb(const shard::Hash& xorb, std::optional<fleet::XorbAnswer>& out) {
  if (!ops_.fleet_enabled()) return Reach::off;
  return lookup_.xorb(xorb, out);
}

Reach AnswerSources::file(const shard::Hash& file, std::optional<fleet::FileAnswer>& out) {
  if (!ops_.fleet_enabled()) return Reach::off;
  return lookup_.file(file, out);
}

Reach AnswerSources::files_with_sha256(const shard::Hash& sha256, std::vector<shard::Hash>& out) {
  if (!ops_.fleet_enabled()) return Reach::off;
  return lookup_.files_with_sha256(sha256, out);
}

Reach AnswerSources::source_shard(const shard::Hash& raw_chunk, const fleet::ShardXorbBounds& bounds, std::uint64_t now,
                                  const std::optional<shard::CasScope>& scope,
                                  const std::function<bool(const shard::Hash& shard)>& excluded,
                                  std::optional<fleet::ShardXorbs>& out) {
  if (!ops_.fleet_enabled()) return Reach::off;
  return lookup_.source_shard(raw_chunk, bounds, now, scope, excluded, out);
}

}  // namespace dedupd::daemon::wiring
