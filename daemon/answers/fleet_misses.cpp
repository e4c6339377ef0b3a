#include "daemon/answers/fleet_misses.hpp"

namespace dedupd::daemon::answers {

std::optional<Reach> ask_fleet_for_misses(FleetPort& fleet, std::span<const shard::Hash> raw,
                                          const index::BatchResult& local, FleetMisses& out, bool only_if_idle) {
  out.queries.clear();
  out.answers.clear();
  out.reach = Reach::off;
  // A fleet that is off costs nothing, not even the list of misses.
  if (!fleet.configured()) return Reach::off;
  std::vector<shard::Hash> misses;
  for (std::uint32_t i = 0; i < raw.size(); ++i)
    if (i >= local.size() || local.of(i).empty()) {
      out.queries.push_back(i);
      misses.push_back(raw[i]);
    }
  if (misses.empty()) return out.reach = Reach::answered;
  bool busy = false;
  out.reach = fleet.chunks(misses, out.answers, only_if_idle ? &busy : nullptr);
  if (busy) {
    out = {};
    return std::nullopt;
  }
  if (out.reach == Reach::answered && out.answers.size() != misses.size()) out.reach = Reach::unavailable;
  return out.reach;
}

}  // namespace dedupd::daemon::answers
