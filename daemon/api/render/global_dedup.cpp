#include "daemon/api/render/global_dedup.hpp"

#include "shard/keys.hpp"
#include "shard/writer.hpp"

namespace dedupd::daemon::api::render {

std::vector<std::uint8_t> global_dedup_reply_bytes(answers::GlobalDedupReply reply) {
  shard::ShardWriter writer;
  std::uint64_t on_disk = 0, in_xorbs = 0;
  for (shard::XorbRecord& rec : reply.xorbs) {
    if (reply.rekey)
      for (shard::ChunkEntry& c : rec.chunks) c.chunk_hash = shard::keyed_chunk_hash(reply.key, c.chunk_hash);
    on_disk += rec.header.bytes_on_disk;
    in_xorbs += rec.header.bytes_in_xorb;
    writer.add_xorb(std::move(rec));
  }
  shard::WriteOptions options;
  options.with_footer = true;
  // As the server: no lookup tables, all their offsets = footer_offset.
  options.lookup_tables = shard::LookupTables::none_server_style;
  options.footer.creation_timestamp = reply.created;
  options.footer.chunk_hash_key = reply.key;
  options.footer.key_expiry = reply.expiry;
  options.footer.stored_bytes_on_disk = on_disk;
  options.footer.stored_bytes = in_xorbs;
  options.footer.materialized_bytes = 0;  // no files in a reply
  return writer.write(options);
}

}  // namespace dedupd::daemon::api::render
