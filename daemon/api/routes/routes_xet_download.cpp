// The local Xet endpoint's downloads (docs/XET-ENDPOINT.md, "Downloads"),
// both asked by its nginx only (Access::endpoint):
//   GET /v1/xet-endpoint/reconstruction  the client's reconstruction query,
//       asked of the CAS through the endpoint's pass-through (the URL in
//       X-Dedupd-Upstream, asked over its Unix socket X-Dedupd-Way-Out,
//       the client's Authorization and Range with it),
//       its fetch URLs renamed to the endpoint's (X-Dedupd-Base), bound to
//       the CAS's URL when a tier host may fill them (X-Dedupd-Tier-Fills:
//       1, from an endpoint with a fleet tier); a CAS
//       answer other than a 200 goes back as it came, and so does one that
//       is no reconstruction. Anything dedupd cannot do is a 5xx, on which
//       nginx asks the CAS itself (fail open).
//   GET /v1/xet-endpoint/grant  nginx's auth_request for a range URL
//       (X-Dedupd-Uri, the client's Range, X-Dedupd-Cache-Dir): 200 when
//       it may be served (from the cache, or filled through the route
//       below), or 403. The object's cache file, when there, is checked
//       again if it changed since its check; damaged, it is removed (its
//       own range: filled again; a range inside it: 403).
//       On a fleet tier host's port (X-Dedupd-Tier: 1) an edge asks the
//       whole object, no Range. An edge whose misses go to the tier asks
//       X-Dedupd-Want-Origin: 1 and gets the storage URL of an own-range
//       grant in X-Xet-Origin, which its nginx hands the tier host (a
//       header, never logged).
//       An edge with a tier (X-Dedupd-Tier-Digests: its way out) that
//       knows no digest of a cache file it checks for the first time (one
//       the tier filled) asks the tier host the xorb hashes to for its
//       digest of the object (the route below, through the way out's
//       /.xet-tier-digest/, at most kTierDigestTimeoutS): its bytes must be
//       the ones the tier host checked. No answer: the structure alone.
//   GET /v1/xet-endpoint/object-digest  on a tier host's port, an edge's
//       ask (X-Dedupd-Uri: a range URL of the object, signed with the
//       fleet's key): the digest of the object as this host checked it
//       (64 hex digits), or a 404 when it knows none; a bad URL, a 403.
//   GET /v1/xet-endpoint/fill  nginx's cache miss of an object (X-Dedupd-Uri,
//       X-Dedupd-Way-Out): dedupd fetches the range from the storage URL
//       the CAS gave (held in memory, passed to nginx's way out only in a
//       header, for that one fetch, never logged) and, once the storage's
//       headers say it sends it, answers a 200 of the object's length
//       whose body is each chunk as it passes its check (fill_relay.hpp),
//       the last one once the whole range passed; nginx caches it. Bytes
//       that fail, or a storage that fails, after that: the answer ends
//       short of its length (nothing cached, the client retries); before
//       it, a 502; the storage's 403 as a 403 (the client asks the
//       reconstruction again).
#include <ctime>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <stop_token>

#include <spdlog/spdlog.h>

#include "daemon/answers/download_objects.hpp"
#include "daemon/answers/reconstruction_rewrite.hpp"
#include "daemon/answers/xorb_range_check.hpp"
#include "daemon/api/http/body_pipe.hpp"
#include "daemon/api/routes/fill_relay.hpp"
#include "daemon/api/routes/route_util.hpp"
#include "daemon/api/routes/routes.hpp"
#include "daemon/api/routes/upstream_get.hpp"

