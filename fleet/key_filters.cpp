#include "fleet/key_filters.hpp"

#include <algorithm>
#include <optional>

#include "fleet/fleet.hpp"
#include "fleet/reader_sql.hpp"
#include "fleet/wire.hpp"
#include "shard/reader.hpp"

namespace dedupd::fleet {
namespace {
// The first fetch measures the speed: small enough for any lookup bound.
constexpr std::size_t kFirstStepEntries = 4096;

// The lock is given up for a statement: lookups on other connections read
// the filters meanwhile.
class Unlocked {
 public:
  explicit Unlocked(std::unique_lock<std::mutex>& lock) : lock_(lock) { lock_.unlock(); }
  ~Unlocked() { lock_.lock(); }
  Unlocked(const Unlocked&) = delete;
  Unlocked& operator=(const Unlocked&) = delete;

 private:
  std::unique_lock<std::mutex>& lock_;
};
}  // namespace

std::shared_ptr<KeyFilters> make_key_filters(std::int64_t budget_bytes) {
  return std::make_shared<KeyFilters>(budget_bytes);
}

std::size_t KeyFilters::room_for(std::size_t entries) { return entries + std::max(entries / 2, kMinGrowth); }

KeyFilters::KeyFilters(std::int64_t budget) : budget_(budget), budget_left_(budget) {}

const KeyFilters::OfKey* KeyFilters::of_epoch(const shard::Key& key, std::string_view epoch) const {
  auto it = by_key_.find(key);
  return it == by_key_.end() || it->second.epoch != epoch ? nullptr : &it->second;
}

bool KeyFilters::over_budget(const shard::Key& key, std::string_view generation, std::string_view epoch) const {
  std::lock_guard lock(mu_);
  const OfKey* k = of_epoch(key, epoch);
  return k && !k->over_budget_for.empty() && k->over_budget_for == generation;
}

double KeyFilters::last_step_seconds() const {
  std::lock_guard lock(mu_);
  return last_step_seconds_;
}

KeyFilters::Summary KeyFilters::summary() const {
  std::lock_guard lock(mu_);
  Summary s;
  s.bytes = budget_ - budget_left_;
  for (const auto& [key, k] : by_key_) {
    const bool raw = key == shard::Key{};
    if (raw) s.raw_bytes = k.reserved;
    if (!k.over_budget_for.empty()) {
      if (raw) s.raw_over_budget = true;
      else ++s.over_budget;
    }
    if (!k.filter || k.complete_for.empty()) continue;
    if (raw) {
      s.raw_entries = k.filter->added();
      s.raw_bits = k.filter->bits_per_entry();
      continue;
    }
    ++s.complete;
    s.entries += k.filter->added();
    if (s.thinnest_bits == 0 || k.filter->bits_per_entry() < s.thinnest_bits)
      s.thinnest_bits = k.filter->bits_per_entry();
  }
  return s;
}

std::int64_t KeyFilters::budget_left() const {
  std::lock_guard lock(mu_);
  return budget_left_;
}

std::uint64_t KeyFilters::entries_fetched() const {
  std::lock_guard lock(mu_);
  return entries_fetched_;
}

namespace {
bool keepable(const auto& k) { return k.filter && !k.building && !k.stepping; }
}  // namespace

std::vector<KeyFilters::Kept> KeyFilters::kept() const {
  std::lock_guard lock(mu_);
  std::vector<Kept> out;
  for (const auto& [key, k] : by_key_)
    if (keepable(k)) out.push_back({key, k.filter, k.have});
  return out;
}

KeyFilters::KeptState KeyFilters::kept_state() const {
  std::lock_guard lock(mu_);
  KeptState s{kept_version_, 0};
  for (const auto& [key, k] : by_key_) s.filters += keepable(k) ? 1 : 0;
  return s;
}

bool KeyFilters::adopt(Kept kept) {
  if (!kept.filter || !std::is_sorted(kept.xorbs.begin(), kept.xorbs.end())) return false;
  std::lock_guard lock(mu_);
  if (by_key_.count(kept.key)) return false;
  const auto bytes = std::int64_t(kept.filter->bytes());
  if (kept.key == shard::Key{} && bytes > budget_ / 2) return false;
  OfKey& k = by_key_[kept.key];
  if (!resize_reservation(k, bytes)) {
    by_key_.erase(kept.key);
    return false;
  }
  // No epoch: the first step lists the key's xorbs before a lookup uses it.
  k.filter = std::move(kept.filter);
  k.have = std::move(kept.xorbs);
  ++kept_version_;
  return true;
}

bool KeyFilters::resize_reservation(OfKey& k, std::int64_t bytes) {
  const std::int64_t delta = bytes - k.reserved;
  if (delta > budget_left_) return false;
  budget_left_ -= delta;
  k.reserved = bytes;
  return true;
}

std::shared_ptr<const KeyFilter> KeyFilters::usable(const shard::Key& key, std::string_view generation,
                                                    std::string_view epoch) const {
  std::lock_guard lock(mu_);
  const OfKey* k = of_epoch(key, epoch);
  if (!k || k->complete_for.empty() || k->complete_for != generation) return nullptr;
  return k->filter;
}

void KeyFilters::keep_only_live(const std::vector<detail::LiveKey>& live) {
  std::lock_guard lock(mu_);
  for (auto it = by_key_.begin(); it != by_key_.end();) {
    const bool is_live =
        std::any_of(live.begin(), live.end(), [&](const detail::LiveKey& l) { return l.key == it->first; });
    if (is_live || it->second.stepping) {
      ++it;
      continue;
    }
    budget_left_ += it->second.reserved;
    kept_version_ += keepable(it->second) ? 1 : 0;
    it = by_key_.erase(it);
  }
}

Result<KeyFilters::Step> KeyFilters::step(detail::Connection& c, const detail::LiveKey& key, std::string_view epoch,
                                          double seconds, std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mu_);
  OfKey& k = by_key_[key.key];
  if (k.stepping) return Step::elsewhere;
  if (k.epoch != epoch) {
    // Generations of another server, or of tables made anew: listed again
    // before use. What the filter holds stays (false positives at worst).
    k.epoch = std::string(epoch);
    k.complete_for.clear();
    k.listed_at.clear();
    k.todo.clear();
    k.over_budget_for.clear();
  }
  if (!k.over_budget_for.empty() && k.over_budget_for == key.generation) return Step::stopped;
  if (k.filter && k.complete_for == key.generation) return Step::complete;  // another Reader's work
  const KeyFilter* filter_before = k.filter.get();
  const bool keepable_before = keepable(k);
  k.stepping = true;
  auto done = k.listed_at.empty() ? list(lock, c, k, key, deadline) : fetch(lock, c, k, seconds, deadline);
  k.stepping = false;
  if (k.filter.get() != filter_before || keepable(k) != keepable_before) ++kept_version_;
  if (done && *done == Step::gone) {
    ++kept_version_;
    budget_left_ += k.reserved;
    by_key_.erase(key.key);
  }
  return done;
}

