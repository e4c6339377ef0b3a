#include "daemon/fleet/publisher.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "daemon/clock.hpp"
#include "daemon/log/logging.hpp"
#include "index/index.hpp"

namespace dedupd::daemon::fleet_link {

using namespace std::chrono_literals;

namespace {
constexpr auto kFirstBackoff = 250ms;
constexpr auto kMaxBackoff = std::chrono::milliseconds(30s);
}  // namespace

Publisher::Publisher(index::Index& index, WakeFd& wake, fleet::ConnectOptions options)
    : index_(index), wake_(wake), options_(std::move(options)) {
  state_.state = LinkState::connecting;
  state_.host = options_.host_name;
  thread_ = std::thread([this] { run(); });
}

Publisher::~Publisher() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.post();
  thread_.join();
}

void Publisher::configure(fleet::ConnectOptions options) {
  {
    std::lock_guard lock(mu_);
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
      std::uint64_t now = unix_now();
      s.outbox_oldest_age_s = now > *ob->oldest_queued ? now - *ob->oldest_queued : 0;
    }
  }
  return s;
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
  backoff_ = backoff_ == 0ms ? std::chrono::milliseconds(kFirstBackoff) : std::min(backoff_ * 2, kMaxBackoff);
  std::string text = std::string(doing) + ": " + e.to_string();
  bool first;
  {
    std::lock_guard lock(mu_);
    first = state_.state != LinkState::unavailable;
    state_.state = LinkState::unavailable;
    state_.failures++;
    state_.last_error = text;
    state_.last_error_at = unix_now();
  }
  // Once per outage at warn level; the retries go to debug.
  if (first) spdlog::warn("fleet: {}; the outbox keeps what is not published, retrying", text);
  else spdlog::debug("fleet: {}; retrying in {} ms", text, backoff_.count());
}

void Publisher::succeeded() {
  backoff_ = 0ms;
  std::lock_guard lock(mu_);
  if (state_.state != LinkState::connected && state_.state != LinkState::connecting)
    spdlog::info("fleet: the primary answers again");
  state_.state = LinkState::connected;
  state_.last_contact = unix_now();
}

bool Publisher::connect() {
  fleet::ConnectOptions o;
  {
    std::lock_guard lock(mu_);
    o = options_;
    reconfigured_ = false;
  }
  auto w = fleet::Writer::connect(o);
  if (!w) {
    failed(w.error(), "connecting to the fleet primary");
    return false;
  }
  writer_ = std::move(w).value();
  spdlog::info("fleet: publishing as host {}", o.host_name);
  succeeded();
  next_expire_ = next_heartbeat_ = std::chrono::steady_clock::now();
  return true;
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
    bool ok = true;
    for (const index::OutboxEntry& e : *batch) {
      if (e.op == index::OutboxOp::publish) {
        auto bytes = index_.rebuild_shard(e.shard);
        if (!bytes) {
          spdlog::error("fleet: rebuilding shard {} to publish it: {}", e.shard, bytes.error());
          ok = false;
          break;
        }
        if (*bytes) {  // otherwise removed since: its drop follows in the outbox
          auto view = shard::ShardView::parse(**bytes);
          if (!view) {
            // Cannot happen for what the index accepted; never block the queue on it.
            spdlog::error("fleet: shard {} rebuilt from the index does not parse ({}); not published", e.shard,
                          view.error());
          } else {
            auto r = writer_->publish(*view, e.shard);
            if (!r) {
              failed(r.error(), "publishing a shard");
              ok = false;
              break;
            }
            std::lock_guard lock(mu_);
            if (r->result == fleet::PublishResult::already_held) state_.replays++;
            else state_.published++;
          }
        }
      } else {
        auto r = writer_->drop_hold(e.shard);
        if (!r) {
          failed(r.error(), "dropping a hold");
          ok = false;
          break;
        }
        std::lock_guard lock(mu_);
        state_.drops++;
      }
      done = e.seq;
    }
    if (done) {
      if (auto acked = index_.outbox_ack(*done); !acked) {
        spdlog::error("fleet: acknowledging outbox entries: {}", acked.error());  // replayed later: harmless
        return true;
      }
    }
    if (!ok) return false;
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
    auto r = writer_->expire(unix_now());
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

void Publisher::run() {
  for (;;) {
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
      if (reconfigured_) {
        writer_.reset();
        backoff_ = 0ms;
        state_.state = LinkState::connecting;
      }
    }
    if (!writer_ && !connect()) {
      back_off();
      continue;
    }
    if (!drain() || !periodic()) {
      back_off();
      continue;
    }
    // Until new entries are committed, or the heartbeat or expiry is due.
    auto now = std::chrono::steady_clock::now();
    wait(std::min({std::chrono::steady_clock::duration(kPoll), next_heartbeat_ - now, next_expire_ - now}));
  }
}

}  // namespace dedupd::daemon::fleet_link
