// FillRelay (daemon/api/routes/fill_relay.hpp): what of a fill's bytes
// reaches the answer's body, and when. Each chunk once it passed its check,
// the range's last chunk only once the whole range passed, nothing of a
// chunk that failed; a body no longer read stops the fill.
#include "daemon/api/routes/fill_relay.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "shard/keys.hpp"

namespace dedupd::daemon::api::routes {
namespace fill_relay_test {

using Bytes = std::vector<std::uint8_t>;

// A xorb of raw chunks (header, then the bytes as they are).
struct Xorb {
  std::vector<Bytes> data;
  std::vector<std::uint64_t> starts;  // of each chunk in bytes, and the end
  Bytes bytes;

  explicit Xorb(std::vector<std::size_t> sizes) {
    std::mt19937 rng(72);
    for (std::size_t n : sizes) {
      Bytes d(n);
      for (auto& b : d) b = std::uint8_t(rng());
      starts.push_back(bytes.size());
      const std::uint8_t head[] = {0, std::uint8_t(n), std::uint8_t(n >> 8), std::uint8_t(n >> 16),
                                   0, std::uint8_t(n), std::uint8_t(n >> 8), std::uint8_t(n >> 16)};
      bytes.insert(bytes.end(), std::begin(head), std::end(head));
      bytes.insert(bytes.end(), d.begin(), d.end());
      data.push_back(std::move(d));
    }
    starts.push_back(bytes.size());
  }
  // The whole xorb as a CAS would name it, its chunks known to the index.
  answers::RangeExpectation whole() const {
    answers::RangeExpectation e;
    std::vector<shard::HashAndSize> leaves;
    for (const auto& d : data) {
      const auto raw = shard::chunk_hash_of_data(d);
      leaves.push_back({raw, d.size()});
      e.known.push_back({raw, std::uint32_t(d.size())});
    }
    e.xorb = shard::xorb_hash(leaves);
    e.length = bytes.size();
    e.end_chunk = std::uint32_t(data.size());
    return e;
  }
};

// Everything the pipe lets a reader have now.
Bytes readable(http::BodyPipe& pipe, http::BodyPipe::Got* last = nullptr) {
  Bytes out;
  char buf[4096];
  for (;;) {
    auto r = pipe.read(buf, sizeof buf, [] {});
    if (r.got != http::BodyPipe::Got::bytes) {
      if (last) *last = r.got;
      return out;
    }
    out.insert(out.end(), buf, buf + r.n);
  }
}

Bytes slice(const Bytes& b, std::uint64_t from, std::uint64_t to) {
  return Bytes(b.begin() + std::ptrdiff_t(from), b.begin() + std::ptrdiff_t(to));
}

TEST(FillRelay, EachChunkGoesOnceCheckedAndTheLastOnceTheWholeRangePassed) {
  const Xorb x({3000, 5000, 1000, 7000, 2000});
  for (std::size_t piece : {1u, 999u, 6000u, 100000u}) {
    http::BodyPipe pipe(x.bytes.size(), 1 << 20);
    FillRelay relay(x.whole(), pipe);
    Bytes got;
    for (std::size_t at = 0; at < x.bytes.size(); at += piece) {
      const std::size_t n = std::min(piece, x.bytes.size() - at);
      ASSERT_TRUE(relay.feed(std::span<const std::uint8_t>(x.bytes).subspan(at, n)));
      Bytes now = readable(pipe);
      got.insert(got.end(), now.begin(), now.end());
      // Whole chunks that passed, the last one never.
      std::uint64_t passed = 0;
      for (std::size_t c = 0; c + 1 < x.data.size(); ++c)
        if (x.starts[c + 1] <= at + n) passed = x.starts[c + 1];
      ASSERT_EQ(got.size(), passed) << "piece " << piece << ", fed " << at + n;
    }
    EXPECT_EQ(got, slice(x.bytes, 0, x.starts[x.data.size() - 1]));
    auto checked = relay.finish();
    ASSERT_TRUE(checked) << checked.error().to_string();
    EXPECT_EQ(checked->level, answers::CheckLevel::xorb_hash);
    EXPECT_TRUE(pipe.length() > got.size());
    ASSERT_TRUE(relay.complete());
    http::BodyPipe::Got last{};
    Bytes rest = readable(pipe, &last);
    got.insert(got.end(), rest.begin(), rest.end());
    EXPECT_EQ(last, http::BodyPipe::Got::end);
    EXPECT_EQ(got, x.bytes);
  }
}

TEST(FillRelay, NothingOfAChunkThatFailsIsRelayed) {
  const Xorb x({3000, 5000, 1000, 7000, 2000});
  Bytes bad = x.bytes;
  bad[x.starts[2] + 8 + 500] ^= 1;  // a byte of chunk 2's data: its hash is not the index's
  http::BodyPipe pipe(bad.size(), 1 << 20);
  FillRelay relay(x.whole(), pipe);
  base::Result<std::monostate> fed = std::monostate{};
  for (std::size_t at = 0; fed && at < bad.size(); at += 1000)
    fed = relay.feed(std::span<const std::uint8_t>(bad).subspan(at, std::min<std::size_t>(1000, bad.size() - at)));
  ASSERT_FALSE(fed);
  EXPECT_EQ(fed.error().rule, "xet_download.verify");
  // Chunks 0 and 1 went as they passed; nothing of chunk 2 or after.
  EXPECT_EQ(readable(pipe), slice(x.bytes, 0, x.starts[2]));
}

TEST(FillRelay, ARangeThatFailsOnlyAtItsEndIsNeverWhole) {
  // Every chunk is the index's, but the merkle root is not the xorb's:
  // only the end can tell, and the last chunk was held back for it.
  const Xorb x({3000, 5000, 1000});
  auto e = x.whole();
  e.xorb.bytes[0] ^= 1;
  http::BodyPipe pipe(x.bytes.size(), 1 << 20);
  FillRelay relay(e, pipe);
  ASSERT_TRUE(relay.feed(x.bytes));
  auto checked = relay.finish();
  ASSERT_FALSE(checked);
  EXPECT_NE(checked.error().message.find("merkle root"), std::string::npos) << checked.error().message;
  EXPECT_EQ(readable(pipe), slice(x.bytes, 0, x.starts[2]));
  // The fill then fails its answer: its reader ends in error.
  pipe.fail();
  http::BodyPipe::Got last{};
  EXPECT_TRUE(readable(pipe, &last).empty());
  EXPECT_EQ(last, http::BodyPipe::Got::error);
}

TEST(FillRelay, ABodyNoLongerReadStopsTheFill) {
  const Xorb x({3000, 5000, 1000});
  http::BodyPipe pipe(x.bytes.size(), 1 << 20);
  FillRelay relay(x.whole(), pipe);
  pipe.close();  // nginx went away
  auto fed = relay.feed(x.bytes);
  ASSERT_FALSE(fed);
  EXPECT_EQ(fed.error().rule, kRelayGone);
}

}  // namespace fill_relay_test
}  // namespace dedupd::daemon::api::routes
