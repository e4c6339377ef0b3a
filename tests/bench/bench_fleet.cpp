// Fleet benchmark: prints a table, asserts nothing but right answers. Starts
// a throwaway PostgreSQL (tests/fleet/pg_cluster) and, in the same run:
//   publish (chunk entries/s) through fleet::Writer vs a bare binary COPY of
//     the same chunk rows into a plain indexed table, one transaction per
//     shard for both;
//   batch lookup of misses (raw hashes/s, blocks of --block) through
//     fleet::Reader (which asks only the forms its raw and key filters may
//     hold) vs a bare "SELECT prefix ... WHERE prefix = ANY($1)" of every
//     form (raw + one per live key), and of the raw forms alone; the first
//     lookup's time (it builds the filters), and a new reader under the
//     daemon's 50 ms bound with and without Reader::warm_up;
//   lookups of hits through the daemon: `dedupctl query --format short -`
//     of 200,000 raw hashes the fleet holds (the chunks of the first xorbs,
//     then as many spread over every xorb), on a dedupd whose own index is
//     empty, vs a bare prepared "SELECT prefix ... = ANY($1)" over the same
//     raw forms in dedupd's blocks of 4,096 (and in blocks of --block, and
//     over two connections at once: the database's capacity here), in the
//     same run: three passes of each in turn, the median of each;
//   a restart of that dedupd: how long until its raw filter is in use again,
//     from the file it kept (state_dir/fleet-key-filters);
//   bytes per chunk entry: pg_total_relation_size of the fleet schema's
//     tables (with their indexes and TOAST) / entries, and the bare table's.
//
//   bench_fleet [--entries N | --series 1M,3M,...] [--keys K] [--block B] [--url URL [--reuse]]
//               [--lookup-cache SIZE] [--lookup-timeout T] [--key-filter-memory SIZE] [--json FILE]
//               [--quick]
// Default N = 10,000,000 (xorbs of 4096 chunks, shards of 16 xorbs = 65,536
// entries; a tenth of the shards keyed under K = 4 keys). --quick (the ctest
// smoke) runs 200,000. --url: an existing, empty database instead of a
// throwaway server (left as the run leaves it); with --reuse, one that an
// earlier --url run with the same N and K filled: publishing is skipped and
// only lookups and sizes are measured. --lookup-cache: the daemon's
// fleet.lookup_cache (default its own, 16M). --lookup-timeout: the daemon's
// fleet.lookup_timeout (default its own: a user's daemon is measured as it
// runs out of the box). --key-filter-memory: fleet.key_filter_memory, the
// daemon's and the measured Reader's (default 512M; past about 89 M raw
// entries the raw filter is thinner than 16 bits, docs/FLEET.md). --json: the figures
// that may grow with the index, each with its baseline, as JSON. --series: the whole bench once per size,
// each on a server of its own (tests/bench/series.hpp), in one JSON document.
#include <libpq-fe.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "daemon/config/units.hpp"
#include "fleet/fleet.hpp"
#include "fleet/key_filters.hpp"
#include "fleet/wire.hpp"
#include "tests/bench/series.hpp"
#include "tests/unit/index/gen.hpp"

namespace {

using namespace dedupd;
using index::gen::GenXorb;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kChunksPerXorb = 4096;
constexpr std::size_t kXorbsPerShard = 16;

double secs(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "bench_fleet: %s\n", what.c_str());
  std::exit(1);
}

std::string num(double v, int prec = 0) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", prec, v);
  std::string s = b;
  auto dot = s.find('.');
  std::size_t int_end = dot == std::string::npos ? s.size() : dot;
  for (std::ptrdiff_t i = std::ptrdiff_t(int_end) - 3; i > (s[0] == '-' ? 1 : 0); i -= 3) s.insert(std::size_t(i), ",");
  return s;
}

void row(const std::string& name, const std::string& value, const std::string& note = "") {
  std::printf("  %-46s %16s  %s\n", name.c_str(), value.c_str(), note.c_str());
  std::fflush(stdout);
}

// A size as the config file spells it ("256M"), for the Reader the bench
// measures in process: the daemon's own parser, so both read it alike.
std::int64_t size_of(const std::string& text) {
  auto parsed = daemon::config::parse_size(text);
  if (auto* e = std::get_if<daemon::config::ParseError>(&parsed)) die("--key-filter-memory: " + e->message);
  return std::int64_t(std::get<std::uint64_t>(parsed));
}

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}

// The throwaway cluster, stopped and deleted however the run ends.
struct Cluster {
  std::string pointer;
  std::string dir;
  std::string given_url;
  explicit Cluster(std::string url) : given_url(std::move(url)) {
    if (!given_url.empty()) return;
    // Sized as a database host would be: the prefix index (~300 MB at 10 M)
    // in shared buffers, checkpoints not forced by WAL volume every shard.
    if (!std::getenv("PG_CLUSTER_CONF"))
      ::setenv("PG_CLUSTER_CONF", "shared_buffers=1GB;max_wal_size=8GB;checkpoint_timeout=30min", 1);
    char tmpl[] = "/tmp/dedupd-bench-fleet-XXXXXX";
    int fd = ::mkstemp(tmpl);
    if (fd < 0) die("mkstemp");
    ::close(fd);
    pointer = tmpl;
    // This process as the owner: die() exits without destructors, and a
    // --series child that fails must not leave its server running.
    if (std::system(
            (std::string(DEDUPD_PG_CLUSTER) + " start " + pointer + " " + std::to_string(::getpid())).c_str()) != 0)
      die("could not start PostgreSQL");
    dir = read_line(pointer);
  }
  ~Cluster() {
    // A failed stop leaves a cluster behind; nothing a destructor can do more.
    if (given_url.empty() && std::system((std::string(DEDUPD_PG_CLUSTER) + " stop " + pointer).c_str()) != 0)
      std::fprintf(stderr, "bench_fleet: stopping the PostgreSQL cluster failed\n");
  }
  std::string url() const { return given_url.empty() ? read_line(dir + "/url") : given_url; }
};

