#include "daemon/learn/learner.hpp"

#include <spdlog/spdlog.h>

#include <ctime>

#include "daemon/ingest/validate.hpp"
#include "daemon/learn/heal.hpp"
#include "daemon/log/logging.hpp"
#include "xetcache/cas_url.hpp"

namespace dedupd::daemon::learn {

namespace {

std::uint64_t unix_now() { return std::uint64_t(std::time(nullptr)); }

}  // namespace

Learner::~Learner() {
  if (socket_) loop_.unwatch_fd(socket_->fd());
}

base::Result<bool> Learner::listen(const std::string& path) {
  if (socket_ && socket_->from_systemd()) {
    if (!path.empty() && path != socket_->path())
      spdlog::warn("xet_endpoint.learn_socket {} is not used: dedupd.socket passed {}, where the endpoint reports",
                   path, socket_->path());
    return true;
  }
  if (socket_ && socket_->path() == path) return true;
  if (socket_) {
    loop_.unwatch_fd(socket_->fd());
    socket_.reset();
    listening_ = false;
  }
  if (path.empty()) return false;
  auto s = ConfirmSocket::bind(path);
  if (!s) return s.error();
  socket_.emplace(std::move(s).value());
  loop_.watch_fd(socket_->fd(), [this] { on_readable(); });
  listening_ = true;
  spdlog::info("learning what the local Xet endpoint's CAS accepts, on {}", path);
  return true;
}

base::Result<bool> Learner::adopt(int fd) {
  if (socket_) {
    loop_.unwatch_fd(socket_->fd());
    socket_.reset();
    listening_ = false;
  }
  auto s = ConfirmSocket::adopt(fd);
  if (!s) return s.error();
  socket_.emplace(std::move(s).value());
  loop_.watch_fd(socket_->fd(), [this] { on_readable(); });
  listening_ = true;
  spdlog::info("learning what the local Xet endpoint's CAS accepts, on {} (passed by systemd)", socket_->path());
  return true;
}

void Learner::set_endpoint_gid(std::optional<gid_t> gid) { endpoint_gid_ = gid ? std::int64_t(*gid) : -1; }
void Learner::set_unknown_cas_answers(bool on) { unknown_cas_answers_ = on; }

core::LearnHold Learner::hold(const std::string& request_id, const std::string& cas, std::vector<std::uint8_t> bytes) {
  core::LearnHold out;
  if (!listening_) return out;  // off: no endpoint configured
  if (!is_request_id(request_id)) {
    out.outcome = core::LearnHold::Outcome::bad_id;
    return out;
  }
  auto normal = dedupd::xetcache::normalize_cas_url(cas);
  if (!normal) {
    out.outcome = core::LearnHold::Outcome::bad_cas;
    return out;
  }
  // Checked now, on the HTTP thread: the work loop later takes only a shard.
  if (auto valid = ingest::validate_shard(bytes, ""); !valid) {
    out.outcome = core::LearnHold::Outcome::not_a_shard;
    out.error = valid.error();
    return out;
  }
  auto now = PendingShards::Clock::now();
  pending_.expire(now);
  std::optional<Settled> settled;
  bool held = pending_.hold(request_id, Pending{std::move(bytes), *normal}, now, settled);
  if (settled && settled->kind == Settled::Kind::duplicate) {
    out.outcome = core::LearnHold::Outcome::duplicate;
    return out;
  }
  if (!held) {
    ++not_learned_;
    out.outcome = core::LearnHold::Outcome::full;
    return out;
  }
  if (settled)  // its status came first
    loop_.post([this, request_id, s = std::move(*settled)]() mutable { settle(request_id, std::move(s)); });
  out.outcome = core::LearnHold::Outcome::held;
  return out;
}

void Learner::on_readable() {
  if (!socket_) return;
  std::int64_t gid = endpoint_gid_;
  auto got = socket_->receive(gid >= 0 ? std::optional<gid_t>(gid_t(gid)) : std::nullopt);
  if (got.refused_senders) {
    refused_senders_ += got.refused_senders;
    spdlog::warn("learning socket: {} report(s) from a process that is not the endpoint, ignored", got.refused_senders);
  }
  if (got.unreadable) {
    unreadable_ += got.unreadable;
    spdlog::warn("learning socket: {} report(s) that are not \"<request id> <status>\" nor a download's, ignored",
                 got.unreadable);
  }
  for (const DownloadReport& d : got.downloads) downloads_.count(d);
  auto now = PendingShards::Clock::now();
  for (const Confirmation& c : got.believed) settle(c.request_id, pending_.confirm(c.request_id, c.status, now));
  pending_.expire(now);
}

void Learner::settle(const std::string& id, Settled s) {
  if (!s.pending) {
    if (s.kind == Settled::Kind::duplicate) spdlog::info("learning: request {} was settled before; ignored", id);
    return;
  }
  auto view = shard::ShardView::parse(s.pending->bytes);
  if (!view) return;  // validated when held
  const std::string& cas = s.pending->cas;
  if (s.kind == Settled::Kind::accepted) {
    index::IngestOptions o;
    o.now = unix_now();
    o.cas = cas;
    auto r = index_.ingest(*view, index::SourceInfo{}, o);
    if (!r) {
      ++not_learned_;
      spdlog::error("learning: cannot index the shard of request {}: {}", id, r.error());
      return;
    }
    if (r->outcome == index::IngestOutcome::added) ++learned_;
    else ++already_known_;
    // A shard set aside after a refusal whose very bytes the CAS has now
    // accepted: the CAS takes a shard only when it holds every xorb the
    // shard names, so its answers are good again (never a loop of refusals
    // and never a shard kept out for good).
    if (r->outcome != index::IngestOutcome::added) {
      auto info = index_.shard(r->shard);
      if (info && *info && (*info)->set_aside) {
        if (auto back = index_.restore(r->shard); back) {
          ++restored_;
          spdlog::info("{} accepted shard {} again, which was set aside ({}): it answers again", cas, r->shard,
                       (*info)->set_aside_reason);
        } else {
          spdlog::error("learning: cannot bring back shard {}: {}", r->shard, back.error());
        }
      }
    }
    if (events_.accepted) events_.accepted(r->shard, cas);
    if (copies_) {
      auto kept = copies_->keep(s.pending->bytes, r->shard.to_string(), cas);
      if (!kept)
        spdlog::error("learning: shard {} is in the index, but its copy is not kept: {}", r->shard, kept.error());
    }
    spdlog::info("learned shard {} ({} xorbs, {} chunks) that {} accepted: {}", r->shard.to_string(), r->xorbs,
                 r->chunks, cas, index::to_string(r->outcome));
    return;
  }
  // Refused: the xorbs it named without carrying are the stale answers.
  std::string hash = shard::shard_file_hash(s.pending->bytes).to_string();
  auto healed = set_aside_stale(index_, *view, hash, cas, unknown_cas_answers_, unix_now());
  if (!healed) {
    spdlog::error("learning: {} refused shard {}; cannot set its sources aside: {}", cas, hash, healed.error());
    return;
  }
  set_aside_ += healed->set_aside.size();
  const std::string why = "the CAS refused shard " + hash + ", which relied on xorbs this shard holds";
  if (events_.set_aside)
    for (const shard::Hash& h : healed->set_aside) events_.set_aside(h, cas, why);
  if (events_.relied_on) events_.relied_on(xorbs_named_not_carried(*view), cas, unknown_cas_answers_, why);
  spdlog::warn("{} refused shard {} (request {}); {} of the {} xorbs it relied on are in shards set aside now: {}", cas,
               hash, id, healed->set_aside.size(), healed->xorbs_named, [&] {
                 std::string list;
                 for (const auto& h : healed->set_aside) list += (list.empty() ? "" : ", ") + h.to_string();
                 return list.empty() ? std::string("none") : list;
               }());
}

core::LearnStats Learner::stats() const {
  PendingStats p = pending_.stats();
  core::LearnStats s;
  s.listening = listening_;
  s.held = p.held;
  s.held_bytes = p.held_bytes;
  s.accepted = p.accepted;
  s.refused = p.refused;
  s.failed = p.failed;
  s.expired = p.expired;
  s.learned = learned_;
  s.already_known = already_known_;
  s.set_aside = set_aside_;
  s.restored = restored_;
  s.refused_senders = refused_senders_;
  s.unmatched = p.unmatched;
  s.not_learned = not_learned_ + p.dropped_full;
  return s;
}

}  // namespace dedupd::daemon::learn
