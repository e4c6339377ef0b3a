// Where the core meets its HTTP layer: the Frontend main hands the Daemon,
// which serves the routes (ApiServer) against a ServiceImpl made of the
// parts the Daemon hands over when it starts it, and, when `metrics.listen`
// asks for it, the TCP listener that passes the socket's /metrics and
// /healthz on to Prometheus (http::MetricsListener).
#pragma once

#include <memory>

#include "daemon/config/config.hpp"
#include "daemon/core/frontend.hpp"

namespace dedupd::daemon::api::http {
class ApiServer;
class MetricsListener;
}  // namespace dedupd::daemon::api::http
namespace dedupd::daemon::answers {
class DownloadGrants;
class DownloadObjects;
}  // namespace dedupd::daemon::answers

namespace dedupd::daemon::wiring {

class ServiceImpl;

class ApiFrontend final : public core::Frontend {
 public:
  ApiFrontend();
  ~ApiFrontend() override;
  ApiFrontend(const ApiFrontend&) = delete;
  ApiFrontend& operator=(const ApiFrontend&) = delete;

  bool start(const core::ServiceParts& parts, const config::Config& config,
             const core::ListenSettings& listen) override;
  void set_access(std::optional<gid_t> admin_gid, std::optional<gid_t> endpoint_gid) override;
  void stop() override;

 private:
  bool start_metrics(const config::Config& config, const core::ListenSettings& listen);
  // The signer of the endpoint's range URLs, with its key
  // (xet_endpoint.downloads.key_file) holding at most
  // xet_endpoint.downloads.max_held_urls CAS URLs; nullptr (logged) when
  // there is no key. Made at start: a reload changes neither.
  static std::unique_ptr<answers::DownloadGrants> download_grants(const config::Config& config);
  // The download cache's checked objects, with the digests an earlier run
  // kept in the state dir (xet-download-checks) read back.
  static std::unique_ptr<answers::DownloadObjects> download_objects(const config::Config& config);

  std::unique_ptr<ServiceImpl> service_;
  std::unique_ptr<api::http::ApiServer> server_;
  std::unique_ptr<api::http::MetricsListener> metrics_;
};

}  // namespace dedupd::daemon::wiring
