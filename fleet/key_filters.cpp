#include "fleet/key_filters.hpp"

#include <algorithm>

#include "fleet/wire.hpp"
#include "shard/reader.hpp"

namespace dedupd::fleet::detail {

const KeyFilter* KeyFilters::usable(std::int32_t key_id, std::string_view generation) const {
  auto it = by_key_id.find(key_id);
  if (it == by_key_id.end() || it->second.complete_for.empty() || it->second.complete_for != generation) return nullptr;
  return &it->second.filter;
}

void KeyFilters::keep_only(const std::vector<std::int32_t>& live_ids) {
  for (auto it = by_key_id.begin(); it != by_key_id.end();)
    it = std::find(live_ids.begin(), live_ids.end(), it->first) == live_ids.end() ? by_key_id.erase(it) : std::next(it);
}

Result<bool> KeyFilters::step(Connection& c, std::int32_t key_id, std::chrono::steady_clock::time_point deadline) {
  OfKey& k = by_key_id[key_id];
  if (k.listed_at.empty()) {
    // One statement, one snapshot: the generation and the xorbs it has.
    auto rows = c.exec_until(
        "SELECT NULL::int4, NULL::int4, xmin::text FROM dedupd.chunk_key WHERE id = $1 "
        "UNION ALL SELECT id, chunks, NULL FROM dedupd.xorb WHERE key_id = $1",
        wire::Params().int4(key_id), deadline);
    if (!rows) return rows.error();
    std::string generation;
    std::vector<std::pair<std::int32_t, std::int32_t>> listed;
    std::uint64_t entries = 0;
    for (int r = 0; r < rows->size(); ++r) {
      if (rows->null(r, 0)) {
        generation = std::string(rows->text(r, 2));
        continue;
      }
      listed.emplace_back(rows->int4(r, 0), rows->int4(r, 1));
      entries += std::uint64_t(std::max(rows->int4(r, 1), 0));
    }
    if (generation.empty()) {  // the key row is gone: nothing to filter
      by_key_id.erase(key_id);
      return false;
    }
    std::sort(listed.begin(), listed.end());
    k.todo.clear();
    std::uint64_t new_entries = 0;
    for (const auto& x : listed)
      if (!std::binary_search(k.have.begin(), k.have.end(), x.first)) {
        k.todo.push_back(x);
        new_entries += std::uint64_t(std::max(x.second, 0));
      }
    // Removed xorbs stay in the filter (false positives only) until it is
    // outgrown; then it starts over, sized for twice what there is.
    if (k.filter.added() + new_entries > k.filter.capacity()) {
      k.filter = KeyFilter(std::size_t(entries) * 2);
      k.have.clear();
      k.complete_for.clear();
      k.todo = std::move(listed);
    }
    k.listed_at = std::move(generation);
  }
  if (!k.todo.empty()) {
    std::vector<std::int32_t> ids;
    std::size_t batch = 0;
    while (ids.size() < k.todo.size() &&
           (ids.empty() || batch + std::size_t(std::max(k.todo[ids.size()].second, 0)) <= step_entries)) {
      batch += std::size_t(std::max(k.todo[ids.size()].second, 0));
      ids.push_back(k.todo[ids.size()].first);
    }
    auto rows = c.exec_until("SELECT id, cas_block FROM dedupd.xorb WHERE id = ANY ($1::int4[])",
                             wire::Params().int4_array(ids), deadline);
    if (!rows) return rows.error();
    for (int r = 0; r < rows->size(); ++r) {
      auto block = rows->bytes(r, 1);
      if (block.size() < shard::kEntrySize || block.size() != shard::XorbBlock(block.data(), 0).byte_size())
        return make_error(kRuleProtocol,
                          "stored CAS block of xorb id " + std::to_string(rows->int4(r, 0)) + " has the wrong size");
      shard::XorbBlock x(block.data(), 0);
      for (std::uint32_t i = 0; i < x.num_chunks(); ++i) k.filter.add(wire::prefix_of(x.chunk_hash_bytes(i)));
      k.have.insert(std::upper_bound(k.have.begin(), k.have.end(), rows->int4(r, 0)), rows->int4(r, 0));
    }
    k.todo.erase(k.todo.begin(), k.todo.begin() + std::ptrdiff_t(ids.size()));
    if (std::size_t(rows->size()) != ids.size()) {
      // A listed xorb left meanwhile: the listing's generation is past; list again.
      k.listed_at.clear();
      k.todo.clear();
      return false;
    }
  }
  if (!k.todo.empty()) return false;
  k.complete_for = k.listed_at;
  k.listed_at.clear();
  return true;
}

}  // namespace dedupd::fleet::detail
