#include "fleet/key_filters.hpp"

#include <algorithm>

#include "fleet/fleet.hpp"
#include "fleet/wire.hpp"
#include "shard/reader.hpp"

namespace dedupd::fleet::detail {
namespace {
// The first fetch measures the speed: small enough for any lookup bound.
constexpr std::size_t kFirstStepEntries = 4096;
}  // namespace

KeyFilters::KeyFilters(std::shared_ptr<std::atomic<std::int64_t>> shared_budget)
    : budget_(shared_budget ? std::move(shared_budget)
                            : std::make_shared<std::atomic<std::int64_t>>(fleet::kDefaultKeyFilterBytes)) {}

KeyFilters::~KeyFilters() {
  for (auto& [key, k] : by_key) budget_->fetch_add(k.reserved);
}

bool KeyFilters::resize_reservation(OfKey& k, std::int64_t bytes) {
  const std::int64_t delta = bytes - k.reserved;
  if (delta > 0 && budget_->fetch_sub(delta) < delta) {
    budget_->fetch_add(delta);
    return false;
  }
  if (delta < 0) budget_->fetch_add(-delta);
  k.reserved = bytes;
  return true;
}

void KeyFilters::erase(const shard::Key& key) {
  auto it = by_key.find(key);
  if (it == by_key.end()) return;
  budget_->fetch_add(it->second.reserved);
  by_key.erase(it);
}

bool KeyFilters::over_budget(const LiveKey& key) const {
  auto it = by_key.find(key.key);
  return it != by_key.end() && !it->second.over_budget_for.empty() && it->second.over_budget_for == key.generation;
}

const KeyFilter* KeyFilters::usable(const shard::Key& key, std::string_view generation) const {
  auto it = by_key.find(key);
  if (it == by_key.end() || it->second.complete_for.empty() || it->second.complete_for != generation) return nullptr;
  return &it->second.filter;
}

void KeyFilters::keep_only_live() {
  for (auto it = by_key.begin(); it != by_key.end();) {
    bool is_live = std::any_of(live.begin(), live.end(), [&](const LiveKey& l) { return l.key == it->first; });
    if (!is_live) budget_->fetch_add(it->second.reserved);
    it = is_live ? std::next(it) : by_key.erase(it);
  }
}

void KeyFilters::forget_generations() {
  for (auto& [key, k] : by_key) {
    k.complete_for.clear();
    k.listed_at.clear();
    k.todo.clear();
    k.over_budget_for.clear();
  }
}

Result<bool> KeyFilters::step(Connection& c, const LiveKey& key, double seconds,
                              std::chrono::steady_clock::time_point deadline) {
  if (over_budget(key)) return false;
  OfKey& k = by_key[key.key];
  if (k.listed_at.empty()) {
    const auto listing = std::chrono::steady_clock::now();
    // One statement, one snapshot: the generation and the xorbs it has.
    auto rows = c.exec_until(
        "SELECT NULL::int4, NULL::int4, NULL::bytea, xmin::text FROM dedupd.chunk_key WHERE id = $1 "
        "UNION ALL SELECT id, chunks, hash, NULL FROM dedupd.xorb WHERE key_id = $1",
        wire::Params().int4(key.id), deadline);
    if (!rows) return rows.error();
    std::string generation;
    std::vector<Listed> listed;
    std::uint64_t entries = 0;
    for (int r = 0; r < rows->size(); ++r) {
      if (rows->null(r, 0)) {
        generation = std::string(rows->text(r, 3));
        continue;
      }
      listed.push_back({rows->int4(r, 0), std::max(rows->int4(r, 1), 0), rows->hash(r, 2)});
      entries += std::uint64_t(listed.back().chunks);
    }
    if (generation.empty()) {  // the key row is gone: nothing to filter
      erase(key.key);
      return false;
    }
    k.todo.clear();
    std::uint64_t new_entries = 0;
    for (const auto& x : listed)
      if (!std::binary_search(k.have.begin(), k.have.end(), x.xorb)) {
        k.todo.push_back(x);
        new_entries += std::uint64_t(x.chunks);
      }
    // Removed xorbs stay in the filter (false positives only) until it is
    // outgrown; then it starts over, sized for twice what there is.
    if (k.filter.added() + new_entries > k.filter.capacity()) {
      const std::size_t wanted = std::size_t(entries) * 2;
      if (!resize_reservation(k, std::int64_t(KeyFilter::bytes_for(wanted)))) {
        // Over the budget: this generation is asked in every form. What
        // the old filter held is given back; it is not complete anyway.
        k.filter = KeyFilter();
        (void)resize_reservation(k, 0);
        k.have.clear();
        k.todo.clear();
        k.complete_for.clear();
        k.listed_at.clear();
        k.over_budget_for = std::move(generation);
        return false;
      }
      k.over_budget_for.clear();
      k.filter = KeyFilter(wanted);
      k.have.clear();
      k.complete_for.clear();
      k.todo = std::move(listed);
    }
    k.listed_at = std::move(generation);
    last_step_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - listing).count();
    return k.todo.empty() ? finish(k) : false;
  }
  if (!k.todo.empty()) {
    const auto started = std::chrono::steady_clock::now();
    const std::size_t step_entries = entries_per_second > 0
                                         ? std::size_t(std::clamp(entries_per_second * seconds, 256.0, double(1 << 20)))
                                         : kFirstStepEntries;
    std::vector<std::int32_t> ids;
    std::size_t batch = 0;
    while (ids.size() < k.todo.size() &&
           (ids.empty() || batch + std::size_t(k.todo[ids.size()].chunks) <= step_entries)) {
      batch += std::size_t(k.todo[ids.size()].chunks);
      ids.push_back(k.todo[ids.size()].id);
    }
    // Only the forms listed (id and hash): an id that meanwhile names
    // another form is not taken.
    std::vector<std::span<const std::uint8_t>> hashes;
    for (std::size_t i = 0; i < ids.size(); ++i) hashes.push_back({k.todo[i].xorb.data(), 32});
    auto rows = c.exec_until(
        "SELECT x.id, x.hash, x.cas_block FROM dedupd.xorb x JOIN unnest($1::int4[], $2::bytea[]) AS u (id, hash) "
        "ON x.id = u.id AND x.hash = u.hash",
        wire::Params().int4_array(ids).bytea_array(hashes), deadline);
    if (!rows) {
      if (rows.error().rule == std::string(kRuleTimeout)) entries_per_second /= 4;
      return rows.error();
    }
    for (int r = 0; r < rows->size(); ++r) {
      auto block = rows->bytes(r, 2);
      shard::Hash xorb = rows->hash(r, 1);
      if (block.size() < shard::kEntrySize || block.size() != shard::XorbBlock(block.data(), 0).byte_size())
        return make_error(kRuleProtocol, "stored CAS block of xorb " + xorb.to_string() + " has the wrong size");
      shard::XorbBlock x(block.data(), 0);
      for (std::uint32_t i = 0; i < x.num_chunks(); ++i) k.filter.add(wire::prefix_of(x.chunk_hash_bytes(i)));
      auto at = std::lower_bound(k.have.begin(), k.have.end(), xorb);
      if (at == k.have.end() || *at != xorb) k.have.insert(at, xorb);
    }
    k.todo.erase(k.todo.begin(), k.todo.begin() + std::ptrdiff_t(ids.size()));
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    last_step_seconds = took;
    if (batch > 0 && took > 0) entries_per_second = double(batch) / took;
    if (std::size_t(rows->size()) != ids.size()) {
      // A listed xorb left meanwhile: the listing's generation is past; list again.
      k.listed_at.clear();
      k.todo.clear();
      return false;
    }
  }
  return k.todo.empty() ? finish(k) : false;
}

bool KeyFilters::finish(OfKey& k) {
  k.complete_for = k.listed_at;
  k.listed_at.clear();
  return true;
}

}  // namespace dedupd::fleet::detail
