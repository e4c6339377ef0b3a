// A reload (daemon/config/reload_keys.hpp) keeps every key the table marks
// restart as it runs and names it when the file changed it; it applies
// every other key. Over every key of the table, one change at a time.
#include "daemon/config/reload_keys.hpp"

#include <gtest/gtest.h>

#include "tests/unit/daemon/config_samples.hpp"

namespace dedupd::daemon::config {
namespace {

using config_samples::samples;

TEST(ReloadKeys, AChangedRestartKeyIsNamedWithTheValueThatStays) {
  const Config running = installed_defaults();
  for (const auto& s : samples()) {
    SCOPED_TRACE(s.key);
    auto r = config_samples::load_setting(s);
    ASSERT_TRUE(std::holds_alternative<Config>(r));
    const Config& next = std::get<Config>(r);
    const ConfigKey& k = *find_config_key(s.key);
    const std::vector<std::string> waiting = changes_waiting_for_restart(running, next);
    const Config applied = as_reload_applies(running, next);
    if (k.reload == Reload::restart) {
      EXPECT_EQ(waiting, std::vector<std::string>{s.key + " (stays " + k.shown(running) + ")"});
      EXPECT_TRUE(k.same(applied, running)) << "a restart key keeps its running value";
    } else {
      EXPECT_EQ(waiting, std::vector<std::string>{});
      EXPECT_EQ(k.show(applied), s.shown) << "an applied key takes the file's value";
    }
  }
}

// The keys that wait, named: the running server's (socket, limits, the
// TCP listener, the range URLs' signer with its key and bound), the index's
// (its directory, the filter bound it opened with).
TEST(ReloadKeys, TheKeysThatWaitForARestart) {
  std::vector<std::string> restart;
  for (const auto& k : config_keys())
    if (k.reload == Reload::restart) restart.push_back(k.name);
  EXPECT_EQ(restart,
            (std::vector<std::string>{"state_dir", "socket", "limits.max_body_bytes", "limits.max_query_body_bytes",
                                      "limits.max_body_memory", "limits.max_connections", "limits.header_timeout",
                                      "xet_endpoint.downloads.max_held_urls", "xet_endpoint.downloads.key_file",
                                      "index.filter_memory", "metrics.listen"}));
}

TEST(ReloadKeys, SeveralChangesEachNamedInTheTablesOrder) {
  Config running = installed_defaults();
  running.metrics = {"127.0.0.1:9953", "127.0.0.1", 9953};
  auto r = load_config_text("index:\n  filter_memory: 2G\n  scrub_interval: never\nlimits:\n  max_connections: 100\n",
                            "/etc/dedupd");
  ASSERT_TRUE(std::holds_alternative<Config>(r));
  EXPECT_EQ(changes_waiting_for_restart(running, std::get<Config>(r)),
            (std::vector<std::string>{"limits.max_connections (stays 2048)", "index.filter_memory (stays 512M)",
                                      "metrics.listen (stays 127.0.0.1:9953)"}));
  const Config applied = as_reload_applies(running, std::get<Config>(r));
  EXPECT_EQ(applied.index.filter_memory, 512ull << 20);
  EXPECT_EQ(applied.index.scrub_interval, std::nullopt);
  EXPECT_EQ(applied.limits.max_connections, 2048u);
  EXPECT_EQ(applied.metrics, running.metrics);
  EXPECT_EQ(changes_waiting_for_restart(running, running), std::vector<std::string>{});
}

TEST(ReloadKeys, AListenerTurnedOnWhileOffStaysOff) {
  auto r = load_config_text("metrics:\n  listen: 127.0.0.1:9953\n", "/etc/dedupd");
  ASSERT_TRUE(std::holds_alternative<Config>(r));
  EXPECT_EQ(changes_waiting_for_restart(installed_defaults(), std::get<Config>(r)),
            std::vector<std::string>{"metrics.listen (stays off)"});
}

}  // namespace
}  // namespace dedupd::daemon::config
