// Range URLs of the local Xet endpoint (docs/XET-ENDPOINT.md, "Downloads"):
// a range of a xorb the CAS granted a client, renamed to the endpoint's own
// URL, bound to that xorb and range by an HMAC of dedupd's key and expiring
// no later than the CAS's URL. The CAS's presigned URL stays here, in
// memory only, until it expires: a rewritten URL carries none of it, so
// the cache (keyed by xorb and range) never depends on it, and nothing is
// served to a client the CAS did not answer. Any thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dedupd::daemon::answers {

using DownloadKey = std::array<std::uint8_t, 32>;

// A range of a xorb as the CAS granted it: bytes [start, end] (end
// inclusive, as `url_range`), chunks [first_chunk, end_chunk) (end_chunk 0:
// not said), served by `url` until `expires` (Unix s). Held as an Origin;
// granted from an OriginView, its strings read where they lie (a
// reconstruction answer's text), copied only into the slot that holds them.
template <class Text>
struct BasicOrigin {
  Text xorb;  // 64 hex digits, the Xet string form
  std::uint64_t start = 0;
  std::uint64_t end = 0;
  Text url;
  std::uint64_t expires = 0;
  std::uint32_t first_chunk = 0;
  std::uint32_t end_chunk = 0;
};
using Origin = BasicOrigin<std::string>;
using OriginView = BasicOrigin<std::string_view>;

// What a range URL grants: bytes [first, last] of the xorb (what the CAS
// granted the client), read out of the cached object [start, end] (the
// object filled under this very grant when the two are the same).
struct Grant {
  std::string xorb;
  std::uint64_t start = 0, end = 0;   // the object
  std::uint64_t first = 0, last = 0;  // the granted bytes, xorb coordinates
  std::string id;
  // The first 128 bits of SHA-256 of the CAS's URL, hex: signed with the
  // rest, so a fleet tier host (same key, no URL held) fills only from the
  // URL the edge that granted it was given. Empty: the grant binds none
  // (Binding::none), and no tier host fills it.
  std::string origin_digest;
  bool own_range() const { return first == start && last == end; }
  // The Range header the client must send: the granted bytes in the object.
  std::string range_header() const;
};

// Why a range URL is refused (the endpoint answers 403, on which hf_xet asks
// the reconstruction again and gets fresh URLs).
enum class Refusal {
  malformed,      // not /xet/o/<xorb>/<s>-<e>?x=..&k=..&g=..
  bad_signature,  // altered, or signed with another key
  expired,
  wrong_range,  // the Range header is not the signed range
  unknown,      // signed, but its origin is gone (dedupd restarted, or held too many)
  // The routes' own (daemon/api/routes/routes_xet_download.cpp):
  not_cached,       // a range inside an object whose cache file is gone or was damaged
  unreadable,       // the object's cache file is out of dedupd's sight and cannot be removed
  storage_refused,  // the storage refused the fill (the CAS's URL expired)
  off,              // xet_endpoint.downloads.enabled is off, or there is no key
};
inline constexpr std::size_t kRefusals = 9;
std::string_view refusal_name(Refusal why);

struct GrantCheck {
  std::optional<Grant> grant;  // set: allowed
  Refusal why = Refusal::malformed;
};

// The path prefix of the endpoint's range URLs.
inline constexpr std::string_view kRangePathPrefix = "/xet/o/";

class DownloadGrants {
 public:
  // Holds at most `capacity` origins (1 to 2^32); past that the oldest go
  // first.
  DownloadGrants(const DownloadKey& key, std::size_t capacity);

  ~DownloadGrants();

  // The endpoint's path and query for `origin` (expiry already capped by
  // the caller), its bytes read from the object `object` (start, end: the
  // origin's own range, or a cached object holding it), remembered until
  // it expires. About a microsecond: a reconstruction answer of 1,000
  // ranges makes 1,000 of them (docs/PERFORMANCE.md, "Downloads").
  std::string grant(const Origin& origin, std::pair<std::uint64_t, std::uint64_t> object, std::uint64_t now);
  // What a grant's signature binds besides its fields.
  enum class Binding {
    // The CAS's URL's digest (d=): a fleet tier host, given that URL by
    // the edge, fills from it and from no other.
    url_digest,
    // Nothing more: no tier host fills it (it refuses one without d=, and
    // the edge fills it itself). A SHA-256 of a few hundred bytes less a
    // range, for endpoints without a tier.
    none,
  };
  // The same appended to `out` (false, nothing appended: not granted).
  bool grant_into(std::string& out, const OriginView& origin, std::pair<std::uint64_t, std::uint64_t> object,
                  std::uint64_t now, Binding binding);

