// libmicrohttpd glue: limits, access check, body collection (a hash batch
// parsed as it arrives), dispatch through the routing table, admin work off
// the HTTP threads, streamed answers and per-request metrics. Handlers
// never see MHD. The socket itself is unix_listener's, the bound on bodies
// body_budget's, the connection rules connection_sweeper's.
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
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <exception>
#include <optional>

#include "api/routes.hpp"
#include "daemon/api/http/access.hpp"
#include "daemon/api/http/batch_request.hpp"
#include "daemon/api/http/body_budget.hpp"
#include "daemon/api/http/connection_sweeper.hpp"
#include "daemon/api/http/connections.hpp"
#include "daemon/api/http/hash_spool.hpp"
#include "daemon/api/http/job_queue.hpp"
#include "daemon/api/http/metrics.hpp"
#include "daemon/api/http/mhd_connections.hpp"
#include "daemon/api/http/router.hpp"
#include "daemon/api/http/unix_listener.hpp"
#include "daemon/fleet_link/answers.hpp"

namespace dedupd::daemon::api::http {

namespace {

using Clock = std::chrono::steady_clock;

// Reads that may wait, at once: one per connection the fleet pool may lend,
// and two more, which find none idle and wait for one within their bound
// (or run a dry run of the steward, which runs one at a time).
constexpr std::size_t kReadJobThreads = fleet_link::kFleetPoolMax + 2;
// What a route that takes no body accepts (and ignores): a client sending
// "{}" with a POST is not worth a 413.
constexpr std::size_t kStrayBodyBytes = 1024;
// A body streamed past its limit is still read, and dropped, for this much
// more, so a client that overshoots a little hears why (413); one that goes
// on is cut off instead of being read to the end.
constexpr std::uint64_t kDrainBytes = 1 << 20;
// Answers up to this size are not counted in the body budget: the socket's
// send buffer takes them whole, so the server does not hold them, and a
// lookup or /healthz is never refused because big bodies use the room.
constexpr std::size_t kSmallAnswerBytes = 128 << 10;
// What a streamed hash batch holds while it is received and answered: its
// spool block, one block's lookup results and the answer being written.
// Taken from the body budget for the whole request, so however many
// batches are in flight their memory stays inside it.
constexpr std::size_t kHashStreamBytes = 1 << 20;
// How much of a streamed answer MHD asks for at once (it may ask for less:
// its buffer lives in the connection's memory pool).
constexpr std::size_t kStreamBlockBytes = 64 << 10;

static_assert(kDefaultMaxQueryBodyBytes >= ::dedupd::api::kMaxBatchHashes * 72,
              "the default query body limit must fit a batch of the most hashes, one per line");

std::vector<std::string> route_names(const std::vector<Route>& routes) {
  std::vector<std::string> names;
  for (const auto& r : routes) names.emplace_back(r.name);
  return names;
}

// State of one request, from its headers to the completion callback.
struct RequestState {
  Clock::time_point start = Clock::now();
  std::size_t route_id = SIZE_MAX;  // metrics: unmatched until matched
  const MethodEntry* entry = nullptr;
  Request request;
  Body body_kind = Body::none;               // what the route takes
  std::size_t body_limit = kStrayBodyBytes;  // and how much of it
  std::uint64_t received = 0;                // body bytes, kept or not
  std::uint64_t charged = 0;                 // of the server's body budget
  // A body over its limit or over the budget is dropped as it arrives and
  // answered once the request is in (MHD cannot answer mid-body).
  enum class Dropped { no, too_large, busy, bad_body } dropped = Dropped::no;
  std::uint64_t dropped_at = 0;  // st.received when it was dropped
  std::string drop_message;      // bad_body, or busy when the spool failed
  // Body::hashes: the body parsed as it arrives into the spool.
  std::unique_ptr<HashStreamParser> parser;
  std::shared_ptr<HashSpool> spool;
  // An answer decided from the headers alone (404, 405, 403, 413), held
  // until MHD has the (bodyless) request so the connection stays open.
  std::optional<Response> early;
  unsigned status = 0;
  // A handler run off the HTTP threads (JobQueue): admin, or a read that
  // may wait on the fleet.
  enum class OffThread { idle, running, done } off_thread = OffThread::idle;
  Response off_thread_result;
};

void free_body(void* cls) { delete static_cast<std::string*>(cls); }

// A streamed answer (chunked transfer): MHD asks for the next bytes when
// the socket can take them.
ssize_t read_stream(void* cls, std::uint64_t, char* buf, std::size_t max) {
  auto& stream = *static_cast<std::shared_ptr<BodyStream>*>(cls);
  try {
    auto n = stream->read(buf, max);
    if (!n) {
      spdlog::error("api: answer stopped part-way: {}", n.error().to_string());
      return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    return *n == 0 ? MHD_CONTENT_READER_END_OF_STREAM : ssize_t(*n);
  } catch (const std::exception& e) {
    spdlog::error("api: answer stopped part-way: {}", e.what());
    return MHD_CONTENT_READER_END_WITH_ERROR;
  }
}

void free_stream(void* cls) { delete static_cast<std::shared_ptr<BodyStream>*>(cls); }

enum MHD_Result query_collector(void* cls, enum MHD_ValueKind, const char* key, const char* value) {
  auto* out = static_cast<std::vector<std::pair<std::string, std::string>>*>(cls);
  out->emplace_back(key ? key : "", value ? value : "");
  return MHD_YES;
}

Response busy(std::uint64_t cap) {
  auto r = error(kNotReady, "busy",
                 fmt::format("request and answer bodies in flight already use the {} bytes the server "
                             "holds for them at once; retry",
                             cap));
  r.headers.emplace_back("Retry-After", "1");
  return r;
}

ConnectionTable::Entry* connection_entry(MHD_Connection* conn) {
  const MHD_ConnectionInfo* info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return info ? static_cast<ConnectionTable::Entry*>(info->socket_context) : nullptr;
}

void mhd_log(void*, const char* fmt, va_list ap) {
  char buf[512];
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  std::string_view text(buf);
  while (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  spdlog::debug("http: {}", text);
}

}  // namespace

struct ApiServer::Impl {
  Impl(api::Service& s, ServerOptions o, std::vector<Route> routes)
      : service(s),
        options(std::move(o)),
        router(std::move(routes)),
        metrics(route_names(router.routes())),
        context{service, service.answers(), metrics},
        bodies(options.max_body_memory, options.max_body_bytes) {
    set_admin_gid(options.admin_gid);
    set_endpoint_gid(options.endpoint_gid);
  }

  static void store_gid(std::atomic<std::int64_t>& to, std::optional<gid_t> gid) {
    to.store(gid ? std::int64_t(*gid) : -1);
  }
  static std::optional<gid_t> load_gid(const std::atomic<std::int64_t>& from) {
    std::int64_t g = from.load();
    if (g < 0) return std::nullopt;
    return gid_t(g);
  }
  void set_admin_gid(std::optional<gid_t> gid) { store_gid(admin_gid, gid); }
  void set_endpoint_gid(std::optional<gid_t> gid) { store_gid(endpoint_gid, gid); }
  std::optional<gid_t> current_admin_gid() const { return load_gid(admin_gid); }

  // Admins always, and dedupd's own user: it owns the index anyway, and the
  // unit's ExecReload runs as it (`dedupctl reload`; ./dev run starts nginx
  // as its user too). Endpoint routes also the endpoint's group.
  bool may_use(const PeerCred& peer, http::Access access) const {
    if (peer.uid == geteuid() || is_admin(peer, current_admin_gid())) return true;
    if (access != http::Access::endpoint) return false;
    return load_gid(endpoint_gid) && is_admin(peer, load_gid(endpoint_gid));
  }

  shard::Result<Started> start();
  void stop();

  static enum MHD_Result on_request(void* cls, MHD_Connection* conn, const char* url, const char* method,
                                    const char* version, const char* upload_data, size_t* upload_data_size,
                                    void** con_cls);
  static void on_completed(void* cls, MHD_Connection* conn, void** con_cls, enum MHD_RequestTerminationCode code);
  static void on_connection(void* cls, MHD_Connection* conn, void** socket_context,
                            enum MHD_ConnectionNotificationCode code);

  enum MHD_Result first_call(MHD_Connection* conn, RequestState& st, const char* url, const char* method);
  enum MHD_Result receive(RequestState& st, const char* data, std::size_t n);
  void drop_body(RequestState& st, RequestState::Dropped why);
  std::size_t body_limit(Body kind) const;
  enum MHD_Result refuse(MHD_Connection* conn, RequestState& st, Response&& r);
  enum MHD_Result dispatch(MHD_Connection* conn, RequestState& st);
  enum MHD_Result respond(MHD_Connection* conn, RequestState& st, Response&& r);
  Response run_handler(const MethodEntry& entry, Request& request);

  api::Service& service;
  ServerOptions options;
  Router router;
  Metrics metrics;
  Context context;
  std::atomic<std::int64_t> admin_gid{-1}, endpoint_gid{-1};
  std::unique_ptr<JobQueue> admin_jobs;
  std::unique_ptr<JobQueue> read_jobs;
  BodyBudget bodies;
  ConnectionTable connections;
  unsigned connection_limit = 0;  // max_connections as it fits the descriptors
  std::unique_ptr<ConnectionSweeper> sweeper;
  MHD_Daemon* mhd = nullptr;
  int listen_fd = -1;
  bool bound_path = false;  // we created the socket file: remove it on stop
};

shard::Result<ApiServer::Started> ApiServer::Impl::start() {
  if (mhd) return Started{};
  auto fail = [](std::string message) { return shard::Error{"api.listen", 0, std::move(message)}; };
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
  admin_jobs = std::make_unique<JobQueue>(1);
  read_jobs = std::make_unique<JobQueue>(kReadJobThreads);

  unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
  unsigned threads = options.threads ? options.threads : 1;
  mhd = MHD_start_daemon(flags, 0, nullptr, nullptr, &Impl::on_request, this, MHD_OPTION_LISTEN_SOCKET,
                         MHD_socket(listen_fd), MHD_OPTION_THREAD_POOL_SIZE, threads, MHD_OPTION_CONNECTION_LIMIT,
                         connection_limit, MHD_OPTION_CONNECTION_TIMEOUT, unsigned(options.connection_timeout.count()),
                         // Headers and the receive buffer live in this per-connection pool;
                         // bodies are copied out as they arrive, so it stays small: 16 KiB
                         // takes request headers of up to about 14 KiB (a 431 beyond). It is
                         // what a client that sends headers and never ends them pins, so it
                         // times max_connections bounds that: 2048 x 16 KiB = 32 MiB. Only
                         // the pages written are committed; an idle connection costs ~5 KiB.
                         MHD_OPTION_CONNECTION_MEMORY_LIMIT, size_t(16 * 1024), MHD_OPTION_NOTIFY_COMPLETED,
                         &Impl::on_completed, this, MHD_OPTION_NOTIFY_CONNECTION, &Impl::on_connection, this,
                         MHD_OPTION_EXTERNAL_LOGGER, &mhd_log, nullptr, MHD_OPTION_END);
  if (!mhd) {
    admin_jobs.reset();
    read_jobs.reset();
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
  return Started{};
}

void ApiServer::Impl::stop() {
  if (!mhd) return;
  sweeper.reset();
  // Jobs resume their suspended connections; MHD must not be stopped while
  // any is suspended.
  admin_jobs->stop();
  read_jobs->stop();
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
  // Ours to close, never to shut down: connections still in its backlog wait
  // there for the next dedupd systemd starts.
  if (listen_fd >= 0) close(listen_fd);
  listen_fd = -1;
  if (bound_path) unlink(options.socket_path.c_str());
  bound_path = false;
}

enum MHD_Result ApiServer::Impl::on_request(void* cls, MHD_Connection* conn, const char* url, const char* method,
                                            const char*, const char* upload_data, size_t* upload_data_size,
                                            void** con_cls) {
  auto* self = static_cast<Impl*>(cls);
  auto* st = static_cast<RequestState*>(*con_cls);
  try {
    if (!st) {
      st = new RequestState;
      *con_cls = st;
      self->connections.request_started(connection_entry(conn));
      return self->first_call(conn, *st, url, method);
    }
    if (*upload_data_size > 0) {
      std::size_t n = *upload_data_size;
      *upload_data_size = 0;
      return self->receive(*st, upload_data, n);
    }
    return self->dispatch(conn, *st);
  } catch (const std::exception& e) {
    spdlog::error("api: {} {}: {}", method, url, e.what());
  }
  // Out of memory or similar: try a 500, else drop the connection.
  try {
    if (st) return self->respond(conn, *st, error(kInternal, "internal error"));
  } catch (const std::exception&) {
  }
  return MHD_NO;
}

enum MHD_Result ApiServer::Impl::refuse(MHD_Connection* conn, RequestState& st, Response&& r) {
  const char* length = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
  bool has_body = (length && std::string_view(length) != "0") ||
                  MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
  // With a body pending, answer now so it is never read (MHD then closes
  // the connection); without one, answer on the next call and keep it.
  if (has_body) return respond(conn, st, std::move(r));
  st.early = std::move(r);
  return MHD_YES;
}

enum MHD_Result ApiServer::Impl::first_call(MHD_Connection* conn, RequestState& st, const char* url,
                                            const char* method) {
  Match m = router.match(url, method);
  if (!m.route) return refuse(conn, st, error(kNotFound, fmt::format("no route {}", url)));
  st.route_id = m.route->id;
  if (!m.entry) {
    auto r = error(kMethodNotAllowed, fmt::format("{} does not take {}", m.route->path, method));
    r.headers.emplace_back("Allow", Router::allow(*m.route));
    return refuse(conn, st, std::move(r));
  }
  st.entry = m.entry;
  st.body_kind = m.entry->body;
  st.body_limit = body_limit(st.body_kind);

  // Refuse an announced oversized body before reading any of it (curl and
  // most clients wait for "100 Continue", which is then never sent).
  const char* length = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
  std::uint64_t announced = 0;
  if (length) {
    std::string_view s(length);
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), announced);
    if (ec != std::errc() || p != s.data() + s.size())
      return refuse(conn, st, error(kBadRequest, "bad Content-Length"));
    if (announced > st.body_limit)
      return refuse(conn, st,
                    error(kTooLarge, fmt::format("body of {} bytes is over the limit of {} for {} {}", announced,
                                                 st.body_limit, method, m.route->path)));
  }

  if (const char* type = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE))
    st.request.content_type = type;
  if (const char* accept = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT))
    st.request.accept = accept;
  if (const char* via = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, ::dedupd::api::kViaHeader.data()))
    st.request.via = via;
  if (const char* cas = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, ::dedupd::api::kCasHeader.data()))
    st.request.cas = cas;

  // Admin access is decided before the body is received.
  if (m.entry->access != http::Access::read) {
    const MHD_ConnectionInfo* info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    std::optional<PeerCred> peer = info ? peer_of(info->connect_fd) : std::nullopt;
    if (!peer || !may_use(*peer, m.entry->access)) {
      std::string who = peer ? fmt::format("uid {}", peer->uid) : std::string("unknown peer");
      const char* needs = m.entry->access == http::Access::admin ? "root or the admin group"
                                                                 : "the local Xet endpoint (xet_endpoint.group)";
      return refuse(conn, st, error(kForbidden, fmt::format("{} needs {} ({})", m.route->path, needs, who)));
    }
  }

  // Room for the body is taken as its bytes arrive, so holding room costs
  // a client the sending of them; one that could not fit now is told so
  // before it sends anything.
  if (st.body_kind == Body::hashes) {
    // Any size: the body goes through the parser into the spool as it
    // arrives; what the request holds is fixed and taken up front.
    if (!bodies.take(st.body_kind, kHashStreamBytes)) return refuse(conn, st, busy(bodies.cap(st.body_kind)));
    st.charged = kHashStreamBytes;
    st.spool = std::make_shared<HashSpool>(options.spool_dir);
    st.parser = std::make_unique<HashStreamParser>(HashStreamParser::form_of(st.request.content_type));
    announced = 0;
  }
  if (announced > 0 && !bodies.fits(st.body_kind, announced)) return refuse(conn, st, busy(bodies.cap(st.body_kind)));

  st.request.method = method;
  st.request.path = url;
  st.request.tail = std::string(m.tail);
  MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, &query_collector, &st.request.query);
  // Reserve for typical bodies only: a client announcing the maximum and
  // then trickling must not pin that much memory per connection up front.
  if (announced > 0) st.request.body.reserve(std::size_t(std::min<std::uint64_t>(announced, 16u << 20)));

  // Answer on the next call, once MHD has the whole request: a response
  // queued before that makes MHD close the connection (no keep-alive).
  return MHD_YES;
}

