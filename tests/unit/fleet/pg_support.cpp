#include "tests/unit/fleet/pg_support.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>
#include <utility>

#include "tests/support/text_file.hpp"

namespace dedupd::fleet::test {
using tests::file_value;

namespace {

void run_script(const std::string& cmd, const std::string& pointer, const std::string& extra = "") {
  std::string line = std::string(DEDUPD_PG_CLUSTER) + " " + cmd + " '" + pointer + "'" + extra;
  if (std::system(line.c_str()) != 0) {
    ADD_FAILURE() << "failed: " << line;
    std::abort();
  }
}

std::string url_for(const std::string& dir, const std::string& port_file, const std::string& db) {
  return "host=" + dir + "/sock port=" + file_value(dir + "/" + port_file) + " dbname=" + db + " user=fleet_admin";
}

// The shared cluster's databases this process made, dropped when it exits.
// Each test runs in a process of its own (gtest_discover_tests); left behind,
// the 70 databases of a run were 1.8 GB and 51,000 files on the two nodes,
// and the fixture's cleanup (rm -rf) outran ctest's 120 s on a loaded CI
// machine.
class DatabasesToDrop {
 public:
  void add(std::string admin_url, std::string name) { made_.emplace_back(std::move(admin_url), std::move(name)); }
  ~DatabasesToDrop() {
    for (const auto& [url, name] : made_) {
      PGconn* c = PQconnectdb(url.c_str());
      // FORCE: a connection the test leaked must not keep its database.
      PGresult* r = PQstatus(c) == CONNECTION_OK
                        ? PQexec(c, ("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)").c_str())
                        : nullptr;
      if (PQresultStatus(r) != PGRES_COMMAND_OK)
        std::cerr << "could not drop database " << name << ": " << PQerrorMessage(c);
      PQclear(r);
      PQfinish(c);
    }
  }

