// The real dedupd ingesting one large shard at a time: what a single shard
// costs in private memory and CPU, on top of an index of a chosen size. The
// e2e benchmark drops every file at once, so its peak mixes shards and its
// rate mixes sizes; this isolates the largest shard a Xet client writes.
//
//   bench_ingest_shard [--base N] [--shard N] [--repeat R] [--keyed] [--client]
//                      [--dir D] [--attach CMD] [--wrap CMD]
//
// --base N    entries indexed first, in 1 Mi-entry shards (default 1,048,576)
// --shard N   entries of each measured shard (default 1,048,576: 128 xorbs of
//             8,192 chunks, about the Xet client's 64 MiB limit)
// --repeat R  measured shards, one after the other (default 3)
// --keyed     the measured shards store keyed chunk hashes
// --client    the measured shards are written as the Rust client writes
//             them: file entries with verification, and the lookup tables
// --attach C  runs C (via sh) while the measured shards are ingested, with
//             {pid} replaced by dedupd's pid, then sends it SIGINT: e.g.
//             "perf record -g -p {pid} -o perf.data"
// --wrap C    starts dedupd under C (split at spaces), e.g. "heaptrack -o
//             FILE"; the memory and CPU numbers are then the wrapper's
// For each measured shard: file renamed in -> queryable (wall), dedupd's CPU
// seconds, and the peak of its anonymous memory (RssAnon, the pages of
// smaps_rollup's Anonymous) sampled every 2 ms.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/daemon_process.hpp"
#include "harness/http_client.hpp"
#include "harness/make_shard.hpp"
#include "harness/notify_socket.hpp"
#include "tests/bench/proc_stats.hpp"
#include "tests/bench/scratch_dir.hpp"

namespace {

namespace fs = std::filesystem;
using namespace dedupd;
using bench::cpu_of;
using bench::rss_anon_of;
using Clock = std::chrono::steady_clock;

double secs(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "bench_ingest_shard: %s\n", what.c_str());
  std::exit(1);
}

// A short sampling period: the peak of one shard lasts well under a second.
class PeakSampler {
 public:
  explicit PeakSampler(pid_t pid)
      : pid_(pid),
        sampler_(std::chrono::milliseconds(2), [this] { peak_ = std::max(peak_.load(), rss_anon_of(pid_)); }) {}
  long stop() {
    sampler_.stop();
    return peak_;
  }

 private:
  pid_t pid_;
  std::atomic<long> peak_{0};
  bench::Sampler sampler_;
};

