// What every route handler gets: the daemon behind the seam, the metrics
// registry, and the reply settings. One per server, shared by all threads
// (everything in it is thread-safe).
#pragma once

#include "daemon/api/service.hpp"

namespace dedupd::daemon::http {

class Metrics;

struct Context {
  Service& service;
  Metrics& metrics;
};

}  // namespace dedupd::daemon::http