struct Pg {
  PGconn* c;
  explicit Pg(const std::string& url) : c(PQconnectdb(url.c_str())) {
    if (PQstatus(c) != CONNECTION_OK) die(std::string("connect: ") + PQerrorMessage(c));
  }
  ~Pg() { PQfinish(c); }
  std::string one(const std::string& sql) {
    PGresult* r = PQexec(c, sql.c_str());
    auto st = PQresultStatus(r);
    if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) die(sql + ": " + PQresultErrorMessage(r));
    std::string out = (st == PGRES_TUPLES_OK && PQntuples(r) && !PQgetisnull(r, 0, 0)) ? PQgetvalue(r, 0, 0) : "";
    PQclear(r);
    return out;
  }
  void copy(std::span<const std::uint8_t> body) {
    PGresult* r = PQexec(c, "COPY bare_chunk (prefix, xorb_id, chunk_index) FROM STDIN (FORMAT binary)");
    if (PQresultStatus(r) != PGRES_COPY_IN) die(std::string("bare COPY: ") + PQresultErrorMessage(r));
    PQclear(r);
    if (PQputCopyData(c, reinterpret_cast<const char*>(body.data()), int(body.size())) != 1 ||
        PQputCopyEnd(c, nullptr) != 1)
      die(std::string("bare COPY data: ") + PQerrorMessage(c));
    while ((r = PQgetResult(c))) {
      if (PQresultStatus(r) != PGRES_COMMAND_OK) die(std::string("bare COPY: ") + PQresultErrorMessage(r));
      PQclear(r);
    }
  }
  // The bare statement, planned once, generic (as the reader does).
  void prepare_any() {
    one("SET plan_cache_mode = force_generic_plan");
    PGresult* r = PQprepare(c, "bare_any", "SELECT prefix FROM bare_chunk WHERE prefix = ANY ($1::int8[])", 1, nullptr);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) die(std::string("prepare: ") + PQresultErrorMessage(r));
    PQclear(r);
  }
  // prepared: the statement of prepare_any().
  std::size_t any(const fleet::wire::Params& p, bool prepared) {
    std::vector<const char*> values;
    std::vector<int> lengths, formats;
    std::vector<unsigned> types;
    p.materialize(values, lengths, formats, types);
    PGresult* r = prepared ? PQexecPrepared(c, "bare_any", 1, values.data(), lengths.data(), formats.data(), 1)
                           : PQexecParams(c, "SELECT prefix FROM bare_chunk WHERE prefix = ANY ($1)", 1, types.data(),
                                          values.data(), lengths.data(), formats.data(), 1);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) die(std::string("bare SELECT: ") + PQresultErrorMessage(r));
    std::size_t n = std::size_t(PQntuples(r));
    PQclear(r);
    return n;
  }
};

// The bare statement's one parameter: the raw forms' prefixes.
fleet::wire::Params raw_prefix_params(std::span<const shard::Hash> hashes) {
  std::vector<std::int64_t> prefixes;
  prefixes.reserve(hashes.size());
  for (const auto& h : hashes) prefixes.push_back(fleet::wire::prefix_of(h.data()));
  fleet::wire::Params p;
  p.int8_array(prefixes);
  return p;
}

