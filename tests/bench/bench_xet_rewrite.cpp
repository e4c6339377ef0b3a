// The download rewrite alone (docs/PERFORMANCE.md, "Downloads"; issue 72:
// "the rewrite adds <= 2 ms to a reconstruction answer of 1,000 terms"):
// answers::rewrite_reconstruction of a CAS answer of N terms (v1 and v2,
// each term a xorb of its own, as a file of N whole xorbs), next to the bare
// baselines in the same run: a copy of the answer's bytes, and a JSON parse
// and dump of it with nothing renamed. Two cases of the rewrite: a cold
// cache (each range an object of its own) and a warm one (every range lies
// inside a checked object whose cache file is there, so each range also
// costs a lookup and a stat), both for an endpoint without a fleet tier,
// and the cold one again for an endpoint with one (each range URL then
// binds a digest of the CAS's URL). Prints p50 and p99 of R runs' wall time and
// the p50 of their CPU time (the thread's: what the work costs, whatever
// else the machine runs); asserts nothing.
//
//   bench_xet_rewrite [--terms N] [--repeat R] [--dir D] [--quick]
// Default N = 1,000 terms, R = 500. --quick (ctest smoke): 100 terms, 20 runs.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "daemon/answers/download_grants.hpp"
#include "daemon/answers/download_objects.hpp"
#include "daemon/answers/reconstruction_rewrite.hpp"

namespace {

using namespace dedupd::daemon::answers;
using Clock = std::chrono::steady_clock;
using Json = nlohmann::json;

constexpr std::uint64_t kNow = 1'800'000'000;
constexpr std::uint32_t kChunksPerXorb = 1024;
constexpr std::uint32_t kChunkBytes = 65'544;  // 64 KiB of random bytes and a chunk header

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "bench_xet_rewrite: %s\n", what.c_str());
  std::exit(1);
}

std::string xorb_name(std::size_t i) {
  char h[65];
  std::snprintf(h, sizeof h, "%016llx%048x", static_cast<unsigned long long>(i * 0x9e3779b97f4a7c15ull), 7);
  return h;
}

// A storage URL as the Hub's CDN writes them (cas_standin.py signs the same
// shape): the signed range and the expiry readable, a 64-digit signature.
std::string storage_url(const std::string& xorb, const std::string& ranges) {
  return "https://cas-bridge.xethub.hf.co/xorbs/default/" + xorb + "?X-Xet-Signed-Range=bytes%3D" + ranges +
         "&Expires=" + std::to_string(kNow + 3600) + "&Signature=" + std::string(64, 'e');
}

// The CAS's answer for a file of `terms` whole xorbs, v1 or v2.
std::string answer(std::size_t terms, bool v2) {
  const std::uint64_t last = std::uint64_t(kChunksPerXorb) * kChunkBytes - 1;
  const std::string bytes = "0-" + std::to_string(last);
  Json doc = {{"offset_into_first_range", 0}, {"terms", Json::array()}};
  Json fetch = Json::object();
  for (std::size_t i = 0; i < terms; ++i) {
    const std::string x = xorb_name(i);
    doc["terms"].push_back({{"hash", x},
                            {"unpacked_length", std::uint64_t(kChunksPerXorb) * 65'536},
                            {"range", {{"start", 0}, {"end", kChunksPerXorb}}}});
    Json chunks = {{"start", 0}, {"end", kChunksPerXorb}}, range = {{"start", 0}, {"end", last}};
    if (v2)
      fetch[x] = Json::array({{{"url", storage_url(x, bytes)}, {"ranges", {{{"chunks", chunks}, {"bytes", range}}}}}});
    else fetch[x] = Json::array({{{"range", chunks}, {"url", storage_url(x, bytes)}, {"url_range", range}}});
  }
  doc[v2 ? "xorbs" : "fetch_info"] = std::move(fetch);
  return doc.dump();
}

struct Times {
  double p50_ms = 0, p99_ms = 0, cpu_p50_ms = 0;
};

double thread_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) * 1e3 + double(t.tv_nsec) / 1e6;
}

