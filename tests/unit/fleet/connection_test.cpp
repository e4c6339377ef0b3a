// One non-blocking libpq connection (fleet/connection) against the fixture's
// PostgreSQL: rows read in binary, cells of the wrong size read as nothing,
// a refused statement names its SQLSTATE and leaves the connection usable,
// and a statement past its bound, or interrupted by its owner, leaves it
// broken (to be dropped), never waiting on.
#include "fleet/connection.hpp"

#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <string>

#include "fleet/errors.hpp"
#include "fleet/wire.hpp"
#include "tests/unit/fleet/fleet_fixture.hpp"

namespace dedupd::fleet::test {
namespace {

using detail::Connection;
using detail::Role;
using namespace std::chrono_literals;

class ConnectionTest : public FleetTest {
 protected:
  std::unique_ptr<Connection> open(const std::string& url, Role role = Role::primary, int interrupt = -1) {
    auto c = Connection::open_until(url, role, std::chrono::steady_clock::now() + kDeadline, interrupt);
    EXPECT_TRUE(c) << (c ? "" : c.error().to_string());
    return c ? std::move(*c) : nullptr;
  }
};

TEST_F(ConnectionTest, RowsComeInBinaryAndReadAsTheirTypes) {
  auto c = open(url_);
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->broken());
  const std::array<std::uint8_t, 3> blob{1, 2, 255};
  auto rows = c->exec("SELECT $1::int8, $2::int4, $3::bool, $4::bytea, $5::text, NULL::int8",
                      wire::Params().int8(-5'000'000'000).int4(-7).boolean(true).bytea(blob).text("héllo"));
  ASSERT_TRUE(rows) << rows.error().to_string();
  ASSERT_EQ(rows->size(), 1);
  EXPECT_EQ(rows->int8(0, 0), -5'000'000'000);
  EXPECT_EQ(rows->int4(0, 1), -7);
  EXPECT_TRUE(rows->boolean(0, 2));
  EXPECT_EQ(std::vector<std::uint8_t>(rows->bytes(0, 3).begin(), rows->bytes(0, 3).end()),
            std::vector<std::uint8_t>(blob.begin(), blob.end()));
  EXPECT_EQ(rows->text(0, 4), "héllo");
  EXPECT_TRUE(rows->null(0, 5));
  EXPECT_FALSE(rows->null(0, 0));
  EXPECT_EQ(c->last_sqlstate(), "");
}

TEST_F(ConnectionTest, ACellOfTheWrongSizeReadsAsNothing) {
  auto c = open(url_);
  ASSERT_TRUE(c);
  auto rows = c->exec("SELECT 7::int4, 7::int8, NULL::int8, '\\x0102'::bytea");
  ASSERT_TRUE(rows) << rows.error().to_string();
  EXPECT_EQ(rows->int8(0, 0), 0) << "an int4 is no int8";
  EXPECT_EQ(rows->int4(0, 1), 0) << "an int8 is no int4";
  EXPECT_EQ(rows->int8(0, 2), 0);
  EXPECT_FALSE(rows->boolean(0, 2));
  EXPECT_TRUE(rows->hash(0, 3).is_zero()) << "two bytes are no hash";
  EXPECT_EQ(detail::Rows().size(), 0);
}

TEST_F(ConnectionTest, ScriptsAndWritesSayHowManyRowsTheyTouched) {
  auto c = open(url_);
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->exec_script("CREATE TABLE t (n int8); INSERT INTO t SELECT generate_series(1, 5);"));
  auto updated = c->exec("UPDATE t SET n = n + 1 WHERE n > $1", wire::Params().int8(2));
  ASSERT_TRUE(updated) << updated.error().to_string();
  EXPECT_EQ(updated->affected(), 3u);
  auto sum = c->exec("SELECT sum(n)::int8 FROM t");
  ASSERT_TRUE(sum);
  EXPECT_EQ(sum->int8(0, 0), 1 + 2 + 4 + 5 + 6);
  EXPECT_EQ(sum->affected(), 1u) << "a SELECT's count is its rows";
}

TEST_F(ConnectionTest, CopyInTakesABinaryBody) {
  auto c = open(url_);
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->exec_script("CREATE TABLE c (a int8, b int4)"));
  wire::CopyBody body;
  for (int i = 0; i < 1000; ++i) {
    body.begin_row(2);
    body.int8(std::int64_t(i) << 33);
    body.int4(i);
  }
  auto copied = c->copy_in("COPY c (a, b) FROM STDIN (FORMAT binary)", body.finish());
  ASSERT_TRUE(copied) << copied.error().to_string();
  auto rows = c->exec("SELECT count(*)::int8, max(a), sum(b)::int8 FROM c");
  ASSERT_TRUE(rows);
  EXPECT_EQ(rows->int8(0, 0), 1000);
  EXPECT_EQ(rows->int8(0, 1), std::int64_t(999) << 33);
  EXPECT_EQ(rows->int8(0, 2), 999 * 1000 / 2);
  // A COPY the server refuses names it, and the connection goes on.
  auto refused = c->copy_in("COPY missing_table FROM STDIN (FORMAT binary)", wire::CopyBody().finish());
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().rule, kRuleQuery);
  EXPECT_NE(refused.error().message.find("COPY did not start"), std::string::npos) << refused.error().message;
  EXPECT_EQ(c->last_sqlstate(), "42P01");
  EXPECT_TRUE(c->exec("SELECT 1"));
}

TEST_F(ConnectionTest, ARefusedStatementNamesItsStateAndTheConnectionGoesOn) {
  auto c = open(url_);
  ASSERT_TRUE(c);
  auto bad = c->exec("SELEC 1");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().rule, kRuleQuery);
  EXPECT_NE(bad.error().message.find("syntax error"), std::string::npos) << bad.error().message;
  EXPECT_EQ(c->last_sqlstate(), "42601");
  EXPECT_FALSE(c->broken());
  // In a transaction: the failure aborts it, ROLLBACK keeps the state to
  // read, and the connection is usable again.
  ASSERT_TRUE(c->exec("BEGIN"));
  auto zero = c->exec("SELECT 1 / 0");
  ASSERT_FALSE(zero);
  EXPECT_EQ(c->last_sqlstate(), "22012");
  c->rollback();
  EXPECT_EQ(c->last_sqlstate(), "22012");
  auto ok = c->exec("SELECT 2::int8");
  ASSERT_TRUE(ok) << ok.error().to_string();
  EXPECT_EQ(ok->int8(0, 0), 2);
  EXPECT_EQ(c->last_sqlstate(), "") << "a statement that ran clears it";
}

