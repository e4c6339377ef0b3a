// Where the core meets its HTTP layer: the Frontend main hands the Daemon,
// which serves the routes (ApiServer) against a ServiceImpl made of the
// parts the Daemon hands over when it starts it.
#pragma once

#include <memory>

#include "daemon/frontend.hpp"

namespace dedupd::daemon {

class ApiServer;
class ServiceImpl;

class ApiFrontend final : public Frontend {
 public:
  ApiFrontend();
  ~ApiFrontend() override;
  ApiFrontend(const ApiFrontend&) = delete;
  ApiFrontend& operator=(const ApiFrontend&) = delete;

  bool start(const ServiceParts& parts, const Config& config, const ListenSettings& listen) override;
  void set_access(std::optional<gid_t> admin_gid, std::optional<gid_t> endpoint_gid) override;
  void stop() override;

 private:
  std::unique_ptr<ServiceImpl> service_;
  std::unique_ptr<ApiServer> server_;
};

}  // namespace dedupd::daemon
