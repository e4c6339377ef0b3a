// The Bloom filter behind the Reader's key filters, without a server: it
// never forgets a prefix, and rules out nearly all others.
#include "fleet/key_filter.hpp"

#include <gtest/gtest.h>

#include <random>

namespace dedupd::fleet {
namespace {

TEST(KeyFilter, EveryAddedPrefixIsFoundAndFewOthersAre) {
  std::mt19937_64 rng(7);
  KeyFilter f(100'000);
  EXPECT_GE(f.capacity(), 100'000u);
  std::vector<std::int64_t> in(100'000);
  for (auto& p : in) {
    p = std::int64_t(rng());
    f.add(p);
  }
  EXPECT_EQ(f.added(), in.size());
  for (auto p : in) ASSERT_TRUE(f.may_contain(p)) << p;
  std::size_t false_positives = 0;
  for (int i = 0; i < 100'000; ++i) false_positives += f.may_contain(std::int64_t(rng()));
  EXPECT_LT(false_positives, 1'000u);  // under 1 %; about 0.2 % expected at capacity
}

// Fewer bits an entry: a smaller filter, more false positives, never a
// forgotten prefix. Any number of lines, not a power of two.
TEST(KeyFilter, AThinnerFilterForgetsNothingAndRulesOutMostOthers) {
  EXPECT_EQ(KeyFilter::bytes_for(100'000, 16), 3'125u * 64);
  EXPECT_EQ(KeyFilter::bytes_for(100'000, 4), 782u * 64);
  EXPECT_EQ(KeyFilter::bytes_for(100'000, 2), KeyFilter::bytes_for(100'000, KeyFilter::kMinBitsPerEntry));
  std::size_t previous = 0;
  for (int bits : {16, 8, 4}) {
    std::mt19937_64 rng(17);
    KeyFilter f(100'000, bits);
    EXPECT_EQ(f.bits_per_entry(), bits);
    EXPECT_EQ(f.bytes(), KeyFilter::bytes_for(100'000, bits));
    EXPECT_GE(f.capacity(), 100'000u);
    std::vector<std::int64_t> in(100'000);
    for (auto& p : in) {
      p = std::int64_t(rng());
      f.add(p);
    }
    for (auto p : in) ASSERT_TRUE(f.may_contain(p)) << bits << " " << p;
    std::size_t false_positives = 0;
    for (int i = 0; i < 100'000; ++i) false_positives += f.may_contain(std::int64_t(rng()));
    EXPECT_GT(false_positives, previous) << bits;
    EXPECT_LT(false_positives, 25'000u) << bits;  // about 15 % expected at 4 bits
    previous = false_positives;
  }
}

TEST(KeyFilter, PastItsCapacityItStillForgetsNothing) {
  KeyFilter f(10);
  std::vector<std::int64_t> in;
  for (std::int64_t i = 0; i < 5'000; ++i) {
    in.push_back(i * 7919);  // not hash-like: the filter mixes its input
    f.add(in.back());
  }
  for (auto p : in) ASSERT_TRUE(f.may_contain(p)) << p;
}

TEST(KeyFilter, AnEmptyFilterHoldsNothing) {
  KeyFilter f;
  std::mt19937_64 rng(3);
  for (int i = 0; i < 1'000; ++i) EXPECT_FALSE(f.may_contain(std::int64_t(rng())));
}

// The batch test answers what one test at a time answers, whatever the
// batch's size against the lines it keeps in flight.
TEST(KeyFilter, TestingManyAtOnceAnswersAsOneAtATime) {
  std::mt19937_64 rng(11);
  KeyFilter f(2'000);
  std::vector<std::int64_t> in(2'000);
  for (auto& p : in) {
    p = std::int64_t(rng());
    f.add(p);
  }
  std::vector<std::uint8_t> out{9, 9, 9};
  for (std::size_t n : {0, 1, 15, 16, 17, 33, 4'000}) {
    std::vector<std::int64_t> asked;
    for (std::size_t i = 0; i < n; ++i) asked.push_back(i % 2 ? in[i % in.size()] : std::int64_t(rng()));
    f.may_contain_many(asked, out);
    ASSERT_EQ(out.size(), n);
    std::size_t held = 0;
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(out[i], f.may_contain(asked[i]) ? 1 : 0) << n << " " << i;
      held += out[i];
    }
    EXPECT_GE(held, n / 2) << n;
  }
}

}  // namespace
}  // namespace dedupd::fleet
