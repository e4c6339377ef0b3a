// How the API server is set up (ApiServer, server_core.hpp): its socket,
// its limits on bodies and connections, its threads and who may use the
// admin and endpoint routes.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

namespace dedupd::daemon::api::http {

// The least room for batch queries in the body budget (a batch in flight
// holds 1 MiB of it, whatever its size).
inline constexpr std::size_t kDefaultMaxQueryBodyBytes = std::size_t(10) << 20;

struct ServerOptions {
  // An already listening AF_UNIX SOCK_STREAM fd (from sd_listen_fds). When
  // >= 0 the server adopts it (and closes it on stop); socket_path is then
  // only reported, not bound.
  int listen_fd = -1;
  // Path to bind when listen_fd < 0: a stale socket file there is unlinked,
  // the new one gets socket_mode. Removed again on stop.
  std::string socket_path;
  mode_t socket_mode = 0660;

  // Request bodies, each checked against its route's limit from the
  // Content-Length before any of it is read (413), or while a chunked one
  // streams in: an upload (admin ingest) up to max_body_bytes; any other
  // route but a batch query a stray 1 KiB. A batch query (POST /v1/chunk)
  // takes any size: it is parsed as it arrives (hash_spool.hpp).
  std::size_t max_body_bytes = std::size_t(256) << 20;
  // The least of max_body_memory kept for batch queries.
  std::size_t max_query_body_bytes = kDefaultMaxQueryBodyBytes;
  // Body bytes held at once, all connections together: request bodies as
  // they arrive, answers over 128 KiB until their client has read them,
  // and 1 MiB for each batch query in flight (503 "busy" beyond it).
  // Queries get what is left after room for one upload of max_body_bytes:
  // 32 MiB by default, 32 batches at once, so clients without admin rights
  // cannot make the daemon hold more however many they send at once. At
  // least max_body_bytes + max_query_body_bytes.
  std::size_t max_body_memory = std::size_t(256 + 32) << 20;
  // Connections served at once. With epoll an idle connection costs a few
  // KiB and no work, so the limit is well above what a crowd of held
  // connections (a thousand) takes, instead of a low one that locks
  // newcomers out until the holders time out. Its other bound is memory:
  // a client that sends headers and never ends them pins a connection's
  // 16 KiB buffer (server.cpp), 32 MiB at 2048. The server raises its
  // descriptor limit to match, or lowers this one to fit (logged). At the
  // limit, the connections that have waited longest without a request are
  // closed to make room for newcomers.
  unsigned max_connections = 2048;
  // A connection idle (or trickling) this long in a request is closed.
  std::chrono::seconds connection_timeout{30};
  // A connection must deliver a request's complete headers within this of
  // being accepted or of its previous response, however it trickles them
  // in (MHD's timeout above restarts with every byte).
  std::chrono::seconds header_timeout{10};
  // Where a POST /v1/chunk batch that outgrows its first block of hashes
  // waits for its answer (an unlinked temporary file, 32 bytes a hash);
  // empty: $TMPDIR, else /tmp.
  std::string spool_dir;
  // Worker threads; reads are served concurrently by all of them.
  unsigned threads = 2;

  // Admin routes: uid 0 always; else callers whose primary or supplementary
  // groups include this gid. nullopt: root only.
  std::optional<gid_t> admin_gid;
  // Endpoint routes: also callers in this group (xet_endpoint.group).
  std::optional<gid_t> endpoint_gid;
};

// What a successful start returns: nothing more than that it started.
struct ServerStarted {};

}  // namespace dedupd::daemon::api::http
