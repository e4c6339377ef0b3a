#include "fleet/connection.hpp"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

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

// Waits for the socket until the deadline; false when it passed.
bool wait_socket(PGconn* c, bool for_write, Clock::time_point deadline) {
  int fd = PQsocket(c);
  if (fd < 0) return true;  // libpq reports the failure on the next call
  for (;;) {
    int timeout_ms = -1;
    if (deadline != Clock::time_point::max()) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) return false;
      timeout_ms = int(std::min<long long>(left + 1, 1 << 30));
    }
    pollfd p{fd, short(for_write ? POLLOUT : POLLIN), 0};
    int n = ::poll(&p, 1, timeout_ms);
    if (n > 0) return true;
    if (n == 0) return false;
    if (errno != EINTR) return true;
  }
}

}  // namespace

std::uint64_t Rows::affected() const {
  const char* n = r_ ? PQcmdTuples(r_.get()) : "";
  return *n ? std::strtoull(n, nullptr, 10) : 0;
}

Result<std::unique_ptr<Connection>> Connection::open(const std::string& url, Role role,
                                                     std::chrono::milliseconds connect_timeout) {
  // libpq takes whole seconds and treats 1 as 2.
  auto seconds = std::max<long long>(2, (connect_timeout.count() + 999) / 1000);
  PGconn* c = start(url, role, std::to_string(seconds), false);
  if (!c) return make_error(kRuleConnect, "out of memory starting a connection");
  if (PQstatus(c) != CONNECTION_OK) {
    std::string m = trimmed(PQerrorMessage(c));
    PQfinish(c);
    return make_error(kRuleConnect, "cannot connect to the fleet database: " + m);
  }
  return std::unique_ptr<Connection>(new Connection(c));
}

Result<std::unique_ptr<Connection>> Connection::open_until(const std::string& url, Role role,
                                                           Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::seconds>(deadline - Clock::now()).count();
  PGconn* c = start(url, role, std::to_string(std::max<long long>(2, left + 1)), true);
  if (!c) return make_error(kRuleConnect, "out of memory starting a connection");
  std::unique_ptr<Connection> conn(new Connection(c));
  if (PQstatus(c) == CONNECTION_BAD) return make_error(kRuleConnect, "cannot connect: " + trimmed(PQerrorMessage(c)));
  PostgresPollingStatusType st = PGRES_POLLING_WRITING;
  for (;;) {
    if (st == PGRES_POLLING_OK) break;
    if (st == PGRES_POLLING_FAILED)
      return make_error(kRuleConnect, "cannot connect to the fleet database: " + trimmed(PQerrorMessage(c)));
    if (!wait_socket(c, st == PGRES_POLLING_WRITING, deadline))
      return make_error(kRuleTimeout, "connecting to the fleet database took longer than the deadline");
    st = PQconnectPoll(c);
  }
  if (PQsetnonblocking(c, 1) != 0) return make_error(kRuleConnect, "cannot make the connection non-blocking");
  return conn;
}

Connection::~Connection() { PQfinish(c_); }

bool Connection::broken() const { return PQstatus(c_) != CONNECTION_OK; }

Error Connection::fail(const char* rule, std::string_view what, const PGresult* r) {
  const char* state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
  sqlstate_ = state ? state : "";
  std::string m = r ? trimmed(PQresultErrorMessage(r)) : "";
  if (m.empty()) m = trimmed(PQerrorMessage(c_));
  return make_error(rule, std::string(what) + ": " + m);
}

Result<Rows> Connection::exec(const char* sql, const wire::Params& params) {
  std::vector<const char*> values;
  std::vector<int> lengths, formats;
  std::vector<unsigned> types;
  params.materialize(values, lengths, formats, types);
  PGresult* r = PQexecParams(c_, sql, params.count(), types.data(), values.data(), lengths.data(), formats.data(), 1);
  Rows rows(r);
  auto st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) return fail(kRuleQuery, "statement failed", r);
  sqlstate_.clear();
  return rows;
}

Result<Ok> Connection::exec_script(const char* sql) {
  // PQexec runs every statement of the script and returns the last result;
  // the first error stops it and is that result.
  PGresult* r = PQexec(c_, sql);
  Rows keep(r);
  auto st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) return fail(kRuleQuery, "script failed", r);
  sqlstate_.clear();
  return Ok{};
}

Result<Rows> Connection::exec_until(const char* sql, const wire::Params& params, Clock::time_point deadline) {
  std::vector<const char*> values;
  std::vector<int> lengths, formats;
  std::vector<unsigned> types;
  params.materialize(values, lengths, formats, types);
  if (!PQsendQueryParams(c_, sql, params.count(), types.data(), values.data(), lengths.data(), formats.data(), 1))
    return fail(kRuleConnect, "cannot send the statement", nullptr);
  // Send everything, then read until libpq has the whole answer.
  for (;;) {
    int f = PQflush(c_);
    if (f < 0) return fail(kRuleConnect, "cannot send the statement", nullptr);
    if (f == 0) break;
    if (!wait_socket(c_, true, deadline)) return make_error(kRuleTimeout, "the fleet database did not answer in time");
    if (!PQconsumeInput(c_)) return fail(kRuleConnect, "lost the connection", nullptr);
  }
  Rows keep;
  bool failed = false;
  Error error = make_error(kRuleQuery, "");
  for (;;) {
    while (PQisBusy(c_)) {
      if (!wait_socket(c_, false, deadline))
        return make_error(kRuleTimeout, "the fleet database did not answer in time");
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
  {
    PGresult* r = PQexec(c_, copy_sql);
    Rows keep(r);
    if (!r || PQresultStatus(r) != PGRES_COPY_IN) return fail(kRuleQuery, "COPY did not start", r);
  }
  // Blocking connection: PQputCopyData returns once libpq has the bytes.
  constexpr std::size_t kPiece = 1 << 20;
  for (std::size_t off = 0; off < body.size(); off += kPiece) {
    std::size_t n = std::min(kPiece, body.size() - off);
    if (PQputCopyData(c_, reinterpret_cast<const char*>(body.data() + off), int(n)) != 1)
      return fail(kRuleConnect, "COPY data not sent", nullptr);
  }
  if (PQputCopyEnd(c_, nullptr) != 1) return fail(kRuleConnect, "COPY end not sent", nullptr);
  bool failed = false;
  Error error = make_error(kRuleQuery, "");
  while (PGresult* r = PQgetResult(c_)) {
    Rows keep(r);
    if (PQresultStatus(r) != PGRES_COMMAND_OK && !failed) {
      error = fail(kRuleQuery, "COPY failed", r);
      failed = true;
    }
  }
  if (failed) return error;
  sqlstate_.clear();
  return Ok{};
}

}  // namespace dedupd::fleet::detail
