// CAF bundles: our writer against bundles laid out by hand exactly as the
// public Go (JackalLabs/gocaf caf/caf.go, json.Marshal) and TypeScript
// (JackalLabs/jackal-js-worker src/cafSerializer.ts, JSON.stringify)
// implementations write them, every validation rule, and bundles of shards
// where one member is bad.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "shard/caf.hpp"
#include "shard/reader.hpp"
#include "test_support.hpp"

namespace dedupd::shard::caf {
namespace {

using Bytes = std::vector<std::uint8_t>;

Bytes bytes_of(std::string_view s) { return Bytes(s.begin(), s.end()); }

// data + index + u32 LE footer, as both public writers finalize.
Bytes assemble(std::string_view data, std::string_view index) {
  Bytes out = bytes_of(data);
  out.insert(out.end(), index.begin(), index.end());
  const auto n = static_cast<std::uint32_t>(index.size());
  for (int k = 0; k < 4; ++k) out.push_back(static_cast<std::uint8_t>(n >> (8 * k)));
  return out;
}

base::Error parse_error(const Bytes& b) {
  auto r = BundleView::parse(b);
  EXPECT_FALSE(r.ok());
  if (r.ok()) return base::Error{"<none>", 0, ""};
  return r.error();
}

std::string rule_of(const Bytes& b) { return parse_error(b).rule; }

struct Plain {
  std::string name;
  std::uint64_t start, end;
  std::string content;
  bool operator==(const Plain&) const = default;
};

std::vector<Plain> plain(const BundleView& v) {
  std::vector<Plain> out;
  for (const Member& m : v.members()) {
    out.push_back({m.name, m.start, m.end, std::string(m.bytes.begin(), m.bytes.end())});
  }
  return out;
}

// Members "b.mdb" then "a<&>.txt", added in that order.
const std::string kData = "BBBxx";
// What Go's json.Marshal writes for gocaf's CAFIndex: struct fields in
// declaration order, map keys sorted, <>& escaped, compact.
const std::string kGoIndex =
    R"({"format_version":"1.0","files":{"a\u003c\u0026\u003e.txt":{"start_byte":3,"end_byte":5},)"
    R"("b.mdb":{"start_byte":0,"end_byte":3}}})";
// What JSON.stringify writes: insertion order, no HTML escaping.
const std::string kTsIndex = R"({"format_version":"1.0","files":{"b.mdb":{"start_byte":0,"end_byte":3},)"
                             R"("a<&>.txt":{"start_byte":3,"end_byte":5}}})";

std::vector<MemberInput> two_members(const Bytes& b, const Bytes& a) { return {{"b.mdb", b}, {"a<&>.txt", a}}; }

TEST(CafWriter, ByteIdenticalToGoEncodingJson) {
  Bytes b = bytes_of("BBB"), a = bytes_of("xx");
  auto members = two_members(b, a);
  auto out = write_bundle(members);
  ASSERT_TRUE(out.ok()) << out.error().to_string();
  EXPECT_EQ(*out, assemble(kData, kGoIndex));
}

TEST(CafReader, GoTsAndOurBundlesParseIdentically) {
  Bytes b = bytes_of("BBB"), a = bytes_of("xx");
  auto members = two_members(b, a);
  auto ours = write_bundle(members);
  ASSERT_TRUE(ours.ok());
  Bytes go = assemble(kData, kGoIndex), ts = assemble(kData, kTsIndex);
  auto vo = BundleView::parse(*ours), vg = BundleView::parse(go), vt = BundleView::parse(ts);
  ASSERT_TRUE(vo.ok()) << vo.error().to_string();
  ASSERT_TRUE(vg.ok()) << vg.error().to_string();
  ASSERT_TRUE(vt.ok()) << vt.error().to_string();
  std::vector<Plain> expected = {{"b.mdb", 0, 3, "BBB"}, {"a<&>.txt", 3, 5, "xx"}};
  EXPECT_EQ(plain(*vo), expected);
  EXPECT_EQ(plain(*vg), expected);
  EXPECT_EQ(plain(*vt), expected);
  EXPECT_EQ(vg->format_version(), "1.0");
  EXPECT_EQ(vg->data_size(), 5u);
  EXPECT_EQ(vg->index_offset(), 5u);
  EXPECT_EQ(vg->index_size(), kGoIndex.size());
  ASSERT_EQ(vg->shard_members().size(), 1u);
  EXPECT_EQ(vg->shard_members()[0]->name, "b.mdb");
  ASSERT_EQ(vg->other_members().size(), 1u);
  EXPECT_EQ(vg->other_members()[0]->name, "a<&>.txt");
  ASSERT_NE(vg->find("a<&>.txt"), nullptr);
  EXPECT_EQ(vg->find("nope"), nullptr);
}

TEST(CafReader, MembersAreZeroCopySubspans) {
  Bytes go = assemble(kData, kGoIndex);
  auto v = BundleView::parse(go);
  ASSERT_TRUE(v.ok());
  for (const Member& m : v->members()) {
    EXPECT_EQ(m.bytes.data(), go.data() + m.start);
    EXPECT_EQ(m.bytes.size(), m.end - m.start);
  }
}

TEST(CafWriter, EmptyBundle) {
  auto out = write_bundle({});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, assemble("", R"({"format_version":"1.0","files":{}})"));
  auto v = BundleView::parse(*out);
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->members().empty());
}