  // Whether `uri` (path and query, as the client sent it) with its Range
  // header may be served at `now` (signed by this key, not expired, the
  // Range the granted bytes in the object); the grant when so.
  GrantCheck check(std::string_view uri, std::string_view range_header, std::uint64_t now) const;
  // The same without a Range: a fleet tier host asked for a whole object.
  GrantCheck check_whole(std::string_view uri, std::uint64_t now) const { return check_signed(uri, now); }
  // The same for a fill (nginx asks no Range of it): the CAS's URL of an
  // own-range grant, or why not (Refusal::unknown: not held, or the grant
  // reads another object). On a tier host none is held: `carried` (the
  // URL the edge passed along) stands in when its digest is the signed one.
  GrantCheck check_fill(std::string_view uri, std::uint64_t now, std::optional<Origin>& origin,
                        std::string_view carried = {}) const;
  // The CAS's URL held for an own-range grant (for the edge to hand its
  // fleet tier), if still held.
  std::optional<std::string> origin_url(const Grant& g, std::uint64_t now) const;

  std::size_t held() const;

  // SHA-256 as a value (download_grants.cpp).
  struct Sha256State;

 private:
  // What a range URL's signature covers: every field it carries.
  struct Signed {
    std::string_view xorb;
    std::uint64_t start, end, first, last, expires;
    std::string_view id, origin_digest;
    // The fields in this order, each after its text in `before`: the
    // signed line and the URL say them in the same order.
    // The digest's field is written always (the signed line) or only when
    // there is a digest (the URL).
    enum class Last { always, when_set };
    void append_to(std::string& out, const std::array<std::string_view, 6>& before, Last digest_field) const;
  };
  // The signature's hex digits into `out` (32 of them); false when OpenSSL
  // failed (a URL then is neither granted nor allowed).
  bool sign(const Signed& f, char* out) const;
  GrantCheck check_signed(std::string_view uri, std::uint64_t now) const;
  // A grant's id (its URL's k=, in hex there): the slot that holds its
  // origin (4 bytes) and 12 random bytes.
  using GrantId = std::array<std::uint8_t, 16>;
  static std::optional<GrantId> id_of(std::string_view hex);
  struct Held {
    GrantId id{};
    Origin origin;
  };
  // The slot's origin, when it is still the one `id` names (with mutex_).
  const Origin* held_origin(const GrantId& id, std::uint64_t now) const;

  void drop_old(std::uint64_t now);                                     // with mutex_
  std::optional<GrantId> hold(const OriginView& o, std::uint64_t now);  // with mutex_

  // HMAC-SHA256 under the key (RFC 2104), its two keyed hash states made
  // once: a signature copies them (OpenSSL's HMAC() looks the digest up
  // and keys it again each time, four times the cost).
  struct KeyedHash;
  std::unique_ptr<KeyedHash, void (*)(KeyedHash*)> hmac_;
  // Random bytes for grant ids, drawn a block at a time (with mutex_).
  std::array<std::uint8_t, 4096> id_bytes_{};
  std::size_t id_bytes_used_ = 4096;
  std::size_t capacity_;
  mutable std::mutex mutex_;
  // The origins held: a ring in grant order (grown up to capacity_, then
  // the oldest slot taken next), each found by the slot its id names, so a
  // grant and a fill cost no search (at capacity, a hash map's insert and
  // erase were half of a 1,000-range rewrite).
  std::vector<Held> ring_;
  std::size_t oldest_ = 0;  // the slot of the oldest origin held
  std::size_t count_ = 0;   // origins held
};

}  // namespace dedupd::daemon::answers
