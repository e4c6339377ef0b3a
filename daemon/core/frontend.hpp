// Where the daemon's core hands itself to whatever serves its socket. The
// core starts and stops a Frontend at the right moments of its run (after
// the index opens and before READY; after the work loop ends) without
// knowing it is HTTP: main gives it the one in daemon/wiring/.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <optional>

#include "daemon/core/counters.hpp"
#include "daemon/core/operations.hpp"
#include "index/index.hpp"

// The rooms' parts are named here, not included: the core includes no room
// of the daemon; whoever builds the parts or uses them includes theirs.
namespace dedupd::daemon::config {
struct Config;
}
namespace dedupd::daemon::loop {
class EventLoop;
}
namespace dedupd::daemon::learn {
class Learner;
}
namespace dedupd::daemon::fleet_link {
class FleetLookup;
}

namespace dedupd::daemon::core {

// What the service behind the socket may use; all outlive the Frontend's
// start() to stop().
struct ServiceParts {
  Operations& ops;
  // Admin actions run on this loop's thread (EventLoop::call).
  loop::EventLoop& loop;
  // The open index; nullptr once the daemon is stopping.
  const std::atomic<const index::Index*>& index;
  const Counters& counters;
  learn::Learner& learner;
  // The fleet half of answers (off without a fleet).
  fleet_link::FleetLookup& fleet_lookup;
};

// How to listen: systemd's socket when it passed one, else the configured path.
struct ListenSettings {
  int listen_fd = -1;
  std::optional<gid_t> admin_gid;
  std::optional<gid_t> endpoint_gid;
};

class Frontend {
 public:
  virtual ~Frontend() = default;
  // Listens and serves; false (logged) when it cannot, and the daemon exits.
  [[nodiscard]] virtual bool start(const ServiceParts& parts, const config::Config& config,
                                   const ListenSettings& listen) = 0;
  // SIGHUP: who may call the admin and the endpoint routes.
  virtual void set_access(std::optional<gid_t> admin_gid, std::optional<gid_t> endpoint_gid) = 0;
  // Lets running requests end; idempotent, harmless before start().
  virtual void stop() = 0;
};

}  // namespace dedupd::daemon::core
