#include "daemon/answers/download_grants.hpp"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <memory>
#include <tuple>

namespace dedupd::daemon::answers {

namespace {

constexpr std::size_t kXorbDigits = 64;
constexpr std::size_t kIdBytes = 16;
constexpr std::size_t kSignatureBytes = 16;  // HMAC-SHA256 cut to 128 bits
constexpr std::size_t kDigestBytes = 16;     // SHA-256 of the CAS's URL, cut the same

void hex_into(const unsigned char* p, std::size_t n, char* out) {
  static constexpr char digits[] = "0123456789abcdef";
  for (std::size_t i = 0; i < n; ++i) {
    out[2 * i] = digits[p[i] >> 4];
    out[2 * i + 1] = digits[p[i] & 15];
  }
}

bool is_hex(std::string_view s, std::size_t digits) {
  if (s.size() != digits) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

}  // namespace

// SHA-256's state as a value: copied, it goes on from where it was.
// OpenSSL 3 marks these functions deprecated in favour of EVP, whose calls
// go through a provider, look the digest up (its one-shot SHA256() too)
// and allocate when a context is copied: for the small inputs here (a
// URL, a signed line) EVP cost about three times as much, and a
// reconstruction answer of 1,000 ranges digests and signs 1,000 of each.
// The code that hashes is the same (OpenSSL's, with the SHA extensions).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
struct DownloadGrants::Sha256State {
  SHA256_CTX ctx;
  bool start() { return SHA256_Init(&ctx) == 1; }
  bool add(const void* data, std::size_t n) { return SHA256_Update(&ctx, data, n) == 1; }
  bool finish(unsigned char* out) { return SHA256_Final(out, &ctx) == 1; }
};
#pragma GCC diagnostic pop

namespace {

// The hex digits of SHA-256 of the CAS's URL, cut (2 * kDigestBytes of
// them) into `out`; false when SHA-256 failed (then nothing is granted).
bool url_digest_into(std::string_view url, char* out) {
  DownloadGrants::Sha256State state;
  unsigned char d[SHA256_DIGEST_LENGTH];
  if (!(state.start() && state.add(url.data(), url.size()) && state.finish(d))) return false;
  hex_into(d, kDigestBytes, out);
  return true;
}

std::string url_digest(std::string_view url) {
  char out[2 * kDigestBytes];
  return url_digest_into(url, out) ? std::string(out, sizeof out) : std::string();
}

void append_number(std::string& out, std::uint64_t v) {
  char buf[20];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, end);
}

void append_range(std::string& out, std::uint64_t a, std::uint64_t b) {
  append_number(out, a);
  out += '-';
  append_number(out, b);
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

// /xet/o/<xorb>/<start>-<end>?r=<first>-<last>&x=<expiry>&k=<id>[&d=<url digest>]&g=<hmac>,
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
  if (!have_r || !have_x || u.grant.id.empty() || u.signature.empty()) return std::nullopt;
  if (u.grant.first < u.grant.start || u.grant.last > u.grant.end) return std::nullopt;
  return u;
}

std::string range_text(std::uint64_t a, std::uint64_t b) {
  std::string out;
  append_range(out, a, b);
  return out;
}

}  // namespace

// The inner and outer hash states of HMAC-SHA256 after the key's block:
// read only once made, so any thread may copy them (a copy is a struct's).
struct DownloadGrants::KeyedHash {
  Sha256State inner{}, outer{};
  bool ready = false;  // not: SHA-256 failed (nothing is signed nor checked)

  explicit KeyedHash(const DownloadKey& key) {
    unsigned char ipad[64], opad[64];  // SHA-256's block; the key (32 bytes) fits it
    for (std::size_t i = 0; i < sizeof ipad; ++i) {
      const unsigned char k = i < key.size() ? key[i] : 0;
      ipad[i] = k ^ 0x36;
      opad[i] = k ^ 0x5c;
    }
    ready = inner.start() && inner.add(ipad, sizeof ipad) && outer.start() && outer.add(opad, sizeof opad);
    OPENSSL_cleanse(ipad, sizeof ipad);
    OPENSSL_cleanse(opad, sizeof opad);
  }
  ~KeyedHash() {
    OPENSSL_cleanse(&inner, sizeof inner);
    OPENSSL_cleanse(&outer, sizeof outer);
  }
  KeyedHash(const KeyedHash&) = delete;
  KeyedHash& operator=(const KeyedHash&) = delete;