TEST_F(ConnectionTest, PreparedStatementsRunByName) {
  auto c = open(url_);
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->prepare_until("twice", "SELECT $1::int8 * 2", 1, Deadline::in(kDeadline)));
  auto r = c->exec_prepared_until("twice", wire::Params().int8(21), Deadline::in(kDeadline));
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(r->int8(0, 0), 42);
  auto missing = c->exec_prepared_until("never_prepared", wire::Params(), Deadline::in(kDeadline));
  ASSERT_FALSE(missing);
  EXPECT_EQ(c->last_sqlstate(), "26000");
  auto twice = c->prepare_until("twice", "SELECT 1", 0, Deadline::in(kDeadline));
  ASSERT_FALSE(twice);
  EXPECT_EQ(c->last_sqlstate(), "42P05");
}

TEST_F(ConnectionTest, AStatementPastItsBoundLeavesTheConnectionBroken) {
  auto c = open(url_);
  ASSERT_TRUE(c);
  c->set_statement_timeout(200ms);
  auto slow = c->exec("SELECT pg_sleep(10)");
  ASSERT_FALSE(slow);
  EXPECT_EQ(slow.error().rule, kRuleTimeout);
  EXPECT_TRUE(c->broken());
  EXPECT_EQ(c->server(), "") << "closed at once";
  auto again = c->exec_until("SELECT 1", {}, Deadline::in(kDeadline));
  EXPECT_FALSE(again) << "a broken connection runs nothing";
}

TEST_F(ConnectionTest, ItsOwnersStopEndsAWaitAndSaysSo) {
  const int stop = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  ASSERT_GE(stop, 0);
  auto c = open(url_, Role::primary, stop);
  ASSERT_TRUE(c);
  const std::uint64_t one = 1;
  ASSERT_EQ(::write(stop, &one, sizeof one), ssize_t(sizeof one));
  auto r = c->exec_until("SELECT pg_sleep(10)", {}, Deadline::in(kDeadline));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().rule, kRuleTimeout);
  EXPECT_EQ(r.error().message, "stopped while waiting for the fleet database");
  EXPECT_TRUE(c->broken());
  // Connecting with the stop raised ends as soon.
  auto never = Connection::open_until(url_, Role::primary, std::chrono::steady_clock::now() + kDeadline, stop);
  ASSERT_FALSE(never);
  EXPECT_EQ(never.error().rule, kRuleTimeout);
  EXPECT_EQ(never.error().message, "stopped while connecting to the fleet database");
  ::close(stop);
}

TEST_F(ConnectionTest, NoServerIsAConnectErrorAndAStandbyIsPreferredWhenAsked) {
  auto nowhere = Connection::open_until("host=" + Cluster::shared().dir() + "/no-such-dir port=1 dbname=x",
                                        Role::primary, std::chrono::steady_clock::now() + kDeadline);
  ASSERT_FALSE(nowhere);
  EXPECT_EQ(nowhere.error().rule, kRuleConnect);
  EXPECT_NE(nowhere.error().message.find("cannot connect"), std::string::npos) << nowhere.error().message;

  const std::string both = Cluster::shared().both_url(db_);
  auto primary = open(both, Role::primary);
  ASSERT_TRUE(primary);
  auto in_recovery = primary->exec("SELECT pg_is_in_recovery()");
  ASSERT_TRUE(in_recovery);
  EXPECT_FALSE(in_recovery->boolean(0, 0));
  Cluster::shared().wait_standby_caught_up();
  auto standby = open(both, Role::prefer_standby);
  ASSERT_TRUE(standby);
  in_recovery = standby->exec("SELECT pg_is_in_recovery()");
  ASSERT_TRUE(in_recovery);
  EXPECT_TRUE(in_recovery->boolean(0, 0));
  EXPECT_NE(standby->server(), primary->server());
  EXPECT_NE(primary->server().find(':'), std::string::npos) << primary->server();
}

}  // namespace
}  // namespace dedupd::fleet::test
