#include "answers_test_support.hpp"

#include "shard/reader.hpp"

namespace dedupd::daemon::answers::testing {

std::unique_ptr<index::Index> open_test_index(const std::string& dir) {
  index::Options o;
  o.dir = dir + "/index";
  o.map_size = 64ull << 20;
  o.no_sync_for_benchmarks = true;
  auto opened = index::Index::open(o);
  EXPECT_TRUE(opened.ok()) << opened.error().to_string();
  return opened.ok() ? std::move(*opened) : nullptr;
}

shard::Hash ingest_xorbs(index::Index& index, const std::vector<shard::testing::TestXorb>& xorbs,
                         const TestShard& how) {
  shard::ShardWriter w;
  for (const auto& x : xorbs) w.add_xorb(x.record);
  shard::WriteOptions options;
  options.footer.creation_timestamp = how.created;
  options.footer.chunk_hash_key = how.key;
  options.footer.key_expiry = how.expiry.value_or(shard::kNoExpiry);
  auto bytes = w.write(options);
  auto view = shard::ShardView::parse(bytes);
  EXPECT_TRUE(view.ok()) << view.error().to_string();
  index::IngestOptions io;
  io.now = kNow;
  io.cas = how.cas;
  auto r = index.ingest(*view, index::SourceInfo{}, io);
  EXPECT_TRUE(r.ok()) << r.error().to_string();
  return r.ok() ? r->shard : shard::Hash{};
}

fleet::ChunkLocation fleet_location_of(const shard::Hash& raw) {
  fleet::ChunkLocation loc;
  loc.xorb = raw;
  loc.chunk_index = 7;
  loc.byte_start = 700;
  loc.byte_end = 800;
  loc.unpacked_bytes = 100;
  return loc;
}

std::vector<std::vector<shard::Hash>> FakeFleet::chunk_asks() const {
  std::lock_guard lock(mu_);
  return chunk_asks_;
}

Reach FakeFleet::chunks(std::span<const shard::Hash> raw, fleet::ChunkAnswers& out, bool* busy) {
  std::lock_guard lock(mu_);
  if (!on) return Reach::off;
  if (busy && busy_for > 0) {
    --busy_for;
    *busy = true;
    return Reach::unavailable;
  }
  chunk_asks_.emplace_back(raw.begin(), raw.end());
  if (unavailable_for > 0) {
    --unavailable_for;
    return Reach::unavailable;
  }
  out.clear();
  out.shard_sets.push_back({fleet::FleetShardRef{shard::testing::seeded_hash(5150), {"other-host"}, {}}});
  out.first.push_back(0);
  std::size_t answered = answer_short && !raw.empty() ? raw.size() - 1 : raw.size();
  for (std::size_t i = 0; i < answered; ++i) {
    if (known_chunks.contains(raw[i])) out.locations.push_back(fleet_location_of(raw[i]));
    out.first.push_back(std::uint32_t(out.locations.size()));
  }
  return reach;
}

Reach FakeFleet::xorb(const shard::Hash&, std::optional<fleet::XorbAnswer>& out) {
  if (!on) return Reach::off;
  ++other_asks;
  out = xorb_answer;
  return reach;
}

Reach FakeFleet::file(const shard::Hash&, std::optional<fleet::FileAnswer>& out) {
  if (!on) return Reach::off;
  ++other_asks;
  out = file_answer;
  return reach;
}

Reach FakeFleet::files_with_sha256(const shard::Hash&, std::vector<shard::Hash>& out) {
  if (!on) return Reach::off;
  ++other_asks;
  out = sha256_files;
  return reach;
}

Reach FakeFleet::source_shard(const shard::Hash&, const fleet::ShardXorbBounds& bounds, std::uint64_t now,
                              const std::optional<shard::CasScope>& scope,
                              const std::function<bool(const shard::Hash& shard)>& is_excluded,
                              std::optional<fleet::ShardXorbs>& out) {
  if (!on) return Reach::off;
  ++other_asks;
  source_bounds = bounds;
  source_now = now;
  source_scope = scope;
  out.reset();
  for (const fleet::ShardXorbs& candidate : source_candidates) {
    if (is_excluded(candidate.shard)) {
      excluded.push_back(candidate.shard);
      continue;
    }
    out = candidate;
    break;
  }
  return reach;
}

void AnswersTest::SetUp() {
  index_ = open_test_index(dir_.path());
  ASSERT_TRUE(index_);
  sources_.open_index = index_.get();
}

Lookups AnswersTest::lookups(Lookups::Scope scope) {
  return Lookups::open(sources_, scope).value();  // the index is open
}

}  // namespace dedupd::daemon::answers::testing
