// The fleet tests' view of the throwaway PostgreSQL that tests/fleet/pg_cluster
// started (the ctest fixture) or that a test starts for itself: its urls,
// a database per test, an admin connection for checks, and the server
// processes (to stop them).
#pragma once

#include <libpq-fe.h>

#include <set>
#include <string>
#include <vector>

namespace dedupd::fleet::test {

// A cluster started by pg_cluster; `own` ones are started here and stopped
// (deleted) by the destructor.
class Cluster {
 public:
  // The fixture's cluster (DEDUPD_FLEET_PG names its pointer file).
  static Cluster& shared();
  // A private cluster for tests that stop or promote servers.
  static Cluster start_own();
  Cluster(Cluster&&) noexcept;
  ~Cluster();

  void add_standby();
  void promote();
  void stop_primary();
  // Starts a primary stop_primary() stopped, on its port; returns once it
  // takes connections.
  void start_primary() const;

  std::string dir() const { return dir_; }
  std::string primary_url(const std::string& db) const;
  std::string standby_url(const std::string& db) const;
  // Both hosts, primary first, as an operator lists them for failover.
  std::string both_url(const std::string& db) const;
  // A new empty database named after the running test.
  std::string new_database() const;
  // Blocks until the standby has replayed everything the primary wrote.
  void wait_standby_caught_up() const;
  // Postmaster and every child of the primary.
  std::vector<int> primary_pids() const;
  // SIGSTOPs the primary: the postmaster first, then every child it has
  // once it can fork no more (a connection being made while the children
  // were listed would otherwise get a backend that runs on). Returns the
  // pids stopped, for SIGCONT.
  std::vector<int> sigstop_primary() const;

 private:
  Cluster(std::string pointer, bool own);
  std::string pointer_;
  std::string dir_;
  bool own_ = false;
};

// A superuser connection for setting up and checking.
class Admin {
 public:
  explicit Admin(const std::string& url);
  ~Admin();
  // First column of the first row as text ("" for none/NULL); fails the test on error.
  std::string one(const std::string& sql);
  // Runs and returns the error message ("" when it worked).
  std::string try_exec(const std::string& sql);

 private:
  PGconn* c_;
};

// Loads tests/fixtures/fleet-v2 (a schema-2 fleet database as c91351c
// wrote it) into the empty database at `url`; returns the fixture's
// directory (its answers.txt), or "" (and a failure) when psql failed.
std::string load_fleet_v2(const std::string& url);

// Every hold of the fleet as "host:shard hash" (byte hex), sorted; none
// before the first publisher has made the schema (a busy machine may ask
// first).
std::set<std::string> fleet_holds(Admin& admin);

}  // namespace dedupd::fleet::test
