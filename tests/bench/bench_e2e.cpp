// End-to-end benchmark of the real dedupd, through its socket, each number
// next to a baseline measured in the same run on the same disk. Prints a
// table and writes it as JSON. Asserts nothing about time; it fails only
// when an answer is wrong (a chunk that must be found is not).
//
//   bench_e2e [--chunks N] [--keys K] [--dir D] [--json FILE] [--quick]
//
// N (default 10,000,000) chunk entries in shards of the Xet shape: xorbs of
// ~8 Ki chunks, upload shards of 8..128 xorbs (up to the client's 64 MiB
// shard size), and a tenth of the entries in keyed global-dedup shards (1..4
// xorbs each) under K different keys (default 4; 0: no keyed shards; every
// lookup hashes the query once per live key). Then:
//   ingest        all files renamed into the watched dir -> all queryable
//                 vs a bare LMDB insert loop of the same records (32-byte key,
//                 16-byte value, one transaction and fsync per shard);
//   single query  GET /v1/chunk/<hash>, one kept-alive connection, p50/p99/p999
//                 vs the same GETs of bare_http_get (bare_http_get.cpp: one
//                 libmicrohttpd thread doing mdb_get on the bare LMDB) in
//                 alternating blocks, and in-process mdb_get (one read txn
//                 renew per get);
//   batch query   POST /v1/chunk, 10,000 hashes per request, hashes/s
//                 vs a bare mdb_get loop, 10,000 per read txn;
//   streamed      every raw chunk hash in one streamed POST /v1/chunk, through
//                 `dedupctl query - --json-lines` (and --format short) with its
//                 output to a file, and through a raw socket; the client's
//                 peak RSS and dedupd's peak anonymous memory meanwhile
//                 vs a bare mdb_get loop over the same keys, 4,096 per txn;
//   start->READY  restart with the full index (data.mdb evicted from the page
//                 cache first), timed to READY=1 on NOTIFY_SOCKET
//                 vs the bare LMDB opened cold and asked once, in process;
//                 and with dedupd's executable and libraries evicted too
//                 vs `dedupd --version` so evicted;
//   disk          data.mdb bytes per chunk entry;
//   memory        dedupd's /proc/PID/smaps_rollup at rest and under load;
//   purge         DELETE of a 1 Mi-entry shard while a client queries: the
//                 purge time and the client's p99 before and during it.
// --quick (the ctest smoke) runs 300,000 entries and a 64 Ki-entry purge.
// DEDUPD_BENCH_PROFILE=DIR records `perf record -a -g` of the single GETs,
// the second round of each stream and the cold restarts into
// DIR/<phase>.data, for `perf report --comm dedupd` (or dedupctl,
// bare_http_get): where the time goes.
// At scale (issue 42): --stream-max N (default 30 M) streams every k-th raw
// hash past N; --bare-insert auto|full|sample (auto: sample past 30 M
// entries) and --bare-sample N (default 3 M) say how the bare index is built
// (see "baseline: bare LMDB" below); late shards, a twentieth more entries,
// come in at the end while a client asks: the GET p99 during ingest.
// --series 1M,3M,10M,30M runs the whole bench once per size (each in a child
// process of its own) and writes one JSON document of the costs that may grow
// with the index, each next to its baseline (tests/bench/series.hpp).
#include <fcntl.h>
#include <lmdb.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/daemon_process.hpp"
#include "harness/http_client.hpp"
#include "harness/make_shard.hpp"
#include "harness/notify_socket.hpp"
#include "harness/program_run.hpp"
#include "shard/mapped_file.hpp"
#include "shard/reader.hpp"
#include "tests/bench/bare_http_get.hpp"
#include "tests/bench/proc_stats.hpp"
#include "tests/bench/program_files.hpp"
#include "tests/bench/scratch_dir.hpp"
#include "tests/bench/series.hpp"

namespace {

namespace fs = std::filesystem;
using namespace dedupd;
using bench::cpu_of;
using bench::rss_anon_of;
using Clock = std::chrono::steady_clock;
using itest::HttpClient;
using itest::program_peak_rss_kib;

double secs(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }
double us(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "bench_e2e: %s\n", what.c_str());
  std::exit(1);
}
void check(int rc, const char* what) {
  if (rc) die(std::string(what) + ": " + mdb_strerror(rc));
}

// ---------------------------------------------------------------- reporting
struct Row {
  std::string metric, unit;
  double value = NAN, baseline = NAN;
  std::string goal;
  int met = -1;  // -1: no goal, 0: missed, 1: met
  std::string note;
};
std::vector<Row> rows;
nlohmann::json extra = nlohmann::json::object();

void add(Row r) {
  auto num = [](double v) {
    if (std::isnan(v)) return std::string("-");
    char b[32];
    std::snprintf(b, sizeof b, v >= 100 ? "%.0f" : v >= 10 ? "%.1f" : "%.2f", v);
    return std::string(b);
  };
  std::string ratio = std::isnan(r.baseline) || r.baseline == 0 ? "-" : num(r.value / r.baseline);
  std::printf("  %-38s %12s %12s %7s  %-24s %s %s\n", (r.metric + " (" + r.unit + ")").c_str(), num(r.value).c_str(),
              num(r.baseline).c_str(), ratio.c_str(), r.goal.c_str(),
              r.met < 0 ? ""
              : r.met   ? "met"
                        : "MISSED",
              r.note.c_str());
  std::fflush(stdout);
  rows.push_back(std::move(r));
}

// ---------------------------------------------------------------- machine
std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}
std::uint64_t mem_total_kib() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  std::uint64_t v;
  while (f >> key >> v) {
    if (key == "MemTotal:") return v;
    f.ignore(1 << 10, '\n');
  }
  return 0;
}
double load1() {
  double l = 0;
  std::ifstream("/proc/loadavg") >> l;
  return l;
}

// dedupd's memory, KiB, from smaps_rollup.
struct Mem {
  long rss = 0, private_clean = 0, private_dirty = 0, anonymous = 0;
  long priv() const { return private_clean + private_dirty; }
};
Mem mem_of(pid_t pid) {
  Mem m;
  std::ifstream f("/proc/" + std::to_string(pid) + "/smaps_rollup");
  std::string line;
  while (std::getline(f, line)) {
    auto v = [&](const char* k) { return line.rfind(k, 0) == 0 ? std::atol(line.c_str() + std::strlen(k)) : -1; };
    if (long x = v("Rss:"); x >= 0) m.rss = x;
    if (long x = v("Private_Clean:"); x >= 0) m.private_clean = x;
    if (long x = v("Private_Dirty:"); x >= 0) m.private_dirty = x;
    if (long x = v("Anonymous:"); x >= 0) m.anonymous = x;
  }
  return m;
}

// Peak of each field while `active`: Anonymous every 20 ms (RssAnon, a
// counter), the rest of smaps_rollup at most 1 % of one CPU. A read of
// smaps_rollup walks the page tables of every resident page of data.mdb: at
// 268 M entries (12 GB resident) one took about 180 ms, and read every
// 500 ms it took a fifth of the 2 CPUs from the daemon it measured (a
// perf record of the streams). So the next read waits 100 times as long as
// the last one took, and at least 500 ms.
class MemSampler {
 public:
  explicit MemSampler(pid_t pid) : pid_(pid), sampler_(std::chrono::milliseconds(20), [this] { sample(); }) {}
  Mem stop() {
    sampler_.stop();
    std::lock_guard l(mu_);
    return peak_;
  }

 private:
  void sample() {
    Mem m;
    const auto now = Clock::now();
    if (now >= next_rollup_) {
      m = mem_of(pid_);
      const auto took = Clock::now() - now;
      next_rollup_ = Clock::now() + std::max<Clock::duration>(std::chrono::milliseconds(500), 100 * took);
    }
    m.anonymous = std::max(m.anonymous, rss_anon_of(pid_));
    std::lock_guard l(mu_);
    peak_.rss = std::max(peak_.rss, m.rss);
    peak_.private_clean = std::max(peak_.private_clean, m.private_clean);
    peak_.private_dirty = std::max(peak_.private_dirty, m.private_dirty);
    peak_.anonymous = std::max(peak_.anonymous, m.anonymous);
  }

  pid_t pid_;
  Clock::time_point next_rollup_{};  // the sampler thread's only
  std::mutex mu_;
  Mem peak_;
  bench::Sampler sampler_;
};

