#include "daemon/api/render/fleet_json.hpp"

#include "shard/format.hpp"
#include "shard/reader.hpp"

namespace dedupd::daemon::api::render {

using fleet_link::Reach;

void write_fleet_reach(JsonOut& out, Reach reach) {
  if (reach == Reach::off) return;
  out.raw(",").key("fleet").raw(reach == Reach::answered ? "\"ok\"" : "\"unavailable\"");
}

void mark_fleet(Json& doc, Reach reach) {
  if (reach != Reach::off) doc["fleet"] = reach == Reach::answered ? "ok" : "unavailable";
}

void write_fleet_shard_refs(JsonOut& out, const fleet::ChunkLocation& loc,
                            const std::vector<fleet::FleetShardRef>& shards) {
  out.ch('[');
  for (std::size_t i = 0; i < shards.size(); ++i) {
    if (i) out.ch(',');
    out.raw("{").key("shard").hash(shards[i].shard).raw(",").key("keyed").boolean(loc.keyed).raw(",");
    out.key("holders").ch('[');
    for (std::size_t h = 0; h < shards[i].holders.size(); ++h) {
      if (h) out.ch(',');
      // Host names are [A-Za-z0-9._-] (fleet/host_name.hpp): nothing to escape.
      out.ch('"').raw(shards[i].holders[h]).ch('"');
    }
    out.ch(']');
    // As a local ref: said only when known. Another host wrote it, so it is
    // escaped rather than trusted to be a normalized URL.
    if (!shards[i].cas.empty()) out.raw(",").key("cas").raw(Json(shards[i].cas).dump());
    out.ch('}');
  }
  out.ch(']');
}

void write_fleet_location(JsonOut& out, const fleet::ChunkLocation& loc,
                          const std::vector<fleet::FleetShardRef>& shards) {
  write_location_head(out, loc, "fleet");
  write_fleet_shard_refs(out, loc, shards);
  out.ch('}');
}

Json fleet_shard_refs_json(const std::vector<fleet::FleetShardRef>& shards) {
  Json out = Json::array();
  for (const auto& s : shards) {
    Json ref = {{"shard", s.shard.to_string()}, {"holders", s.holders}};
    if (!s.cas.empty()) ref["cas"] = s.cas;
    out.push_back(std::move(ref));
  }
  return out;
}

Json fleet_xorb_json(const fleet::XorbAnswer& answer, const fleet::XorbForm& form) {
  Json doc = {{"xorb", answer.hash.to_string()}, {"origin", "fleet"}, {"keyed", form.keyed}};
  const auto& b = form.cas_block;
  if (b.size() >= shard::kEntrySize) {
    shard::XorbHeader h = shard::XorbHeader::decode(b.data());
    std::size_t n = b.size() / shard::kEntrySize - 1;
    Json chunks = Json::array();
    for (std::size_t i = 0; i < n; ++i) {
      shard::ChunkEntry c = shard::ChunkEntry::decode(b.data() + shard::kEntrySize * (i + 1));
      chunks.push_back({{"index", i},
                        {"hash", c.chunk_hash.to_string()},
                        {"byte_start", c.byte_start},
                        {"unpacked_bytes", c.unpacked_bytes},
                        {"flags", c.flags}});
    }
    doc["num_chunks"] = n;
    doc["bytes_in_xorb"] = h.bytes_in_xorb;
    doc["bytes_on_disk"] = h.bytes_on_disk;
    doc["chunks"] = std::move(chunks);
  }
  doc["shards"] = fleet_shard_refs_json(form.shards);
  return doc;
}

Json fleet_file_json(const fleet::FileAnswer& f) {
  Json doc = {{"file", f.hash.to_string()},
              {"origin", "fleet"},
              {"sha256", f.sha256 ? Json(f.sha256->to_string()) : Json(nullptr)}};
  if (f.block.size() >= shard::kEntrySize) {
    shard::FileBlock block(f.block.data(), 0);
    Json terms = Json::array();
    std::uint64_t size = 0;
    // The server stored the block as the publishing shard had it; count
    // only terms that fit in it.
    std::size_t fit = f.block.size() / shard::kEntrySize - 1;
    for (std::uint32_t i = 0; i < block.num_terms() && i < fit; ++i) {
      shard::FileTerm t = block.term(i);
      size += t.unpacked_bytes;
      terms.push_back({{"xorb", t.xorb_hash.to_string()},
                       {"chunk_start", t.chunk_start},
                       {"chunk_end", t.chunk_end},
                       {"unpacked_bytes", t.unpacked_bytes}});
    }
    doc["size"] = size;
    doc["verification"] = block.has_verification();
    doc["terms"] = std::move(terms);
  }
  doc["shards"] = fleet_shard_refs_json(f.shards);
  return doc;
}

Json publisher_json(const fleet_link::PublisherState& s) {
  auto opt = [](const std::optional<std::uint64_t>& v) { return v ? Json(*v) : Json(nullptr); };
  Json parked = Json::array();
  for (const auto& p : s.parked_items)
    parked.push_back({{"op", p.op}, {"shard", p.shard}, {"reason", p.reason}, {"parked_at", p.parked_at}});
  return {{"state", fleet_link::to_string(s.state)},
          {"host", s.host},
          {"outbox", {{"depth", s.outbox_depth}, {"oldest_age_s", opt(s.outbox_oldest_age_s)}, {"parked", s.parked}}},
          {"parked", std::move(parked)},
          {"anti_entropy",
           {{"passes", s.reconcile_passes},
            {"published", s.reconciled_publish},
            {"dropped", s.reconciled_drop},
            {"last_pass", opt(s.last_reconcile)}}},
          {"set_aside",
           {{"marks", s.set_aside_marks}, {"applied", s.set_aside_applied}, {"restored", s.set_aside_restored}}},
          {"published", s.published},
          {"replays", s.replays},
          {"drops", s.drops},
          {"expired", s.expired},
          {"failures", s.failures},
          {"last_contact", opt(s.last_contact)},
          {"last_error", s.last_error.empty() ? Json(nullptr) : Json(s.last_error)},
          {"last_error_at", opt(s.last_error_at)},
          {"primary", s.primary.empty() ? Json(nullptr) : Json(s.primary)},
          {"lookup_memory",
           {{"key_filters",
             {{"bytes", s.lookup_memory.key_filter_bytes},
              {"max_bytes", s.lookup_memory.key_filter_max_bytes},
              {"keys", s.lookup_memory.key_filters},
              {"entries", s.lookup_memory.key_filter_entries},
              {"keys_over_budget", s.lookup_memory.keys_over_budget},
              {"thinnest_bits_per_entry", s.lookup_memory.thinnest_bits},
              {"raw_entries", s.lookup_memory.raw_filter_entries},
              {"raw_bits_per_entry", s.lookup_memory.raw_filter_bits},
              {"raw_over_budget", s.lookup_memory.raw_filter_over_budget}}},
            {"xorb_cache",
             {{"bytes", s.lookup_memory.xorb_cache_bytes}, {"max_bytes", s.lookup_memory.xorb_cache_max_bytes}}}}},
          {"failover",
           {{"seen", s.failovers},
            {"last_at", opt(s.last_failover)},
            {"from", s.last_failover_from.empty() ? Json(nullptr) : Json(s.last_failover_from)}}}};
}

}  // namespace dedupd::daemon::api::render
