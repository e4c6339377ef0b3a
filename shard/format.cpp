#include "shard/format.hpp"

namespace dedupd::shard {

bool is_bookend(const std::uint8_t* e) {
  for (int i = 0; i < 32; ++i)
    if (e[i] != 0xFF) return false;
  for (int i = 32; i < 48; ++i)
    if (e[i] != 0x00) return false;
  return true;
}

void write_bookend(std::uint8_t* e) {
  std::memset(e, 0xFF, 32);
  std::memset(e + 32, 0, 16);
}

ShardFooter ShardFooter::decode(const std::uint8_t* p) {
  ShardFooter f;
  f.version = load_u64(p + 0);
  f.file_info_offset = load_u64(p + 8);
  f.cas_info_offset = load_u64(p + 16);
  f.file_lookup_offset = load_u64(p + 24);
  f.file_lookup_num_entry = load_u64(p + 32);
  f.xorb_lookup_offset = load_u64(p + 40);
  f.xorb_lookup_num_entry = load_u64(p + 48);
  f.chunk_lookup_offset = load_u64(p + 56);
  f.chunk_lookup_num_entry = load_u64(p + 64);
  f.chunk_hash_key = Hash::from_bytes({p + 72, 32});
  f.creation_timestamp = load_u64(p + 104);
  f.key_expiry = load_u64(p + 112);
  for (int i = 0; i < 6; ++i) f.reserved[i] = load_u64(p + 120 + 8 * i);
  f.stored_bytes_on_disk = load_u64(p + 168);
  f.materialized_bytes = load_u64(p + 176);
  f.stored_bytes = load_u64(p + 184);
  f.footer_offset = load_u64(p + 192);
  return f;
}

void ShardFooter::encode(std::uint8_t* p) const {
  store_u64(p + 0, version);
  store_u64(p + 8, file_info_offset);
  store_u64(p + 16, cas_info_offset);
  store_u64(p + 24, file_lookup_offset);
  store_u64(p + 32, file_lookup_num_entry);
  store_u64(p + 40, xorb_lookup_offset);
  store_u64(p + 48, xorb_lookup_num_entry);
  store_u64(p + 56, chunk_lookup_offset);
  store_u64(p + 64, chunk_lookup_num_entry);
  std::memcpy(p + 72, chunk_hash_key.data(), 32);
  store_u64(p + 104, creation_timestamp);
  store_u64(p + 112, key_expiry);
  for (int i = 0; i < 6; ++i) store_u64(p + 120 + 8 * i, reserved[i]);
  store_u64(p + 168, stored_bytes_on_disk);
  store_u64(p + 176, materialized_bytes);
  store_u64(p + 184, stored_bytes);
  store_u64(p + 192, footer_offset);
}

FileHeader FileHeader::decode(const std::uint8_t* p) {
  return {Hash::from_bytes({p, 32}), load_u32(p + 32), load_u32(p + 36), load_u64(p + 40)};
}
void FileHeader::encode(std::uint8_t* p) const {
  std::memcpy(p, file_hash.data(), 32);
  store_u32(p + 32, flags);
  store_u32(p + 36, num_entries);
  store_u64(p + 40, unused);
}

FileTerm FileTerm::decode(const std::uint8_t* p) {
  return {Hash::from_bytes({p, 32}), load_u32(p + 32), load_u32(p + 36), load_u32(p + 40), load_u32(p + 44)};
}
void FileTerm::encode(std::uint8_t* p) const {
  std::memcpy(p, xorb_hash.data(), 32);
  store_u32(p + 32, flags);
  store_u32(p + 36, unpacked_bytes);
  store_u32(p + 40, chunk_start);
  store_u32(p + 44, chunk_end);
}

HashRecord HashRecord::decode(const std::uint8_t* p) {
  HashRecord r;
  r.hash = Hash::from_bytes({p, 32});
  std::memcpy(r.unused.data(), p + 32, 16);
  return r;
}
void HashRecord::encode(std::uint8_t* p) const {
  std::memcpy(p, hash.data(), 32);
  std::memcpy(p + 32, unused.data(), 16);
}

XorbHeader XorbHeader::decode(const std::uint8_t* p) {
  return {Hash::from_bytes({p, 32}), load_u32(p + 32), load_u32(p + 36), load_u32(p + 40), load_u32(p + 44)};
}
void XorbHeader::encode(std::uint8_t* p) const {
  std::memcpy(p, xorb_hash.data(), 32);
  store_u32(p + 32, flags);
  store_u32(p + 36, num_entries);
  store_u32(p + 40, bytes_in_xorb);
  store_u32(p + 44, bytes_on_disk);
}

ChunkEntry ChunkEntry::decode(const std::uint8_t* p) {
  return {Hash::from_bytes({p, 32}), load_u32(p + 32), load_u32(p + 36), load_u32(p + 40), load_u32(p + 44)};
}
void ChunkEntry::encode(std::uint8_t* p) const {
  std::memcpy(p, chunk_hash.data(), 32);
  store_u32(p + 32, byte_start);
  store_u32(p + 36, unpacked_bytes);
  store_u32(p + 40, flags);
  store_u32(p + 44, unused);
}

}  // namespace dedupd::shard
