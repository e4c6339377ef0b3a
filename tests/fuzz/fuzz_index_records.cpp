// libFuzzer target: the index's own records as LMDB hands them back (a
// damaged or foreign data.mdb can hold anything): shard refs with and
// without the per-file flags of schema 3, outbox and parked entries, shard,
// file and xorb records. Malformed input must decode to nothing, never
// crash; what decodes must encode back to the same bytes.
#include <lmdb.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "index/outbox_txn.hpp"
#include "index/records.hpp"

using namespace dedupd::index;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  MDB_val v{size, const_cast<std::uint8_t*>(data)};
  if (auto refs = records::decode_refs(v)) {
    auto again = records::encode(*refs);
    if (again.size() != size || std::memcmp(again.data(), data, size) != 0) std::abort();
  }
  (void)records::decode_shard(v);
  (void)records::decode_file(v);
  (void)records::XorbRecordView::decode(v);
  // The first 8 bytes as the key, the rest as the value.
  if (size >= 8) {
    MDB_val k{8, const_cast<std::uint8_t*>(data)}, rest{size - 8, const_cast<std::uint8_t*>(data) + 8};
    (void)detail::decode_entry(k, rest);
    if (auto p = detail::decode_parked(k, rest); p && p->reason.size() + 49 != rest.mv_size) std::abort();
  }
  return 0;
}
