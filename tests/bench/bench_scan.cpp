// Scan benchmark (docs/PERFORMANCE.md, "Scan"): prints a table, asserts
// nothing. On the same random bytes, in one run:
//   one core, in memory: xet-core chunking + chunk hashing (ChunkHasher)
//     next to a bare BLAKE3 pass, the boundary finder alone and OpenSSL
//     SHA-256;
//   xet-core's own chunker (its Wasm build under Node, the test oracle of
//     @huggingface/hub 2.17.5) over the same bytes, when --oracle names its
//     xet-chunk directory and node is on PATH; n/a otherwise;
//   the whole scan of a file in the page cache (chunks, chunk hashes, file
//     hash and sha256 on a second thread) next to `sha256sum FILE` and a bare
//     read + BLAKE3 pass over the file.
//
//   bench_scan [--mib N] [--repeat R] [--dir D] [--oracle DIR] [--quick]
// Default N = 512 MiB of random bytes, best of R = 3. --quick (ctest smoke):
// 16 MiB, one repeat.
#include <blake3.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "chunk/chunk_hasher.hpp"
#include "chunk/chunker.hpp"
#include "chunk/file_digest.hpp"
#include "chunk/sha256.hpp"

namespace {

using namespace dedupd;
using Clock = std::chrono::steady_clock;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "bench_scan: %s\n", what.c_str());
  std::exit(1);
}

void row(const std::string& name, std::optional<double> mb_s, const std::string& note = "") {
  char v[32];
  if (mb_s) std::snprintf(v, sizeof v, "%.0f MB/s", *mb_s);
  else std::snprintf(v, sizeof v, "n/a");
  std::printf("  %-52s %12s  %s\n", name.c_str(), v, note.c_str());
  std::fflush(stdout);
}

std::string ratio(double a, double b) {
  char s[32];
  std::snprintf(s, sizeof s, "%.2f x", a / b);
  return s;
}

double cpu_seconds(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
}

// Best of `repeat` runs, as MB/s (10^6 bytes) over `bytes`, by this
// thread's CPU time: the machine is shared, and CPU seconds are what a
// one-core figure means. Every figure of a table is measured the same way.
double best_rate(std::uint64_t bytes, int repeat, const std::function<void()>& f) {
  double best = 1e30;
  for (int i = 0; i < repeat; ++i) {
    const double t0 = cpu_seconds(CLOCK_THREAD_CPUTIME_ID);
    f();
    best = std::min(best, cpu_seconds(CLOCK_THREAD_CPUTIME_ID) - t0);
  }
  return double(bytes) / best / 1e6;
}

