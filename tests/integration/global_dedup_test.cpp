// The Xet global-dedup endpoint as a Xet client would use it.
#include <csignal>
#include <cstring>
#include <fstream>
#include <unordered_set>

#include "harness/daemon_test.hpp"
#include "harness/make_shard.hpp"
#include "shard/keys.hpp"
#include "shard/reader.hpp"
#include "shard/writer.hpp"

namespace dedupd::itest {
namespace {

using GlobalDedup = DaemonTest;

std::span<const std::uint8_t> bytes_of(const std::string& body) {
  return {reinterpret_cast<const std::uint8_t*>(body.data()), body.size()};
}

shard::Key reply_key(const std::string& body, const shard::Hash& xorb, const shard::Hash& raw_chunk) {
  auto view = shard::ShardView::parse(bytes_of(body));
  EXPECT_TRUE(view.ok()) << (view.ok() ? "" : view.error().to_string());
  if (!view) return {};
  EXPECT_TRUE(view->has_footer());
  EXPECT_TRUE(view->keyed());
  EXPECT_TRUE(view->files().empty());
  EXPECT_TRUE(view->expiry().has_value());
  shard::Hash keyed = shard::keyed_chunk_hash(view->chunk_key(), raw_chunk);
  bool xorb_found = false, chunk_found = false;
  for (auto x : view->xorbs()) {
    if (x.hash() != xorb) continue;
    xorb_found = true;
    for (std::size_t i = 0; i < x.num_chunks(); ++i) chunk_found |= x.chunk(i).chunk_hash == keyed;
  }
  EXPECT_TRUE(xorb_found);
  EXPECT_TRUE(chunk_found);
  return view->chunk_key();
}

TEST_F(GlobalDedup, ReplyIsAKeyedShardHoldingTheChunksXorb) {
  start();
  auto shard = make_shard({.seed = 61, .xorbs = 3, .chunks_per_xorb = 8});
  drop_file(incoming, shard.file_name(), shard.bytes);
  std::string chunk = shard.first_chunks[1].to_string();
  ASSERT_TRUE(eventually([&] { return chunk_found(chunk); }));

  auto r = http().get("/v1/chunks/default-merkledb/" + chunk);
  ASSERT_EQ(r.status, 200) << r.body;
  auto key = reply_key(r.body, shard.xorbs[1], shard.first_chunks[1]);
  auto short_prefix = http().get("/v1/chunks/default/" + chunk);
  ASSERT_EQ(short_prefix.status, 200);
  EXPECT_EQ(reply_key(short_prefix.body, shard.xorbs[1], shard.first_chunks[1]), key);

  EXPECT_EQ(http().get("/v1/chunks/default-merkledb/" + std::string(64, '0')).status, 404);
  EXPECT_EQ(http().get("/v1/chunks/default-merkledb/nothex").status, 400);

  // The key lives in the state directory: a restart keeps it.
  EXPECT_EQ(daemon.stop(), 0);
  start();
  auto again = http().get("/v1/chunks/default-merkledb/" + chunk);
  ASSERT_EQ(again.status, 200);
  EXPECT_EQ(reply_key(again.body, shard.xorbs[1], shard.first_chunks[1]), key);
}

// ---- how much of a re-upload a Xet client learns ---------------------------

std::uint64_t splitmix(std::uint64_t& s) {
  std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

struct Chunk {
  shard::Hash hash;
  std::uint32_t size;
};

// A file's chunk list as a content-defined chunker would cut it: sizes 8 KiB
// to 128 KiB around 64 KiB (xet-core's minimum, maximum and target).
std::vector<Chunk> synthetic_chunks(std::uint64_t seed, std::uint64_t bytes) {
  std::vector<Chunk> out;
  std::uint64_t s = seed, total = 0;
  while (total < bytes) {
    Chunk c;
    for (int w = 0; w < 4; ++w) {
      std::uint64_t v = splitmix(s);
      std::memcpy(c.hash.bytes.data() + 8 * w, &v, 8);
    }
    c.size = 8192 + std::uint32_t(splitmix(s) % (120 * 1024 + 1));
    out.push_back(c);
    total += c.size;
  }
  return out;
}

// The upload shard of one file as the Xet client writes it: xorbs cut before
// 64 MiB of chunk data or 8,192 chunks (xet-core MAX_XORB_BYTES,
// MAX_XORB_CHUNKS), one file whose terms cover them, verification entries,
// the sha256 extension and lookup tables. Returns the shard; `xorbs` gets
// the xorb hashes.
std::vector<std::uint8_t> upload_shard(const std::vector<Chunk>& chunks, std::vector<shard::Hash>& xorbs) {
  constexpr std::uint64_t kMaxXorbBytes = 64ull << 20;
  constexpr std::size_t kMaxXorbChunks = 8192;
  shard::ShardWriter writer;
  shard::FileRecord file;
  std::vector<shard::HashAndSize> file_leaves;
  std::size_t i = 0;
  while (i < chunks.size()) {
    shard::XorbRecord xr;
    std::vector<shard::HashAndSize> leaves;
    std::vector<shard::Hash> raws;
    std::uint32_t offset = 0;
    for (; i < chunks.size() && offset + chunks[i].size <= kMaxXorbBytes && xr.chunks.size() < kMaxXorbChunks; ++i) {
      shard::ChunkEntry e;
      e.chunk_hash = chunks[i].hash;
      e.byte_start = offset;
      e.unpacked_bytes = chunks[i].size;
      if (chunks[i].hash.word(3) % 1024 == 0) e.flags = shard::kChunkFlagGlobalDedupEligible;
      xr.chunks.push_back(e);
      leaves.push_back({chunks[i].hash, chunks[i].size});
      raws.push_back(chunks[i].hash);
      offset += chunks[i].size;
    }
    xr.header.xorb_hash = shard::xorb_hash(leaves);
    xr.header.bytes_in_xorb = offset;
    xr.header.bytes_on_disk = offset;  // incompressible
    shard::FileTerm t;
    t.xorb_hash = xr.header.xorb_hash;
    t.chunk_start = 0;
    t.chunk_end = std::uint32_t(xr.chunks.size());
    t.unpacked_bytes = offset;
    file.terms.push_back(t);
    file.verification.push_back({shard::verification_range_hash(raws)});
    file_leaves.insert(file_leaves.end(), leaves.begin(), leaves.end());
    xorbs.push_back(xr.header.xorb_hash);
    writer.add_xorb(std::move(xr));
  }
  file.header.file_hash = shard::file_hash(file_leaves);
  file.metadata_ext = shard::HashRecord{shard::chunk_hash_of_data(file.header.file_hash.bytes)};
  writer.add_file(std::move(file));
  shard::WriteOptions options;
  options.lookup_tables = shard::LookupTables::build;
  options.footer.creation_timestamp = 1'750'000'000;
  return writer.write(options);
}

// The Xet client's global-dedup queries while it uploads one file, as
// xet-core's FileDeduper makes them: the file's first chunk, then chunks
// whose hash is 0 mod 1024 (its last 8 bytes as a little-endian u64),
// at least 256 chunks after the previous query (MIN_SPACING_BETWEEN_GLOBAL_
// DEDUP_QUERIES), and only chunks no earlier reply made known. Replies are
// used at once, so the client asks as little as it can: a lower bound on
// what xet-core, which also re-checks a whole block after its queries
// return, learns.
struct DedupOutcome {
  std::size_t shared = 0, shared_known = 0, queries = 0, hits = 0;
  std::vector<std::size_t> reply_bytes, reply_xorbs;
  double percent() const { return shared == 0 ? 0 : 100.0 * double(shared_known) / double(shared); }
};

DedupOutcome reupload(HttpClient& http, const std::vector<Chunk>& file, const std::vector<bool>& is_shared) {
  struct Reply {
    shard::Key key;
    std::unordered_set<shard::Hash> chunks;  // keyed with key
  };
  std::vector<Reply> replies;
  auto known = [&](const shard::Hash& raw) {
    for (const Reply& r : replies)
      if (r.chunks.contains(shard::keyed_chunk_hash(r.key, raw))) return true;
    return false;
  };
  DedupOutcome out;
  std::size_t next_query = 0;
  for (std::size_t i = 0; i < file.size(); ++i) {
    const shard::Hash& h = file[i].hash;
    bool was_known = known(h);
    if (!was_known && (i == 0 || h.word(3) % 1024 == 0) && i >= next_query) {
      next_query = i + 256;
      ++out.queries;
      Response r = http.get("/v1/chunks/default/" + h.to_string());
      EXPECT_TRUE(r.status == 200 || r.status == 404) << r.status << " " << r.body;
      if (r.status == 200) {
        ++out.hits;
        auto view = shard::ShardView::parse(bytes_of(r.body));
        EXPECT_TRUE(view.ok()) << (view.ok() ? "" : view.error().to_string());
        if (view.ok()) {
          Reply reply{view->chunk_key(), {}};
          for (auto x : view->xorbs())
            for (std::size_t c = 0; c < x.num_chunks(); ++c) reply.chunks.insert(x.chunk(c).chunk_hash);
          replies.push_back(std::move(reply));
          out.reply_bytes.push_back(r.body.size());
          out.reply_xorbs.push_back(view->stats().xorbs);
        }
      }
      was_known = known(h);
    }
    if (is_shared[i]) {
      ++out.shared;
      out.shared_known += was_known;
    }
  }
  return out;
}

std::string describe(const DedupOutcome& o) {
  std::string s = std::to_string(o.shared_known) + " of " + std::to_string(o.shared) + " shared chunks known (" +
                  std::to_string(o.percent()) + " %) after " + std::to_string(o.queries) + " queries, " +
                  std::to_string(o.hits) + " answered; replies:";
  for (std::size_t i = 0; i < o.reply_bytes.size(); ++i)
    s += " " + std::to_string(o.reply_xorbs[i]) + " xorbs/" + std::to_string(o.reply_bytes[i]) + " B";
  return s;
}

// A 256 MiB file uploaded in one shard (5 xorbs), then the same file with
// about 1 MiB changed in the middle uploaded again.
class Reupload : public GlobalDedup {
 protected:
  void SetUp() override {
    GlobalDedup::SetUp();
    original_ = synthetic_chunks(17, 256ull << 20);
    edited_ = original_;
    is_shared_.assign(edited_.size(), true);
    std::uint64_t at = 0, edit_from = 128ull << 20, edit_to = edit_from + (1ull << 20);
    std::uint64_t s = 99;
    for (std::size_t i = 0; i < edited_.size(); at += edited_[i].size, ++i) {
      if (at + edited_[i].size <= edit_from || at >= edit_to) continue;
      for (int w = 0; w < 4; ++w) {
        std::uint64_t v = splitmix(s);
        std::memcpy(edited_[i].hash.bytes.data() + 8 * w, &v, 8);
      }
      is_shared_[i] = false;
    }
    shard_bytes_ = upload_shard(original_, xorbs_);
  }

  void index_the_upload() {
    drop_file(incoming, shard::shard_file_hash(shard_bytes_).to_string() + ".mdb", shard_bytes_);
    std::string first = original_.front().hash.to_string();
    ASSERT_TRUE(eventually([&] { return chunk_found(first); }));
  }

  std::vector<Chunk> original_, edited_;
  std::vector<bool> is_shared_;
  std::vector<shard::Hash> xorbs_;
  std::vector<std::uint8_t> shard_bytes_;
};

TEST_F(Reupload, WholeShardRepliesMakeNearlyAllSharedChunksKnown) {
  start();
  index_the_upload();
  ASSERT_EQ(xorbs_.size(), 5u);
  DedupOutcome o = reupload(http(), edited_, is_shared_);
  std::cout << "default bounds: " << describe(o) << "\n";
  EXPECT_GT(o.shared, 3800u);  // thousands of chunks, ~16 changed
  EXPECT_LT(o.shared, edited_.size());
  EXPECT_GE(o.percent(), 95.0) << describe(o);
  ASSERT_FALSE(o.reply_xorbs.empty());
  EXPECT_EQ(o.reply_xorbs.front(), 5u);  // the first chunk's answer is the whole upload
}

// The same client against one-xorb replies (the bound set to 1 and applied
// by SIGHUP): most of the file stays unknown, as before whole-shard replies.
TEST_F(Reupload, OneXorbRepliesLeaveMuchOfTheFileUnknown) {
  start();
  index_the_upload();
  write_config("global_dedup:\n  reply_max_xorbs: 1\n");
  daemon.signal(SIGHUP);
  const std::string first = "/v1/chunks/default/" + original_.front().hash.to_string();
  ASSERT_TRUE(eventually([&] {
    Response r = http().get(first);
    auto view = shard::ShardView::parse(bytes_of(r.body));
    return r.status == 200 && view.ok() && view->stats().xorbs == 1;
  })) << daemon_log();

  DedupOutcome o = reupload(http(), edited_, is_shared_);
  std::cout << "reply_max_xorbs 1: " << describe(o) << "\n";
  EXPECT_LT(o.percent(), 95.0) << describe(o);
  EXPECT_GT(o.percent(), 0.0);
  for (std::size_t n : o.reply_xorbs) EXPECT_EQ(n, 1u);
}

}  // namespace
}  // namespace dedupd::itest
