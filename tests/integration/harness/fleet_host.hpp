// dedupd hosts of a fleet, for the fleet tests and benchmarks: the host
// (FleetHost), the benchmarks' kind of it, two hosts publishing, and the
// tests' fixture that cleans up after them.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "harness/daemon_process.hpp"
#include "harness/http_client.hpp"
#include "harness/make_shard.hpp"

namespace dedupd::itest {

// What write_config puts besides the dirs and the fleet's url and host.
struct FleetConfig {
  std::string lookup_timeout = "200ms";  // "": the daemon's own default, as a user runs it
  std::string fleet_extra;               // more lines of the fleet section, each "  key: value\n"
  std::string log_level = "debug";       // "": the daemon's own default
  std::string extra;                     // more top-level sections, whole lines
};

// One dedupd of a fleet: its own dir with a watched incoming/, socket, state
// and log, a YAML config with a fleet section, the process, and a client on
// its socket.
class FleetHost {
 public:
  std::string name;
  std::filesystem::path dir, incoming, socket, config, log;
  DaemonProcess process;
  std::unique_ptr<HttpClient> client;                                      // set by launch()
  std::string incoming_cas;                                                // the `cas:` of the incoming watch; "": none
  std::vector<std::pair<std::filesystem::path, std::string>> cas_watches;  // more watched dirs, each with its `cas:`
  std::chrono::seconds start_timeout{60};                                  // how long start() waits for /healthz
  std::vector<std::string> env;  // more of the process's environment ("NAME=value"), e.g. libfaketime's

  // Makes root/name/incoming; writes no config.
  FleetHost(const std::filesystem::path& root, std::string host_name);
  virtual ~FleetHost() = default;  // a test's own kind of host is kept as a FleetHost
  FleetHost(const FleetHost&) = delete;
  FleetHost& operator=(const FleetHost&) = delete;

  // url "": no fleet section (a dedupd without a fleet).
  void write_config(const std::string& url, const FleetConfig& c = {});
  // Starts the process on the config and opens the client; waits for nothing.
  void launch();
  // launch(), then fails the test unless /healthz answers before start_timeout.
  void start();

  HttpClient& http() { return *client; }
  nlohmann::json status() { return http().get("/v1/status").json(); }
  nlohmann::json fleet_link() { return status()["fleet"]; }
  std::uint64_t outbox_depth() { return fleet_link()["outbox"]["depth"].get<std::uint64_t>(); }
  std::string log_text() const;

  // A client-style shard of one xorb, three chunks, made from `seed` and
  // dropped in incoming/; kept in dropped() (any thread may drop).
  void drop(std::uint64_t seed);
  std::vector<MadeShard> dropped();

 private:
  std::mutex mu_;
  std::vector<MadeShard> dropped_;
};

// The benchmarks' host: dedupd as a user runs it (its own lookup_timeout and
// log level) on the fleet at `url` ("": no fleet), launched at construction
// and not waited for.
class LaunchedFleetHost : public FleetHost {
 public:
  LaunchedFleetHost(const std::filesystem::path& root, std::string host_name, const std::string& url);
};

// Two hosts publishing from a thread of its own: `a` drops first_seed, `b`
// first_seed + 1, then first_seed + 2 and + 3, ..., a pair every `every`,
// until stop() or the destructor (stopped and joined however a test ends).
class Publishers {
 public:
  Publishers(FleetHost& a, FleetHost& b, std::uint64_t first_seed, std::chrono::milliseconds every);
  ~Publishers() { stop(); }
  Publishers(const Publishers&) = delete;
  Publishers& operator=(const Publishers&) = delete;
  void stop();

 private:
  std::atomic<bool> on_{true};
  std::thread thread_;
};

// The fleet tests' fixture: a scratch root for the hosts ($TMPDIR/dedupd-
// <prefix>-XXXXXX); after each test every host is killed, its log printed
// when the test failed, and the root removed.
class FleetHostsTest : public ::testing::Test {
 protected:
  explicit FleetHostsTest(std::string prefix) : prefix_(std::move(prefix)) {}
  void SetUp() override;
  void TearDown() override;
  // Keeps `h` among the hosts; returns it.
  template <class H>
  H& keep(std::unique_ptr<H> h) {
    H& kept = *h;
    hosts.push_back(std::move(h));
    return kept;
  }

  std::filesystem::path root;
  std::vector<std::unique_ptr<FleetHost>> hosts;

 private:
  std::string prefix_;
};

}  // namespace dedupd::itest
