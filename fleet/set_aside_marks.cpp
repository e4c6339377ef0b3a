// Writer: the fleet's set-aside marks (schema 7, issue 58). A host whose CAS
// refused an upload relying on a shard marks it for that CAS; every host
// reads the marks and leaves the shard out of its answers for that CAS.
// Deleting a shard's marks brings it back everywhere.
#include "fleet/connection.hpp"
#include "fleet/fleet.hpp"

namespace dedupd::fleet {

using wire::Params;

Result<bool> Writer::mark_set_aside(const Hash& shard, std::string_view cas, std::string_view reason) {
  if (auto c = ensure_connected(); !c) return c.error();
  // The first mark of a pair stays, as the first reason does in the index.
  auto r = conn_->exec(
      "INSERT INTO dedupd.set_aside (shard, cas, host_id, reason) VALUES ($1, $2, $3, $4) "
      "ON CONFLICT (shard, cas) DO NOTHING",
      Params().bytea(shard.bytes).text(cas).int4(host_id_).text(reason));
  if (!r) return r.error();
  return r->affected() > 0;
}

Result<std::vector<Hash>> Writer::mark_holders_set_aside(std::span<const Hash> xorbs, std::string_view cas,
                                                         bool unknown_too, std::string_view reason) {
  if (auto c = ensure_connected(); !c) return c.error();
  std::vector<Hash> out;
  if (xorbs.empty()) return out;
  std::vector<std::span<const std::uint8_t>> hashes;
  for (const Hash& x : xorbs) hashes.push_back(x.bytes);
  // Every stored form of each xorb (raw and keyed), then the shards listing
  // any of them: the GIN index on xorb_ids answers the overlap.
  auto r = conn_->exec(
      "INSERT INTO dedupd.set_aside (shard, cas, host_id, reason) "
      "SELECT s.hash, $2, $3, $4 FROM dedupd.shard s "
      "WHERE s.xorb_ids && ARRAY(SELECT x.id FROM dedupd.xorb x WHERE x.hash = ANY($1)) "
      "AND ($2 = ANY(s.cas) OR ($5 AND coalesce(cardinality(s.cas), 0) = 0)) "
      "ON CONFLICT (shard, cas) DO NOTHING RETURNING shard",
      Params().bytea_array(hashes).text(cas).int4(host_id_).text(reason).boolean(unknown_too));
  if (!r) return r.error();
  for (int i = 0; i < r->size(); ++i) out.push_back(r->hash(i, 0));
  return out;
}

Result<std::uint64_t> Writer::unmark_set_aside(const Hash& shard, std::optional<std::string_view> cas) {
  if (auto c = ensure_connected(); !c) return c.error();
  auto r = cas ? conn_->exec("DELETE FROM dedupd.set_aside WHERE shard = $1 AND cas = $2",
                             Params().bytea(shard.bytes).text(*cas))
               : conn_->exec("DELETE FROM dedupd.set_aside WHERE shard = $1", Params().bytea(shard.bytes));
  if (!r) return r.error();
  return r->affected();
}

Result<std::vector<SetAsideMark>> Writer::set_aside_marks() {
  if (auto c = ensure_connected(); !c) return c.error();
  auto r = conn_->exec(
      "SELECT m.shard, m.cas, coalesce(h.name, ''), m.reason, extract(epoch FROM m.at)::int8 "
      "FROM dedupd.set_aside m LEFT JOIN dedupd.host h ON h.id = m.host_id ORDER BY m.shard, m.cas",
      Params());
  if (!r) return r.error();
  std::vector<SetAsideMark> out;
  out.reserve(std::size_t(r->size()));
  for (int i = 0; i < r->size(); ++i)
    out.push_back({r->hash(i, 0), std::string(r->text(i, 1)), std::string(r->text(i, 2)), std::string(r->text(i, 3)),
                   std::uint64_t(r->int8(i, 4))});
  return out;
}

}  // namespace dedupd::fleet
