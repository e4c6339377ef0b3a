#include "daemon/answers/reconstruction_rewrite.hpp"

#include <charconv>
#include <ctime>

#include <nlohmann/json.hpp>

namespace dedupd::daemon::answers {

namespace {

using Json = nlohmann::json;

base::Error rewrite_error(std::string rule, std::string message) {
  return base::Error{"reconstruction." + std::move(rule), 0, std::move(message), false};
}

std::optional<std::string_view> query_param(std::string_view url, std::string_view name) {
  auto q = url.find('?');
  if (q == std::string_view::npos) return std::nullopt;
  std::string_view query = url.substr(q + 1);
  while (!query.empty()) {
    auto amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    auto eq = pair.find('=');
    if (eq != std::string_view::npos && pair.substr(0, eq) == name) return pair.substr(eq + 1);
  }
  return std::nullopt;
}

std::optional<std::uint64_t> decimal(std::string_view s) {
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

// S3's X-Amz-Date, "YYYYMMDDTHHMMSSZ", as Unix seconds.
std::optional<std::uint64_t> amz_date(std::string_view s) {
  if (s.size() != 16 || s[8] != 'T' || s[15] != 'Z') return std::nullopt;
  auto y = decimal(s.substr(0, 4)), mo = decimal(s.substr(4, 2)), d = decimal(s.substr(6, 2));
  auto h = decimal(s.substr(9, 2)), mi = decimal(s.substr(11, 2)), se = decimal(s.substr(13, 2));
  if (!y || !mo || !d || !h || !mi || !se) return std::nullopt;
  std::tm tm{};
  tm.tm_year = int(*y) - 1900;
  tm.tm_mon = int(*mo) - 1;
  tm.tm_mday = int(*d);
  tm.tm_hour = int(*h);
  tm.tm_min = int(*mi);
  tm.tm_sec = int(*se);
  std::time_t t = timegm(&tm);
  if (t < 0) return std::nullopt;
  return std::uint64_t(t);
}

// {"start": a, "end": b} with a <= b, as numbers.
std::optional<std::pair<std::uint64_t, std::uint64_t>> bytes_of(const Json& range) {
  if (!range.is_object()) return std::nullopt;
  auto s = range.find("start"), e = range.find("end");
  if (s == range.end() || e == range.end() || !s->is_number_unsigned() || !e->is_number_unsigned()) return std::nullopt;
  auto a = s->get<std::uint64_t>(), b = e->get<std::uint64_t>();
  if (a > b) return std::nullopt;
  return std::pair{a, b};
}

bool is_xorb_hash(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

// A range's chunk indices, {"start": a, "end": b} (end exclusive); 0, 0
// when the answer has none.
std::pair<std::uint32_t, std::uint32_t> chunks_of(const Json& entry, const char* name) {
  auto it = entry.find(name);
  if (it == entry.end() || !it->is_object()) return {0, 0};
  auto s = it->find("start"), e = it->find("end");
  if (s == it->end() || e == it->end() || !s->is_number_unsigned() || !e->is_number_unsigned()) return {0, 0};
  auto a = s->get<std::uint64_t>(), b = e->get<std::uint64_t>();
  if (a >= b || b > UINT32_MAX) return {0, 0};
  return {std::uint32_t(a), std::uint32_t(b)};
}

Json byte_range_json(std::uint64_t start, std::uint64_t end) { return Json{{"start", start}, {"end", end}}; }

class Rewriter {
 public:
  Rewriter(const RewriteSettings& settings, DownloadGrants& grants) : settings_(settings), grants_(grants) {}

  // The endpoint's URL for bytes [s, e] (chunks `chunks`) of `xorb` at
  // `url`, and those bytes' range in the object it names; nullopt when
  // the CAS's URL has expired already (it is kept: the client's fetch is
  // refused by the storage and it asks again, as it would going direct).
  std::optional<std::pair<std::string, Json>> url_for(const std::string& xorb,
                                                      std::pair<std::uint64_t, std::uint64_t> bytes,
                                                      std::pair<std::uint32_t, std::uint32_t> chunks,
                                                      const std::string& url) {
    std::uint64_t expires = settings_.now + settings_.max_lifetime;
    if (auto original = presigned_expiry(url)) expires = std::min(expires, *original);
    if (expires <= settings_.now) {
      ++out.kept;
      return std::nullopt;
    }
    std::pair<std::uint64_t, std::uint64_t> object = bytes;
    if (settings_.objects)
      if (auto f = settings_.objects->covering(xorb, bytes.first, bytes.second, settings_.cache_dir))
        object = {f->start, f->end};
    Origin origin{xorb, bytes.first, bytes.second, url, expires, chunks.first, chunks.second};
    std::string uri = grants_.grant(origin, object, settings_.now);
    if (uri.empty()) {
      ++out.kept;
      return std::nullopt;
    }
    ++out.rewritten;
    if (object != bytes) ++out.inside;
    return std::pair{settings_.base + uri, byte_range_json(bytes.first - object.first, bytes.second - object.first)};
  }

  RewrittenReconstruction out;

 private:
  const RewriteSettings& settings_;
  DownloadGrants& grants_;
};

// v1: "fetch_info": {xorb: [{"range", "url", "url_range"}]}; each entry
// keeps its chunk range, its URL and url_range renamed.
base::Result<std::monostate> rewrite_v1(Json& fetch_info, Rewriter& rw) {
  for (auto& [xorb, entries] : fetch_info.items()) {
    if (!is_xorb_hash(xorb) || !entries.is_array())
      return rewrite_error("fetch_info", "fetch_info[\"" + xorb.substr(0, 80) + "\"] is not a xorb's list");
    for (auto& entry : entries) {
      auto url = entry.is_object() ? entry.find("url") : entry.end();
      if (!entry.is_object() || url == entry.end() || !url->is_string() || !entry.contains("url_range"))
        return rewrite_error("fetch_info", "an entry of xorb " + xorb + " has no url or url_range");
      auto bytes = bytes_of(entry["url_range"]);
      if (!bytes) return rewrite_error("fetch_info", "xorb " + xorb + ": url_range is not {start <= end}");
      auto renamed = rw.url_for(xorb, *bytes, chunks_of(entry, "range"), url->get<std::string>());
      if (!renamed) continue;
      *url = std::move(renamed->first);
      entry["url_range"] = std::move(renamed->second);
    }
  }
  return std::monostate{};
}

// v2: "xorbs": {xorb: [{"url", "ranges": [{"chunks", "bytes"}]}]}; each
// range becomes an entry of its own with its own URL (the client fetches
// one range per request unless told to fetch several at once, and then it
// sends them as one Range header, which a single-range URL refuses: it
// asks again, per range).
base::Result<std::monostate> rewrite_v2(Json& xorbs, Rewriter& rw) {
  for (auto& [xorb, entries] : xorbs.items()) {
    if (!is_xorb_hash(xorb) || !entries.is_array())
      return rewrite_error("xorbs", "xorbs[\"" + xorb.substr(0, 80) + "\"] is not a xorb's list");
    Json out = Json::array();
    for (auto& entry : entries) {
      auto url = entry.is_object() ? entry.find("url") : entry.end();
      auto ranges = entry.is_object() ? entry.find("ranges") : entry.end();
      if (!entry.is_object() || url == entry.end() || !url->is_string() || ranges == entry.end() || !ranges->is_array())
        return rewrite_error("xorbs", "an entry of xorb " + xorb + " has no url or ranges");
      for (auto& range : *ranges) {
        auto bytes = range.is_object() && range.contains("bytes") ? bytes_of(range["bytes"]) : std::nullopt;
        if (!bytes) return rewrite_error("xorbs", "xorb " + xorb + ": a range's bytes are not {start <= end}");
        auto renamed = rw.url_for(xorb, *bytes, chunks_of(range, "chunks"), url->get<std::string>());
        Json one = entry;
        one["ranges"] = Json::array({range});
        if (renamed) {
          one["url"] = std::move(renamed->first);
          one["ranges"][0]["bytes"] = std::move(renamed->second);
        }
        out.push_back(std::move(one));
      }
    }
    entries = std::move(out);
  }
  return std::monostate{};
}

}  // namespace

std::optional<std::uint64_t> presigned_expiry(std::string_view url) {
  if (auto e = query_param(url, "Expires")) return decimal(*e);
  auto date = query_param(url, "X-Amz-Date"), life = query_param(url, "X-Amz-Expires");
  if (date && life) {
    auto t = amz_date(*date);
    auto l = decimal(*life);
    if (t && l) return *t + *l;
  }
  return std::nullopt;
}

base::Result<RewrittenReconstruction> rewrite_reconstruction(std::string_view cas_json, const RewriteSettings& settings,
                                                             DownloadGrants& grants) {
  Json doc = Json::parse(cas_json, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return rewrite_error("json", "the CAS's answer is not a JSON object");
  Rewriter rw(settings, grants);
  auto v1 = doc.find("fetch_info");
  auto v2 = doc.find("xorbs");
  if ((v1 == doc.end()) == (v2 == doc.end()) || !(v1 != doc.end() ? v1 : v2)->is_object())
    return rewrite_error("shape", "neither a v1 (fetch_info) nor a v2 (xorbs) reconstruction");
  auto done = v1 != doc.end() ? rewrite_v1(*v1, rw) : rewrite_v2(*v2, rw);
  if (!done) return done.error();
  rw.out.json = doc.dump();
  return std::move(rw.out);
}

}  // namespace dedupd::daemon::answers