std::size_t ApiServer::Impl::body_limit(Body kind) const {
  switch (kind) {
    case Body::none:
      return kStrayBodyBytes;
    case Body::upload:
      return options.max_body_bytes;
    case Body::hashes:
      return SIZE_MAX;
  }
  return kStrayBodyBytes;
}

enum MHD_Result ApiServer::Impl::receive(RequestState& st, const char* data, std::size_t n) {
  st.received += n;
  if (st.parser) {
    if (st.dropped == RequestState::Dropped::no && !st.parser->feed(std::string_view(data, n), *st.spool)) {
      const bool spool_failed = !st.spool->error().empty();
      st.drop_message = spool_failed ? st.spool->error() : st.parser->error();
      drop_body(st, spool_failed ? RequestState::Dropped::busy : RequestState::Dropped::bad_body);
    }
  } else if (st.dropped == RequestState::Dropped::no) {
    if (st.received > st.body_limit) {
      drop_body(st, RequestState::Dropped::too_large);
    } else if (!bodies.take(st.body_kind, n)) {
      drop_body(st, RequestState::Dropped::busy);
    } else {
      st.charged += n;
      st.request.body.insert(st.request.body.end(), data, data + n);
    }
  }
  if (st.dropped != RequestState::Dropped::no && st.received > st.dropped_at + kDrainBytes) {
    spdlog::debug("api: {} {}: closing the connection, its body goes on after it was refused", st.request.method,
                  st.request.path);
    return MHD_NO;
  }
  return MHD_YES;
}

