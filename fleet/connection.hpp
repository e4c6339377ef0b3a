// One non-blocking libpq connection. Every statement is bounded: a lookup
// by its caller's deadline, a write by the connection's statement timeout.
// It polls on the socket, and past the deadline the caller drops the
// connection instead of reading the rest (PQcancel would block on a stopped
// server: PostgreSQL 15's libpq has no non-blocking cancel).
#pragma once

#include <libpq-fe.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fleet/deadline.hpp"
#include "fleet/errors.hpp"
#include "fleet/wire.hpp"
#include "shard/hash.hpp"

namespace dedupd::fleet::detail {

struct PgResultFree {
  void operator()(PGresult* r) const { PQclear(r); }
};

// A finished statement's rows, binary format (see wire.hpp). A cell of the
// wrong length (NULL, or a schema not ours) reads as 0 / false / the zero
// hash, never past its bytes: the schema's CHECKs keep that from happening.
class Rows {
 public:
  Rows() = default;
  explicit Rows(PGresult* r) : r_(r) {}
  int size() const { return r_ ? PQntuples(r_.get()) : 0; }
  bool null(int row, int col) const { return PQgetisnull(r_.get(), row, col); }
  std::int64_t int8(int row, int col) const { return sized(row, col, 8) ? wire::load_be64(cell(row, col)) : 0; }
  std::int32_t int4(int row, int col) const {
    return sized(row, col, 4) ? std::int32_t(wire::load_be32(cell(row, col))) : 0;
  }
  bool boolean(int row, int col) const { return sized(row, col, 1) && cell(row, col)[0] != 0; }
  shard::Hash hash(int row, int col) const {
    return sized(row, col, 32) ? shard::Hash::from_bytes(bytes(row, col)) : shard::Hash{};
  }
  std::span<const std::uint8_t> bytes(int row, int col) const {
    return {cell(row, col), std::size_t(PQgetlength(r_.get(), row, col))};
  }
  std::string_view text(int row, int col) const {
    return {reinterpret_cast<const char*>(cell(row, col)), std::size_t(PQgetlength(r_.get(), row, col))};
  }
  // Rows affected by an INSERT/UPDATE/DELETE.
  std::uint64_t affected() const;

 private:
  bool sized(int row, int col, int n) const { return PQgetlength(r_.get(), row, col) == n; }
  const std::uint8_t* cell(int row, int col) const {
    return reinterpret_cast<const std::uint8_t*>(PQgetvalue(r_.get(), row, col));
  }
  std::unique_ptr<PGresult, PgResultFree> r_;
};

enum class Role : std::uint8_t { primary, prefer_standby };

class Connection {
 public:
  // Non-blocking connect polled until the deadline (the reader).
  // `interrupt`: a descriptor that, once readable, ends every wait of this
  // connection at once, as a deadline would (-1: none): its owner's stop, so
  // that a stalled server or a lock costs a stop nothing.
  static Result<std::unique_ptr<Connection>> open_until(const std::string& url, Role role,
                                                        std::chrono::steady_clock::time_point deadline,
                                                        int interrupt = -1);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Lost, or left mid-statement by a timeout: make a new one.
  bool broken() const;
  // "host:port" of the server this connection reached: with several hosts
  // in the url, the one libpq settled on.
  std::string server() const;
  // Bounds every exec, exec_script and copy_in (0: unbounded). On
  // fleet.timeout the connection is left mid-statement: drop it.
  void set_statement_timeout(std::chrono::milliseconds t) { statement_timeout_ = t; }
  Result<Rows> exec(const char* sql, const wire::Params& params = {});
  // Simple-protocol script (several statements, no parameters).
  Result<Ok> exec_script(const char* sql);
  // Statement bounded by the deadline (with its patience, while the server
  // answers). On fleet.timeout the connection is left mid-statement: the
  // caller must drop it.
  Result<Rows> exec_until(const char* sql, const wire::Params& params, const Deadline& deadline);
  // Prepares a named statement, bounded by the deadline.
  Result<Ok> prepare_until(const char* name, const char* sql, int n_params, const Deadline& deadline);
  // Runs a prepared statement, bounded by the deadline (as exec_until).
  Result<Rows> exec_prepared_until(const char* name, const wire::Params& params, const Deadline& deadline);
  // COPY ... FROM STDIN (FORMAT binary) of a body built by wire::CopyBody.
  Result<Ok> copy_in(const char* copy_sql, std::span<const std::uint8_t> body);
  // ROLLBACK, keeping last_sqlstate() of the statement that failed.
  void rollback();
  // The SQLSTATE of the last failed statement ("" if none).
  const std::string& last_sqlstate() const { return sqlstate_; }

 private:
  Connection(PGconn* c, int interrupt) : c_(c), interrupt_(interrupt) {}
  Error fail(const char* rule, std::string_view what, const PGresult* r);
  // Marks the connection unusable (mid-statement) and names the timeout, or
  // the interruption that came first.
  Error timed_out(const char* what);
  // Waits for the socket until the deadline; false when it passed or the
  // owner interrupted.
  bool wait(bool for_write, const Deadline& deadline);
  // Sends what libpq holds and reads every result of the statement sent.
  Result<Rows> finish_until(const Deadline& deadline);
  std::chrono::steady_clock::time_point statement_deadline() const;
  PGconn* c_;
  std::string sqlstate_;
  std::chrono::milliseconds statement_timeout_{0};
  int interrupt_ = -1;
  bool interrupted_ = false;
  bool poisoned_ = false;
};

}  // namespace dedupd::fleet::detail
