#include "daemon/fleet_link/publisher.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "daemon/core/clock.hpp"
#include "daemon/log/logging.hpp"
#include "index/index.hpp"

namespace dedupd::daemon::fleet_link {

using namespace std::chrono_literals;

namespace {
constexpr auto kFirstBackoff = 250ms;
constexpr auto kMaxBackoff = std::chrono::milliseconds(30s);
// While no server of the url takes writes (the primary died and the standby
// is not promoted yet) a try costs a connect attempt, no more, and each
// backoff past the promotion delays every host's publishing as much: at
// 30 s a failover pg_auto_failover finished in 4.4 s reached the fleet
// after 7.9 s, one it finished in 51 s after 62 s. The readers' connector
// retries every 2 s anyway. A server that refuses statements keeps the
// long backoff: each try rebuilds and sends a whole shard.
constexpr auto kMaxConnectBackoff = std::chrono::milliseconds(2s);

// An error about the entry itself, which no retry of the same code cures:
// park it. Anything else (the fleet out of reach, a timeout, a server
// refusing for now) keeps it queued.
bool about_the_entry(const base::Error& e) {
  return e.rule == index::kRuleRebuild || e.rule == index::kRuleCorrupt || e.rule == fleet::kRuleArgument;
}
}  // namespace

Publisher::Publisher(index::Index& index, WakeFd& wake, fleet::ConnectOptions options, ReconcileOptions reconcile,
                     std::shared_ptr<SetAsideMarks> marks)
    : index_(index),
      wake_(wake),
      options_(std::move(options)),
      reconcile_(reconcile),
      marks_(marks ? std::move(marks) : std::make_shared<SetAsideMarks>()) {
  state_.state = LinkState::connecting;
  state_.host = options_.host_name;
  thread_ = std::thread([this] { run(); });
}

Publisher::~Publisher() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  stop_.post();
  wake_.post();
  thread_.join();
}

void Publisher::configure(fleet::ConnectOptions options, ReconcileOptions reconcile) {
  {
    std::lock_guard lock(mu_);
    reconcile_ = reconcile;  // taken at the next pass
    if (options.url == options_.url && options.host_name == options_.host_name) return;
    options_ = std::move(options);
    state_.host = options_.host_name;
    reconfigured_ = true;
  }
  spdlog::info("fleet: connection settings changed; reconnecting");
  wake_.post();
}

PublisherState Publisher::state() const {
  PublisherState s;
  {
    std::lock_guard lock(mu_);
    s = state_;
  }
  if (auto ob = index_.outbox_stats(); ob) {
    s.outbox_depth = ob->depth;
    if (ob->oldest_queued) {
      std::uint64_t now = core::unix_now();
      s.outbox_oldest_age_s = now > *ob->oldest_queued ? now - *ob->oldest_queued : 0;
    }
    s.parked = ob->parked;
  }
  if (s.parked) {
    if (auto parked = index_.outbox_parked(kParkedListed); parked)
      for (const index::ParkedEntry& p : *parked)
        s.parked_items.push_back({index::to_string(p.entry.op), p.entry.shard.to_string(), p.reason, p.parked_at});
  }
  return s;
}

index::Result<std::uint64_t> Publisher::retry_parked() {
  auto n = index_.outbox_retry_parked(core::unix_now());
  if (n && *n) spdlog::info("fleet: {} parked outbox entr{} queued again", *n, *n == 1 ? "y" : "ies");
  return n;
}

bool Publisher::park(const index::OutboxEntry& e, const std::string& why) {
  if (auto r = index_.outbox_park(e, why, core::unix_now()); !r) {
    // Still queued, so nothing after it may be acknowledged: tried again at the next round.
    spdlog::error("fleet: parking the {} of shard {}: {}", index::to_string(e.op), e.shard, r.error());
    return false;
  }
  spdlog::error("fleet: {} of shard {} parked, not acknowledged: {} (`dedupctl fleet retry` queues it again)",
                index::to_string(e.op), e.shard, why);
  return true;
}

bool Publisher::interrupted() const {
  std::lock_guard lock(mu_);
  return stopping_ || reconfigured_;
}

void Publisher::wait(std::chrono::steady_clock::duration d) {
  if (interrupted()) return;
  wake_.wait(d);
}

void Publisher::back_off() {
  // New entries do not cut a backoff short: the fleet failed, and they wait
  // in the outbox as well as anywhere. Stopping or new settings do.
  auto until = std::chrono::steady_clock::now() + backoff_;
  for (auto now = std::chrono::steady_clock::now(); now < until && !interrupted();
       now = std::chrono::steady_clock::now())
    wake_.wait(until - now);
}

