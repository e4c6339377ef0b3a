#include "daemon/ingest/waiting.hpp"

#include <algorithm>

#include "index/status.hpp"

namespace dedupd::daemon::ingest {

bool is_passing_failure(const std::string& rule) {
  return rule == index::kRuleNoSpace || rule == index::kRuleMapFull || rule == index::kRuleIo ||
         rule == kRuleStillWritten || rule == kRuleReadIo;
}

void WaitingFiles::wait(const watch::Candidate& file, const std::string& rule, const std::string& why,
                        std::uint64_t unix_now, Clock::time_point now) {
  std::lock_guard lock(mu_);
  auto [it, fresh] = entries_.try_emplace(file.path.native());
  Entry& e = it->second;
  if (fresh) {
    e.since = unix_now;
    e.backoff = kFirstRetry;
  } else {
    e.backoff = std::min<Clock::duration>(e.backoff * 2, kMaxRetry);
  }
  e.file = file;
  e.rule = rule;
  e.why = why;
  e.attempts++;
  e.in_retry = false;
  e.next_try = now + e.backoff;
}

void WaitingFiles::settled(const std::string& path) {
  std::lock_guard lock(mu_);
  entries_.erase(path);
}

std::vector<watch::Candidate> WaitingFiles::due(Clock::time_point now) {
  std::lock_guard lock(mu_);
  std::vector<watch::Candidate> out;
  for (auto& [path, e] : entries_)
    if (!e.in_retry && e.next_try <= now) {
      e.in_retry = true;
      out.push_back(e.file);
    }
  return out;
}

void WaitingFiles::all_due_now(Clock::time_point now) {
  std::lock_guard lock(mu_);
  for (auto& [path, e] : entries_)
    if (!e.in_retry) e.next_try = std::min(e.next_try, now);
}

bool WaitingFiles::empty() const {
  std::lock_guard lock(mu_);
  return entries_.empty();
}

std::size_t WaitingFiles::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

bool WaitingFiles::out_of_space() const {
  std::lock_guard lock(mu_);
  return std::any_of(entries_.begin(), entries_.end(), [](const auto& kv) {
    return kv.second.rule == index::kRuleNoSpace || kv.second.rule == index::kRuleMapFull;
  });
}

core::WaitingStatus WaitingFiles::status(std::uint64_t unix_now, std::size_t max_listed) const {
  std::lock_guard lock(mu_);
  core::WaitingStatus s;
  s.count = entries_.size();
  std::vector<const Entry*> by_age;
  for (const auto& [path, e] : entries_) by_age.push_back(&e);
  std::sort(by_age.begin(), by_age.end(),
            [](const Entry* a, const Entry* b) { return a->since != b->since ? a->since < b->since : a < b; });
  auto now = Clock::now();
  for (const Entry* e : by_age) {
    if (s.files.size() >= max_listed) break;
    core::WaitingFile f;
    f.path = e->file.path.native();
    f.rule = e->rule;
    f.why = e->why;
    f.since = e->since;
    f.age_s = unix_now > e->since ? unix_now - e->since : 0;
    f.attempts = e->attempts;
    f.next_retry_s = e->in_retry || e->next_try <= now
                         ? 0
                         : std::uint64_t(std::chrono::duration_cast<std::chrono::seconds>(e->next_try - now).count());
    s.files.push_back(std::move(f));
  }
  return s;
}

}  // namespace dedupd::daemon::ingest
