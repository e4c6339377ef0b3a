// A real ApiServer on a socket in a temp dir, over a real index filled with
// writer-made shards, behind a mocked Service whose answer sources are its
// own index() and global_dedup_key() and no fleet; and a libcurl client.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "daemon/api/http/server.hpp"
#include "daemon/api/routes/routes.hpp"
#include "daemon/api/service.hpp"
#include "index/index.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/unit/shard/test_support.hpp"

namespace dedupd::daemon::testing {

class MockService : public api::Service, public answers::Sources {
 public:
  MOCK_METHOD(const index::Index*, index, (), (const, override));  // both the Service's and the answers'
  MOCK_METHOD(core::StatusInfo, status, (), (const, override));
  MOCK_METHOD(core::DaemonCounters, counters, (), (const, override));
  answers::Sources& answers() override { return *this; }
  MOCK_METHOD(core::GlobalDedupKey, global_dedup_key, (), (const, override));
  answers::FleetPort& fleet() override { return no_fleet_; }
  MOCK_METHOD(base::Result<core::RescanResult>, rescan, (), (override));
  MOCK_METHOD(base::Result<core::PurgeResult>, purge, (bool dry_run), (override));
  MOCK_METHOD(base::Result<index::RemoveOutcome>, remove, (const shard::Hash& shard), (override));
  MOCK_METHOD(core::UploadResult, ingest, (std::vector<std::uint8_t> bytes, std::string name), (override));
  MOCK_METHOD(std::optional<fleet_link::PublisherState>, fleet_state, (), (const, override));
  MOCK_METHOD(base::Result<fleet::Status>, fleet_status, (), (override));
  MOCK_METHOD(base::Result<bool>, fleet_forget_host, (const std::string& name), (override));

 private:
  answers::NoFleet no_fleet_;
};

struct HttpReply {
  long status = 0;
  std::string body;
  std::string content_type;
  std::string headers;       // raw response header lines
  long new_connections = 0;  // connections curl opened for this request
  nlohmann::json json() const { return nlohmann::json::parse(body); }
};

class Client {
 public:
  explicit Client(std::string socket_path);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  HttpReply request(const std::string& method, const std::string& path, const std::string& body = {},
                    const std::vector<std::string>& headers = {});
  HttpReply get(const std::string& path) { return request("GET", path); }
  HttpReply post(const std::string& path, const std::string& body = {}) { return request("POST", path, body); }

 private:
  std::string socket_path_;
  void* curl_;  // CURL*, reused so keep-alive is exercised
};

// Raw socket helpers for what curl will not do (half requests, idling).
int connect_unix(const std::string& path);  // -1 on failure
bool send_all(int fd, std::string_view data);
// Reads until EOF or timeout; *closed says whether EOF was seen.
std::string read_until_closed(int fd, int timeout_ms, bool* closed);
// Reads one response (headers and Content-Length bytes of body) and leaves
// the connection open; "" when none is complete within timeout_ms.
std::string read_reply(int fd, int timeout_ms);

using dedupd::tests::TempDir;

inline constexpr std::uint64_t kNow = 1'760'000'000;

class ApiTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  // Restarts the server with changed options.
  void start_server(const std::function<void(api::http::ServerOptions&)>& tweak = {});
  // Ingests writer bytes into the index; returns the shard hash.
  shard::Hash ingest(const std::vector<std::uint8_t>& bytes, std::uint64_t now = kNow);

  TempDir dir_{"api"};
  std::string socket_path_;
  std::unique_ptr<index::Index> index_;
  ::testing::NiceMock<MockService> service_;
  std::unique_ptr<api::http::ApiServer> server_;
  std::unique_ptr<Client> client_;
};

}  // namespace dedupd::daemon::testing