void evict(const fs::path& file) {
  int fd = ::open(file.c_str(), O_RDONLY);
  if (fd < 0) return;
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

// A bare LMDB environment in `dir` (made if need be) and its main database:
// the baselines' index, opened as each of its builds needs it.
MDB_env* open_bare_env(const fs::path& dir, MDB_dbi& dbi) {
  fs::create_directories(dir);
  MDB_env* env = nullptr;
  check(mdb_env_create(&env), "mdb_env_create");
  check(mdb_env_set_mapsize(env, std::size_t(256) << 30), "mapsize");
  check(mdb_env_open(env, dir.c_str(), MDB_NOTLS | MDB_NORDAHEAD, 0640), "mdb_env_open");
  MDB_txn* txn = nullptr;
  check(mdb_txn_begin(env, nullptr, 0, &txn), "begin");
  check(mdb_dbi_open(txn, nullptr, 0, &dbi), "dbi");
  check(mdb_txn_commit(txn), "commit");
  return env;
}

// One write transaction (and its fsync) putting each key, its position as
// the 16-byte value: MDB_APPEND in `flags` when the keys come sorted.
void put_keys(MDB_env* env, MDB_dbi dbi, const std::vector<shard::Hash>& keys, unsigned flags) {
  std::uint8_t value[16] = {};
  MDB_txn* txn = nullptr;
  check(mdb_txn_begin(env, nullptr, 0, &txn), "begin");
  for (std::size_t i = 0; i < keys.size(); ++i) {
    std::memcpy(value, &i, sizeof i);
    MDB_val k{32, const_cast<std::uint8_t*>(keys[i].bytes.data())}, v{16, value};
    check(mdb_put(txn, dbi, &k, &v, flags), "put");
  }
  check(mdb_txn_commit(txn), "commit");
}

// Reads a file whole into the page cache.
void load(const fs::path& file) {
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  std::vector<char> buf(std::size_t(4) << 20);
  while (::read(fd, buf.data(), buf.size()) > 0) {
  }
  ::close(fd);
}

// The page cache holds the side about to be asked: `keep` read in whole,
// each of `drop` (files, or directories of files) dropped. Past about 100 M
// entries the bench's own files (the bare index, the shards, the streams'
// output) outgrow RAM, and whichever side ran last would be asked warm and
// the other from disk. Up to 30 M everything fits and this costs a second.
void favour(const fs::path& keep, const std::vector<fs::path>& drop) {
  for (const auto& d : drop) {
    std::error_code ec;
    if (fs::is_directory(d, ec)) {
      for (const auto& e : fs::directory_iterator(d, ec))
        if (e.is_regular_file(ec)) evict(e.path());
    } else {
      evict(d);
    }
  }
  load(keep);
}

struct Pct {
  double p50 = 0, p99 = 0, p999 = 0;
};
Pct pct(std::vector<double> v) {
  Pct p;
  if (v.empty()) return p;
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return v[std::min(v.size() - 1, std::size_t(q * double(v.size())))]; };
  return {at(0.5), at(0.99), at(0.999)};
}

// ---------------------------------------------------------------- dataset
struct Planned {
  fs::path staged;
  std::string name;
  std::uint64_t chunks = 0;
  bool keyed = false;
};

// Stored chunk hashes of a staged shard file (what a bare LMDB would key).
std::vector<shard::Hash> stored_chunks(const fs::path& file) {
  auto mapped = shard::MappedFile::open(file);
  if (!mapped) die("cannot map " + file.string());
  auto view = shard::ShardView::parse(mapped->bytes());
  if (!view) die("generated shard does not parse: " + view.error().to_string());
  std::vector<shard::Hash> out;
  out.reserve(view->stats().chunks);
  for (shard::XorbBlock x : view->xorbs())
    for (std::uint32_t i = 0; i < x.num_chunks(); ++i) out.push_back(x.chunk(i).chunk_hash);
  return out;
}

// ---------------------------------------------------------------- the daemon
struct Daemon {
  fs::path dir, socket, config, log;
  itest::DaemonProcess proc;
  std::unique_ptr<itest::NotifySocket> notify;
  std::thread drain;
  std::atomic<bool> draining{false};
  int starts = 0;

  // Starts dedupd and returns the time from fork to READY=1.
  double start() {
    notify = std::make_unique<itest::NotifySocket>(dir / ("notify" + std::to_string(starts++) + ".sock"));
    itest::LaunchOptions o;
    o.args = {"--config", config.string()};
    o.env = {notify->env()};
    o.log_file = log;
    o.work_dir = dir;
    auto t0 = Clock::now();
    proc.start(o);
    if (!notify->wait_for("READY=1", std::chrono::seconds(120))) die("dedupd sent no READY=1; see " + log.string());
    double s = secs(t0, Clock::now());
    // Read on, as systemd does: the kernel queues 10 datagrams by default
    // (net.unix.max_dgram_qlen), and past that sd_notify blocks dedupd's
    // work loop (a 10 M run hung at its stop on STOPPING=1).
    draining = true;
    drain = std::thread([this] {
      while (draining) notify->wait_for("\n(never sent)", std::chrono::milliseconds(50));
    });
    return s;
  }
  // SIGTERM -> exit; returns seconds (systemd waits 90 s before SIGKILL).
  double stop() {
    auto t0 = Clock::now();
    int code = proc.stop(std::chrono::seconds(120));
    draining = false;
    drain.join();
    double s = secs(t0, Clock::now());
    if (code != 0)
      die("dedupd did not stop cleanly (exit " + std::to_string(code) + " after " + std::to_string(s) + " s); see " +
          log.string());
    return s;
  }
};

nlohmann::json stats(HttpClient& http) {
  auto r = http.get("/v1/stats");
  if (r.status != 200) die("GET /v1/stats: " + std::to_string(r.status));
  return r.json();
}

