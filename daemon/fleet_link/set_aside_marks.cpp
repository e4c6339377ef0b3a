#include "daemon/fleet_link/set_aside_marks.hpp"

#include <algorithm>

namespace dedupd::daemon::fleet_link {

void SetAsideMarks::replace(std::vector<fleet::SetAsideMark> marks) {
  std::sort(marks.begin(), marks.end(), [](const auto& a, const auto& b) {
    return a.shard.bytes != b.shard.bytes ? a.shard.bytes < b.shard.bytes : a.cas < b.cas;
  });
  std::lock_guard lock(mu_);
  marks_ = std::move(marks);
}

bool SetAsideMarks::marked(const shard::Hash& shard, const std::optional<std::string>& cas) const {
  std::lock_guard lock(mu_);
  auto at =
      std::lower_bound(marks_.begin(), marks_.end(), shard,
                       [](const fleet::SetAsideMark& m, const shard::Hash& h) { return m.shard.bytes < h.bytes; });
  for (; at != marks_.end() && at->shard == shard; ++at)
    if (!cas || at->cas.empty() || at->cas == *cas) return true;
  return false;
}

std::size_t SetAsideMarks::size() const {
  std::lock_guard lock(mu_);
  return marks_.size();
}

}  // namespace dedupd::daemon::fleet_link
