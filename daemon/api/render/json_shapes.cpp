#include "daemon/api/render/json_shapes.hpp"

namespace dedupd::daemon::api::render {

namespace {

Json opt(const std::optional<std::uint64_t>& v) { return v ? Json(*v) : Json(nullptr); }

Json hashes(const std::vector<index::Hash>& v) {
  Json out = Json::array();
  for (const auto& h : v) out.push_back(h.to_string());
  return out;
}

}  // namespace

std::string dump(const Json& doc) { return doc.dump(-1, ' ', false, Json::error_handler_t::replace); }

void write_shard_refs(JsonOut& out, const std::vector<index::ShardRef>& shards) {
  out.ch('[');
  bool first = true;
  for (const auto& s : shards) {
    if (!first) out.ch(',');
    first = false;
    out.raw("{").key("shard").hash(s.shard).raw(",").key("expiry").opt_num(s.expiry).raw(",").key("keyed").boolean(
        s.keyed);
    // Said only when known, so answers of unscoped shards stay as short.
    // A CAS is normalized (xetcache/cas_url.hpp): nothing in it needs escaping.
    if (!s.cas.empty()) out.raw(",").key("cas").ch('"').raw(s.cas).ch('"');
    if (s.set_aside) out.raw(",").key("set_aside").boolean(true);
    out.ch('}');
  }
  out.ch(']');
}

void write_location(JsonOut& out, const index::Location& loc) {
  write_location_head(out, loc, "local");
  write_shard_refs(out, loc.shards);
  out.ch('}');
}

void write_location(JsonOut& out, const index::BatchLocation& loc, const std::vector<index::ShardRef>& shards) {
  write_location_head(out, loc, "local");
  write_shard_refs(out, shards);
  out.ch('}');
}

Json shard_ref_json(const index::ShardRef& ref) {
  Json j = {{"shard", ref.shard.to_string()}, {"expiry", opt(ref.expiry)}, {"keyed", ref.keyed}};
  if (!ref.cas.empty()) j["cas"] = ref.cas;
  if (ref.set_aside) j["set_aside"] = true;
  return j;
}

Json shard_summary(const index::ShardInfo& info) {
  return {
      {"hash", info.hash.to_string()},
      {"state", index::to_string(info.state)},
      {"paths", info.paths},
      {"size", info.size},
      {"created", opt(info.created)},
      {"expiry", opt(info.expiry)},
      {"keyed", info.keyed},
      {"xorbs", info.xorbs},
      {"chunks", info.chunks},
      {"files", info.files},
      {"ingested_at", info.ingested_at},
      {"cas", info.cas.empty() ? Json(nullptr) : Json(info.cas)},
      {"set_aside",
       info.set_aside ? Json{{"at", info.set_aside_at}, {"reason", info.set_aside_reason}} : Json(nullptr)},
  };
}

Json rejected_summary(const index::RejectInfo& r) {
  // A rejected file has no shard identity beyond its content hash, which
  // the daemon may not have computed: then "hash" is null.
  return {
      {"hash", r.content_hash ? Json(r.content_hash->to_string()) : Json(nullptr)},
      {"state", "rejected"},
      {"paths", Json::array({r.path})},
      {"size", r.size},
      {"created", nullptr},
      {"expiry", nullptr},
      {"keyed", false},
      {"xorbs", 0},
      {"chunks", 0},
      {"files", 0},
      {"ingested_at", r.recorded_at},
      {"cas", nullptr},
      {"set_aside", nullptr},
      {"reason", {{"rule", r.rule}, {"offset", r.offset}, {"message", r.message}}},
  };
}

Json stats_json(const index::Stats& s) {
  return {
      {"shards",
       {{"live", s.shards_live},
        {"expired", s.shards_expired},
        {"removed", s.shards_removed},
        {"rejected", s.rejected}}},
      {"xorbs", s.xorbs},
      {"chunks", s.chunk_entries},
      {"files", s.files},
      {"keys", s.keys},
      {"db_bytes", s.db_bytes},
      {"map_size", s.map_size},
      {"map_used", s.map_used},
      {"next_expiry", opt(s.next_expiry)},
      {"chunk_filter",
       {{"in_service", s.chunk_filter.in_service},
        {"bytes", s.chunk_filter.bytes},
        {"max_bytes", s.chunk_filter.max_bytes},
        {"capacity", s.chunk_filter.capacity},
        {"entries", s.chunk_filter.added},
        {"at_bound", s.chunk_filter.at_bound},
        {"false_positive_rate", s.chunk_filter.false_positive_rate}}},
  };
}

Json xorb_json(const index::XorbInfo& form) {
  Json chunks = Json::array();
  for (std::size_t i = 0; i < form.chunks.size(); ++i) {
    const auto& c = form.chunks[i];
    chunks.push_back({{"index", i},
                      {"hash", c.chunk_hash.to_string()},
                      {"byte_start", c.byte_start},
                      {"unpacked_bytes", c.unpacked_bytes},
                      {"flags", c.flags}});
  }
  Json shards = Json::array();
  for (const auto& s : form.shards) shards.push_back(shard_ref_json(s));
  return {
      {"xorb", form.hash.to_string()},
      {"num_chunks", form.chunks.size()},
      {"bytes_in_xorb", form.header.bytes_in_xorb},
      {"bytes_on_disk", form.header.bytes_on_disk},
      {"keyed", form.keyed},
      {"origin", "local"},
      {"chunks", std::move(chunks)},
      {"shards", std::move(shards)},
  };
}

Json file_json(const index::FileInfo& f) {
  Json terms = Json::array();
  for (const auto& t : f.terms)
    terms.push_back({{"xorb", t.xorb_hash.to_string()},
                     {"chunk_start", t.chunk_start},
                     {"chunk_end", t.chunk_end},
                     {"unpacked_bytes", t.unpacked_bytes}});
  return {
      {"file", f.hash.to_string()},
      {"size", f.size},
      // Stored like a Xet hash of the digest: its Xet string form is the
      // ordinary sha256 hex (FORMAT-NOTES).
      {"sha256", f.sha256 ? Json(f.sha256->to_string()) : Json(nullptr)},
      {"verification", !f.verification.empty()},
      {"terms", std::move(terms)},
      {"origin", "local"},
      {"shards", hashes(f.shards)},
  };
}

}  // namespace dedupd::daemon::api::render
