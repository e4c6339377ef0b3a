// The JSON scanner under the download rewrite (daemon/answers/json_scan.hpp):
// it accepts what nlohmann's parser accepts and nothing else, decodes the
// strings and numbers the rewrite reads, and says where each value lies.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "daemon/answers/json_scan.hpp"

namespace dedupd::daemon::answers {
namespace json_scan_test {

// Whether the scanner takes `text` as one JSON value.
bool scans(std::string_view text) {
  JsonScanner s(text);
  return s.skip() && s.at_end();
}

bool nlohmann_takes(std::string_view text) { return !nlohmann::json::parse(text, nullptr, false).is_discarded(); }

TEST(JsonScan, TakesWhatNlohmannTakesAndRefusesWhatItRefuses) {
  const std::vector<std::string> texts = {
      // taken
      R"({})", R"([])", R"("")", "0", "-0", "1.5e3", "-12.25E-2", "true", "false", "null", " \t\r\n[1 , 2]\n",
      R"({"a":{"b":[{"c":null}]},"d":"\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00"})",
      "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"", "18446744073709551616", "-9223372036854775809", "1e308",
      R"([[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]])",
      // refused
      "", " ", "{", "[1,]", R"({"a":1,})", R"({"a" 1})", R"({1:2})", "[1 2]", "01", "1.", ".5", "1e", "-", "+1", "tru",
      "nul", "True", R"("a)", "\"a\nb\"", R"("\x")", R"("\u12")", R"("\ud800")", R"("\udc00")", R"("\ud800\u0041")",
      "\"\xc3\"", "\"\xc0\xaf\"", "\"\xed\xa0\x80\"", "\"\xf4\x90\x80\x80\"", "\"\xff\"", "1e999", "-1e999", "[1]]",
      "{} {}", "[1] x", "\xef\xbb\xbf{}", std::string("[1] \0 x", 7)};
  for (const std::string& t : texts) {
    // nlohmann skips a byte order mark and ends its input at a NUL byte;
    // the scanner refuses both (the rewrite then passes the answer on as it
    // came).
    if (t.starts_with("\xef\xbb\xbf") || t.find('\0') != std::string::npos) {
      EXPECT_TRUE(nlohmann_takes(t));
      EXPECT_FALSE(scans(t));
      continue;
    }
    EXPECT_EQ(scans(t), nlohmann_takes(t)) << t;
  }
}

TEST(JsonScan, DecodesStringsAndSaysWhereTheyLie) {
  const std::string text = R"({"url" : "https://s/x?a=1\u0026b=\"2\"", "n": 7})";
  JsonScanner s(text);
  ASSERT_TRUE(s.object());
  std::string key;
  bool first = true;
  ASSERT_TRUE(s.member(first, key));
  EXPECT_EQ(key, "url");
  JsonSpan at;
  auto url = s.string(&at);
  ASSERT_TRUE(url);
  EXPECT_EQ(*url, "https://s/x?a=1&b=\"2\"");
  EXPECT_EQ(text.substr(at.begin, at.size()), R"("https://s/x?a=1\u0026b=\"2\"")");
  ASSERT_TRUE(s.member(first, key));
  EXPECT_EQ(key, "n");
  EXPECT_EQ(s.unsigned_number(), 7u);
  EXPECT_FALSE(s.member(first, key));
  EXPECT_TRUE(s.at_end());
  EXPECT_FALSE(s.failed());
}

TEST(JsonScan, AByteThatNeedsDecodingIsFoundAtAnyPlaceOfAString) {
  // Plain strings are checked sixteen bytes at a time (SSE2), then eight,
  // then one: a control character, an escape or a non-ASCII byte at any
  // place (before, across and after each block's edge, at the end) must
  // take the careful path, and a string without one must not change.
  const std::vector<std::string> odd = {"\x01", "\x1f", "\\n",      "\\u0041", "\xc3\xa9", "\x7f",
                                        " ",    "~",    "\x80\x80", "\xff",    "\\\""};
  for (std::size_t at = 0; at < 41; ++at)
    for (std::size_t tail = 0; tail < 10; tail += 3)
      for (const std::string& o : odd) {
        const std::string text = "\"" + std::string(at, 'a') + o + std::string(tail, 'z') + "\"";
        const auto theirs = nlohmann::json::parse(text, nullptr, false);
        JsonScanner s(text);
        std::string scratch;
        auto ours = s.string_view(scratch);
        ASSERT_EQ(ours.has_value(), !theirs.is_discarded()) << text;
        if (ours) {
          EXPECT_EQ(*ours, theirs.get<std::string>()) << text;
        }
        JsonScanner again(text);
        auto decoded = again.string();
        EXPECT_EQ(decoded.has_value(), ours.has_value()) << text;
        if (decoded && ours) {
          EXPECT_EQ(*decoded, *ours);
        }
      }
}

TEST(JsonScan, UnsignedNumbersAreWholeNonNegativeAndFitSixtyFourBits) {
  auto number = [](std::string_view text) {
    JsonScanner s(text);
    auto v = s.unsigned_number();
    EXPECT_TRUE(s.at_end()) << text << ": " << s.error();
    return v;
  };
  EXPECT_EQ(number("0"), 0u);
  EXPECT_EQ(number("18446744073709551615"), UINT64_MAX);
  EXPECT_EQ(number("18446744073709551616"), std::nullopt);  // a double, as nlohmann reads it
  EXPECT_EQ(number("-0"), std::nullopt);
  EXPECT_EQ(number("-1"), std::nullopt);
  EXPECT_EQ(number("1.0"), std::nullopt);
  EXPECT_EQ(number("1e2"), std::nullopt);
  EXPECT_EQ(number(R"("1")"), std::nullopt);  // skipped: not a number
  EXPECT_EQ(number("[1]"), std::nullopt);
}

TEST(JsonScan, AnErrorSaysWhereAndStopsTheScanner) {
  JsonScanner s(R"({"a": [1, 2,, 3]})");
  EXPECT_FALSE(s.skip());
  EXPECT_TRUE(s.failed());
  EXPECT_NE(s.error().find("byte 12"), std::string::npos) << s.error();
  std::string key;
  bool first = true;
  EXPECT_FALSE(s.member(first, key));
  EXPECT_EQ(s.peek(), '\0');
  EXPECT_FALSE(s.at_end());
}

TEST(JsonScan, DeepNestingCostsNoStack) {
  const std::size_t depth = 200'000;
  EXPECT_TRUE(scans(std::string(depth, '[') + std::string(depth, ']')));
  EXPECT_FALSE(scans(std::string(depth, '[') + std::string(depth - 1, ']')));
}

}  // namespace json_scan_test
}  // namespace dedupd::daemon::answers
