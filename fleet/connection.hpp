// One libpq connection with the two ways dedupd talks to PostgreSQL: a
// blocking statement (the publisher's own thread may wait) and a statement
// bounded by a deadline (a lookup: poll on the socket, and past the deadline
// the caller drops the connection instead of reading the rest).
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

#include "fleet/errors.hpp"
#include "fleet/wire.hpp"

namespace dedupd::fleet::detail {

struct PgResultFree {
  void operator()(PGresult* r) const { PQclear(r); }
};

// A finished statement's rows, binary format (see wire.hpp).
class Rows {
 public:
  Rows() = default;
  explicit Rows(PGresult* r) : r_(r) {}
  int size() const { return r_ ? PQntuples(r_.get()) : 0; }
  bool null(int row, int col) const { return PQgetisnull(r_.get(), row, col); }
  std::int64_t int8(int row, int col) const { return wire::load_be64(cell(row, col)); }
  std::int32_t int4(int row, int col) const { return std::int32_t(wire::load_be32(cell(row, col))); }
  bool boolean(int row, int col) const { return cell(row, col)[0] != 0; }
  std::span<const std::uint8_t> bytes(int row, int col) const {
    return {cell(row, col), std::size_t(PQgetlength(r_.get(), row, col))};
  }
  std::string_view text(int row, int col) const {
    return {reinterpret_cast<const char*>(cell(row, col)), std::size_t(PQgetlength(r_.get(), row, col))};
  }
  // Rows affected by an INSERT/UPDATE/DELETE.
  std::uint64_t affected() const;

 private:
  const std::uint8_t* cell(int row, int col) const {
    return reinterpret_cast<const std::uint8_t*>(PQgetvalue(r_.get(), row, col));
  }
  std::unique_ptr<PGresult, PgResultFree> r_;
};

enum class Role : std::uint8_t { primary, prefer_standby };

class Connection {
 public:
  // Blocking connect (the writer): libpq's connect_timeout bounds each host.
  static Result<std::unique_ptr<Connection>> open(const std::string& url, Role role,
                                                  std::chrono::milliseconds connect_timeout);
  // Non-blocking connect polled until the deadline (the reader).
  static Result<std::unique_ptr<Connection>> open_until(const std::string& url, Role role,
                                                        std::chrono::steady_clock::time_point deadline);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  bool broken() const;
  // Blocking statement.
  Result<Rows> exec(const char* sql, const wire::Params& params = {});
  // Simple-protocol script (several statements, no parameters).
  Result<Ok> exec_script(const char* sql);
  // Statement bounded by the deadline. On fleet.timeout the connection is
  // left mid-statement: the caller must drop it.
  Result<Rows> exec_until(const char* sql, const wire::Params& params, std::chrono::steady_clock::time_point deadline);
  // COPY ... FROM STDIN (FORMAT binary) of a body built by wire::CopyBody.
  Result<Ok> copy_in(const char* copy_sql, std::span<const std::uint8_t> body);
  // The SQLSTATE of the last failed statement ("" if none).
  const std::string& last_sqlstate() const { return sqlstate_; }

 private:
  explicit Connection(PGconn* c) : c_(c) {}
  Error fail(const char* rule, std::string_view what, const PGresult* r);
  PGconn* c_;
  std::string sqlstate_;
};

}  // namespace dedupd::fleet::detail