void Publisher::failed(const fleet::Error& e, const char* doing) {
  writer_.reset();  // the next round connects anew (the primary may have moved)
  const auto most = e.rule == std::string(fleet::kRuleConnect) ? kMaxConnectBackoff : kMaxBackoff;
  backoff_ = backoff_ == 0ms ? std::chrono::milliseconds(kFirstBackoff) : std::min(backoff_ * 2, most);
  std::string text = std::string(doing) + ": " + e.to_string();
  bool first;
  {
    std::lock_guard lock(mu_);
    first = state_.state != LinkState::unavailable;
    state_.state = LinkState::unavailable;
    state_.failures++;
    state_.last_error = text;
    state_.last_error_at = core::unix_now();
  }
  // Once per outage at warn level; the retries go to debug.
  if (first) spdlog::warn("fleet: {}; the outbox keeps what is not published, retrying", text);
  else spdlog::debug("fleet: {}; retrying in {} ms", text, backoff_.count());
}

void Publisher::succeeded() {
  backoff_ = 0ms;
  std::string server = writer_ ? writer_->server() : std::string();
  std::lock_guard lock(mu_);
  if (state_.state != LinkState::connected && state_.state != LinkState::connecting)
    spdlog::info("fleet: the primary answers again");
  state_.state = LinkState::connected;
  state_.last_contact = core::unix_now();
  // Another server answering the same url is a failover (or a switchover):
  // nothing else tells this host, and the operator wants to know when.
  if (!server.empty() && server != state_.primary) {
    if (!state_.primary.empty()) {
      spdlog::warn("fleet: writes now go to {} instead of {}: the fleet database failed over", server, state_.primary);
      state_.failovers++;
      state_.last_failover = core::unix_now();
      state_.last_failover_from = state_.primary;
    }
    state_.primary = server;
  }
}

bool Publisher::connect() {
  fleet::ConnectOptions o;
  {
    std::lock_guard lock(mu_);
    o = options_;
    reconfigured_ = false;
  }
  o.interrupt_fd = stop_.fd();
  auto w = fleet::Writer::connect(o);
  if (!w) {
    failed(w.error(), "connecting to the fleet primary");
    return false;
  }
  writer_ = std::move(w).value();
  spdlog::info("fleet: publishing as host {}", o.host_name);
  succeeded();
  next_expire_ = next_heartbeat_ = next_reconcile_ = next_marks_ = std::chrono::steady_clock::now();
  marks_compare_due_ = true;
  reconcile_after_.reset();
  in_pass_ = false;
  pass_publish_ = pass_drop_ = 0;
  return true;
}

Publisher::Step Publisher::handle(const index::OutboxEntry& e) {
  auto park_it = [&](const std::string& why) { return park(e, why) ? Step::parked : Step::stuck; };
  if (e.op == index::OutboxOp::publish) {
    auto bytes = index_.rebuild_shard(e.shard);
    if (!bytes && about_the_entry(bytes.error())) return park_it("rebuilding the shard: " + bytes.error().to_string());
    if (!bytes) {
      spdlog::error("fleet: rebuilding shard {} to publish it: {}", e.shard, bytes.error());
      return Step::failed;
    }
    if (!*bytes) return Step::done;  // removed since: its drop follows in the outbox
    auto view = shard::ShardView::parse(**bytes);
    if (!view) return park_it("the shard rebuilt from the index does not parse: " + view.error().to_string());
    // The CASes that accepted it as the index has them now: an entry queued
    // because the shard learned a CAS publishes the set that includes it.
    auto info = index_.shard(e.shard);
    if (!info && about_the_entry(info.error())) return park_it("reading the shard: " + info.error().to_string());
    if (!info) {
      spdlog::error("fleet: reading shard {} to publish it: {}", e.shard, info.error());
      return Step::failed;
    }
    auto r = writer_->publish(*view, e.shard, *info ? (*info)->cas : std::string());
    if (!r && about_the_entry(r.error())) return park_it("the fleet refused the shard: " + r.error().to_string());
    if (!r) {
      failed(r.error(), "publishing a shard");
      return Step::failed;
    }
    std::lock_guard lock(mu_);
    if (r->result == fleet::PublishResult::already_held) state_.replays++;
    else state_.published++;
    return Step::done;
  }
  auto r = writer_->drop_hold(e.shard);
  if (!r && about_the_entry(r.error())) return park_it("the fleet refused to drop the hold: " + r.error().to_string());
  if (!r) {
    failed(r.error(), "dropping a hold");
    return Step::failed;
  }
  std::lock_guard lock(mu_);
  state_.drops++;
  return Step::done;
}

bool Publisher::drain() {
  for (;;) {
    {
      std::lock_guard lock(mu_);
      if (stopping_ || reconfigured_) return true;
    }
    auto batch = index_.outbox_next(kBatch);
    if (!batch) {
      spdlog::error("fleet: reading the outbox: {}", batch.error());
      return true;  // an index problem, not the fleet's: try again at the next poll
    }
    if (batch->empty()) return true;
    std::optional<std::uint64_t> done;
    Step last = Step::done;
    for (const index::OutboxEntry& e : *batch) {
      last = handle(e);
      if (last == Step::done) done = e.seq;
      else if (last != Step::parked) break;  // out of the queue already: nothing to acknowledge
    }
    if (done) {
      if (auto acked = index_.outbox_ack(*done); !acked) {
        spdlog::error("fleet: acknowledging outbox entries: {}", acked.error());  // replayed later: harmless
        return true;
      }
    }
    if (last == Step::stuck) return true;
    if (last == Step::failed) return false;
    succeeded();
  }
}

