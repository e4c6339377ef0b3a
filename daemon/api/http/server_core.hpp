// The server behind ApiServer, what its parts share (server.cpp starts and stops it,
// server_intake.cpp takes a request in, server_dispatch.cpp runs its handler
// and answers): the limits, one request's state and the server's own. Only
// those three files include it.
#pragma once

#include <microhttpd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "api/routes.hpp"
#include "daemon/api/http/access.hpp"
#include "daemon/api/http/batch_request.hpp"
#include "daemon/api/http/body_budget.hpp"
#include "daemon/api/http/connection_sweeper.hpp"
#include "daemon/api/http/connections.hpp"
#include "daemon/api/http/hash_spool.hpp"
#include "daemon/api/http/job_queue.hpp"
#include "daemon/api/http/metrics.hpp"
#include "daemon/api/http/router.hpp"
#include "daemon/api/http/server_options.hpp"
#include "daemon/api/service.hpp"
#include "daemon/fleet_link/answers.hpp"

namespace dedupd::daemon::api::http {

// Reads that may wait, at once: one per connection the fleet pool may lend,
// and two more, which find none idle and wait for one within their bound
// (or run a dry run of the steward, which runs one at a time).
inline constexpr std::size_t kReadJobThreads = fleet_link::kFleetPoolMax + 2;
// Fills of the Xet endpoint's download cache at once (each a storage fetch
// of up to a 64 MiB object): apart from the reads above, so cold downloads
// never hold a lookup up; more wait their turn.
inline constexpr std::size_t kStorageJobThreads = 8;
// What a route that takes no body accepts (and ignores): a client sending
// "{}" with a POST is not worth a 413.
inline constexpr std::size_t kStrayBodyBytes = 1024;
// A body streamed past its limit is still read, and dropped, for this much
// more, so a client that overshoots a little hears why (413); one that goes
// on is cut off instead of being read to the end.
inline constexpr std::uint64_t kDrainBytes = 1 << 20;
// Answers up to this size are not counted in the body budget: the socket's
// send buffer takes them whole, so the server does not hold them, and a
// lookup or /healthz is never refused because big bodies use the room.
inline constexpr std::size_t kSmallAnswerBytes = 128 << 10;
// What a streamed hash batch holds while it is received and answered: its
// spool block, one block's lookup results and the answer being written.
// Taken from the body budget for the whole request, so however many
// batches are in flight their memory stays inside it.
inline constexpr std::size_t kHashStreamBytes = 1 << 20;
// How much of a streamed answer MHD asks for at once (it may ask for less:
// its buffer lives in the connection's memory pool).
inline constexpr std::size_t kStreamBlockBytes = 64 << 10;
// The same for a piped answer (a fill relayed as it comes), whose buffer
// MHD allocates with the response: one copy and one send per block.
inline constexpr std::size_t kPipeBlockBytes = 256 << 10;

static_assert(kDefaultMaxQueryBodyBytes >= ::dedupd::api::kMaxBatchHashes * 72,
              "the default query body limit must fit a batch of the most hashes, one per line");

// State of one request, from its headers to the completion callback.
struct RequestState {
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
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

class ServerCore {
 public:
  using Clock = std::chrono::steady_clock;

  ServerCore(api::Service& s, ServerOptions o, std::vector<Route> routes);

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

  base::Result<ServerStarted> start();
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
  // 503 "busy": the bodies in flight already hold all the room `cap` gives.
  static Response busy(std::uint64_t cap);
  static ConnectionTable::Entry* connection_entry(MHD_Connection* conn);

  api::Service& service;
  ServerOptions options;
  Router router;
  Metrics metrics;
  Context context;
  std::atomic<std::int64_t> admin_gid{-1}, endpoint_gid{-1};
  std::unique_ptr<JobQueue> admin_jobs;
  std::unique_ptr<JobQueue> read_jobs;
  std::unique_ptr<JobQueue> storage_jobs;
  // Requested by stop(): handlers on the jobs that may run long give up
  // (Request::stopping), so stop() never waits for a storage.
  std::stop_source stopping;
  BodyBudget bodies;
  ConnectionTable connections;
  unsigned connection_limit = 0;  // max_connections as it fits the descriptors
  std::unique_ptr<ConnectionSweeper> sweeper;
  MHD_Daemon* mhd = nullptr;
  int listen_fd = -1;
  bool bound_path = false;  // we created the socket file: remove it on stop
};

}  // namespace dedupd::daemon::api::http