void ApiServer::Impl::drop_body(RequestState& st, RequestState::Dropped why) {
  st.dropped = why;
  // Past the limit, the drain is counted from the limit itself.
  st.dropped_at = why == RequestState::Dropped::too_large ? st.body_limit : st.received;
  st.spool.reset();
  std::vector<std::uint8_t>().swap(st.request.body);
  bodies.give(st.charged);
  st.charged = 0;
}

enum MHD_Result ApiServer::Impl::dispatch(MHD_Connection* conn, RequestState& st) {
  if (st.early) return respond(conn, st, std::move(*st.early));
  if (st.dropped == RequestState::Dropped::too_large)
    return respond(conn, st,
                   error(kTooLarge, fmt::format("body is over the limit of {} bytes for {} {}", st.body_limit,
                                                st.request.method, st.request.path)));
  if (st.dropped == RequestState::Dropped::busy) {
    if (st.drop_message.empty()) return respond(conn, st, busy(bodies.cap(st.body_kind)));
    auto r = error(kNotReady, "busy", st.drop_message + "; retry");
    r.headers.emplace_back("Retry-After", "1");
    return respond(conn, st, std::move(r));
  }
  if (st.dropped == RequestState::Dropped::bad_body) return respond(conn, st, error(kBadRequest, st.drop_message));
  if (st.parser) {
    if (!st.parser->finish(*st.spool)) return respond(conn, st, error(kBadRequest, st.parser->error()));
    st.request.hashes = std::move(st.spool);
    st.parser.reset();
  }
  JobQueue* jobs = nullptr;
  if (st.entry->access == http::Access::admin) jobs = admin_jobs.get();
  else if (st.entry->wait == http::Wait::work ||
           (st.entry->wait == http::Wait::fleet && context.answers.fleet().configured()))
    jobs = read_jobs.get();
  if (!jobs) return respond(conn, st, run_handler(*st.entry, st.request));

