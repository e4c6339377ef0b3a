// Any request through the API's routing table and route handlers, without a
// socket: the input is "METHOD URL\n" followed by the body. The URL is split
// into path and query string the way libmicrohttpd hands them over (query
// split at '&' and '=', percent-decoded), matched by the Router and run by
// the handler the table names, over a small real index (a raw shard with
// files and sha256, a keyed shard that expires) behind a fake Service.
//
// Properties beyond "no crash": every status is one docs/API.md lists; every
// JSON body parses and every 4xx/5xx carries the documented error code; a
// batch body the fast scanner accepts is valid JSON holding the same hashes.
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "daemon/api/http/batch_request.hpp"
#include "daemon/api/http/context.hpp"
#include "daemon/api/http/metrics.hpp"
#include "daemon/api/http/router.hpp"
#include "daemon/api/routes/routes.hpp"
#include "daemon/api/service.hpp"
#include "index/index.hpp"
#include "shard/keys.hpp"
#include "shard/writer.hpp"
#include "tests/support/temp_dir.hpp"

using namespace dedupd;
using namespace dedupd::daemon;

namespace {

void require(bool ok, const char* what, std::string_view detail = {}) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_http: property violated: %s %.*s\n", what, int(detail.size()), detail.data());
    std::abort();
  }
}

shard::Hash hash_of(std::uint64_t seed) {
  shard::Hash h;
  for (int w = 0; w < 4; ++w) {
    std::uint64_t z = (seed += 0x9E3779B97F4A7C15ull) + std::uint64_t(w);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    std::memcpy(h.bytes.data() + 8 * w, &z, 8);
  }
  return h;
}

// A shard of `xorbs` xorbs of 4 chunks; raw hashes from `seed`; one file
// (with sha256 and verification) over the first xorb when `with_file`.
std::vector<std::uint8_t> make_shard(std::uint64_t seed, int xorbs, const shard::Key* key, std::uint64_t expiry,
                                     bool with_file) {
  shard::ShardWriter w;
  std::vector<shard::Hash> xorb_hashes;
  for (int x = 0; x < xorbs; ++x) {
    shard::XorbRecord xr;
    std::vector<shard::HashAndSize> leaves;
    std::uint32_t offset = 0;
    for (int c = 0; c < 4; ++c) {
      shard::Hash raw = hash_of(seed * 1000 + std::uint64_t(x) * 10 + std::uint64_t(c));
      std::uint32_t size = 1000 + 100 * std::uint32_t(c);
      leaves.push_back({raw, size});
      shard::ChunkEntry e;
      e.chunk_hash = key ? shard::keyed_chunk_hash(*key, raw) : raw;
      e.byte_start = offset;
      e.unpacked_bytes = size;
      e.flags = c == 0 ? 0x80000000u : 0;
      xr.chunks.push_back(e);
      offset += size;
    }
    xr.header.xorb_hash = shard::xorb_hash(leaves);
    xr.header.bytes_in_xorb = offset;
    xr.header.bytes_on_disk = offset / 2;
    xorb_hashes.push_back(xr.header.xorb_hash);
    w.add_xorb(std::move(xr));
  }
  if (with_file) {
    shard::FileRecord f;
    f.header.file_hash = hash_of(seed * 7 + 1);
    shard::FileTerm t;
    t.xorb_hash = xorb_hashes[0];
    t.chunk_start = 0;
    t.chunk_end = 4;
    t.unpacked_bytes = 1000 + 1100 + 1200 + 1300;
    f.terms.push_back(t);
    f.verification.push_back({hash_of(seed * 7 + 2), {}});
    f.metadata_ext = shard::HashRecord{hash_of(seed * 7 + 3), {}};
    w.add_file(std::move(f));
  }
  shard::WriteOptions o;
  o.footer.creation_timestamp = 1'750'000'000 + seed;
  o.footer.key_expiry = expiry;
  if (key) o.footer.chunk_hash_key = *key;
  return w.write(o);
}