// Polls /v1/stats until it counts `chunks` entries in `live` live shards:
// dropped files are then queryable. Dies past `limit_s` naming `what`.
void wait_counted(HttpClient& http, std::uint64_t chunks, std::size_t live, Clock::time_point since, double limit_s,
                  const std::string& what) {
  for (;;) {
    auto st = stats(http);
    if (st["chunks"].get<std::uint64_t>() >= chunks && st["shards"]["live"].get<std::size_t>() >= live) return;
    if (secs(since, Clock::now()) > limit_s) die(what + " not queryable in " + std::to_string(int(limit_s)) + " s");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::string batch_body(const std::vector<shard::Hash>& hashes, std::size_t at, std::size_t n) {
  std::string body;
  body.reserve(16 + n * 67);
  body += "{\"hashes\":[";
  for (std::size_t i = at; i < at + n; ++i) {
    if (i > at) body += ',';
    body += '"';
    body += hashes[i].to_string();
    body += '"';
  }
  body += "]}";
  return body;
}

// ---------------------------------------------------------------- streaming
struct StreamRun {
  double seconds = 0;
  std::uint64_t lines = 0;
  long client_peak_kib = 0;
  long daemon_anon_kib = 0;
  int code = -1;
};

// Read behind itself (each block dropped from the page cache once counted):
// at 268 M the answer is gigabytes, and reading it back cached would evict
// the index the next stream reads.
std::uint64_t count_lines(const fs::path& p) {
  int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) die("cannot open " + p.string());
  std::uint64_t n = 0;
  off_t at = 0;
  std::vector<char> buf(1 << 20);
  for (ssize_t got; (got = ::read(fd, buf.data(), buf.size())) > 0; at += got) {
    n += std::uint64_t(std::count(buf.data(), buf.data() + got, '\n'));
    ::posix_fadvise(fd, at, got, POSIX_FADV_DONTNEED);
  }
  ::close(fd);
  return n;
}

// dedupctl with stdin from `input` and stdout to `output`; its peak RSS
// sampled every 10 ms while it runs.
StreamRun run_dedupctl(const std::vector<std::string>& args, const fs::path& input, const fs::path& output) {
  StreamRun r;
  auto t0 = Clock::now();
  pid_t pid = ::fork();
  if (pid == 0) {
    int in = ::open(input.c_str(), O_RDONLY | O_CLOEXEC);
    int out = ::open(output.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ::dup2(in, 0);
    ::dup2(out, 1);
    std::vector<char*> argv{const_cast<char*>(DEDUPCTL_BINARY)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    r.client_peak_kib = std::max(r.client_peak_kib, program_peak_rss_kib(pid, "dedupctl"));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  r.seconds = secs(t0, Clock::now());
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// The lines of a stream's answer, and the answer removed: gigabytes at 10 M,
// removed before the page cache writes them back, or ext4 makes dedupd's
// next fsync (at its stop) wait for them.
std::uint64_t count_and_remove(const fs::path& output) {
  std::uint64_t lines = count_lines(output);
  fs::remove(output);
  return lines;
}

// The same stream without dedupctl: the file sent as a chunked text/plain
// body over a plain socket by one thread, the NDJSON answer read and its
// lines counted by another.
StreamRun raw_socket_stream(const fs::path& socket, const fs::path& input) {
  StreamRun r;
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket.c_str(), sizeof addr.sun_path - 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) die("raw socket: cannot connect");
  auto send_all = [&](const char* p, std::size_t n) {
    while (n > 0) {
      ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
      if (w <= 0) die("raw socket: send failed");
      p += w;
      n -= std::size_t(w);
    }
  };
  auto t0 = Clock::now();
  std::thread writer([&] {
    const std::string head =
        "POST /v1/chunk HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nAccept: application/x-ndjson\r\n"
        "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
    send_all(head.data(), head.size());
    std::ifstream f(input, std::ios::binary);
    std::vector<char> buf(1 << 18);
    char size_line[32];
    while (f.read(buf.data(), std::streamsize(buf.size())) || f.gcount() > 0) {
      int k = std::snprintf(size_line, sizeof size_line, "%zx\r\n", std::size_t(f.gcount()));
      send_all(size_line, std::size_t(k));
      send_all(buf.data(), std::size_t(f.gcount()));
      send_all("\r\n", 2);
    }
    send_all("0\r\n\r\n", 5);
  });
  // The chunked answer: "<hex size>\r\n<data>\r\n" up to a zero size; every
  // '\n' in the data ends one result.
  std::vector<char> buf(1 << 18);
  std::string head, size_text;
  bool headers = true, done = false;
  std::uint64_t data_left = 0;
  enum { size_line, data, data_end } state = size_line;
  while (!done) {
    ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
    if (n <= 0) break;
    const char* p = buf.data();
    const char* end = p + n;
    if (headers) {
      head.append(p, end);
      auto at = head.find("\r\n\r\n");
      if (at == std::string::npos) continue;
      if (head.rfind("HTTP/1.1 200", 0) != 0) die("raw socket: " + head.substr(0, head.find('\r')));
      headers = false;
      p = end - (head.size() - (at + 4));
    }
    while (p < end && !done) {
      if (state == size_line) {
        if (*p == '\n') {
          data_left = std::strtoull(size_text.c_str(), nullptr, 16);
          size_text.clear();
          if (data_left == 0) done = true;
          state = data;
        } else if (*p != '\r') {
          size_text += *p;
        }
        ++p;
      } else if (state == data) {
        std::size_t k = std::size_t(std::min<std::uint64_t>(data_left, std::uint64_t(end - p)));
        r.lines += std::uint64_t(std::count(p, p + k, '\n'));
        p += k;
        data_left -= k;
        if (data_left == 0) state = data_end;
      } else {
        if (*p == '\n') state = size_line;
        ++p;
      }
    }
  }
  writer.join();
  r.seconds = secs(t0, Clock::now());
  ::close(fd);
  return r;
}

std::string log_of(const Daemon& d) { return d.log.string(); }

// `perf record` of the whole machine while it lives, when DEDUPD_BENCH_PROFILE
// names a directory; nothing otherwise.
class Profile {
 public:
  explicit Profile(const std::string& phase) {
    const char* dir = std::getenv("DEDUPD_BENCH_PROFILE");
    if (!dir || !*dir) return;
    std::string out = std::string(dir) + "/" + phase + ".data";
    pid_ = ::fork();
    if (pid_ == 0) {
      int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
      ::dup2(null, 1);
      ::dup2(null, 2);
      ::execlp("perf", "perf", "record", "-a", "-g", "-F", "499", "-o", out.c_str(), nullptr);
      _exit(127);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // perf's start
  }
  Profile(const Profile&) = delete;
  Profile& operator=(const Profile&) = delete;
  ~Profile() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGINT);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }

 private:
  pid_t pid_ = -1;
};

// --series: the rows whose cost may grow with the index, by size, each with
// the baseline its own run measured.
int run_series(const std::string& list, const std::vector<std::string>& args, const std::string& json_out) {
  auto sizes = bench::parse_sizes(list);
  if (sizes.empty()) die("--series: a list of sizes like 1M,3M,10M,30M");
  const std::pair<const char*, const char*> picks[] = {
      {"ingest", "ingest, file appears -> queryable"},
      {"stream_json_lines", "dedupctl query - --json-lines > file"},
      {"stream_short", "dedupctl query - --format short > file"},
      {"single_get_p99", "single GET p99"},
      {"single_get_p99_ingest", "single GET p99 during ingest"},
      {"start_to_ready", "start -> READY, full index, cold"},
      {"start_to_ready_unloaded", "start -> READY, program files evicted too"},
      {"bytes_per_entry", "data.mdb bytes per chunk entry"},
      {"filter_bytes_per_entry", "chunk filters' memory per entry"},
  };
  // What each baseline is; a run that says how it built its bare index
  // (issue 42: sampled past 30 M) overrides the first and the last.
  const char* baseline_is[] = {"bare mdb_put loop, one txn + fsync per shard",
                               "bare mdb_get loop, 4,096 per txn",
                               "bare mdb_get loop, 4,096 per txn",
                               "bare_http_get p99: libmicrohttpd, one thread, mdb_get; the same client, interleaved",
                               "the same client's single GET p99, idle",
                               "bare LMDB open + one mdb_get, cold, in process",
                               "dedupd --version, its program files evicted",
                               "bare LMDB of 32 + 16 B records",
                               ""};
  const bool failed = bench::run_series("bench_e2e", list, args, "--chunks", sizes, json_out, [&](nlohmann::json run) {
    nlohmann::json point = {{"entries", run["extra"]["dataset"]["entries"]},
                            {"keys", run["extra"]["dataset"]["keys"]},
                            {"machine", run["machine"]},
                            {"metrics", nlohmann::json::object()}};
    const nlohmann::json bare = run["extra"].value("bare", nlohmann::json::object());
    for (std::size_t i = 0; i < std::size(picks); ++i)
      for (const auto& r : run["rows"])
        if (r["metric"] == picks[i].second) {
          std::string is = baseline_is[i];
          if (std::string(picks[i].first) == "ingest") is = bare.value("insert_is", is);
          if (std::string(picks[i].first) == "bytes_per_entry") is = bare.value("db_is", is);
          point["metrics"][picks[i].first] = {
              {"what", picks[i].second}, {"unit", r["unit"]}, {"value", r["value"]}, {"baseline", r["baseline"]}};
          if (!is.empty()) point["metrics"][picks[i].first]["baseline_is"] = is;
        }
    point["rows"] = run["rows"];
    return point;
  });
  std::printf("wrote %s\n", json_out.c_str());
  return failed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t total = 10'000'000;
  std::uint32_t purge_xorbs = 128;  // 128 x 8192 = 1,048,576 entries
  std::size_t single_n = 100'000;
  fs::path base = fs::temp_directory_path();
  std::string json_out = "bench_e2e.json";
  bool quick = false;
  std::size_t n_keys = 4;
  std::string series;
  std::uint64_t stream_max = 30'000'000;
  std::string bare_insert = "auto";
  std::uint64_t bare_sample = 3'000'000;
  std::string scrub_interval;           // "": the daemon's default (1d: a pass at the start, then none in a run)
  std::vector<std::string> child_args;  // for --series: everything but --series and --json
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a != "--series" && a != "--json") {
      child_args.push_back(a);
      if (i + 1 < argc && (a == "--chunks" || a == "--dir" || a == "--keys" || a == "--stream-max" ||
                           a == "--bare-insert" || a == "--bare-sample" || a == "--scrub-interval"))
        child_args.push_back(argv[i + 1]);
    }
    if (a == "--quick") quick = true, total = 300'000, purge_xorbs = 8, single_n = 5'000;
    else if (a == "--series" && i + 1 < argc) series = argv[++i];
    else if (a == "--chunks" && i + 1 < argc) total = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--dir" && i + 1 < argc) base = argv[++i];
    else if (a == "--keys" && i + 1 < argc) n_keys = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--json" && i + 1 < argc) json_out = argv[++i];
    else if (a == "--stream-max" && i + 1 < argc)
      stream_max = std::max<std::uint64_t>(1, std::strtoull(argv[++i], nullptr, 10));
    else if (a == "--bare-insert" && i + 1 < argc) bare_insert = argv[++i];
    else if (a == "--bare-sample" && i + 1 < argc)
      bare_sample = std::max<std::uint64_t>(1, std::strtoull(argv[++i], nullptr, 10));
    else if (a == "--scrub-interval" && i + 1 < argc)
      scrub_interval = argv[++i];  // "1s": the scrub runs all the time (its cost); "never": none
    else
      die("usage: bench_e2e [--chunks N | --series 1M,3M,...] [--keys K] [--dir D] [--json FILE] [--quick]\n"
          "                 [--stream-max N] [--bare-insert auto|full|sample] [--bare-sample N]\n"
          "                 [--scrub-interval 1s|never|...]");
  }
  if (bare_insert != "auto" && bare_insert != "full" && bare_insert != "sample")
    die("--bare-insert: auto, full or sample");
  // Up to 30 M entries every shard is put at random, as the series before
  // issue 42 did; past it that loop runs for hours, and a sample decides.
  const bool bare_sampled = bare_insert == "sample" || (bare_insert == "auto" && total > 30'000'000);
  if (!series.empty()) return run_series(series, child_args, json_out);
  bench::ScratchDir scratch(base, "dedupd-bench-e2e");
  const fs::path& root = scratch.path();
  fs::create_directories(root / "staging");
  fs::create_directories(root / "incoming");

  char date[64];
  std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  utsname un{};
  ::uname(&un);
  nlohmann::json machine = {{"nproc", std::thread::hardware_concurrency()},
                            {"cpu", cpu_model()},
                            {"ram_gib", double(mem_total_kib()) / (1 << 20)},
                            {"kernel", un.release},
                            {"date", date},
                            {"load1_at_start", load1()}};
  std::printf("bench_e2e: %llu chunk entries, %s; %u CPUs (%s), %.1f GiB RAM, load %.2f; under %s\n",
              (unsigned long long)total, date, std::thread::hardware_concurrency(), cpu_model().c_str(),
              double(mem_total_kib()) / (1 << 20), load1(), root.c_str());

  // ------------------------------------------------------------ generate
  static_assert(sizeof(shard::Hash) == 32, "bare keys are spilled and read back as arrays of Hash");
  std::mt19937_64 rng(20251122);
  std::vector<Planned> plan;
  std::vector<shard::Hash> queries;        // raw chunk hashes that must be found
  std::vector<shard::Hash> keyed_queries;  // raw hashes of chunks stored keyed
  std::uint64_t planned = 0, seed = 1;
  std::vector<shard::Key> keys(n_keys);
  for (std::size_t k = 0; k < keys.size(); ++k)
    for (std::size_t b = 0; b < 32; ++b) keys[k].bytes[b] = std::uint8_t(rng());
  const std::uint64_t keyed_share = keys.empty() ? 0 : total / 10;
  std::uint64_t keyed_done = 0;
  const std::uint64_t expiry = std::uint64_t(now) + 3 * 24 * 3600;
  auto t_gen = Clock::now();
  std::uint64_t bytes_total = 0;
  // The streamed queries, one a line, in shard order: every raw chunk hash
  // up to --stream-max of them, past it every k-th, so the sample still
  // spreads over the whole index as the full set would.
  const fs::path stream_file = root / "stream-hashes.txt";
  std::vector<shard::Hash> stream_q;
  std::ofstream stream_out(stream_file);
  const std::uint64_t raw_expected = total - keyed_share;
  const std::uint64_t stream_every = std::max<std::uint64_t>(1, (raw_expected + stream_max - 1) / stream_max);
  std::uint64_t raw_seen = 0;
  // One shard of the Xet shape, written under `dir`.
  auto make_planned = [&](bool keyed, std::uint64_t left, const fs::path& dir) {
    std::uint32_t per = 6144 + std::uint32_t(rng() % 2049);
    std::uint32_t xorbs = keyed ? 1 + std::uint32_t(rng() % 4) : 8 + std::uint32_t(rng() % 121);
    if (quick)
      per = 1024 + std::uint32_t(rng() % 1025),
      xorbs = keyed ? 1 + std::uint32_t(rng() % 2) : 4 + std::uint32_t(rng() % 12);
    if (std::uint64_t(xorbs) * per > left) xorbs = std::max<std::uint32_t>(1, std::uint32_t(left / per));
    if (std::uint64_t(xorbs) * per > left) per = std::uint32_t(left);
    itest::ShardSpec spec{.seed = seed++, .xorbs = xorbs, .chunks_per_xorb = per};
    if (keyed) {
      spec.key = keys[rng() % keys.size()];
      spec.expiry = expiry;
    }
    auto s = itest::make_shard(spec);
    Planned p{dir / s.file_name(), s.file_name(), s.chunks, keyed};
    std::ofstream f(p.staged, std::ios::binary);
    f.write(reinterpret_cast<const char*>(s.bytes.data()), std::streamsize(s.bytes.size()));
    if (!f) die("cannot write " + p.staged.string());
    bytes_total += s.bytes.size();
    return std::make_pair(std::move(p), std::move(s));
  };
  while (planned < total) {
    bool keyed = keyed_done < keyed_share && (rng() % 3 == 0 || planned + keyed_share - keyed_done >= total);
    auto [p, s] = make_planned(keyed, total - planned, root / "staging");
    if (keyed) {
      keyed_queries.insert(keyed_queries.end(), s.first_chunks.begin(), s.first_chunks.end());
      keyed_done += s.chunks;
    } else {
      auto stored = stored_chunks(p.staged);
      for (std::size_t i = rng() % 16; i < stored.size(); i += 16) queries.push_back(stored[i]);
      for (const auto& h : stored) {
        if (raw_seen++ % stream_every != 0) continue;
        stream_out << h.to_string() << '\n';
        stream_q.push_back(h);
      }
    }
    planned += s.chunks;
    plan.push_back(std::move(p));
  }
  const std::uint64_t main_bytes = bytes_total;
  // Late shards, a twentieth more entries (0.1 M to 5 M): dropped in at the
  // end while a client asks, for the single GET's latency during ingest
  // into the full index. Not part of N and of no other figure.
  const std::uint64_t late_total = quick ? 30'000 : std::clamp<std::uint64_t>(total / 20, 100'000, 5'000'000);
  std::vector<Planned> late_plan;
  std::uint64_t late_entries = 0;
  fs::create_directories(root / "late");
  while (late_entries < late_total) {
    auto [p, s] = make_planned(false, late_total - late_entries, root / "late");
    late_entries += s.chunks;
    late_plan.push_back(std::move(p));
  }
  stream_out.close();
  std::size_t n_keyed = std::count_if(plan.begin(), plan.end(), [](const Planned& p) { return p.keyed; });
  std::printf("generated %zu shards (%zu keyed under %zu keys), %.0f MiB, %llu entries in %.1f s\n", plan.size(),
              n_keyed, keys.size(), double(main_bytes) / (1 << 20), (unsigned long long)planned,
              secs(t_gen, Clock::now()));
  std::shuffle(queries.begin(), queries.end(), rng);
  extra["dataset"] = {{"shards", plan.size()},       {"keyed_shards", n_keyed},  {"keys", keys.size()},
                      {"entries", planned},          {"file_bytes", main_bytes}, {"streamed_every", stream_every},
                      {"late_entries", late_entries}};

  // ------------------------------------------------------------ baseline: bare LMDB
  // The same stored hashes as 32-byte keys and 16-byte values; extracting
  // the keys from the files is not timed.
  //   full:   every shard put in plan order, one write transaction (and
  //           fsync) per shard as dedupd takes them; the insert rate is the
  //           whole loop's. Past 30 M entries this runs for hours (random
  //           puts into a tree past the page cache).
  //   sample: every k-th shard (about --bare-sample entries) is held back;
  //           the rest is loaded in key order with MDB_APPEND (spilled to
  //           256 files by first byte, each sorted); then the held-back
  //           shards are put as in full: the insert rate into a bare index
  //           of the full size, which is slower than the average from empty.
  // Both modes also time the last shards put (about --bare-sample entries)
  // so a run in each mode at one size shows how the two rates compare.
  const fs::path bare_dir = root / "bare";
  MDB_dbi bare_dbi = 0;
  MDB_env* bare = open_bare_env(bare_dir, bare_dbi);
  std::uint64_t bare_entries = 0;  // all the bare database holds
  std::vector<bool> held_back(plan.size(), false);
  std::size_t held_every = 0;
  double bulk_s = 0;
  std::uint64_t bulk_entries = 0;
  if (bare_sampled) {
    held_every = std::max<std::size_t>(1, std::size_t(planned / bare_sample));
    // Every k-th keyed and every k-th unkeyed shard: the sample has the
    // whole's mix of small keyed shards and large upload shards.
    std::size_t seen[2] = {0, 0};
    for (std::size_t i = 0; i < plan.size(); ++i) held_back[i] = seen[plan[i].keyed]++ % held_every == held_every / 2;
    const fs::path spill = root / "bare-spill";
    fs::create_directories(spill);
    std::vector<FILE*> bucket(256);
    for (std::size_t b = 0; b < 256; ++b) {
      bucket[b] = std::fopen((spill / std::to_string(b)).c_str(), "wb");
      if (!bucket[b]) die("cannot write " + (spill / std::to_string(b)).string());
    }
    for (std::size_t i = 0; i < plan.size(); ++i)
      if (!held_back[i])
        for (const auto& h : stored_chunks(plan[i].staged))
          if (std::fwrite(h.bytes.data(), 32, 1, bucket[h.bytes[0]]) != 1) die("cannot spill bare keys");
    for (FILE* f : bucket)
      if (std::fclose(f) != 0) die("cannot spill bare keys");
    auto t0 = Clock::now();
    for (std::size_t b = 0; b < 256; ++b) {
      const fs::path file = spill / std::to_string(b);
      std::vector<shard::Hash> keys_of(fs::file_size(file) / 32);
      {
        std::ifstream f(file, std::ios::binary);
        f.read(reinterpret_cast<char*>(keys_of.data()), std::streamsize(keys_of.size() * 32));
        if (!f) die("cannot read back " + file.string());
      }
      fs::remove(file);
      std::sort(keys_of.begin(), keys_of.end(), [](const shard::Hash& x, const shard::Hash& y) {
        return std::memcmp(x.bytes.data(), y.bytes.data(), 32) < 0;
      });
      put_keys(bare, bare_dbi, keys_of, MDB_APPEND);
      bulk_entries += keys_of.size();
    }
    bulk_s = secs(t0, Clock::now());
    fs::remove_all(spill);
    bare_entries = bulk_entries;
  }
  // The shards put one by one: all of them (full) or the held-back ones.
  std::vector<std::pair<std::uint64_t, double>> bare_puts;  // entries, seconds
  {
    for (std::size_t n = 0; n < plan.size(); ++n) {
      if (bare_sampled && !held_back[n]) continue;
      auto keys_of = stored_chunks(plan[n].staged);
      auto t0 = Clock::now();
      put_keys(bare, bare_dbi, keys_of, 0);
      bare_puts.emplace_back(keys_of.size(), secs(t0, Clock::now()));
      bare_entries += keys_of.size();
    }
  }
  // The held-back shards split the full pages of the key-order load
  // wherever they land (at 100 M the file grew from about 6 to 14 GB): the
  // lookups ask a copy written in key order again (mdb_env_copy's compaction
  // drops free pages but keeps split ones half empty), as dense as a bare
  // index gets.
  if (bare_sampled) {
    const fs::path dense = root / "bare-dense";
    MDB_dbi to_dbi = 0;
    MDB_env* to = open_bare_env(dense, to_dbi);
    MDB_txn* rtxn = nullptr;
    MDB_cursor* cur = nullptr;
    check(mdb_txn_begin(bare, nullptr, MDB_RDONLY, &rtxn), "begin read");
    check(mdb_cursor_open(rtxn, bare_dbi, &cur), "cursor");
    MDB_val k, v;
    int rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
    while (rc == 0) {
      MDB_txn* wtxn = nullptr;
      check(mdb_txn_begin(to, nullptr, 0, &wtxn), "begin");
      for (std::size_t n = 0; rc == 0 && n < 1'000'000; ++n) {
        check(mdb_put(wtxn, to_dbi, &k, &v, MDB_APPEND), "put, in key order");
        rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
      }
      check(mdb_txn_commit(wtxn), "commit");
    }
    if (rc != MDB_NOTFOUND) check(rc, "cursor");
    mdb_cursor_close(cur);
    mdb_txn_abort(rtxn);
    mdb_env_close(to);
    mdb_env_close(bare);
    fs::remove_all(bare_dir);
    fs::rename(dense, bare_dir);
    bare = open_bare_env(bare_dir, bare_dbi);
  }
  auto rate_of = [](auto from, auto to) {
    std::uint64_t n = 0;
    double t = 0;
    for (auto it = from; it != to; ++it) n += it->first, t += it->second;
    return std::make_pair(n, double(n) / t);
  };
  const auto [bare_put_entries, bare_insert_rate] = rate_of(bare_puts.begin(), bare_puts.end());
  // The last shards put, about --bare-sample entries.
  auto tail_from = bare_puts.end();
  for (std::uint64_t n = 0; tail_from != bare_puts.begin() && n < bare_sample;) n += (--tail_from)->first;
  const auto [bare_tail_entries, bare_tail_rate] = rate_of(tail_from, bare_puts.end());
  const std::string bare_insert_is =
      bare_sampled
          ? "bare mdb_put of " + std::to_string(bare_put_entries) + " entries (every " + std::to_string(held_every) +
                "th shard) into a bare index of the rest, loaded in key order; " + "one txn + fsync per shard"
          : "bare mdb_put loop, one txn + fsync per shard";
  const std::string bare_db_is = bare_sampled ? "bare LMDB of 32 + 16 B records, written in key order"
                                              : "bare LMDB of 32 + 16 B records, put at random";
  extra["bare"] = {{"mode", bare_sampled ? "sample" : "full"},
                   {"insert_is", bare_insert_is},
                   {"db_is", bare_db_is},
                   {"put_entries", bare_put_entries},
                   {"put_rate", bare_insert_rate},
                   {"tail_entries", bare_tail_entries},
                   {"tail_rate", bare_tail_rate},
                   {"bulk_entries", bulk_entries},
                   {"bulk_seconds", bulk_s}};
  std::printf(
      "bare LMDB: %s: %.0f entries/s over %llu entries; the last %llu: %.0f/s%s\n", bare_sampled ? "sample" : "full",
      bare_insert_rate, (unsigned long long)bare_put_entries, (unsigned long long)bare_tail_entries, bare_tail_rate,
      bare_sampled
          ? (", the rest loaded in key order at " + std::to_string(std::uint64_t(double(bulk_entries) / bulk_s)) + "/s")
                .c_str()
          : "");
  std::fflush(stdout);

  // ------------------------------------------------------------ start dedupd (empty)
  Daemon d;
  d.dir = root;
  d.socket = root / "dedupd.sock";
  d.config = root / "dedupd.yaml";
  d.log = root / "dedupd.log";
  {
    std::ofstream f(d.config);
    f << "state_dir: " << (root / "state").string() << "\nsocket: " << d.socket.string() << "\nwatch:\n  - "
      << (root / "incoming").string() << "\nlog_level: info\n";
    if (!scrub_interval.empty()) f << "index:\n  scrub_interval: " << scrub_interval << "\n";
  }
  double ready_empty = d.start();
  HttpClient http(d.socket.string());
  Mem mem_empty = mem_of(d.proc.pid());

  // ------------------------------------------------------------ ingest
  // Every file renamed in at once (as a burst of Xet client writes would
  // land); done when /v1/stats counts every entry.
  double ingest_s = 0, ingest_cpu = 0;
  Mem mem_ingest;
  {
    MemSampler sampler(d.proc.pid());
    double cpu0 = cpu_of(d.proc.pid());
    auto t0 = Clock::now();
    for (const auto& p : plan) fs::rename(p.staged, root / "incoming" / p.name);
    wait_counted(http, planned, plan.size(), t0, 1800, "the shards were");
    ingest_s = secs(t0, Clock::now());
    ingest_cpu = cpu_of(d.proc.pid()) - cpu0;
    mem_ingest = sampler.stop();
  }
  const double ingest_rate = double(planned) / ingest_s;
  auto st_full = stats(http);
  const double entries = st_full["chunks"].get<double>();

  // The chunk filters are built after ingest, off the work loop: the
  // lookups below measure the index with them in service, sized for it,
  // and their memory goes in the table. A daemon that does not report them
  // (before issue 42) is not waited for.
  double filter_wait_s = NAN, filter_fp = NAN;
  std::uint64_t filter_bytes = 0, filter_entries = 0;
  if (st_full.contains("chunk_filter")) {
    auto t0 = Clock::now();
    for (;;) {
      const nlohmann::json f = stats(http)["chunk_filter"];
      const auto n = f["entries"].get<std::uint64_t>();
      if (f["in_service"].get<bool>() && double(n) >= entries &&
          (f["at_bound"].get<bool>() || n <= f["capacity"].get<std::uint64_t>())) {
        filter_wait_s = secs(t0, Clock::now());
        filter_bytes = f["bytes"].get<std::uint64_t>();
        filter_entries = n;
        filter_fp = f["false_positive_rate"].get<double>();
        break;
      }
      if (secs(t0, Clock::now()) > 600) die("the chunk filters were not in service 10 minutes after ingest");
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

  const fs::path index_file = root / "state" / "index" / "data.mdb";
  const fs::path bare_file = bare_dir / "data.mdb";
  favour(index_file, {bare_file, root / "incoming"});
  std::this_thread::sleep_for(std::chrono::seconds(1));
  Mem mem_rest = mem_of(d.proc.pid());

  // ------------------------------------------------------------ single queries
  // In-process mdb_get of the bare index, one txn renew per get: the
  // lookup alone, and the way its pages are read in for the bare server.
  MDB_txn* rtxn;
  check(mdb_txn_begin(bare, nullptr, MDB_RDONLY, &rtxn), "begin read");
  mdb_txn_reset(rtxn);
  auto bare_get = [&](const std::vector<shard::Hash>& q, std::size_t per_txn, std::vector<double>* each) {
    std::size_t hit = 0;
    auto t0 = Clock::now();
    for (std::size_t at = 0; at < q.size(); at += per_txn) {
      auto g0 = Clock::now();
      check(mdb_txn_renew(rtxn), "renew");
      for (std::size_t i = at; i < std::min(q.size(), at + per_txn); ++i) {
        MDB_val k{32, const_cast<std::uint8_t*>(q[i].bytes.data())}, v;
        hit += mdb_get(rtxn, bare_dbi, &k, &v) == 0;
      }
      mdb_txn_reset(rtxn);
      if (each) each->push_back(us(Clock::now() - g0));
    }
    if (hit != q.size()) die("bare LMDB misses keys it was given");
    return double(q.size()) / secs(t0, Clock::now());
  };

  // dedupd against the bare HTTP server (bare_http_get.cpp: libmicrohttpd,
  // one thread, the same mdb_get), the same client and queries, in
  // alternating blocks of 100 (which side goes first alternating too), so
  // a burst of the machine's other work hits both. dedupd's index is in the
  // page cache whole (favour above); the bare index only as far as these
  // queries read it (a pass in process), which is all its lookups need and
  // fits beside dedupd's at 268 M, where the whole of both does not.
  if (queries.size() < 1000) die("too few query hashes");
  std::vector<shard::Hash> single_q(queries.begin(), queries.begin() + std::min(single_n, queries.size()));
  bare_get(single_q, 1, nullptr);
  const double index_cached = bench::resident_share({index_file.string()});
  const double bare_cached = bench::resident_share({bare_file.string()});
  std::vector<double> lat, lat_bare_http;
  constexpr std::size_t kBlock = 100;
  Mem mem_query;
  {
    bench::BareHttpGet bare_server(BARE_HTTP_GET_BINARY, bare_dir, root / "bare_http_get.sock",
                                   root / "bare_http_get.log");
    HttpClient bare_http(bare_server.socket().string());
    auto ask = [&](HttpClient& c, const shard::Hash& h, std::vector<double>& into, const char* who) {
      std::string path = "/v1/chunk/" + h.to_string();
      auto t0 = Clock::now();
      auto r = c.get(path);
      into.push_back(us(Clock::now() - t0));
      if (r.status != 200) die(std::string("a chunk that must be found was not, asking ") + who + ": " + h.to_string());
    };
    std::vector<double> warm;
    for (std::size_t i = 0; i < 500; ++i) {
      ask(http, single_q[i % single_q.size()], warm, "dedupd");
      ask(bare_http, single_q[i % single_q.size()], warm, "bare_http_get");
    }
    Profile profile("single_get");
    MemSampler sampler(d.proc.pid());
    lat.reserve(single_q.size());
    lat_bare_http.reserve(single_q.size());
    for (std::size_t at = 0; at < single_q.size(); at += kBlock) {
      const std::size_t end = std::min(single_q.size(), at + kBlock);
      for (int side = 0; side < 2; ++side) {
        const bool dedupd_side = (side == 0) == (at / kBlock % 2 == 0);
        for (std::size_t i = at; i < end; ++i) {
          if (dedupd_side) ask(http, single_q[i], lat, "dedupd");
          else ask(bare_http, single_q[i], lat_bare_http, "bare_http_get");
        }
      }
    }
    mem_query = sampler.stop();
  }
  Pct single = pct(lat), bare_http_single = pct(lat_bare_http);
  extra["single_get"] = {{"queries", lat.size()},
                         {"interleaved_in_blocks_of", kBlock},
                         {"index_cached_share", index_cached},
                         {"bare_cached_share", bare_cached}};
  // Keyed: the query is hashed with each live key.
  std::vector<double> lat_keyed;
  for (std::size_t i = 0; i < std::min<std::size_t>(keyed_queries.size(), 20'000); ++i) {
    auto t0 = Clock::now();
    auto r = http.get("/v1/chunk/" + keyed_queries[i].to_string());
    lat_keyed.push_back(us(Clock::now() - t0));
    if (r.status != 200) die("a keyed chunk that must be found was not: " + keyed_queries[i].to_string());
  }
  Pct single_keyed = pct(lat_keyed);

  // Baseline of the lookup alone: in process, its index cached whole.
  std::vector<double> bare_lat;
  favour(bare_file, {index_file});
  bare_get(single_q, 1, nullptr);  // warm
  bare_get(single_q, 1, &bare_lat);
  Pct bare_single = pct(bare_lat);

  // ------------------------------------------------------------ batch queries
  const std::size_t per_batch = 10'000;
  std::vector<std::string> bodies;
  for (std::size_t at = 0; at + per_batch <= queries.size(); at += per_batch)
    bodies.push_back(batch_body(queries, at, per_batch));
  if (bodies.empty()) bodies.push_back(batch_body(queries, 0, queries.size()));
  std::size_t batch_hashes = 0;
  double batch_s = 0, batch_cpu = 0;
  Mem mem_batch;
  {
    favour(index_file, {bare_file});
    http.post("/v1/chunk", bodies[0]);  // warm
    MemSampler sampler(d.proc.pid());
    double cpu0 = cpu_of(d.proc.pid());
    auto t0 = Clock::now();
    for (const auto& b : bodies) {
      auto r = http.post("/v1/chunk", b);
      if (r.status != 200) die("batch answered " + std::to_string(r.status));
      // The count is at the end of the body: no full parse inside the timing.
      auto at = r.body.rfind("\"missing\":");
      if (at == std::string::npos || std::atol(r.body.c_str() + at + 10) != 0) die("a batch missed chunks");
    }
    batch_s = secs(t0, Clock::now());
    batch_cpu = cpu_of(d.proc.pid()) - cpu0;
    mem_batch = sampler.stop();
    batch_hashes = bodies.size() * std::min(per_batch, queries.size());
  }
  const double batch_rate = double(batch_hashes) / batch_s;
  std::vector<shard::Hash> batch_q(queries.begin(), queries.begin() + std::ptrdiff_t(batch_hashes));
  favour(bare_file, {index_file});
  bare_get(batch_q, per_batch, nullptr);  // warm
  const double bare_batch_rate = bare_get(batch_q, per_batch, nullptr);

  // ------------------------------------------------------------ streamed queries
  auto stream_run = [&](const std::vector<std::string>& args, const char* what) {
    StreamRun best;
    for (int round = 0; round < 2; ++round) {  // the first warms the page cache
      std::optional<Profile> profile;
      if (round == 1) profile.emplace(args[2] == "--json-lines" ? "stream_json_lines" : "stream_short");
      MemSampler sampler(d.proc.pid());
      StreamRun r = run_dedupctl(args, stream_file, root / "stream-out.txt");
      r.daemon_anon_kib = sampler.stop().anonymous;
      profile.reset();  // the profile is of the stream, not of the count after it
      r.lines = count_and_remove(root / "stream-out.txt");
      if (r.code != 0) die(std::string(what) + ": dedupctl exited " + std::to_string(r.code) + "; see " + log_of(d));
      if (r.lines != stream_q.size())
        die(std::string(what) + ": " + std::to_string(r.lines) + " lines for " + std::to_string(stream_q.size()) +
            " hashes");
      if (round == 0 || r.seconds < best.seconds) best = r;
    }
    return best;
  };
  const std::string sock_arg = "--socket=" + d.socket.string();
  favour(index_file, {bare_file});
  StreamRun ctl_lines = stream_run({sock_arg, "query", "--json-lines", "-"}, "query - --json-lines");
  StreamRun ctl_short =
      stream_run({sock_arg, "query", "--format", "short", "--fields", "found", "-"}, "query - --format short");
  StreamRun raw_sock;
  {
    MemSampler sampler(d.proc.pid());
    raw_sock = raw_socket_stream(d.socket, stream_file);
    raw_sock.daemon_anon_kib = sampler.stop().anonymous;
    if (raw_sock.lines != stream_q.size()) die("raw socket stream: wrong number of answers");
  }
  favour(bare_file, {index_file});
  bare_get(stream_q, 4096, nullptr);  // warm
  const double bare_stream_rate = bare_get(stream_q, 4096, nullptr);
  const double n_stream = double(stream_q.size());
  mdb_txn_abort(rtxn);

  // ------------------------------------------------------------ disk
  // The file keeps the high-water mark of its pages; what it holds is that
  // less LMDB's free pages (mdb_stat -ef, of lmdb-utils), NAN without it.
  // LMDB's pages: {ever used (its high-water mark), in use}, in bytes. The
  // file is the map, which grows in steps ahead of the high-water mark.
  auto pages_of = [](const fs::path& dir) -> std::pair<double, double> {
    std::string cmd = "mdb_stat -ef '" + dir.string() + "' 2>/dev/null";
    FILE* f = ::popen(cmd.c_str(), "r");
    if (!f) return {NAN, NAN};
    double used = NAN, free_pages = NAN, page = NAN;
    char line[256];
    while (std::fgets(line, sizeof line, f)) {
      std::string l(line);
      auto number = [&](const char* label, double& out) {
        if (auto at = l.find(label); at != std::string::npos) out = std::atof(l.c_str() + at + std::strlen(label));
      };
      number("Number of pages used:", used);
      number("Free pages:", free_pages);
      number("Page size:", page);
    }
    ::pclose(f);
    return {used * page, (used - free_pages) * page};
  };
  struct stat sb {};
  const fs::path& data_mdb = index_file;
  ::stat(data_mdb.c_str(), &sb);
  const double disk_per_entry = double(sb.st_size) / entries;
  const double blocks_per_entry = double(sb.st_blocks) * 512.0 / entries;
  struct stat bsb {};
  ::stat((bare_dir / "data.mdb").c_str(), &bsb);
  const double bare_per_entry = double(bsb.st_size) / double(bare_entries);
  const auto [ever_used, in_use] = pages_of(data_mdb.parent_path());
  const double used_per_entry = ever_used / entries, in_use_per_entry = in_use / entries;
  const double bare_in_use_per_entry = pages_of(bare_dir).second / double(bare_entries);
  mdb_env_close(bare);
  // The baseline of start -> READY: the bare LMDB opened cold and asked once,
  // in process. It has no exec, socket or key to load, so the ratio is no
  // overhead to chase; next to dedupd's figure at each size it shows whether
  // opening an index of that size costs more.
  std::vector<double> bare_open;
  for (int i = 0; i < 3; ++i) {
    evict(bare_dir / "data.mdb");
    auto t0 = Clock::now();
    MDB_env* env = nullptr;
    MDB_txn* txn = nullptr;
    MDB_dbi dbi = 0;
    check(mdb_env_create(&env), "mdb_env_create");
    check(mdb_env_set_mapsize(env, std::size_t(64) << 30), "mapsize");
    check(mdb_env_open(env, bare_dir.c_str(), MDB_NOTLS | MDB_NORDAHEAD | MDB_RDONLY, 0640), "mdb_env_open");
    check(mdb_txn_begin(env, nullptr, MDB_RDONLY, &txn), "begin read");
    check(mdb_dbi_open(txn, nullptr, 0, &dbi), "dbi");
    MDB_val k{32, const_cast<std::uint8_t*>(queries[0].bytes.data())}, v;
    check(mdb_get(txn, dbi, &k, &v), "bare get after open");
    mdb_txn_abort(txn);
    bare_open.push_back(secs(t0, Clock::now()) * 1000);
    mdb_env_close(env);
  }
  std::sort(bare_open.begin(), bare_open.end());

  // What the scrub did while the queries above ran (--scrub-interval).
  {
    auto st = http.get("/v1/status");
    if (st.status == 200) {
      auto h = nlohmann::json::parse(st.body, nullptr, false)["index_health"];
      if (h.is_object())
        std::printf("scrub so far: %s passes, %s items in the current one, last result %s\n",
                    h.value("scrub_passes", nlohmann::json()).dump().c_str(),
                    h.value("scrub_items", nlohmann::json()).dump().c_str(),
                    h.value("scrub_last_result", nlohmann::json()).dump().c_str());
    }
  }

  // ------------------------------------------------------------ restart -> READY
  // Each start in order, with the share of dedupd's executable and
  // libraries in the page cache just before it: past 100 M the bench's own
  // files can push them out, and reading them back is not dedupd's start.
  const std::vector<std::string> program_files = bench::program_files_of(d.proc.pid());
  const double stop_s = d.stop();
  // The first start after a boot, or after writes that pushed them out:
  // the executable and each library it maps evicted too (what other
  // processes map stays cached; `unloaded_cached` says how much). Its
  // baseline: `dedupd --version` so evicted, exec and loading alone.
  std::vector<double> ready_unloaded, version_unloaded;
  double unloaded_cached = 0;
  for (int i = 0; i < 3; ++i) {
    auto evict_program = [&] {
      for (const auto& f : program_files) evict(f);
    };
    evict_program();
    const auto t0 = Clock::now();
    if (itest::run_program(itest::dedupd_binary(), {"--version"}).code != 0) die("dedupd --version failed");
    version_unloaded.push_back(secs(t0, Clock::now()) * 1000);
    evict(data_mdb);
    evict_program();
    unloaded_cached = std::max(unloaded_cached, bench::resident_share(program_files));
    ready_unloaded.push_back(d.start() * 1000);
    d.stop();
  }
  std::sort(ready_unloaded.begin(), ready_unloaded.end());
  std::sort(version_unloaded.begin(), version_unloaded.end());
  std::vector<double> ready_cold;
  std::string ready_each;
  double first_answer_ms = 0;
  std::optional<Profile> ready_profile(std::in_place, "ready_cold");
  for (int i = 0; i < 3; ++i) {
    evict(data_mdb);
    const double cached = bench::resident_share(program_files);
    ready_cold.push_back(d.start() * 1000);
    char each[96];
    std::snprintf(each, sizeof each, "%s%.1f ms (%.0f %% of %zu program files cached)", i ? ", " : "",
                  ready_cold.back(), cached * 100, program_files.size());
    ready_each += each;
    if (i == 0) {
      auto t0 = Clock::now();
      HttpClient fresh(d.socket.string());
      if (fresh.get("/v1/chunk/" + queries[0].to_string()).status != 200) die("first query after restart");
      first_answer_ms = ready_cold.back() + us(Clock::now() - t0) / 1000;
    }
    if (i < 2) d.stop();
  }
  ready_profile.reset();
  std::sort(ready_cold.begin(), ready_cold.end());
  const double ready_ms = ready_cold[1];
  // dedupd's own measure (its "ready in X ms" log line: from main's start
  // of work to READY=1, without exec and dynamic linking), last 3 starts.
  std::vector<double> ready_self;
  {
    std::ifstream f(d.log);
    std::string line;
    while (std::getline(f, line))
      if (auto at = line.find("ready in "); at != std::string::npos)
        ready_self.push_back(std::atof(line.c_str() + at + 9));
    if (ready_self.size() > 3) ready_self.erase(ready_self.begin(), ready_self.end() - 3);
    std::sort(ready_self.begin(), ready_self.end());
  }
  HttpClient http2(d.socket.string());
  Mem mem_restart = mem_of(d.proc.pid());

  // ------------------------------------------------------------ purge under queries
  auto big = itest::make_shard({.seed = 999'999, .xorbs = purge_xorbs, .chunks_per_xorb = 8192});
  itest::drop_file(root / "incoming", big.file_name(), big.bytes);
  while (http2.get("/v1/chunk/" + big.first_chunks.back().to_string()).status != 200) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::atomic<bool> querying{true};
  std::atomic<std::int64_t> purge_from{0}, purge_to{0};
  struct Sample {
    std::int64_t at_ns;
    double us;
  };
  std::vector<Sample> samples;
  std::thread client([&] {
    HttpClient c(d.socket.string());
    std::size_t i = 0;
    while (querying) {
      std::string path = "/v1/chunk/" + queries[i++ % queries.size()].to_string();
      auto t0 = Clock::now();
      auto r = c.get(path);
      samples.push_back({t0.time_since_epoch().count(), us(Clock::now() - t0)});
      if (r.status != 200) die("a query failed during the purge");
    }
  });
  std::this_thread::sleep_for(std::chrono::seconds(quick ? 1 : 3));
  purge_from = Clock::now().time_since_epoch().count();
  auto del = http2.del("/v1/shard/" + big.file_hash.to_string());
  purge_to = Clock::now().time_since_epoch().count();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  querying = false;
  client.join();
  if (del.status != 200) die("DELETE /v1/shard answered " + std::to_string(del.status) + ": " + del.body);
  if (http2.get("/v1/chunk/" + big.first_chunks[0].to_string()).status != 404) die("purged chunks still answer");
  const double purge_s = double(purge_to - purge_from) / 1e9;
  std::vector<double> before, during;
  for (const auto& s : samples) {
    if (s.at_ns < purge_from) before.push_back(s.us);
    else if (s.at_ns < purge_to) during.push_back(s.us);
  }
  Pct p_before = pct(before), p_during = pct(during);
  Mem mem_end = mem_of(d.proc.pid());

  // ------------------------------------------------------------ single GETs during ingest
  // The late shards renamed in at once while one client asks back to back
  // for chunks the index holds; latencies counted from the rename until
  // /v1/stats counts the late entries.
  std::vector<double> lat_ingest;
  double late_s = 0;
  favour(index_file, {});
  {
    auto st0 = stats(http2);
    const std::uint64_t chunks_after = st0["chunks"].get<std::uint64_t>() + late_entries;
    const std::size_t live_after = st0["shards"]["live"].get<std::size_t>() + late_plan.size();
    std::atomic<bool> asking{true}, ingesting{false};
    std::thread asker([&] {
      HttpClient c(d.socket.string());
      for (std::size_t i = 0; asking; ++i) {
        std::string path = "/v1/chunk/" + queries[i % queries.size()].to_string();
        bool during_ingest = ingesting;
        auto t0 = Clock::now();
        auto r = c.get(path);
        double took = us(Clock::now() - t0);
        if (r.status != 200) die("a chunk that must be found was not, during ingest: " + path);
        if (during_ingest && ingesting) lat_ingest.push_back(took);
      }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    auto t0 = Clock::now();
    ingesting = true;
    for (const auto& p : late_plan) fs::rename(p.staged, root / "incoming" / p.name);
    wait_counted(http2, chunks_after, live_after, t0, 600, "the late shards were");
    ingesting = false;
    late_s = secs(t0, Clock::now());
    asking = false;
    asker.join();
  }
  Pct p_ingest = pct(lat_ingest);
  d.stop();

  // ------------------------------------------------------------ table
  const double mib = 1024.0;
  std::printf("\n  %-38s %12s %12s %7s  %-24s\n", "metric", "dedupd", "baseline", "ratio", "goal");
  add({"ingest, file appears -> queryable", "entries/s", ingest_rate, bare_insert_rate, ">= 1 M/s, >= 0.5x bare",
       ingest_rate >= 1e6 && ingest_rate >= 0.5 * bare_insert_rate, "baseline: " + bare_insert_is});
  add({"  bare mdb_put, the last shards", "entries/s", bare_tail_rate, NAN, "", -1,
       std::to_string(bare_tail_entries) + " entries: the rate at the full size"});
  if (filter_entries) {
    add({"chunk filters built, after ingest", "s", filter_wait_s, NAN, "", -1,
         "until /v1/stats says they are in service and sized for the index"});
    char note[128];
    std::snprintf(note, sizeof note, "%.1f MiB for %llu entries; %.2f %% of absent forms searched (estimate)",
                  double(filter_bytes) / (1 << 20), static_cast<unsigned long long>(filter_entries), filter_fp * 100);
    add({"chunk filters' memory per entry", "B", double(filter_bytes) / double(filter_entries), NAN, "", -1, note});
  }
  add({"ingest, per dedupd CPU second", "entries/cpu-s", double(planned) / ingest_cpu, NAN, "", -1,
       "dedupd's user+sys CPU during the ingest"});
  {
    char cached[160];
    std::snprintf(
        cached, sizeof cached,
        "keep-alive curl client, blocks of %zu each side in turn; cached before: %.0f %% of data.mdb, %.0f %% "
        "of the bare one",
        kBlock, index_cached * 100, bare_cached * 100);
    add({"single GET p50", "us", single.p50, bare_http_single.p50, "", -1,
         std::string(cached) + "; baseline: bare_http_get, libmicrohttpd, one thread, mdb_get"});
  }
  // Issue 73: within 1.3x of what a bare server answers in on this machine,
  // and within 100 us where that floor is under it.
  add({"single GET p99", "us", single.p99, bare_http_single.p99, "<= 1.3x bare, <= 100 us",
       single.p99 <= 1.3 * bare_http_single.p99 && (single.p99 <= 100 || bare_http_single.p99 >= 100), ""});
  add({"single GET p999", "us", single.p999, bare_http_single.p999, "", -1, ""});
  {
    char note[128];
    std::snprintf(note, sizeof note, "the bare lookup alone, one txn renew per get; p50 %.2f, p999 %.2f us",
                  bare_single.p50, bare_single.p999);
    add({"  mdb_get in process, p99", "us", bare_single.p99, NAN, "", -1, note});
  }
  add({"single GET p99, keyed chunk", "us", single_keyed.p99, NAN, "", -1,
       std::to_string(keys.size()) + " live keys, " + std::to_string(lat_keyed.size()) + " queries"});
  add({"batch POST /v1/chunk (10k per request)", "hashes/s", batch_rate, bare_batch_rate, ">= 1 M/s, >= 0.5x bare",
       batch_rate >= 1e6 && batch_rate >= 0.5 * bare_batch_rate, "baseline: mdb_get loop, 10k per txn"});
  add({"dedupctl query - --json-lines > file", "hashes/s", n_stream / ctl_lines.seconds, bare_stream_rate,
       ">= 1 M/s, >= 0.5x bare",
       n_stream / ctl_lines.seconds >= 1e6 && n_stream / ctl_lines.seconds >= 0.5 * bare_stream_rate,
       std::to_string(stream_q.size()) + " hashes" +
           (stream_every > 1 ? " (every " + std::to_string(stream_every) + "th raw hash)" : std::string()) +
           ", one streamed POST; baseline: mdb_get loop, 4096 per txn"});
  add({"dedupctl query - --format short > file", "hashes/s", n_stream / ctl_short.seconds, bare_stream_rate,
       ">= 1 M/s, >= 0.5x bare",
       n_stream / ctl_short.seconds >= 1e6 && n_stream / ctl_short.seconds >= 0.5 * bare_stream_rate,
       "--fields found: no locations written"});
  add({"raw socket stream, NDJSON", "hashes/s", n_stream / raw_sock.seconds, bare_stream_rate, "", -1,
       "text/plain body, the answer read and counted, not parsed"});
  add({"dedupctl peak RSS while streaming", "MiB",
       double(std::max(ctl_lines.client_peak_kib, ctl_short.client_peak_kib)) / 1024.0, NAN, "<= 64 MB",
       std::max(ctl_lines.client_peak_kib, ctl_short.client_peak_kib) <= 64 * 1000, "VmHWM"});
  add({"dedupd peak anonymous memory while streaming", "MiB",
       double(std::max({ctl_lines.daemon_anon_kib, ctl_short.daemon_anon_kib, raw_sock.daemon_anon_kib})) / 1024.0, NAN,
       "<= 64 MB",
       std::max({ctl_lines.daemon_anon_kib, ctl_short.daemon_anon_kib, raw_sock.daemon_anon_kib}) <= 64 * 1000,
       "RssAnon, sampled"});
  add({"batch, per dedupd CPU second", "hashes/cpu-s", double(batch_hashes) / batch_cpu, NAN, "", -1, ""});
  add({"start -> READY, full index, cold", "ms", ready_ms, bare_open[1], "<= 100 ms", ready_ms <= 100,
       "median of 3, data.mdb evicted: " + ready_each + "; empty index: " + std::to_string(int(ready_empty * 1000)) +
           " ms; baseline: bare LMDB open + one mdb_get, cold, in process"});
  add({"  of which dedupd's own (its log)", "ms", ready_self.empty() ? NAN : ready_self[ready_self.size() / 2], NAN, "",
       -1, "open index, key, listen, the status sent with READY=1; the rest is exec and loading"});
  add({"start -> first answer, cold", "ms", first_answer_ms, NAN, "", -1, ""});
  add({"start -> READY, program files evicted too", "ms", ready_unloaded[1], version_unloaded[1], "", -1,
       "median of 3; data.mdb, the executable and its " + std::to_string(program_files.size() - 1) +
           " libraries evicted (at most " + std::to_string(int(unloaded_cached * 100)) +
           " % still cached: what other processes map); baseline: dedupd --version so evicted"});
  add({"SIGTERM -> exit, full index", "s", stop_s, NAN, "", -1, "systemd's default stop timeout is 90 s"});
  add({"data.mdb bytes per chunk entry", "B", disk_per_entry, bare_per_entry, "<= 48 B", disk_per_entry <= 48,
       "baseline: " + bare_db_is});
  add({"  allocated blocks per chunk entry", "B", blocks_per_entry, NAN, "", -1, "st_blocks x 512"});
  add({"  pages ever used per chunk entry", "B", used_per_entry, NAN, "", -1,
       "LMDB's high-water mark; the rest of the file is the map grown ahead"});
  add({"  pages in use per chunk entry", "B", in_use_per_entry, bare_in_use_per_entry, "", -1,
       "the high-water mark less LMDB's free pages (mdb_stat -ef)"});
  Mem peak{std::max({mem_ingest.rss, mem_query.rss, mem_batch.rss}),
           std::max({mem_ingest.private_clean, mem_query.private_clean, mem_batch.private_clean}),
           std::max({mem_ingest.private_dirty, mem_query.private_dirty, mem_batch.private_dirty}),
           std::max({mem_ingest.anonymous, mem_query.anonymous, mem_batch.anonymous})};
  add({"private anonymous memory at rest", "MiB", double(mem_rest.anonymous) / mib, NAN, "<= 64 MiB",
       mem_rest.anonymous <= 64 * 1024,
       "smaps_rollup Anonymous; empty index: " + std::to_string(mem_empty.anonymous / 1024) + " MiB"});
  add({"private anonymous memory, peak under load", "MiB", double(peak.anonymous) / mib, NAN, "<= 64 MiB",
       peak.anonymous <= 64 * 1024,
       "ingest " + std::to_string(mem_ingest.anonymous / 1024) + ", single " +
           std::to_string(mem_query.anonymous / 1024) + ", batch " + std::to_string(mem_batch.anonymous / 1024) +
           " MiB"});
  add({"Private_Clean+Private_Dirty at rest", "MiB", double(mem_rest.priv()) / mib, NAN, "", -1,
       "includes mapped data.mdb pages (page cache)"});
  add({"Private_Clean+Private_Dirty, peak", "MiB", double(peak.priv()) / mib, NAN, "", -1, ""});
  add({"RSS after restart (cold), after purge", "MiB", double(mem_restart.rss) / mib, double(mem_end.rss) / mib, "", -1,
       "value: after restart; baseline column: after the purge"});
  add({"purge of a " + std::to_string(std::uint64_t(purge_xorbs) * 8192) + "-entry shard", "s", purge_s, NAN, "<= 2 s",
       purge_s <= 2.0, "DELETE /v1/shard, answered when done"});
  add({"client p99 during the purge", "us", p_during.p99, p_before.p99, "keeps its latency", -1,
       "baseline: the same client just before; " + std::to_string(during.size()) + " queries during"});
  add({"single GET p99 during ingest", "us", p_ingest.p99, single.p99, "<= 5 ms", p_ingest.p99 <= 5000,
       std::to_string(lat_ingest.size()) + " GETs while " + std::to_string(late_entries) +
           " more entries came in; baseline: single GET p99 idle"});
  add({"  ingest of those into the full index", "entries/s", double(late_entries) / late_s, NAN, "", -1,
       std::to_string(late_plan.size()) + " shards, with the client asking"});

  nlohmann::json out;
  out["machine"] = machine;
  out["machine"]["load1_at_end"] = load1();
  out["command"] = "bench_e2e --chunks " + std::to_string(total) + " --keys " + std::to_string(n_keys) +
                   " --stream-max " + std::to_string(stream_max) + " --bare-insert " +
                   (bare_sampled ? "sample --bare-sample " + std::to_string(bare_sample) : std::string("full")) +
                   (quick ? " --quick" : "");
  out["extra"] = extra;
  for (const auto& r : rows) {
    nlohmann::json j = {{"metric", r.metric}, {"unit", r.unit}, {"goal", r.goal}, {"note", r.note}};
    j["value"] = std::isnan(r.value) ? nlohmann::json(nullptr) : nlohmann::json(r.value);
    j["baseline"] = std::isnan(r.baseline) ? nlohmann::json(nullptr) : nlohmann::json(r.baseline);
    if (!std::isnan(r.baseline) && r.baseline != 0 && !std::isnan(r.value)) j["ratio"] = r.value / r.baseline;
    if (r.met >= 0) j["met"] = bool(r.met);
    out["rows"].push_back(j);
  }
  out["percentiles_us"] = {{"single", {single.p50, single.p99, single.p999}},
                           {"single_keyed", {single_keyed.p50, single_keyed.p99, single_keyed.p999}},
                           {"bare_single", {bare_single.p50, bare_single.p99, bare_single.p999}},
                           {"bare_http_single", {bare_http_single.p50, bare_http_single.p99, bare_http_single.p999}},
                           {"purge_before", {p_before.p50, p_before.p99, p_before.p999}},
                           {"purge_during", {p_during.p50, p_during.p99, p_during.p999}},
                           {"during_ingest", {p_ingest.p50, p_ingest.p99, p_ingest.p999}}};
  out["ready_cold_ms"] = ready_cold;
  std::ofstream(json_out) << out.dump(2) << "\n";
  std::printf("\nwrote %s; load average %.2f at the end\n", json_out.c_str(), load1());
  return 0;
}
