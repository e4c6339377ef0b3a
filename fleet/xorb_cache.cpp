#include "fleet/xorb_cache.hpp"

#include "fleet/fleet.hpp"

namespace dedupd::fleet::detail {

XorbCache::XorbCache(std::shared_ptr<std::atomic<std::int64_t>> shared_budget)
    : budget_(shared_budget ? std::move(shared_budget)
                            : std::make_shared<std::atomic<std::int64_t>>(fleet::kDefaultXorbCacheBytes)) {}

XorbCache::~XorbCache() { clear(); }

CachedXorb* XorbCache::find(std::int32_t id) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second.lru);
  return &it->second.x;
}

std::int64_t XorbCache::room() const { return budget_->load() + charged_; }

void XorbCache::erase(std::unordered_map<std::int32_t, Entry>::iterator it) {
  budget_->fetch_add(it->second.charged);
  charged_ -= it->second.charged;
  lru_.erase(it->second.lru);
  entries_.erase(it);
}

bool XorbCache::charge(std::int64_t bytes) {
  for (;;) {
    if (budget_->fetch_sub(bytes) >= bytes) {
      charged_ += bytes;
      return true;
    }
    budget_->fetch_add(bytes);
    if (lru_.empty()) return false;
    erase(entries_.find(lru_.back()));
    ++evictions_;
  }
}

void XorbCache::put(std::int32_t id, CachedXorb x) {
  if (auto it = entries_.find(id); it != entries_.end()) erase(it);
  std::int64_t need = cost(x);
  if (need > room()) {
    std::vector<std::uint8_t>().swap(x.block);  // the block would not fit: keep what answers need besides it
    need = cost(x);
  }
  if (need > room() || !charge(need)) return;
  lru_.push_front(id);
  entries_.emplace(id, Entry{std::move(x), need, lru_.begin()});
}

void XorbCache::clear() {
  budget_->fetch_add(charged_);
  charged_ = 0;
  entries_.clear();
  lru_.clear();
}

}  // namespace dedupd::fleet::detail
