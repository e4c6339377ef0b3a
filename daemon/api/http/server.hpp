// ApiServer: HTTP/1.1 over a Unix stream socket (libmicrohttpd), serving the
// route table it is handed (daemon/api/routes: docs/API.md) against a Service. It either adopts a socket systemd
// already made listen (socket activation) or binds the path itself.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "daemon/api/http/router.hpp"
#include "daemon/api/http/server_options.hpp"
#include "daemon/api/service.hpp"

namespace dedupd::daemon::api::http {

class ServerCore;

class ApiServer {
 public:
  ApiServer(api::Service& service, ServerOptions options, std::vector<Route> routes);
  ~ApiServer();  // stops
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  // Binds (or adopts) and starts serving on background threads. An error
  // (rule "api.listen") says why not: path in use by a live server,
  // permission, libmicrohttpd refusing the options.
  using Started = ServerStarted;
  [[nodiscard]] base::Result<Started> start();
  // Stops accepting, lets running requests end, joins threads. Idempotent.
  void stop();

  // SIGHUP: a new admin group applies to the next request.
  void set_admin_gid(std::optional<gid_t> gid);
  void set_endpoint_gid(std::optional<gid_t> gid);

  const std::string& socket_path() const;

 private:
  std::unique_ptr<ServerCore> impl_;
};

}  // namespace dedupd::daemon::api::http