Result<KeyFilters::Step> KeyFilters::list(std::unique_lock<std::mutex>& lock, detail::Connection& c, OfKey& k,
                                          const detail::LiveKey& key, std::chrono::steady_clock::time_point deadline) {
  const auto listing = std::chrono::steady_clock::now();
  std::string generation;
  std::vector<Listed> listed;
  std::uint64_t entries = 0;
  {
    Unlocked unlocked(lock);
    // One statement, one snapshot: the generation and the xorbs it has.
    static const std::string sql =
        "SELECT NULL::int4, NULL::int4, NULL::bytea, xmin::text FROM dedupd.chunk_key WHERE id = $1 "
        "UNION ALL SELECT NULL, NULL, NULL, " +
        std::string(reader_sql::kRawGeneration) +
        " WHERE $1 = 0 "
        "UNION ALL SELECT id, chunks, hash, NULL FROM dedupd.xorb WHERE key_id = $1";
    auto rows = c.exec_until(sql.c_str(), wire::Params().int4(key.id), deadline);
    if (!rows) return rows.error();
    for (int r = 0; r < rows->size(); ++r) {
      if (rows->null(r, 0)) {
        generation = std::string(rows->text(r, 3));
        continue;
      }
      listed.push_back({rows->int4(r, 0), std::max(rows->int4(r, 1), 0), rows->hash(r, 2)});
      entries += std::uint64_t(listed.back().chunks);
    }
  }
  last_step_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - listing).count();
  if (generation.empty()) return Step::gone;
  k.todo.clear();
  std::uint64_t new_entries = 0;
  for (const auto& x : listed)
    if (!std::binary_search(k.have.begin(), k.have.end(), x.xorb)) {
      k.todo.push_back(x);
      new_entries += std::uint64_t(x.chunks);
    }
  // Removed xorbs stay in the filter (false positives only) until it is
  // outgrown; then it starts over, with room to grow, at the most bits an
  // entry that what is left of the budget holds.
  const KeyFilter* base = k.building ? k.building.get() : k.filter.get();
  if (!base || base->added() + new_entries > base->capacity()) {
    const std::size_t wanted = room_for(std::size_t(entries));
    k.filter.reset();
    k.complete_for.clear();
    k.building.reset();
    k.have.clear();
    // The raw filter takes at most half the budget: a keyed filter spares
    // a probe per miss for each of far fewer entries, and keeps its room.
    std::int64_t room = budget_left_ + k.reserved;
    if (key.raw()) room = std::min(room, budget_ / 2);
    int bits = KeyFilter::kMaxBitsPerEntry;
    while (bits > KeyFilter::kMinBitsPerEntry && std::int64_t(KeyFilter::bytes_for(wanted, bits)) > room) --bits;
    if (!resize_reservation(k, std::int64_t(KeyFilter::bytes_for(wanted, bits)))) {
      // Not even the thinnest filter fits: this generation is asked in
      // every form. What the old filter held is given back; it is not
      // complete anyway.
      (void)resize_reservation(k, 0);
      k.todo.clear();
      k.listed_at.clear();
      k.over_budget_for = std::move(generation);
      return Step::stopped;
    }
    k.over_budget_for.clear();
    k.building = std::make_shared<KeyFilter>(wanted, bits);
    k.todo = std::move(listed);
  } else if (!k.todo.empty() && !k.building) {
    // Lookups go on reading the complete filter while its copy grows.
    k.building = std::make_shared<KeyFilter>(*k.filter);
  }
  k.listed_at = std::move(generation);
  return k.todo.empty() ? finish(k) : Step::more;
}

