// The rules of dedupd.yaml across keys (daemon/config/cross_key_rules): room
// for bodies, the fleet's identity, the Xet caches' entry cap and where
// rejected files go, each through the whole file as the loader applies them.
#include "daemon/config/cross_key_rules.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "tests/unit/daemon/config_load.hpp"

namespace dedupd::daemon::config {
namespace {

TEST(ConfigErrors, BodyMemoryMustHoldAnUploadAndAQuery) {
  // Named at max_body_memory when it is set, else at "limits:".
  expect_one_error("limits:\n  max_body_bytes: 1G\n  max_body_memory: 1G\n", "limits.max_body_memory", 3,
                   "at least max_body_bytes + max_query_body_bytes (1G + 10M)");
  expect_one_error("log_level: info\nlimits:\n  max_body_bytes: 1G\n", "limits.max_body_memory", 2, "(1G + 10M)");
  EXPECT_EQ(load_ok("limits:\n  max_body_bytes: 1G\n  max_body_memory: 1034M\n").limits.max_body_memory, 1034ull << 20);
  // A key already wrong is the one error reported.
  expect_one_error("limits:\n  max_body_bytes: 9Z\n  max_body_memory: 1K\n", "limits.max_body_bytes", 2,
                   "unknown unit");
}

// Issue 31: with the local Xet endpoint on, the client's cache is kept
// small by default (dedupd answers for the rest); a cap set by hand wins.
TEST(Config, XetEndpointMakesTheEntryCapSmall) {
  // The package's endpoint settings are known by default (enabling its unit
  // is enough), but a cache is made small only when the file says so: a
  // client that does not go through the endpoint needs its whole cache.
  Config d = load_ok("");
  EXPECT_TRUE(d.xet_endpoint.enabled());
  EXPECT_EQ(d.xet_endpoint.config, "/etc/dedupd/xet-endpoint.conf");
  EXPECT_EQ(d.xet_cache.max_chunk_entries_source, CapSource::client_default);

  Config c = load_ok("xet_endpoint:\n  config: xet-endpoint.conf\n");
  EXPECT_EQ(c.xet_endpoint.config, "/etc/dedupd/xet-endpoint.conf");  // relative to the config file
  EXPECT_EQ(c.xet_cache.max_chunk_entries, kXetEndpointCacheEntries);
  EXPECT_EQ(c.xet_cache.max_chunk_entries_source, CapSource::xet_endpoint);
  EXPECT_EQ(c.xet_cache.max_bytes, 16'000'000'000ull);  // the byte cap stays the client's

  for (const char* yaml : {"xet_cache:\n  max_chunk_entries: 5000000\nxet_endpoint:\n  config: /e.conf\n",
                           "xet_endpoint:\n  config: /e.conf\nxet_cache:\n  max_chunk_entries: 5000000\n"}) {
    Config e = load_ok(yaml);
    EXPECT_EQ(e.xet_cache.max_chunk_entries, 5'000'000u) << yaml;
    EXPECT_EQ(e.xet_cache.max_chunk_entries_source, CapSource::configured) << yaml;
  }
  EXPECT_FALSE(load_ok("xet_endpoint:\n").xet_endpoint.enabled());
  expect_one_error("xet_endpoint:\n  conf: /e.conf\n", "xet_endpoint.conf", 2, "config");
  expect_one_error("xet_endpoint: /e.conf\n", "xet_endpoint", 1, "mapping");
}

TEST(ConfigErrors, QuarantineInsideAWatchedTree) {
  auto errors = load_errors("watch: [/srv/shards]\nquarantine_dir: /srv/shards/bad\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].key, "quarantine_dir");
}

TEST(CrossKeyRules, AQuarantineBesideAWatchedTreeIsFine) {
  Config c = load_ok("watch: [/srv/shards]\nquarantine_dir: /srv/shards-rejected\n");
  EXPECT_EQ(c.quarantine_dir, std::filesystem::path("/srv/shards-rejected"));
  // The watched directory itself is inside it too.
  auto errors = load_errors("watch: [/srv/shards, /srv/other]\nquarantine_dir: /srv/other\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].key, "quarantine_dir");
  EXPECT_EQ(errors[0].message, "must not be inside the watched directory /srv/other");
}

TEST(CrossKeyRules, TheFleetsHostIsThisMachinesNameUnlessSet) {
  char name[256] = {};
  ASSERT_EQ(::gethostname(name, sizeof name - 1), 0);
  EXPECT_EQ(load_ok("fleet:\n  url: postgresql://db/dedupd\n").fleet.host, name);
  EXPECT_EQ(load_ok("fleet:\n  url: postgresql://db/dedupd\n  host: web-7\n").fleet.host, "web-7");
  // A fleet section without a url is named at the section's line, and the
  // fleet stays off.
  expect_one_error("log_level: info\n\nfleet:\n  host: web-7\n", "fleet.url", 3, "needs a url");
}

TEST(CrossKeyRules, RulesRunOnAConfigDirectly) {
  YamlReader r{"/etc/dedupd"};
  Config c;
  c.limits.max_body_bytes = 1 << 20;
  c.limits.max_query_body_bytes = 1 << 20;
  c.limits.max_body_memory = (2 << 20) - 1;
  r.begin_section();
  check_body_memory(r, c);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].key, "limits.max_body_memory");
  EXPECT_EQ(r.errors[0].line, 0);  // set nowhere in a file
  c.limits.max_body_memory = 2 << 20;
  r.begin_section();
  check_body_memory(r, c);
  EXPECT_EQ(r.errors.size(), 1u);

  c.fleet.url = "postgresql://db/dedupd";
  settle_fleet_identity(r, c);
  ASSERT_EQ(r.errors.size(), 2u);  // the url was not read from a file
  EXPECT_EQ(r.errors[1].key, "fleet.url");
  EXPECT_TRUE(c.fleet.url.empty());

  // Without xet_endpoint.config in the file, the client's cap stays.
  c.xet_endpoint.config = "/etc/dedupd/xet-endpoint.conf";
  settle_cache_entry_cap(r, c);
  EXPECT_EQ(c.xet_cache.max_chunk_entries_source, CapSource::client_default);
  EXPECT_EQ(c.xet_cache.max_chunk_entries, 64ull << 20);
}

}  // namespace
}  // namespace dedupd::daemon::config
