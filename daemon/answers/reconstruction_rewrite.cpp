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

void append_decimal(std::string& out, std::uint64_t v) {
  char digits[20];
  out.append(digits, std::to_chars(digits, digits + sizeof digits, v).ptr);
}

// {"start":a,"end":b}
void append_byte_range(std::string& out, Bytes b) {
  out += "{\"start\":";
  append_decimal(out, b.first);
  out += ",\"end\":";
  append_decimal(out, b.second);
  out += '}';
}

// `s` as the inside of a JSON string (the endpoint's URLs need no escape
// but what a base of another shape could bring).
void append_json_escaped(std::string& out, std::string_view s) {
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
}

// Replacements of spans of a text, applied in the text's order, their new
// bytes [at, at + size) of a buffer the rewrite writes them all into (one
// buffer for the whole answer: no allocation per range).
struct Edit {
  JsonSpan span;
  std::size_t at = 0, size = 0;
};

void apply_into(std::string& out, std::string_view text, std::vector<Edit>& edits, std::string_view made) {
  // In the text's order, as the loop below writes them (most come so).
  auto in_text_order = [](const Edit& a, const Edit& b) { return a.span.begin < b.span.begin; };
  if (!std::is_sorted(edits.begin(), edits.end(), in_text_order)) std::sort(edits.begin(), edits.end(), in_text_order);
  std::size_t at = 0;
  for (const Edit& e : edits) {
    out.append(text.substr(at, e.span.begin - at));
    out.append(made.substr(e.at, e.size));
    at = e.span.end;
  }
  out.append(text.substr(at));
}

class Rewriter {
 public:
  Rewriter(const RewriteSettings& settings, DownloadGrants& grants) : settings_(settings), grants_(grants) {
    append_json_escaped(base_, settings.base);
  }

  // The endpoint's URL (a JSON string) for bytes [s, e] (chunks `chunks`)
  // of `xorb` at `url` into `url_json`, and those bytes' range in the
  // object it names (a JSON object) into `range_json` (both cleared
  // first); false when the CAS's URL has expired already (it is kept: the
  // client's fetch is refused by the storage and it asks again, as it
  // would going direct).
  bool url_for(std::string_view xorb, Bytes bytes, std::pair<std::uint32_t, std::uint32_t> chunks, std::string_view url,
               std::string& url_json, std::string& range_json) {
    std::uint64_t expires = settings_.now + settings_.max_lifetime;
    if (auto original = presigned_expiry(url)) expires = std::min(expires, *original);
    if (expires <= settings_.now) {
      ++out.kept;
      return false;
    }
    Bytes object = bytes;
    if (settings_.objects)
      if (auto f = settings_.objects->covering(xorb, bytes.first, bytes.second, settings_.cache_dir))
        object = {f->start, f->end};
    const OriginView origin{xorb, bytes.first, bytes.second, url, expires, chunks.first, chunks.second};
    url_json.clear();
    url_json += '"';
    url_json += base_;
    // (The range URL is hex digits, digits and the query's punctuation:
    // nothing to escape.)
    if (!grants_.grant_into(url_json, origin, object, settings_.now, settings_.binding)) {
      ++out.kept;
      return false;
    }
    url_json += '"';
    range_json.clear();
    append_byte_range(range_json, {bytes.first - object.first, bytes.second - object.first});
    ++out.rewritten;
    if (object != bytes) ++out.inside;
    return true;
  }

  RewrittenReconstruction out;

