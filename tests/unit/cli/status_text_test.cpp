// `dedupctl status` on what the daemon's own status route says of faults:
// the real /v1/status rendering (daemon/api) over a real socket, from the
// StatusInfo the daemon's core fills, read by the real client verb. Each
// fault line (the damaged index, the full disk, the files waiting) is
// checked whole, with its colour, and --json is the document the socket
// served.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "cli/output.hpp"
#include "support.hpp"
#include "tests/unit/api/api_test_support.hpp"

namespace dedupd::daemon::testing {
namespace {

using ::testing::Return;
using Line = std::pair<std::string, std::string>;  // label, value

// A status text's lines as (label, value): a label is followed by two
// spaces at least (one space may sit inside it, as in "Kept at"), and every
// value starts at the same column, which this checks.
std::vector<Line> lines_of(const std::string& text) {
  std::vector<Line> out;
  std::size_t column = 0;
  for (std::size_t at = 0; at < text.size();) {
    std::size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(at, end - at);
    at = end + 1;
    const std::size_t gap = line.find("  ");
    if (gap == std::string::npos) {
      out.emplace_back(line, "");  // a label with an empty value
      continue;
    }
    const std::size_t value = line.find_first_not_of(' ', gap);
    if (column == 0) column = value;
    EXPECT_EQ(value, column) << "not aligned: " << line;
    out.emplace_back(line.substr(0, gap), line.substr(value));
  }
  return out;
}

// The lines add_fault_fields wrote: all that follows the index's counts
// (their last line is the chunk filter's) when no fleet and no Xet endpoint
// is configured, as here. ("Index" labels a line of the counts too.)
std::vector<Line> fault_lines(const std::string& text) {
  const std::vector<Line> all = lines_of(text);
  auto last_count = std::find_if(all.begin(), all.end(), [](const Line& l) { return l.first == "Chunk filter"; });
  EXPECT_NE(last_count, all.end()) << text;
  if (last_count == all.end()) return {};
  return {last_count + 1, all.end()};
}

std::string red(const std::string& s) { return dedupctl::Style{true}.paint(s, dedupctl::Color::red); }
std::string yellow(const std::string& s) { return dedupctl::Style{true}.paint(s, dedupctl::Color::yellow); }

class StatusTextTest : public ApiTest {
 protected:
  void SetUp() override {
    ApiTest::SetUp();
    status_ = core::StatusInfo{"0.1.0-test", 4242, 17, socket_path_, dir_.path(), {"/watch/a"}, {}, std::nullopt};
    status_.state_dir_space = {true, std::uint64_t{5} << 30, std::uint64_t{40} << 30, false};
  }

  // `dedupctl [--json] status` against the daemon's route, serving status_.
  dedupctl::testing::Outcome status_text(bool tty = false, bool json = false) {
    ON_CALL(service_, status()).WillByDefault(Return(status_));
    std::vector<std::string> args = {"--socket", socket_path_};
    if (json) args.push_back("--json");
    args.push_back("status");
    dedupctl::testing::RunOptions o;
    o.tty = tty;
    auto r = dedupctl::testing::run_cli(args, o);
    EXPECT_EQ(r.code, 0) << r.err;
    return r;
  }

  // The index found damaged (`state` rebuilding or rebuilt) with `damage`,
  // kept at `moved_to`, `done` of `total` files taken in again.
  void damaged(const char* state, const std::string& damage, const std::string& moved_to, std::uint64_t done,
               std::uint64_t total) {
    core::IndexHealth& h = status_.index_health;
    h.state = state;
    h.damage = damage;
    h.moved_to = moved_to;
    h.rebuild_files_done = done;
    h.rebuild_files_total = total;
  }

