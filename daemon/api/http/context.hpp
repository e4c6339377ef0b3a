// What every route handler gets: the daemon behind the seam (status and
// admin), what lookups are answered from (daemon/answers/), and the metrics
// registry. One per server, shared by all threads (everything in it is
// thread-safe).
#pragma once

#include "daemon/answers/sources.hpp"
#include "daemon/api/service.hpp"

namespace dedupd::daemon::api::http {

class Metrics;

struct Context {
  api::Service& service;
  answers::Sources& answers;  // service.answers()
  Metrics& metrics;
};

}  // namespace dedupd::daemon::api::http
