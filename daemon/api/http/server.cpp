// libmicrohttpd glue: the server started on its socket and stopped, and
// the connections it tracks. A request's way in (limits, access check, the
// body collected, a hash batch parsed as it arrives) is server_intake.cpp's;
// its handler run, on or off the HTTP threads, and its answer queued, with
// per-request metrics, server_dispatch.cpp's. Handlers never see MHD. The
// socket itself is unix_listener's, the bound on bodies body_budget's, the
// connection rules connection_sweeper's.
//
// Abuse: every client of the socket is local, but any of them may hold
// connections open, trickle bytes or announce huge bodies. What keeps the
// others served: a connection limit high enough that held connections are
// cheap to carry (epoll; memory committed only as used) instead of a low one
// that locks newcomers out; a deadline for request headers and room made at
// the limit (connections.hpp); per-route body limits checked before a body
// is read; and a bound on all bodies held at once.
#include "daemon/api/http/server.hpp"

#include <fcntl.h>
#include <microhttpd.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "daemon/api/http/mhd_connections.hpp"
#include "daemon/api/http/server_core.hpp"
#include "daemon/api/http/unix_listener.hpp"

namespace dedupd::daemon::api::http {

namespace {

std::vector<std::string> route_names(const std::vector<Route>& routes) {
  std::vector<std::string> names;
  for (const auto& r : routes) names.emplace_back(r.name);
  return names;
}

void mhd_log(void*, const char* fmt, va_list ap) {
  char buf[512];
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  std::string_view text(buf);
  while (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  spdlog::debug("http: {}", text);
}

}  // namespace

ServerCore::ServerCore(api::Service& s, ServerOptions o, std::vector<Route> routes)
    : service(s),
      options(std::move(o)),
      router(std::move(routes)),
      metrics(route_names(router.routes())),
      context{service, service.answers(), metrics},
      bodies(options.max_body_memory, options.max_body_bytes) {
  set_admin_gid(options.admin_gid);
  set_endpoint_gid(options.endpoint_gid);
}

base::Result<ServerStarted> ServerCore::start() {
  if (mhd) return ServerStarted{};
  auto fail = [](std::string message) { return base::Error{"api.listen", 0, std::move(message)}; };
  if (options.max_body_memory < options.max_body_bytes + options.max_query_body_bytes)
    return fail(fmt::format("max_body_memory ({}) must be at least max_body_bytes + max_query_body_bytes ({})",
                            options.max_body_memory, options.max_body_bytes + options.max_query_body_bytes));
  unsigned wanted = options.max_connections ? options.max_connections : 1u;
  connection_limit = fit_to_descriptors(wanted);
  if (connection_limit < wanted)
    spdlog::warn("api: max_connections lowered from {} to {}: the descriptor limit (LimitNOFILE) is too low", wanted,
                 connection_limit);
  listen_fd = options.listen_fd;
  if (listen_fd < 0) {
    auto fd = bind_unix(options.socket_path, options.socket_mode);
    if (!fd) return fd.error();
    listen_fd = *fd;
    bound_path = true;
  } else {
    // Every pool thread accepts on it: a blocking accept would stall one.
    int fl = fcntl(listen_fd, F_GETFL);
    if (fl < 0 || fcntl(listen_fd, F_SETFL, fl | O_NONBLOCK) != 0) {
      listen_fd = -1;
      return fail(fmt::format("cannot use the inherited socket for {}: {}", options.socket_path, std::strerror(errno)));
    }
  }
  stopping = std::stop_source();
  admin_jobs = std::make_unique<JobQueue>(1);
  read_jobs = std::make_unique<JobQueue>(kReadJobThreads);
  storage_jobs = std::make_unique<JobQueue>(kStorageJobThreads);

  unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
  unsigned threads = options.threads ? options.threads : 1;
  mhd = MHD_start_daemon(flags, 0, nullptr, nullptr, &ServerCore::on_request, this, MHD_OPTION_LISTEN_SOCKET,
                         MHD_socket(listen_fd), MHD_OPTION_THREAD_POOL_SIZE, threads, MHD_OPTION_CONNECTION_LIMIT,
                         connection_limit, MHD_OPTION_CONNECTION_TIMEOUT, unsigned(options.connection_timeout.count()),
                         // Headers and the receive buffer live in this per-connection pool;
                         // bodies are copied out as they arrive, so it stays small: 16 KiB
                         // takes request headers of up to about 14 KiB (a 431 beyond). It is
                         // what a client that sends headers and never ends them pins, so it
                         // times max_connections bounds that: 2048 x 16 KiB = 32 MiB. Only
                         // the pages written are committed; an idle connection costs ~5 KiB.
                         MHD_OPTION_CONNECTION_MEMORY_LIMIT, size_t(16 * 1024), MHD_OPTION_NOTIFY_COMPLETED,
                         &ServerCore::on_completed, this, MHD_OPTION_NOTIFY_CONNECTION, &ServerCore::on_connection,
                         this, MHD_OPTION_EXTERNAL_LOGGER, &mhd_log, nullptr, MHD_OPTION_END);
  if (!mhd) {
    admin_jobs.reset();
    read_jobs.reset();
    storage_jobs.reset();
    if (bound_path) {
      close(listen_fd);
      unlink(options.socket_path.c_str());
      bound_path = false;
    }
    listen_fd = -1;
    return fail("libmicrohttpd refused to start on " + options.socket_path);
  }
  sweeper = std::make_unique<ConnectionSweeper>(connections, listen_fd, connection_limit, options.header_timeout);
  spdlog::info("api: listening on {} ({} threads, max {} connections, request headers within {}s)", options.socket_path,
               threads, connection_limit, options.header_timeout.count());
  return ServerStarted{};
}

void ServerCore::stop() {
  if (!mhd) return;
  sweeper.reset();
  // Jobs resume their suspended connections; MHD must not be stopped while
  // any is suspended. A fill gives up first (its storage fetch and its
  // wait for room in its pipe), and fails its pipe, which resumes the
  // connection its reader suspended.
  stopping.request_stop();
  admin_jobs->stop();
  read_jobs->stop();
  storage_jobs->stop();
  // Quiesced first: MHD_stop_daemon would otherwise shutdown(2) the listening
  // socket to wake its threads, and a socket systemd passed is systemd's:
  // shut down, it stops listening for good (dedupd.socket fails with
  // POLLHUP) and no later start can be activated through it. Quiesced, MHD
  // forgets the socket and wakes its threads through its own pipe
  // (MHD_ALLOW_SUSPEND_RESUME brings one); the socket stays as it was.
  MHD_quiesce_daemon(mhd);
  MHD_stop_daemon(mhd);
  mhd = nullptr;
  admin_jobs.reset();
  read_jobs.reset();
  storage_jobs.reset();
  // Ours to close, never to shut down: connections still in its backlog wait
  // there for the next dedupd systemd starts.
  if (listen_fd >= 0) close(listen_fd);
  listen_fd = -1;
  if (bound_path) unlink(options.socket_path.c_str());
  bound_path = false;
}

ConnectionTable::Entry* ServerCore::connection_entry(MHD_Connection* conn) {
  const MHD_ConnectionInfo* info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return info ? static_cast<ConnectionTable::Entry*>(info->socket_context) : nullptr;
}

void ServerCore::on_completed(void* cls, MHD_Connection* conn, void** con_cls, enum MHD_RequestTerminationCode) {
  auto* self = static_cast<ServerCore*>(cls);
  if (auto* st = static_cast<RequestState*>(*con_cls)) {
    self->bodies.give(st->charged);
    delete st;
    *con_cls = nullptr;
  }
  self->connections.request_ended(connection_entry(conn), Clock::now());
}

void ServerCore::on_connection(void* cls, MHD_Connection* conn, void** socket_context,
                               enum MHD_ConnectionNotificationCode code) {
  track_connection(static_cast<ServerCore*>(cls)->connections, conn, socket_context, code, Clock::now());
}

ApiServer::ApiServer(api::Service& service, ServerOptions options, std::vector<Route> routes)
    : impl_(std::make_unique<ServerCore>(service, std::move(options), std::move(routes))) {}

ApiServer::~ApiServer() { stop(); }

base::Result<ApiServer::Started> ApiServer::start() {
  auto started = impl_->start();
  if (!started) spdlog::error("api: {}", started.error().message);
  return started;
}

void ApiServer::stop() { impl_->stop(); }

void ApiServer::set_admin_gid(std::optional<gid_t> gid) { impl_->set_admin_gid(gid); }
void ApiServer::set_endpoint_gid(std::optional<gid_t> gid) { impl_->set_endpoint_gid(gid); }

const std::string& ApiServer::socket_path() const { return impl_->options.socket_path; }

}  // namespace dedupd::daemon::api::http