TEST(CafWriter, GoStringEscapes) {
  EXPECT_EQ(go_json_string("plain/name.mdb"), R"("plain/name.mdb")");
  EXPECT_EQ(go_json_string("q\"b\\s"), R"("q\"b\\s")");
  EXPECT_EQ(go_json_string("<a&b>"), R"("\u003ca\u0026b\u003e")");
  EXPECT_EQ(go_json_string("\xE2\x80\xA8|\xE2\x80\xA9"), R"("\u2028|\u2029")");
  EXPECT_EQ(go_json_string("caf\xC3\xA9"), "\"caf\xC3\xA9\"");  // other UTF-8 as is
  EXPECT_EQ(go_json_string("\x7F"), "\"\x7F\"");                // DEL is not escaped by Go
  EXPECT_EQ(go_json_string("bad\xFF"), R"("bad\ufffd")");       // Go's replacement
}

TEST(CafWriter, SortsBytewiseLikeGo) {
  // Go sorts map keys by bytes: "B" < "a" < "\xC3\xA9".
  std::string json = encode_index_json({{"\xC3\xA9", 2, 3}, {"a", 1, 2}, {"B", 0, 1}});
  EXPECT_EQ(json,
            "{\"format_version\":\"1.0\",\"files\":{\"B\":{\"start_byte\":0,\"end_byte\":1},"
            "\"a\":{\"start_byte\":1,\"end_byte\":2},\"\xC3\xA9\":{\"start_byte\":2,\"end_byte\":3}}}");
}

TEST(CafWriter, RefusesUnsafeOrDuplicateNames) {
  Bytes x = bytes_of("x");
  const std::vector<std::string> bads = {"",          "../x.mdb",   "/abs.mdb", "a/../../x", std::string("a\0b", 3),
                                         "tab\there", "bad\xFFutf8"};
  for (const std::string& bad : bads) {
    std::vector<MemberInput> m = {{"ok.mdb", x}, {bad, x}};
    auto r = write_bundle(m);
    ASSERT_FALSE(r.ok()) << "accepted name " << bad;
    EXPECT_EQ(r.error().rule, "member.name");
    EXPECT_EQ(r.error().offset, 1u);
  }
  std::vector<MemberInput> dup = {{"a.mdb", x}, {"a.mdb", x}};
  auto r = write_bundle(dup);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().rule, "member.duplicate");
}

TEST(CafReader, NameSafety) {
  EXPECT_EQ(unsafe_name_reason("dir/sub/x.mdb"), "");
  EXPECT_EQ(unsafe_name_reason("..x/y..z/.../x.mdb"), "");  // only a whole ".." component
  EXPECT_NE(unsafe_name_reason(".."), "");
  EXPECT_NE(unsafe_name_reason("a/.."), "");
  EXPECT_NE(unsafe_name_reason("../a"), "");
  EXPECT_NE(unsafe_name_reason("/a"), "");
  EXPECT_NE(unsafe_name_reason(""), "");
  EXPECT_NE(unsafe_name_reason("a\nb"), "");
}

TEST(CafReader, TruncatedFooter) {
  for (std::size_t n = 0; n < 4; ++n) {
    Bytes b(n, 0);
    auto e = parse_error(b);
    EXPECT_EQ(e.rule, "footer.truncated");
    EXPECT_EQ(e.offset, 0u);
  }
}

