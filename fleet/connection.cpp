#include "fleet/connection.hpp"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <string>

#include "fleet/libpq_on_demand.hpp"

namespace dedupd::fleet::detail {
namespace {

using Clock = std::chrono::steady_clock;

const char* session_attrs(Role role) { return role == Role::primary ? "read-write" : "prefer-standby"; }

// The url first, expanded by libpq; what follows overrides what it says.
PGconn* start(const std::string& url, Role role, const std::string& connect_timeout_s, bool async) {
  const char* keys[] = {"dbname", "target_session_attrs", "application_name", "connect_timeout", nullptr};
  const char* values[] = {url.c_str(), session_attrs(role), "dedupd", connect_timeout_s.c_str(), nullptr};
  return async ? PQconnectStartParams(keys, values, 1) : PQconnectdbParams(keys, values, 1);
}

std::string trimmed(const char* message) {
  std::string s = message ? message : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// Waits for the socket until the deadline; false when it passed or
// `interrupt` became readable (interrupted then says which). The end is
// asked again each time a wait runs out: a patient deadline moves on while
// the server is seen answering (fleet/deadline.hpp).
bool wait_socket(PGconn* c, bool for_write, const Deadline& deadline, int interrupt, bool& interrupted) {
  int fd = PQsocket(c);
  if (fd < 0) return true;  // libpq reports the failure on the next call
  for (;;) {
    int timeout_ms = -1;
    const Clock::time_point end = deadline.end();
    if (end != Clock::time_point::max()) {
      auto left = std::chrono::ceil<std::chrono::milliseconds>(end - Clock::now()).count();
      if (left <= 0) return false;
      timeout_ms = int(std::min<long long>(left, 1 << 30));
    }
    pollfd p[2] = {{fd, short(for_write ? POLLOUT : POLLIN), 0}, {interrupt, POLLIN, 0}};
    int n = ::poll(p, interrupt >= 0 ? 2 : 1, timeout_ms);
    if (n > 0 && interrupt >= 0 && (p[1].revents & POLLIN)) {
      interrupted = true;
      return false;
    }
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return true;
  }
}

}  // namespace

std::uint64_t Rows::affected() const {
  const char* n = r_ ? PQcmdTuples(r_.get()) : "";
  return *n ? std::strtoull(n, nullptr, 10) : 0;
}

Result<std::unique_ptr<Connection>> Connection::open_until(const std::string& url, Role role,
                                                           Clock::time_point deadline, int interrupt) {
  auto left = std::chrono::duration_cast<std::chrono::seconds>(deadline - Clock::now()).count();
  PGconn* c = start(url, role, std::to_string(std::max<long long>(2, left + 1)), true);
  if (!c) {
    const char* unloaded = dedupd_libpq_load_error != nullptr ? dedupd_libpq_load_error() : nullptr;
    return make_error(kRuleConnect, unloaded ? std::string("cannot connect: ") + unloaded
                                             : std::string("out of memory starting a connection"));
  }
  std::unique_ptr<Connection> conn(new Connection(c, interrupt));
  if (PQstatus(c) == CONNECTION_BAD) return make_error(kRuleConnect, "cannot connect: " + trimmed(PQerrorMessage(c)));
  PostgresPollingStatusType st = PGRES_POLLING_WRITING;
  for (;;) {
    if (st == PGRES_POLLING_OK) break;
    if (st == PGRES_POLLING_FAILED)
      return make_error(kRuleConnect, "cannot connect to the fleet database: " + trimmed(PQerrorMessage(c)));
    if (!conn->wait(st == PGRES_POLLING_WRITING, deadline))
      return make_error(kRuleTimeout, conn->interrupted_
                                          ? "stopped while connecting to the fleet database"
                                          : "connecting to the fleet database took longer than the deadline");
    st = PQconnectPoll(c);
  }
  if (PQsetnonblocking(c, 1) != 0) return make_error(kRuleConnect, "cannot make the connection non-blocking");
  return conn;
}

Connection::~Connection() {
  if (c_) PQfinish(c_);
}

bool Connection::broken() const { return poisoned_ || !c_ || PQstatus(c_) != CONNECTION_OK; }

std::string Connection::server() const {
  if (!c_) return "";
  const char* host = PQhost(c_);
  const char* port = PQport(c_);
  return std::string(host ? host : "") + ":" + (port ? port : "");
}

bool Connection::wait(bool for_write, const Deadline& deadline) {
  return wait_socket(c_, for_write, deadline, interrupt_, interrupted_);
}

Error Connection::timed_out(const char* what) {
  // Closed at once: the server aborts the statement's transaction when it
  // next reads, and nothing can be read from a connection mid-answer.
  poisoned_ = true;
  PQfinish(c_);
  c_ = nullptr;
  return make_error(kRuleTimeout, interrupted_ ? "stopped while waiting for the fleet database" : what);
}

Error Connection::fail(const char* rule, std::string_view what, const PGresult* r) {
  const char* state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
  sqlstate_ = state ? state : "";
  std::string m = r ? trimmed(PQresultErrorMessage(r)) : "";
  if (m.empty()) m = trimmed(PQerrorMessage(c_));
  return make_error(rule, std::string(what) + ": " + m);
}

Clock::time_point Connection::statement_deadline() const {
  if (statement_timeout_.count() <= 0) return Clock::time_point::max();
  return Clock::now() + statement_timeout_;
}

Result<Rows> Connection::exec(const char* sql, const wire::Params& params) {
  return exec_until(sql, params, statement_deadline());
}

void Connection::rollback() {
  std::string keep = sqlstate_;
  (void)exec("ROLLBACK");
  sqlstate_ = std::move(keep);
}

Result<Ok> Connection::exec_script(const char* sql) {
  // The simple protocol runs every statement of the script; the first error
  // stops it.
  if (!PQsendQuery(c_, sql)) return fail(kRuleConnect, "cannot send the script", nullptr);
  auto r = finish_until(statement_deadline());
  if (!r) return r.error();
  return Ok{};
}

Result<Rows> Connection::exec_until(const char* sql, const wire::Params& params, const Deadline& deadline) {
  std::vector<const char*> values;
  std::vector<int> lengths, formats;
  std::vector<unsigned> types;
  params.materialize(values, lengths, formats, types);
  if (!PQsendQueryParams(c_, sql, params.count(), types.data(), values.data(), lengths.data(), formats.data(), 1))
    return fail(kRuleConnect, "cannot send the statement", nullptr);
  return finish_until(deadline);
}

Result<Ok> Connection::prepare_until(const char* name, const char* sql, int n_params, const Deadline& deadline) {
  if (!PQsendPrepare(c_, name, sql, n_params, nullptr)) return fail(kRuleConnect, "cannot send the statement", nullptr);
  auto r = finish_until(deadline);
  if (!r) return r.error();
  return Ok{};
}

Result<Rows> Connection::exec_prepared_until(const char* name, const wire::Params& params, const Deadline& deadline) {
  std::vector<const char*> values;
  std::vector<int> lengths, formats;
  std::vector<unsigned> types;
  params.materialize(values, lengths, formats, types);
  if (!PQsendQueryPrepared(c_, name, params.count(), values.data(), lengths.data(), formats.data(), 1))
    return fail(kRuleConnect, "cannot send the statement", nullptr);
  return finish_until(deadline);
}

Result<Rows> Connection::finish_until(const Deadline& deadline) {
  // Send everything, then read until libpq has the whole answer.
  for (;;) {
    int f = PQflush(c_);
    if (f < 0) return fail(kRuleConnect, "cannot send the statement", nullptr);
    if (f == 0) break;
    if (!wait(true, deadline)) return timed_out("the fleet database did not answer in time");
    if (!PQconsumeInput(c_)) return fail(kRuleConnect, "lost the connection", nullptr);
  }
  Rows keep;
  bool failed = false;
  Error error = make_error(kRuleQuery, "");
  for (;;) {
    while (PQisBusy(c_)) {
      if (!wait(false, deadline)) return timed_out("the fleet database did not answer in time");
      if (!PQconsumeInput(c_)) return fail(kRuleConnect, "lost the connection", nullptr);
    }
    PGresult* r = PQgetResult(c_);
    if (!r) break;
    auto st = PQresultStatus(r);
    if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK) {
      keep = Rows(r);
    } else {
      if (!failed) error = fail(kRuleQuery, "statement failed", r);
      failed = true;
      PQclear(r);
    }
  }
  if (failed) return error;
  sqlstate_.clear();
  return keep;
}

Result<Ok> Connection::copy_in(const char* copy_sql, std::span<const std::uint8_t> body) {
  const Deadline deadline = statement_deadline();
  if (!PQsendQuery(c_, copy_sql)) return fail(kRuleConnect, "cannot send COPY", nullptr);
  for (;;) {  // wait for the server to enter COPY IN
    while (PQisBusy(c_)) {
      if (!wait(false, deadline)) return timed_out("the fleet database did not answer in time");
      if (!PQconsumeInput(c_)) return fail(kRuleConnect, "lost the connection", nullptr);
    }
    PGresult* r = PQgetResult(c_);
    Rows keep(r);
    if (r && PQresultStatus(r) == PGRES_COPY_IN) break;
    Error e = fail(kRuleQuery, "COPY did not start", r);
    while (PGresult* rest = PQgetResult(c_)) PQclear(rest);
    return e;
  }
  // Non-blocking: libpq takes what fits, 0 means wait until the socket drains.
  constexpr std::size_t kPiece = 1 << 18;
  std::size_t off = 0;
  while (off < body.size()) {
    std::size_t n = std::min(kPiece, body.size() - off);
    int put = PQputCopyData(c_, reinterpret_cast<const char*>(body.data() + off), int(n));
    if (put < 0) return fail(kRuleConnect, "COPY data not sent", nullptr);
    if (put == 1) {
      off += n;
      continue;
    }
    if (!wait(true, deadline)) return timed_out("the fleet database did not take COPY data in time");
    if (!PQconsumeInput(c_)) return fail(kRuleConnect, "lost the connection", nullptr);
  }
  for (;;) {
    int end = PQputCopyEnd(c_, nullptr);
    if (end < 0) return fail(kRuleConnect, "COPY end not sent", nullptr);
    if (end == 1) break;
    if (!wait(true, deadline)) return timed_out("the fleet database did not take COPY data in time");
  }
  auto r = finish_until(deadline);
  if (!r) return r.error();
  return Ok{};
}

}  // namespace dedupd::fleet::detail
