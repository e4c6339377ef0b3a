// SQL text shared by the writer and the reader.
#pragma once

#include <string>

namespace dedupd::fleet::sql {

// "hex=hostA,hostB hex2=hostC": the fleet shards whose `array_column`
// (xorb_ids or file_ids) lists `id_expr`, each with its holders. Host names
// hold no space, '=' or ',' (ConnectOptions checks them).
inline std::string shards_of(const std::string& id_expr, const char* array_column) {
  return "(SELECT string_agg(encode(s.hash, 'hex') || '=' || coalesce((SELECT string_agg(o.name, ',' ORDER BY o.name) "
         "FROM dedupd.hold d JOIN dedupd.host o ON o.id = d.host_id WHERE d.shard_id = s.id), ''), ' ' "
         "ORDER BY s.hash) FROM dedupd.shard s WHERE s." +
         std::string(array_column) + " @> ARRAY[" + id_expr + "])";
}

}  // namespace dedupd::fleet::sql
