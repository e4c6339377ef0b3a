// SQL text shared by the writer and the reader.
#pragma once

#include <string>

namespace dedupd::fleet::sql {

// "hex=hostA,hostB hex2=hostC;cashex": the fleet shards whose `array_column`
// (xorb_ids or file_ids) lists `id_expr`, each with its holders and, when
// known, its CAS set (schema 4) as the hex of its URLs joined by a space.
// Host names hold no space, '=', ',' or ';' (ConnectOptions checks them);
// a URL may hold ',' or '=', so it travels as hex.
inline std::string shards_of(const std::string& id_expr, const char* array_column) {
  return "(SELECT string_agg(encode(s.hash, 'hex') || '=' || coalesce((SELECT string_agg(o.name, ',' ORDER BY o.name) "
         "FROM dedupd.hold d JOIN dedupd.host o ON o.id = d.host_id WHERE d.shard_id = s.id), '') || "
         "coalesce(';' || nullif(encode(convert_to(array_to_string(s.cas, ' '), 'UTF8'), 'hex'), ''), ''), ' ' "
         "ORDER BY s.hash) FROM dedupd.shard s WHERE s." +
         std::string(array_column) + " @> ARRAY[" + id_expr + "])";
}

}  // namespace dedupd::fleet::sql
