// The xorbs a shard brought, read back through its shard_refs record: what a
// global-dedup reply sends when a client asks about one of the shard's chunks.
#include "index/impl.hpp"
#include "index/index.hpp"

namespace dedupd::index {

using namespace records;

Result<std::optional<std::vector<shard::XorbRecord>>> Index::shard_xorbs(const Hash& shard_hash,
                                                                         const XorbChooser& choose) const {
  using Out = std::optional<std::vector<shard::XorbRecord>>;
  auto txn = impl_->env->begin_read();
  if (!txn) return txn.error();
  const auto& d = impl_->dbs;
  MDB_val k = val(shard_hash), v;
  int rc = mdb_get(txn->get(), d.shard_refs, &k, &v);
  if (rc == MDB_NOTFOUND) return Out();  // only live shards keep their refs
  if (rc) return lmdb::error_of(rc, "reading a shard's xorbs");
  auto refs = decode_refs(v);
  if (!refs) return detail::corrupt("shard_refs of " + shard_hash.to_string() + " does not decode");

  // Views point into the snapshot's pages, valid while txn lives.
  std::vector<XorbRecordView> views;
  std::vector<XorbHead> heads;
  views.reserve(refs->xorbs.size());
  heads.reserve(refs->xorbs.size());
  for (XorbId id : refs->xorbs) {
    IdKey ik(id);
    MDB_val xk = ik.mdb(), xv;
    rc = mdb_get(txn->get(), d.xorbs, &xk, &xv);
    if (rc == MDB_NOTFOUND)
      return detail::corrupt("shard " + shard_hash.to_string() + " lists xorb id " + std::to_string(id) +
                             ", which has no record");
    if (rc) return lmdb::error_of(rc, "reading a xorb");
    auto rec = XorbRecordView::decode(xv);
    if (!rec) return detail::corrupt("xorb record " + std::to_string(id) + " does not decode");
    views.push_back(*rec);
    heads.push_back({rec->xorb_hash(), rec->num_chunks()});
  }

  std::vector<std::size_t> wanted = choose(heads);
  std::vector<shard::XorbRecord> out;
  out.reserve(wanted.size());
  for (std::size_t pos : wanted) {
    if (pos >= views.size())
      return make_error(kRuleArgument, "xorb position " + std::to_string(pos) + " of a shard with " +
                                           std::to_string(views.size()) + " xorbs");
    const XorbRecordView& rec = views[pos];
    shard::XorbRecord x{rec.header(), {}};
    x.chunks.reserve(rec.num_chunks());
    for (std::uint32_t i = 0; i < rec.num_chunks(); ++i) x.chunks.push_back(rec.chunk(i));
    out.push_back(std::move(x));
  }
  return Out(std::move(out));
}

}  // namespace dedupd::index