// Wall time (what a client waits, the machine's load included) and this
// thread's CPU time (what the work costs, whatever else runs).
Times time_it(int repeat, const std::function<void()>& run) {
  run();  // warm: allocator, page faults
  std::vector<double> ms, cpu;
  ms.reserve(repeat);
  cpu.reserve(repeat);
  for (int i = 0; i < repeat; ++i) {
    auto t0 = Clock::now();
    double c0 = thread_cpu_ms();
    run();
    cpu.push_back(thread_cpu_ms() - c0);
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  std::sort(cpu.begin(), cpu.end());
  auto at = [](const std::vector<double>& v, double q) {
    return v[std::min(v.size() - 1, std::size_t(q * double(v.size())))];
  };
  return {at(ms, 0.50), at(ms, 0.99), at(cpu, 0.50)};
}

void row(const char* what, Times t, const char* note = "") {
  std::printf("| %-62s | %8.3f | %8.3f | %8.3f | %s |\n", what, t.p50_ms, t.p99_ms, t.cpu_p50_ms, note);
  std::fflush(stdout);
}

// A cache where every xorb's whole range is a checked object with its file
// where nginx keeps it (empty files: the rewrite only stats them).
void warm_objects(DownloadObjects& objects, std::size_t terms, const std::filesystem::path& dir) {
  const std::uint64_t last = std::uint64_t(kChunksPerXorb) * kChunkBytes - 1;
  for (std::size_t i = 0; i < terms; ++i) {
    CheckedRange c;
    for (std::uint32_t k = 0; k <= kChunksPerXorb; ++k) c.chunk_starts.push_back(k * kChunkBytes);
    objects.add(xorb_name(i), {0, last}, std::move(c));
    auto file = object_cache_file(dir, object_cache_key(xorb_name(i), 0, last));
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file).put('\n');
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t terms = 1000;
  int repeat = 500;
  std::filesystem::path dir = std::filesystem::temp_directory_path();
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) die(a + " wants a value");
      return argv[++i];
    };
    if (a == "--terms") terms = std::stoul(value());
    else if (a == "--repeat") repeat = std::stoi(value());
    else if (a == "--dir") dir = value();
    else if (a == "--quick") terms = 100, repeat = 20;
    else die("unknown option " + a + " (--terms N --repeat R --dir D --quick)");
  }
  char tmpl[] = "dedupd-bench-rewrite-XXXXXX";
  std::filesystem::path scratch = dir / tmpl;
  std::string s = scratch.string();
  if (!mkdtemp(s.data())) die("mkdtemp under " + dir.string() + ": " + std::strerror(errno));
  scratch = s;

  DownloadKey key;
  key.fill(7);
  std::printf("Reconstruction answer of %zu terms (each a whole xorb of its own), %d runs each\n\n", terms, repeat);
  std::printf("| %-62s | %8s | %8s | %8s | %s |\n", "", "p50 ms", "p99 ms", "CPU p50", "answer");
  std::printf("|---|---:|---:|---:|---|\n");
  DownloadObjects warm(terms + 16);
  warm_objects(warm, terms, scratch / "cache");
  for (bool v2 : {false, true}) {
    const std::string cas = answer(terms, v2);
    char size[64];
    std::snprintf(size, sizeof size, "%s, %zu KB", v2 ? "v2" : "v1", cas.size() / 1000);
    std::string copy;
    row("copy of the answer's bytes (baseline)", time_it(repeat, [&] { copy.assign(cas); }), size);
    row("JSON parse and dump, nothing renamed (baseline)", time_it(repeat, [&] { copy = Json::parse(cas).dump(); }),
        size);
    // Capacity as the daemon's default: the oldest held URLs go as runs add more.
    DownloadGrants grants(key, 100'000);
    RewriteSettings cold;
    cold.base = "http://127.0.0.1:8788";
    cold.now = kNow;
    cold.binding = DownloadGrants::Binding::none;  // an endpoint without a tier
    RewriteSettings hot = cold;
    hot.objects = &warm;
    hot.cache_dir = scratch / "cache";
    RewriteSettings tiered = cold;
    tiered.binding = DownloadGrants::Binding::url_digest;
    for (const auto& [what, settings] : {std::pair{"rewrite, cold cache (each range an object of its own)", &cold},
                                         std::pair{"rewrite, warm cache (each range's own object cached)", &hot},
                                         std::pair{"rewrite, cold cache, a fleet tier (CAS URLs' digests)", &tiered}}) {
      std::size_t renamed = 0;
      row(what,
          time_it(repeat,
                  [&, s = settings] {
                    auto r = rewrite_reconstruction(cas, *s, grants);
                    if (!r) die(r.error().to_string());
                    renamed = r->rewritten;
                  }),
          size);
      if (renamed != terms) die("renamed " + std::to_string(renamed) + " ranges of " + std::to_string(terms));
    }
  }
  std::filesystem::remove_all(scratch);
  return 0;
}
