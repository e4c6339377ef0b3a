#include "daemon/learn/heal.hpp"

#include "shard/cas_scope.hpp"

#include <algorithm>
#include <unordered_set>

namespace dedupd::daemon::learn {

std::vector<shard::Hash> xorbs_named_not_carried(const shard::ShardView& shard, std::size_t max) {
  std::unordered_set<shard::Hash> carried, seen;
  for (const auto& x : shard.xorbs()) carried.insert(x.hash());
  std::vector<shard::Hash> out;
  for (const auto& f : shard.files())
    for (std::size_t i = 0; i < f.num_terms() && out.size() < max; ++i) {
      shard::Hash x = f.term(i).xorb_hash;
      if (!carried.contains(x) && seen.insert(x).second) out.push_back(x);
    }
  return out;
}

base::Result<Healed> set_aside_stale(index::Index& idx, const shard::ShardView& refused,
                                     const std::string& refused_hash, const std::string& cas, bool unknown_too,
                                     std::uint64_t now) {
  Healed out;
  std::vector<shard::Hash> named = xorbs_named_not_carried(refused);
  out.xorbs_named = named.size();
  for (const shard::Hash& x : named) {
    auto forms = idx.xorb(x);
    if (!forms) return forms.error();
    for (const index::XorbInfo& form : *forms)
      for (const index::ShardRef& s : form.shards) {
        if (s.set_aside || !shard::CasScope{cas, unknown_too}.admits(s.cas)) continue;
        if (std::find(out.set_aside.begin(), out.set_aside.end(), s.shard) != out.set_aside.end()) continue;
        std::string why = "the CAS " + cas + " refused shard " + refused_hash + ", which relied on xorb " +
                          x.to_string() + " this shard holds";
        auto r = idx.set_aside(s.shard, why, now);
        if (!r) return r.error();
        if (*r) out.set_aside.push_back(s.shard);
      }
  }
  return out;
}

}  // namespace dedupd::daemon::learn
