// What a Reader's lookup sends and how it reads the key rows of the answer
// (fleet/reader_sql), against the fixture's PostgreSQL: the statements run on
// the fleet's schema, the live keys and the epoch come back, a key row in any
// doubt is a protocol error naming it, and the xorb cache's era follows the
// epoch.
#include "fleet/reader_sql.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fleet/connection.hpp"
#include "fleet/errors.hpp"
#include "fleet/partitions.hpp"
#include "fleet/schema_version.hpp"
#include "fleet/wire.hpp"
#include "fleet/xorb_cache.hpp"
#include "tests/unit/fleet/fleet_fixture.hpp"

namespace dedupd::fleet::test {
namespace {

using detail::Connection;
using detail::LiveKey;

class ReaderSqlTest : public FleetTest {
 protected:
  void SetUp() override {
    FleetTest::SetUp();
    auto c = Connection::open_until(url_, detail::Role::primary, std::chrono::steady_clock::now() + kDeadline);
    ASSERT_TRUE(c) << c.error().to_string();
    conn = std::move(*c);
  }

  // The key rows read from the answer to `sql`.
  Result<reader_sql::KeyRows> key_rows_of(const std::string& sql, std::vector<LiveKey>& live,
                                          const wire::Params& params = {}) {
    auto rows = conn->exec(sql.c_str(), params);
    EXPECT_TRUE(rows) << (rows ? "" : rows.error().to_string());
    if (!rows) return rows.error();
    answer = std::move(*rows);  // the views point into it
    return reader_sql::read_key_rows(answer, live);
  }

  std::string protocol_error(const std::string& sql) {
    std::vector<LiveKey> live;
    auto r = key_rows_of(sql, live);
    if (r) return "<read>";
    EXPECT_EQ(r.error().rule, kRuleProtocol);
    return r.error().message;
  }

  std::unique_ptr<Connection> conn;
  detail::Rows answer;
};

TEST_F(ReaderSqlTest, AFreshFleetHasOnlyTheRawFormsAndAnEpoch) {
  ASSERT_TRUE(schema::migrate(*conn)) << "the fleet's schema";
  std::vector<LiveKey> live{LiveKey{9, {}, "stale"}};
  auto rows = key_rows_of(reader_sql::key_rows_sql(), live);
  ASSERT_TRUE(rows) << rows.error().to_string();
  ASSERT_EQ(live.size(), 1u) << "what was there before is dropped";
  EXPECT_TRUE(live[0].raw());
  EXPECT_TRUE(live[0].key.is_zero());
  EXPECT_EQ(live[0].generation.rfind("raw ", 0), 0u) << live[0].generation;
  EXPECT_EQ(rows->digest, "");
  EXPECT_FALSE(rows->epoch.empty());
  // The epoch is the same while the server and the tables are.
  const std::string first_epoch(rows->epoch);
  std::vector<LiveKey> again;
  auto second = key_rows_of(reader_sql::key_rows_sql(), again);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->epoch, first_epoch);
}

TEST_F(ReaderSqlTest, TheProbesRunOnTheSchemaAndEndInTheKeyRows) {
  ASSERT_TRUE(schema::migrate(*conn));
  for (bool with_entries : {false, true}) {
    SCOPED_TRACE(with_entries);
    const std::string& sql = reader_sql::lookup_sql(with_entries);
    wire::Params params;
    std::vector<std::int64_t> none;
    for (int i = 0; i < schema::kChunkPartitions; ++i) params.int8_array(none);
    std::vector<LiveKey> live;
    auto rows = key_rows_of(sql, live, params);
    ASSERT_TRUE(rows) << rows.error().to_string();
    EXPECT_EQ(live.size(), 1u);
    EXPECT_EQ(answer.size(), 2) << "no hit: the raw row and the key list";
  }
  EXPECT_NE(&reader_sql::lookup_sql(true), &reader_sql::lookup_sql(false));
  EXPECT_EQ(&reader_sql::lookup_sql(true), &reader_sql::lookup_sql(true)) << "built once";
}

TEST_F(ReaderSqlTest, KeyRowsAreReadAndHitRowsPassedOver) {
  const std::string key(64, 'a');
  std::vector<LiveKey> live;
  auto rows = key_rows_of(
      "SELECT 5::int8, 1::int8, NULL::text "
      "UNION ALL SELECT NULL, 7, '" +
          key +
          " 1234' "
          "UNION ALL SELECT NULL, 0, '" +
          std::string(64, '0') +
          " raw x' "
          "UNION ALL SELECT NULL, NULL, '" +
          key + "|e.1.2.3'",
      live);
  ASSERT_TRUE(rows) << rows.error().to_string();
  ASSERT_EQ(live.size(), 2u);
  EXPECT_EQ(live[0].id, 7);
  EXPECT_EQ(live[0].key.to_hex_bytes(), key);
  EXPECT_EQ(live[0].generation, "1234");
  EXPECT_TRUE(live[1].raw());
  EXPECT_EQ(live[1].generation, "raw x");
  EXPECT_EQ(rows->digest, key);
  EXPECT_EQ(rows->epoch, "e.1.2.3");
}

TEST_F(ReaderSqlTest, AKeyRowInAnyDoubtIsAProtocolError) {
  const std::string key(64, 'b');
  EXPECT_EQ(protocol_error("SELECT NULL::int8, 3::int8, NULL::text"), "lookup answer with an empty key row");
  EXPECT_EQ(protocol_error("SELECT NULL::int8, NULL::int8, 'no bar here'"), "lookup answer with a malformed key list");
  EXPECT_EQ(protocol_error("SELECT NULL::int8, 3::int8, '" + key + "'"), "lookup answer with a malformed key row")
      << "no generation";
  EXPECT_EQ(protocol_error("SELECT NULL::int8, 3::int8, 'xyz 1'"), "lookup answer with a malformed key row")
      << "no key";
  EXPECT_EQ(protocol_error("SELECT NULL::int8, 3::int4, '" + key + " 1'"), "lookup answer with a malformed key row")
      << "an id not of int8";
  EXPECT_EQ(protocol_error("SELECT NULL::int8, 3::int8, '" + key + " 1'"), "lookup answer without the key list");
  EXPECT_EQ(protocol_error("SELECT 1::int8, 3::int8, 'x' WHERE false"), "lookup answer without the key list");
}

TEST(ReaderSqlEpoch, TheCachesEraFollowsTheEpochAndItsClearing) {
  XorbCache cache(1 << 20);
  std::string known;
  std::uint32_t era = 0;
  reader_sql::note_epoch(cache, known, era, "server-a.1.2.3");
  EXPECT_EQ(known, "server-a.1.2.3");
  const std::uint32_t first = era;
  EXPECT_NE(first, 0u);
  reader_sql::note_epoch(cache, known, era, "server-a.1.2.3");
  EXPECT_EQ(era, first) << "the same tables, the same era";
  reader_sql::note_epoch(cache, known, era, "server-b.1.2.3");
  EXPECT_EQ(known, "server-b.1.2.3");
  EXPECT_NE(era, first);
  const std::uint32_t second = era;
  cache.clear();
  reader_sql::note_epoch(cache, known, era, "server-b.1.2.3");
  EXPECT_NE(era, second) << "the cache's owner ended every era";
  EXPECT_NE(era, first);
}

}  // namespace
}  // namespace dedupd::fleet::test
