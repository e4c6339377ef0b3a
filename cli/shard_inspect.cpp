#include "cli/shard_inspect.hpp"

#include <ostream>

#include "cli/context.hpp"
#include "cli/output.hpp"
#include "shard/format.hpp"
#include "shard/keys.hpp"

namespace dedupctl {

namespace shard = dedupd::shard;
using json = nlohmann::ordered_json;

namespace {

json expiry_json(std::uint64_t raw) {
  // 0 (unset, as the JavaScript client leaves it) and UINT64_MAX both mean
  // "never"; anything else is a unix time.
  if (raw == 0 || raw == shard::kNoExpiry) return nullptr;
  return raw;
}

}  // namespace

json inspect_document(const shard::ShardView& view, const std::string& path, std::uint64_t now) {
  json doc;
  doc["path"] = path;
  doc["size"] = view.bytes().size();
  doc["shard_hash"] = shard::shard_file_hash(view.bytes()).to_string();
  doc["header"] = {{"version", view.header().version}, {"footer_size", view.header().footer_size}};

  if (const auto& f = view.footer()) {
    const json expiry = expiry_json(f->key_expiry);
    doc["footer"] = {
        {"version", f->version},
        {"offset", f->footer_offset},
        {"file_info_offset", f->file_info_offset},
        {"cas_info_offset", f->cas_info_offset},
        {"file_lookup_offset", f->file_lookup_offset},
        {"file_lookup_num_entry", f->file_lookup_num_entry},
        {"xorb_lookup_offset", f->xorb_lookup_offset},
        {"xorb_lookup_num_entry", f->xorb_lookup_num_entry},
        {"chunk_lookup_offset", f->chunk_lookup_offset},
        {"chunk_lookup_num_entry", f->chunk_lookup_num_entry},
        {"creation_timestamp", f->creation_timestamp},
        {"created", iso_utc(f->creation_timestamp)},
        {"key_expiry", f->key_expiry},
        {"expiry", expiry},
        {"expires", expiry.is_null() ? "never" : iso_utc(f->key_expiry)},
        {"expired", f->expired_at(now)},
        {"stored_bytes_on_disk", f->stored_bytes_on_disk},
        {"materialized_bytes", f->materialized_bytes},
        {"stored_bytes", f->stored_bytes},
    };
    // Same name and form as the fixture's expected JSON.
    doc["hmac_key"] = f->chunk_hash_key.to_string();
  } else {
    doc["footer"] = nullptr;
    doc["hmac_key"] = nullptr;
  }
  doc["keyed"] = view.keyed();
  doc["lookup"] = {
      {"files", view.file_lookup_size()}, {"xorbs", view.xorb_lookup_size()}, {"chunks", view.chunk_lookup_size()}};
  const auto& st = view.stats();
  doc["counts"] = {{"files", st.files}, {"terms", st.terms}, {"xorbs", st.xorbs}, {"chunks", st.chunks}};

  json files = json::array();
  for (shard::FileBlock fb : view.files()) {
    json terms = json::array();
    std::uint64_t size = 0;
    for (std::uint32_t i = 0; i < fb.num_terms(); ++i) {
      shard::FileTerm t = fb.term(i);
      size += t.unpacked_bytes;
      json term = {{"xorb", t.xorb_hash.to_string()},
                   {"chunk_start", t.chunk_start},
                   {"chunk_end", t.chunk_end},
                   {"unpacked_bytes", t.unpacked_bytes},
                   {"flags", t.flags}};
      if (fb.has_verification()) term["range_hash"] = fb.verification(i).hash.to_string();
      terms.push_back(std::move(term));
    }
    auto sha = fb.sha256();
    files.push_back({{"hash", fb.hash().to_string()},
                     {"offset", fb.offset()},
                     {"flags", fb.header().flags},
                     {"verification", fb.has_verification()},
                     {"sha256", sha ? json(sha->to_string()) : json(nullptr)},
                     {"size", size},
                     {"terms", std::move(terms)}});
  }
  doc["files"] = std::move(files);

  json xorbs = json::array();
  for (shard::XorbBlock xb : view.xorbs()) {
    json hashes = json::array();
    json chunks = json::array();
    std::uint64_t unpacked = 0;
    for (std::uint32_t i = 0; i < xb.num_chunks(); ++i) {
      shard::ChunkEntry c = xb.chunk(i);
      unpacked += c.unpacked_bytes;
      hashes.push_back(c.chunk_hash.to_string());
      chunks.push_back({{"byte_start", c.byte_start},
                        {"unpacked_bytes", c.unpacked_bytes},
                        {"flags", c.flags},
                        {"eligible", c.global_dedup_eligible()}});
    }
    const auto& h = xb.header();
    xorbs.push_back({{"hash", h.xorb_hash.to_string()},
                     {"offset", xb.offset()},
                     {"flags", h.flags},
                     {"num_chunks", h.num_entries},
                     {"bytes_in_xorb", h.bytes_in_xorb},
                     {"bytes_on_disk", h.bytes_on_disk},
                     {"unpacked_bytes", unpacked},
                     {"chunk_hashes", std::move(hashes)},
                     {"chunks", std::move(chunks)}});
  }
  doc["xorbs"] = std::move(xorbs);
  return doc;
}

namespace {

std::string when(const json& unix_s, std::uint64_t now) {
  const std::uint64_t t = unix_s.get<std::uint64_t>();
  return iso_utc(t) + " (unix " + std::to_string(t) + ", " + relative(std::int64_t(t) - std::int64_t(now)) + ")";
}

}  // namespace

void print_inspect(Context& ctx, const json& doc, bool list_chunks, std::uint64_t now) {
  std::ostream& out = ctx.out();
  const Style& s = ctx.style;
  const auto& counts = doc["counts"];

  Fields f;
  f.add("Shard", doc["path"].get<std::string>());
  f.add("Size", grouped(doc["size"]) + " bytes (" + human_bytes(doc["size"]) + ")");
  f.add("Shard hash", doc["shard_hash"].get<std::string>());
  f.add("Header", "version " + std::to_string(doc["header"]["version"].get<std::uint64_t>()) + ", footer size " +
                      std::to_string(doc["header"]["footer_size"].get<std::uint64_t>()));
  const json& ft = doc["footer"];
  if (ft.is_null()) {
    f.add("Footer", "none (upload shard)");
  } else {
    f.add("Footer", "version " + std::to_string(ft["version"].get<std::uint64_t>()) + " at offset " +
                        std::to_string(ft["offset"].get<std::uint64_t>()));
    f.add("Created", when(ft["creation_timestamp"], now));
    if (ft["expiry"].is_null()) {
      f.add("Expires", "never (key_expiry " + std::to_string(ft["key_expiry"].get<std::uint64_t>()) + ")");
    } else {
      f.add("Expires", when(ft["expiry"], now) + (ft["expired"].get<bool>() ? ", EXPIRED" : ""),
            ft["expired"].get<bool>() ? Color::yellow : Color::none);
    }
    f.add("Chunk key", doc["hmac_key"].get<std::string>() +
                           (doc["keyed"].get<bool>() ? " (chunk hashes keyed)" : " (zero: raw hashes)"));
    f.add("Sections", "file info @" + std::to_string(ft["file_info_offset"].get<std::uint64_t>()) + ", CAS @" +
                          std::to_string(ft["cas_info_offset"].get<std::uint64_t>()) + ", footer @" +
                          std::to_string(ft["offset"].get<std::uint64_t>()));
    f.add("Lookup tables", count(doc["lookup"]["files"], "file") + ", " + count(doc["lookup"]["xorbs"], "xorb") + ", " +
                               count(doc["lookup"]["chunks"], "chunk"));
    f.add("Byte totals", human_bytes(ft["stored_bytes_on_disk"]) + " on disk, " +
                             human_bytes(ft["materialized_bytes"]) + " materialized, " +
                             human_bytes(ft["stored_bytes"]) + " stored");
  }
  f.add("Contents", count(counts["files"], "file") + " (" + count(counts["terms"], "term") + "), " +
                        count(counts["xorbs"], "xorb") + ", " + count(counts["chunks"], "chunk"));
  f.print(out, s);

  out << '\n' << s.paint("Xorbs (" + grouped(counts["xorbs"]) + ")", Color::bold) << '\n';
  if (doc["xorbs"].empty()) out << "  none\n";
  Table xt({{"#", Table::right},
            {"HASH"},
            {"CHUNKS", Table::right},
            {"UNPACKED", Table::right},
            {"IN XORB", Table::right},
            {"ON DISK", Table::right}},
           "  ");
  std::size_t i = 0;
  for (const auto& x : doc["xorbs"]) {
    xt.add({std::to_string(i++), x["hash"].get<std::string>(), grouped(x["num_chunks"]),
            human_bytes(x["unpacked_bytes"]), human_bytes(x["bytes_in_xorb"]), human_bytes(x["bytes_on_disk"])});
  }
  if (!doc["xorbs"].empty() && !list_chunks) xt.print(out, s);
  if (list_chunks) {
    i = 0;
    for (const auto& x : doc["xorbs"]) {
      out << "  " << s.paint("xorb " + std::to_string(i++), Color::bold) << ' ' << x["hash"].get<std::string>() << "  "
          << grouped(x["num_chunks"]) << " chunks, " << human_bytes(x["unpacked_bytes"]) << '\n';
      Table ct({{"#", Table::right}, {"HASH (as stored)"}, {"START", Table::right}, {"SIZE", Table::right}, {"FLAGS"}},
               "    ");
      for (std::size_t c = 0; c < x["chunk_hashes"].size(); ++c) {
        const auto& ch = x["chunks"][c];
        ct.add({std::to_string(c), x["chunk_hashes"][c].get<std::string>(), grouped(ch["byte_start"]),
                grouped(ch["unpacked_bytes"]), ch["eligible"].get<bool>() ? "eligible" : ""});
      }
      ct.print(out, s);
    }
  }

  out << '\n' << s.paint("Files (" + grouped(counts["files"]) + ")", Color::bold) << '\n';
  if (doc["files"].empty()) out << "  none\n";
  for (const auto& file : doc["files"]) {
    std::string line = "  " + file["hash"].get<std::string>() + "  " + human_bytes(file["size"]) + ", " +
                       count(file["terms"].size(), "term");
    if (file["verification"].get<bool>()) line += ", verified";
    out << line << '\n';
    if (!file["sha256"].is_null()) out << "    sha256 " << file["sha256"].get<std::string>() << '\n';
    Table tt({{"#", Table::right}, {"XORB"}, {"CHUNKS", Table::right}, {"UNPACKED", Table::right}}, "    ");
    std::size_t t = 0;
    for (const auto& term : file["terms"]) {
      tt.add({std::to_string(t++), term["xorb"].get<std::string>(),
              std::to_string(term["chunk_start"].get<std::uint64_t>()) + ".." +
                  std::to_string(term["chunk_end"].get<std::uint64_t>()),
              human_bytes(term["unpacked_bytes"])});
    }
    if (tt.size()) tt.print(out, s);
  }
}

}  // namespace dedupctl
