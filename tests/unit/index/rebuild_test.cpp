// Rebuilt means equal: every shard the index accepts comes back from
// Index::rebuild_shard (what the fleet publisher sends) with the content the
// original had, and parses. Property-style: every committed shard fixture
// and generated shards of every shape go through ingest, rebuild, parse and
// a field-by-field comparison, all in one index, so records shared between
// shards (the empty file, a file one shard describes more richly than
// another) are part of the test.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

#include "tests/unit/index/support.hpp"

namespace dedupd::index {
namespace {

using gen::OwnedShard;

std::string hex_of(const Hash& h) { return h.to_string(); }

// What the index keeps of a shard, in the shard's order: each xorb and file
// once (the first time it is listed), which is what a rebuild can give back.
struct ShardContent {
  std::vector<shard::XorbBlock> xorbs;
  std::vector<shard::FileBlock> files;
};

ShardContent distinct_content(const shard::ShardView& v) {
  ShardContent c;
  std::set<Hash> xs, fs;
  for (const auto& x : v.xorbs())
    if (xs.insert(x.hash()).second) c.xorbs.push_back(x);
  for (const auto& f : v.files())
    if (fs.insert(f.hash()).second) c.files.push_back(f);
  return c;
}

// Every difference between the original and the rebuilt shard, named.
std::vector<std::string> differences(const shard::ShardView& a, const shard::ShardView& b) {
  std::vector<std::string> out;
  auto diff = [&](bool same, const std::string& what) {
    if (!same) out.push_back(what);
  };
  ShardContent x = distinct_content(a), y = distinct_content(b);
  diff(a.chunk_key() == b.chunk_key(), "key");
  diff(a.expiry() == b.expiry(), "expiry");
  if (a.footer() && b.footer())
    diff(a.footer()->creation_timestamp == b.footer()->creation_timestamp, "creation timestamp");
  // A footer is kept when the original had one, and added only to carry a
  // key or an expiry.
  diff(bool(a.footer()) == bool(b.footer()) || (!a.footer() && (b.chunk_key() != Key{} || b.expiry())), "footer");
  diff(x.xorbs.size() == y.xorbs.size(), "xorb count");
  for (std::size_t i = 0; i < std::min(x.xorbs.size(), y.xorbs.size()); ++i) {
    const auto &p = x.xorbs[i], &q = y.xorbs[i];
    std::string at = "xorb " + std::to_string(i) + " ";
    diff(p.hash() == q.hash(), at + "hash");
    diff(p.header().flags == q.header().flags, at + "flags");
    diff(p.header().bytes_in_xorb == q.header().bytes_in_xorb, at + "bytes_in_xorb");
    diff(p.header().bytes_on_disk == q.header().bytes_on_disk, at + "bytes_on_disk");
    diff(p.num_chunks() == q.num_chunks(), at + "chunk count");
    for (std::size_t j = 0; j < std::min(p.num_chunks(), q.num_chunks()); ++j) {
      auto c = p.chunk(j), d = q.chunk(j);
      std::string cat = at + "chunk " + std::to_string(j) + " ";
      diff(c.chunk_hash == d.chunk_hash, cat + "hash");
      diff(c.byte_start == d.byte_start && c.unpacked_bytes == d.unpacked_bytes, cat + "range");
      diff(c.flags == d.flags && c.unused == d.unused, cat + "flags");
    }
  }
  diff(x.files.size() == y.files.size(), "file count");
  for (std::size_t i = 0; i < std::min(x.files.size(), y.files.size()); ++i) {
    const auto &p = x.files[i], &q = y.files[i];
    std::string at = "file " + std::to_string(i) + " (" + hex_of(p.hash()) + ") ";
    diff(p.hash() == q.hash(), at + "hash");
    diff(p.header().flags == q.header().flags, at + "flags");
    diff(p.has_verification() == q.has_verification(), at + "verification flag");
    diff(p.has_metadata_ext() == q.has_metadata_ext(), at + "metadata-ext flag");
    diff(p.num_terms() == q.num_terms(), at + "term count");
    if (p.num_terms() != q.num_terms()) continue;
    for (std::uint32_t t = 0; t < p.num_terms(); ++t) {
      auto s = p.term(t), u = q.term(t);
      diff(s.xorb_hash == u.xorb_hash && s.flags == u.flags && s.unpacked_bytes == u.unpacked_bytes &&
               s.chunk_start == u.chunk_start && s.chunk_end == u.chunk_end,
           at + "term " + std::to_string(t));
      if (p.has_verification() && q.has_verification())
        diff(p.verification(t).hash == q.verification(t).hash && p.verification(t).unused == q.verification(t).unused,
             at + "verification " + std::to_string(t));
    }
    if (p.has_metadata_ext() && q.has_metadata_ext())
      diff(p.metadata_ext().hash == q.metadata_ext().hash && p.metadata_ext().unused == q.metadata_ext().unused,
           at + "sha256 metadata");
  }
  return out;
}

shard::FileRecord empty_file(bool verification, bool sha256) {
  shard::FileRecord f;  // the empty file: hash zero, no terms
  if (verification) f.header.flags |= shard::kFileFlagWithVerification;
  if (sha256) {
    shard::HashRecord m;
    m.hash = *Hash::parse("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    f.metadata_ext = m;
  }
  return f;
}

enum class EmptyAt { none, first, middle, last };

// The shapes the issue lists, every combination: an empty file first, last
// or in the middle, with and without verification; metadata ext on some
// files; keyed; no footer; one-chunk xorbs; terms naming xorbs that are
// absent from the CAS section.
struct Shapes {
  gen::GenXorb big = gen::gen_xorb(101, 12), one = gen::gen_xorb(102, 1), other = gen::gen_xorb(103, 5),
               absent = gen::gen_xorb(104, 7);
  std::vector<std::pair<std::string, OwnedShard>> shards;

  Shapes() {
    std::uint64_t created = 1700000000;
    for (EmptyAt at : {EmptyAt::none, EmptyAt::first, EmptyAt::middle, EmptyAt::last})
      for (bool ver : {false, true})
        for (bool meta_some : {false, true})
          for (bool keyed : {false, true})
            for (bool footer : {true, false}) {
              if (keyed && !footer) continue;  // the key lives in the footer
              for (bool one_chunk : {false, true})
                for (bool foreign : {false, true}) {
                  gen::ShardSpec spec;
                  spec.xorbs = {&big, &other};
                  if (one_chunk) spec.xorbs.push_back(&one);
                  spec.created = ++created;
                  spec.footer = footer;
                  if (keyed) {
                    spec.key = gen::hash_of_seed(7);
                    spec.expiry = 4000000000;
                  }
                  // Files shared by every shape (same hash, same terms), with
                  // and without metadata ext: the record the index keeps is
                  // the richest any shard brought.
                  std::vector<shard::FileRecord> files;
                  files.push_back(gen::gen_file(201, big, 0, 12, ver, meta_some));
                  files.push_back(gen::gen_file(202, other, 1, 4, ver, false));
                  if (one_chunk) files.push_back(gen::gen_file(203, one, 0, 1, ver, meta_some));
                  if (foreign) files.push_back(gen::gen_file(204, absent, 2, 6, ver, true));
                  auto empty = empty_file(ver, meta_some);
                  if (at == EmptyAt::first) files.insert(files.begin(), empty);
                  if (at == EmptyAt::middle) files.insert(files.begin() + 1, empty);
                  if (at == EmptyAt::last) files.push_back(empty);
                  spec.files = std::move(files);
                  std::ostringstream name;
                  name << "empty@" << int(at) << (ver ? " verified" : "") << (meta_some ? " meta" : "")
                       << (keyed ? " keyed" : "") << (footer ? "" : " no-footer") << (one_chunk ? " one-chunk" : "")
                       << (foreign ? " foreign-term" : "");
                  shards.emplace_back(name.str(), gen::own(gen::build_shard(spec)));
                }
            }
  }
};

std::vector<std::pair<std::string, OwnedShard>> committed_fixtures() {
  std::vector<std::pair<std::string, OwnedShard>> out;
  std::vector<std::filesystem::path> paths{std::filesystem::path(DEDUPD_FIXTURE_DIR) / "gpt2-64-8bits.tflite.shard"};
  for (const auto& e : std::filesystem::directory_iterator(DEDUPD_SHARD_CORPUS_DIR)) paths.push_back(e.path());
  for (const auto& p : paths) {
    std::ifstream in(p, std::ios::binary);
    std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
    if (!shard::ShardView::parse(bytes)) continue;  // the corpus may hold invalid inputs too
    out.emplace_back(p.filename().string(), gen::own(std::move(bytes)));
  }
  return out;
}

class RebuildEqual : public gen::IndexFixture {
 protected:
  // Ingests all, then rebuilds and compares each: later shards have had
  // their chance to make the shared records richer.
  void check_all(const std::vector<std::pair<std::string, OwnedShard>>& shards) {
    IngestOptions io;
    io.now = 1700000000;
    for (const auto& [name, s] : shards) {
      auto r = idx->ingest(*s.view, SourceInfo{}, io);
      ASSERT_TRUE(r) << name << ": " << r.error().to_string();
    }
    for (const auto& [name, s] : shards) {
      auto bytes = idx->rebuild_shard(s.hash);
      ASSERT_TRUE(bytes) << name << ": " << bytes.error().to_string();
      ASSERT_TRUE(*bytes) << name << ": not live";
      auto view = shard::ShardView::parse(**bytes);
      ASSERT_TRUE(view) << name << ": the rebuilt shard does not parse: " << view.error().to_string();
      auto d = differences(*s.view, *view);
      EXPECT_TRUE(d.empty()) << name << ": " << ::testing::PrintToString(d);
    }
    EXPECT_TRUE(problems().empty());
  }
};

TEST_F(RebuildEqual, EveryCommittedShardFixture) {
  auto fixtures = committed_fixtures();
  ASSERT_GE(fixtures.size(), 5u);
  check_all(fixtures);
}

TEST_F(RebuildEqual, GeneratedShardsOfEveryShape) {
  Shapes shapes;
  ASSERT_EQ(shapes.shards.size(), 4u * 2 * 2 * 3 * 2 * 2);
  check_all(shapes.shards);
}

// The fixtures and the shapes in one index: the fixtures' records are
// shared with nothing generated, but the order is the other way round.
TEST_F(RebuildEqual, ShapesAfterFixturesAndFixturesAfterShapes) {
  Shapes shapes;
  auto both = committed_fixtures();
  for (auto it = shapes.shards.rbegin(); it != shapes.shards.rend(); ++it) both.push_back(std::move(*it));
  check_all(both);
}

}  // namespace
}  // namespace dedupd::index