Result<KeyFilters::Step> KeyFilters::fetch(std::unique_lock<std::mutex>& lock, detail::Connection& c, OfKey& k,
                                           double seconds, std::chrono::steady_clock::time_point deadline) {
  const auto started = std::chrono::steady_clock::now();
  const std::size_t step_entries = entries_per_second_ > 0
                                       ? std::size_t(std::clamp(entries_per_second_ * seconds, 256.0, double(1 << 20)))
                                       : kFirstStepEntries;
  std::vector<std::int32_t> ids;
  std::size_t batch = 0;
  while (ids.size() < k.todo.size() &&
         (ids.empty() || batch + std::size_t(k.todo[ids.size()].chunks) <= step_entries)) {
    batch += std::size_t(k.todo[ids.size()].chunks);
    ids.push_back(k.todo[ids.size()].id);
  }
  std::size_t fetched = 0;
  std::optional<Error> failed;
  {
    // k.building, k.have and k.todo are the stepping Reader's alone.
    Unlocked unlocked(lock);
    // Only the forms listed (id and hash): an id that meanwhile names
    // another form is not taken.
    std::vector<std::span<const std::uint8_t>> hashes;
    for (std::size_t i = 0; i < ids.size(); ++i) hashes.push_back({k.todo[i].xorb.data(), 32});
    auto rows = c.exec_until(
        "SELECT x.id, x.hash, x.cas_block FROM dedupd.xorb x JOIN unnest($1::int4[], $2::bytea[]) AS u (id, hash) "
        "ON x.id = u.id AND x.hash = u.hash",
        wire::Params().int4_array(ids).bytea_array(hashes), deadline);
    if (!rows) failed = rows.error();
    for (int r = 0; !failed && r < rows->size(); ++r) {
      auto block = rows->bytes(r, 2);
      shard::Hash xorb = rows->hash(r, 1);
      if (block.size() < shard::kEntrySize || block.size() != shard::XorbBlock(block.data(), 0).byte_size()) {
        failed = make_error(kRuleProtocol, "stored CAS block of xorb " + xorb.to_string() + " has the wrong size");
        break;
      }
      shard::XorbBlock x(block.data(), 0);
      for (std::uint32_t i = 0; i < x.num_chunks(); ++i) k.building->add(wire::prefix_of(x.chunk_hash_bytes(i)));
      fetched += x.num_chunks();
      auto at = std::lower_bound(k.have.begin(), k.have.end(), xorb);
      if (at == k.have.end() || *at != xorb) k.have.insert(at, xorb);
    }
    if (!failed) {
      k.todo.erase(k.todo.begin(), k.todo.begin() + std::ptrdiff_t(ids.size()));
      if (std::size_t(rows->size()) != ids.size()) {
        // A listed xorb left meanwhile: the listing's generation is past; list again.
        k.listed_at.clear();
        k.todo.clear();
      }
    }
  }
  entries_fetched_ += fetched;
  if (failed) {
    if (failed->rule == std::string(kRuleTimeout)) entries_per_second_ /= 4;
    return *failed;
  }
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  last_step_seconds_ = took;
  if (batch > 0 && took > 0) entries_per_second_ = double(batch) / took;
  if (k.listed_at.empty()) return Step::more;
  return k.todo.empty() ? finish(k) : Step::more;
}

KeyFilters::Step KeyFilters::finish(OfKey& k) {
  if (k.building) k.filter = std::move(k.building);
  k.complete_for = k.listed_at;
  k.listed_at.clear();
  return Step::complete;
}

}  // namespace dedupd::fleet
