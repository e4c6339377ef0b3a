#include "daemon/fleet_link/migrate.hpp"

#include <cstdio>

#include "fleet/fleet.hpp"

namespace dedupd::daemon::fleet_link {

int run_fleet_migrate(const config::Config& config, bool final) {
  if (!config.fleet.enabled()) {
    std::fprintf(stderr, "dedupd: --fleet-migrate: the configuration has no fleet section with a url\n");
    return 2;
  }
  fleet::ConnectOptions o;
  o.url = config.fleet.url;
  o.host_name = config.fleet.host;
  // Registers no host: the machine running this need not be one of the fleet.
  auto m = fleet::migrate(o, final);
  if (!m) {
    std::fprintf(stderr, "dedupd: --fleet-migrate: %s\n", m.error().to_string().c_str());
    return 1;
  }
  if (!m->changed()) std::printf("fleet schema is at version %u already\n", unsigned(m->to));
  else if (m->from == 0) std::printf("fleet schema created at version %u\n", unsigned(m->to));
  else std::printf("fleet schema upgraded from version %u to %u\n", unsigned(m->from), unsigned(m->to));
  return 0;
}

}  // namespace dedupd::daemon::fleet_link