// A dedupd of the fleet whose own index is empty: every answer comes from
// the fleet. Stopped (SIGTERM) and its directory deleted however the run ends.
struct Daemon {
  std::filesystem::path dir;
  pid_t pid = -1;
  Daemon(const std::string& url, const std::string& lookup_cache, const std::string& lookup_timeout,
         const std::string& key_filter_memory) {
    char tmpl[] = "/tmp/dedupd-bench-fleet-daemon-XXXXXX";
    if (!::mkdtemp(tmpl)) die("mkdtemp");
    dir = tmpl;
    std::filesystem::create_directories(dir / "watch");
    std::ofstream yaml(dir / "dedupd.yaml");
    yaml << "state_dir: " << (dir / "state").string() << "\nsocket: " << socket() << "\nwatch:\n  - "
         << (dir / "watch").string() << "\nfleet:\n  url: \"" << url << "\"\n  host: bench-b\n";
    if (!lookup_timeout.empty()) yaml << "  lookup_timeout: " << lookup_timeout << "\n";
    if (!lookup_cache.empty()) yaml << "  lookup_cache: " << lookup_cache << "\n";
    if (!key_filter_memory.empty()) yaml << "  key_filter_memory: " << key_filter_memory << "\n";
    yaml.close();
    launch();
  }
  void launch() {
    pid = ::fork();
    if (pid < 0) die("fork");
    if (pid == 0) {
      // Gone with the bench, however it ends (die() runs no destructor).
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      std::string log = (dir / "dedupd.log").string(), config = (dir / "dedupd.yaml").string();
      if (!std::freopen(log.c_str(), "w", stderr) || !std::freopen(log.c_str(), "a", stdout)) ::_exit(126);
      ::execl(DEDUPD_BINARY, DEDUPD_BINARY, "--config", config.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
  }
  // SIGTERM, waited for, and started again on the same state directory.
  void restart() {
    ::kill(pid, SIGTERM);
    ::waitpid(pid, nullptr, 0);
    launch();
  }
  ~Daemon() {
    if (pid > 0) {
      ::kill(pid, SIGTERM);
      ::waitpid(pid, nullptr, 0);
    }
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  std::string socket() const { return (dir / "dedupd.sock").string(); }
  // True once /v1/status shows the raw filter in use or over its budget.
  bool raw_filter_settled() const {
    const std::string out = (dir / "status.json").string();
    std::string cmd = std::string(DEDUPCTL_BINARY) + " --socket " + socket() + " --json status > " + out;
    if (std::system(cmd.c_str()) != 0) return false;
    std::ifstream f(out);
    auto doc = nlohmann::json::parse(f, nullptr, false);
    if (doc.is_discarded()) return false;
    const auto kf = doc.value("/fleet/lookup_memory/key_filters"_json_pointer, nlohmann::json::object());
    return kf.value("raw_bits_per_entry", 0) > 0 || kf.value("raw_over_budget", false);
  }
  // `dedupctl query --format short -` of the hashes in `in`; how many found,
  // -1 when dedupctl could not ask (not ready yet).
  long query(const std::filesystem::path& in) const {
    const std::string out = (dir / "answers.txt").string();
    std::string cmd = std::string(DEDUPCTL_BINARY) + " --socket " + socket() + " query --format short - < " +
                      in.string() + " > " + out;
    int rc = std::system(cmd.c_str());
    if (!WIFEXITED(rc) || (WEXITSTATUS(rc) != 0 && WEXITSTATUS(rc) != 1)) return -1;
    std::ifstream f(out);
    long found = 0;
    for (std::string line; std::getline(f, line);) found += line.find(" found ") != std::string::npos;
    return found;
  }
};

// --series: the figures by size, each with the baseline its own run measured.
int run_series(const std::string& list, const std::vector<std::string>& args, const std::string& json_out) {
  auto sizes = bench::parse_sizes(list);
  if (sizes.empty()) die("--series: a list of sizes like 1M,3M,10M,30M");
  const std::string path = json_out.empty() ? "bench_fleet_series.json" : json_out;
  const bool failed =
      bench::run_series("bench_fleet", list, args, "--entries", sizes, path, [](nlohmann::json run) { return run; });
  return failed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t entries = 10'000'000, keys = 4, block = 10'000;
  std::string url_option, lookup_cache, lookup_timeout, key_filter_memory, json_out, series;
  bool reuse = false;
  std::vector<std::string> child_args;  // for --series: everything but --series and --json
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a != "--series" && a != "--json") {
      child_args.push_back(a);
      if (i + 1 < argc && a != "--reuse" && a != "--quick") child_args.push_back(argv[i + 1]);
    }
    auto next = [&]() -> std::size_t {
      if (i + 1 >= argc) die(a + " needs a value");
      return std::stoull(argv[++i]);
    };
    if (a == "--entries") entries = next();
    else if (a == "--keys") keys = next();
    else if (a == "--block") block = next();
    else if (a == "--url" && i + 1 < argc) url_option = argv[++i];
    else if (a == "--reuse") reuse = true;
    else if (a == "--lookup-cache" && i + 1 < argc) lookup_cache = argv[++i];
    else if (a == "--lookup-timeout" && i + 1 < argc) lookup_timeout = argv[++i];
    else if (a == "--key-filter-memory" && i + 1 < argc) key_filter_memory = argv[++i];
    else if (a == "--json" && i + 1 < argc) json_out = argv[++i];
    else if (a == "--series" && i + 1 < argc) series = argv[++i];
    else if (a == "--quick") entries = 200'000;
    else
      die("unknown option " + a +
          " (--entries N --series LIST --keys K --block B --url URL --reuse --lookup-cache SIZE --lookup-timeout T"
          " --key-filter-memory SIZE --json FILE --quick)");
  }
  if (!series.empty()) {
    // One database can hold one size: each child would fill it again.
    if (!url_option.empty()) die("--series starts a server per size; it takes no --url");
    return run_series(series, child_args, json_out);
  }
  if (reuse && url_option.empty()) die("--reuse needs --url (the database an earlier --url run filled)");
  const std::size_t per_shard = kChunksPerXorb * kXorbsPerShard;
  const std::size_t shards = std::max<std::size_t>(1, (entries + per_shard - 1) / per_shard);
  entries = shards * per_shard;

  Cluster cluster(url_option);
  const std::string url = cluster.url();
  fleet::ConnectOptions options;
  options.url = url;
  options.host_name = "bench";
  auto writer = fleet::Writer::connect(options);
  if (!writer) die(writer.error().to_string());
  Pg bare(url);
  if (!reuse) {
    bare.one(
        "CREATE TABLE bare_chunk (prefix bigint NOT NULL, xorb_id integer NOT NULL, chunk_index integer NOT NULL)");
    bare.one("CREATE INDEX bare_chunk_prefix ON bare_chunk (prefix)");
  }

  std::vector<shard::Key> key_set;
  for (std::size_t k = 0; k < keys; ++k) key_set.push_back(index::gen::hash_of_seed(0xBEEF00 + k));

  nlohmann::json report = {{"machine",
                            {{"nproc", ::sysconf(_SC_NPROCESSORS_ONLN)},
                             {"date", bench::utc_now()},
                             {"load1_at_start", bench::load_average()}}},
                           {"entries", entries},
                           {"keys", keys},
                           {"block", block},
                           {"metrics", nlohmann::json::object()}};
  auto& metrics = report["metrics"];
  std::printf("bench_fleet: %s entries in %zu shards of %zu xorbs x %zu chunks, %zu keys, %zu-hash blocks\n",
              num(double(entries)).c_str(), shards, kXorbsPerShard, kChunksPerXorb, keys, block);
  double fleet_s = 0, bare_s = 0;
  std::vector<shard::Hash> sample;  // known raw hashes, for a correctness check
  std::int32_t bare_xorb = 0;
  std::set<shard::Key> live_keys;  // the keys some shard uses: the reader asks under these
  for (std::size_t s = 0; s < shards; ++s) {
    if (reuse) {
      // What the loop below would publish: the sample hash and the key only.
      sample.push_back(
          index::gen::gen_xorb(s * kXorbsPerShard + s % kXorbsPerShard + 1, kChunksPerXorb).raw[s % kChunksPerXorb]);
      if (keys && s % 10 == 3) live_keys.insert(key_set[(s / 10) % keys]);
      continue;
    }
    std::vector<GenXorb> xorbs;
    std::vector<const GenXorb*> ptrs;
    for (std::size_t x = 0; x < kXorbsPerShard; ++x)
      xorbs.push_back(index::gen::gen_xorb(s * kXorbsPerShard + x + 1, kChunksPerXorb));
    for (const auto& x : xorbs) ptrs.push_back(&x);
    index::gen::ShardSpec spec;
    spec.xorbs = ptrs;
    spec.created = 1700000000 + s;
    if (keys && s % 10 == 3) {
      spec.key = key_set[(s / 10) % keys];
      live_keys.insert(spec.key);
      spec.expiry = 4000000000ull;
    }
    auto owned = index::gen::own(index::gen::build_shard(spec));
    sample.push_back(xorbs[s % kXorbsPerShard].raw[s % kChunksPerXorb]);

    auto t0 = Clock::now();
    auto out = (*writer)->publish(*owned.view, owned.hash);
    auto t1 = Clock::now();
    if (!out) die(out.error().to_string());
    if (out->new_chunk_entries != per_shard) die("publish added " + std::to_string(out->new_chunk_entries));
    fleet_s += secs(t0, t1);

    // The bare baseline: the same rows, built and copied the same way.
    t0 = Clock::now();
    fleet::wire::CopyBody body;
    body.reserve(per_shard * 30);
    for (const auto& x : owned.view->xorbs()) {
      ++bare_xorb;
      for (std::uint32_t i = 0; i < x.num_chunks(); ++i) {
        body.begin_row(3);
        body.int8(fleet::wire::prefix_of(x.chunk_hash_bytes(i)));
        body.int4(bare_xorb);
        body.int4(std::int32_t(i));
      }
    }
    bare.one("BEGIN");
    bare.copy(body.finish());
    bare.one("COMMIT");
    t1 = Clock::now();
    bare_s += secs(t0, t1);
    if ((s + 1) % 16 == 0 || s + 1 == shards)
      std::fprintf(stderr, "  published %zu/%zu shards (fleet %.1f s, bare %.1f s)\n", s + 1, shards, fleet_s, bare_s);
  }
  if (!reuse) bare.one("VACUUM ANALYZE");

  std::printf("\n  live keys: %zu (each hash is asked in %zu forms)\n", live_keys.size(), 1 + live_keys.size());
  std::printf("\n  %-46s %16s  %s\n", "measure", "value", "baseline / goal");
  if (!reuse) {
    double fleet_rate = double(entries) / fleet_s, bare_rate = double(entries) / bare_s;
    row("publish, entries/s", num(fleet_rate),
        "bare COPY " + num(bare_rate) + " (" + num(fleet_rate / bare_rate, 2) + " x; goal >= 100,000 and >= 0.5 x)");
    metrics["publish"] = bench::metric("entries/s", fleet_rate, bare_rate, "bare binary COPY, one txn per shard");
  }

  // Lookups of misses: random raw hashes, in blocks.
  // A set of key filters of its own, so that their memory can be shown.
  fleet::ConnectOptions measured = options;
  measured.key_filters_shared =
      key_filter_memory.empty() ? fleet::make_key_filters() : fleet::make_key_filters(size_of(key_filter_memory));
  auto reader = fleet::Reader::connect(measured);
  if (!reader) die(reader.error().to_string());
  std::mt19937_64 rng(42);
  const std::size_t total_queries = std::max<std::size_t>(block * 20, 200'000);
  std::vector<shard::Hash> queries(total_queries);
  for (auto& h : queries)
    for (int w = 0; w < 4; ++w) shard::store_u64(h.bytes.data() + 8 * w, rng());
  // Warm both once (plans, caches) on a block that is not timed.
  fleet::ChunkAnswers answers;
  auto far = [] { return fleet::Deadline::in(std::chrono::minutes(5)); };
  // warm_up builds the key filters and the raw filter (as the daemon's
  // keeper thread does), then a first lookup: the cost of a reader's start.
  auto t_first = Clock::now();
  if (auto ok = (*reader)->warm_up(far()); !ok) die(ok.error().to_string());
  if (auto ok = (*reader)->lookup_chunks(std::span(queries).first(block), answers, far()); !ok)
    die(ok.error().to_string());
  double first_s = secs(t_first, Clock::now());
  bare.prepare_any();
  double fleet_lookup_s = 0, bare_lookup_s = 0, bare_prepared_s = 0, bare_raw_s = 0;
  std::size_t found = 0, bare_found = 0;
  std::uint64_t forms = 0, forms_asked = 0;
  for (std::size_t off = 0; off < total_queries; off += block) {
    auto part = std::span(queries).subspan(off, std::min(block, total_queries - off));
    auto t0 = Clock::now();
    auto ok = (*reader)->lookup_chunks(part, answers, far());
    auto t1 = Clock::now();
    if (!ok) die(ok.error().to_string());
    found += answers.locations.size();
    fleet_lookup_s += secs(t0, t1);
    forms += (*reader)->last_lookup().forms;
    forms_asked += (*reader)->last_lookup().forms_asked;

    // Bare: the same keys the reader sends (raw + each live key's form).
    t0 = Clock::now();
    std::vector<std::int64_t> prefixes;
    prefixes.reserve(part.size() * (1 + live_keys.size()));
    for (const auto& h : part) {
      prefixes.push_back(fleet::wire::prefix_of(h.data()));
      for (const auto& k : live_keys) prefixes.push_back(fleet::wire::prefix_of(shard::keyed_chunk_hash(k, h).data()));
    }
    fleet::wire::Params p;
    p.int8_array(prefixes);
    auto t_hashed = Clock::now();
    bare_found += bare.any(p, false);
    t1 = Clock::now();
    bare_lookup_s += secs(t0, t1);
    auto t2 = Clock::now();
    bare_found += bare.any(p, true);
    auto t3 = Clock::now();
    bare_prepared_s += secs(t0, t_hashed) + secs(t2, t3);

    // Bare, the raw forms alone: the least any complete answer asks.
    t0 = Clock::now();
    bare_found += bare.any(raw_prefix_params(part), true);
    bare_raw_s += secs(t0, Clock::now());
  }
  // Misses by construction: a hit would mean the figures time something else.
  if (found != 0 || bare_found != 0)
    die("the misses matched " + std::to_string(found) + " locations (bare: " + std::to_string(bare_found) + ")");
  double lookup_rate = double(total_queries) / fleet_lookup_s, bare_lookup_rate = double(total_queries) / bare_lookup_s;
  row("batch lookup of misses, hashes/s", num(lookup_rate),
      "bare SELECT = ANY " + num(bare_lookup_rate) + " (" + num(lookup_rate / bare_lookup_rate, 2) +
          " x; goal >= 100,000 and >= 0.5 x)");
  double bare_prepared_rate = double(total_queries) / bare_prepared_s;
  row("", "",
      "bare prepared (generic plan) " + num(bare_prepared_rate) + " (" + num(lookup_rate / bare_prepared_rate, 2) +
          " x)");
  row("  forms asked per hash (the rest ruled out by the raw and key filters)",
      num(double(forms_asked) / double(total_queries), 4), "of " + num(double(forms) / double(total_queries), 0));
  double bare_raw_rate = double(total_queries) / bare_raw_s;
  metrics["lookup_misses"] =
      bench::metric("hashes/s", lookup_rate, bare_raw_rate, "bare prepared = ANY of the raw forms alone");
  metrics["lookup_misses"]["bare_every_form"] = bare_lookup_rate;
  metrics["lookup_misses"]["bare_every_form_prepared"] = bare_prepared_rate;
  metrics["lookup_misses"]["forms_asked_per_hash"] = double(forms_asked) / double(total_queries);
  row("", "",
      "bare SELECT = ANY of the raw forms alone " + num(bare_raw_rate) + " (" + num(lookup_rate / bare_raw_rate, 2) +
          " x)");
  std::size_t keyed_entries = 0;
  if (keys)
    for (std::size_t s = 0; s < shards; ++s) keyed_entries += s % 10 == 3 ? per_shard : 0;
  row("  warm_up and a first lookup, building the filters, s", num(first_s, 2),
      num(double(keyed_entries)) + " keyed entries and the raw ones (48 B each fetched)");
  {
    const auto kf = measured.key_filters_shared->summary();
    const std::int64_t keyed_bytes = kf.bytes - kf.raw_bytes;
    const double per_entry = kf.entries ? double(keyed_bytes) / double(kf.entries) : 0;
    row("  key filters' memory, MiB", num(double(keyed_bytes) / double(1 << 20), 1),
        num(double(kf.entries)) + " keyed entries in " + num(double(kf.complete)) + " filters, " + num(per_entry, 2) +
            " B each, " + std::to_string(kf.thinnest_bits) + " bits an entry at the thinnest; budget " +
            num(double(measured.key_filters_shared->budget()) / double(1 << 20), 0) + " MiB");
    metrics["key_filter_bytes_per_keyed_entry"] = bench::metric("bytes per keyed entry", per_entry);
    metrics["key_filter_bytes_per_keyed_entry"]["bytes"] = keyed_bytes;
    metrics["key_filter_bytes_per_keyed_entry"]["thinnest_bits"] = kf.thinnest_bits;
    const double per_raw = kf.raw_entries ? double(kf.raw_bytes) / double(kf.raw_entries) : 0;
    row("  raw filter's memory, MiB", num(double(kf.raw_bytes) / double(1 << 20), 1),
        kf.raw_bits ? num(double(kf.raw_entries)) + " raw entries, " + num(per_raw, 2) + " B each, " +
                          std::to_string(kf.raw_bits) + " bits an entry (at most half the budget)"
                    : std::string(kf.raw_over_budget ? "over half the budget: every raw form asked" : "not built"));
    metrics["raw_filter_bytes_per_raw_entry"] = bench::metric("bytes per raw entry", per_raw);
    metrics["raw_filter_bytes_per_raw_entry"]["bytes"] = kf.raw_bytes;
    metrics["raw_filter_bytes_per_raw_entry"]["bits"] = kf.raw_bits;
  }

  // As the daemon asks: blocks of 1,000 under its default 50 ms bound (a
  // failed call is asked again at once here; the daemon would answer
  // locally). How many calls until a new reader's filters are in use, and
  // how many failed on the way.
  {
    fleet::ConnectOptions bounded = options;
    bounded.retry_after = std::chrono::milliseconds(0);
    auto fresh = fleet::Reader::connect(bounded);
    if (!fresh) die(fresh.error().to_string());
    std::size_t calls = 0, failed = 0;
    bool in_use = false;
    auto t0 = Clock::now();
    while (calls < 2000 && !in_use && secs(t0, Clock::now()) < 20) {
      auto part = std::span(queries).subspan((calls * 1000) % (total_queries - 1000), 1000);
      ++calls;
      auto ok = (*fresh)->lookup_chunks(part, answers, fleet::Deadline::in(std::chrono::milliseconds(50)));
      if (!ok) ++failed;
      else in_use = (*fresh)->last_lookup().filtered_keys == live_keys.size();
    }
    row("  under a 50 ms bound: calls until filters are in use", in_use ? num(double(calls)) : "never",
        num(secs(t0, Clock::now()), 2) + " s, " + num(double(failed)) + " calls failed (fleet.timeout)");

    // The same after Reader::warm_up with a long bound: 200 calls.
    auto warmed = fleet::Reader::connect(bounded);
    if (!warmed) die(warmed.error().to_string());
    t0 = Clock::now();
    if (auto ok = (*warmed)->warm_up(far()); !ok) die(ok.error().to_string());
    double warm_s = secs(t0, Clock::now());
    std::size_t filtered_calls = 0;
    failed = 0;
    t0 = Clock::now();
    for (std::size_t i = 0; i < 200; ++i) {
      auto part = std::span(queries).subspan((i * 1000) % (total_queries - 1000), 1000);
      auto ok = (*warmed)->lookup_chunks(part, answers, fleet::Deadline::in(std::chrono::milliseconds(50)));
      if (!ok) ++failed;
      else filtered_calls += (*warmed)->last_lookup().filtered_keys == live_keys.size();
    }
    row("  after warm_up (" + num(warm_s, 2) + " s): 200 calls under 50 ms", num(double(filtered_calls)) + " filtered",
        num(200'000 / secs(t0, Clock::now())) + " hashes/s, " + num(double(failed)) + " calls failed");
  }

  // Right answers: every sampled known hash is found.
  {
    auto ok = (*reader)->lookup_chunks(sample, answers, far());
    if (!ok) die(ok.error().to_string());
    for (std::size_t i = 0; i < sample.size(); ++i)
      if (answers.of(i).empty()) die("a published chunk was not found: " + sample[i].to_string());
  }

  // A global-dedup reply's fleet part as the daemon asks it
  // (FleetLookup::source_shard): the shards holding the chunk, then the best
  // one's CAS blocks in reply order, vs a bare fetch of the same blocks by
  // shard hash. Each shard here brings 16 blocks of 4,096 entries (3.1 MB).
  {
    const fleet::ShardXorbBounds bounds{8192, (64ull << 20) - 344};
    std::vector<double> fleet_ms, bare_ms;
    std::size_t reply_bytes = 0, within = 0;
    const std::size_t n = std::min<std::size_t>(sample.size(), 100);
    for (std::size_t i = 0; i < n; ++i) {
      auto t0 = Clock::now();
      auto ok = (*reader)->lookup_chunks(std::span(&sample[i], 1), answers, far());
      if (!ok) die(ok.error().to_string());
      std::vector<fleet::ShardCandidate> candidates;
      for (const auto& loc : answers.of(0))
        for (const auto& sh : answers.shards(loc)) candidates.push_back({sh.shard, loc.xorb});
      auto got = (*reader)->shard_xorbs(candidates, bounds, 1'700'000'000, far());
      auto t1 = Clock::now();
      if (!got) die(got.error().to_string());
      if (!*got || (*got)->xorbs.size() != kXorbsPerShard) die("a source shard did not come whole");
      fleet_ms.push_back(secs(t0, t1) * 1e3);
      within += secs(t0, t1) <= 0.050;
      std::size_t bytes = 0;
      for (const auto& x : (*got)->xorbs) bytes += x.cas_block.size();
      reply_bytes = bytes;

      fleet::wire::Params p;
      p.bytea({(*got)->shard.bytes.data(), 32});
      std::vector<const char*> values;
      std::vector<int> lengths, formats;
      std::vector<unsigned> types;
      p.materialize(values, lengths, formats, types);
      t0 = Clock::now();
      PGresult* r =
          PQexecParams(bare.c,
                       "SELECT x.cas_block FROM dedupd.shard s JOIN dedupd.xorb x ON x.id = ANY (s.xorb_order) "
                       "WHERE s.hash = $1",
                       1, types.data(), values.data(), lengths.data(), formats.data(), 1);
      t1 = Clock::now();
      if (PQresultStatus(r) != PGRES_TUPLES_OK || std::size_t(PQntuples(r)) != kXorbsPerShard)
        die(std::string("bare block fetch: ") + PQresultErrorMessage(r));
      PQclear(r);
      bare_ms.push_back(secs(t0, t1) * 1e3);
    }
    auto quantile = [](std::vector<double> v, double q) {
      std::sort(v.begin(), v.end());
      return v[std::min(v.size() - 1, std::size_t(q * double(v.size())))];
    };
    row("global-dedup source shard from the fleet, ms",
        num(quantile(fleet_ms, 0.5), 1) + " / " + num(quantile(fleet_ms, 0.99), 1),
        "median / p99 of " + num(double(n)) + "; bare fetch of the same blocks " + num(quantile(bare_ms, 0.5), 1) +
            " / " + num(quantile(bare_ms, 0.99), 1) + "; " + num(double(reply_bytes)) + " B of blocks; " +
            num(double(within)) + " within 50 ms");
  }

  // Hits through the daemon, as a user asks: `dedupctl query --format short
  // -` on a host that holds nothing itself, every hash held by the fleet.
  // Two sets of 200,000: every chunk of the first raw xorbs (about 49 of
  // them, as a host deduplicating a few large files asks), shuffled; and as
  // many chunks of every raw xorb of the fleet, shuffled (hits spread
  // wider than the daemon's xorb cache holds blocks for).
  {
    const std::size_t want = std::min<std::size_t>(200'000, entries);
    // From raw shards only: the bare table holds the stored forms, keyed
    // for keyed shards (the daemon finds those too, under their key).
    std::vector<std::size_t> raw_xorbs;
    for (std::size_t sh = 0; sh < shards; ++sh)
      if (!(keys && sh % 10 == 3))
        for (std::size_t x = 0; x < kXorbsPerShard; ++x) raw_xorbs.push_back(sh * kXorbsPerShard + x + 1);
    std::vector<shard::Hash> clustered, spread;
    for (std::size_t seed : raw_xorbs) {
      if (clustered.size() >= want) break;
      for (const auto& h : index::gen::gen_xorb(seed, kChunksPerXorb).raw)
        if (clustered.size() < want) clustered.push_back(h);
    }
    const std::size_t per_xorb = std::max<std::size_t>(1, (want + raw_xorbs.size() - 1) / raw_xorbs.size());
    for (std::size_t seed : raw_xorbs) {
      auto raw = index::gen::gen_xorb(seed, kChunksPerXorb).raw;
      std::shuffle(raw.begin(), raw.end(), rng);
      for (std::size_t i = 0; i < std::min(per_xorb, raw.size()) && spread.size() < want; ++i) spread.push_back(raw[i]);
    }
    std::shuffle(clustered.begin(), clustered.end(), rng);
    std::shuffle(spread.begin(), spread.end(), rng);
    Daemon daemon(url, lookup_cache, lookup_timeout, key_filter_memory);
    const auto warm = daemon.dir / "warm.txt";
    {
      std::ofstream f(warm);
      for (std::size_t i = 0; i < 1000; ++i) f << clustered[i].to_string() << '\n';
    }
    // Ready, and the fleet connected (its connector thread), before timing.
    bool ready = false;
    for (int i = 0; i < 600 && !ready; ++i) {
      ready = std::filesystem::exists(daemon.socket()) && daemon.query(warm) == 1000;
      if (!ready) ::usleep(100'000);
    }
    if (!ready) die("dedupd did not answer from the fleet (log: " + (daemon.dir / "dedupd.log").string() + ")");
    // And its keeper thread's raw filter built (or found over its budget):
    // a daemon's start cost, apart from the rates of one that runs.
    {
      const auto t = Clock::now();
      bool built = false;
      while (!built && secs(t, Clock::now()) < 300) {
        built = daemon.raw_filter_settled();
        if (!built) ::usleep(100'000);
      }
      row("  dedupd start: raw filter built by its keeper, s", built ? num(secs(t, Clock::now()), 2) : "not in 300 s",
          "after the first fleet answer");
      metrics["raw_filter_built_s"] = bench::metric("s", built ? secs(t, Clock::now()) : NAN);
    }
    Pg pair_a(url), pair_b(url);
    for (Pg* conn : {&pair_a, &pair_b}) conn->prepare_any();
    constexpr std::size_t kDaemonBlock = 4096;  // HashSpool::kBlockHashes
    auto measure = [&](const std::vector<shard::Hash>& hits, const char* what, const char* name) {
      const auto in = daemon.dir / "hashes.txt";
      {
        std::ofstream f(in);
        for (const auto& h : hits) f << h.to_string() << '\n';
      }
      // The bare query in dedupd's blocks (HashSpool::kBlockHashes, one
      // statement each, as the local streams' baseline reads 4,096 a
      // transaction), and in --block's.
      auto bare_rate_in = [&](std::size_t n) {
        double bare_hits_s = 0;
        std::size_t bare_hits = 0;
        for (std::size_t off = 0; off < hits.size(); off += n) {
          auto part = std::span(hits).subspan(off, std::min(n, hits.size() - off));
          auto t = Clock::now();
          bare_hits += bare.any(raw_prefix_params(part), true);
          bare_hits_s += secs(t, Clock::now());
        }
        if (bare_hits < hits.size())
          die("bare: " + std::to_string(bare_hits) + " rows for " + std::to_string(hits.size()));
        return double(hits.size()) / bare_hits_s;
      };
      // The database's own capacity here: the same bare statements in
      // dedupd's blocks, taken in turn by two connections at once (dedupd
      // overlaps its blocks on two or three). Not a goal's baseline: what
      // dedupd's own CPU and its probe's cost leave of it.
      auto bare_pair_rate = [&] {
        std::atomic<std::size_t> next{0}, rows{0};
        auto t = Clock::now();
        std::vector<std::thread> both;
        for (Pg* conn : {&pair_a, &pair_b})
          both.emplace_back([&, conn] {
            for (std::size_t off; (off = next.fetch_add(kDaemonBlock)) < hits.size();)
              rows += conn->any(
                  raw_prefix_params(std::span(hits).subspan(off, std::min(kDaemonBlock, hits.size() - off))), true);
          });
        for (auto& th : both) th.join();
        const double s = secs(t, Clock::now());
        if (rows < hits.size()) die("bare over two connections: " + std::to_string(rows.load()) + " rows");
        return double(hits.size()) / s;
      };
      // A stream takes well under a second: one pass each swung the ratio
      // by a fifth with the machine's load. Three passes, taken in turn
      // (dedupd, bare, bare in --block's), and the median of each.
      constexpr int kPasses = 3;
      std::vector<double> rates, bare_rates, bare_block_rates, bare_pair_rates;
      for (int pass = 0; pass < kPasses; ++pass) {
        auto t0 = Clock::now();
        long through = daemon.query(in);
        double daemon_s = secs(t0, Clock::now());
        if (through != long(hits.size()))
          die(std::string(what) + " through the daemon: " + std::to_string(through) + " of " +
              std::to_string(hits.size()) + " found");
        rates.push_back(double(hits.size()) / daemon_s);
        bare_rates.push_back(bare_rate_in(kDaemonBlock));
        bare_block_rates.push_back(bare_rate_in(block));
        bare_pair_rates.push_back(bare_pair_rate());
      }
      auto median = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
      };
      const double rate = median(rates), bare_rate = median(bare_rates), bare_rate_block = median(bare_block_rates),
                   bare_rate_pair = median(bare_pair_rates);
      row(std::string("hits through dedupd (dedupctl query --format short -), ") + what + ", hashes/s", num(rate),
          "bare prepared SELECT = ANY of the raw forms, 4,096 a statement " + num(bare_rate) + " (" +
              num(rate / bare_rate, 2) + " x; goal >= 0.8 x and >= 100,000)");
      row("", "",
          "the same, " + num(double(block)) + " a statement " + num(bare_rate_block) + " (" +
              num(rate / bare_rate_block, 2) + " x)");
      row("", "",
          "the same, 4,096 a statement over two connections at once " + num(bare_rate_pair) + " (" +
              num(rate / bare_rate_pair, 2) + " x)");
      metrics[name] =
          bench::metric("hashes/s", rate, bare_rate, "bare prepared = ANY of the raw forms, 4,096 a statement");
      metrics[name]["bare_two_connections"] = bare_rate_pair;
      metrics[name]["bare_block"] = bare_rate_block;
      metrics[name]["block"] = block;
      metrics[name]["hashes"] = hits.size();
      metrics[name]["passes"] = kPasses;
    };
    measure(clustered, "the chunks of the first xorbs", "dedupd_hits_first_xorbs");
    measure(spread, "spread over every xorb", "dedupd_hits_spread");
    // Where the time goes: the Reader alone over the first set, in the
    // daemon's blocks (HashSpool::kBlockHashes).
    double reader_s = 0;
    for (std::size_t off = 0; off < clustered.size(); off += 4096) {
      auto part = std::span(clustered).subspan(off, std::min<std::size_t>(4096, clustered.size() - off));
      auto t0 = Clock::now();
      auto ok = (*reader)->lookup_chunks(part, answers, far());
      reader_s += secs(t0, Clock::now());
      if (!ok) die(ok.error().to_string());
    }
    row("  the Reader alone, the first set, 4,096-hash blocks, hashes/s", num(double(clustered.size()) / reader_s), "");
    metrics["reader_hits_first_xorbs"] = bench::metric("hashes/s", double(clustered.size()) / reader_s);

    // A restart, as a rolling upgrade makes one: the keeper reads the
    // filters it kept (state_dir/fleet-key-filters) and lists their xorbs,
    // rather than reading every raw CAS block again.
    daemon.restart();
    const auto restarted = Clock::now();
    bool settled = false;
    while (!settled && secs(restarted, Clock::now()) < 300) {
      settled = daemon.raw_filter_settled();
      if (!settled) ::usleep(20'000);
    }
    std::error_code ec;
    const auto kept_bytes = std::filesystem::file_size(daemon.dir / "state" / "fleet-key-filters", ec);
    const double restart_s = secs(restarted, Clock::now());
    row("  dedupd restart: raw filter in use again, s", settled ? num(restart_s, 2) : "not in 300 s",
        "from the restart; its kept file " + (ec ? std::string("missing") : num(double(kept_bytes) / (1 << 20), 1)) +
            " MiB");
    metrics["raw_filter_after_restart_s"] = bench::metric("s", settled ? restart_s : NAN);
  }

  Pg admin(url);
  admin.one("VACUUM ANALYZE");
  double fleet_bytes = std::stod(admin.one(
      "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
      "WHERE n.nspname = 'dedupd' AND c.relkind = 'r'"));
  double chunk_bytes = std::stod(admin.one(
      "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
      "WHERE n.nspname = 'dedupd' AND c.relname LIKE 'chunk\\_p%' AND c.relkind = 'r'"));
  double xorb_bytes = std::stod(admin.one("SELECT pg_total_relation_size('dedupd.xorb')"));
  double bare_bytes = std::stod(admin.one("SELECT pg_total_relation_size('bare_chunk')"));
  row("bytes per entry (tables + indexes + TOAST)", num(fleet_bytes / double(entries), 1),
      "goal <= 160; bare chunk table " + num(bare_bytes / double(entries), 1));
  row("  of which chunk rows + prefix index", num(chunk_bytes / double(entries), 1), "");
  row("  of which xorb CAS blocks", num(xorb_bytes / double(entries), 1), "48 B of chunk entry each");
  metrics["bytes_per_entry"] = bench::metric("B", fleet_bytes / double(entries), bare_bytes / double(entries),
                                             "bare chunk table (prefix, xorb id, index) + its B-tree");
  metrics["bytes_per_entry"]["chunk_rows_and_index"] = chunk_bytes / double(entries);
  metrics["bytes_per_entry"]["xorb_cas_blocks"] = xorb_bytes / double(entries);
  report["machine"]["load1_at_end"] = bench::load_average();
  if (!json_out.empty()) std::ofstream(json_out) << report.dump(1) << "\n";
  return 0;
}
