// Presentation helpers: the exact strings people see.
#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <sstream>

#include "cli/output.hpp"

namespace dedupctl {
namespace {

TEST(HumanBytes, ExactBelowOneKiB) {
  EXPECT_EQ(human_bytes(0), "0 B");
  EXPECT_EQ(human_bytes(1023), "1023 B");
}

TEST(HumanBytes, BinaryUnitsWithOneDecimal) {
  EXPECT_EQ(human_bytes(1024), "1.0 KiB");
  EXPECT_EQ(human_bytes(1536), "1.5 KiB");
  EXPECT_EQ(human_bytes(102104), "99.7 KiB");
  EXPECT_EQ(human_bytes(64ull << 20), "64.0 MiB");
  EXPECT_EQ(human_bytes(3ull << 30), "3.0 GiB");
  EXPECT_EQ(human_bytes(UINT64_MAX), "16.0 EiB");
}

TEST(HumanBytes, NeverPrints1024OfAUnit) { EXPECT_EQ(human_bytes(1024 * 1024 - 1), "1.0 MiB"); }

TEST(Grouped, ThousandsSeparators) {
  EXPECT_EQ(grouped(0), "0");
  EXPECT_EQ(grouped(999), "999");
  EXPECT_EQ(grouped(1000), "1,000");
  EXPECT_EQ(grouped(2117), "2,117");
  EXPECT_EQ(grouped(102104), "102,104");
  EXPECT_EQ(grouped(1234567890), "1,234,567,890");
}

TEST(Times, IsoUtcOfTheFixture) {
  EXPECT_EQ(iso_utc(1754059905), "2025-08-01T14:51:45Z");
  EXPECT_EQ(iso_utc(0), "1970-01-01T00:00:00Z");
  // Not a date any more: printed as the number, not garbage.
  EXPECT_EQ(iso_utc(UINT64_MAX), "18446744073709551615");
}

TEST(Times, IsoLocalHasColonInOffset) {
  const char* old = std::getenv("TZ");
  std::string saved = old ? old : "";
  setenv("TZ", "Europe/Paris", 1);
  tzset();
  EXPECT_EQ(iso_local(1754059905), "2025-08-01T16:51:45+02:00");
  setenv("TZ", "UTC", 1);
  tzset();
  EXPECT_EQ(iso_local(1754059905), "2025-08-01T14:51:45+00:00");
  if (old) setenv("TZ", saved.c_str(), 1);
  else unsetenv("TZ");
  tzset();
}

TEST(Times, RelativeAndDuration) {
  EXPECT_EQ(relative(0), "now");
  EXPECT_EQ(relative(30), "in 30s");
  EXPECT_EQ(relative(-90), "1m ago");
  EXPECT_EQ(relative(3 * 86400 + 4 * 3600), "in 3d 4h 0m");
  EXPECT_EQ(duration(93784), "1d 2h 3m");
  EXPECT_EQ(duration(20 * 86400 + 3600), "20d 1h");
}

TEST(Color, OnlyOnATerminalAndNeverWithNoColor) {
  EXPECT_TRUE(want_color(true, std::nullopt));
  EXPECT_FALSE(want_color(false, std::nullopt));
  EXPECT_FALSE(want_color(true, std::string("1")));
  // no-color.org: an empty NO_COLOR does not count.
  EXPECT_TRUE(want_color(true, std::string("")));
  EXPECT_EQ(Style{false}.paint("x", Color::red), "x");
  EXPECT_EQ(Style{true}.paint("x", Color::red), "\x1b[31mx\x1b[0m");
  EXPECT_EQ(Style{true}.paint("x", Color::none), "x");
}

TEST(Table, AlignsLeftAndRightWithoutTrailingBlanks) {
  Table t({{"NAME"}, {"SIZE", Table::right}, {"NOTE"}}, "  ");
  t.add({"a", "1 B", ""});
  t.add({"longer", "99.7 KiB", "x"});
  std::ostringstream out;
  t.print(out, Style{false});
  EXPECT_EQ(out.str(),
            "  NAME        SIZE  NOTE\n"
            "  a            1 B\n"
            "  longer  99.7 KiB  x\n");
}

TEST(Table, ColourDoesNotDisturbAlignment) {
  Table t({{"A"}, {"B"}});
  t.add({Table::Cell("x", Color::red), "y"});
  t.add({"xyz", "w"});
  std::ostringstream out;
  t.print(out, Style{true}, false);
  EXPECT_EQ(out.str(), "\x1b[31mx\x1b[0m    y\nxyz  w\n");
}

TEST(Fields, LabelsPadToOneWidth) {
  Fields f;
  f.add("Size", "1 B");
  f.add("Shard hash", "abc");
  std::ostringstream out;
  f.print(out, Style{false});
  EXPECT_EQ(out.str(), "Size        1 B\nShard hash  abc\n");
}

TEST(Json, TwoSpaceIndentOneNewline) {
  std::ostringstream out;
  nlohmann::ordered_json doc = {{"b", 1}, {"a", nlohmann::ordered_json::array({"x"})}};
  print_json(out, doc);
  EXPECT_EQ(out.str(), "{\n  \"b\": 1,\n  \"a\": [\n    \"x\"\n  ]\n}\n");
}

}  // namespace
}  // namespace dedupctl

namespace dedupctl {
namespace {
TEST(Count, SingularAndPlural) {
  EXPECT_EQ(count(0, "file"), "0 files");
  EXPECT_EQ(count(1, "xorb"), "1 xorb");
  EXPECT_EQ(count(2117, "chunk"), "2,117 chunks");
}
}  // namespace
}  // namespace dedupctl
