// dedupd_probe: numbers from a running dedupd, through its socket.
//   dedupd_probe latency SOCKET HASH [N]      keep-alive GET loop: p50/p99/p999
//   dedupd_probe ingest SOCKET DIR [CHUNKS]   drop one shard, time until queryable
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "harness/http_client.hpp"
#include "harness/make_shard.hpp"

using namespace dedupd::itest;
using Clock = std::chrono::steady_clock;

namespace {

double us(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

int latency(const std::string& socket, const std::string& hash, int n) {
  HttpClient http(socket);
  for (int i = 0; i < 200; ++i) http.get("/v1/chunk/" + hash);  // warm up, connect once
  std::vector<double> t;
  t.reserve(std::size_t(n));
  long last = 0;
  for (int i = 0; i < n; ++i) {
    auto t0 = Clock::now();
    last = http.get("/v1/chunk/" + hash).status;
    t.push_back(us(Clock::now() - t0));
  }
  std::sort(t.begin(), t.end());
  auto pct = [&](double p) { return t[std::min(t.size() - 1, std::size_t(p * double(t.size())))]; };
  std::printf("single GET /v1/chunk (status %ld), %d requests, keep-alive: p50 %.0f us, p99 %.0f us, p999 %.0f us\n",
              last, n, pct(0.50), pct(0.99), pct(0.999));
  return 0;
}

int ingest(const std::string& socket, const std::string& dir, std::uint32_t chunks) {
  std::uint32_t per_xorb = 8192;
  std::uint32_t xorbs = std::max<std::uint32_t>(1, chunks / per_xorb);
  auto t_make = Clock::now();
  auto shard = make_shard(
      {.seed = std::uint64_t(Clock::now().time_since_epoch().count()), .xorbs = xorbs, .chunks_per_xorb = per_xorb});
  std::printf("made a shard of %llu chunks, %zu bytes in %.0f ms\n", (unsigned long long)shard.chunks,
              shard.bytes.size(), us(Clock::now() - t_make) / 1000);
  HttpClient http(socket);
  std::string probe = "/v1/chunk/" + shard.first_chunks.back().to_string();
  auto t0 = Clock::now();
  drop_file(dir, shard.file_name(), shard.bytes);
  auto t_dropped = Clock::now();
  while (http.get(probe).status != 200) {
    if (Clock::now() - t0 > std::chrono::minutes(5)) {
      std::printf("not queryable after 5 minutes\n");
      return 1;
    }
  }
  double ms = us(Clock::now() - t_dropped) / 1000;
  std::printf("a chunk of it: %s\n", shard.first_chunks.back().to_string().c_str());
  std::printf(
      "file appeared -> queryable: %.0f ms for %llu chunk entries (%.2f M entries/s); writing the file took %.0f ms\n",
      ms, (unsigned long long)shard.chunks, double(shard.chunks) / ms / 1000, us(t_dropped - t0) / 1000);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string cmd = argc > 1 ? argv[1] : "";
  if (cmd == "latency" && argc >= 4) return latency(argv[2], argv[3], argc > 4 ? std::atoi(argv[4]) : 20000);
  if (cmd == "ingest" && argc >= 4)
    return ingest(argv[2], argv[3], argc > 4 ? std::uint32_t(std::atol(argv[4])) : 1'000'000);
  std::fprintf(stderr, "usage: dedupd_probe latency SOCKET HASH [N] | ingest SOCKET DIR [CHUNKS]\n");
  return 2;
}
