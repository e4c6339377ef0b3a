// Base fixture for tests that run the real dedupd: a fresh directory with
// state, a watched "incoming" dir and the socket; a config file; helpers to
// start, query and wait. The daemon's log is printed when a test fails.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "harness/daemon_process.hpp"
#include "harness/http_client.hpp"

namespace dedupd::itest {

class DaemonTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  // Writes dir/dedupd.yaml: state_dir, socket, watch [incoming] and `extra`
  // (more top-level YAML, e.g. "expiry:\n  delete_after: 0s\n").
  void write_config(const std::string& extra = "", const std::string& watch = "");
  // Starts dedupd --config dir/dedupd.yaml (wrapper e.g. faketime) and
  // waits until /healthz answers 200.
  void start(std::vector<std::string> wrapper = {}, std::vector<std::string> env = {});
  void start_no_wait(std::vector<std::string> wrapper = {}, std::vector<std::string> env = {},
                     std::vector<std::string> args = {});
  bool wait_healthy(std::chrono::seconds timeout = std::chrono::seconds(30));

  // Polls `pred` every 20 ms until it holds or `timeout` passes.
  static bool eventually(const std::function<bool()>& pred, std::chrono::seconds timeout = std::chrono::seconds(30));

  HttpClient& http();
  nlohmann::json get_json(const std::string& path, long expect_status = 200);
  std::size_t shard_count(const std::string& state);  // /v1/shards?state=
  bool chunk_found(const std::string& raw_hash);
  std::string daemon_log() const;

  std::filesystem::path dir;       // per test, removed after
  std::filesystem::path incoming;  // watched
  std::filesystem::path socket;
  std::filesystem::path config;
  std::filesystem::path log_file;
  DaemonProcess daemon;

 private:
  std::unique_ptr<HttpClient> http_;
};

}  // namespace dedupd::itest
