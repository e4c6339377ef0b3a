#include "daemon/api/render/lookup_json.hpp"

#include "daemon/api/http/http.hpp"
#include "daemon/api/render/fleet_json.hpp"

namespace dedupd::daemon::api::render {

std::string chunk_json(const shard::Hash& hash, const answers::ChunkAnswer& answer) {
  const bool found = answer.found();
  const auto remote = answer.fleet_locations();
  std::string body;
  body.reserve(128 + 320 * answer.local.size());
  JsonOut out(body);
  out.raw("{").key("hash").hash(hash).raw(",").key("found").boolean(found).raw(",").key("locations").ch('[');
  for (std::size_t i = 0; i < answer.local.size(); ++i) {
    if (i) out.ch(',');
    write_location(out, answer.local[i]);
  }
  for (std::size_t i = 0; i < remote.size(); ++i) {
    if (i) out.ch(',');
    write_fleet_location(out, remote[i], answer.remote.answers.shards(remote[i]));
  }
  out.ch(']');
  write_fleet_reach(out, answer.remote.reach);
  if (!found) {
    out.raw(",").key("expired_shards").ch('[');
    for (std::size_t i = 0; i < answer.expired.size(); ++i) {
      const index::ShardInfo& s = answer.expired[i];
      if (i) out.ch(',');
      out.raw("{").key("shard").hash(s.hash).raw(",").key("keyed").boolean(s.keyed).raw(",").key("expiry");
      out.opt_num(s.expiry).raw(",").key("expired_at").num(s.ended_at).ch('}');
    }
    out.ch(']');
    // A 404 still has the lookup's shape, plus the error every 4xx carries.
    out.raw(!answer.expired.empty()
                ? R"(,"error":{"code":"not_found","message":"every shard that held this chunk has expired"})"
                : R"(,"error":{"code":"not_found","message":"chunk not in the index"})");
  }
  out.ch('}');
  return body;
}

namespace {

// The primary form, the others after it in "other_forms".
template <class Forms, class FormJson>
Json with_other_forms(const Forms& forms, std::size_t primary, FormJson&& form_json) {
  Json doc = form_json(forms[primary]);
  if (forms.size() > 1) {
    Json others = Json::array();
    for (std::size_t i = 0; i < forms.size(); ++i)
      if (i != primary) others.push_back(form_json(forms[i]));
    doc["other_forms"] = std::move(others);
  }
  return doc;
}

}  // namespace

Json xorb_answer_json(const answers::XorbAnswer& answer) {
  if (!answer.local.empty())
    return with_other_forms(answer.local, answer.primary, [](const index::XorbInfo& f) { return xorb_json(f); });
  const fleet::XorbAnswer& remote = *answer.remote;
  Json doc = with_other_forms(remote.forms, answer.primary,
                              [&](const fleet::XorbForm& f) { return fleet_xorb_json(remote, f); });
  mark_fleet(doc, answer.reach);
  return doc;
}

Json file_answer_json(const answers::FileAnswer& answer) {
  if (answer.local) return file_json(*answer.local);
  Json doc = fleet_file_json(*answer.remote);
  mark_fleet(doc, answer.reach);
  return doc;
}

Json sha256_answer_json(const shard::Hash& sha256, const answers::Sha256Answer& answer) {
  Json doc = {{"sha256", sha256.to_string()}, {"files", Json::array()}};
  for (const auto& f : answer.files) doc["files"].push_back(f.to_string());
  mark_fleet(doc, answer.reach);
  if (answer.from_fleet) doc["origin"] = "fleet";
  if (answer.files.empty())
    doc["error"] = {{"code", http::error_code(http::kNotFound)}, {"message", "no file with this sha256"}};
  return doc;
}

Json not_found_json(answers::Reach reach, std::string_view message) {
  Json doc = {{"error", {{"code", http::error_code(http::kNotFound)}, {"message", message}}}};
  mark_fleet(doc, reach);
  return doc;
}

}  // namespace dedupd::daemon::api::render
