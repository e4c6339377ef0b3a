// PostgreSQL's binary formats, as much as dedupd sends and reads: big-endian
// integers, one-dimensional arrays (parameters of "= ANY($1)" and unnest),
// and the COPY binary stream. Layouts from the PostgreSQL documentation
// ("COPY", binary format) and its array_send/array_recv.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dedupd::fleet::wire {

inline constexpr unsigned kOidBool = 16, kOidBytea = 17, kOidInt8 = 20, kOidInt4 = 23, kOidText = 25;
inline constexpr unsigned kOidInt8Array = 1016, kOidInt4Array = 1007, kOidByteaArray = 1001;

inline std::uint64_t load_be64(const std::uint8_t* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | p[i];
  return v;
}
inline std::uint32_t load_be32(const std::uint8_t* p) {
  return (std::uint32_t(p[0]) << 24) | (std::uint32_t(p[1]) << 16) | (std::uint32_t(p[2]) << 8) | p[3];
}
// An unsigned count or unix time as an int8 parameter, saturating: a bound
// or an expiry past INT64_MAX means the same as INT64_MAX.
inline std::int64_t saturating_int8(std::uint64_t v) {
  return std::int64_t(v > std::uint64_t(INT64_MAX) ? std::uint64_t(INT64_MAX) : v);
}
inline void put_be64(std::string& out, std::uint64_t v) {
  for (int i = 7; i >= 0; --i) out.push_back(char(v >> (8 * i)));
}
inline void put_be32(std::string& out, std::uint32_t v) {
  for (int i = 3; i >= 0; --i) out.push_back(char(v >> (8 * i)));
}
inline void put_be16(std::string& out, std::uint16_t v) {
  out.push_back(char(v >> 8));
  out.push_back(char(v));
}

// Statement parameters, all in binary format, owning their bytes.
class Params {
 public:
  Params& int8(std::int64_t v);
  Params& int4(std::int32_t v);
  Params& bytea(std::span<const std::uint8_t> v);
  Params& text(std::string_view v);
  Params& boolean(bool v);
  Params& null(unsigned oid);
  Params& int8_array(std::span<const std::int64_t> v);
  Params& int4_array(std::span<const std::int32_t> v);
  // Elements of equal or varying length, given as one buffer and offsets.
  Params& bytea_array(std::span<const std::span<const std::uint8_t>> v);

  int count() const { return int(values_.size()); }
  // Pointers into the owned buffers; valid until the next change.
  void materialize(std::vector<const char*>& values, std::vector<int>& lengths, std::vector<int>& formats,
                   std::vector<unsigned>& types) const;

 private:
  Params& add(unsigned oid, std::string bytes);
  std::vector<std::string> values_;
  std::vector<bool> nulls_;
  std::vector<unsigned> types_;
};

// A COPY binary body: header, tuples, trailer.
class CopyBody {
 public:
  CopyBody();
  void begin_row(std::uint16_t fields) { put_be16(buf_, fields); }
  void int8(std::int64_t v) {
    put_be32(buf_, 8);
    put_be64(buf_, std::uint64_t(v));
  }
  void int4(std::int32_t v) {
    put_be32(buf_, 4);
    put_be32(buf_, std::uint32_t(v));
  }
  std::span<const std::uint8_t> finish();
  void reserve(std::size_t n) { buf_.reserve(n); }

 private:
  std::string buf_;
};

// The 8-byte prefix the chunk table is keyed on: the first little-endian
// word of the stored chunk hash (shard::Hash::truncated), as a signed bigint.
inline std::int64_t prefix_of(const std::uint8_t* hash32) {
  std::int64_t v;
  std::memcpy(&v, hash32, 8);
  return v;
}

// Bytes 8-11 of the stored chunk hash, read big-endian (schema 6's
// chunk.hash_check): an int4 in the binary formats is those bytes as they are.
inline std::int32_t hash_check_of(const std::uint8_t* hash32) { return std::int32_t(load_be32(hash32 + 8)); }

}  // namespace dedupd::fleet::wire
