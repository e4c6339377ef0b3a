// Reading dedupd.yaml whole (daemon/config/load): every key and its
// installed default, the mistakes named with their key and line, all of them
// at once, and paths relative to the file.
#include <gtest/gtest.h>

#include <fstream>

#include "daemon/config/load.hpp"
#include "daemon/config/units.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/unit/daemon/config_load.hpp"

namespace dedupd::daemon::config {
namespace {

using namespace std::chrono_literals;

TEST(Config, EmptyFileGivesInstalledDefaults) {
  Config c = load_ok("");
  EXPECT_EQ(c.state_dir, "/var/lib/dedupd");
  EXPECT_EQ(c.socket, "/run/dedupd/dedupd.sock");
  EXPECT_TRUE(c.watch.empty());
  EXPECT_EQ(c.expiry.delete_after, std::optional(std::chrono::seconds(7 * 24h)));
  EXPECT_FALSE(c.expiry.max_bytes);
  EXPECT_FALSE(c.quarantine_dir);
  EXPECT_FALSE(c.admin_group);
  EXPECT_EQ(c.log_level, "info");
  // A thousand held connections fit; queries get 32M of body room.
  EXPECT_GE(c.limits.max_connections, 2000u);
  EXPECT_EQ(c.limits.max_body_memory - c.limits.max_body_bytes, 32ull << 20);
  EXPECT_GE(c.limits.max_query_body_bytes, 100'000u * 72);  // the largest batch, one hash a line
}

TEST(Config, EveryKey) {
  Config c = load_ok(R"(
state_dir: /var/lib/dd
socket: /run/dd.sock
watch:
  - /home/ci/.cache/huggingface/xet
  - {path: /srv/shards, recursive: false}
  - path: relative/dir
expiry:
  delete_after: 0s
  max_bytes: 16G
  check_interval: 10m
quarantine_dir: /var/lib/dd/quarantine
admin_group: dedupd-admin
log_level: debug
limits:
  max_body_bytes: 64M
  max_query_body_bytes: 2M
  max_body_memory: 80M
  max_connections: 32
  request_timeout: 5s
  header_timeout: 3s
global_dedup:
  key_rotation: 12h
  reply_expiry: 3d
)");
  EXPECT_EQ(c.state_dir, "/var/lib/dd");
  EXPECT_EQ(c.socket, "/run/dd.sock");
  ASSERT_EQ(c.watch.size(), 3u);
  EXPECT_EQ(c.watch[0], (WatchDir{"/home/ci/.cache/huggingface/xet", true}));
  EXPECT_EQ(c.watch[1], (WatchDir{"/srv/shards", false}));
  EXPECT_EQ(c.watch[2], (WatchDir{"/etc/dedupd/relative/dir", true}));  // relative to the file
  EXPECT_EQ(c.expiry.delete_after, std::optional(std::chrono::seconds(0)));
  EXPECT_EQ(c.expiry.max_bytes, std::optional<std::uint64_t>(16ull << 30));
  EXPECT_EQ(c.expiry.check_interval, 10min);
  EXPECT_EQ(c.quarantine_dir, std::optional<std::filesystem::path>("/var/lib/dd/quarantine"));
  EXPECT_EQ(c.admin_group, std::optional<std::string>("dedupd-admin"));
  EXPECT_EQ(c.log_level, "debug");
  EXPECT_EQ(c.limits.max_body_bytes, 64ull << 20);
  EXPECT_EQ(c.limits.max_query_body_bytes, 2ull << 20);
  EXPECT_EQ(c.limits.max_body_memory, 80ull << 20);
  EXPECT_EQ(c.limits.max_connections, 32u);
  EXPECT_EQ(c.limits.request_timeout, 5s);
  EXPECT_EQ(c.limits.header_timeout, 3s);
  EXPECT_EQ(c.global_dedup.key_rotation, 12h);
  EXPECT_EQ(c.global_dedup.reply_expiry, 3 * 24h);
}

TEST(Config, DeleteAfterNeverKeepsFiles) {
  EXPECT_FALSE(load_ok("expiry:\n  delete_after: never\n").expiry.delete_after);
}

TEST(Config, TrailingSlashesAndDotsAreNormalised) {
  Config c = load_ok("state_dir: /var/lib/dd/\nwatch: [/srv/a/./b/]\n");
  EXPECT_EQ(c.state_dir, "/var/lib/dd");
  EXPECT_EQ(c.watch.at(0).path, "/srv/a/b");
}

// The defaults fit a whole 64 MiB upload shard of the Xet client.
TEST(Config, GlobalDedupReplyBounds) {
  Config d = load_ok("");
  EXPECT_EQ(d.global_dedup.reply_max_bytes, 64ull << 20);
  EXPECT_GE(d.global_dedup.reply_max_xorbs, (64ull << 20) / (48 * 257));  // xorbs of >= 256 chunks
  Config c = load_ok("global_dedup:\n  reply_max_xorbs: 1\n  reply_max_bytes: 2M\n");
  EXPECT_EQ(c.global_dedup.reply_max_xorbs, 1u);
  EXPECT_EQ(c.global_dedup.reply_max_bytes, 2ull << 20);
  expect_one_error("global_dedup:\n  reply_max_xorbs: 0\n", "global_dedup.reply_max_xorbs", 2, "at least 1");
  expect_one_error("global_dedup:\n  reply_max_xorbs: many\n", "global_dedup.reply_max_xorbs", 2, "whole number");
  expect_one_error("\nglobal_dedup:\n  reply_max_bytes: 4K\n", "global_dedup.reply_max_bytes", 3, "at least 1M");
}

// The chunk filters' bound: a size like the others, with a floor below
// which the filters would be useless.
TEST(Config, IndexFilterMemory) {
  EXPECT_EQ(load_ok("").index.filter_memory, 512ull << 20);
  EXPECT_EQ(load_ok("index:\n").index.filter_memory, 512ull << 20);
  EXPECT_EQ(load_ok("index:\n  filter_memory: 2G\n").index.filter_memory, 2ull << 30);
  EXPECT_EQ(load_ok("index:\n  filter_memory: 1048576\n").index.filter_memory, 1ull << 20);
  expect_one_error("index:\n  filter_memory: 512K\n", "index.filter_memory", 2, "at least 1M");
  expect_one_error("index:\n  filter_memory: lots\n", "index.filter_memory", 2, "size");
  expect_one_error("\nindex:\n  filter_mem: 1G\n", "index.filter_mem", 3, "unknown key");
  expect_one_error("index: 1G\n", "index", 1, "filter_memory");
}

TEST(Config, IndexScrubInterval) {
  EXPECT_EQ(load_ok("").index.scrub_interval, std::optional<std::chrono::seconds>(std::chrono::hours(24)));
  EXPECT_EQ(load_ok("index:\n  scrub_interval: 6h\n").index.scrub_interval,
            std::optional<std::chrono::seconds>(std::chrono::hours(6)));
  EXPECT_EQ(load_ok("index:\n  scrub_interval: never\n").index.scrub_interval, std::nullopt);
  expect_one_error("index:\n  scrub_interval: often\n", "index.scrub_interval", 2, "duration");
}

TEST(Config, XetEndpointReplyExpiry) {
  // The endpoint's answers serve the process that asked, by default.
  EXPECT_EQ(load_ok("").xet_endpoint.reply_expiry, std::chrono::seconds(0));
  EXPECT_EQ(load_ok("xet_endpoint:\n  reply_expiry: 1h\n").xet_endpoint.reply_expiry, std::chrono::hours(1));
  expect_one_error("xet_endpoint:\n  reply_expiry: soon\n", "xet_endpoint.reply_expiry", 2, "duration");
}

TEST(Config, XetEndpointDownloads) {
  // On wherever an endpoint asks; the key beside the global-dedup one.
  const Config d = load_ok("state_dir: /s\n");
  EXPECT_TRUE(d.xet_endpoint.downloads.enabled);
  EXPECT_EQ(d.xet_endpoint.downloads.max_url_lifetime, std::chrono::minutes(10));
  EXPECT_EQ(d.xet_endpoint.downloads.max_held_urls, 100'000u);
  EXPECT_EQ(d.download_key_file(), "/s/xet-download.key");
  const Config c =
      load_ok("xet_endpoint:\n  downloads:\n    enabled: false\n    max_url_lifetime: 90s\n    key_file: fleet.key\n");
  EXPECT_FALSE(c.xet_endpoint.downloads.enabled);
  EXPECT_EQ(c.xet_endpoint.downloads.max_url_lifetime, std::chrono::seconds(90));
  EXPECT_EQ(c.download_key_file(), "/etc/dedupd/fleet.key");  // relative to the config file
  // The mapping is one: what is not a mapping, or not its key, is named.
  expect_one_error("xet_endpoint:\n  downloads: true\n", "xet_endpoint.downloads", 2,
                   "expected a mapping (enabled, max_url_lifetime, max_held_urls, key_file)");
  expect_one_error("xet_endpoint:\n  downloads:\n    enable: true\n", "xet_endpoint.downloads.enable", 3,
                   "unknown key (known here: enabled, max_url_lifetime, max_held_urls, key_file)");
  expect_one_error("xet_endpoint:\n  downloads:\n    max_url_lifetime: 0s\n", "xet_endpoint.downloads.max_url_lifetime",
                   3, "at least");
  expect_one_error("xet_endpoint:\n  downlods:\n    enabled: true\n", "xet_endpoint.downlods", 2,
                   "unknown key (known here: config, unknown_cas_answers, group, learn_socket, reply_expiry, "
                   "downloads)");
}

TEST(ConfigErrors, UnknownTopLevelKey) {
  expect_one_error("state_dir: /x\nsockets: /y\n", "sockets", 2, "unknown key");
}

TEST(ConfigErrors, UnknownNestedKey) {
  expect_one_error("expiry:\n  delete_after: 1d\n  max_byte: 1G\n", "expiry.max_byte", 3, "unknown key");
  expect_one_error("watch:\n  - path: /a\n    recurse: true\n", "watch[0].recurse", 3, "unknown key");
  expect_one_error("limits:\n  timeout: 5s\n", "limits.timeout", 2, "unknown key");
  expect_one_error("global_dedup:\n  rotation: 1d\n", "global_dedup.rotation", 2, "unknown key");
}

TEST(ConfigErrors, BadDuration) {
  expect_one_error("expiry:\n  delete_after: 7x\n", "expiry.delete_after", 2, "unknown unit");
  expect_one_error("expiry:\n  delete_after: 7\n", "expiry.delete_after", 2, "unit is required");
  expect_one_error("\n\nlimits:\n  request_timeout: soon\n", "limits.request_timeout", 4, "bad duration");
  expect_one_error("expiry:\n  check_interval: 0s\n", "expiry.check_interval", 2, "at least");
}

TEST(ConfigErrors, BadSize) {
  expect_one_error("expiry:\n  max_bytes: lots\n", "expiry.max_bytes", 2, "bad size");
  expect_one_error("limits:\n  max_body_bytes: 1Q\n", "limits.max_body_bytes", 2, "unknown unit");
  expect_one_error("limits:\n  max_query_body_bytes: 100\n", "limits.max_query_body_bytes", 2, "at least 1K");
}

TEST(Config, XetCacheSettingsAndTheirDefaults) {
  Config d = load_ok("");
  EXPECT_EQ(d.xet_cache.interval, std::chrono::minutes(1));
  EXPECT_EQ(d.xet_cache.replaced_grace, std::chrono::hours(1));
  EXPECT_EQ(d.xet_cache.max_bytes, 16'000'000'000ull);
  EXPECT_EQ(d.xet_cache.max_chunk_entries, 64ull << 20);
  Config c = load_ok("xet_cache:\n  interval: 5s\n  replaced_grace: 0s\n  max_bytes: 2G\n  max_chunk_entries: 1000\n");
  EXPECT_EQ(c.xet_cache.interval, std::chrono::seconds(5));
  EXPECT_EQ(c.xet_cache.replaced_grace, std::chrono::seconds(0));
  EXPECT_EQ(c.xet_cache.max_bytes, 2ull << 30);
  EXPECT_EQ(c.xet_cache.max_chunk_entries, 1000u);
}

TEST(ConfigErrors, BadXetCache) {
  expect_one_error("xet_cache:\n  interval: 0s\n", "xet_cache.interval", 2, "at least 1s");
  expect_one_error("xet_cache:\n  max_chunk_entries: 0\n", "xet_cache.max_chunk_entries", 2, "at least 1");
  expect_one_error("xet_cache:\n  cap: 3\n", "xet_cache.cap", 2, "max_chunk_entries");
  expect_one_error("xet_cache: 5\n", "xet_cache", 1, "mapping");
}

TEST(Config, LocalDefaultsNameTheEndpointDevRunWrites) {
  Config c = local_defaults("/tmp/x");
  EXPECT_EQ(c.xet_endpoint.config, "/tmp/x/xet-endpoint/xet-endpoint.conf");
}

TEST(ConfigErrors, WrongTypes) {
  expect_one_error("state_dir: [a, b]\n", "state_dir", 1, "got a list");
  expect_one_error("socket:\n", "socket", 1, "got nothing");
  expect_one_error("watch: /just/a/string\n", "watch", 1, "list");
  expect_one_error("watch:\n  - {recursive: true}\n", "watch[0]", 2, "needs a path");
  expect_one_error("watch:\n  - path: /a\n    recursive: maybe\n", "watch[0].recursive", 3, "true or false");
  expect_one_error("expiry: 7d\n", "expiry", 1, "mapping");
  expect_one_error("limits:\n  max_connections: -3\n", "limits.max_connections", 2, "whole number");
  expect_one_error("limits:\n  max_connections: 0\n", "limits.max_connections", 2, "at least 1");
  expect_one_error("limits:\n  header_timeout: 0s\n", "limits.header_timeout", 2, "at least 1s");
  expect_one_error("log_level: chatty\n", "log_level", 1, "unknown log level");
  expect_one_error("admin_group: {a: b}\n", "admin_group", 1, "got a mapping");
}

TEST(ConfigErrors, DocumentNotAMapping) {
  auto errors = load_errors("- a\n- b\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].line, 1);
  EXPECT_NE(errors[0].message.find("mapping"), std::string::npos);
}

TEST(ConfigErrors, SyntaxErrorHasALine) {
  auto errors = load_errors("state_dir: /x\nwatch: [a, b\nsocket: /y\n");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_GT(errors[0].line, 1);
}

TEST(ConfigErrors, AllErrorsAreReportedAtOnce) {
  auto errors = load_errors("bogus: 1\nexpiry:\n  delete_after: soon\nlog_level: loud\n");
  ASSERT_EQ(errors.size(), 3u);
  EXPECT_EQ(errors[0].key, "bogus");
  EXPECT_EQ(errors[1].key, "expiry.delete_after");
  EXPECT_EQ(errors[1].line, 3);
  EXPECT_EQ(errors[2].key, "log_level");
  EXPECT_EQ(errors[2].line, 4);
}

TEST(ConfigErrors, MessageFormatNamesFileLineAndKey) {
  ConfigError e{"expiry.delete_after", 3, "bad duration \"x\""};
  EXPECT_EQ(e.to_string("/etc/dedupd/dedupd.yaml"),
            "/etc/dedupd/dedupd.yaml:3: expiry.delete_after: bad duration \"x\"");
}

TEST(ConfigFile, RelativePathsAreRelativeToTheFile) {
  tests::TempDir dir;
  tests::write_file(dir / "d.yaml", "state_dir: state\nwatch: [in]\n");
  auto r = load_config_file(dir / "d.yaml");
  ASSERT_TRUE(std::holds_alternative<Config>(r));
  EXPECT_EQ(std::get<Config>(r).state_dir, std::filesystem::path(dir / "state"));
  EXPECT_EQ(std::get<Config>(r).watch.at(0).path, std::filesystem::path(dir / "in"));
}

TEST(ConfigFile, MissingFileIsAnError) {
  auto r = load_config_file("/nonexistent/dedupd.yaml");
  ASSERT_TRUE(std::holds_alternative<std::vector<ConfigError>>(r));
}

// The TCP metrics listener: off unless asked for, an IP address (or
// localhost) and a port, every mistake named with its key and line.
TEST(Config, MetricsListenIsOffByDefaultAndTakesAnAddressAndPort) {
  EXPECT_FALSE(load_ok("").metrics.enabled());
  EXPECT_FALSE(load_ok("metrics:\n").metrics.enabled());
  EXPECT_FALSE(load_ok("metrics:\n  listen:\n").metrics.enabled());
  Config c = load_ok("metrics:\n  listen: 127.0.0.1:9953\n");
  EXPECT_TRUE(c.metrics.enabled());
  EXPECT_EQ(c.metrics.listen, "127.0.0.1:9953");
  EXPECT_EQ(c.metrics.host, "127.0.0.1");
  EXPECT_EQ(c.metrics.port, 9953);
  c = load_ok("metrics:\n  listen: localhost:1\n");
  EXPECT_EQ(c.metrics.host, "127.0.0.1");
  EXPECT_EQ(c.metrics.port, 1);
  c = load_ok("metrics:\n  listen: 0.0.0.0:65535\n");
  EXPECT_EQ(c.metrics.host, "0.0.0.0");
  EXPECT_EQ(c.metrics.port, 65535);
  c = load_ok("metrics:\n  listen: \"[::1]:9953\"\n");
  EXPECT_EQ(c.metrics.host, "::1");
  EXPECT_EQ(c.metrics.listen, "[::1]:9953");
  EXPECT_EQ(load_ok("metrics: {listen: \"[::]:9953\"}\n").metrics.host, "::");
}

TEST(Config, MetricsListenMistakesNameTheKeyAndLine) {
  expect_one_error("log_level: info\nmetrics:\n  listen: 9953\n", "metrics.listen", 3, "HOST:PORT");
  expect_one_error("metrics:\n  listen: \"127.0.0.1:\"\n", "metrics.listen", 2, "HOST:PORT");
  expect_one_error("metrics:\n  listen: 127.0.0.1:0\n", "metrics.listen", 2, "1 to 65535");
  expect_one_error("metrics:\n  listen: 127.0.0.1:65536\n", "metrics.listen", 2, "1 to 65535");
  expect_one_error("metrics:\n  listen: 127.0.0.1:99x\n", "metrics.listen", 2, "1 to 65535");
  expect_one_error("metrics:\n  listen: prometheus.example:9953\n", "metrics.listen", 2, "IPv4 address");
  expect_one_error("metrics:\n  listen: ::1:9953\n", "metrics.listen", 2, "IPv6 address in brackets");
  expect_one_error("metrics:\n  listen: \"[::1:9953\"\n", "metrics.listen", 2, "IPv6 address in brackets");
  expect_one_error("metrics:\n  listen: \"[127.0.0.1]:9953\"\n", "metrics.listen", 2, "IPv6 address in brackets");
  expect_one_error("metrics:\n  listen: 256.0.0.1:9953\n", "metrics.listen", 2, "IPv4 address");
  expect_one_error("metrics:\n  listen: [a, b]\n", "metrics.listen", 2, "got a list");
  expect_one_error("\nmetrics:\n  port: 9953\n", "metrics.port", 3, "unknown key (known here: listen)");
  expect_one_error("metrics: 127.0.0.1:9953\n", "metrics", 1, "expected a mapping (listen)");
}

TEST(Config, ListenAddressesParseAsTheListenerBindsThem) {
  auto ok = [](std::string_view text) { return std::get<ListenAddress>(parse_listen_address(text)); };
  EXPECT_EQ(ok("10.1.2.3:80"), (ListenAddress{"10.1.2.3", 80, false}));
  EXPECT_EQ(ok("[fe80::1]:9953"), (ListenAddress{"fe80::1", 9953, true}));
  EXPECT_EQ(ok("localhost:9953"), (ListenAddress{"127.0.0.1", 9953, false}));
  for (std::string_view bad : {"", ":", ":9953", "[]:9953", "127.0.0.1", "127.0.0.1:-1", "127.0.0.1: 80", "[::1]"})
    EXPECT_TRUE(std::holds_alternative<ParseError>(parse_listen_address(bad))) << bad;
}

TEST(Config, LocalDefaultsLiveUnderOneDirectory) {
  Config c = local_defaults("/tmp/x/");
  EXPECT_EQ(c.state_dir, "/tmp/x");
  EXPECT_EQ(c.index_dir(), "/tmp/x/index");
  EXPECT_EQ(c.socket, "/tmp/x/dedupd.sock");
  ASSERT_EQ(c.watch.size(), 1u);
  EXPECT_EQ(c.watch[0].path, "/tmp/x/incoming");
  EXPECT_TRUE(c.watch[0].recursive);
}

}  // namespace
}  // namespace dedupd::daemon::config
