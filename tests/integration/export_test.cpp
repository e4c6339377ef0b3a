// dedupctl export and lookup-snapshot against the real dedupd: a shard
// dropped into a watched directory comes back out of the snapshot file with
// the locations the daemon itself answers; keyed chunks stay out.
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <string>
#include <vector>

#include "harness/daemon_test.hpp"
#include "harness/make_shard.hpp"
#include "harness/program_run.hpp"

namespace dedupd::itest {
namespace {

namespace fs = std::filesystem;

using CtlRun = ProgramRun;

// dedupctl with args; stdout captured, stderr left to the test log.
CtlRun dedupctl(const std::vector<std::string>& args) { return run_program(DEDUPCTL_BINARY, args); }

using Export = DaemonTest;

TEST_F(Export, ExportThenLookupSnapshotAnswersAsTheDaemon) {
  start();
  auto raw = make_shard({.seed = 71, .xorbs = 3, .chunks_per_xorb = 16});
  shard::Key key{};
  key.bytes.fill(0x4B);
  auto keyed = make_shard({.seed = 72, .xorbs = 2, .chunks_per_xorb = 8, .expiry = 4'000'000'000, .key = key});
  drop_file(incoming, raw.file_name(), raw.bytes);
  drop_file(incoming, keyed.file_name(), keyed.bytes);
  ASSERT_TRUE(eventually([&] {
    return chunk_found(raw.first_chunks[2].to_string()) && chunk_found(keyed.first_chunks[1].to_string());
  })) << daemon_log();

  const std::string out = (dir / "snapshot.swh").string();
  const std::string sock = "--socket=" + socket.string();
  CtlRun e = dedupctl({sock, "export", "--format", "swh-shard", out});
  ASSERT_EQ(e.code, 0) << e.out << daemon_log();
  EXPECT_EQ(e.out.find("wrote " + out + ": 48 keys (raw chunk hashes)"), 0u) << e.out;
  ASSERT_TRUE(fs::exists(out));
  EXPECT_TRUE(fs::is_empty(dir / "state" / "export")) << "the daemon's temporary file is gone";

  // Every xorb's first chunk, against the daemon's own answer.
  for (std::size_t i = 0; i < raw.first_chunks.size(); ++i) {
    const std::string h = raw.first_chunks[i].to_string();
    CtlRun l = dedupctl({"--json", "lookup-snapshot", out, h});
    ASSERT_EQ(l.code, 0) << l.out;
    auto snap = nlohmann::json::parse(l.out);
    auto live = get_json("/v1/chunk/" + h);
    ASSERT_EQ(snap["locations"].size(), 1u) << l.out;
    ASSERT_EQ(live["locations"].size(), 1u);
    for (const char* k : {"xorb", "chunk_index", "byte_start", "byte_end", "unpacked_bytes"})
      EXPECT_EQ(snap["locations"][0][k], live["locations"][0][k]) << k;
    EXPECT_EQ(snap["locations"][0]["xorb"], raw.xorbs[i].to_string());
  }
  // Known to the daemon through a keyed shard only: not in the snapshot.
  CtlRun k = dedupctl({"lookup-snapshot", out, keyed.first_chunks[0].to_string()});
  EXPECT_EQ(k.code, 1) << k.out;
  EXPECT_NE(k.out.find("not found"), std::string::npos);
}

TEST_F(Export, NothingToExportIsExitOneAndNoFile) {
  start();
  const std::string out = (dir / "empty.swh").string();
  CtlRun e = dedupctl({"--socket=" + socket.string(), "export", "--format", "swh-shard", out});
  EXPECT_EQ(e.code, 1) << e.out << daemon_log();
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace dedupd::itest