TEST(CafReader, OversizeIndex) {
  Bytes b = assemble(kData, kGoIndex);
  b[b.size() - 4] = 0xFF;  // index size now larger than the file
  auto e = parse_error(b);
  EXPECT_EQ(e.rule, "footer.index_size");
  EXPECT_EQ(e.offset, b.size() - 4);
  Bytes just_fits = assemble("", "{}");
  just_fits[just_fits.size() - 4] = 3;  // one byte more than the file holds
  EXPECT_EQ(rule_of(just_fits), "footer.index_size");
}

TEST(CafReader, BadJson) {
  auto e = parse_error(assemble(kData, R"({"format_version":"1.0","files":{)"));
  EXPECT_EQ(e.rule, "index.json");
  EXPECT_GE(e.offset, kData.size());
  EXPECT_EQ(rule_of(assemble(kData, "")), "index.json");
  EXPECT_EQ(rule_of(assemble(kData, "not json")), "index.json");
  EXPECT_EQ(rule_of(assemble(kData, "[1,2]")), "index.schema");
  EXPECT_EQ(rule_of(assemble(kData, R"({"format_version":"1.0"})")), "index.schema");
  EXPECT_EQ(rule_of(assemble(kData, R"({"format_version":"1.0","files":[]})")), "index.schema");
}

TEST(CafReader, SpecExampleWithTrailingCommasIsRejected) {
  // The seed's example index, verbatim shape: trailing commas are not JSON,
  // and neither Go's json.Unmarshal nor JSON.parse accepts them.
  std::string spec = R"({
  "format_version": "1.0",
  "files": {
    "path/to/file1.jpg": {
      "start_byte": 0,
      "end_byte": 2,
    },
  }
})";
  auto e = parse_error(assemble("abc", spec));
  EXPECT_EQ(e.rule, "index.json");
  // Same content as valid JSON parses, with end_byte exclusive.
  std::string valid = R"({"format_version": "1.0", "files": {"path/to/file1.jpg": {"start_byte": 0, "end_byte": 2}}})";
  Bytes bundle = assemble("abc", valid);  // the view borrows these bytes
  auto v = BundleView::parse(bundle);
  ASSERT_TRUE(v.ok()) << v.error().to_string();
  EXPECT_EQ(std::string(v->members()[0].bytes.begin(), v->members()[0].bytes.end()), "ab");
}

TEST(CafReader, UnknownVersion) {
  EXPECT_EQ(rule_of(assemble(kData, R"({"format_version":"2.0","files":{}})")), "index.version");
  EXPECT_EQ(rule_of(assemble(kData, R"({"format_version":1.0,"files":{}})")), "index.version");
  EXPECT_EQ(rule_of(assemble(kData, R"({"files":{}})")), "index.version");
}

TEST(CafReader, RangeChecks) {
  auto idx = [](std::string files) { return R"({"format_version":"1.0","files":{)" + files + "}}"; };
  // end past the data section (5 bytes), start > end, end == data size OK.
  auto e = parse_error(assemble(kData, idx(R"("a.mdb":{"start_byte":0,"end_byte":6})")));
  EXPECT_EQ(e.rule, "member.range");
  EXPECT_EQ(e.offset, kData.size() + idx("").size() - 2);  // the key "a.mdb" in the index
  EXPECT_EQ(rule_of(assemble(kData, idx(R"("a.mdb":{"start_byte":4,"end_byte":3})"))), "member.range");
  EXPECT_EQ(rule_of(assemble(kData, idx(R"("a.mdb":{"start_byte":6,"end_byte":6})"))), "member.range");
  EXPECT_TRUE(BundleView::parse(assemble(kData, idx(R"("a.mdb":{"start_byte":0,"end_byte":5})"))).ok());
  EXPECT_TRUE(BundleView::parse(assemble(kData, idx(R"("a.mdb":{"start_byte":5,"end_byte":5})"))).ok());
  // Not non-negative integers.
  EXPECT_EQ(rule_of(assemble(kData, idx(R"("a.mdb":{"start_byte":-1,"end_byte":3})"))), "index.schema");
  EXPECT_EQ(rule_of(assemble(kData, idx(R"("a.mdb":{"start_byte":1.5,"end_byte":3})"))), "index.schema");
  EXPECT_EQ(rule_of(assemble(kData, idx(R"("a.mdb":{"start_byte":"0","end_byte":3})"))), "index.schema");
  EXPECT_EQ(rule_of(assemble(kData, idx(R"("a.mdb":{"end_byte":3})"))), "index.schema");
  EXPECT_EQ(rule_of(assemble(kData, idx(R"("a.mdb":[0,3])"))), "index.schema");
  EXPECT_EQ(rule_of(assemble(kData, idx(R"("a.mdb":{"start_byte":0,"end_byte":18446744073709551615})"))),
            "member.range");
}

