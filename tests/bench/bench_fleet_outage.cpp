// bench_fleet_outage: what a fleet database that accepts connections and
// never answers costs local answers. Two real dedupd processes with the same
// shard: one without a fleet (the baseline), one whose fleet url points at a
// server that accepts and stays silent (harness/silent_server). Each gets
// the same local-miss requests, single GETs and batches (half hits, half
// misses), one after the other on one keep-alive connection; the program
// prints p50/p99/max of each next to the baseline, and how many answers
// said "fleet": "unavailable". Asserts nothing (docs/PERFORMANCE.md).
//
//   bench_fleet_outage [--quick] [--requests N] [--batch N]
#include <sys/utsname.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "harness/eventually.hpp"
#include "harness/fleet_host.hpp"
#include "harness/http_client.hpp"
#include "harness/make_shard.hpp"
#include "harness/silent_server.hpp"
#include "shard/reader.hpp"

namespace fs = std::filesystem;
using namespace dedupd::itest;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

using Daemon = LaunchedFleetHost;

bool until(const std::function<bool()>& pred) {
  return eventually(pred, std::chrono::seconds(60), std::chrono::milliseconds(20));
}

struct Figures {
  std::vector<double> ms;
  std::size_t unavailable = 0;
  double at(double q) const {
    std::vector<double> s = ms;
    std::sort(s.begin(), s.end());
    return s[std::min(s.size() - 1, std::size_t(q * double(s.size())))];
  }
  std::string text() const {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%6.2f / %6.2f / %6.2f", at(0.5), at(0.99), *std::max_element(ms.begin(), ms.end()));
    return buf;
  }
};

template <class F>
Figures measure(int n, F&& request) {
  Figures f;
  for (int i = 0; i < n; ++i) {
    auto t0 = Clock::now();
    Response r = request(i);
    f.ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    if (r.status == 0) {
      std::fprintf(stderr, "bench_fleet_outage: no answer\n");
      std::exit(1);
    }
    json doc = json::parse(r.body, nullptr, false);
    if (doc.is_object() && doc.value("fleet", "") == "unavailable") ++f.unavailable;
  }
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  int requests = 300, batch = 64;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick") requests = 30;
    else if (a == "--requests" && i + 1 < argc) requests = std::atoi(argv[++i]);
    else if (a == "--batch" && i + 1 < argc) batch = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: bench_fleet_outage [--quick] [--requests N] [--batch N]\n");
      return 2;
    }
  }
  std::string tmpl = (fs::temp_directory_path() / "dedupd-bench-outage-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) return 1;
  fs::path root = tmpl;
  int rc = 0;
  {
    fs::create_directories(root / "pg");
    SilentServer silent(root / "pg", 5432);
    if (!silent.error().empty()) {
      std::fprintf(stderr, "bench_fleet_outage: %s\n", silent.error().c_str());
      return 1;
    }
    Daemon off(root, "fleet-off", "");
    Daemon mute(root, "fleet-silent", "host=" + (root / "pg").string() + " port=5432 dbname=x user=y");
    MadeShard s = make_shard({.seed = 4242, .xorbs = 4, .chunks_per_xorb = std::uint32_t(batch)});
    MadeShard missing = make_shard({.seed = 4343, .xorbs = 1, .chunks_per_xorb = std::uint32_t(batch)});
    std::vector<std::string> hits, misses;
    {
      auto view = dedupd::shard::ShardView::parse(missing.bytes);
      for (auto x : view->xorbs())
        for (std::size_t i = 0; i < x.num_chunks(); ++i) misses.push_back(x.chunk(i).chunk_hash.to_string());
      auto hv = dedupd::shard::ShardView::parse(s.bytes);
      for (auto x : hv->xorbs())
        for (std::size_t i = 0; i < x.num_chunks(); ++i) hits.push_back(x.chunk(i).chunk_hash.to_string());
    }
    for (Daemon* d : {&off, &mute}) drop_file(d->incoming, s.file_name(), s.bytes);
    for (Daemon* d : {&off, &mute})
      if (!until([&] { return d->http().get("/v1/chunk/" + hits[0]).status == 200; })) {
        std::fprintf(stderr, "bench_fleet_outage: a daemon did not index the shard; see %s\n", d->log.c_str());
        return 1;
      }
    // The silent daemon is connecting to it (and stuck there).
    if (!until([&] { return silent.accepted() >= 1; })) {
      std::fprintf(stderr, "bench_fleet_outage: the daemon never connected to the silent server\n");
      return 1;
    }
    json body;
    body["hashes"] = json::array();
    for (int i = 0; i < batch; ++i)
      body["hashes"].push_back(i % 2 ? misses[std::size_t(i) % misses.size()] : hits[std::size_t(i) % hits.size()]);
    const std::string batch_body = body.dump();

    struct Row {
      const char* what;
      Figures base, silent;
    };
    std::vector<Row> rows;
    auto single = [&](Daemon& d) {
      return measure(requests,
                     [&](int i) { return d.http().get("/v1/chunk/" + misses[std::size_t(i) % misses.size()]); });
    };
    auto batched = [&](Daemon& d) {
      return measure(requests, [&](int) { return d.http().post("/v1/chunk", batch_body); });
    };
    rows.push_back({"GET /v1/chunk (local miss)", single(off), single(mute)});
    rows.push_back({"POST /v1/chunk (batch)", batched(off), batched(mute)});

    double load[3] = {0, 0, 0};
    std::ifstream("/proc/loadavg") >> load[0] >> load[1] >> load[2];
    std::printf("fleet outage: a database that accepts and never answers (lookup_timeout 50 ms)\n");
    std::printf("%d requests each, batches of %d hashes (half local misses); load average %.2f %.2f %.2f, %u cores\n",
                requests, batch, load[0], load[1], load[2], std::thread::hardware_concurrency());
    std::printf(
        "| request | fleet off: p50 / p99 / max ms | silent fleet: p50 / p99 / max ms | marked unavailable |\n");
    std::printf("|---|---|---|---|\n");
    for (const Row& r : rows)
      std::printf("| %s | %s | %s | %zu of %zu |\n", r.what, r.base.text().c_str(), r.silent.text().c_str(),
                  r.silent.unavailable, r.silent.ms.size());
    for (const Row& r : rows)
      if (r.silent.unavailable != r.silent.ms.size()) {
        std::fprintf(stderr, "bench_fleet_outage: some answers of %s were not marked unavailable\n", r.what);
        rc = 1;
      }
  }
  std::error_code ec;
  fs::remove_all(root, ec);
  return rc;
}
