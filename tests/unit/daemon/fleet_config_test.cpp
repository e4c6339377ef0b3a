// The fleet section of dedupd.yaml: off unless set, every mistake named with
// its key and line, and the url (which may hold a password) never echoed.
#include <gtest/gtest.h>
#include <unistd.h>

#include "daemon/config/load.hpp"

namespace dedupd::daemon::config {
namespace {

using namespace std::chrono_literals;

ConfigResult load(const std::string& yaml) { return load_config_text(yaml, "/etc/dedupd"); }

TEST(FleetConfig, OffUnlessSet) {
  auto r = load("state_dir: /var/lib/dedupd\n");
  ASSERT_TRUE(std::holds_alternative<Config>(r));
  EXPECT_FALSE(std::get<Config>(r).fleet.enabled());
  r = load("fleet:\n");
  ASSERT_TRUE(std::holds_alternative<Config>(r));
  EXPECT_FALSE(std::get<Config>(r).fleet.enabled());
}

TEST(FleetConfig, EveryKey) {
  auto r = load(
      "fleet:\n"
      "  url: \"host=db1,db2 dbname=dedupd user=dedupd\"\n"
      "  host: build-07\n"
      "  lookup_timeout: 120ms\n");
  ASSERT_TRUE(std::holds_alternative<Config>(r));
  const FleetConfig& f = std::get<Config>(r).fleet;
  EXPECT_TRUE(f.enabled());
  EXPECT_EQ(f.url, "host=db1,db2 dbname=dedupd user=dedupd");
  EXPECT_EQ(f.host, "build-07");
  EXPECT_EQ(f.lookup_timeout, 120ms);
  r = load("fleet:\n  url: postgresql://db/dedupd\n  lookup_timeout: 2s\n");
  ASSERT_TRUE(std::holds_alternative<Config>(r));
  EXPECT_EQ(std::get<Config>(r).fleet.lookup_timeout, 2000ms);
  r = load("fleet:\n  url: postgresql://db/dedupd\n  reconcile_interval: 1h\n  reconcile_batch: 500\n");
  ASSERT_TRUE(std::holds_alternative<Config>(r));
  EXPECT_EQ(std::get<Config>(r).fleet.reconcile_interval, std::chrono::seconds(3600));
  EXPECT_EQ(std::get<Config>(r).fleet.reconcile_batch, 500u);
  r = load("fleet:\n  url: postgresql://db/dedupd\n");
  EXPECT_EQ(std::get<Config>(r).fleet.reconcile_interval, std::chrono::seconds(600));
  EXPECT_EQ(std::get<Config>(r).fleet.reconcile_batch, 10000u);
  EXPECT_EQ(std::get<Config>(r).fleet.lookup_cache, std::uint64_t(16) << 20);
  EXPECT_EQ(std::get<Config>(r).fleet.key_filter_memory, std::uint64_t(512) << 20);
  EXPECT_TRUE(std::holds_alternative<std::vector<ConfigError>>(
      load("fleet:\n  url: postgresql://db/dedupd\n  reconcile_batch: 0\n")));
  r = load("fleet:\n  url: postgresql://db/dedupd\n  lookup_cache: 256M\n");
  ASSERT_TRUE(std::holds_alternative<Config>(r));
  EXPECT_EQ(std::get<Config>(r).fleet.lookup_cache, std::uint64_t(256) << 20);
  r = load("fleet:\n  url: postgresql://db/dedupd\n  lookup_cache: 0\n");
  ASSERT_TRUE(std::holds_alternative<Config>(r));
  EXPECT_EQ(std::get<Config>(r).fleet.lookup_cache, 0u);
  EXPECT_TRUE(std::holds_alternative<std::vector<ConfigError>>(
      load("fleet:\n  url: postgresql://db/dedupd\n  lookup_cache: lots\n")));
  r = load("fleet:\n  url: postgresql://db/dedupd\n  key_filter_memory: 1G\n");
  ASSERT_TRUE(std::holds_alternative<Config>(r));
  EXPECT_EQ(std::get<Config>(r).fleet.key_filter_memory, std::uint64_t(1) << 30);
  EXPECT_TRUE(std::holds_alternative<std::vector<ConfigError>>(
      load("fleet:\n  url: postgresql://db/dedupd\n  key_filter_memory: -1\n")));
}

TEST(FleetConfig, HostDefaultsToTheHostname) {
  char name[256] = {};
  ASSERT_EQ(::gethostname(name, sizeof name - 1), 0);
  auto r = load("fleet:\n  url: postgresql://db/dedupd\n");
  ASSERT_TRUE(std::holds_alternative<Config>(r));
  EXPECT_EQ(std::get<Config>(r).fleet.host, name);
  EXPECT_EQ(std::get<Config>(r).fleet.lookup_timeout, 50ms);
}

void expect_error(const std::string& yaml, const std::string& key, int line, const std::string& what) {
  auto r = load(yaml);
  ASSERT_TRUE(std::holds_alternative<std::vector<ConfigError>>(r)) << yaml;
  const auto& errors = std::get<std::vector<ConfigError>>(r);
  ASSERT_EQ(errors.size(), 1u) << yaml;
  EXPECT_EQ(errors[0].key, key);
  EXPECT_EQ(errors[0].line, line);
  EXPECT_NE(errors[0].message.find(what), std::string::npos) << errors[0].message;
  EXPECT_EQ(errors[0].message.find("s3cret"), std::string::npos) << "the url leaked: " << errors[0].message;
}

TEST(FleetConfig, MistakesNameKeyAndLine) {
  expect_error("log_level: info\nfleet:\n  host: a\n", "fleet.url", 2, "needs a url");
  expect_error("fleet:\n  url: \"password=s3cret\"\n  host: \"bad host\"\n", "fleet.host", 3, "not a host name");
  expect_error("fleet:\n  url: \"password=s3cret\"\n  lookup_timeout: 50\n", "fleet.lookup_timeout", 3, "50ms");
  expect_error("fleet:\n  url: \"password=s3cret\"\n  lookup_timeout: 0ms\n", "fleet.lookup_timeout", 3,
               "between 1ms and 60s");
  expect_error("fleet:\n  url: \"password=s3cret\"\n  port: 5432\n", "fleet.port", 3, "unknown key");
  expect_error("fleet:\n  url: [a, b]\n", "fleet.url", 2, "got a list");
  expect_error("fleet: postgresql://x\n", "fleet", 1, "expected a mapping");
}

}  // namespace
}  // namespace dedupd::daemon::config
