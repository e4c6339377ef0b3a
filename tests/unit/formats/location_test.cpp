// dedupd's location records inside Software Heritage read shards
// (swh/location): layout and refusals.
#include <gtest/gtest.h>

#include "swh_support.hpp"

namespace dedupd::swh {
namespace {

using namespace testing;

TEST(SwhLocation, RoundTripAndLayout) {
  std::vector<Location> locs = {location_for(5, 0), location_for(5, 1)};
  Bytes enc = encode_locations(locs);
  ASSERT_EQ(enc.size(), 4u + 48u * 2);
  EXPECT_EQ(Bytes(enc.begin(), enc.begin() + 4), (Bytes{0, 0, 0, 2}));  // BE count
  EXPECT_EQ(Bytes(enc.begin() + 4, enc.begin() + 36), Bytes(locs[0].xorb.bytes.begin(), locs[0].xorb.bytes.end()));
  const std::uint32_t ci = locs[0].chunk_index;
  EXPECT_EQ(enc[36], ci >> 24);
  EXPECT_EQ(enc[39], ci & 0xFF);
  auto dec = decode_locations(enc);
  ASSERT_TRUE(dec.ok());
  EXPECT_EQ(*dec, locs);
}

TEST(SwhLocation, Rejects) {
  Bytes enc = encode_locations(std::vector<Location>{location_for(1, 0)});
  EXPECT_EQ(decode_locations(Bytes{0, 0}).error().rule, "location.size");
  EXPECT_EQ(decode_locations(Bytes{0, 0, 0, 0}).error().rule, "location.count");
  Bytes shorter(enc.begin(), enc.end() - 1);
  EXPECT_EQ(decode_locations(shorter).error().rule, "location.size");
  Bytes more = enc;
  more[3] = 2;
  EXPECT_EQ(decode_locations(more).error().rule, "location.size");
  Bytes inverted = enc;
  inverted[40] = 0xFF;  // byte start > byte end
  EXPECT_EQ(decode_locations(inverted).error().rule, "location.range");
}

}  // namespace
}  // namespace dedupd::swh
