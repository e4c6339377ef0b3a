// The endpoint's download parsers (issue 72): the xorb range check over
// bytes from the storage (daemon/answers/xorb_range_check.hpp), the range
// URL check over a client's URI and Range (download_grants.hpp), the
// rewrite of a CAS's reconstruction answer (reconstruction_rewrite.hpp),
// and the JSON scanner it reads the answer with (json_scan.hpp). The first
// byte picks which; the rest is the input.
//
// Properties beyond "no crash": the range check gives the same verdict
// however the bytes are split, and what it accepts has chunk boundaries
// from 0 to the range's end, strictly increasing; no URI passes the grant
// check that this key did not sign; a rewritten answer is JSON, and each
// URL it names passes the check with the Range it names; the scanner takes
// a text exactly when nlohmann's parser does (but a byte order mark and a
// NUL byte, where nlohmann ends its input: it refuses both), a value it
// skips is one it reads again alone, and a string it takes decodes as
// nlohmann's does.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>

#include "daemon/answers/download_grants.hpp"
#include "daemon/answers/json_scan.hpp"
#include "daemon/answers/reconstruction_rewrite.hpp"
#include "daemon/answers/xorb_range_check.hpp"

namespace {

using namespace dedupd::daemon::answers;

void check(bool ok) {
  if (!ok) std::abort();
}

constexpr std::uint64_t kNow = 1'800'000'000;

void range_check(std::span<const std::uint8_t> bytes, std::uint8_t split_seed) {
  RangeExpectation e;
  e.length = bytes.size();
  RangeChecker whole(e);
  auto a = whole.feed(bytes);
  auto done_a = a ? whole.finish() : dedupd::base::Result<CheckedRange>(a.error());
  RangeChecker pieces(e);
  std::size_t step = 1 + split_seed % 61;
  dedupd::base::Result<std::monostate> b = std::monostate{};
  for (std::size_t at = 0; at < bytes.size() && b; at += step)
    b = pieces.feed(bytes.subspan(at, std::min(step, bytes.size() - at)));
  auto done_b = b ? pieces.finish() : dedupd::base::Result<CheckedRange>(b.error());
  check(bool(done_a) == bool(done_b));
  if (!done_a) return;
  // Whole: chunks checked where they lie in the buffer; in pieces: most
  // gathered first. Both ways must say the same.
  check(done_a->chunk_starts == done_b->chunk_starts && done_a->digest == done_b->digest &&
        done_a->level == done_b->level);
  const auto& s = done_a->chunk_starts;
  check(s.size() >= 2 && s.front() == 0 && s.back() == bytes.size());
  for (std::size_t i = 1; i < s.size(); ++i) check(s[i] > s[i - 1] + 8);
}

DownloadKey key() {
  DownloadKey k;
  k.fill(7);
  return k;
}

void grant_check(std::string_view in) {
  DownloadGrants grants(key(), 8);
  auto nl = in.find('\n');
  std::string_view uri = in.substr(0, nl), range = nl == std::string_view::npos ? "" : in.substr(nl + 1);
  check(!grants.check(uri, range, kNow).grant);
  std::optional<Origin> origin;
  check(!grants.check_fill(uri, kNow, origin).grant && !origin);
}

void rewrite(std::string_view in) {
  DownloadGrants grants(key(), 1 << 20);
  RewriteSettings settings;
  settings.base = "http://127.0.0.1:1";
  settings.now = kNow;
  auto out = rewrite_reconstruction(in, settings, grants);
  if (!out) return;
  // (A URL kept as the CAS wrote it may look like the endpoint's.)
  const bool all_renamed = out->kept == 0;
  auto doc = nlohmann::json::parse(out->json, nullptr, false);
  check(!doc.is_discarded());
  auto uri_ok = [&](const nlohmann::json& url, const nlohmann::json& bytes) {
    if (!all_renamed || !url.is_string() || !url.get<std::string>().starts_with(settings.base + "/xet/o/")) return;
    std::string range = "bytes=" + std::to_string(bytes["start"].get<std::uint64_t>()) + "-" +
                        std::to_string(bytes["end"].get<std::uint64_t>());
    check(bool(grants.check(url.get<std::string>().substr(settings.base.size()), range, kNow).grant));
  };
  if (auto v1 = doc.find("fetch_info"); v1 != doc.end())
    for (auto& [xorb, entries] : v1->items())
      for (auto& e : entries) uri_ok(e["url"], e["url_range"]);
  if (auto v2 = doc.find("xorbs"); v2 != doc.end())
    for (auto& [xorb, entries] : v2->items())
      for (auto& e : entries) uri_ok(e["url"], e["ranges"][0]["bytes"]);
}

void scan(std::string_view in) {
  JsonScanner s(in);
  auto span = s.skip();
  const bool taken = span && s.at_end();
  // nlohmann skips a leading byte order mark and ends its input at a NUL
  // byte; the scanner refuses both.
  const bool nlohmann_takes = !nlohmann::json::parse(in, nullptr, false).is_discarded();
  if (taken) check(nlohmann_takes);
  if (!in.starts_with("\xef\xbb\xbf") && in.find('\0') == std::string_view::npos) check(taken == nlohmann_takes);
  if (!span) return;
  JsonScanner alone(in.substr(span->begin, span->size()));
  auto again = alone.skip();
  check(again && alone.at_end() && again->size() == span->size());
  // A string taken decodes as nlohmann decodes it, viewed or copied.
  if (taken && in.substr(span->begin).starts_with('"')) {
    const std::string theirs = nlohmann::json::parse(in, nullptr, false).get<std::string>();
    JsonScanner viewed(in), copied(in);
    std::string scratch;
    auto view = viewed.string_view(scratch);
    auto copy = copied.string();
    check(view && copy && *view == theirs && *copy == theirs);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  std::span<const std::uint8_t> rest(data + 2, size - 2);
  std::string_view text(reinterpret_cast<const char*>(rest.data()), rest.size());
  switch (data[0] % 4) {
    case 0:
      range_check(rest, data[1]);
      break;
    case 1:
      grant_check(text);
      break;
    case 2:
      rewrite(text);
      break;
    default:
      scan(text);
      break;
  }
  return 0;
}
