#include "daemon/supervisor/sockets.hpp"

#include <fcntl.h>
#include <grp.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <variant>

#include "daemon/log/logging.hpp"
#include "daemon/supervisor/restart.hpp"
#include "daemon/systemd/listen_fds.hpp"

namespace dedupd::daemon::supervisor {

namespace {

std::optional<gid_t> gid_of(const std::optional<std::string>& group, const char* setting, const char* without) {
  if (!group) return std::nullopt;
  if (const struct group* g = ::getgrnam(group->c_str())) return g->gr_gid;
  spdlog::warn("{} \"{}\" does not exist; {}", setting, *group, without);
  return std::nullopt;
}

}  // namespace

std::optional<gid_t> admin_gid_of(const std::optional<std::string>& group) {
  return gid_of(group, "admin_group", "only root may use admin routes");
}

std::optional<gid_t> endpoint_gid_of(const config::XetEndpointConfig& e) {
  if (!e.group) {
    if (const struct group* g = ::getgrnam(config::kPackageEndpointGroup)) return g->gr_gid;
    return std::nullopt;
  }
  return gid_of(e.group, "xet_endpoint.group", "only root and dedupd's user may teach it shards");
}

std::string learn_socket_of(const config::Config& c) {
  if (!c.xet_endpoint.enabled()) return "";
  if (!c.xet_endpoint.learn_socket.empty()) return c.xet_endpoint.learn_socket.native();
  return (c.socket.parent_path() / "dedupd-learn.sock").native();
}

std::optional<int> take_activated_sockets(learn::Learner& learner) {
  auto activated = systemd::activated_sockets();
  if (auto* err = std::get_if<systemd::ActivationError>(&activated)) {
    spdlog::critical("socket activation: {}", err->message);
    return std::nullopt;
  }
  auto* fds = std::get_if<systemd::ActivatedSockets>(&activated);
  if (!fds) return -1;
  // The server closes its socket when it stops, and so does the learner; a
  // restart for a rebuild hands these copies to the next dedupd in the same
  // process. Above fd 4, where restart_self puts them back.
  const int api_copy = ::fcntl(fds->api, F_DUPFD_CLOEXEC, 5);
  const int learn_copy = fds->learn >= 0 ? ::fcntl(fds->learn, F_DUPFD_CLOEXEC, 5) : -1;
  set_restart_sockets(api_copy, learn_copy);
  spdlog::info("listening on the socket{} systemd passed", fds->learn >= 0 ? "s" : "");
  if (fds->learn >= 0) {
    if (auto adopted = learner.adopt(fds->learn); !adopted) {
      spdlog::error("cannot learn what the local Xet endpoint's CAS accepts: {}", adopted.error());
      ::close(fds->learn);
    }
  }
  return fds->api;
}

}  // namespace dedupd::daemon::supervisor
