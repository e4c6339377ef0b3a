#include "fleet/wire.hpp"

namespace dedupd::fleet::wire {
namespace {

// Array header: ndim 1, no nulls, element type, then the one dimension
// (length, lower bound 1).
std::string array_header(unsigned elem_oid, std::size_t n) {
  std::string out;
  put_be32(out, 1);
  put_be32(out, 0);
  put_be32(out, elem_oid);
  put_be32(out, std::uint32_t(n));
  put_be32(out, 1);
  return out;
}

}  // namespace

Params& Params::add(unsigned oid, std::string bytes) {
  values_.push_back(std::move(bytes));
  nulls_.push_back(false);
  types_.push_back(oid);
  return *this;
}

Params& Params::int8(std::int64_t v) {
  std::string b;
  put_be64(b, std::uint64_t(v));
  return add(kOidInt8, std::move(b));
}

Params& Params::int4(std::int32_t v) {
  std::string b;
  put_be32(b, std::uint32_t(v));
  return add(kOidInt4, std::move(b));
}

Params& Params::bytea(std::span<const std::uint8_t> v) {
  return add(kOidBytea, std::string(reinterpret_cast<const char*>(v.data()), v.size()));
}

Params& Params::text(std::string_view v) { return add(kOidText, std::string(v)); }
Params& Params::boolean(bool v) { return add(kOidBool, std::string(1, v ? '\1' : '\0')); }

Params& Params::null(unsigned oid) {
  add(oid, {});
  nulls_.back() = true;
  return *this;
}

Params& Params::int8_array(std::span<const std::int64_t> v) {
  std::string b = array_header(kOidInt8, v.size());
  b.reserve(b.size() + 12 * v.size());
  for (std::int64_t x : v) {
    put_be32(b, 8);
    put_be64(b, std::uint64_t(x));
  }
  return add(kOidInt8Array, std::move(b));
}

Params& Params::int4_array(std::span<const std::int32_t> v) {
  std::string b = array_header(kOidInt4, v.size());
  b.reserve(b.size() + 8 * v.size());
  for (std::int32_t x : v) {
    put_be32(b, 4);
    put_be32(b, std::uint32_t(x));
  }
  return add(kOidInt4Array, std::move(b));
}

Params& Params::bytea_array(std::span<const std::span<const std::uint8_t>> v) {
  std::string b = array_header(kOidBytea, v.size());
  std::size_t total = 0;
  for (auto e : v) total += 4 + e.size();
  b.reserve(b.size() + total);
  for (auto e : v) {
    put_be32(b, std::uint32_t(e.size()));
    b.append(reinterpret_cast<const char*>(e.data()), e.size());
  }
  return add(kOidByteaArray, std::move(b));
}

void Params::materialize(std::vector<const char*>& values, std::vector<int>& lengths, std::vector<int>& formats,
                         std::vector<unsigned>& types) const {
  values.clear();
  lengths.clear();
  formats.clear();
  types.clear();
  for (std::size_t i = 0; i < values_.size(); ++i) {
    values.push_back(nulls_[i] ? nullptr : values_[i].data());
    lengths.push_back(int(values_[i].size()));
    formats.push_back(1);
    types.push_back(types_[i]);
  }
}

CopyBody::CopyBody() {
  static const char kSignature[] = "PGCOPY\n\377\r\n";  // 11 bytes with its NUL
  buf_.append(kSignature, 11);
  put_be32(buf_, 0);  // flags
  put_be32(buf_, 0);  // header extension length
}

std::span<const std::uint8_t> CopyBody::finish() {
  put_be16(buf_, 0xFFFF);
  return {reinterpret_cast<const std::uint8_t*>(buf_.data()), buf_.size()};
}

}  // namespace dedupd::fleet::wire
