#include "daemon/api/global_dedup.hpp"

#include <algorithm>

namespace dedupd::daemon::http {

namespace {

std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) {
  return a > shard::kNoExpiry - b ? shard::kNoExpiry : a + b;
}

// The keyed forms sharing the key whose source lives longest (never-expiring
// first, then most xorbs): the one answer a client can use longest.
std::vector<const StoredXorb*> best_keyed_group(std::span<const StoredXorb> forms) {
  auto expiry_of = [](const StoredXorb& f) { return f.expiry.value_or(shard::kNoExpiry); };
  std::vector<const StoredXorb*> best;
  std::uint64_t best_expiry = 0;
  for (const StoredXorb& candidate : forms) {
    std::vector<const StoredXorb*> group;
    std::uint64_t group_expiry = shard::kNoExpiry;
    for (const StoredXorb& f : forms)
      if (f.key == candidate.key) {
        group.push_back(&f);
        group_expiry = std::min(group_expiry, expiry_of(f));
      }
    if (best.empty() || group_expiry > best_expiry || (group_expiry == best_expiry && group.size() > best.size())) {
      best = std::move(group);
      best_expiry = group_expiry;
    }
  }
  return best;
}

}  // namespace

std::optional<std::vector<std::uint8_t>> build_global_dedup_reply(std::span<const StoredXorb> forms,
                                                                  const ReplySettings& settings) {
  if (forms.empty()) return std::nullopt;

  shard::WriteOptions options;
  options.with_footer = true;
  // As the server: no lookup tables, all their offsets = footer_offset.
  options.lookup_tables = shard::LookupTables::none_server_style;
  options.footer.creation_timestamp = settings.now;
  std::uint64_t expiry = saturating_add(settings.now, settings.lifetime_s);

  shard::ShardWriter writer;
  std::uint64_t on_disk = 0, in_xorbs = 0;
  auto add = [&](shard::XorbRecord record) {
    on_disk += record.header.bytes_on_disk;
    in_xorbs += record.header.bytes_in_xorb;
    writer.add_xorb(std::move(record));
  };

  std::vector<const StoredXorb*> raw;
  for (const StoredXorb& f : forms)
    if (f.key.is_zero()) raw.push_back(&f);

  if (!raw.empty()) {
    options.footer.chunk_hash_key = settings.key;
    std::vector<shard::Hash> seen;  // one block per xorb even if stored twice
    for (const StoredXorb* f : raw) {
      if (std::find(seen.begin(), seen.end(), f->record.header.xorb_hash) != seen.end()) continue;
      seen.push_back(f->record.header.xorb_hash);
      shard::XorbRecord rec = f->record;
      for (shard::ChunkEntry& c : rec.chunks) c.chunk_hash = shard::keyed_chunk_hash(settings.key, c.chunk_hash);
      add(std::move(rec));
    }
  } else {
    std::vector<const StoredXorb*> group = best_keyed_group(forms);
    options.footer.chunk_hash_key = group.front()->key;
    std::vector<shard::Hash> seen;
    for (const StoredXorb* f : group) {
      if (f->expiry) expiry = std::min(expiry, *f->expiry);
      if (std::find(seen.begin(), seen.end(), f->record.header.xorb_hash) != seen.end()) continue;
      seen.push_back(f->record.header.xorb_hash);
      add(f->record);
    }
  }
  options.footer.key_expiry = expiry;
  options.footer.stored_bytes_on_disk = on_disk;
  options.footer.stored_bytes = in_xorbs;
  options.footer.materialized_bytes = 0;  // no files in a reply
  return writer.write(options);
}

}  // namespace dedupd::daemon::http
