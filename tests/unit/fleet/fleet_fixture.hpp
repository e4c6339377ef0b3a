// What the fleet tests against a real PostgreSQL share: a Writer and a
// Reader of a test's database, shards to publish, what a lookup names, and
// FleetTest, which gives each test a database of its own.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fleet/fleet.hpp"
#include "tests/unit/fleet/answer_support.hpp"
#include "tests/unit/fleet/pg_support.hpp"
#include "tests/unit/index/gen.hpp"

namespace dedupd::fleet::test {

using index::gen::GenXorb;
using index::gen::OwnedShard;
using index::gen::ShardSpec;

inline ConnectOptions options(const std::string& url, const std::string& host) {
  ConnectOptions o;
  o.url = url;
  o.host_name = host;
  o.retry_after = std::chrono::milliseconds(0);
  o.connect_timeout = kDeadline;  // a busy CI machine is not an outage
  return o;
}

inline std::unique_ptr<Writer> writer(const std::string& url, const std::string& host) {
  auto w = Writer::connect(options(url, host));
  EXPECT_TRUE(w) << (w ? "" : w.error().to_string());
  return w ? std::move(*w) : nullptr;
}

// holders_max_age 0: the holders as the database has them at each lookup
// (tests of what the writer changes in them).
inline std::unique_ptr<Reader> reader(const std::string& url,
                                      std::chrono::milliseconds holders_max_age = ConnectOptions{}.holders_max_age) {
  auto o = options(url, "reader");
  o.holders_max_age = holders_max_age;
  auto r = Reader::connect(o);
  EXPECT_TRUE(r) << (r ? "" : r.error().to_string());
  return r ? std::move(*r) : nullptr;
}

inline OwnedShard make_shard(std::vector<const GenXorb*> xorbs, std::uint64_t created, Key key = {},
                             std::optional<std::uint64_t> expiry = {}, std::vector<shard::FileRecord> files = {}) {
  ShardSpec spec;
  spec.xorbs = std::move(xorbs);
  spec.created = created;
  spec.key = key;
  spec.expiry = expiry;
  spec.files = std::move(files);
  return index::gen::own(index::gen::build_shard(spec));
}

// Holder names of every shard listing the location, "shard:host,host;...".
inline std::vector<std::string> holders(const ChunkAnswers& a, const ChunkLocation& l) {
  std::vector<std::string> out;
  for (const auto& s : a.shards(l)) {
    std::string names;
    for (const auto& h : s.holders) names += (names.empty() ? "" : ",") + h;
    out.push_back(names);
  }
  return out;
}

// The CASes of each shard a lookup names ("" unknown), in answer order.
inline std::vector<std::string> cas_of(const ChunkAnswers& a, const ChunkLocation& l) {
  std::vector<std::string> out;
  for (const auto& s : a.shards(l)) out.push_back(s.cas);
  return out;
}

class FleetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = Cluster::shared().new_database();
    url_ = Cluster::shared().primary_url(db_);
  }
  std::string db_, url_;
};

}  // namespace dedupd::fleet::test