  switch (st.off_thread) {
    case RequestState::OffThread::idle: {
      st.off_thread = RequestState::OffThread::running;
      MHD_suspend_connection(conn);
      jobs->post([this, conn, &st] {
        st.off_thread_result = run_handler(*st.entry, st.request);
        st.off_thread = RequestState::OffThread::done;
        MHD_resume_connection(conn);
      });
      return MHD_YES;
    }
    case RequestState::OffThread::running:  // not expected: suspended until done
      return MHD_YES;
    case RequestState::OffThread::done:
      return respond(conn, st, std::move(st.off_thread_result));
  }
  return MHD_NO;
}

Response ApiServer::Impl::run_handler(const MethodEntry& entry, Request& request) {
  try {
    return entry.handler(context, request);
  } catch (const std::exception& e) {
    spdlog::error("api: {} {}: {}", request.method, request.path, e.what());
    return error(kInternal, "internal error (logged)");
  }
}

enum MHD_Result ApiServer::Impl::respond(MHD_Connection* conn, RequestState& st, Response&& r) {
  // The handler is done with the body: free it and its room now, not when
  // MHD has sent the answer, so a client that sends its next request as
  // soon as it reads this one finds the room free.
  std::vector<std::uint8_t>().swap(st.request.body);
  st.request.hashes.reset();  // the answer holds it, if it needs it
  // A streamed answer keeps its room until it is sent (on_completed).
  if (!r.stream) {
    bodies.give(st.charged);
    st.charged = 0;
  }
  // A large answer is held until the client has read it (a 100,000-hash
  // batch answer is ~10 MB); one that does not read would otherwise make
  // its query cost that much for as long as it keeps the connection. So it
  // takes room like a request body; small ones fit in the socket buffer.
  if (!r.file && !r.stream && r.body.size() > kSmallAnswerBytes) {
    if (bodies.take(st.body_kind, r.body.size())) st.charged = r.body.size();
    else r = busy(bodies.cap(st.body_kind));
  }
  MHD_Response* resp = nullptr;
  if (r.file) {
    // A file body (an export): MHD reads it with pread/sendfile and closes
    // its own descriptor when done; ours goes with the last Response copy.
    int fd = ::fcntl(r.file->fd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0) return MHD_NO;
    resp = MHD_create_response_from_fd64(r.file->size, fd);
    if (!resp) {
      ::close(fd);
      return MHD_NO;
    }
  } else if (r.stream) {
    auto* stream = new std::shared_ptr<BodyStream>(std::move(r.stream));
    resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, kStreamBlockBytes, &read_stream, stream, &free_stream);
    if (!resp) {
      delete stream;
      return MHD_NO;
    }
  } else {
    auto* body = new std::string(std::move(r.body));
    resp = MHD_create_response_from_buffer_with_free_callback_cls(body->size(), body->data(), &free_body, body);
    if (!resp) {
      delete body;
      return MHD_NO;
    }
  }
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r.content_type.c_str());
  for (const auto& [k, v] : r.headers) MHD_add_response_header(resp, k.c_str(), v.c_str());
  if (service.index_rebuilding()) MHD_add_response_header(resp, "X-Dedupd-Index", "rebuilding");
  st.status = r.status;
  enum MHD_Result ok = MHD_queue_response(conn, r.status, resp);
  MHD_destroy_response(resp);
  // Counted when queued, so a client that reads /metrics right after a
  // response always sees it counted.
  metrics.record(st.route_id, st.status, Clock::now() - st.start);
  return ok;
}

