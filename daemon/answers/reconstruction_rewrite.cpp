#include "daemon/answers/reconstruction_rewrite.hpp"

#include <algorithm>
#include <charconv>
#include <ctime>
#include <tuple>
#include <vector>

#include "daemon/answers/json_scan.hpp"

namespace dedupd::daemon::answers {

namespace {

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

bool is_xorb_hash(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

using Bytes = std::pair<std::uint64_t, std::uint64_t>;

// {"start": a, "end": b}, each a number from 0 up (other members
// skipped); whether it was an object with both (a repeated one: not).
struct StartEnd {
  std::optional<std::uint64_t> start, end;
  bool repeated = false;
};

StartEnd start_end(JsonScanner& s) {
  StartEnd out;
  if (s.peek() != '{') {
    s.skip();
    return out;
  }
  s.object();
  std::string key;
  bool first = true;
  while (s.member(first, key)) {
    auto* which = key == "start" ? &out.start : key == "end" ? &out.end : nullptr;
    if (!which) {
      s.skip();
      continue;
    }
    out.repeated |= which->has_value();
    *which = s.unsigned_number();
  }
  return out;
}

// A byte range {start <= end}, as url_range and v2's bytes say it.
std::optional<Bytes> request_bytes(const StartEnd& r) {
  if (r.repeated || !r.start || !r.end || *r.start > *r.end) return std::nullopt;
  return Bytes{*r.start, *r.end};
}

// A range's chunk indices {start < end <= 2^32 - 1} (end exclusive); 0, 0
// when the answer has none that is so.
std::pair<std::uint32_t, std::uint32_t> chunk_range(const StartEnd& r) {
  if (r.repeated || !r.start || !r.end || *r.start >= *r.end || *r.end > UINT32_MAX) return {0, 0};
  return {std::uint32_t(*r.start), std::uint32_t(*r.end)};
}

std::string byte_range_json(Bytes b) {
  char first[20], last[20];
  std::string_view a(first, std::size_t(std::to_chars(first, first + sizeof first, b.first).ptr - first));
  std::string_view z(last, std::size_t(std::to_chars(last, last + sizeof last, b.second).ptr - last));
  std::string out;
  out.reserve(20 + a.size() + z.size());
  out += "{\"start\":";
  out += a;
  out += ",\"end\":";
  out += z;
  out += '}';
  return out;
}

// A JSON string of `base` and `rest` (the endpoint's URLs need no escape
// but what a base of another shape could bring).
std::string json_string(std::string_view base, std::string_view rest) {
  std::string out;
  out.reserve(base.size() + rest.size() + 2);
  out += '"';
  for (std::string_view s : {base, rest})
    for (std::size_t at = 0; at < s.size();) {
      std::size_t run = at;
      while (run < s.size() && s[run] != '"' && s[run] != '\\' && std::uint8_t(s[run]) >= 0x20) ++run;
      out.append(s.substr(at, run - at));
      if (run == s.size()) break;
      static constexpr char digits[] = "0123456789abcdef";
      const auto c = std::uint8_t(s[run]);
      if (c >= 0x20) {
        out += '\\';
        out += char(c);
      } else {
        out += "\\u00";
        out += digits[c >> 4];
        out += digits[c & 15];
      }
      at = run + 1;
    }
  out += '"';
  return out;
}

// Replacements of spans of a text, applied in the text's order.
struct Edit {
  JsonSpan span;
  std::string with;
};

std::string apply(std::string_view text, std::size_t offset, std::vector<Edit> edits) {
  std::sort(edits.begin(), edits.end(), [](const Edit& a, const Edit& b) { return a.span.begin < b.span.begin; });
  std::string out;
  std::size_t grown = 0;
  for (const Edit& e : edits) grown += e.with.size();
  out.reserve(text.size() + grown);
  std::size_t at = offset;
  for (const Edit& e : edits) {
    out.append(text.substr(at - offset, e.span.begin - at));
    out += e.with;
    at = e.span.end;
  }
  out.append(text.substr(at - offset));
  return out;
}

class Rewriter {
 public:
  Rewriter(const RewriteSettings& settings, DownloadGrants& grants) : settings_(settings), grants_(grants) {}

  // The endpoint's URL (a JSON string) for bytes [s, e] (chunks `chunks`)
  // of `xorb` at `url`, and those bytes' range in the object it names (a
  // JSON object); nullopt when the CAS's URL has expired already (it is
  // kept: the client's fetch is refused by the storage and it asks again,
  // as it would going direct).
  std::optional<std::pair<std::string, std::string>> url_for(const std::string& xorb, Bytes bytes,
                                                             std::pair<std::uint32_t, std::uint32_t> chunks,
                                                             const std::string& url) {
    std::uint64_t expires = settings_.now + settings_.max_lifetime;
    if (auto original = presigned_expiry(url)) expires = std::min(expires, *original);
    if (expires <= settings_.now) {
      ++out.kept;
      return std::nullopt;
    }
    Bytes object = bytes;
    if (settings_.objects)
      if (auto f = settings_.objects->covering(xorb, bytes.first, bytes.second, settings_.cache_dir))
        object = {f->start, f->end};
    // (One Origin, its strings' room used again range after range.)
    origin_.xorb.assign(xorb);
    origin_.url.assign(url);
    origin_.start = bytes.first;
    origin_.end = bytes.second;
    origin_.expires = expires;
    std::tie(origin_.first_chunk, origin_.end_chunk) = chunks;
    std::string uri = grants_.grant(origin_, object, settings_.now);
    if (uri.empty()) {
      ++out.kept;
      return std::nullopt;
    }
    ++out.rewritten;
    if (object != bytes) ++out.inside;
    return std::pair{json_string(settings_.base, uri),
                     byte_range_json({bytes.first - object.first, bytes.second - object.first})};
  }

  RewrittenReconstruction out;

 private:
  const RewriteSettings& settings_;
  DownloadGrants& grants_;
  Origin origin_;
};

// The members of an object the rewrite reads: each once (a repeated one
// is an error: which of the two a client would take is its parser's).
struct Seen {
  unsigned bits = 0;
  bool add(unsigned bit) {
    const bool first = (bits & bit) == 0;
    bits |= bit;
    return first;
  }
};

// The value of `section` (fetch_info or xorbs): an object of xorb hash ->
// array; `entry` reads each element of each array, with the xorb.
template <class Entry>
base::Result<std::monostate> each_xorb(JsonScanner& s, const char* section, Entry entry) {
  std::string xorb;
  bool first = true;
  if (!s.object()) return rewrite_error("shape", std::string(section) + " is not an object");
  while (s.member(first, xorb)) {
    if (!is_xorb_hash(xorb) || s.peek() != '[')
      return rewrite_error(section, std::string(section) + "[\"" + xorb.substr(0, 80) + "\"] is not a xorb's list");
    if (auto done = entry(xorb); !done) return done.error();
  }
  return std::monostate{};
}

// v1: "fetch_info": {xorb: [{"range", "url", "url_range"}]}; each entry
// keeps its chunk range, its URL and url_range renamed.
base::Result<std::monostate> rewrite_v1(JsonScanner& s, Rewriter& rw, std::vector<Edit>& edits) {
  return each_xorb(s, "fetch_info", [&](const std::string& xorb) -> base::Result<std::monostate> {
    s.array();
    bool first = true;
    while (s.element(first)) {
      if (s.peek() != '{') return rewrite_error("fetch_info", "an entry of xorb " + xorb + " is not an object");
      s.object();
      std::optional<std::string> url;
      JsonSpan url_at, range_at;
      std::optional<StartEnd> bytes;
      StartEnd chunks;
      Seen seen;
      std::string key;
      bool member_first = true;
      while (s.member(member_first, key)) {
        const unsigned bit = key == "url" ? 1 : key == "url_range" ? 2 : key == "range" ? 4 : 0;
        if (bit && !seen.add(bit)) return rewrite_error("fetch_info", "an entry of xorb " + xorb + " repeats " + key);
        if (bit == 1) {
          url = s.string(&url_at);
        } else if (bit == 2) {
          range_at.begin = s.offset();
          bytes = start_end(s);
          range_at.end = s.offset();
        } else if (bit == 4) {
          chunks = start_end(s);
        } else {
          s.skip();
        }
      }
      if (s.failed()) break;
      if (!url || !bytes) return rewrite_error("fetch_info", "an entry of xorb " + xorb + " has no url or url_range");
      auto range = request_bytes(*bytes);
      if (!range) return rewrite_error("fetch_info", "xorb " + xorb + ": url_range is not {start <= end}");
      auto renamed = rw.url_for(xorb, *range, chunk_range(chunks), *url);
      if (!renamed) continue;
      edits.push_back({url_at, std::move(renamed->first)});
      edits.push_back({range_at, std::move(renamed->second)});
    }
    return std::monostate{};
  });
}

// v2: "xorbs": {xorb: [{"url", "ranges": [{"chunks", "bytes"}]}]}; each
// range becomes an entry of its own with its own URL (the client fetches
// one range per request unless told to fetch several at once, and then it
// sends them as one Range header, which a single-range URL refuses: it
// asks again, per range).
base::Result<std::monostate> rewrite_v2(JsonScanner& s, std::string_view text, Rewriter& rw, std::vector<Edit>& edits) {
  return each_xorb(s, "xorbs", [&](const std::string& xorb) -> base::Result<std::monostate> {
    const std::size_t list_begin = s.offset();
    s.array();
    std::string list = "[";
    bool first = true;
    while (s.element(first)) {
      if (s.peek() != '{') return rewrite_error("xorbs", "an entry of xorb " + xorb + " has no url or ranges");
      const std::size_t entry_begin = s.offset();
      s.object();
      std::optional<std::string> url;
      JsonSpan url_at, ranges_at;
      struct Range {
        JsonSpan at, bytes_at;
        StartEnd bytes, chunks;
        bool has_bytes = false;
      };
      std::vector<Range> ranges;
      bool has_ranges = false;
      Seen seen;
      std::string key;
      bool member_first = true;
      while (s.member(member_first, key)) {
        const unsigned bit = key == "url" ? 1 : key == "ranges" ? 2 : 0;
        if (bit && !seen.add(bit)) return rewrite_error("xorbs", "an entry of xorb " + xorb + " repeats " + key);
        if (bit == 1) {
          url = s.string(&url_at);
        } else if (bit == 2 && s.peek() == '[') {
          has_ranges = true;
          ranges_at.begin = s.offset();
          s.array();
          bool range_first = true;
          while (s.element(range_first)) {
            Range r;
            r.at.begin = s.offset();
            if (s.peek() != '{') {
              s.skip();
            } else {
              s.object();
              Seen range_seen;
              bool f = true;
              while (s.member(f, key)) {
                const unsigned part = key == "bytes" ? 1 : key == "chunks" ? 2 : 0;
                if (part && !range_seen.add(part))
                  return rewrite_error("xorbs", "a range of xorb " + xorb + " repeats " + key);
                if (part == 1) {
                  r.has_bytes = true;
                  r.bytes_at.begin = s.offset();
                  r.bytes = start_end(s);
                  r.bytes_at.end = s.offset();
                } else if (part == 2) {
                  r.chunks = start_end(s);
                } else {
                  s.skip();
                }
              }
            }
            r.at.end = s.offset();
            ranges.push_back(r);
          }
          ranges_at.end = s.offset();
        } else {
          s.skip();
        }
      }
      if (s.failed()) break;
      const JsonSpan entry_at{entry_begin, s.offset()};
      if (!url || !has_ranges) return rewrite_error("xorbs", "an entry of xorb " + xorb + " has no url or ranges");
      for (const Range& r : ranges) {
        auto bytes = r.has_bytes ? request_bytes(r.bytes) : std::nullopt;
        if (!bytes) return rewrite_error("xorbs", "xorb " + xorb + ": a range's bytes are not {start <= end}");
        auto renamed = rw.url_for(xorb, *bytes, chunk_range(r.chunks), *url);
        std::vector<Edit> one;
        std::string range(text.substr(r.at.begin, r.at.size()));
        if (renamed) {
          one.push_back({url_at, std::move(renamed->first)});
          range = apply(range, r.at.begin, {{r.bytes_at, std::move(renamed->second)}});
        }
        one.push_back({ranges_at, "[" + range + "]"});
        if (list.size() > 1) list += ',';
        list += apply(text.substr(entry_at.begin, entry_at.size()), entry_at.begin, std::move(one));
      }
    }
    list += ']';
    edits.push_back({{list_begin, s.offset()}, std::move(list)});
    return std::monostate{};
  });
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
  JsonScanner s(cas_json);
  if (s.peek() != '{') return rewrite_error("json", "the CAS's answer is not a JSON object");
  s.object();
  Rewriter rw(settings, grants);
  std::vector<Edit> edits;
  int sections = 0;
  std::string key;
  bool first = true;
  while (s.member(first, key)) {
    const bool v1 = key == "fetch_info";
    if (!v1 && key != "xorbs") {
      s.skip();
      continue;
    }
    if (++sections > 1) break;
    if (s.peek() != '{') return rewrite_error("shape", key + " is not an object");
    auto done = v1 ? rewrite_v1(s, rw, edits) : rewrite_v2(s, cas_json, rw, edits);
    if (!done) return done.error();
  }
  if (s.failed() || (sections <= 1 && !s.at_end()))
    return rewrite_error("json", "the CAS's answer is not JSON: " + (s.failed() ? s.error() : "more after its end"));
  if (sections != 1) return rewrite_error("shape", "neither a v1 (fetch_info) nor a v2 (xorbs) reconstruction");
  rw.out.json = apply(cas_json, 0, std::move(edits));
  return std::move(rw.out);
}

}  // namespace dedupd::daemon::answers