// Runs a command, returns its CPU seconds, user + system (nullopt if it
// failed).
std::optional<double> time_command(const std::vector<std::string>& argv, bool quiet_out = true) {
  const pid_t pid = fork();
  if (pid < 0) return std::nullopt;
  if (pid == 0) {
    if (quiet_out) {
      const int fd = open("/dev/null", O_WRONLY);
      dup2(fd, 1);
    }
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  rusage ru{};
  if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  auto secs = [](const timeval& t) { return double(t.tv_sec) + double(t.tv_usec) / 1e6; };
  return secs(ru.ru_utime) + secs(ru.ru_stime);
}

bool on_path(const std::string& prog) {
  const char* path = std::getenv("PATH");
  if (!path) return false;
  std::string p = path;
  for (std::size_t at = 0; at <= p.size();) {
    std::size_t end = p.find(':', at);
    if (end == std::string::npos) end = p.size();
    if (access((p.substr(at, end - at) + "/" + prog).c_str(), X_OK) == 0) return true;
    at = end + 1;
  }
  return false;
}

// The oracle under Node: reads FILE, feeds it to xet-core's Wasm Chunker in
// 8 MiB pieces (chunk boundaries and chunk hashes, as ChunkHasher), prints
// the best MB/s of the repeats. Written to a temporary file at run time.
constexpr const char* kOracleScript = R"JS(
import { readFileSync } from "node:fs";
const [dir, file, repeat] = process.argv.slice(2);
const glue = await import("data:text/javascript;base64," +
  Buffer.from(readFileSync(`${dir}/chunker_wasm_bg.js`, "utf8")).toString("base64"));
const ts = readFileSync(`${dir}/chunker_wasm_bg.wasm.base64.ts`, "utf8");
glue.initSync({ module: Buffer.from(ts.match(/const wasmBase64 = `([^`]*)`/)[1].replace(/\s+/g, ""), "base64") });
const data = readFileSync(file);
// CPU seconds of the process, as the C++ figures (the machine is shared).
let best = Infinity, chunks = 0;
for (let r = 0; r < Number(repeat); r++) {
  const t0 = process.cpuUsage();
  const c = new glue.Chunker(64 * 1024);
  chunks = 0;
  for (let at = 0; at < data.length; at += 8 << 20) chunks += c.add_data(data.subarray(at, at + (8 << 20))).length;
  chunks += c.finish().length;
  c.free();
  const t = process.cpuUsage(t0);
  best = Math.min(best, (t.user + t.system) / 1e6);
}
console.log(JSON.stringify({ mb_s: data.length / best / 1e6, chunks }));
)JS";

std::optional<double> oracle_rate(const std::string& dir, const std::string& file, int repeat,
                                  const std::filesystem::path& work, std::uint64_t expect_chunks) {
  if (dir.empty() || !on_path("node")) return std::nullopt;
  const auto script = work / "oracle_bench.mjs";
  std::ofstream(script) << kOracleScript;
  const auto out = work / "oracle_bench.out";
  const std::string cmd = "node '" + script.string() + "' '" + dir + "' '" + file + "' " + std::to_string(repeat) +
                          " > '" + out.string() + "'";
  if (std::system(cmd.c_str()) != 0) return std::nullopt;
  std::ifstream in(out);
  std::string line;
  std::getline(in, line);
  double mb_s = 0;
  unsigned long long chunks = 0;
  if (std::sscanf(line.c_str(), "{\"mb_s\":%lf,\"chunks\":%llu}", &mb_s, &chunks) != 2) return std::nullopt;
  if (chunks != expect_chunks)
    die("the oracle cut " + std::to_string(chunks) + " chunks, we cut " + std::to_string(expect_chunks));
  return mb_s;
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t mib = 512;
  int repeat = 3;
  std::string dir_arg, oracle_dir;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) die(a + " needs a value");
      return argv[++i];
    };
    if (a == "--mib") mib = std::stoull(next());
    else if (a == "--repeat") repeat = std::stoi(next());
    else if (a == "--dir") dir_arg = next();
    else if (a == "--oracle") oracle_dir = next();
    else if (a == "--quick") mib = 16, repeat = 1;
    else die("unknown argument " + a + " (bench_scan [--mib N] [--repeat R] [--dir D] [--oracle DIR] [--quick])");
  }
  const std::uint64_t size = mib << 20;

  // Random bytes (xorshift64*), and the same bytes in a file.
  std::vector<std::uint8_t> data(size);
  std::uint64_t s = 0x9e3779b97f4a7c15ull;
  for (std::size_t i = 0; i < size; i += 8) {
    s ^= s >> 12, s ^= s << 25, s ^= s >> 27;
    const std::uint64_t v = s * 0x2545f4914f6cdd1dull;
    std::memcpy(data.data() + i, &v, std::min<std::size_t>(8, size - i));
  }
  const std::filesystem::path work =
      (dir_arg.empty() ? std::filesystem::temp_directory_path() : std::filesystem::path(dir_arg)) /
      ("bench_scan." + std::to_string(getpid()));
  std::filesystem::create_directories(work);
  const std::string file = (work / "random.bin").string();
  {
    std::ofstream f(file, std::ios::binary);
    f.write(reinterpret_cast<const char*>(data.data()), std::streamsize(size));
    if (!f) die("cannot write " + file);
  }

  std::printf("bench_scan: %llu MiB of random bytes, best of %d, %ld CPUs\n", (unsigned long long)mib, repeat,
              sysconf(_SC_NPROCESSORS_ONLN));
  std::printf("\nOne core, bytes in memory\n");
  const double blake3 = best_rate(size, repeat, [&] {
    blake3_hasher h;
    blake3_hasher_init(&h);
    blake3_hasher_update(&h, data.data(), data.size());
    std::uint8_t out[32];
    blake3_hasher_finalize(&h, out, 32);
  });
  row("bare BLAKE3 pass (baseline)", blake3);
  const double sha = best_rate(size, repeat, [&] {
    chunk::Sha256 h;
    h.update(data);
    (void)h.finish();
  });
  row("OpenSSL SHA-256 (EVP)", sha);
  std::uint64_t n_boundaries = 0;
  const double boundaries = best_rate(size, repeat, [&] { n_boundaries = chunk::chunk_lengths(data).size(); });
  row("chunk boundaries only", boundaries);
  std::uint64_t n_chunks = 0;
  const double chunking = best_rate(size, repeat, [&] {
    chunk::ChunkHasher h;
    std::vector<chunk::ChunkRecord> out;
    out.reserve(size / 8192 + 1);
    h.update(data, out);
    (void)h.finish(out);
    n_chunks = out.size();
  });
  row("chunking + chunk hashing (goal >= 1000 MB/s)", chunking,
      ratio(chunking, blake3) + " of bare BLAKE3, " + std::to_string(n_chunks) + " chunks");
  if (n_chunks != n_boundaries) die("the hasher and the boundary finder disagree");

  const auto oracle = oracle_rate(oracle_dir, file, repeat, work, n_chunks);
  row("xet-core's Wasm chunker under Node (oracle)", oracle,
      oracle               ? "ours is " + ratio(chunking, *oracle) + " (goal >= 1.8 x)"
      : oracle_dir.empty() ? "(no --oracle DIR)"
                           : "(node or the oracle not found)");

  std::printf("\nWhole scan of a file in the page cache\n");
  data.clear();
  data.shrink_to_fit();
  // Two threads: the figure is what two idle cores give, the bytes over the
  // busier thread's CPU time (this one reads, chunks and hashes; the other
  // does sha256); the wall time on this shared machine is printed beside it.
  double scan_busiest = 1e30, scan_total = 0, scan_wall = 0;
  for (int i = 0; i < repeat; ++i) {
    const auto w0 = Clock::now();
    const double p0 = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID), t0 = cpu_seconds(CLOCK_THREAD_CPUTIME_ID);
    auto d = chunk::digest_file(file);
    const double main_cpu = cpu_seconds(CLOCK_THREAD_CPUTIME_ID) - t0;
    const double all_cpu = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID) - p0;
    if (!d || d->chunks != n_chunks) die("scan of " + file + " failed");
    const double busiest = std::max(main_cpu, all_cpu - main_cpu);
    if (busiest < scan_busiest) {
      scan_busiest = busiest;
      scan_total = all_cpu;
      scan_wall = std::chrono::duration<double>(Clock::now() - w0).count();
    }
  }
  const double scan = double(size) / scan_busiest / 1e6;
  const double read_blake3 = best_rate(size, repeat, [&] {
    const int fd = open(file.c_str(), O_RDONLY);
    std::vector<std::uint8_t> buf(4 << 20);
    blake3_hasher h;
    blake3_hasher_init(&h);
    for (ssize_t r; (r = read(fd, buf.data(), buf.size())) > 0;) blake3_hasher_update(&h, buf.data(), std::size_t(r));
    close(fd);
  });
  row("bare read + BLAKE3 pass (baseline)", read_blake3);
  std::optional<double> sha256sum;
  if (on_path("sha256sum")) {
    double best = 1e30;
    for (int i = 0; i < repeat; ++i)
      if (auto t = time_command({"sha256sum", file})) best = std::min(best, *t);
    if (best < 1e30) sha256sum = double(size) / best / 1e6;
  }
  row("sha256sum FILE (baseline)", sha256sum);
  row("scan: chunks, hashes, file hash, sha256 (goal >= 1000 MB/s)", scan,
      (sha256sum ? ratio(scan, *sha256sum) + " of sha256sum, " : std::string()) + ratio(scan, read_blake3) +
          " of read + BLAKE3");
  char note[160];
  std::snprintf(note, sizeof note, "CPU %.0f MB/s of all threads' time; wall %.0f MB/s on this shared machine",
                double(size) / scan_total / 1e6, double(size) / scan_wall / 1e6);
  std::printf("  %-52s %12s  %s\n", "", "", note);

  std::filesystem::remove_all(work);
  return 0;
}
