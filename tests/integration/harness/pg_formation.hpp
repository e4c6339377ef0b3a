// A pg_auto_failover formation started by tests/fleet/pg_formation (a
// monitor and two data nodes, node1 the first primary) for the failover
// tests and benchmark; stopped and deleted with this object, or by the
// script's reaper should the process die without its destructors.
#pragma once

#include <string>

namespace dedupd::itest {

class PgFormation {
 public:
  PgFormation();  // throws std::runtime_error with the script's output when it cannot start
  ~PgFormation();
  PgFormation(const PgFormation&) = delete;
  PgFormation& operator=(const PgFormation&) = delete;

  // What an operator puts in fleet.url: the monitor's uri, with a user.
  std::string url() const;
  std::string port(const std::string& node) const;
  // One node only, for checks: "node1", "node2".
  std::string node_url(const std::string& node) const;
  std::string server(const std::string& node) const { return "127.0.0.1:" + port(node); }
  // Each returns "" when it worked, else the script's output.
  std::string kill(const std::string& node);  // kill -9 of its pg_autoctl and PostgreSQL
  std::string run(const std::string& node);   // its pg_autoctl again: a rejoin
  std::string wait_settled();                 // a primary and a secondary, as both report
  // The node the monitor has as primary ("" while none is).
  std::string primary() const;

 private:
  std::string script(const std::string& cmd, const std::string& node = "") const;
  std::string pointer_, dir_;
};

}  // namespace dedupd::itest