bool Publisher::periodic() {
  auto now = std::chrono::steady_clock::now();
  if (now >= next_heartbeat_) {
    if (auto r = writer_->heartbeat(); !r) {
      failed(r.error(), "recording the heartbeat");
      return false;
    }
    succeeded();
    next_heartbeat_ = now + kHeartbeatEvery;
  }
  if (now >= next_expire_) {
    auto r = writer_->expire(core::unix_now());
    if (!r) {
      failed(r.error(), "expiring fleet shards");
      return false;
    }
    if (*r) {
      spdlog::info("fleet: {} expired shard{} left the fleet", *r, *r == 1 ? "" : "s");
      std::lock_guard lock(mu_);
      state_.expired += *r;
    }
    next_expire_ = now + kExpireEvery;
  }
  return true;
}

bool Publisher::reconcile(bool& ran) {
  ran = false;
  auto now = std::chrono::steady_clock::now();
  if (!in_pass_ && now < next_reconcile_) return true;
  auto ob = index_.outbox_stats();
  if (!ob) {
    spdlog::error("fleet: anti-entropy: reading the outbox: {}", ob.error());
    return true;
  }
  if (ob->depth) return true;  // drained first: what is queued is not a difference
  ReconcileOptions o;
  {
    std::lock_guard lock(mu_);
    o = reconcile_;
  }
  std::vector<std::string> held_cas;
  auto held = writer_->held_shards(reconcile_after_, o.batch, &held_cas);
  if (!held) {
    failed(held.error(), "listing this host's fleet shards");
    return false;
  }
  ran = true;
  auto round =
      index_.outbox_reconcile(reconcile_after_, *held, held->size() == o.batch, o.batch, core::unix_now(), held_cas);
  if (!round) {
    spdlog::error("fleet: anti-entropy: {}", round.error());
    next_reconcile_ = now + o.interval;
    in_pass_ = false;
    reconcile_after_.reset();
    return true;
  }
  pass_publish_ += round->publish + round->cas;
  pass_drop_ += round->drop;
  if (round->through) {
    in_pass_ = true;
    reconcile_after_ = round->through;
    return true;
  }
  if (pass_publish_ || pass_drop_)
    spdlog::warn(
        "fleet: anti-entropy: the fleet disagreed with this host; {} shard{} it lacked (or lacked a CAS of) queued "
        "for publishing, {} "
        "hold{} on shards gone here queued for dropping",
        pass_publish_, pass_publish_ == 1 ? "" : "s", pass_drop_, pass_drop_ == 1 ? "" : "s");
  else spdlog::debug("fleet: anti-entropy: the fleet lists exactly this host's live shards");
  {
    std::lock_guard lock(mu_);
    state_.reconcile_passes++;
    state_.reconciled_publish += pass_publish_;
    state_.reconciled_drop += pass_drop_;
    state_.last_reconcile = core::unix_now();
  }
  pass_publish_ = pass_drop_ = 0;
  in_pass_ = false;
  reconcile_after_.reset();
  next_reconcile_ = now + o.interval;
  marks_compare_due_ = true;  // and the set-aside marks with the next read
  next_marks_ = now;
  return true;
}

void Publisher::run() {
  // What an earlier dedupd parked gets another chance with this one.
  if (auto r = retry_parked(); !r) spdlog::error("fleet: queuing parked outbox entries again: {}", r.error());
  for (;;) {
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
      if (reconfigured_) {
        writer_.reset();
        backoff_ = 0ms;
        state_.state = LinkState::connecting;
        state_.primary.clear();  // another url is no failover
      }
    }
    if (!writer_ && !connect()) {
      back_off();
      continue;
    }
    bool reconciled = false;
    if (!drain() || !sync_marks() || !periodic() || !reconcile(reconciled)) {
      back_off();
      continue;
    }
    if (reconciled && in_pass_) continue;  // the next round at once (after what it queued)
    // Until new entries are committed, or the heartbeat or expiry is due.
    auto now = std::chrono::steady_clock::now();
    auto until = std::min(
        {std::chrono::steady_clock::duration(kPoll), next_heartbeat_ - now, next_expire_ - now, next_marks_ - now});
    // A round that is due but waits for the outbox to drain is woken with
    // it (a commit, the poll), never spun on.
    if (!in_pass_ && now < next_reconcile_) until = std::min(until, next_reconcile_ - now);
    wait(until);
  }
}

}  // namespace dedupd::daemon::fleet_link