 private:
  std::vector<std::pair<std::string, std::string>> made_;
};

DatabasesToDrop& databases_to_drop() {
  static DatabasesToDrop made;
  return made;
}

}  // namespace

Cluster::Cluster(std::string pointer, bool own) : pointer_(std::move(pointer)), dir_(file_value(pointer_)), own_(own) {}

Cluster::Cluster(Cluster&& o) noexcept : pointer_(std::move(o.pointer_)), dir_(std::move(o.dir_)), own_(o.own_) {
  o.own_ = false;
}

Cluster::~Cluster() {
  if (own_) {
    std::string line = std::string(DEDUPD_PG_CLUSTER) + " stop '" + pointer_ + "'";
    if (std::system(line.c_str()) != 0) ADD_FAILURE() << "failed: " << line;
  }
}

Cluster& Cluster::shared() {
  const char* pointer = std::getenv("DEDUPD_FLEET_PG");
  if (!pointer) {
    ADD_FAILURE() << "DEDUPD_FLEET_PG is not set: run the fleet tests through ctest (fixture fleet_pg)";
    std::abort();
  }
  static Cluster c(pointer, false);
  return c;
}

Cluster Cluster::start_own() {
  char tmpl[] = "/tmp/dedupd-fleet-pointer-XXXXXX";
  int fd = ::mkstemp(tmpl);
  if (fd < 0) std::abort();
  ::close(fd);
  // This process owns it: should it die without its destructors, the
  // script's reaper stops the cluster.
  run_script("start", tmpl, " " + std::to_string(::getpid()));
  return Cluster(tmpl, true);
}

void Cluster::add_standby() { run_script("standby", pointer_); }
void Cluster::promote() { run_script("promote", pointer_); }
void Cluster::stop_primary() { run_script("stop-primary", pointer_); }
void Cluster::start_primary() const { run_script("start-primary", pointer_); }

std::string Cluster::primary_url(const std::string& db) const { return url_for(dir_, "primary.port", db); }
std::string Cluster::standby_url(const std::string& db) const { return url_for(dir_, "standby.port", db); }
std::string Cluster::both_url(const std::string& db) const {
  return "host=" + dir_ + "/sock," + dir_ + "/sock port=" + file_value(dir_ + "/primary.port") + "," +
         file_value(dir_ + "/standby.port") + " dbname=" + db + " user=fleet_admin";
}

std::string Cluster::new_database() const {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = "t_" + std::string(info->test_suite_name()) + "_" + info->name();
  for (char& ch : name) ch = std::isalnum(static_cast<unsigned char>(ch)) ? char(std::tolower(ch)) : '_';
  name.resize(std::min<std::size_t>(name.size(), 63));  // PostgreSQL's identifier limit
  Admin admin(primary_url("postgres"));
  admin.try_exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
  EXPECT_EQ(admin.try_exec("CREATE DATABASE " + name), "");
  // A cluster of the test's own is deleted whole with its databases.
  if (!own_) databases_to_drop().add(primary_url("postgres"), name);
  return name;
}

std::string load_fleet_v2(const std::string& url) {
  std::string dir = std::string(DEDUPD_FIXTURE_DIR) + "/fleet-v2";
  const std::string line = "psql -q -X -v ON_ERROR_STOP=1 -d '" + url + "' -f '" + dir + "/fleet.sql' >/dev/null";
  if (std::system(line.c_str()) != 0) {
    ADD_FAILURE() << "failed: " << line;
    return "";
  }
  return dir;
}

void Cluster::wait_standby_caught_up() const {
  Admin primary(primary_url("postgres"));
  std::string lsn = primary.one("SELECT pg_current_wal_lsn()");
  Admin standby(standby_url("postgres"));
  // Replay progress decides; the bound only stops a broken standby hanging the test.
  for (int i = 0; i < 6000; ++i) {
    if (standby.one("SELECT pg_last_wal_replay_lsn() >= '" + lsn + "'::pg_lsn") == "t") return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ADD_FAILURE() << "the standby did not replay " << lsn;
}

std::vector<int> Cluster::primary_pids() const {
  std::vector<int> pids;
  int postmaster = std::atoi(file_value(dir_ + "/primary/postmaster.pid").c_str());
  if (postmaster <= 0) return pids;
  pids.push_back(postmaster);
  std::string children =
      file_value("/proc/" + std::to_string(postmaster) + "/task/" + std::to_string(postmaster) + "/children");
  std::istringstream in(children);
  for (int pid; in >> pid;) pids.push_back(pid);
  return pids;
}

std::vector<int> Cluster::sigstop_primary() const {
  std::vector<int> pids = primary_pids();
  if (pids.empty()) return pids;
  ::kill(pids[0], SIGSTOP);
  pids = primary_pids();  // listed again: the stopped postmaster forks no more
  for (std::size_t i = 1; i < pids.size(); ++i) ::kill(pids[i], SIGSTOP);
  return pids;
}

Admin::Admin(const std::string& url) : c_(PQconnectdb(url.c_str())) {
  if (PQstatus(c_) != CONNECTION_OK) ADD_FAILURE() << "admin connection: " << PQerrorMessage(c_);
}
Admin::~Admin() { PQfinish(c_); }

std::string Admin::one(const std::string& sql) {
  PGresult* r = PQexec(c_, sql.c_str());
  std::string out;
  auto st = PQresultStatus(r);
  if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) ADD_FAILURE() << sql << ": " << PQresultErrorMessage(r);
  else if (st == PGRES_TUPLES_OK && PQntuples(r) > 0 && !PQgetisnull(r, 0, 0)) out = PQgetvalue(r, 0, 0);
  PQclear(r);
  return out;
}

std::string Admin::try_exec(const std::string& sql) {
  PGresult* r = PQexec(c_, sql.c_str());
  auto st = PQresultStatus(r);
  std::string out = (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK) ? "" : PQresultErrorMessage(r);
  PQclear(r);
  return out;
}

std::set<std::string> fleet_holds(Admin& admin) {
  if (admin.one("SELECT to_regclass('dedupd.hold') IS NOT NULL") != "t") return {};
  std::string all = admin.one(
      "SELECT string_agg(o.name || ':' || encode(s.hash, 'hex'), ',') FROM dedupd.hold h JOIN dedupd.host o ON "
      "o.id = h.host_id JOIN dedupd.shard s ON s.id = h.shard_id");
  std::set<std::string> out;
  std::stringstream in(all);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.insert(item);
  return out;
}

}  // namespace dedupd::fleet::test
