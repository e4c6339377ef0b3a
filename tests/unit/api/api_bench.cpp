// Measures the chunk routes through the socket against a real index:
// batch lookups (hashes/s, end to end: request sent -> response received)
// and single-query latency (p50/p99, one kept-alive connection). Not a test:
// prints numbers. Usage: api_bench [chunks=1000000] [found_fraction=0.5]
#include <curl/curl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>

#include "api/routes.hpp"
#include "daemon/api/http/batch_request.hpp"
#include "daemon/api/http/metrics.hpp"
#include "daemon/api/http/server.hpp"
#include "daemon/api/routes/routes.hpp"
#include "index/index.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/unit/shard/test_support.hpp"

using namespace dedupd;
using Clock = std::chrono::steady_clock;

namespace {

class StaticService : public daemon::api::Service, public daemon::answers::Sources {
 public:
  explicit StaticService(const index::Index* idx) : idx_(idx) {}
  const index::Index* index() const override { return idx_; }
  daemon::core::StatusInfo status() const override { return {}; }
  daemon::core::DaemonCounters counters() const override { return {}; }
  daemon::answers::Sources& answers() override { return *this; }
  daemon::core::GlobalDedupKey global_dedup_key() const override { return {}; }
  daemon::answers::FleetPort& fleet() override { return no_fleet_; }
  base::Result<daemon::core::RescanResult> rescan() override { return daemon::core::RescanResult{}; }
  base::Result<daemon::core::PurgeResult> purge(bool) override { return daemon::core::PurgeResult{}; }
  base::Result<index::RemoveOutcome> remove(const shard::Hash&) override { return index::RemoveOutcome::not_found; }
  daemon::core::UploadResult ingest(std::vector<std::uint8_t>, std::string) override { return base::Error{}; }

