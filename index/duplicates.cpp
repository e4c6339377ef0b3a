#include "index/duplicates.hpp"

namespace dedupd::index::detail {

using records::val;

int key_entries(const Cursor& c, const ChunkKey& key, std::uint64_t& n) {
  n = 0;
  MDB_val k = val(key.data(), key.size()), v;
  int rc = c.move(&k, &v, MDB_SET_KEY);
  if (rc == MDB_NOTFOUND) return 0;
  if (rc) return rc;
  std::size_t count = 0;
  if ((rc = mdb_cursor_count(c.get(), &count))) return rc;
  n = count;
  return 0;
}

int copy_duplicates(const Cursor& c, const ChunkKey& key, std::uint64_t count, std::vector<std::uint8_t>& out) {
  if (count == 0) return 0;
  MDB_val k = val(key.data(), key.size()), v;
  int rc = c.move(&k, &v, MDB_SET_KEY);
  if (rc) return rc;
  auto append = [&](const MDB_val& x) {
    out.insert(out.end(), static_cast<const std::uint8_t*>(x.mv_data),
               static_cast<const std::uint8_t*>(x.mv_data) + x.mv_size);
  };
  // A single value is not a duplicate set: MDB_GET_MULTIPLE leaves it out.
  if (count == 1) {
    append(v);
    return 0;
  }
  for (rc = c.move(&k, &v, MDB_GET_MULTIPLE); rc == 0; rc = c.move(&k, &v, MDB_NEXT_MULTIPLE)) append(v);
  return rc == MDB_NOTFOUND ? 0 : rc;
}

int put_duplicates(const Cursor& c, const ChunkKey& key, std::span<const std::uint8_t> values, std::size_t width,
                   unsigned flags) {
  std::size_t n = values.size() / width;
  if (n == 0) return 0;
  MDB_val mk = val(key.data(), key.size());
  MDB_val mv[2] = {val(values.data(), width), MDB_val{n, nullptr}};
  if (int rc = mdb_cursor_put(c.get(), &mk, mv, MDB_MULTIPLE | flags)) return rc;
  return mv[1].mv_size == n ? 0 : MDB_CORRUPTED;
}

}  // namespace dedupd::index::detail
