#include "daemon/config/config.hpp"

namespace dedupd::daemon::config {

Config installed_defaults() {
  Config c;
  c.state_dir = "/var/lib/dedupd";
  c.socket = "/run/dedupd/dedupd.sock";
  // The package's endpoint settings (dedupd-xet-endpoint.service reads the
  // same file): dedupd knows its upstreams and CAS port without a word in
  // dedupd.yaml, so enabling that unit is all it takes.
  c.xet_endpoint.config = "/etc/dedupd/xet-endpoint.conf";
  return c;
}

std::filesystem::path clean_path(const std::filesystem::path& p) {
  auto n = p.lexically_normal();
  if (!n.has_filename() && n.has_parent_path() && n != n.root_path()) n = n.parent_path();
  return n;
}

Config local_defaults(const std::filesystem::path& dir) {
  Config c;
  c.state_dir = clean_path(std::filesystem::absolute(dir));
  c.socket = c.state_dir / "dedupd.sock";
  c.watch = {WatchDir{c.state_dir / "incoming", true}};
  // Where ./dev run writes the endpoint's settings when it starts one.
  c.xet_endpoint.config = c.state_dir / "xet-endpoint" / "xet-endpoint.conf";
  return c;
}

}  // namespace dedupd::daemon::config