std::uint64_t indexed_chunks(itest::HttpClient& http) {
  auto r = http.get("/v1/stats");
  if (r.status != 200) die("GET /v1/stats: " + std::to_string(r.status));
  return r.json()["chunks"].get<std::uint64_t>();
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t base = 1u << 20, shard = 1u << 20;
  int repeat = 3;
  bool keyed = false, client = false;
  fs::path dir = fs::temp_directory_path();
  std::string attach;
  std::vector<std::string> wrap;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--base" && i + 1 < argc) base = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--shard" && i + 1 < argc) shard = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--repeat" && i + 1 < argc) repeat = std::atoi(argv[++i]);
    else if (a == "--keyed") keyed = true;
    else if (a == "--client") client = true;
    else if (a == "--dir" && i + 1 < argc) dir = argv[++i];
    else if (a == "--attach" && i + 1 < argc) attach = argv[++i];
    else if (a == "--wrap" && i + 1 < argc) {
      std::istringstream words(argv[++i]);
      for (std::string w; words >> w;) wrap.push_back(w);
    } else
      die("usage: bench_ingest_shard [--base N] [--shard N] [--repeat R] [--keyed] [--client] [--dir D] "
          "[--attach CMD] [--wrap CMD]");
  }
  bench::ScratchDir scratch(dir, "dedupd-bench-ingest");
  const fs::path& root = scratch.path();
  fs::create_directories(root / "incoming");

  constexpr std::uint32_t kPerXorb = 8192;
  std::uint64_t seed = 1;
  auto make = [&](std::uint64_t entries, bool with_key, bool client_style) {
    itest::ShardSpec spec{.seed = seed++,
                          .xorbs = std::uint32_t(std::max<std::uint64_t>(1, entries / kPerXorb)),
                          .chunks_per_xorb = std::uint32_t(std::min<std::uint64_t>(entries, kPerXorb)),
                          .client_style = client_style};
    if (with_key) {
      shard::Key k;
      for (std::size_t b = 0; b < 32; ++b) k.bytes[b] = std::uint8_t(b * 7 + 1);
      spec.key = k;
      spec.expiry = std::uint64_t(std::time(nullptr)) + 3 * 24 * 3600;
    }
    return itest::make_shard(spec);
  };

  fs::path config = root / "dedupd.yaml", socket = root / "dedupd.sock", log = root / "dedupd.log";
  {
    std::ofstream f(config);
    f << "state_dir: " << (root / "state").string() << "\nsocket: " << socket.string() << "\nwatch:\n  - "
      << (root / "incoming").string() << "\nlog_level: info\n";
  }
  itest::NotifySocket notify(root / "notify.sock");
  itest::DaemonProcess proc;
  itest::LaunchOptions o;
  o.args = {"--config", config.string()};
  o.wrapper = wrap;
  o.env = {notify.env()};
  o.log_file = log;
  o.work_dir = root;
  proc.start(o);
  if (!notify.wait_for("READY=1", std::chrono::seconds(60))) die("no READY=1; see " + log.string());
  itest::HttpClient http(socket.string());
  const pid_t pid = proc.pid();

  // The base index, one shard at a time so its own peaks do not overlap.
  std::uint64_t expected = 0;
  auto drop_and_wait = [&](const itest::MadeShard& s) {
    fs::path staged = root / ("." + s.file_name());
    {
      std::ofstream f(staged, std::ios::binary);
      f.write(reinterpret_cast<const char*>(s.bytes.data()), std::streamsize(s.bytes.size()));
      if (!f) die("cannot write " + staged.string());
    }
    expected += s.chunks;
    auto t0 = Clock::now();
    fs::rename(staged, root / "incoming" / s.file_name());
    while (indexed_chunks(http) < expected) {
      if (secs(t0, Clock::now()) > 600) die("a shard was not indexed in 10 minutes; see " + log.string());
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return secs(t0, Clock::now());
  };
  for (std::uint64_t done = 0; done < base;) {
    auto s = make(std::min<std::uint64_t>(base - done, 1u << 20), false, false);
    drop_and_wait(s);
    done += s.chunks;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the post-drain malloc_trim
  std::printf("base: %llu entries; dedupd Anonymous at rest %.1f MiB\n", (unsigned long long)expected,
              double(rss_anon_of(pid)) / 1024);

  pid_t helper = -1;
  if (!attach.empty()) {
    std::string cmd = attach;
    for (auto at = cmd.find("{pid}"); at != std::string::npos; at = cmd.find("{pid}"))
      cmd.replace(at, 5, std::to_string(pid));
    helper = ::fork();
    if (helper == 0) {
      ::setpgid(0, 0);
      ::execl("/bin/sh", "sh", "-c", cmd.c_str(), nullptr);
      _exit(127);
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  double sum_wall = 0, sum_cpu = 0;
  long worst = 0;
  for (int r = 0; r < repeat; ++r) {
    auto s = make(shard, keyed, client);
    long rest = rss_anon_of(pid);
    double cpu0 = cpu_of(pid);
    PeakSampler sampler(pid);
    double wall = drop_and_wait(s);
    double cpu = cpu_of(pid) - cpu0;
    long peak = sampler.stop();
    worst = std::max(worst, peak);
    sum_wall += wall, sum_cpu += cpu;
    std::printf(
        "shard %d: %llu entries (%.1f MiB): %.3f s wall, %.3f cpu-s, %.0f k entries/s, %.0f k/cpu-s; "
        "Anonymous %.1f MiB before, peak %.1f MiB\n",
        r + 1, (unsigned long long)s.chunks, double(s.bytes.size()) / (1 << 20), wall, cpu,
        double(s.chunks) / wall / 1e3, double(s.chunks) / cpu / 1e3, double(rest) / 1024, double(peak) / 1024);
    std::fflush(stdout);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  if (helper > 0) {
    ::kill(-helper, SIGINT);
    int st;
    ::waitpid(helper, &st, 0);
  }
  std::printf("mean: %.0f k entries/s, %.0f k entries/cpu-s; peak Anonymous %.1f MiB\n",
              double(shard) * repeat / sum_wall / 1e3, double(shard) * repeat / sum_cpu / 1e3, double(worst) / 1024);
  if (proc.stop(std::chrono::seconds(60)) != 0) die("dedupd did not stop cleanly; see " + log.string());
  return 0;
}
