#include "fleet/xorb_cache.hpp"

#include <algorithm>
#include <cmath>

namespace dedupd::fleet {

namespace {
std::uint64_t id_in(std::uint32_t era, std::int32_t id) { return (std::uint64_t(era) << 32) | std::uint32_t(id); }
constexpr int kMaxDiscount = 32;  // quarter steps: 1/256
}  // namespace

XorbCache::XorbCache(std::int64_t budget_bytes) : budget_(std::max<std::int64_t>(0, budget_bytes)) {}

XorbCache::~XorbCache() = default;

std::uint32_t XorbCache::era(std::string_view epoch) {
  std::lock_guard lock(mu_);
  auto it = eras_.find(epoch);
  if (it != eras_.end()) return it->second;
  return eras_.emplace(std::string(epoch), next_era_++).first->second;
}

XorbCache::Found XorbCache::find(std::uint32_t era, std::int32_t id, std::int64_t hits) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(id_in(era, id));
  if (it == entries_.end()) return {nullptr, hits};
  lru_.splice(lru_.begin(), lru_, it->second.lru);
  const auto earlier = std::int64_t(double(it->second.hits) * std::pow(2.0, -discount_ / 4.0));
  it->second.hits += hits;
  return {it->second.x, hits + earlier};
}

void XorbCache::erase(std::unordered_map<Id, Entry>::iterator it, bool evicted) {
  if (const auto& block = it->second.x->block; block && evicted) {
    // Did it pay back what fetching it whole cost?
    if (it->second.hits * kBytesPerHit >= std::int64_t(block->size())) discount_ = std::max(0, discount_ - 1);
    else discount_ = std::min(kMaxDiscount, discount_ + 1);
  }
  charged_ -= it->second.charged;
  lru_.erase(it->second.lru);
  entries_.erase(it);
}

void XorbCache::put(std::uint32_t era, std::int32_t id, CachedXorb x, std::int64_t hits) {
  std::int64_t need = cost(x);
  if (need > budget_) {
    x.block.reset();  // the block would not fit: keep what answers need besides it
    need = cost(x);
  }
  auto shared = std::make_shared<const CachedXorb>(std::move(x));
  std::lock_guard lock(mu_);
  if (std::none_of(eras_.begin(), eras_.end(), [&](const auto& e) { return e.second == era; })) return;
  const Id key = id_in(era, id);
  bool had_block = false;
  if (auto it = entries_.find(key); it != entries_.end()) {
    had_block = it->second.x->block != nullptr;
    hits = it->second.hits;  // find() counted this lookup's
    erase(it, false);        // replaced, not evicted: no verdict on its block
  }
  if (shared->block && !had_block) hits = 0;  // from now on, what the block pays back
  if (need > budget_) return;
  while (charged_ + need > budget_ && !lru_.empty()) {
    erase(entries_.find(lru_.back()), true);
    ++evictions_;
  }
  charged_ += need;
  lru_.push_front(key);
  entries_.emplace(key, Entry{std::move(shared), hits, need, lru_.begin()});
}

void XorbCache::clear() {
  std::lock_guard lock(mu_);
  entries_.clear();
  lru_.clear();
  eras_.clear();
  charged_ = 0;
}

std::int64_t XorbCache::bytes() const {
  std::lock_guard lock(mu_);
  return charged_;
}

std::size_t XorbCache::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

std::uint64_t XorbCache::evictions() const {
  std::lock_guard lock(mu_);
  return evictions_;
}

double XorbCache::earlier_hit_weight() const {
  std::lock_guard lock(mu_);
  return std::pow(2.0, -discount_ / 4.0);
}

}  // namespace dedupd::fleet