TEST(CafReader, OverlappingRanges) {
  auto idx = [](std::string files) { return R"({"format_version":"1.0","files":{)" + files + "}}"; };
  EXPECT_EQ(rule_of(assemble(kData, idx(R"("a.mdb":{"start_byte":0,"end_byte":3},)"
                                        R"("b.mdb":{"start_byte":2,"end_byte":5})"))),
            "member.overlap");
  EXPECT_EQ(rule_of(assemble(kData, idx(R"("a.mdb":{"start_byte":0,"end_byte":5},)"
                                        R"("b.mdb":{"start_byte":1,"end_byte":2})"))),
            "member.overlap");
  // Adjacent, gaps and empty members are fine.
  Bytes bundle = assemble(kData, idx(R"("a.mdb":{"start_byte":0,"end_byte":2},)"
                                     R"("b.mdb":{"start_byte":3,"end_byte":5},)"
                                     R"("c.mdb":{"start_byte":3,"end_byte":3})"));
  auto v = BundleView::parse(bundle);
  ASSERT_TRUE(v.ok()) << v.error().to_string();
  EXPECT_EQ(v->members().size(), 3u);
}

TEST(CafReader, UnsafeNamesRejected) {
  auto idx = [](std::string name) {
    return R"({"format_version":"1.0","files":{")" + name + R"(":{"start_byte":0,"end_byte":1}}})";
  };
  for (std::string bad : {"../evil.mdb", "a/../../evil.mdb", "/etc/evil.mdb", "", "a\\u0000b.mdb", "a\\nb.mdb", ".."}) {
    auto e = parse_error(assemble(kData, idx(bad)));
    EXPECT_EQ(e.rule, "member.name") << bad;
    EXPECT_GE(e.offset, kData.size());
  }
  // Escaped slash is still a slash.
  EXPECT_EQ(rule_of(assemble(kData, idx("..\\/x.mdb"))), "member.name");
  EXPECT_TRUE(BundleView::parse(assemble(kData, idx("sub/dir/x..y.mdb"))).ok());
}

TEST(CafReader, InvalidUtf8InIndexRejected) {
  std::string index = "{\"format_version\":\"1.0\",\"files\":{\"\xFF.mdb\":{\"start_byte\":0,\"end_byte\":1}}}";
  EXPECT_EQ(rule_of(assemble(kData, index)), "index.json");
}

TEST(CafBundle, OneBadShardDoesNotBlockTheOthers) {
  Bytes good1 = testing::fixture_bytes();
  auto small = testing::small_shard();
  Bytes good2 = small.writer.write(WriteOptions{});
  Bytes bad = good1;
  bad[0] ^= 0xFF;  // header tag
  Bytes readme = bytes_of("not a shard");
  std::vector<MemberInput> members = {
      {"server.mdb", good1}, {"broken.mdb", bad}, {"README.txt", readme}, {"small/local.mdb", good2}};
  auto out = write_bundle(members);
  ASSERT_TRUE(out.ok()) << out.error().to_string();
  auto v = BundleView::parse(*out);
  ASSERT_TRUE(v.ok()) << v.error().to_string();

  // The daemon's loop: every *.mdb member parsed straight from its range.
  std::vector<std::string> ingested, failed;
  std::size_t chunks = 0;
  for (const Member* m : v->shard_members()) {
    auto shard = ShardView::parse(m->bytes);
    if (shard) {
      ingested.push_back(m->name);
      chunks += shard->stats().chunks;
    } else {
      failed.push_back(m->name + ": " + shard.error().rule);
    }
  }
  EXPECT_EQ(ingested, (std::vector<std::string>{"server.mdb", "small/local.mdb"}));
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].rfind("broken.mdb: ", 0), 0u);
  auto direct1 = ShardView::parse(good1);
  auto direct2 = ShardView::parse(good2);
  ASSERT_TRUE(direct1.ok() && direct2.ok());
  EXPECT_EQ(chunks, direct1->stats().chunks + direct2->stats().chunks);
  EXPECT_EQ(direct1->stats().chunks, 2117u);
  ASSERT_EQ(v->other_members().size(), 1u);
  EXPECT_EQ(v->other_members()[0]->name, "README.txt");
}

}  // namespace
}  // namespace dedupd::shard::caf
