// The publisher's part in the fleet's set-aside marks. A refusal
// seen here is marked in the fleet for its CAS; every few seconds the marks
// are read again: lookups leave out what they name (SetAsideMarks), and a
// local copy of a marked shard is set aside in the index too, so no host
// answers with it. When a shard's last mark goes (an admin restored it, or
// its CAS accepted its bytes again, on any host), the copies set aside here
// for it answer again. Anti-entropy (after a connect, then with each
// reconcile pass) compares the index's set-aside shards with the marks:
// what a restart kept from being sent is marked, and what was restored
// while this host was away answers again.
#include <spdlog/spdlog.h>

#include "daemon/core/clock.hpp"
#include "daemon/fleet_link/publisher.hpp"
#include "daemon/log/logging.hpp"
#include "index/index.hpp"
#include "shard/cas_scope.hpp"

namespace dedupd::daemon::fleet_link {

void Publisher::mark_set_aside(const shard::Hash& shard, std::string cas, std::string reason) {
  {
    std::lock_guard lock(mu_);
    mark_ops_.push_back({shard, MarkOp::Kind::mark, std::move(cas), std::move(reason)});
  }
  wake_.post();
}

void Publisher::mark_holders_set_aside(std::vector<shard::Hash> xorbs, std::string cas, bool unknown_too,
                                       std::string reason) {
  if (xorbs.empty()) return;
  {
    std::lock_guard lock(mu_);
    mark_ops_.push_back(
        {{}, MarkOp::Kind::mark_holders, std::move(cas), std::move(reason), std::move(xorbs), unknown_too});
  }
  wake_.post();
}

void Publisher::unmark_set_aside(const shard::Hash& shard) {
  {
    std::lock_guard lock(mu_);
    mark_ops_.push_back({shard, MarkOp::Kind::unmark_all, {}, {}});
  }
  wake_.post();
}

void Publisher::accepted_again(const shard::Hash& shard, const std::string& cas) {
  if (!marks_->marked(shard, cas)) return;  // as last read: a mark made since is kept until a later acceptance
  {
    std::lock_guard lock(mu_);
    mark_ops_.push_back({shard, MarkOp::Kind::unmark_one, cas, {}});
  }
  wake_.post();
}

bool Publisher::sync_marks() {
  bool sent = false;
  for (;;) {
    MarkOp op;
    {
      std::lock_guard lock(mu_);
      if (mark_ops_.empty()) break;
      op = mark_ops_.front();
    }
    const bool one_cas = op.kind == MarkOp::Kind::unmark_one;
    if (op.kind == MarkOp::Kind::mark) {
      auto r = writer_->mark_set_aside(op.shard, op.cas, op.reason);
      if (!r) {
        failed(r.error(), "marking a shard set aside in the fleet");
        return false;
      }
      if (*r) spdlog::info("fleet: shard {} marked set aside for {}: no host answers with it there", op.shard, op.cas);
    } else if (op.kind == MarkOp::Kind::mark_holders) {
      auto r = writer_->mark_holders_set_aside(op.xorbs, op.cas, op.unknown_too, op.reason);
      if (!r) {
        failed(r.error(), "marking the fleet's shards a refused upload relied on set aside");
        return false;
      }
      for (const shard::Hash& h : *r)
        spdlog::info("fleet: shard {} marked set aside for {}: a refused upload relied on one of its xorbs", h, op.cas);
    } else {
      auto r = writer_->unmark_set_aside(op.shard, one_cas ? std::optional<std::string_view>(op.cas) : std::nullopt);
      if (!r) {
        failed(r.error(), "removing a shard's set-aside marks in the fleet");
        return false;
      }
      if (*r && one_cas)
        spdlog::info("fleet: {} accepted shard {} again: its set-aside mark removed, it answers again on every host",
                     op.cas, op.shard);
      else if (*r) spdlog::info("fleet: shard {}'s set-aside marks removed: it answers again on every host", op.shard);
    }
    {
      std::lock_guard lock(mu_);
      if (!mark_ops_.empty()) mark_ops_.pop_front();
    }
    sent = true;
  }
  auto now = std::chrono::steady_clock::now();
  if (!sent && now < next_marks_) return true;
  next_marks_ = now + kMarksEvery;
  auto marks = writer_->set_aside_marks();
  if (!marks) {
    failed(marks.error(), "reading the fleet's set-aside marks");
    return false;
  }
  apply_marks(*marks, marks_compare_due_);
  marks_compare_due_ = false;
  {
    std::lock_guard lock(mu_);
    state_.set_aside_marks = marks->size();
  }
  marks_->replace(std::move(marks).value());
  return true;
}

void Publisher::apply_marks(const std::vector<fleet::SetAsideMark>& marks, bool compare_all) {
  const std::uint64_t now = core::unix_now();
  std::set<shard::Hash> marked;
  std::uint64_t applied = 0, restored = 0;
  for (const fleet::SetAsideMark& m : marks) {
    marked.insert(m.shard);
    auto info = index_.shard(m.shard);
    if (!info) {
      spdlog::error("fleet: reading shard {} to set it aside as the fleet marks it: {}", m.shard, info.error());
      continue;
    }
    if (!*info || (*info)->set_aside || (*info)->state != index::ShardState::live) continue;
    // Fail closed: a copy of unknown CAS is set aside too.
    if (!m.cas.empty() && !shard::CasScope{m.cas, true}.admits((*info)->cas)) continue;
    const std::string why = std::string(kFleetReason) + (m.host.empty() ? "a host" : m.host) + " saw " +
                            (m.cas.empty() ? "its CAS" : m.cas) + " refuse an upload relying on it: " + m.reason;
    auto r = index_.set_aside(m.shard, why, now);
    if (!r) {
      spdlog::error("fleet: setting shard {} aside as the fleet marks it: {}", m.shard, r.error());
      continue;
    }
    ++applied;
    spdlog::warn("fleet: shard {} set aside here too: {}", m.shard, why);
  }
  auto bring_back = [&](const shard::Hash& h, const char* why) {
    auto r = index_.restore(h);
    if (!r) {
      spdlog::error("fleet: bringing back shard {}: {}", h, r.error());
      return;
    }
    if (!*r) return;
    ++restored;
    spdlog::info("fleet: shard {} answers again: {}", h, why);
  };
  // A shard whose last mark went since the last read: restored, or its
  // bytes accepted again, somewhere in the fleet.
  for (const shard::Hash& h : last_marked_) {
    if (marked.count(h)) continue;
    auto info = index_.shard(h);
    if (info && *info && (*info)->set_aside) bring_back(h, "its set-aside marks were removed from the fleet");
  }
  last_marked_ = std::move(marked);
  if (compare_all) {
    auto all = index_.shards(index::ShardState::live);
    if (!all) {
      spdlog::error("fleet: anti-entropy: listing the set-aside shards: {}", all.error());
    } else {
      for (const index::ShardInfo& s : *all) {
        if (!s.set_aside || last_marked_.count(s.hash)) continue;
        if (s.set_aside_reason.rfind(kFleetReason, 0) == 0) {
          bring_back(s.hash, "the fleet mark it was set aside for is gone");
        } else {
          // Set aside here while the mark could not be sent: mark it now,
          // for each CAS it belongs to (every one may have refused).
          spdlog::warn("fleet: anti-entropy: shard {} was set aside here and the fleet did not know", s.hash);
          if (s.cas.empty()) mark_set_aside(s.hash, "", s.set_aside_reason);
          shard::any_cas(s.cas, [&](std::string_view c) {
            mark_set_aside(s.hash, std::string(c), s.set_aside_reason);
            return false;
          });
        }
      }
    }
  }
  if (applied || restored) {
    std::lock_guard lock(mu_);
    state_.set_aside_applied += applied;
    state_.set_aside_restored += restored;
  }
}

}  // namespace dedupd::daemon::fleet_link