namespace dedupd::daemon::api::routes {

namespace {

// A reconstruction answer of 1,000 terms is a few hundred KB; a CAS answer
// past this is passed on by nginx itself.
constexpr std::size_t kMaxReconstructionBytes = 64u << 20;
constexpr long kUpstreamTimeoutS = 60;
// A fill is at most a 64 MiB xorb; this bounds a storage that trickles.
constexpr long kFillTimeoutS = 600;
// A fill's bytes in dedupd at most, checked and not yet read by nginx
// (beside the chunk in progress): a reader slower than the storage slows
// the fetch instead.
constexpr std::size_t kFillPipeBytes = 2 << 20;

// A tier host's digest is worth a short wait only: the grant waits for it.
constexpr long kTierDigestTimeoutS = 3;

std::uint64_t unix_now() { return std::uint64_t(std::time(nullptr)); }

// The endpoint's download cache, as its nginx names it; empty when not
// an absolute path (nothing is then checked or read from it).
std::filesystem::path cache_dir_of(const http::Request& req) {
  auto dir = req.header("X-Dedupd-Cache-Dir");
  if (!dir || !dir->starts_with('/')) return {};
  return std::filesystem::path(*dir);
}

// The digest the fleet's tier host of `xorb` kept of object [start, end],
// asked through the way out (`uri`: the range URL being granted, whose
// signature that host checks); nothing when it knows none, is down or late.
std::optional<shard::Hash> tier_digest(std::string_view way_out, std::string_view uri, std::string_view xorb,
                                       std::uint64_t start, std::uint64_t end) {
  const auto query = uri.find('?');
  if (!is_way_out(way_out) || query == std::string_view::npos) return std::nullopt;
  const std::string path = "/.xet-tier-digest/" + std::string(xorb) + "/" + std::to_string(start) + "-" +
                           std::to_string(end) + std::string(uri.substr(query));
  auto got = upstream_get(std::string(way_out), path, {}, 80, kTierDigestTimeoutS);
  if (!got || got->status != http::kOk) return std::nullopt;
  std::string_view hex(got->body);
  while (!hex.empty() && (hex.back() == '\n' || hex.back() == '\r')) hex.remove_suffix(1);
  auto digest = shard::Hash::parse_hex_bytes(hex);
  if (!digest) return std::nullopt;
  return *digest;
}

// A 403 naming why, counted.
http::Response refused(http::Context& ctx, answers::Refusal why) {
  if (answers::DownloadFaults* faults = ctx.service.download_faults()) faults->refused(why);
  http::Response r = http::error(http::kForbidden, "range URL refused: " + std::string(answers::refusal_name(why)));
  r.headers.emplace_back("X-Dedupd-Refused", std::string(answers::refusal_name(why)));
  return r;
}

// Downloads off, or no key: a 403 of its own words, counted.
http::Response off(http::Context& ctx, std::string message) {
  if (answers::DownloadFaults* faults = ctx.service.download_faults()) faults->refused(answers::Refusal::off);
  return http::error(http::kForbidden, std::move(message));
}

// A fill that cached nothing: a 502 (the client retries), counted with the
// bytes the storage sent for it.
http::Response fill_failed(http::Context& ctx, answers::FillFailure why, std::uint64_t fetched, std::string message) {
  if (answers::DownloadFaults* faults = ctx.service.download_faults()) faults->fill_failed(why, fetched);
  return http::error(502, "bad_gateway", std::move(message));
}

}  // namespace

http::Response get_xet_reconstruction(http::Context& ctx, http::Request& req) {
  answers::DownloadGrants* grants = ctx.service.download_grants();
  if (!grants)
    return http::error(http::kNotReady, "not_ready", "no key to sign range URLs with: the CAS's answer goes as it is");
  const core::XetDownloadSettings on = ctx.service.xet_download_settings();
  if (!on.enabled)
    return http::error(http::kNotReady, "off", "xet_endpoint.downloads.enabled is off: the CAS's answer goes as it is");
  auto way_out = req.header("X-Dedupd-Way-Out");
  auto path = req.header("X-Dedupd-Upstream");
  auto base = req.header("X-Dedupd-Base");
  if (!way_out || !path || !base || !is_way_out(*way_out) || !path->starts_with("/.xet-cas/") ||
      !is_loopback_http(std::string(*base) + "/"))
    return http::error(http::kBadRequest,
                       "X-Dedupd-Way-Out must name the endpoint's socket, X-Dedupd-Upstream its /.xet-cas/ path and "
                       "X-Dedupd-Base the endpoint (http://127.0.0.1:<port>)");
  HeaderList headers;
  for (std::string_view name : {"Authorization", "Range"})
    if (auto v = req.header(name)) headers.emplace_back(std::string(name), std::string(*v));
  auto got = upstream_get(std::string(*way_out), *path, headers, kMaxReconstructionBytes, kUpstreamTimeoutS);
  if (!got) {
    spdlog::warn("xet download: the reconstruction was not had through the endpoint: {}", got.error().to_string());
    return http::error(502, "bad_gateway", got.error().message);
  }
  http::Response r;
  r.status = unsigned(got->status);
  r.content_type = got->content_type.empty() ? std::string(http::kJson) : got->content_type;
  if (got->status == http::kOk) {
    answers::RewriteSettings settings;
    settings.base = std::string(*base);
    settings.now = unix_now();
    settings.max_lifetime = on.max_url_lifetime_s;
    settings.objects = ctx.service.download_objects();
    settings.cache_dir = cache_dir_of(req);
    // (An endpoint with a fleet tier says so: its misses may be filled by
    // a tier host, which needs the CAS's URL bound to each range URL.)
    settings.binding = req.header("X-Dedupd-Tier-Fills").value_or("") == "1"
                           ? answers::DownloadGrants::Binding::url_digest
                           : answers::DownloadGrants::Binding::none;
    if (settings.cache_dir.empty()) settings.objects = nullptr;
    auto rewritten = answers::rewrite_reconstruction(got->body, settings, *grants);
    if (rewritten) {
      r.body = std::move(rewritten->json);
      return r;
    }
    spdlog::warn("xet download: the CAS's reconstruction is passed on as it came: {}", rewritten.error().to_string());
  }
  r.body = std::move(got->body);
  return r;
}

http::Response get_xet_grant(http::Context& ctx, http::Request& req) {
  // Off: outstanding range URLs too (their clients ask again, and get the CAS's own URLs).
  if (!ctx.service.xet_download_settings().enabled) return off(ctx, "xet_endpoint.downloads.enabled is off");
  answers::DownloadGrants* grants = ctx.service.download_grants();
  answers::DownloadObjects* objects = ctx.service.download_objects();
  if (!grants || !objects) return off(ctx, "no key: no range URL of this endpoint is valid");
  const std::string_view uri = req.header("X-Dedupd-Uri").value_or("");
  const bool tier = req.header("X-Dedupd-Tier").value_or("") == "1";
  auto check =
      tier ? grants->check_whole(uri, unix_now()) : grants->check(uri, req.header("Range").value_or(""), unix_now());
  if (!check.grant) return refused(ctx, check.why);
  const answers::Grant& g = *check.grant;
  auto dir = cache_dir_of(req);
  // Without the cache's place nothing in it can be checked: only a fill.
  auto file = answers::CacheFile::absent;
  if (!dir.empty()) {
    const std::string_view way_out = req.header("X-Dedupd-Tier-Digests").value_or("");
    std::function<std::optional<shard::Hash>()> from_tier;
    if (!tier && !way_out.empty()) from_tier = [&] { return tier_digest(way_out, uri, g.xorb, g.start, g.end); };
    file = objects->check_file(
        g.xorb, {g.start, g.end}, dir,
        [&] { return answers::range_expectation(ctx.answers, g.xorb, g.start, g.end, 0, 0); }, from_tier);
  }
  if (file == answers::CacheFile::damaged) {
    if (answers::DownloadFaults* faults = ctx.service.download_faults()) faults->cache_damaged();
    spdlog::warn(
        "xet download: the cache file of xorb {} bytes {}-{} fails its check (changed since, or not the bytes the "
        "tier host checked): removed",
        g.xorb, g.start, g.end);
  }
  if (file == answers::CacheFile::stuck) {
    // nginx would serve it: nothing of this object until it is gone.
    spdlog::error(
        "xet download: the cache file of xorb {} bytes {}-{} fails its check, or dedupd cannot read it "
        "(it must run as the endpoint's nginx user), and it cannot be removed: refused",
        g.xorb, g.start, g.end);
    return refused(ctx, answers::Refusal::unreadable);
  }
  if (!g.own_range() && file != answers::CacheFile::intact) return refused(ctx, answers::Refusal::not_cached);
  http::Response r;
  r.body.clear();
  r.content_type = "text/plain";
  if (req.header("X-Dedupd-Want-Origin").value_or("") == "1")
    if (auto url = grants->origin_url(g, unix_now())) r.headers.emplace_back("X-Xet-Origin", std::move(*url));
  return r;
}

http::Response get_xet_object_digest(http::Context& ctx, http::Request& req) {
  if (!ctx.service.xet_download_settings().enabled) return off(ctx, "xet_endpoint.downloads.enabled is off");
  answers::DownloadGrants* grants = ctx.service.download_grants();
  answers::DownloadObjects* objects = ctx.service.download_objects();
  if (!grants || !objects) return off(ctx, "no key: no range URL of this endpoint is valid");
  auto check = grants->check_whole(req.header("X-Dedupd-Uri").value_or(""), unix_now());
  if (!check.grant) return refused(ctx, check.why);
  auto digest = objects->digest_of(check.grant->xorb, {check.grant->start, check.grant->end});
  if (!digest) return http::error(http::kNotFound, "not_found", "no digest of that object here");
  http::Response r;
  r.content_type = "text/plain";
  r.body = digest->to_hex_bytes() + "\n";
  return r;
}

http::Response get_xet_fill(http::Context& ctx, http::Request& req) {
  answers::DownloadGrants* grants = ctx.service.download_grants();
  answers::DownloadObjects* objects = ctx.service.download_objects();
  if (!grants || !objects) return off(ctx, "no key: no range URL of this endpoint is valid");
  std::optional<answers::Origin> origin;
  auto check = grants->check_fill(req.header("X-Dedupd-Uri").value_or(""), unix_now(), origin,
                                  req.header("X-Xet-Origin").value_or(""));
  if (!check.grant) return refused(ctx, check.why);
  const answers::Grant& g = *check.grant;
  // The answer starts before the handler ends: only a job can do that.
  if (!req.answer_now) return http::error(http::kInternal, "a fill runs on a job of its own only");
  if (req.stopping.stop_requested()) return http::error(http::kNotReady, "not_ready", "dedupd is stopping");
  auto pipe = std::make_shared<http::BodyPipe>(g.end - g.start + 1, kFillPipeBytes);
  // However the fill ends, its answer ends: whole, or short (a no-op once
  // whole). A reader left waiting would hold its connection suspended.
  struct EndsShortUnlessWhole {
    http::BodyPipe& pipe;
    ~EndsShortUnlessWhole() { pipe.fail(); }
  } ends{*pipe};
  // dedupd stopping: a wait for room in the pipe ends.
  std::stop_callback on_stop(req.stopping, [&pipe] { pipe->stop(); });
  FillRelay relay(
      answers::range_expectation(ctx.answers, g.xorb, g.start, g.end, origin->first_chunk, origin->end_chunk), *pipe);
  bool answered = false;
  std::optional<base::Error> failed;
  auto failure = answers::FillFailure::check;
  std::uint64_t fetched = 0;
  StorageStream stream;
  // The answer (a 200 of the object's length) starts once the storage said
  // it sends the range, not before: a refusal (403) or a failure of the
  // storage before any byte is still answered as such.
  stream.head = [&](long status) {
    if (status / 100 == 2 && !answered) {
      http::Response r;
      r.content_type = std::string(http::kOctets);
      r.pipe = pipe;
      req.answer_now(std::move(r));
      answered = true;
    }
    return true;
  };
  stream.body = [&](std::span<const std::uint8_t> bytes) {
    fetched += bytes.size();
    if (!answered) {
      failed = base::Error{"xet_download.fill", 0, "a body without a 2xx status from the storage", false};
      failure = answers::FillFailure::storage;
      return false;
    }
    if (auto fed = relay.feed(bytes); !fed) {
      failed = fed.error();
      failure = failed->rule == kRelayGone ? answers::FillFailure::local : answers::FillFailure::check;
      return false;
    }
    return true;
  };
  stream.stop = req.stopping;
  auto status = storage_get(std::string(req.header("X-Dedupd-Way-Out").value_or("")), origin->url,
                            "bytes=" + std::to_string(g.start) + "-" + std::to_string(g.end), kFillTimeoutS, stream);
  // (A stop of the transfer by the body's own failure: that, not the stop, is why.)
  if (!status && !failed) {
    failed = status.error();
    failure = req.stopping.stop_requested() ? answers::FillFailure::local : answers::FillFailure::storage;
  } else if (status && !failed && !answered) {
    if (*status == http::kForbidden) return refused(ctx, answers::Refusal::storage_refused);
    failed = base::Error{"xet_download.fill", 0, "the storage answered " + std::to_string(*status), false};
    failure = answers::FillFailure::storage;
  }
  std::optional<answers::CheckedRange> checked;
  if (!failed) {
    if (auto done = relay.finish()) checked = std::move(*done);
    else failed = done.error();
  }
  if (failed) {
    spdlog::warn("xet download: bytes {}-{} of xorb {} not cached: {}", g.start, g.end, g.xorb, failed->to_string());
    // Answered: the answer ends short, and this return is dropped.
    return fill_failed(ctx, failure, fetched, failed->message);
  }
  // Known before nginx has the last byte, so its next grant finds it.
  objects->add(g.xorb, {g.start, g.end}, std::move(*checked));
  if (!relay.complete()) {
    spdlog::warn("xet download: bytes {}-{} of xorb {} not cached: nginx stopped reading the fill", g.start, g.end,
                 g.xorb);
    if (answers::DownloadFaults* faults = ctx.service.download_faults())
      faults->fill_failed(answers::FillFailure::local, fetched);
  }
  return {};
}

}  // namespace dedupd::daemon::api::routes
