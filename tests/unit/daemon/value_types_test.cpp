// The kinds of value a key of dedupd.yaml takes (daemon/config/value_types),
// each on its own: what it accepts, what it refuses with which message and
// line, how it shows a value and its bounds.
#include "daemon/config/value_types.hpp"

#include <gtest/gtest.h>

#include <string>

#include "tests/unit/daemon/value_parse.hpp"

namespace dedupd::daemon::config {
namespace {

using namespace std::chrono_literals;

TEST(ValueTypes, HostNamesAreLettersDigitsDotsUnderscoresAndDashes) {
  EXPECT_TRUE(fleet_host_name_ok("db-1.example_org"));
  EXPECT_TRUE(fleet_host_name_ok(std::string(253, 'a')));
  EXPECT_FALSE(fleet_host_name_ok(std::string(254, 'a')));
  EXPECT_FALSE(fleet_host_name_ok(""));
  EXPECT_FALSE(fleet_host_name_ok("a b"));
  EXPECT_FALSE(fleet_host_name_ok("host/1"));
  EXPECT_FALSE(fleet_host_name_ok("h\xc3\xa9te"));
}

TEST(ValueTypes, PathsAreTakenRelativeToTheFileAndCleaned) {
  ParseValue p;
  EXPECT_EQ(p(PathValue{}, "k: state/./x/"), std::filesystem::path("/etc/dedupd/state/x"));
  EXPECT_EQ(p(PathValue{}, "k: /var/lib/dedupd"), std::filesystem::path("/var/lib/dedupd"));
  EXPECT_FALSE(p(PathValue{}, "k:"));
  EXPECT_EQ(p.message(), "expected a path, got nothing");
  EXPECT_FALSE(p(PathValue{}, "k: [a, b]"));
  EXPECT_EQ(p.message(), "expected a path, got a list");
  EXPECT_FALSE(p(PathValue{}, "k: {a: b}"));
  EXPECT_EQ(p.message(), "expected a path, got a mapping");
  EXPECT_EQ(p.reader.errors.size(), 3u);
}

TEST(ValueTypes, FlagsAreYamlBooleansOnly) {
  ParseValue p;
  EXPECT_EQ(p(FlagValue{}, "k: true"), true);
  EXPECT_EQ(p(FlagValue{}, "k: false"), false);
  EXPECT_FALSE(p(FlagValue{}, "k: maybe"));
  EXPECT_EQ(p.message(), "expected true or false, got \"maybe\"");
  EXPECT_EQ(FlagValue{}.show(true), "true");
  EXPECT_EQ(FlagValue{}.show(false), "false");
}

TEST(ValueTypes, SecretTextIsReadButNeverShown) {
  ParseValue p;
  SecretTextValue secret;
  secret.what = "a connection string";
  EXPECT_EQ(p(secret, "k: 'postgresql://u:pw@h/db'"), std::string("postgresql://u:pw@h/db"));
  EXPECT_EQ(secret.show("postgresql://u:pw@h/db"), "(set, not shown)");
  EXPECT_EQ(secret.show(""), "");
  EXPECT_FALSE(p(secret, "k:"));
  EXPECT_EQ(p.message(), "expected a connection string, got nothing");
}

TEST(ValueTypes, LogLevelsAreSpdlogsWords) {
  ParseValue p;
  for (const char* level : {"trace", "debug", "info", "warn", "error", "critical", "off"})
    EXPECT_EQ(p(LogLevelValue{}, std::string("k: ") + level), std::string(level));
  EXPECT_FALSE(p(LogLevelValue{}, "k: verbose"));
  EXPECT_EQ(p.message(), "unknown log level \"verbose\" (use trace, debug, info, warn, error, critical or off)");
  EXPECT_FALSE(p(LogLevelValue{}, "k: INFO"));
}

TEST(ValueTypes, HostNamesRefusedNameTheRule) {
  ParseValue p;
  EXPECT_EQ(p(HostNameValue{}, "k: web-3"), std::string("web-3"));
  EXPECT_FALSE(p(HostNameValue{}, "k: 'web 3'"));
  EXPECT_EQ(p.message(), "\"web 3\" is not a host name (1-253 of letters, digits, '.', '_', '-')");
}

TEST(ValueTypes, CountsAreWholeNumbersAtLeastTheirMinimum) {
  ParseValue p;
  CountValue<unsigned> at_least_two{2};
  EXPECT_EQ(p(at_least_two, "k: 2"), 2u);
  EXPECT_EQ(p(at_least_two, "k: 4096"), 4096u);
  EXPECT_FALSE(p(at_least_two, "k: 1"));
  EXPECT_EQ(p.message(), "must be at least 2");
  for (const char* bad : {"k: -1", "k: 3x", "k: 1.5", "k: 4294967296"}) {
    EXPECT_FALSE(p(at_least_two, bad)) << bad;
    EXPECT_NE(p.message().find("expected a whole number, got"), std::string::npos) << bad;
  }
  CountValue<std::uint64_t> any;
  EXPECT_EQ(p(any, "k: 4294967296"), 4294967296ull);
  EXPECT_EQ(at_least_two.bounds(), "at least `2`");
  EXPECT_EQ(any.bounds(), "");
  EXPECT_EQ(any.show(17), "17");
}

TEST(ValueTypes, DurationsNeedAUnitAndRespectTheirMinimum) {
  ParseValue p;
  DurationValue at_least_a_minute{60s};
  EXPECT_EQ(p(at_least_a_minute, "k: 7d"), std::chrono::seconds(7 * 86400));
  EXPECT_FALSE(p(at_least_a_minute, "k: 30s"));
  EXPECT_EQ(p.message(), "must be at least 1m");
  EXPECT_FALSE(p(at_least_a_minute, "k: 90"));
  EXPECT_FALSE(p.message().empty());
  EXPECT_EQ(at_least_a_minute.bounds(), "at least `1m`");
  EXPECT_EQ(DurationValue{}.bounds(), "");
  EXPECT_EQ(at_least_a_minute.show(90min), "90m");
}

TEST(ValueTypes, NeverIsADurationOnlyWhereItMeansForever) {
  ParseValue p;
  DurationOrNeverValue d{.example = "7d"};
  auto never = p(d, "k: never");
  ASSERT_TRUE(never);
  EXPECT_FALSE(*never);
  EXPECT_EQ(p(d, "k: 2h"), std::optional<std::chrono::seconds>(2h));
  EXPECT_FALSE(p(d, "k:"));
  EXPECT_EQ(p.message(), "expected a duration such as \"7d\", or \"never\", got nothing");
  EXPECT_FALSE(p(d, "k: sometimes"));
  EXPECT_EQ(d.show(std::nullopt), "never");
  EXPECT_EQ(d.show(std::chrono::seconds(86400)), "1d");
  EXPECT_FALSE(p(DurationValue{}, "k: never"));
}

TEST(ValueTypes, MillisecondsFromOneMillisecondToAMinute) {
  ParseValue p;
  MillisecondsValue ms;
  EXPECT_EQ(p(ms, "k: 50ms"), std::chrono::milliseconds(50));
  EXPECT_EQ(p(ms, "k: 2s"), std::chrono::milliseconds(2000));
  EXPECT_EQ(p(ms, "k: 1m"), std::chrono::milliseconds(60000));
  EXPECT_FALSE(p(ms, "k: 0ms"));
  EXPECT_EQ(p.message(), "must be between 1ms and 60s");
  EXPECT_FALSE(p(ms, "k: 2m"));
  EXPECT_EQ(p.message(), "must be between 1ms and 60s");
  EXPECT_FALSE(p(ms, "k: 60001ms"));
  EXPECT_EQ(p.message(), "expected a duration such as \"50ms\" or \"1s\", got \"60001ms\"");
  EXPECT_FALSE(p(ms, "k: xms"));
  EXPECT_FALSE(p(ms, "k: 50"));
  EXPECT_NE(p.message().find("(or milliseconds: \"50ms\")"), std::string::npos) << p.message();
  EXPECT_EQ(ms.show(std::chrono::milliseconds(50)), "50ms");
  EXPECT_EQ(ms.show(std::chrono::milliseconds(2000)), "2s");
}

TEST(ValueTypes, SizesShowAUnitOnlyWhereItReadsShorter) {
  ParseValue p;
  SizeValue at_least_a_mib{1 << 20};
  EXPECT_EQ(p(at_least_a_mib, "k: 16G"), 16ull << 30);
  EXPECT_FALSE(p(at_least_a_mib, "k: 1K"));
  EXPECT_EQ(p.message(), "must be at least 1M");
  EXPECT_FALSE(p(at_least_a_mib, "k: lots"));
  EXPECT_FALSE(p.message().empty());
  EXPECT_EQ(at_least_a_mib.bounds(), "at least `1M`");
  EXPECT_EQ(SizeValue{}.bounds(), "");
  EXPECT_EQ(SizeValue{}.show(256ull << 20), "256M");
  // The client's decimal 16 GB has no short binary spelling.
  EXPECT_EQ(SizeValue{}.show(16'000'000'000ull), "16000000000");
}

TEST(ValueTypes, CasUrlsAreKeptNormalized) {
  ParseValue p;
  auto got = p(CasUrlValue{}, "k: HTTPS://Cas-Server.Example/");
  ASSERT_TRUE(got) << p.message();
  EXPECT_EQ(*got, "https://cas-server.example");
  EXPECT_FALSE(p(CasUrlValue{}, "k: ftp://cas.example"));
  EXPECT_EQ(p.message(), "\"ftp://cas.example\" is not a CAS URL (http:// or https://, a host, no query)");
}

TEST(ValueTypes, ManageIsXetCacheOrNone) {
  ParseValue p;
  EXPECT_EQ(p(ManageValue{}, "k: xet-cache"), Manage::xet_cache);
  EXPECT_EQ(p(ManageValue{}, "k: none"), Manage::none);
  EXPECT_FALSE(p(ManageValue{}, "k: xet_cache"));
  EXPECT_EQ(p.message(), "expected xet-cache or none, got \"xet_cache\"");
  EXPECT_EQ(ManageValue{}.show(Manage::xet_cache), "xet-cache");
  EXPECT_EQ(ManageValue{}.show(Manage::none), "none");
}

TEST(ValueTypes, ListenKeepsWhatWasWrittenAndItsParts) {
  ParseValue p;
  auto on = p(ListenValue{}, "k: '127.0.0.1:9953'");
  ASSERT_TRUE(on) << p.message();
  EXPECT_EQ(on->listen, "127.0.0.1:9953");
  EXPECT_EQ(on->host, "127.0.0.1");
  EXPECT_EQ(on->port, 9953);
  auto off = p(ListenValue{}, "k:");
  ASSERT_TRUE(off);
  EXPECT_FALSE(off->enabled());
  EXPECT_FALSE(p(ListenValue{}, "k: 'example.org:80'"));
  EXPECT_FALSE(p.message().empty());
  EXPECT_FALSE(p(ListenValue{}, "k: [a]"));
  EXPECT_NE(p.message().find("HOST:PORT"), std::string::npos) << p.message();
}

TEST(ValueTypes, AnOptionalValueIsUnsetByAnEmptyValueOnlyWhereAllowed) {
  ParseValue p;
  OptionalValue<PathValue> unsettable;
  auto unset = p(unsettable, "k:");
  ASSERT_TRUE(unset);
  EXPECT_FALSE(*unset);
  EXPECT_EQ(unsettable.show(*unset), "");
  auto set = p(unsettable, "k: /q");
  ASSERT_TRUE(set && *set);
  EXPECT_EQ(unsettable.show(*set), "/q");
  OptionalValue<SizeValue> needed{.inner = {.min = 1}, .null_unsets = false};
  EXPECT_FALSE(p(needed, "k:"));
  EXPECT_EQ(p.message(), "expected a size such as \"16G\", got nothing");
  EXPECT_EQ(needed.bounds(), "at least `1`");
}

TEST(ValueTypes, AnEmptyValuesErrorNamesItsKeysLine) {
  ParseValue p;
  EXPECT_FALSE(p(PathValue{}, "\n\nk:\n"));
  ASSERT_EQ(p.reader.errors.size(), 1u);
  EXPECT_EQ(p.reader.errors[0].key, "k");
  EXPECT_EQ(p.reader.errors[0].line, 3);
}

}  // namespace
}  // namespace dedupd::daemon::config
