#include "daemon/wiring/api_frontend.hpp"

#include <spdlog/spdlog.h>

#include "daemon/api/http/server.hpp"
#include "daemon/api/routes/routes.hpp"
#include "daemon/log/logging.hpp"
#include "daemon/wiring/service_impl.hpp"

namespace dedupd::daemon {

ApiFrontend::ApiFrontend() = default;

ApiFrontend::~ApiFrontend() { stop(); }

bool ApiFrontend::start(const ServiceParts& parts, const Config& config, const ListenSettings& listen) {
  ServerOptions so;
  so.listen_fd = listen.listen_fd;
  so.socket_path = config.socket.native();
  so.max_body_bytes = std::size_t(config.limits.max_body_bytes);
  so.max_query_body_bytes = std::size_t(config.limits.max_query_body_bytes);
  so.max_body_memory = std::size_t(config.limits.max_body_memory);
  so.max_connections = config.limits.max_connections;
  so.connection_timeout = config.limits.request_timeout;
  so.header_timeout = config.limits.header_timeout;
  so.admin_gid = listen.admin_gid;
  so.endpoint_gid = listen.endpoint_gid;
  service_ = std::make_unique<ServiceImpl>(parts);
  server_ = std::make_unique<ApiServer>(*service_, so, http::api_routes());
  if (auto started = server_->start(); !started) {
    spdlog::critical("cannot listen on {}: {}", config.socket, started.error().message);
    server_.reset();
    return false;
  }
  return true;
}

void ApiFrontend::set_access(std::optional<gid_t> admin_gid, std::optional<gid_t> endpoint_gid) {
  if (!server_) return;
  server_->set_admin_gid(admin_gid);
  server_->set_endpoint_gid(endpoint_gid);
}

void ApiFrontend::stop() {
  if (server_) server_->stop();
}

}  // namespace dedupd::daemon
