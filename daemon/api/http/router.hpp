// The routing table: paths (exact, or a prefix followed by one parameter)
// mapped to per-method handlers. A path that matches with the wrong method
// is a 405 with an Allow header; no match at all is a 404.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "daemon/api/http/context.hpp"
#include "daemon/api/http/http.hpp"

namespace dedupd::daemon::api::http {

using Handler = Response (*)(Context&, Request&);

// Admin handlers need the SO_PEERCRED check and run off the HTTP threads.
// Endpoint handlers (what the local Xet endpoint teaches) need it too: an
// admin, dedupd's own user, or the endpoint's group; they run in place.
enum class Access { read, admin, endpoint };

// What request body a handler takes, which picks its size limit: a route
// gets room for what it legitimately reads, so a client cannot make the
// server buffer an upload's worth of bytes for a lookup.
enum class Body {
  none,    // ignored; a stray few bytes are tolerated
  upload,  // a shard or bundle (ServerOptions::max_body_bytes)
  hashes,  // a hash batch of any size, parsed as it arrives (HashSpool)
};

// Whether a read handler may wait: on the fleet database (up to its bound),
// run off the HTTP threads when a fleet is configured; or on work of its
// own that may take seconds (a dry run of the Xet cache steward), always
// run off them (job_queue.hpp).
// Or on a storage on the internet (a fill of the Xet endpoint's download
// cache), on job threads of their own.
enum class Wait { none, fleet, work, storage };

struct MethodEntry {
  std::string_view method;
  Handler handler;
  Access access = Access::read;
  Body body = Body::none;
  Wait wait = Wait::none;
};

struct Route {
  std::string_view name;  // metric label
  std::string_view path;
  bool prefix = false;  // path + "<param>"
  std::vector<MethodEntry> methods;
  std::size_t id = 0;  // position in the table, set by Router
};

struct Match {
  const Route* route = nullptr;        // nullptr: no such path (404)
  const MethodEntry* entry = nullptr;  // nullptr with a route: 405
  std::string_view tail;               // the parameter of a prefix route
};

class Router {
 public:
  explicit Router(std::vector<Route> routes);

  // HEAD is served by the GET handler (the server drops the body).
  Match match(std::string_view path, std::string_view method) const;
  // "GET, DELETE" for the Allow header of a 405.
  static std::string allow(const Route& route);
  const std::vector<Route>& routes() const { return routes_; }

 private:
  std::vector<Route> routes_;
  std::unordered_map<std::string_view, std::size_t> exact_;
  std::vector<std::size_t> prefixes_;  // longest first
};

}  // namespace dedupd::daemon::api::http
