// The body of POST /v1/chunk parsed as it arrives (daemon/api/http/
// batch_request): both forms, escapes, pieces of any size, and errors that
// name the byte or the line where the body went wrong.
#include "daemon/api/http/batch_request.hpp"

#include <gtest/gtest.h>

#include <string>
#include <variant>
#include <vector>

namespace dedupd::daemon::api::http {
namespace {

const std::string kA(64, 'a');
const std::string kB = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

std::vector<shard::Hash> ok(const HashBatch& b) {
  EXPECT_TRUE(std::holds_alternative<std::vector<shard::Hash>>(b))
      << (std::holds_alternative<std::string>(b) ? std::get<std::string>(b) : "");
  return std::holds_alternative<std::vector<shard::Hash>>(b) ? std::get<std::vector<shard::Hash>>(b)
                                                             : std::vector<shard::Hash>{};
}
std::string err(const HashBatch& b) {
  EXPECT_TRUE(std::holds_alternative<std::string>(b));
  return std::holds_alternative<std::string>(b) ? std::get<std::string>(b) : "";
}

TEST(BatchParser, PlainAndSpacedForms) {
  auto h = ok(parse_hash_batch("{\"hashes\":[\"" + kA + "\",\"" + kB + "\"]}", 10));
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[1].to_string(), kB);
  h = ok(parse_hash_batch(" {\n \"hashes\" : [ \"" + kA + "\" ,\n \"" + kB + "\" ] }\n", 10));
  EXPECT_EQ(h.size(), 2u);
  EXPECT_TRUE(ok(parse_hash_batch("{\"hashes\":[]}", 10)).empty());
  // Uppercase hex is a hash too.
  std::string upper(64, 'A');
  EXPECT_EQ(ok(parse_hash_batch("{\"hashes\":[\"" + upper + "\"]}", 10)).size(), 1u);
}

TEST(BatchParser, EscapesAreDecodedAndOtherFieldsRefused) {
  std::string escaped = kA;
  escaped.replace(0, 1, "\\u0061");
  auto h = ok(parse_hash_batch("{\"hashes\":[\"" + escaped + "\"]}", 10));
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].to_string(), kA);
  EXPECT_NE(err(parse_hash_batch("{\"x\":1,\"hashes\":[\"" + kA + "\"]}", 10)).find("unknown field \"x\""),
            std::string::npos);
  EXPECT_NE(err(parse_hash_batch("{\"hashes\":[],\"hashes\":[]}", 10)).find("twice"), std::string::npos);
}

// Bytes in pieces of any size give the same hashes as the whole body.
TEST(BatchParser, PiecesOfAnySizeGiveTheSameHashes) {
  struct Sink : HashSink {
    std::vector<shard::Hash> got;
    bool put(const shard::Hash& h) override {
      got.push_back(h);
      return true;
    }
  };
  const std::string json = " {\n \"hashes\" : [ \"" + kA + "\" ,\n \"" + kB + "\",\"" + kB + "\" ] }\n";
  const std::string lines = kA + "\n\n  " + kB + " \r\n" + kB;
  for (auto [form, body] : {std::pair{HashStreamParser::Form::json, json}, {HashStreamParser::Form::lines, lines}})
    for (std::size_t piece = 1; piece <= body.size(); ++piece) {
      HashStreamParser p(form);
      Sink sink;
      for (std::size_t at = 0; at < body.size(); at += piece)
        ASSERT_TRUE(p.feed(std::string_view(body).substr(at, piece), sink)) << p.error();
      ASSERT_TRUE(p.finish(sink)) << p.error();
      ASSERT_EQ(sink.got.size(), 3u) << piece;
      EXPECT_EQ(sink.got[0].to_string(), kA);
      EXPECT_EQ(sink.got[2].to_string(), kB);
    }
}

TEST(BatchParser, LinesErrorsNameTheLine) {
  struct Sink : HashSink {
    bool put(const shard::Hash&) override { return true; }
  } sink;
  HashStreamParser p(HashStreamParser::Form::lines);
  EXPECT_FALSE(p.feed(kA + "\n" + kB + "\nxyz\n", sink));
  EXPECT_NE(p.error().find("line 3 is not a hash"), std::string::npos) << p.error();
  HashStreamParser two(HashStreamParser::Form::lines);
  EXPECT_FALSE(two.feed(kA + " " + kB + "\n", sink));
  EXPECT_NE(two.error().find("line 1 has more than one word"), std::string::npos) << two.error();
  HashStreamParser open(HashStreamParser::Form::json);
  EXPECT_TRUE(open.feed("{\"hashes\":[\"" + kA, sink));
  EXPECT_FALSE(open.finish(sink));
  EXPECT_NE(open.error().find("ends at byte"), std::string::npos) << open.error();
}

TEST(BatchParser, ErrorsSayWhatIsWrong) {
  EXPECT_NE(err(parse_hash_batch("", 10)).find("not valid JSON"), std::string::npos);
  EXPECT_NE(err(parse_hash_batch("[1]", 10)).find("hashes"), std::string::npos);
  EXPECT_NE(err(parse_hash_batch("{\"hashes\":[\"" + kA + "\",\"xyz\"]}", 10)).find("hashes[1]"), std::string::npos);
  EXPECT_NE(err(parse_hash_batch("{\"hashes\":[\"" + kA + "\",7]}", 10)).find("hashes[1] is not a string"),
            std::string::npos);
  EXPECT_NE(err(parse_hash_batch("{\"hashes\":[\"" + kA + "\",\"" + kA + "\"]}", 1)).find("too many"),
            std::string::npos);
  EXPECT_NE(err(parse_hash_batch("{\"hashes\":[\"" + kA + "\"]} trailing", 10)).find("not valid JSON"),
            std::string::npos);
}

}  // namespace
}  // namespace dedupd::daemon::api::http
