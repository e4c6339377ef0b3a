// The text forms of a lookup answer, without a server.
#include "fleet/answer_text.hpp"

#include <gtest/gtest.h>

namespace dedupd::fleet {
namespace {

const std::string kHex1(64, 'a');
const std::string kHex2 = std::string(62, '0') + "01";

TEST(AnswerText, ShardListWithHolders) {
  auto refs = parse_shard_list(kHex1 + "=build-07,b.x " + kHex2 + "=");
  ASSERT_TRUE(refs) << refs.error().to_string();
  ASSERT_EQ(refs->size(), 2u);
  EXPECT_EQ((*refs)[0].shard.to_hex_bytes(), kHex1);
  EXPECT_EQ((*refs)[0].holders, (std::vector<std::string>{"build-07", "b.x"}));
  EXPECT_EQ((*refs)[1].shard.bytes[31], 1);
  EXPECT_TRUE((*refs)[1].holders.empty());
  auto none = parse_shard_list("");
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
}

TEST(AnswerText, MalformedShardListsAreProtocolErrors) {
  for (const std::string& bad :
       std::vector<std::string>{kHex1, "zz=a", kHex1 + "=a,,b", kHex1.substr(1) + "=a", kHex1 + "=a b"}) {
    auto r = parse_shard_list(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().rule, kRuleProtocol);
  }
}

std::string hex(const std::string& s) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out += d[c >> 4];
    out += d[c & 15];
  }
  return out;
}

// Schema 4: a shard's CAS set after its holders, as hex (a URL may hold ','
// or '='); a shard without one is of unknown CAS.
TEST(AnswerText, ShardListWithCasSets) {
  const std::string set = "http://127.0.0.1:8081 https://cas.example/a,b=c";
  auto refs = parse_shard_list(kHex1 + "=build-07,b.x;" + hex(set) + " " + kHex2 + "=;" + hex("https://x.example") +
                               " " + std::string(64, 'c') + "=a");
  ASSERT_TRUE(refs) << refs.error().to_string();
  ASSERT_EQ(refs->size(), 3u);
  EXPECT_EQ((*refs)[0].holders, (std::vector<std::string>{"build-07", "b.x"}));
  EXPECT_EQ((*refs)[0].cas, set);
  EXPECT_TRUE((*refs)[1].holders.empty());
  EXPECT_EQ((*refs)[1].cas, "https://x.example");
  EXPECT_EQ((*refs)[2].holders, std::vector<std::string>{"a"});
  EXPECT_EQ((*refs)[2].cas, "");
  for (const std::string& bad : std::vector<std::string>{
           kHex1 + "=a;", kHex1 + "=a;6", kHex1 + "=a;zz", kHex1 + "=a;" + hex(" x"), kHex1 + "=a;" + hex("x "),
           kHex1 + "=a;" + hex("x  y"), kHex1 + "=a;" + hex("x\ny"), kHex1 + "=a;" + hex("caf\xc3\xa9"),
           kHex1 + "=a;" + hex("x") + ";" + hex("y"), kHex1 + "=a;6" + std::string("8").append("G")}) {
    auto r = parse_shard_list(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().rule, kRuleProtocol);
  }
}

TEST(AnswerText, KeyLists) {
  auto keys = parse_key_list(kHex1 + "," + kHex2);
  ASSERT_TRUE(keys);
  ASSERT_EQ(keys->size(), 2u);
  EXPECT_EQ((*keys)[1].bytes[31], 1);
  EXPECT_TRUE(parse_key_list("")->empty());
  auto bad = parse_key_list(kHex1 + ",x");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().rule, kRuleProtocol);
}

}  // namespace
}  // namespace dedupd::fleet
