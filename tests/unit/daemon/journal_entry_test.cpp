// Journal entries in journald's native protocol: fields as "NAME=value"
// lines, a value with a newline in the binary form (its length as 64-bit
// little-endian before it).
#include "daemon/log/journal_entry.hpp"

#include <gtest/gtest.h>

#include <string>

namespace dedupd::daemon::log {
namespace {

TEST(JournalEntry, FieldsAreLinesOfNameAndValue) {
  EXPECT_EQ(journal_entry(6, "dedupd", "ready in 4.0 ms"),
            "PRIORITY=6\nSYSLOG_IDENTIFIER=dedupd\nMESSAGE=ready in 4.0 ms\n");
  EXPECT_EQ(journal_entry(3, "dedupd", ""), "PRIORITY=3\nSYSLOG_IDENTIFIER=dedupd\nMESSAGE=\n");
}

TEST(JournalEntry, AValueWithANewlineGoesWithItsLength) {
  const std::string message = "two lines:\nthe second";  // 21 bytes
  EXPECT_EQ(journal_entry(4, "dedupd", message),
            "PRIORITY=4\nSYSLOG_IDENTIFIER=dedupd\nMESSAGE\n" + std::string("\x15\0\0\0\0\0\0\0", 8) + message + "\n");
  const std::string long_one(300, '\n');  // 0x012c bytes
  const std::string head = "PRIORITY=6\nSYSLOG_IDENTIFIER=d\nMESSAGE\n";
  const std::string entry = journal_entry(6, "d", long_one);
  ASSERT_EQ(entry.size(), head.size() + 8 + 300 + 1);
  EXPECT_EQ(entry.substr(0, head.size()), head);
  EXPECT_EQ(entry.substr(head.size(), 8), std::string("\x2c\x01\0\0\0\0\0\0", 8));
  EXPECT_EQ(entry.substr(head.size() + 8), long_one + "\n");
}

}  // namespace
}  // namespace dedupd::daemon::log