void ApiServer::Impl::on_completed(void* cls, MHD_Connection* conn, void** con_cls, enum MHD_RequestTerminationCode) {
  auto* self = static_cast<Impl*>(cls);
  if (auto* st = static_cast<RequestState*>(*con_cls)) {
    self->bodies.give(st->charged);
    delete st;
    *con_cls = nullptr;
  }
  self->connections.request_ended(connection_entry(conn), Clock::now());
}

void ApiServer::Impl::on_connection(void* cls, MHD_Connection* conn, void** socket_context,
                                    enum MHD_ConnectionNotificationCode code) {
  track_connection(static_cast<Impl*>(cls)->connections, conn, socket_context, code, Clock::now());
}

ApiServer::ApiServer(api::Service& service, ServerOptions options, std::vector<Route> routes)
    : impl_(std::make_unique<Impl>(service, std::move(options), std::move(routes))) {}

ApiServer::~ApiServer() { stop(); }

shard::Result<ApiServer::Started> ApiServer::start() {
  auto started = impl_->start();
  if (!started) spdlog::error("api: {}", started.error().message);
  return started;
}

void ApiServer::stop() { impl_->stop(); }

void ApiServer::set_admin_gid(std::optional<gid_t> gid) { impl_->set_admin_gid(gid); }
void ApiServer::set_endpoint_gid(std::optional<gid_t> gid) { impl_->set_endpoint_gid(gid); }

const std::string& ApiServer::socket_path() const { return impl_->options.socket_path; }

}  // namespace dedupd::daemon::api::http
