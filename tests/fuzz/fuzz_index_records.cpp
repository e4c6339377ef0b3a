// libFuzzer target: the index's own records as LMDB hands them back (a
// damaged or foreign data.mdb can hold anything): shard refs with and
// without the per-file flags of schema 3, outbox and parked entries, shard,
// file and xorb records. Malformed input must decode to nothing, never
// crash; what decodes must encode back to the same bytes. A xorb record
// (verbatim, compact or dense) that decodes is read in full, which must
// stay inside it whatever its bytes, and the CAS block it gives back must
// come back exactly through the writer's own choice of layout.
#include <lmdb.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

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
  if (auto x = records::XorbRecordView::decode(v)) {
    // cas_block() reads every chunk's hash and range as a lookup does
    // (chunk_hash_bytes, chunk_range): only inside the record.
    const std::uint32_t n = x->num_chunks();
    auto cas = x->cas_block();
    if (cas.size() != dedupd::shard::kEntrySize * (1 + std::size_t(n))) std::abort();
    dedupd::shard::XorbBlock block(cas.data(), 0);
    auto plan = records::plan_xorb_record(block);
    std::vector<std::uint8_t> again(plan.size);
    records::encode_xorb_record(again.data(), x->key(), block, plan);
    auto y = records::XorbRecordView::decode(records::val(again));
    if (!y || y->layout() != plan.layout || y->cas_block() != cas) std::abort();
  }
  // The first 8 bytes as the key, the rest as the value.
  if (size >= 8) {
    MDB_val k{8, const_cast<std::uint8_t*>(data)}, rest{size - 8, const_cast<std::uint8_t*>(data) + 8};
    (void)detail::decode_entry(k, rest);
    if (auto p = detail::decode_parked(k, rest); p && p->reason.size() + 49 != rest.mv_size) std::abort();
  }
  return 0;
}