  core::StatusInfo status_;
};

TEST_F(StatusTextTest, NothingWrongShowsOnlyTheFreeSpace) {
  auto r = status_text();
  EXPECT_EQ(fault_lines(r.out), (std::vector<Line>{{"Free space", "5.0 GiB of 40.0 GiB"}})) << r.out;
}

TEST_F(StatusTextTest, ARebuildUnderWaySaysDamagedWithItsProgress) {
  damaged("rebuilding", "the scrub found chunk entry of xorb id 7 #12 does not match the stored hash",
          "/var/lib/dedupd/index.damaged-20261201T000000Z", 56, 1234);
  auto r = status_text();
  EXPECT_EQ(
      fault_lines(r.out),
      (std::vector<Line>{{"Index health", "DAMAGED, rebuilding from the shards (56 of 1,234 files)"},
                         {"Damage", "the scrub found chunk entry of xorb id 7 #12 does not match the stored hash"},
                         {"Kept at", "/var/lib/dedupd/index.damaged-20261201T000000Z"},
                         {"Free space", "5.0 GiB of 40.0 GiB"}}))
      << r.out;
  auto tty = status_text(true);
  EXPECT_NE(tty.out.find(red("DAMAGED, rebuilding from the shards (56 of 1,234 files)") + "\n"), std::string::npos)
      << tty.out;
}

TEST_F(StatusTextTest, ARebuiltIndexSaysWhatWasFoundAndWhereItIsKept) {
  damaged("rebuilt", "data.mdb is 100 bytes: too short for a meta page", "/s/index.damaged-20261201T000000Z-1", 4, 4);
  auto r = status_text();
  EXPECT_EQ(fault_lines(r.out), (std::vector<Line>{{"Index health", "rebuilt after damage (4 of 4 files)"},
                                                   {"Damage", "data.mdb is 100 bytes: too short for a meta page"},
                                                   {"Kept at", "/s/index.damaged-20261201T000000Z-1"},
                                                   {"Free space", "5.0 GiB of 40.0 GiB"}}))
      << r.out;
  EXPECT_NE(status_text(true).out.find(yellow("rebuilt after damage (4 of 4 files)") + "\n"), std::string::npos);
  // An operator's rebuild moves nothing aside: no "Kept at" line.
  status_.index_health.damage = "asked by an operator (dedupctl index rebuild)";
  status_.index_health.moved_to.clear();
  r = status_text();
  EXPECT_EQ(fault_lines(r.out), (std::vector<Line>{{"Index health", "rebuilt after damage (4 of 4 files)"},
                                                   {"Damage", "asked by an operator (dedupctl index rebuild)"},
                                                   {"Free space", "5.0 GiB of 40.0 GiB"}}))
      << r.out;
}

TEST_F(StatusTextTest, AFullDiskIsSaidBesideItsFreeSpace) {
  status_.state_dir_space = {true, 4096, 1u << 30, true};
  auto r = status_text();
  EXPECT_EQ(fault_lines(r.out), (std::vector<Line>{{"Free space", "4.0 KiB of 1.0 GiB: DISK FULL, index writes fail"}}))
      << r.out;
  EXPECT_NE(status_text(true).out.find(red("4.0 KiB of 1.0 GiB: DISK FULL, index writes fail") + "\n"),
            std::string::npos);
  // statvfs failed: the space is null in the document, the fault still shows.
  status_.state_dir_space = {false, 0, 0, true};
  r = status_text();
  EXPECT_EQ(fault_lines(r.out), (std::vector<Line>{{"Free space", "DISK FULL, index writes fail"}})) << r.out;
  // Neither known nor full: nothing to say.
  status_.state_dir_space = {false, 0, 0, false};
  r = status_text();
  EXPECT_EQ(fault_lines(r.out), std::vector<Line>{}) << r.out;
}

TEST_F(StatusTextTest, WaitingFilesAreCountedAndTheOldestNamed) {
  status_.waiting.count = 1;
  status_.waiting.files.push_back(
      {"/watch/a/x.mdb", "index.no_space", "No space left on device", 1'000'000, 3725, 9, 30});
  auto r = status_text();
  EXPECT_EQ(fault_lines(r.out),
            (std::vector<Line>{{"Free space", "5.0 GiB of 40.0 GiB"},
                               {"Waiting", "1 file not indexed yet, retried by themselves"},
                               {"Oldest", "/watch/a/x.mdb: index.no_space for 1h 2m, 9 attempt(s)"}}))
      << r.out;
  EXPECT_NE(status_text(true).out.find(yellow("1 file not indexed yet, retried by themselves") + "\n"),
            std::string::npos);
  // More than the list holds: the count says all of them.
  status_.waiting.count = 1500;
  status_.waiting.files.front().age_s = 42;
  r = status_text();
  EXPECT_EQ(fault_lines(r.out), (std::vector<Line>{{"Free space", "5.0 GiB of 40.0 GiB"},
                                                   {"Waiting", "1,500 files not indexed yet, retried by themselves"},
                                                   {"Oldest", "/watch/a/x.mdb: index.no_space for 42s, 9 attempt(s)"}}))
      << r.out;
}

// Every fault at once, in add_fault_fields' order; --json prints the
// document the socket serves, faults and all.
TEST_F(StatusTextTest, AllFaultsAtOnceAndAsJson) {
  damaged("rebuilding", "LMDB: mdb.c:6788: Assertion 'IS_LEAF(mp)' failed in mdb_cursor_next()",
          "/s/index.damaged-20261201T000000Z", 0, 3);
  status_.state_dir_space = {true, 0, 1u << 20, true};
  status_.waiting.count = 2;
  status_.waiting.files.push_back({"/watch/a/y.mdb", "index.io", "short write", 1'000'000, 59, 1, 2});
  auto r = status_text();
  EXPECT_EQ(fault_lines(r.out),
            (std::vector<Line>{{"Index health", "DAMAGED, rebuilding from the shards (0 of 3 files)"},
                               {"Damage", "LMDB: mdb.c:6788: Assertion 'IS_LEAF(mp)' failed in mdb_cursor_next()"},
                               {"Kept at", "/s/index.damaged-20261201T000000Z"},
                               {"Free space", "0 B of 1.0 MiB: DISK FULL, index writes fail"},
                               {"Waiting", "2 files not indexed yet, retried by themselves"},
                               {"Oldest", "/watch/a/y.mdb: index.io for 59s, 1 attempt(s)"}}))
      << r.out;

  auto j = status_text(false, true);
  const nlohmann::json printed = nlohmann::json::parse(j.out);
  EXPECT_EQ(printed, client_->get("/v1/status").json());
  EXPECT_EQ(printed["index_health"]["state"], "rebuilding");
  EXPECT_EQ(printed["index_health"]["damage"], status_.index_health.damage);
  EXPECT_EQ(printed["index_health"]["moved_to"], "/s/index.damaged-20261201T000000Z");
  EXPECT_EQ(printed["index_health"]["rebuild"], (nlohmann::json{{"files_total", 3}, {"files_done", 0}}));
  EXPECT_EQ(printed["state_dir_space"],
            (nlohmann::json{{"free_bytes", 0}, {"size_bytes", 1 << 20}, {"disk_full", true}}));
  EXPECT_EQ(printed["waiting"]["count"], 2);
  ASSERT_EQ(printed["waiting"]["files"].size(), 1u);
  EXPECT_EQ(printed["waiting"]["files"][0], (nlohmann::json{{"path", "/watch/a/y.mdb"},
                                                            {"rule", "index.io"},
                                                            {"why", "short write"},
                                                            {"since", 1'000'000},
                                                            {"age_s", 59},
                                                            {"attempts", 1},
                                                            {"next_retry_s", 2}}));
  // Space unknown: null in the document, as the text leaves the size out.
  status_.state_dir_space = {false, 0, 0, true};
  j = status_text(false, true);
  EXPECT_EQ(nlohmann::json::parse(j.out)["state_dir_space"],
            (nlohmann::json{{"free_bytes", nullptr}, {"size_bytes", nullptr}, {"disk_full", true}}));
}

// The lines of the Downloads block: from its first line to the end (no
// fleet and no endpoint block here come after it).
std::vector<Line> download_lines(const std::string& text) {
  const std::vector<Line> all = lines_of(text);
  auto first = std::find_if(all.begin(), all.end(), [](const Line& l) { return l.first == "Downloads"; });
  return {first, all.end()};
}

// Downloads through the endpoint: bytes by source, the hit ratio, refusals,
// the cache and the tier, in the text, in --json and in /metrics.
TEST_F(StatusTextTest, DownloadsSayWhereTheBytesCameFrom) {
  core::XetDownloadStatus d;
  d.counts.bytes_local_cache = std::uint64_t{1} << 30;
  d.counts.bytes_internet = std::uint64_t{256} << 20;
  d.counts.requests_local_cache = 16;
  d.counts.requests_internet = 4;
  d.counts.requests_refused = 3;
  d.counts.tier = {{"10.0.0.1:8788", true, 9, 0}, {"10.0.0.2:8788", false, 1, 2}};
  d.cache = {"/var/cache/dedupd-xet-endpoint", true, "", std::uint64_t{2} << 30, 40, 5, 1'000'000};
  status_.xet_downloads = d;
  auto r = status_text();
  EXPECT_EQ(
      download_lines(r.out),
      (std::vector<Line>{{"Downloads", "1.0 GiB from the local cache, 0 B from the tier, 256.0 MiB from the internet"},
                         {"Hit ratio", "80 % of the bytes from the local cache"},
                         {"Range URLs", "3 refused (the client asks again), 0 failed"},
                         {"Download cache", "2.0 GiB in 40 files, 5 evicted (/var/cache/dedupd-xet-endpoint)"},
                         {"Cache tier", "1 of 2 host(s) not answering: 10.0.0.2:8788"}}))
      << r.out;
  EXPECT_NE(status_text(true).out.find(yellow("1 of 2 host(s) not answering: 10.0.0.2:8788") + "\n"),
            std::string::npos);

  const nlohmann::json printed = nlohmann::json::parse(status_text(false, true).out)["xet_downloads"];
  EXPECT_EQ(printed["bytes"], (nlohmann::json{{"local_cache", 1 << 30}, {"tier", 0}, {"internet", 256 << 20}}));
  EXPECT_EQ(printed["requests"]["refused"], 3);
  EXPECT_DOUBLE_EQ(printed["hit_ratio"].get<double>(), 0.8);
  EXPECT_EQ(printed["cache"]["bytes"], std::uint64_t{2} << 30);
  EXPECT_EQ(printed["cache"]["evictions"], 5);
  EXPECT_EQ(printed["tier"][1],
            (nlohmann::json{{"host", "10.0.0.2:8788"}, {"up", false}, {"answered", 1}, {"failed", 2}}));

  const std::string metrics = client_->get("/metrics").body;
  for (const char* line :
       {"dedupd_xet_downloads_enabled 1\n", "dedupd_xet_download_bytes_total{source=\"local_cache\"} 1073741824\n",
        "dedupd_xet_download_bytes_total{source=\"tier\"} 0\n",
        "dedupd_xet_download_bytes_total{source=\"internet\"} 268435456\n",
        "dedupd_xet_download_requests_total{result=\"refused\"} 3\n", "dedupd_xet_download_cache_bytes 2147483648\n",
        "dedupd_xet_download_cache_evictions_total 5\n", "dedupd_xet_download_tier_up{host=\"10.0.0.1:8788\"} 1\n",
        "dedupd_xet_download_tier_hosts{state=\"down\"} 1\n", "dedupd_xet_download_tier_up{host=\"10.0.0.2:8788\"} 0\n",
        "dedupd_xet_download_tier_requests_total{host=\"10.0.0.2:8788\",result=\"failed\"} 2\n"})
    EXPECT_NE(metrics.find(line), std::string::npos) << line;

  // Every tier host down: red. No tier asked: no line, and no tier series
  // (its alert stays quiet); a cache dedupd may not read: why.
  status_.xet_downloads->counts.tier[0].up = false;
  EXPECT_NE(status_text(true).out.find(red("2 of 2 host(s) not answering: 10.0.0.1:8788, 10.0.0.2:8788") + "\n"),
            std::string::npos);
  status_.xet_downloads->counts.tier.clear();
  status_.xet_downloads->cache = {"/c", false, "cannot read /c: Permission denied", 0, 0, 0, 1'000'000};
  r = status_text();
  const auto lines = download_lines(r.out);
  ASSERT_EQ(lines.size(), 4u) << r.out;
  EXPECT_EQ(lines.back(), (Line{"Download cache", "size unknown: cannot read /c: Permission denied"}));
  ON_CALL(service_, status()).WillByDefault(Return(status_));
  EXPECT_EQ(client_->get("/metrics").body.find("dedupd_xet_download_tier_up"), std::string::npos);
  EXPECT_EQ(client_->get("/metrics").body.find("dedupd_xet_download_cache_bytes"), std::string::npos);

  // Nothing served yet: no ratio. Off: said, and nothing else.
  status_.xet_downloads = core::XetDownloadStatus{};
  EXPECT_EQ(download_lines(status_text().out),
            (std::vector<Line>{{"Downloads", "0 B from the local cache, 0 B from the tier, 0 B from the internet"},
                               {"Download cache", "not looked at yet"}}));
  status_.xet_downloads->enabled = false;
  EXPECT_EQ(
      download_lines(status_text().out),
      (std::vector<Line>{{"Downloads", "off (xet_endpoint.downloads.enabled): clients fetch from the CAS's storage"}}));
}

// Why dedupd refused range URLs and which of its fills failed: the
// reasons counted, in the text, in --json and in /metrics (every reason a
// series, 0 included).
TEST_F(StatusTextTest, DownloadsSayWhyRangeUrlsWereRefusedAndFillsFailed) {
  core::XetDownloadStatus d;
  d.counts.bytes_internet = std::uint64_t{8} << 20;
  d.counts.requests_refused = 3;
  d.counts.requests_failed = 1;
  d.faults.refused = {{"bad_signature", 0}, {"expired", 2}, {"not_cached", 1}};
  d.faults.fill_failed = {{"check", 1}, {"storage", 0}};
  d.faults.fill_failed_bytes = std::uint64_t{4} << 20;
  d.faults.cache_damaged = 2;
  status_.xet_downloads = d;
  auto r = status_text();
  const auto lines = download_lines(r.out);
  ASSERT_GE(lines.size(), 5u) << r.out;
  EXPECT_EQ(lines[2], (Line{"Range URLs", "3 refused (the client asks again; expired 2, not_cached 1), 1 failed"}));
  EXPECT_EQ(lines[3], (Line{"Failed fills", "1 (check 1), 4.0 MiB fetched from the storage for nothing"}));
  EXPECT_EQ(lines[4], (Line{"Damaged cache files",
                            "2 found at a grant (changed since their check, or failing it): removed, fetched again"}));

  const nlohmann::json printed = nlohmann::json::parse(status_text(false, true).out)["xet_downloads"];
  EXPECT_EQ(printed["refused"], (nlohmann::json{{"bad_signature", 0}, {"expired", 2}, {"not_cached", 1}}));
  EXPECT_EQ(printed["fill_failed"], (nlohmann::json{{"check", 1}, {"storage", 0}}));
  EXPECT_EQ(printed["fill_failed_bytes"], std::uint64_t{4} << 20);
  EXPECT_EQ(printed["cache_damaged"], 2u);

  const std::string metrics = client_->get("/metrics").body;
  for (const char* line :
       {"dedupd_xet_download_refusals_total{reason=\"bad_signature\"} 0\n",
        "dedupd_xet_download_refusals_total{reason=\"expired\"} 2\n",
        "dedupd_xet_download_fill_failures_total{reason=\"check\"} 1\n",
        "dedupd_xet_download_fill_failures_total{reason=\"storage\"} 0\n",
        "dedupd_xet_download_fill_failed_bytes_total 4194304\n", "dedupd_xet_download_cache_damaged_total 2\n"})
    EXPECT_NE(metrics.find(line), std::string::npos) << line;

  // None failed, none damaged: no line.
  status_.xet_downloads->faults.fill_failed = {{"check", 0}};
  status_.xet_downloads->faults.cache_damaged = 0;
  const auto quiet = download_lines(status_text().out);
  EXPECT_TRUE(std::none_of(quiet.begin(), quiet.end(), [](const Line& l) { return l.first == "Failed fills"; }));
  EXPECT_TRUE(std::none_of(quiet.begin(), quiet.end(), [](const Line& l) { return l.first == "Damaged cache files"; }));
}

}  // namespace
}  // namespace dedupd::daemon::testing
