#include "daemon/config/units.hpp"

#include <gtest/gtest.h>

namespace dedupd::daemon::config {
namespace {

using namespace std::chrono_literals;

std::chrono::seconds duration_ok(std::string_view s) {
  auto r = parse_duration(s);
  EXPECT_TRUE(std::holds_alternative<std::chrono::seconds>(r)) << s;
  return std::holds_alternative<std::chrono::seconds>(r) ? std::get<0>(r) : -1s;
}

std::string duration_error(std::string_view s) {
  auto r = parse_duration(s);
  EXPECT_TRUE(std::holds_alternative<ParseError>(r)) << s;
  return std::holds_alternative<ParseError>(r) ? std::get<1>(r).message : "";
}

TEST(Duration, EveryUnit) {
  EXPECT_EQ(duration_ok("0s"), 0s);
  EXPECT_EQ(duration_ok("30s"), 30s);
  EXPECT_EQ(duration_ok("90m"), 90min);
  EXPECT_EQ(duration_ok("2h"), 2h);
  EXPECT_EQ(duration_ok("7d"), 7 * 24h);
}

TEST(Duration, RejectsMissingOrUnknownUnit) {
  EXPECT_NE(duration_error("7").find("unit is required"), std::string::npos);
  EXPECT_NE(duration_error("7w").find("unknown unit \"w\""), std::string::npos);
  EXPECT_NE(duration_error("d").find("bad duration"), std::string::npos);
  EXPECT_NE(duration_error("-1s").find("bad duration"), std::string::npos);
  EXPECT_NE(duration_error("1.5h").find("unknown unit"), std::string::npos);
  EXPECT_NE(duration_error("").find("bad duration"), std::string::npos);
}

TEST(Duration, RejectsOverflow) {
  EXPECT_NE(duration_error("99999999999999999999d").find("bad duration"), std::string::npos);
  EXPECT_NE(duration_error("9999999999999999d").find("too large"), std::string::npos);
}

TEST(Duration, NeverIsNoDuration) {
  auto never = parse_duration_or_never("never");
  ASSERT_TRUE(std::holds_alternative<std::optional<std::chrono::seconds>>(never));
  EXPECT_FALSE(std::get<0>(never).has_value());
  auto week = parse_duration_or_never("7d");
  ASSERT_TRUE(std::holds_alternative<std::optional<std::chrono::seconds>>(week));
  EXPECT_EQ(*std::get<0>(week), 7 * 24h);
  auto bad = parse_duration_or_never("forever");
  ASSERT_TRUE(std::holds_alternative<ParseError>(bad));
  EXPECT_NE(std::get<1>(bad).message.find("\"never\""), std::string::npos);
}

TEST(Duration, FormatsWithTheLargestExactUnit) {
  EXPECT_EQ(format_duration(0s), "0s");
  EXPECT_EQ(format_duration(61s), "61s");
  EXPECT_EQ(format_duration(120s), "2m");
  EXPECT_EQ(format_duration(7 * 24h), "7d");
}

TEST(Size, FormatsWithTheLargestExactUnitAndParsesBack) {
  EXPECT_EQ(format_size(0), "0");
  EXPECT_EQ(format_size(1000), "1000");
  EXPECT_EQ(format_size(1024), "1K");
  EXPECT_EQ(format_size(10ull << 20), "10M");
  EXPECT_EQ(format_size((1ull << 30) + (1ull << 20)), "1025M");
  EXPECT_EQ(format_size(3ull << 40), "3T");
  for (std::uint64_t n : {std::uint64_t(1), std::uint64_t(1536), std::uint64_t(288) << 20})
    EXPECT_EQ(std::get<std::uint64_t>(parse_size(format_size(n))), n);
}

TEST(Size, UnitsArePowersOf1024) {
  auto ok = [](std::string_view s) {
    auto r = parse_size(s);
    EXPECT_TRUE(std::holds_alternative<std::uint64_t>(r)) << s;
    return std::holds_alternative<std::uint64_t>(r) ? std::get<0>(r) : ~0ull;
  };
  EXPECT_EQ(ok("0"), 0u);
  EXPECT_EQ(ok("1024"), 1024u);
  EXPECT_EQ(ok("1024B"), 1024u);
  EXPECT_EQ(ok("4K"), 4096u);
  EXPECT_EQ(ok("4k"), 4096u);
  EXPECT_EQ(ok("512M"), 512ull << 20);
  EXPECT_EQ(ok("16G"), 16ull << 30);
  EXPECT_EQ(ok("16GiB"), 16ull << 30);
  EXPECT_EQ(ok("16GB"), 16ull << 30);
  EXPECT_EQ(ok("2T"), 2ull << 40);
}

TEST(Size, RejectsGarbage) {
  for (std::string_view s : {"", "G", "16X", "16Gb", "1.5G", "-1", "16 G", "99999999999T"}) {
    auto r = parse_size(s);
    EXPECT_TRUE(std::holds_alternative<ParseError>(r)) << s;
  }
}

}  // namespace
}  // namespace dedupd::daemon::config
