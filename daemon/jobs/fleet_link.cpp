#include "daemon/jobs/fleet_link.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdint>

#include "daemon/core/clock.hpp"
#include "daemon/core/errors.hpp"
#include "daemon/log/logging.hpp"

#ifndef DEDUPD_VERSION
#define DEDUPD_VERSION "0.0.0"
#endif

namespace dedupd::daemon::jobs {

namespace {

static_assert(config::FleetConfig::kDefaultKeyFilterMemory == std::uint64_t(fleet::kDefaultKeyFilterBytes),
              "dedupd.yaml's default is the library's");

fleet_link::LookupMemory lookup_memory(const config::FleetConfig& f) {
  auto bytes = [](std::uint64_t v) { return std::int64_t(std::min<std::uint64_t>(v, std::uint64_t(INT64_MAX))); };
  return {.xorb_cache = bytes(f.lookup_cache), .key_filters = bytes(f.key_filter_memory)};
}

fleet_link::ReconcileOptions reconcile_options(const config::FleetConfig& f) {
  return {f.reconcile_interval, f.reconcile_batch};
}

}  // namespace

fleet::ConnectOptions fleet_connect_options(const config::Config& config) {
  fleet::ConnectOptions o;
  o.url = config.fleet.url;
  o.host_name = config.fleet.host;
  o.software_version = DEDUPD_VERSION;
  return o;
}

FleetLink::FleetLink(index::Index& index, fleet_link::WakeFd& outbox_wake, const config::Config& config)
    : index_(index),
      outbox_wake_(outbox_wake),
      lookup_(std::make_unique<fleet_link::FleetLookup>(fleet_connect_options(config), config.fleet.lookup_timeout,
                                                        lookup_memory(config.fleet),
                                                        config.state_dir / kKeptKeyFiltersFile)) {}

FleetLink::~FleetLink() { stop(); }

void FleetLink::stop() {
  std::lock_guard lock(mu_);
  publisher_.reset();
}

std::optional<fleet_link::PublisherState> FleetLink::state() const {
  std::lock_guard lock(mu_);
  if (!publisher_) return std::nullopt;
  auto state = publisher_->state();
  state.lookup_memory = lookup_->memory_in_use();
  return state;
}

base::Result<std::uint64_t> FleetLink::retry_parked() {
  std::lock_guard lock(mu_);
  if (!publisher_) return core::seam_error(core::kRuleNoFleet, "no fleet configured");
  return publisher_->retry_parked();
}

void FleetLink::restored(const shard::Hash& shard) {
  std::lock_guard lock(mu_);
  if (publisher_) publisher_->unmark_set_aside(shard);
}

learn::Learner::Events FleetLink::learner_events() {
  return {
      [this](const shard::Hash& h, const std::string& cas, const std::string& why) {
        std::lock_guard lock(mu_);
        if (publisher_) publisher_->mark_set_aside(h, cas, why);
      },
      [this](const shard::Hash& h, const std::string& cas) {
        std::lock_guard lock(mu_);
        if (publisher_) publisher_->accepted_again(h, cas);
      },
      [this](const std::vector<shard::Hash>& xorbs, const std::string& cas, bool unknown_too, const std::string& why) {
        std::lock_guard lock(mu_);
        if (publisher_) publisher_->mark_holders_set_aside(xorbs, cas, unknown_too, why);
      }};
}

// Loop thread. Never logs the url: it may carry a password.
void FleetLink::configure(const config::Config& config, Apply when) {
  const bool initial = when == Apply::at_start;
  fleet::ConnectOptions o = fleet_connect_options(config);
  lookup_->configure(o, config.fleet.lookup_timeout, lookup_memory(config.fleet));
  std::lock_guard lock(mu_);
  if (!config.fleet.enabled()) {
    if (!publisher_ && !initial) return;
    publisher_.reset();
    // Nobody drains the outbox now; a later fleet starts from every live shard.
    if (auto r = index_.set_outbox(false, core::unix_now()); !r)
      spdlog::error("fleet: turning the outbox off: {}", r.error());
    if (!initial) spdlog::info("fleet: off");
    return;
  }
  if (auto r = index_.set_outbox(true, core::unix_now()); !r) {
    spdlog::error("fleet: turning the outbox on: {}; not publishing", r.error());
    return;
  }
  if (publisher_) {
    publisher_->configure(std::move(o), reconcile_options(config.fleet));
    return;
  }
  spdlog::info("fleet: on, this host is {}", o.host_name);
  publisher_ = std::make_unique<fleet_link::Publisher>(index_, outbox_wake_, std::move(o),
                                                       reconcile_options(config.fleet), marks_);
}

}  // namespace dedupd::daemon::jobs
