#include "tests/unit/fleet/answer_support.hpp"

#include <gtest/gtest.h>

namespace dedupd::fleet::test {

PublishOutcome publish(Writer& w, const index::gen::OwnedShard& s, std::string_view cas) {
  auto r = w.publish(*s.view, s.hash, cas);
  EXPECT_TRUE(r) << (r ? "" : r.error().to_string());
  return r ? *r : PublishOutcome{};
}

index::gen::OwnedShard filter_shard(std::vector<const index::gen::GenXorb*> xorbs, std::uint64_t created, Key key) {
  index::gen::ShardSpec spec;
  spec.xorbs = std::move(xorbs);
  spec.created = created;
  spec.key = key;
  if (!key.is_zero()) spec.expiry = 4000000000ull;
  return index::gen::own(index::gen::build_shard(spec));
}

ChunkAnswers lookup(Reader& r, std::span<const Hash> hashes, bool fresh_holders) {
  ChunkAnswers out;
  auto ok = r.lookup_chunks(hashes, out, Deadline::in(kDeadline), fresh_holders);
  EXPECT_TRUE(ok) << (ok ? "" : ok.error().to_string());
  return out;
}

std::vector<std::string> describe(const ChunkAnswers& a) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < a.size(); ++i)
    for (const auto& l : a.of(i)) {
      std::string s = std::to_string(i) + " " + l.xorb.to_string() + " " + std::to_string(l.chunk_index) + " " +
                      std::to_string(l.byte_start) + "-" + std::to_string(l.byte_end) + " " +
                      std::to_string(l.unpacked_bytes) + " " + std::to_string(l.flags) + " " +
                      (l.keyed ? l.key.to_string() : "raw");
      for (const auto& sh : a.shards(l)) {
        s += " " + sh.shard.to_string();
        for (const auto& h : sh.holders) s += "," + h;
      }
      out.push_back(s);
    }
  return out;
}

}  // namespace dedupd::fleet::test
