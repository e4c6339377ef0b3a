#include "daemon/wiring/api_frontend.hpp"

#include <spdlog/spdlog.h>

#include "api/routes.hpp"
#include "daemon/api/http/metrics_listener.hpp"
#include "daemon/api/http/server.hpp"
#include "daemon/api/http/unix_listener.hpp"
#include "daemon/api/routes/routes.hpp"
#include "daemon/keys/download_key.hpp"
#include "daemon/log/logging.hpp"
#include "daemon/wiring/service_impl.hpp"

namespace dedupd::daemon::wiring {

ApiFrontend::ApiFrontend() = default;

ApiFrontend::~ApiFrontend() { stop(); }

bool ApiFrontend::start(const core::ServiceParts& parts, const config::Config& config,
                        const core::ListenSettings& listen) {
  api::http::ServerOptions so;
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
  service_ = std::make_unique<ServiceImpl>(parts, download_grants(config), download_objects(config));
  server_ = std::make_unique<api::http::ApiServer>(*service_, so, api::routes::api_routes());
  if (auto started = server_->start(); !started) {
    spdlog::critical("cannot listen on {}: {}", config.socket, started.error().message);
    server_.reset();
    return false;
  }
  if (config.metrics.enabled() && !start_metrics(config, listen)) {
    server_->stop();
    server_.reset();
    return false;
  }
  return true;
}

std::unique_ptr<answers::DownloadGrants> ApiFrontend::download_grants(const config::Config& config) {
  // Without a key the endpoint's downloads go as they did (each client to
  // the CAS's storage): a failure here costs the cache, never a download.
  auto key = keys::load_or_create_download_key(config.download_key_file());
  if (!key) {
    spdlog::error("Xet downloads are not cached: {}", key.error());
    return nullptr;
  }
  return std::make_unique<answers::DownloadGrants>(*key, std::size_t(config.xet_endpoint.downloads.max_held_urls));
}

std::unique_ptr<answers::DownloadObjects> ApiFrontend::download_objects(const config::Config& config) {
  auto objects = std::make_unique<answers::DownloadObjects>(
      kCheckedDownloadObjects,
      answers::ObjectChecksFile(config.state_dir / "xet-download-checks", kKeptDownloadDigests));
  auto loaded = objects->load_checks();
  if (!loaded)
    spdlog::warn("the download cache's files are checked as after a first start: {}", loaded.error().to_string());
  else if (loaded->lines > 0)
    spdlog::info("download cache: {} checked objects' digests read back ({} lines, {} skipped)", loaded->digests.size(),
                 loaded->lines, loaded->skipped);
  return objects;
}

bool ApiFrontend::start_metrics(const config::Config& config, const core::ListenSettings& listen) {
  api::http::MetricsListenerOptions mo;
  mo.host = config.metrics.host;
  mo.port = config.metrics.port;
  // The socket systemd passed may sit elsewhere than `socket` says; the
  // listener asks the one that actually serves.
  mo.socket_path = listen.listen_fd >= 0 ? api::http::bound_path(listen.listen_fd) : std::string();
  if (mo.socket_path.empty()) mo.socket_path = config.socket.native();
  mo.paths = {std::string(::dedupd::api::kMetrics), std::string(::dedupd::api::kHealth)};
  metrics_ = std::make_unique<api::http::MetricsListener>(mo);
  // An operator who asked for the listener learns at once that it is not
  // there (the unit fails to start and says why), not from a silent gap in
  // the graphs.
  if (auto started = metrics_->start(); !started) {
    spdlog::critical("cannot serve metrics.listen {}: {}", config.metrics.listen, started.error().message);
    metrics_.reset();
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
  // First the listener: its requests wait on the socket.
  if (metrics_) metrics_->stop();
  if (server_) server_->stop();
}

}  // namespace dedupd::daemon::wiring
