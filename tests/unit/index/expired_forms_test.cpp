// What an expired shard held, kept a while so a query can say "expired".
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "index/index.hpp"
#include "index/records.hpp"
#include "index/tables.hpp"
#include "shard/mapped_file.hpp"
#include "tests/unit/index/layouts.hpp"
#include "tests/unit/index/support.hpp"

namespace dedupd::index::gen {
namespace {

using ::testing::IsEmpty;

// The forms of an expired shard are a hint kept 30 days from its expiry in
// the index, then dropped by a later expire(); the shard's record stays.
TEST_P(IndexTest, AnExpiredShardsFormsAreKeptThirtyDaysThenDropped) {
  auto file = shard::MappedFile::open(std::string(DEDUPD_FIXTURE_DIR) + "/gpt2-64-8bits.tflite.shard");
  ASSERT_TRUE(file);
  auto view = shard::ShardView::parse(file->bytes());
  ASSERT_TRUE(view);
  ASSERT_TRUE(idx->ingest(*view, SourceInfo{"/f.mdb", 1, 1}, IngestOptions{.now = 1754000000}));
  const Hash raw = *Hash::parse("9502eec19d4b0c9f7b389228fa801f68ecdf15d69ccd1da2f9ddbd0219898335");
  EXPECT_THAT(*idx->expired_holders(raw), IsEmpty()) << "live: found, not expired";
  ASSERT_TRUE(idx->expire(1754664705));
  const std::uint64_t day = 24 * 3600;
  ASSERT_TRUE(idx->expire(1754664705 + 30 * day - 1));
  EXPECT_EQ(idx->expired_holders(raw)->size(), 1u);
  ASSERT_TRUE(idx->expire(1754664705 + 30 * day));
  EXPECT_THAT(*idx->expired_holders(raw), IsEmpty());
  EXPECT_EQ(idx->shards(ShardState::expired)->size(), 1u);
  EXPECT_THAT(problems(), IsEmpty());
}

}  // namespace
}  // namespace dedupd::index::gen