 private:
  const index::Index* idx_;
  daemon::answers::NoFleet no_fleet_;
};

std::size_t sink(char*, std::size_t s, std::size_t n, void* out) {
  *static_cast<std::size_t*>(out) += s * n;
  return s * n;
}

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// CPU time: the build machine is shared, so wall time alone says little.
double cpu_now(clockid_t which) {
  timespec ts{};
  clock_gettime(which, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
}
double thread_cpu() { return cpu_now(CLOCK_THREAD_CPUTIME_ID); }
double process_cpu() { return cpu_now(CLOCK_PROCESS_CPUTIME_ID); }

}  // namespace

int main(int argc, char** argv) {
  std::size_t total = argc > 1 ? std::stoul(argv[1]) : 1'000'000;
  double found_fraction = argc > 2 ? std::stod(argv[2]) : 0.5;
  tests::TempDir tmp("api-bench");
  const std::string& dir = tmp.path();

  index::Options o;
  o.dir = dir + "/index";
  o.no_sync_for_benchmarks = true;
  auto opened = index::Index::open(o);
  if (!opened) {
    std::fprintf(stderr, "%s\n", opened.error().to_string().c_str());
    return 1;
  }
  auto& idx = **opened;

  // Shards of 64 xorbs x 1024 chunks, like a large upload's.
  std::vector<shard::Hash> known;
  const std::size_t per_xorb = 1024, per_shard = 64;
  std::uint64_t seed = 1;
  auto t0 = Clock::now();
  while (known.size() < total) {
    shard::ShardWriter w;
    for (std::size_t x = 0; x < per_shard && known.size() < total; ++x) {
      auto xorb = shard::testing::make_xorb(seed++, per_xorb);
      known.insert(known.end(), xorb.raw.begin(), xorb.raw.end());
      w.add_xorb(xorb.record);
    }
    auto bytes = w.write({});
    auto view = shard::ShardView::parse(bytes);
    auto r = idx.ingest(*view, {}, {});
    if (!r) {
      std::fprintf(stderr, "%s\n", r.error().to_string().c_str());
      return 1;
    }
  }
  std::printf("indexed %zu chunks in %.2f s\n", known.size(), seconds(Clock::now() - t0));

  StaticService service(&idx);
  daemon::api::http::ServerOptions so;
  so.socket_path = dir + "/bench.sock";
  so.max_body_bytes = 64 << 20;
  daemon::api::http::ApiServer server(service, so, daemon::api::routes::api_routes());
  if (!server.start().ok()) return 1;

  // Query mix: found_fraction known hashes, the rest unknown.
  std::mt19937_64 rng(42);
  const std::size_t batch = 100'000;
  std::vector<shard::Hash> queries;
  for (std::size_t i = 0; i < batch; ++i)
    queries.push_back(std::uniform_real_distribution<>(0, 1)(rng) < found_fraction
                          ? known[rng() % known.size()]
                          : shard::testing::seeded_hash(1'000'000'000 + i));

  // Bare in-process batch for the ratio.
  index::BatchResult br;
  const int rounds = 5;
  double c0 = thread_cpu();
  for (int i = 0; i < rounds; ++i) (void)idx.lookup_batch(queries, br);
  double bare = rounds * batch / (thread_cpu() - c0);

  std::string body = "{\"hashes\":[";
  for (std::size_t i = 0; i < batch; ++i) body += (i ? ",\"" : "\"") + queries[i].to_string() + "\"";
  body += "]}";

  // In-process split of the handler: body parse, and the whole handler
  // (parse + lookup_batch + JSON), without the socket.
  {
    double p0 = thread_cpu();
    for (int i = 0; i < rounds; ++i) (void)daemon::api::http::parse_hash_batch(body, api::kMaxBatchHashes);
    double parse = rounds * batch / (thread_cpu() - p0);
    std::vector<std::string> names;
    for (const auto& r : daemon::api::routes::api_routes()) names.emplace_back(r.name);
    daemon::api::http::Metrics metrics(names);
    daemon::api::http::Context ctx{service, service.answers(), metrics};
    daemon::api::http::Request req;
    req.body.assign(body.begin(), body.end());
    double h0 = thread_cpu();
    std::size_t out = 0;
    std::vector<char> buf(64 << 10);
    for (int i = 0; i < rounds; ++i) {
      auto r = daemon::api::routes::post_chunk_batch(ctx, req);
      out += r.body.size();
      while (r.stream) {
        auto n = r.stream->read(buf.data(), buf.size());
        if (!n || *n == 0) break;
        out += *n;
      }
    }
    double handler = rounds * batch / (thread_cpu() - h0);
    std::printf(
        "in process (per CPU-second): parse %.2f M hashes/s, whole handler %.2f M hashes/s "
        "(%zu bytes out)\n",
        parse / 1e6, handler / 1e6, out / rounds);
  }

  CURL* c = curl_easy_init();
  curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, so.socket_path.c_str());
  std::size_t received = 0;
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &sink);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &received);
  curl_slist* headers = curl_slist_append(nullptr, "Expect:");
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);

  auto batch_round = [&] {
    curl_easy_setopt(c, CURLOPT_URL, "http://localhost/v1/chunk");
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.size()));
    received = 0;
    auto s = Clock::now();
    if (curl_easy_perform(c) != CURLE_OK) std::abort();
    return Clock::now() - s;
  };
  batch_round();  // warm
  Clock::duration spent{};
  double cpu0 = process_cpu();
  for (int i = 0; i < rounds; ++i) spent += batch_round();
  double cpu = process_cpu() - cpu0;
  double socket_rate = rounds * batch / seconds(spent);
  std::printf(
      "batch of %zu (%.0f%% known): %.2f M hashes/s wall through the socket, %.2f M per "
      "CPU-second of client+server; bare lookup_batch %.2f M per CPU-second; request %.1f MB, "
      "response %.1f MB\n",
      batch, found_fraction * 100, socket_rate / 1e6, rounds * batch / cpu / 1e6, bare / 1e6, body.size() / 1e6,
      received / 1e6);

  // Single lookups, one kept-alive connection.
  curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
  std::vector<double> us;
  const int n = 20'000;
  for (int i = 0; i < n; ++i) {
    std::string url = "http://localhost/v1/chunk/" + queries[std::size_t(i) % batch].to_string();
    curl_easy_setopt(c, CURLOPT_URL, url.c_str());
    auto s = Clock::now();
    if (curl_easy_perform(c) != CURLE_OK) std::abort();
    us.push_back(seconds(Clock::now() - s) * 1e6);
  }
  std::sort(us.begin(), us.end());
  std::printf("single GET /v1/chunk: p50 %.0f us, p99 %.0f us, max %.0f us (%d requests)\n", us[n / 2],
              us[n * 99 / 100], us.back(), n);

  curl_slist_free_all(headers);
  curl_easy_cleanup(c);
  server.stop();
}