// The daemon side of the seam: canned answers, no writes, so every input
// sees the same index; lookups answered from it, without a fleet.
class FakeService : public api::Service, public answers::Sources {
 public:
  const index::Index* idx = nullptr;
  std::vector<shard::Hash> shards;
  std::string state_dir;  // the export route writes its temporary file under it
  const index::Index* index() const override { return idx; }
  core::StatusInfo status() const override {
    return {"0.0.0-fuzz", 1, 2, "/run/dedupd/dedupd.sock", state_dir, {"/a \"quoted\" dir\\"}, {}, {}};
  }
  core::DaemonCounters counters() const override { return {1, 2, 3, 4, 5, 6, 7, 8}; }
  answers::Sources& answers() override { return *this; }
  core::GlobalDedupKey global_dedup_key() const override { return {hash_of(99), 3600}; }
  answers::FleetPort& fleet() override { return no_fleet; }
  base::Result<core::RescanResult> rescan() override { return core::RescanResult{3, 2, 1}; }
  base::Result<core::PurgeResult> purge(bool) override {
    return core::PurgeResult{shards, {"/x/y.mdb", "/x/\"odd\"\n.mdb"}};
  }
  base::Result<index::RemoveOutcome> remove(const shard::Hash& h) override {
    for (const auto& s : shards)
      if (s == h) return index::RemoveOutcome::removed;
    return index::RemoveOutcome::not_found;
  }
  core::UploadResult ingest(std::vector<std::uint8_t> bytes, std::string) override {
    if (bytes.size() < 8) return base::Error{"header.magic", 0, "too short"};
    return std::vector<core::IngestedShard>{
        {shards.empty() ? shard::Hash{} : shards[0], bytes.size() % 2 == 0, 1, 4, 0}};
  }
  answers::NoFleet no_fleet;
};

struct World {
  std::filesystem::path dir;
  std::unique_ptr<index::Index> index;
  FakeService service;
  api::http::Router router{api::routes::api_routes()};
  std::unique_ptr<api::http::Metrics> metrics;
  std::unique_ptr<api::http::Context> context;
};

World* world = nullptr;

void cleanup() {
  if (!world) return;
  world->index.reset();
  std::error_code ec;
  std::filesystem::remove_all(world->dir, ec);
}

