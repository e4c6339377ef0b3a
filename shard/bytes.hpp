// Fixed-width integers in byte buffers, for every format the tree reads or
// writes. The MDB shard and the CAF bundle store little-endian (load_u32,
// load_u64, ...); the Software Heritage read shard stores big-endian
// (load_be64, store_be64). memcpy copies out, so alignment never matters.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

namespace dedupd::shard {

namespace detail {
template <class T>
constexpr T byteswap(T v) {
  T out = 0;
  for (unsigned i = 0; i < sizeof(T); ++i, v >>= 8) out = static_cast<T>(out << 8 | (v & 0xFF));
  return out;
}
template <class T>
constexpr T little_endian(T v) {
  return std::endian::native == std::endian::little ? v : byteswap(v);
}
template <class T>
constexpr T big_endian(T v) {
  return std::endian::native == std::endian::big ? v : byteswap(v);
}
template <class T>
T load(const std::uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class T>
void store(std::uint8_t* p, T v) {
  std::memcpy(p, &v, sizeof v);
}
}  // namespace detail

inline std::uint32_t load_u32(const std::uint8_t* p) { return detail::little_endian(detail::load<std::uint32_t>(p)); }
inline std::uint64_t load_u64(const std::uint8_t* p) { return detail::little_endian(detail::load<std::uint64_t>(p)); }
inline void store_u32(std::uint8_t* p, std::uint32_t v) { detail::store(p, detail::little_endian(v)); }
inline void store_u64(std::uint8_t* p, std::uint64_t v) { detail::store(p, detail::little_endian(v)); }

inline std::uint64_t load_be64(const std::uint8_t* p) { return detail::big_endian(detail::load<std::uint64_t>(p)); }
inline void store_be64(std::uint8_t* p, std::uint64_t v) { detail::store(p, detail::big_endian(v)); }

}  // namespace dedupd::shard
