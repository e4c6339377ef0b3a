// When the keeper writes its file of key filters: at once when the set
// holds more filters than the file, else not before kSaveEvery, at stop
// whenever anything changed, and never when nothing did.
#include "daemon/fleet_link/kept_filters.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include "fleet/key_filters_file.hpp"

namespace dedupd::daemon::fleet_link {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

fleet::KeyFilters::Kept kept_of(std::uint8_t key_byte) {
  fleet::KeyFilters::Kept k;
  k.key.bytes[0] = key_byte;
  k.filter = std::make_shared<fleet::KeyFilter>(1000);
  return k;
}

struct Dir {
  fs::path path;
  Dir() {
    char tmpl[] = "/tmp/dedupd-kept-test-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~Dir() { fs::remove_all(path); }
};

std::size_t filters_in(const fs::path& file) {
  fleet::KeyFilters set(1 << 20);
  auto loaded = fleet::load_kept_filters(set, file);
  return loaded ? loaded->filters : 0;
}

TEST(KeptFilters, WrittenAtOnceForMoreFiltersElseNotBeforeItsIntervalAndAtStop) {
  Dir dir;
  const fs::path file = dir.path / "fleet-key-filters";
  auto set = std::make_shared<fleet::KeyFilters>(1 << 20);
  KeptFilters kept(file);
  const auto t0 = Clock::now();
  kept.load_into(set);  // no file yet: nothing
  kept.save_if_due(false, t0);
  EXPECT_FALSE(fs::exists(file)) << "nothing changed, nothing written";

  ASSERT_TRUE(set->adopt(kept_of(1)));
  kept.save_if_due(false, t0);
  EXPECT_EQ(filters_in(file), 1u) << "a filter more than the file: at once";

  // A change that adds no filter (one dropped, one taken in): not before
  // the interval, then written.
  set->keep_only_live({});
  ASSERT_TRUE(set->adopt(kept_of(2)));
  fs::remove(file);
  kept.save_if_due(false, t0 + KeptFilters::kSaveEvery / 2);
  EXPECT_FALSE(fs::exists(file)) << "within the interval";
  kept.save_if_due(false, t0 + KeptFilters::kSaveEvery + std::chrono::seconds(1));
  EXPECT_EQ(filters_in(file), 1u) << "past the interval";

  // At stop: whatever the time, if anything changed.
  set->keep_only_live({});
  ASSERT_TRUE(set->adopt(kept_of(3)));
  fs::remove(file);
  kept.save_if_due(true, t0 + KeptFilters::kSaveEvery + std::chrono::seconds(2));
  EXPECT_EQ(filters_in(file), 1u) << "at stop";
  fs::remove(file);
  kept.save_if_due(true, t0 + KeptFilters::kSaveEvery + std::chrono::seconds(3));
  EXPECT_FALSE(fs::exists(file)) << "at stop, nothing changed since";
}

TEST(KeptFilters, ASecondSetIsReadIntoOnlyOnceAndNoFileKeepsNothing) {
  Dir dir;
  const fs::path file = dir.path / "fleet-key-filters";
  {
    fleet::KeyFilters set(1 << 20);
    ASSERT_TRUE(set.adopt(kept_of(1)));
    ASSERT_TRUE(fleet::save_kept_filters(set, file));
  }
  auto set = std::make_shared<fleet::KeyFilters>(1 << 20);
  KeptFilters kept(file);
  kept.load_into(set);
  EXPECT_EQ(set->kept().size(), 1u);
  set->keep_only_live({});
  kept.load_into(set);
  EXPECT_TRUE(set->kept().empty()) << "the same set is not read into twice";

  KeptFilters none{fs::path{}};
  auto other = std::make_shared<fleet::KeyFilters>(1 << 20);
  none.load_into(other);
  ASSERT_TRUE(other->adopt(kept_of(4)));
  none.save_if_due(true);
  EXPECT_TRUE(other->kept().size() == 1u && fs::exists(file) && filters_in(file) == 1u)
      << "an empty path reads and writes nothing";
}

}  // namespace
}  // namespace dedupd::daemon::fleet_link
