// The README's table of keys is the key table's (daemon/config/key_docs.hpp):
// daemon/README.md holds exactly what `dedupd --config-table` prints, and
// that shows every key with its installed default.
#include "daemon/config/key_docs.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "daemon/config/key_table.hpp"

namespace dedupd::daemon::config {
namespace {

constexpr std::string_view kBegin = "<!-- config-table:";
constexpr std::string_view kEnd = "<!-- end of config-table -->";

TEST(ConfigTable, ReadmeHoldsTheGeneratedTable) {
  std::ifstream in(DEDUPD_README_FILE);
  ASSERT_TRUE(in) << DEDUPD_README_FILE;
  std::stringstream text;
  text << in.rdbuf();
  const std::string readme = text.str();
  const auto begin = readme.find(kBegin);
  ASSERT_NE(begin, std::string::npos) << "daemon/README.md lacks the mark " << kBegin;
  const auto first = readme.find('\n', begin) + 1;
  const auto end = readme.find(kEnd, first);
  ASSERT_NE(end, std::string::npos) << "daemon/README.md lacks the mark " << kEnd;
  EXPECT_EQ(readme.substr(first, end - first), config_table_markdown())
      << "daemon/README.md's table of keys is not the key table's: put the output of `dedupd --config-table` "
         "between its marks";
}

TEST(ConfigTable, EveryKeyIsARowWithItsInstalledDefault) {
  const std::string table = config_table_markdown();
  const Config defaults = installed_defaults();
  for (const auto& k : config_keys()) {
    const std::string value = k.show(defaults);
    const std::string row =
        "| `" + k.name + "` | " + (value.empty() ? k.unset : "`" + value + "`") + " | " + k.doc + " |\n";
    EXPECT_NE(table.find(row), std::string::npos) << row;
  }
  EXPECT_NE(table.find("| `state_dir` | `/var/lib/dedupd` |"), std::string::npos);
  EXPECT_NE(table.find("| `xet_endpoint.config` | `/etc/dedupd/xet-endpoint.conf` |"), std::string::npos);
  EXPECT_NE(table.find("| `metrics.listen` | off |"), std::string::npos);
  EXPECT_NE(table.find("| `xet_cache.max_bytes` | `16000000000` |"), std::string::npos);
  EXPECT_NE(table.find("until a restart, and names each one it finds changed: `state_dir`, `socket`,"),
            std::string::npos);
}

}  // namespace
}  // namespace dedupd::daemon::config
