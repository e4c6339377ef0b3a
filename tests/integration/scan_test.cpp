// dedupctl scan and hash against the real dedupd: a shard built from one
// file's own chunks (cut and hashed by chunk/) is dropped into the watched
// directory; scanning that file, a file sharing part of it and a new file
// reports the known and new bytes the shard implies, with the exit codes.
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "chunk/chunk_hasher.hpp"
#include "chunk/sha256.hpp"
#include "harness/daemon_test.hpp"
#include "harness/make_shard.hpp"
#include "harness/program_run.hpp"
#include "shard/writer.hpp"
#include "tests/unit/chunk/seeded_bytes.hpp"

namespace dedupd::itest {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

using CtlRun = ProgramRun;

// dedupctl with args; stdout captured (not a terminal: no progress bar), stderr left to the test log.
CtlRun dedupctl(const std::vector<std::string>& args) { return run_program(DEDUPCTL_BINARY, args); }

std::vector<std::uint8_t> seeded(std::uint32_t seed, std::size_t n) {
  chunk::testing::Generator g;
  g.seed = seed;
  chunk::testing::SeededBytes gen(g);
  return gen.take(n);
}

void write_file(const fs::path& p, const std::vector<std::uint8_t>& bytes) {
  std::ofstream f(p, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

struct Chunked {
  std::vector<chunk::ChunkRecord> chunks;
  shard::Hash file_hash;
};

Chunked chunk_all(const std::vector<std::uint8_t>& bytes) {
  Chunked c;
  chunk::ChunkHasher h;
  h.update(bytes, c.chunks);
  c.file_hash = h.finish(c.chunks);
  return c;
}

// An upload shard as a Xet client writes it for one file: one xorb with the
// file's chunks, the file's reconstruction, verification and sha256.
std::vector<std::uint8_t> shard_of(const Chunked& c, const shard::Hash& sha256, shard::Hash* xorb_out) {
  shard::XorbRecord xr;
  std::vector<shard::HashAndSize> leaves;
  std::vector<shard::Hash> raws;
  std::uint32_t offset = 0;
  for (const auto& r : c.chunks) {
    shard::ChunkEntry e;
    e.chunk_hash = r.hash;
    e.byte_start = offset;
    e.unpacked_bytes = std::uint32_t(r.size);
    e.flags = 1u << 31;
    xr.chunks.push_back(e);
    leaves.push_back({r.hash, r.size});
    raws.push_back(r.hash);
    offset += std::uint32_t(r.size);
  }
  xr.header.xorb_hash = shard::xorb_hash(leaves);
  xr.header.bytes_in_xorb = offset;
  xr.header.bytes_on_disk = offset;
  *xorb_out = xr.header.xorb_hash;

  shard::FileRecord f;
  f.header.file_hash = c.file_hash;
  shard::FileTerm t;
  t.xorb_hash = xr.header.xorb_hash;
  t.chunk_start = 0;
  t.chunk_end = std::uint32_t(c.chunks.size());
  t.unpacked_bytes = offset;
  f.terms.push_back(t);
  f.verification.push_back({shard::verification_range_hash(raws)});
  f.metadata_ext = shard::HashRecord{sha256};

  shard::ShardWriter w;
  w.add_file(std::move(f));
  w.add_xorb(std::move(xr));
  shard::WriteOptions o;
  o.lookup_tables = shard::LookupTables::build;
  o.footer.creation_timestamp = 1'750'000'000;
  return w.write(o);
}

class Scan : public DaemonTest {
 protected:
  // File a (indexed), b (a's first 1.5 MiB then 1 MiB of other bytes), c (new).
  void SetUp() override {
    DaemonTest::SetUp();
    a_bytes = seeded(0x9e3779b9, 3 << 20);
    b_bytes.assign(a_bytes.begin(), a_bytes.begin() + (3 << 19));
    const auto tail = seeded(4242, 1 << 20);
    b_bytes.insert(b_bytes.end(), tail.begin(), tail.end());
    a = (dir / "a.bin").string();
    b = (dir / "b.bin").string();
    c = (dir / "c.bin").string();
    empty = (dir / "empty.bin").string();
    write_file(a, a_bytes);
    write_file(b, b_bytes);
    write_file(c, seeded(777, 700'000));
    write_file(empty, {});
  }

  void index_a() {
    chunk::Sha256 sha;
    sha.update(a_bytes);
    const auto a_chunks = chunk_all(a_bytes);
    const auto bytes = shard_of(a_chunks, *sha.finish(), &a_xorb);
    const auto name = shard::shard_file_hash(bytes).to_string();
    a_shard = name;
    drop_file(incoming, name + ".mdb", bytes);
    ASSERT_TRUE(eventually([&] { return chunk_found(a_chunks.chunks.back().hash.to_string()); })) << daemon_log();
  }

  CtlRun scan(std::vector<std::string> files, bool as_json = true, std::string batch = "") {
    std::vector<std::string> args{"--socket=" + socket.string()};
    if (as_json) args.push_back("--json");
    args.push_back("scan");
    if (!batch.empty()) args.insert(args.end(), {"--batch", batch});
    args.insert(args.end(), files.begin(), files.end());
    return dedupctl(args);
  }

  std::vector<std::uint8_t> a_bytes, b_bytes;
  std::string a, b, c, empty;
  shard::Hash a_xorb;
  std::string a_shard;
};

TEST_F(Scan, IndexedFileIsAllKnownAndKnownByItsHash) {
  start();
  index_a();
  CtlRun r = scan({a});
  ASSERT_EQ(r.code, 0) << r.out << daemon_log();
  const auto doc = json::parse(r.out);
  const auto& f = doc["files"][0];
  EXPECT_EQ(f["path"], a);
  EXPECT_EQ(f["size"], a_bytes.size());
  EXPECT_EQ(f["chunks"], 52);
  EXPECT_EQ(f["file_hash"], "27d7a6d9c85ba8153b9929089573df0b9b8c85d1398cff4d25862f2817f78974");
  EXPECT_EQ(f["known_bytes"], a_bytes.size());
  EXPECT_EQ(f["new_bytes"], 0);
  ASSERT_EQ(f["xorbs"].size(), 1u);
  EXPECT_EQ(f["xorbs"][0]["xorb"], a_xorb.to_string());
  EXPECT_EQ(f["shards"], json::array({a_shard}));
  EXPECT_TRUE(f["file_known"].get<bool>());
  EXPECT_EQ(f["reconstruction"]["terms"].size(), 1u);
  EXPECT_EQ(doc["total"]["known_bytes"], a_bytes.size());
  EXPECT_EQ(doc["total"]["new_bytes"], 0);
}

TEST_F(Scan, SharedPrefixIsKnownTheRestIsNew) {
  start();
  index_a();
  // What must be known: b's chunks that are chunks of a.
  std::set<shard::Hash> in_a;
  for (const auto& r : chunk_all(a_bytes).chunks) in_a.insert(r.hash);
  std::uint64_t expect_known = 0, expect_new = 0;
  for (const auto& r : chunk_all(b_bytes).chunks) (in_a.contains(r.hash) ? expect_known : expect_new) += r.size;
  ASSERT_GT(expect_known, 1u << 20);
  ASSERT_GT(expect_new, 1u << 20);

  CtlRun r = scan({b, c, empty});
  ASSERT_EQ(r.code, 1) << r.out;
  const auto doc = json::parse(r.out);
  ASSERT_EQ(doc["files"].size(), 3u);
  const auto& fb = doc["files"][0];
  EXPECT_EQ(fb["known_bytes"], expect_known);
  EXPECT_EQ(fb["new_bytes"], expect_new);
  EXPECT_FALSE(fb["file_known"].get<bool>());
  EXPECT_TRUE(fb["reconstruction"].is_null());
  const auto& fc = doc["files"][1];
  EXPECT_EQ(fc["known_bytes"], 0);
  EXPECT_EQ(fc["new_bytes"], 700'000);
  EXPECT_TRUE(fc["xorbs"].empty());
  const auto& fe = doc["files"][2];
  EXPECT_EQ(fe["size"], 0);
  EXPECT_EQ(fe["chunks"], 0);
  EXPECT_EQ(fe["new_bytes"], 0);
  EXPECT_EQ(doc["total"]["files"], 3);
  EXPECT_EQ(doc["total"]["size"], b_bytes.size() + 700'000);
  EXPECT_EQ(doc["total"]["known_bytes"], expect_known);
  EXPECT_EQ(doc["total"]["new_bytes"], expect_new + 700'000);

  // The empty file alone: nothing new.
  EXPECT_EQ(scan({empty}).code, 0);
  // Human output names the file and its share.
  CtlRun h = scan({a, b}, false);
  EXPECT_EQ(h.code, 1);
  EXPECT_NE(h.out.find("all known"), std::string::npos) << h.out;
  EXPECT_NE(h.out.find("known by its file hash"), std::string::npos) << h.out;
  EXPECT_NE(h.out.find("Total"), std::string::npos) << h.out;
}

TEST_F(Scan, SmallBatchesAddUpToTheSameAndRepeatsAreSentOnce) {
  start();
  index_a();
  // b twice and c twice, in batches of 5 and 7 hashes (many requests, one
  // in flight while the next is gathered): the counts do not depend on the
  // batch size, and the second copy of a new chunk counts as repeated.
  const auto one = json::parse(scan({b, c}).out);
  for (const char* batch : {"5", "7"}) {
    CtlRun r = scan({b, c, b, c}, true, batch);
    ASSERT_EQ(r.code, 1) << r.out;
    const auto doc = json::parse(r.out);
    for (int i = 0; i < 2; ++i) {
      EXPECT_EQ(doc["files"][i]["known_bytes"], one["files"][i]["known_bytes"]) << batch;
      EXPECT_EQ(doc["files"][i]["new_bytes"], one["files"][i]["new_bytes"]) << batch;
      EXPECT_EQ(doc["files"][i + 2]["known_bytes"], one["files"][i]["known_bytes"]) << batch;
      EXPECT_EQ(doc["files"][i + 2]["new_bytes"], 0) << batch;
      EXPECT_EQ(doc["files"][i + 2]["repeated_bytes"], one["files"][i]["new_bytes"]) << batch;
    }
    EXPECT_EQ(doc["total"]["new_bytes"], one["total"]["new_bytes"]);
  }
  EXPECT_EQ(scan({a}, true, "3").code, 0);
  EXPECT_EQ(scan({a}, true, "0").code, 64);
}

TEST_F(Scan, UnreadableFileIsBadInputAndTheOthersAreStillScanned) {
  start();
  index_a();
  CtlRun r = scan({(dir / "missing.bin").string(), a});
  EXPECT_EQ(r.code, 65);
  const auto doc = json::parse(r.out);
  ASSERT_EQ(doc["files"].size(), 2u);
  EXPECT_TRUE(doc["files"][0].contains("error"));
  EXPECT_EQ(doc["files"][1]["new_bytes"], 0);
}

TEST_F(Scan, NoDaemonIsUnavailable) {
  // Nothing started: exit 69 before the file is read.
  EXPECT_EQ(scan({a}).code, 69);
}

TEST_F(Scan, HashNeedsNoDaemonAndMatchesXetCoreVectors) {
  std::ifstream vf(DEDUPD_CHUNK_VECTORS);
  const auto vectors = json::parse(vf);
  const json* regression = nullptr;
  for (const auto& k : vectors["cases"])
    if (k["name"].get<std::string>().starts_with("huggingface.js #2421")) regression = &k;
  ASSERT_NE(regression, nullptr);
  CtlRun r = dedupctl({"--json", "hash", a, empty});
  ASSERT_EQ(r.code, 0) << r.out;
  const auto doc = json::parse(r.out);
  EXPECT_EQ(doc["files"][0]["file_hash"], (*regression)["file_hash"]);
  EXPECT_EQ(doc["files"][0]["sha256"], (*regression)["sha256"]);
  EXPECT_EQ(doc["files"][0]["chunks"], (*regression)["chunks"].size());
  EXPECT_EQ(doc["files"][1]["file_hash"], std::string(64, '0'));
  EXPECT_EQ(doc["files"][1]["sha256"], "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");

  CtlRun missing = dedupctl({"hash", (dir / "missing.bin").string(), a});
  EXPECT_EQ(missing.code, 65);
  EXPECT_NE(missing.out.find((*regression)["file_hash"].get<std::string>()), std::string::npos) << missing.out;
}

}  // namespace
}  // namespace dedupd::itest
