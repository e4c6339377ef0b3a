// What the endpoint's grant and fill answers refused or failed, by reason
// (daemon/answers/download_faults.hpp).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <thread>
#include <vector>

#include "daemon/answers/download_faults.hpp"

namespace dedupd::daemon::answers {
namespace {

std::map<std::string, std::uint64_t> as_map(const std::vector<std::pair<std::string, std::uint64_t>>& v) {
  return {v.begin(), v.end()};
}

TEST(DownloadFaults, EveryReasonIsListedAndCountsWhatHappened) {
  DownloadFaults faults;
  const auto none = faults.snapshot();
  ASSERT_EQ(none.refused.size(), kRefusals);
  ASSERT_EQ(none.fill_failed.size(), kFillFailures);
  for (const auto& [why, n] : none.refused) EXPECT_EQ(n, 0u) << why;
  EXPECT_EQ(none.refused.front().first, "malformed");
  EXPECT_EQ(none.refused.back().first, "off");

  faults.refused(Refusal::expired);
  faults.refused(Refusal::expired);
  faults.refused(Refusal::not_cached);
  faults.refused(Refusal::storage_refused);
  faults.fill_failed(FillFailure::check, 4096);
  faults.fill_failed(FillFailure::storage, 100);
  faults.fill_failed(FillFailure::check, 1);
  const auto got = faults.snapshot();
  auto refused = as_map(got.refused);
  EXPECT_EQ(refused["expired"], 2u);
  EXPECT_EQ(refused["not_cached"], 1u);
  EXPECT_EQ(refused["storage_refused"], 1u);
  EXPECT_EQ(refused["bad_signature"], 0u);
  EXPECT_EQ(refused.size(), kRefusals);  // every name is its own
  auto fills = as_map(got.fill_failed);
  EXPECT_EQ(fills, (std::map<std::string, std::uint64_t>{{"check", 2}, {"storage", 1}, {"local", 0}}));
  EXPECT_EQ(got.fill_failed_bytes, 4197u);
  EXPECT_EQ(got.cache_damaged, 0u);
  faults.cache_damaged();
  EXPECT_EQ(faults.snapshot().cache_damaged, 1u);
}

TEST(DownloadFaults, CountsFromManyThreadsAreAllKept) {
  DownloadFaults faults;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) {
        faults.refused(Refusal::wrong_range);
        faults.fill_failed(FillFailure::local, 2);
      }
    });
  for (auto& t : threads) t.join();
  const auto got = faults.snapshot();
  EXPECT_EQ(as_map(got.refused)["wrong_range"], 4000u);
  EXPECT_EQ(as_map(got.fill_failed)["local"], 4000u);
  EXPECT_EQ(got.fill_failed_bytes, 8000u);
}

}  // namespace
}  // namespace dedupd::daemon::answers
