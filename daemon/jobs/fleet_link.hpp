// The fleet (docs/FLEET.md) as the daemon holds it: the fleet half of
// answers (FleetLookup: its pool, its xorb cache, its key filters, kept
// across restarts in state_dir), the publisher of the index's outbox
// (replaced when a reload turns the fleet on, stopped before the index
// closes), and the fleet's set-aside marks the publisher reads for lookups.
// Their work runs on their own threads, woken by the index's commits: on the
// work loop this job only takes its part of a configuration, never a step.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "daemon/fleet_link/publisher.hpp"
#include "daemon/fleet_link/reader_pool.hpp"
#include "daemon/fleet_link/set_aside_marks.hpp"
#include "daemon/fleet_link/wake_fd.hpp"
#include "daemon/jobs/job.hpp"
#include "daemon/learn/learner.hpp"
#include "index/index.hpp"

namespace dedupd::daemon::jobs {

// Beside the index: the fleet's key filters, kept across restarts
// (daemon/fleet_link/kept_filters.hpp).
inline constexpr const char* kKeptKeyFiltersFile = "fleet-key-filters";

// How dedupd connects to its fleet as `config` says (the url may carry a
// password: never logged).
fleet::ConnectOptions fleet_connect_options(const config::Config& config);

class FleetLink final : public Job {
 public:
  // `outbox_wake` is posted by the index's commits; it outlives the link.
  FleetLink(index::Index& index, fleet_link::WakeFd& outbox_wake, const config::Config& config);
  ~FleetLink() override;
  FleetLink(const FleetLink&) = delete;
  FleetLink& operator=(const FleetLink&) = delete;

  // Any thread.
  fleet_link::FleetLookup& lookup() { return *lookup_; }
  std::optional<fleet_link::PublisherState> state() const;
  // Parked outbox entries queued again; "daemon.no_fleet" without a fleet.
  base::Result<std::uint64_t> retry_parked();
  // Marked set aside in the fleet for `cas` (any: nullopt), as the
  // publisher last read the marks.
  bool set_aside(const shard::Hash& shard, const std::optional<std::string>& cas) const {
    return marks_->marked(shard, cas);
  }
  // An admin restored the shard: its marks go, everywhere.
  void restored(const shard::Hash& shard);
  // What the local endpoint's CAS refuses and accepts, told to the fleet.
  learn::Learner::Events learner_events();

  // The publisher stops (what it has not sent stays queued in the outbox).
  void stop();

  const char* name() const override { return "fleet link"; }
  std::optional<std::chrono::milliseconds> due_in() override { return std::nullopt; }
  void run() override {}
  // Turns the outbox and the publisher on or off, and hands the lookups and
  // the publisher a changed url, host or bound.
  void configure(const config::Config& config, Apply when) override;

 private:
  index::Index& index_;
  fleet_link::WakeFd& outbox_wake_;
  const std::unique_ptr<fleet_link::FleetLookup> lookup_;
  // Kept across publishers (a reload makes a new one) for lookups to read.
  const std::shared_ptr<fleet_link::SetAsideMarks> marks_ = std::make_shared<fleet_link::SetAsideMarks>();
  mutable std::mutex mu_;                             // guards publisher_
  std::unique_ptr<fleet_link::Publisher> publisher_;  // replaced on a reload
};

}  // namespace dedupd::daemon::jobs
