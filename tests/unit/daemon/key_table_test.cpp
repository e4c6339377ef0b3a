// The key table (daemon/config/key_table.hpp) and the loader agree: every
// key of the table loads from a file into a field of its own and shows back
// as written; every section and key is registered once, documented, with
// the bounds the loader enforces in its words; unknown keys are answered
// with the table's names.
#include "daemon/config/key_table.hpp"

#include <gtest/gtest.h>

#include <set>

#include "tests/unit/daemon/config_samples.hpp"

namespace dedupd::daemon::config {
namespace {

using config_samples::samples;

const ConfigKey& key_named(const std::string& name) {
  const ConfigKey* k = find_config_key(name);
  if (k == nullptr) throw std::runtime_error("no key " + name + " in the table");
  return *k;
}

TEST(KeyTable, SamplesCoverTheTable) {
  std::vector<std::string> table, sampled;
  for (const auto& k : config_keys()) table.push_back(k.name);
  for (const auto& s : samples()) sampled.push_back(s.key);
  EXPECT_EQ(sampled, table) << "config_samples.hpp has one sample per key, in the table's order";
}

TEST(KeyTable, EveryKeyLoadsIntoAFieldOfItsOwn) {
  const Config defaults = installed_defaults();
  // What a key's rule sets besides it: a fleet's url and host come
  // together; the endpoint set in the file makes the caches' entry cap small.
  auto also_set = [](const std::string& key, const std::string& other) {
    if (key.starts_with("fleet.")) return other == "fleet.url" || other == "fleet.host";
    return key == "xet_endpoint.config" && other == "xet_cache.max_chunk_entries";
  };
  for (const auto& s : samples()) {
    SCOPED_TRACE(config_samples::file_setting(s));
    auto r = config_samples::load_setting(s);
    ASSERT_TRUE(std::holds_alternative<Config>(r)) << std::get<1>(r).front().to_string("sample.yaml");
    const Config& c = std::get<Config>(r);
    const ConfigKey& k = key_named(s.key);
    EXPECT_EQ(k.show(c), s.shown);
    EXPECT_NE(k.show(defaults), s.shown) << "the sample must change the key";
    EXPECT_FALSE(k.same(c, defaults));
    for (const auto& other : config_keys()) {
      if (other.name == s.key || also_set(s.key, other.name)) continue;
      EXPECT_EQ(other.show(c), other.show(defaults)) << other.name << " changed with " << s.key;
    }
  }
}

TEST(KeyTable, NamesAndSectionsAreRegisteredOnce) {
  std::set<std::string> names, sections_of_keys;
  for (const auto& k : config_keys()) {
    EXPECT_TRUE(names.insert(k.name).second) << k.name << " twice";
    // A section's keys, or one mapping of keys inside it (xet_endpoint.downloads.*).
    const auto inner = k.name.find('.', k.section().size() + 1);
    if (inner != std::string::npos) {
      EXPECT_EQ(k.name.find('.', inner + 1), std::string::npos) << k.name << ": two levels at most";
      EXPECT_FALSE(names.contains(k.name.substr(0, inner))) << k.name << ": its mapping is a key too";
    }
    if (!k.section().empty()) sections_of_keys.insert(std::string(k.section()));
  }
  std::set<std::string> sections;
  for (const auto& s : config_sections()) {
    EXPECT_TRUE(sections.insert(s.name).second) << s.name << " twice";
    EXPECT_FALSE(names.contains(s.name)) << s.name << " is a key and a section";
  }
  EXPECT_EQ(sections, sections_of_keys) << "every section has keys, every key's section is registered";
}

TEST(KeyTable, EveryKeyIsDocumentedWithTheBoundsTheLoaderEnforces) {
  for (const auto& k : config_keys()) {
    EXPECT_FALSE(k.doc.empty()) << k.name;
    EXPECT_EQ(k.doc.find('\n'), std::string::npos) << k.name << ": one line";
    EXPECT_FALSE(k.unset.empty()) << k.name;
    if (k.bounds.empty()) continue;
    EXPECT_NE(k.doc.find(k.bounds), std::string::npos) << k.name << " lacks " << k.bounds;
  }
  // The bounds are the loader's: one below is refused, the bound is taken.
  EXPECT_EQ(key_named("limits.max_body_bytes").bounds, "at least `1K`");
  EXPECT_EQ(key_named("global_dedup.key_rotation").bounds, "at least `1m`");
  EXPECT_EQ(key_named("fleet.reconcile_batch").bounds, "at least `1`");
  EXPECT_EQ(key_named("fleet.lookup_timeout").bounds, "`1ms` to `60s`");
  EXPECT_TRUE(std::holds_alternative<Config>(load_config_text("global_dedup:\n  key_rotation: 1m\n", "/")));
  EXPECT_FALSE(std::holds_alternative<Config>(load_config_text("global_dedup:\n  key_rotation: 59s\n", "/")));
  EXPECT_TRUE(std::holds_alternative<Config>(load_config_text("limits:\n  max_body_bytes: 1K\n", "/")));
  EXPECT_FALSE(std::holds_alternative<Config>(load_config_text("limits:\n  max_body_bytes: 1023\n", "/")));
}

// Each unknown key is answered with the names the table has there.
TEST(KeyTable, UnknownKeysListTheTablesNames) {
  EXPECT_EQ(config_names_under(""),
            "state_dir, socket, watch, expiry, quarantine_dir, admin_group, log_level, limits, global_dedup, "
            "xet_cache, xet_endpoint, fleet, index, metrics");
  for (const auto& s : config_sections()) {
    const std::string known = config_names_under(s.name);
    auto r = load_config_text(s.name + ":\n  url: postgresql://db\n  no_such_key: 1\n", "/");
    ASSERT_TRUE(std::holds_alternative<std::vector<ConfigError>>(r)) << s.name;
    bool found = false;
    for (const auto& e : std::get<1>(r))
      if (e.key == s.name + ".no_such_key") {
        found = true;
        EXPECT_EQ(e.message, "unknown key (known here: " + known + ")");
        EXPECT_EQ(e.line, 3);
      }
    EXPECT_TRUE(found) << s.name;
    for (const auto& k : config_keys()) {
      if (k.section() != s.name) continue;
      const std::string below = k.name.substr(s.name.size() + 1);  // a key, or a mapping's name first
      EXPECT_NE(known.find(below.substr(0, below.find('.'))), std::string::npos) << k.name;
    }
  }
  auto top = std::get<1>(load_config_text("state_dir: /x\nno_such_key: 1\n", "/"));
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(top[0].message, "unknown key (known here: " + config_names_under("") + ")");
}

// What an empty section means, as the table says.
TEST(KeyTable, EmptySections) {
  for (const auto& s : config_sections()) {
    auto r = load_config_text("log_level: info\n" + s.name + ":\n", "/");
    if (s.when_empty == WhenEmpty::refused) {
      ASSERT_TRUE(std::holds_alternative<std::vector<ConfigError>>(r)) << s.name;
      EXPECT_EQ(std::get<1>(r).at(0).key, s.name);
      EXPECT_EQ(std::get<1>(r).at(0).line, 2);
      EXPECT_EQ(std::get<1>(r).at(0).message, "expected a mapping (" + config_names_under(s.name) + ")");
      continue;
    }
    ASSERT_TRUE(std::holds_alternative<Config>(r)) << s.name;
    const Config& c = std::get<Config>(r);
    const Config expected = s.when_empty == WhenEmpty::defaults ? installed_defaults() : Config{};
    for (const auto& k : config_keys()) {
      if (k.section() != s.name) continue;
      EXPECT_TRUE(k.same(c, expected)) << k.name;
    }
  }
}

// The url may carry a password: the table never shows it.
TEST(KeyTable, TheFleetUrlIsNeverShown) {
  Config c = installed_defaults();
  c.fleet.url = "host=db password=s3cret";
  EXPECT_EQ(key_named("fleet.url").shown(c).find("s3cret"), std::string::npos);
  c.fleet.url.clear();
  EXPECT_EQ(key_named("fleet.url").shown(c), "none (no fleet)");
}

}  // namespace
}  // namespace dedupd::daemon::config
