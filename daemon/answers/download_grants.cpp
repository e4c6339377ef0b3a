#include "daemon/answers/download_grants.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <openssl/sha.h>

#include <charconv>
#include <tuple>

namespace dedupd::daemon::answers {

namespace {

constexpr std::size_t kXorbDigits = 64;
constexpr std::size_t kIdBytes = 16;
constexpr std::size_t kSignatureBytes = 16;  // HMAC-SHA256 cut to 128 bits
constexpr std::size_t kDigestBytes = 16;     // SHA-256 of the CAS's URL, cut the same

std::string hex(const unsigned char* p, std::size_t n) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out(2 * n, '0');
  for (std::size_t i = 0; i < n; ++i) {
    out[2 * i] = digits[p[i] >> 4];
    out[2 * i + 1] = digits[p[i] & 15];
  }
  return out;
}

bool is_hex(std::string_view s, std::size_t digits) {
  if (s.size() != digits) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

std::string url_digest(std::string_view url) {
  unsigned char d[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(url.data()), url.size(), d);
  return hex(d, kDigestBytes);
}

std::optional<std::uint64_t> number(std::string_view s) {
  std::uint64_t v = 0;
  if (s.empty() || s.size() > 19) return std::nullopt;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

// "<s>-<e>" with s <= e.
std::optional<std::pair<std::uint64_t, std::uint64_t>> byte_range(std::string_view s) {
  auto dash = s.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  auto a = number(s.substr(0, dash)), b = number(s.substr(dash + 1));
  if (!a || !b || *a > *b) return std::nullopt;
  return std::pair{*a, *b};
}

struct RangeUrl {
  Grant grant;
  std::uint64_t expires = 0;
  std::string_view signature;
};

// /xet/o/<xorb>/<start>-<end>?r=<first>-<last>&x=<expiry>&k=<id>&d=<url digest>&g=<hmac>,
// the granted bytes inside the object.
std::optional<RangeUrl> parse_range_url(std::string_view uri) {
  if (!uri.starts_with(kRangePathPrefix)) return std::nullopt;
  uri.remove_prefix(kRangePathPrefix.size());
  auto q = uri.find('?');
  if (q == std::string_view::npos) return std::nullopt;
  std::string_view path = uri.substr(0, q), query = uri.substr(q + 1);
  auto slash = path.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  RangeUrl u;
  std::string_view xorb = path.substr(0, slash);
  auto object = byte_range(path.substr(slash + 1));
  if (!is_hex(xorb, kXorbDigits) || !object) return std::nullopt;
  u.grant.xorb = std::string(xorb);
  std::tie(u.grant.start, u.grant.end) = *object;
  bool have_x = false, have_r = false;
  while (!query.empty()) {
    auto amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    auto eq = pair.find('=');
    if (eq == std::string_view::npos) return std::nullopt;
    std::string_view k = pair.substr(0, eq), v = pair.substr(eq + 1);
    if (k == "r" && !have_r) {
      auto r = byte_range(v);
      if (!r) return std::nullopt;
      std::tie(u.grant.first, u.grant.last) = *r;
      have_r = true;
    } else if (k == "x" && !have_x) {
      auto x = number(v);
      if (!x) return std::nullopt;
      u.expires = *x;
      have_x = true;
    } else if (k == "k" && u.grant.id.empty() && is_hex(v, 2 * kIdBytes)) {
      u.grant.id = std::string(v);
    } else if (k == "d" && u.grant.origin_digest.empty() && is_hex(v, 2 * kDigestBytes)) {
      u.grant.origin_digest = std::string(v);
    } else if (k == "g" && u.signature.empty() && is_hex(v, 2 * kSignatureBytes)) {
      u.signature = v;
    } else {
      return std::nullopt;  // a stray or repeated parameter is an altered URL
    }
  }
  if (!have_r || !have_x || u.grant.id.empty() || u.grant.origin_digest.empty() || u.signature.empty())
    return std::nullopt;
  if (u.grant.first < u.grant.start || u.grant.last > u.grant.end) return std::nullopt;
  return u;
}

std::string range_text(std::uint64_t a, std::uint64_t b) { return std::to_string(a) + "-" + std::to_string(b); }

}  // namespace

std::string_view refusal_name(Refusal why) {
  switch (why) {
    case Refusal::malformed:
      return "malformed";
    case Refusal::bad_signature:
      return "bad_signature";
    case Refusal::expired:
      return "expired";
    case Refusal::wrong_range:
      return "wrong_range";
    case Refusal::unknown:
      return "unknown";
    case Refusal::not_cached:
      return "not_cached";
    case Refusal::unreadable:
      return "unreadable";
    case Refusal::storage_refused:
      return "storage_refused";
    case Refusal::off:
      return "off";
  }
  return "malformed";
}

DownloadGrants::DownloadGrants(const DownloadKey& key, std::size_t capacity) : key_(key), capacity_(capacity) {}

std::string Grant::range_header() const { return "bytes=" + range_text(first - start, last - start); }

std::string DownloadGrants::signature(const Grant& g, std::uint64_t expires) const {
  // Every field the URL carries, in one unambiguous line.
  std::string message = "xet1|" + g.xorb + "|" + range_text(g.start, g.end) + "|" + range_text(g.first, g.last) + "|" +
                        std::to_string(expires) + "|" + g.id + "|" + g.origin_digest;
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key_.data(), int(key_.size()), reinterpret_cast<const unsigned char*>(message.data()),
       message.size(), mac, &len);
  return hex(mac, kSignatureBytes);
}

std::string DownloadGrants::grant(const Origin& origin, std::pair<std::uint64_t, std::uint64_t> object,
                                  std::uint64_t now) {
  unsigned char raw[kIdBytes];
  if (RAND_bytes(raw, int(sizeof raw)) != 1) return {};
  Grant g{origin.xorb, object.first,         object.second,         origin.start,
          origin.end,  hex(raw, sizeof raw), url_digest(origin.url)};
  std::string uri = std::string(kRangePathPrefix) + g.xorb + "/" + range_text(g.start, g.end) +
                    "?r=" + range_text(g.first, g.last) + "&x=" + std::to_string(origin.expires) + "&k=" + g.id +
                    "&d=" + g.origin_digest + "&g=" + signature(g, origin.expires);
  std::lock_guard lock(mutex_);
  drop_old(now);
  origins_.emplace(g.id, origin);
  order_.emplace_back(origin.expires, std::move(g.id));
  return uri;
}

GrantCheck DownloadGrants::check_signed(std::string_view uri, std::uint64_t now) const {
  GrantCheck out;
  auto u = parse_range_url(uri);
  if (!u) return out;
  std::string want = signature(u->grant, u->expires);
  if (CRYPTO_memcmp(want.data(), u->signature.data(), want.size()) != 0) {
    out.why = Refusal::bad_signature;
    return out;
  }
  if (u->expires <= now) {
    out.why = Refusal::expired;
    return out;
  }
  out.grant = std::move(u->grant);
  return out;
}

GrantCheck DownloadGrants::check(std::string_view uri, std::string_view range_header, std::uint64_t now) const {
  GrantCheck out = check_signed(uri, now);
  if (out.grant && range_header != out.grant->range_header()) {
    out.grant.reset();
    out.why = Refusal::wrong_range;
  }
  return out;
}

GrantCheck DownloadGrants::check_fill(std::string_view uri, std::uint64_t now, std::optional<Origin>& origin,
                                      std::string_view carried) const {
  GrantCheck out = check_signed(uri, now);
  if (!out.grant) return out;
  const Grant& g = *out.grant;
  if (g.own_range()) {
    std::lock_guard lock(mutex_);
    if (auto it = origins_.find(g.id); it != origins_.end() && it->second.expires > now) origin = it->second;
  }
  // A tier host's fill: the URL the signature binds, and only that one (a
  // peer cannot have this host fetch anything else). Its chunk range is not
  // known here: the check walks the structure alone.
  if (!origin && g.own_range() && !carried.empty()) {
    std::string digest = url_digest(carried);
    if (CRYPTO_memcmp(digest.data(), g.origin_digest.data(), digest.size()) == 0)
      origin = Origin{g.xorb, g.start, g.end, std::string(carried), 0, 0, 0};  // (expiry: not held)
  }
  if (!origin) {
    out.grant.reset();
    out.why = Refusal::unknown;
  }
  return out;
}

std::optional<std::string> DownloadGrants::origin_url(const Grant& g, std::uint64_t now) const {
  if (!g.own_range()) return std::nullopt;
  std::lock_guard lock(mutex_);
  auto it = origins_.find(g.id);
  if (it == origins_.end() || it->second.expires <= now) return std::nullopt;
  return it->second.url;
}

std::size_t DownloadGrants::held() const {
  std::lock_guard lock(mutex_);
  return origins_.size();
}

void DownloadGrants::drop_old(std::uint64_t now) {
  // Oldest grants first: those expired, and any past the capacity (their
  // URLs are then refused as unknown, and the client asks again).
  while (!order_.empty() && (order_.front().first <= now || origins_.size() >= capacity_)) {
    origins_.erase(order_.front().second);
    order_.pop_front();
  }
}

}  // namespace dedupd::daemon::answers