World& the_world() {
  if (world) return *world;
  world = new World;
  world->dir = tests::make_temp_dir("fuzz-http");
  std::atexit(cleanup);
  auto idx = index::Index::open(index::Options{.dir = (world->dir / "index").string(), .map_size = 8ull << 20});
  require(idx.ok(), "index open");
  world->index = std::move(*idx);
  shard::Key key = hash_of(4242);
  for (auto bytes : {make_shard(1, 3, nullptr, shard::kNoExpiry, true), make_shard(2, 2, &key, 4'000'000'000ull, false),
                     make_shard(1, 1, &key, 3'000'000'000ull, false)}) {
    auto view = shard::ShardView::parse(bytes);
    require(view.ok(), "seed shard parses");
    auto r = world->index->ingest(*view,
                                  index::SourceInfo{"/seed/" + std::to_string(bytes.size()) + ".mdb", bytes.size(), 1});
    require(r.ok(), "seed shard ingests");
    world->service.shards.push_back(r->shard);
  }
  world->service.idx = world->index.get();
  world->service.state_dir = (world->dir / "state").string();
  std::vector<std::string> names;
  for (const auto& r : world->router.routes()) names.emplace_back(r.name);
  world->metrics = std::make_unique<api::http::Metrics>(names);
  world->context = std::make_unique<api::http::Context>(
      api::http::Context{world->service, world->service.answers(), *world->metrics});
  return *world;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Percent-decoding as an HTTP server does for query arguments ('+' is a space).
std::string unescape(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%' && i + 2 < s.size() && hex_value(s[i + 1]) >= 0 && hex_value(s[i + 2]) >= 0) {
      out += char(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

bool known_status(unsigned s) {
  for (unsigned k : {200u, 400u, 403u, 404u, 405u, 413u, 422u, 500u, 503u})
    if (s == k) return true;
  return false;
}

// The fast batch scanner and the JSON parser must agree on what they accept.
void check_batch_parser(std::string_view body) {
  auto parsed = api::http::parse_hash_batch(body, 1000);
  const auto* hashes = std::get_if<std::vector<shard::Hash>>(&parsed);
  if (!hashes) return;
  auto doc = nlohmann::json::parse(body, nullptr, false);
  require(!doc.is_discarded(), "an accepted batch body is valid JSON", body);
  require(doc.is_object() && doc.contains("hashes") && doc["hashes"].is_array(), "accepted batch has hashes[]", body);
  const auto& list = doc["hashes"];
  require(list.size() == hashes->size(), "same number of hashes", body);
  for (std::size_t i = 0; i < list.size(); ++i) {
    require(list[i].is_string(), "accepted batch entries are strings", body);
    auto h = shard::Hash::parse(list[i].get<std::string>());
    require(h.ok() && *h == (*hashes)[i], "accepted batch hash matches the JSON one", body);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  World& w = the_world();
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::size_t nl = in.find('\n');
  std::string_view line = in.substr(0, nl);
  std::string_view body = nl == std::string_view::npos ? std::string_view{} : in.substr(nl + 1);
  check_batch_parser(body);

  std::size_t sp = line.find(' ');
  if (sp == std::string_view::npos) return 0;
  std::string method(line.substr(0, sp));
  std::string_view url = line.substr(sp + 1);
  std::size_t q = url.find('?');
  std::string path(url.substr(0, q));

  api::http::Match m = w.router.match(path, method);
  if (!m.route) return 0;
  if (m.route) require(m.route->path.size() <= path.size(), "a route is no longer than the path");
  if (!m.entry) {
    std::string allow = api::http::Router::allow(*m.route);
    require(!allow.empty(), "a 405 names the allowed methods");
    return 0;
  }

  api::http::Request req;
  req.method = method;
  req.path = path;
  req.tail = std::string(m.tail);
  if (q != std::string_view::npos) {
    std::string_view rest = url.substr(q + 1);
    while (!rest.empty()) {
      std::size_t amp = rest.find('&');
      std::string_view part = rest.substr(0, amp);
      std::size_t eq = part.find('=');
      req.query.emplace_back(unescape(part.substr(0, eq)),
                             eq == std::string_view::npos ? std::string() : unescape(part.substr(eq + 1)));
      if (amp == std::string_view::npos) break;
      rest.remove_prefix(amp + 1);
    }
  }
  req.body.assign(body.begin(), body.end());

  api::http::Response r = m.entry->handler(*w.context, req);
  if (r.stream) {
    // A streamed answer (POST /v1/chunk), read in small pieces as MHD would.
    char piece[977];
    for (;;) {
      auto n = r.stream->read(piece, sizeof piece);
      require(n.ok(), "a streamed answer over a healthy index completes");
      if (*n == 0) break;
      r.body.append(piece, *n);
    }
  }
  require(known_status(r.status), "status is one docs/API.md lists", std::to_string(r.status));
  if (r.content_type == api::http::kNdjson) {
    for (std::size_t at = 0; at < r.body.size();) {
      std::size_t line_end = r.body.find('\n', at);
      require(line_end != std::string::npos, "every NDJSON line ends with a newline", r.body);
      require(!nlohmann::json::parse(r.body.substr(at, line_end - at), nullptr, false).is_discarded(), "a line parses",
              r.body);
      at = line_end + 1;
    }
  }
  if (r.content_type == api::http::kJson) {
    auto doc = nlohmann::json::parse(r.body, nullptr, false);
    require(!doc.is_discarded(), "a JSON body parses", r.body);
    if (r.status >= 400) {
      require(doc.is_object() && doc.contains("error") && doc["error"].is_object(), "an error body has error{}",
              r.body);
      require(doc["error"].value("code", "") == api::http::error_code(r.status), "the error code fits the status",
              r.body);
    }
  }
  if (method == "GET" && m.route->name == "metrics") {
    std::string text;
    w.metrics->render(text);
    require(!text.empty(), "metrics render");
  }
  return 0;
}