 private:
  const RewriteSettings& settings_;
  DownloadGrants& grants_;
  std::string base_;  // the settings' base, escaped for a JSON string
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

// What the sections' rewrites write: the edits of the answer, their new
// bytes, and the strings used again from range to range.
struct Made {
  std::vector<Edit> edits;
  std::string bytes;
  std::string url_json, range_json, scratch;
  void add(JsonSpan span, std::string_view with) {
    edits.push_back({span, bytes.size(), with.size()});
    bytes += with;
  }
};

// v1: "fetch_info": {xorb: [{"range", "url", "url_range"}]}; each entry
// keeps its chunk range, its URL and url_range renamed.
base::Result<std::monostate> rewrite_v1(JsonScanner& s, Rewriter& rw, Made& made) {
  return each_xorb(s, "fetch_info", [&](const std::string& xorb) -> base::Result<std::monostate> {
    s.array();
    bool first = true;
    while (s.element(first)) {
      if (s.peek() != '{') return rewrite_error("fetch_info", "an entry of xorb " + xorb + " is not an object");
      s.object();
      std::optional<std::string_view> url;
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
          url = s.string_view(made.scratch, &url_at);
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
      if (!rw.url_for(xorb, *range, chunk_range(chunks), *url, made.url_json, made.range_json)) continue;
      made.add(url_at, made.url_json);
      made.add(range_at, made.range_json);
    }
    return std::monostate{};
  });
}

// Text [begin, end) into `out` with up to two of its spans replaced (each
// inside it, apart from the other).
struct Splice {
  JsonSpan span;
  std::string_view with;
};
void splice_into(std::string& out, std::string_view text, JsonSpan whole, Splice a, Splice b) {
  if (b.span.begin < a.span.begin) std::swap(a, b);
  std::size_t at = whole.begin;
  for (const Splice& x : {a, b}) {
    if (x.span.end == 0) continue;  // none
    out.append(text.substr(at, x.span.begin - at));
    out += x.with;
    at = x.span.end;
  }
  out.append(text.substr(at, whole.end - at));
}

// v2: "xorbs": {xorb: [{"url", "ranges": [{"chunks", "bytes"}]}]}; each
// range becomes an entry of its own with its own URL (the client fetches
// one range per request unless told to fetch several at once, and then it
// sends them as one Range header, which a single-range URL refuses: it
// asks again, per range).
base::Result<std::monostate> rewrite_v2(JsonScanner& s, std::string_view text, Rewriter& rw, Made& made) {
  struct Range {
    JsonSpan at, bytes_at;
    StartEnd bytes, chunks;
    bool has_bytes = false;
  };
  std::vector<Range> ranges;  // of one entry, their room used again entry after entry
  std::string range_text;
  return each_xorb(s, "xorbs", [&](const std::string& xorb) -> base::Result<std::monostate> {
    const std::size_t list_begin = s.offset();
    const std::size_t list_made = made.bytes.size();
    s.array();
    made.bytes += '[';
    bool first = true;
    while (s.element(first)) {
      if (s.peek() != '{') return rewrite_error("xorbs", "an entry of xorb " + xorb + " has no url or ranges");
      const std::size_t entry_begin = s.offset();
      s.object();
      // (A URL with an escape is decoded into made.scratch, which no other
      // string of the entry uses.)
      std::optional<std::string_view> url;
      JsonSpan url_at, ranges_at;
      ranges.clear();
      bool has_ranges = false;
      Seen seen;
      std::string key;
      bool member_first = true;
      while (s.member(member_first, key)) {
        const unsigned bit = key == "url" ? 1 : key == "ranges" ? 2 : 0;
        if (bit && !seen.add(bit)) return rewrite_error("xorbs", "an entry of xorb " + xorb + " repeats " + key);
        if (bit == 1) {
          url = s.string_view(made.scratch, &url_at);
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
        const bool renamed = rw.url_for(xorb, *bytes, chunk_range(r.chunks), *url, made.url_json, made.range_json);
        range_text.assign("[");
        splice_into(range_text, text, r.at, {renamed ? r.bytes_at : JsonSpan{}, made.range_json}, {});
        range_text += ']';
        if (made.bytes.size() > list_made + 1) made.bytes += ',';
        splice_into(made.bytes, text, entry_at, {renamed ? url_at : JsonSpan{}, made.url_json},
                    {ranges_at, range_text});
      }
    }
    made.bytes += ']';
    made.edits.push_back({{list_begin, s.offset()}, list_made, made.bytes.size() - list_made});
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
  Made made;
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
    auto done = v1 ? rewrite_v1(s, rw, made) : rewrite_v2(s, cas_json, rw, made);
    if (!done) return done.error();
  }
  if (s.failed() || (sections <= 1 && !s.at_end()))
    return rewrite_error("json", "the CAS's answer is not JSON: " + (s.failed() ? s.error() : "more after its end"));
  if (sections != 1) return rewrite_error("shape", "neither a v1 (fetch_info) nor a v2 (xorbs) reconstruction");
  rw.out.json.reserve(cas_json.size() + made.bytes.size());
  apply_into(rw.out.json, cas_json, made.edits, made.bytes);
  return std::move(rw.out);
}

}  // namespace dedupd::daemon::answers