  // HMAC-SHA256 of `message` into `mac` (32 bytes); false when SHA-256 failed.
  bool mac(std::string_view message, unsigned char* mac) const {
    if (!ready) return false;
    Sha256State c = inner;
    unsigned char inner_hash[SHA256_DIGEST_LENGTH];
    const bool ok = c.add(message.data(), message.size()) && c.finish(inner_hash);
    c = outer;
    return ok && c.add(inner_hash, sizeof inner_hash) && c.finish(mac);
  }
};

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

DownloadGrants::DownloadGrants(const DownloadKey& key, std::size_t capacity)
    : hmac_(new KeyedHash(key), [](KeyedHash* k) { delete k; }),
      capacity_(std::clamp<std::size_t>(capacity, 1, std::size_t(UINT32_MAX) + 1)) {}

DownloadGrants::~DownloadGrants() = default;

std::string Grant::range_header() const { return "bytes=" + range_text(first - start, last - start); }

void DownloadGrants::Signed::append_to(std::string& out, const std::array<std::string_view, 6>& before,
                                       Last digest_field) const {
  out += before[0];
  out += xorb;
  out += before[1];
  append_range(out, start, end);
  out += before[2];
  append_range(out, first, last);
  out += before[3];
  append_number(out, expires);
  out += before[4];
  out += id;
  // (No digest: a grant no tier host may fill; its URL has no d=, its
  // signed line an empty last field.)
  if (!origin_digest.empty() || digest_field == Last::always) {
    out += before[5];
    out += origin_digest;
  }
}

bool DownloadGrants::sign(const Signed& f, char* out) const {
  // In one unambiguous line, in a string of this thread's used again (a
  // large answer signs a thousand of them).
  thread_local std::string line;
  line.clear();
  f.append_to(line, {"xet1|", "|", "|", "|", "|", "|"}, Signed::Last::always);
  unsigned char mac[SHA256_DIGEST_LENGTH];
  if (!hmac_->mac(line, mac)) return false;
  hex_into(mac, kSignatureBytes, out);
  return true;
}

std::optional<DownloadGrants::GrantId> DownloadGrants::id_of(std::string_view hex_id) {
  GrantId id;
  if (hex_id.size() != 2 * id.size()) return std::nullopt;
  for (std::size_t i = 0; i < id.size(); ++i) {
    auto [p, ec] = std::from_chars(hex_id.data() + 2 * i, hex_id.data() + 2 * i + 2, id[i], 16);
    if (ec != std::errc() || p != hex_id.data() + 2 * i + 2) return std::nullopt;
  }
  return id;
}

std::optional<DownloadGrants::GrantId> DownloadGrants::hold(const OriginView& o, std::uint64_t now) {
  drop_old(now);
  GrantId id;
  std::uint32_t slot32 = 0;
  const std::size_t random = id.size() - sizeof slot32;
  if (id_bytes_used_ + random > id_bytes_.size()) {
    if (RAND_bytes(id_bytes_.data(), int(id_bytes_.size())) != 1) return std::nullopt;
    id_bytes_used_ = 0;
  }
  if (count_ == capacity_) {  // full: the oldest goes
    oldest_ = (oldest_ + 1) % capacity_;
    --count_;
  }
  const std::size_t slot = (oldest_ + count_) % capacity_;
  slot32 = std::uint32_t(slot);
  std::memcpy(id.data(), &slot32, sizeof slot32);
  std::memcpy(id.data() + sizeof slot32, id_bytes_.data() + id_bytes_used_, random);
  id_bytes_used_ += random;
  if (slot == ring_.size()) ring_.emplace_back();
  // Into the slot's own strings: their room is used again (a thousand
  // grants an answer: no allocation, once the ring has gone round).
  Held& h = ring_[slot];
  h.id = id;
  h.origin.xorb.assign(o.xorb);
  h.origin.url.assign(o.url);
  h.origin.start = o.start;
  h.origin.end = o.end;
  h.origin.expires = o.expires;
  h.origin.first_chunk = o.first_chunk;
  h.origin.end_chunk = o.end_chunk;
  ++count_;
  return id;
}

const Origin* DownloadGrants::held_origin(const GrantId& id, std::uint64_t now) const {
  std::uint32_t slot = 0;
  std::memcpy(&slot, id.data(), sizeof slot);
  if (slot >= ring_.size() || ring_[slot].id != id || ring_[slot].origin.expires <= now) return nullptr;
  return &ring_[slot].origin;
}

std::string DownloadGrants::grant(const Origin& origin, std::pair<std::uint64_t, std::uint64_t> object,
                                  std::uint64_t now) {
  std::string uri;
  grant_into(uri,
             OriginView{origin.xorb, origin.start, origin.end, origin.url, origin.expires, origin.first_chunk,
                        origin.end_chunk},
             object, now, Binding::url_digest);
  return uri;
}

bool DownloadGrants::grant_into(std::string& out, const OriginView& origin,
                                std::pair<std::uint64_t, std::uint64_t> object, std::uint64_t now, Binding binding) {
  char digest[2 * kDigestBytes], id_hex[2 * kIdBytes], sig[2 * kSignatureBytes];
  const bool bound = binding == Binding::url_digest;
  if (bound && !url_digest_into(origin.url, digest)) return false;
  std::optional<GrantId> id;
  {
    std::lock_guard lock(mutex_);
    id = hold(origin, now);
  }
  if (!id) return false;
  hex_into(id->data(), id->size(), id_hex);
  const Signed f{origin.xorb,
                 object.first,
                 object.second,
                 origin.start,
                 origin.end,
                 origin.expires,
                 std::string_view(id_hex, sizeof id_hex),
                 bound ? std::string_view(digest, sizeof digest) : std::string_view()};
  if (!sign(f, sig)) return false;
  f.append_to(out, {kRangePathPrefix, "/", "?r=", "&x=", "&k=", "&d="}, Signed::Last::when_set);
  out += "&g=";
  out.append(sig, sizeof sig);
  return true;
}

GrantCheck DownloadGrants::check_signed(std::string_view uri, std::uint64_t now) const {
  GrantCheck out;
  auto u = parse_range_url(uri);
  if (!u) return out;
  const Grant& g = u->grant;
  char want[2 * kSignatureBytes];
  if (!sign({g.xorb, g.start, g.end, g.first, g.last, u->expires, g.id, g.origin_digest}, want) ||
      u->signature.size() != sizeof want || CRYPTO_memcmp(want, u->signature.data(), sizeof want) != 0) {
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
  if (auto id = id_of(g.id); id && g.own_range()) {
    std::lock_guard lock(mutex_);
    if (const Origin* held = held_origin(*id, now)) origin = *held;
  }
  // A tier host's fill: the URL the signature binds, and only that one (a
  // peer cannot have this host fetch anything else). Its chunk range is not
  // known here: the check finds the range's chunks in the xorb by their
  // hashes where this index holds the xorb, and walks the structure alone
  // where not.
  if (!origin && g.own_range() && !carried.empty()) {
    std::string digest = url_digest(carried);
    if (digest.size() == g.origin_digest.size() &&
        CRYPTO_memcmp(digest.data(), g.origin_digest.data(), digest.size()) == 0)
      origin = Origin{g.xorb, g.start, g.end, std::string(carried), 0, 0, 0};  // (expiry: not held)
  }
  if (!origin) {
    out.grant.reset();
    out.why = Refusal::unknown;
  }
  return out;
}

std::optional<std::string> DownloadGrants::origin_url(const Grant& g, std::uint64_t now) const {
  auto id = id_of(g.id);
  if (!id || !g.own_range()) return std::nullopt;
  std::lock_guard lock(mutex_);
  const Origin* held = held_origin(*id, now);
  if (!held) return std::nullopt;
  return held->url;
}

std::size_t DownloadGrants::held() const {
  std::lock_guard lock(mutex_);
  return count_;
}

void DownloadGrants::drop_old(std::uint64_t now) {
  // Oldest grants first, while expired (their memory freed: no CAS URL is
  // held past its expiry, but until the next grant).
  while (count_ > 0 && ring_[oldest_].origin.expires <= now) {
    ring_[oldest_] = Held{};
    oldest_ = (oldest_ + 1) % capacity_;
    --count_;
  }
}

}  // namespace dedupd::daemon::answers
