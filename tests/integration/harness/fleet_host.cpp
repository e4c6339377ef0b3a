#include "harness/fleet_host.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <system_error>

#include "harness/eventually.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/text_file.hpp"

namespace dedupd::itest {
using tests::file_text;

FleetHost::FleetHost(const std::filesystem::path& root, std::string host_name) : name(std::move(host_name)) {
  dir = root / name;
  incoming = dir / "incoming";
  std::filesystem::create_directories(incoming);
  socket = dir / "dedupd.sock";
  config = dir / "dedupd.yaml";
  log = dir / "dedupd.log";
}

void FleetHost::write_config(const std::string& url, const FleetConfig& c) {
  std::ofstream f(config);
  f << "state_dir: " << (dir / "state").string() << "\nsocket: " << socket.string() << "\nwatch:\n";
  if (incoming_cas.empty()) f << "  - " << incoming.string() << "\n";
  else f << "  - path: " << incoming.string() << "\n    cas: " << incoming_cas << "\n";
  for (const auto& [path, cas] : cas_watches) f << "  - path: " << path.string() << "\n    cas: " << cas << "\n";
  if (!c.log_level.empty()) f << "log_level: " << c.log_level << "\n";
  f << c.extra;
  if (url.empty()) return;
  f << "fleet:\n  url: \"" << url << "\"\n  host: " << name << "\n";
  if (!c.lookup_timeout.empty()) f << "  lookup_timeout: " << c.lookup_timeout << "\n";
  f << c.fleet_extra;
}

void FleetHost::launch() {
  LaunchOptions o;
  o.args = {"--config", config.string()};
  o.env = env;
  o.log_file = log;
  o.work_dir = dir;
  process.start(o);
  client = std::make_unique<HttpClient>(socket.string());
}

void FleetHost::start() {
  launch();
  ASSERT_TRUE(eventually([&] { return !process.running() || client->get("/healthz").status == 200; }, start_timeout) &&
              process.running())
      << name << " did not start:\n"
      << log_text();
}

std::string FleetHost::log_text() const { return file_text(log); }

void FleetHost::drop(std::uint64_t seed) {
  MadeShard s = make_shard({.seed = seed, .xorbs = 1, .chunks_per_xorb = 3, .client_style = true});
  drop_file(incoming, s.file_name(), s.bytes);
  std::lock_guard lock(mu_);
  dropped_.push_back(std::move(s));
}

std::vector<MadeShard> FleetHost::dropped() {
  std::lock_guard lock(mu_);
  return dropped_;
}

LaunchedFleetHost::LaunchedFleetHost(const std::filesystem::path& root, std::string host_name, const std::string& url)
    : FleetHost(root, std::move(host_name)) {
  write_config(url, {.lookup_timeout = "", .fleet_extra = "", .log_level = "", .extra = ""});
  launch();
}

Publishers::Publishers(FleetHost& a, FleetHost& b, std::uint64_t first_seed, std::chrono::milliseconds every)
    : thread_([this, &a, &b, first_seed, every] {
        for (std::uint64_t seed = first_seed; on_; seed += 2) {
          a.drop(seed);
          b.drop(seed + 1);
          std::this_thread::sleep_for(every);
        }
      }) {}

void Publishers::stop() {
  on_ = false;
  if (thread_.joinable()) thread_.join();
}

void FleetHostsTest::SetUp() { root = tests::make_temp_dir(prefix_); }

void FleetHostsTest::TearDown() {
  for (auto& h : hosts) {
    h->process.kill_hard();
    if (HasFailure()) std::fprintf(stderr, "---- %s log ----\n%s\n", h->name.c_str(), h->log_text().c_str());
  }
  hosts.clear();
  std::error_code ec;
  std::filesystem::remove_all(root, ec);
}

}  // namespace dedupd::itest
