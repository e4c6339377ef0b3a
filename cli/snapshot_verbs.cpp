// export and lookup-snapshot. The snapshot is a Software Heritage read
// shard (swh/read_shard.hpp): key = raw chunk hash, value = every location
// of the chunk (swh/location.hpp). dedupd writes it (POST /v1/admin/export);
// this file only downloads it atomically and reads it with cmph.
#include "cli/snapshot_verbs.hpp"

#include <CLI/CLI.hpp>

#include <memory>
#include <ostream>
#include <vector>

#include "api/routes.hpp"
#include "cli/atomic_file.hpp"
#include "cli/client.hpp"
#include "cli/context.hpp"
#include "cli/daemon_verbs.hpp"
#include "cli/exit_codes.hpp"
#include "cli/output.hpp"
#include "swh/read_shard.hpp"

namespace dedupctl {

namespace api = dedupd::api;
namespace swh = dedupd::swh;
using dedupd::shard::Hash;
using json = nlohmann::ordered_json;

namespace {

constexpr std::string_view kSwhShard = "swh-shard";
// An export of a large index takes a while; --timeout overrides this.
constexpr double kExportTimeoutS = 3600;

// ---- export ---------------------------------------------------------------

int export_snapshot(Context& ctx, const std::string& out_path, double timeout_s) {
  Client client(socket_of(ctx), timeout_s);
  const std::string what = "export";
  AtomicFile out(out_path);
  Response r = client.post_to_fd(std::string(api::kExport) + "?format=" + std::string(kSwhShard), out.fd());
  // 404: the index holds no raw chunk; say so in the daemon's words.
  if (r.status == 404) throw CliError(kNotFound, what + ": " + error_message(r));
  if (r.status != 200) throw status_error(r, what);
  // Check what arrived before it takes the name: a cut or garbled answer
  // must not leave a file that looks like a snapshot.
  auto reader = swh::Reader::open(out.temp_path());
  if (!reader)
    throw CliError(kProtocol, what + ": dedupd's answer (" + std::to_string(r.body_bytes) +
                                  " bytes) is not a valid read shard: " + reader.error().to_string());
  const std::uint64_t keys = reader->header().objects_count;
  out.commit();
  if (ctx.opt.json) {
    print_json(ctx.out(), {{"path", out_path}, {"format", kSwhShard}, {"keys", keys}, {"bytes", r.body_bytes}});
  } else if (!ctx.opt.quiet) {
    ctx.out() << "wrote " << out_path << ": " << count(keys, "key") << " (raw chunk " << (keys == 1 ? "hash" : "hashes")
              << "), " << grouped(r.body_bytes) << " bytes (" << human_bytes(r.body_bytes) << ")\n";
  }
  return kOk;
}

// ---- lookup-snapshot ------------------------------------------------------

struct Answer {
  std::string hash;
  std::vector<swh::Location> locations;
};

json result_json(const Answer& a) {
  json locs = json::array();
  for (const auto& l : a.locations) locs.push_back(snapshot_location_json(l));
  return {{"hash", a.hash}, {"found", !a.locations.empty()}, {"locations", std::move(locs)}};
}

std::string range_text(const swh::Location& l) {
  return std::to_string(l.byte_start) + ".." + std::to_string(l.byte_end);
}

void print_detail(Context& ctx, const Answer& a) {
  std::ostream& out = ctx.out();
  const Style& s = ctx.style;
  if (a.locations.empty()) {
    out << a.hash << "  " << s.paint("not found", Color::red) << '\n';
    return;
  }
  out << a.hash << "  " << s.paint("found", Color::green) << ", " << a.locations.size()
      << (a.locations.size() == 1 ? " location" : " locations") << '\n';
  for (const auto& l : a.locations) {
    out << '\n';
    Fields f("  ");
    f.add("Xorb", l.xorb.to_string());
    f.add("Chunk", "#" + std::to_string(l.chunk_index) + ", bytes " + range_text(l) + " of the xorb, " +
                       human_bytes(l.unpacked_size) + " unpacked");
    f.print(out, s);
  }
}

void print_table(Context& ctx, const std::vector<Answer>& answers, std::uint64_t found, std::uint64_t missing) {
  Table t({{"CHUNK"}, {"XORB"}, {"#", Table::right}, {"BYTES", Table::right}, {"SIZE", Table::right}});
  for (const auto& a : answers) {
    if (a.locations.empty()) {
      t.add({a.hash, Table::Cell("not found", Color::red)});
      continue;
    }
    for (const auto& l : a.locations)
      t.add({a.hash, l.xorb.to_string(), std::to_string(l.chunk_index), range_text(l), human_bytes(l.unpacked_size)});
  }
  t.print(ctx.out(), ctx.style);
  ctx.out() << '\n'
            << ctx.style.paint(grouped(found) + " found", found ? Color::green : Color::none) << ", "
            << ctx.style.paint(grouped(missing) + " missing", missing ? Color::red : Color::none) << '\n';
}

int lookup_snapshot(Context& ctx, const std::string& path, const std::vector<std::string>& args) {
  // Every hash is checked before the file is opened: a typo is 65 at once.
  auto [hashes, from_stdin] = chunk_hash_args(ctx, args);
  auto reader = swh::Reader::open(path);
  if (!reader) throw CliError(kBadInput, path + ": " + reader.error().to_string());

  std::vector<Answer> answers;
  answers.reserve(hashes.size());
  std::uint64_t found = 0, missing = 0;
  for (const auto& h : hashes) {
    const Hash key = Hash::parse(h).value();  // parse_hash_arg/read_hashes checked it
    auto object = reader->lookup(key.bytes);
    if (!object) throw CliError(kBadInput, path + ": " + object.error().to_string());
    Answer a{h, {}};
    if (object->has_value()) {
      auto locs = swh::decode_locations(**object);
      if (!locs) throw CliError(kBadInput, path + ": the record of " + h + ": " + locs.error().to_string());
      a.locations = std::move(*locs);
    }
    (a.locations.empty() ? missing : found) += 1;
    answers.push_back(std::move(a));
  }

  if (args.size() == 1 && !from_stdin) {
    if (ctx.opt.json) print_json(ctx.out(), result_json(answers[0]));
    else if (!ctx.opt.quiet) print_detail(ctx, answers[0]);
  } else if (ctx.opt.json) {
    json results = json::array();
    for (const auto& a : answers) results.push_back(result_json(a));
    print_json(ctx.out(), {{"results", std::move(results)}, {"found", found}, {"missing", missing}});
  } else if (!ctx.opt.quiet) {
    print_table(ctx, answers, found, missing);
  }
  return missing ? kNotFound : kOk;
}

}  // namespace

json snapshot_location_json(const swh::Location& l) {
  return {{"xorb", l.xorb.to_string()},
          {"chunk_index", l.chunk_index},
          {"byte_start", l.byte_start},
          {"byte_end", l.byte_end},
          {"unpacked_bytes", l.unpacked_size}};
}

void add_snapshot_verbs(CLI::App& app, Action& action) {
  // The global --timeout, when given, bounds the export too.
  const CLI::Option* timeout = app.get_option_no_throw("--timeout");
  {
    auto format = std::make_shared<std::string>();
    auto out = std::make_shared<std::string>();
    auto* e = app.add_subcommand("export", "Admin: write the raw part of the index as a read-only snapshot file");
    e->add_option("--format", *format, "Snapshot format")->required()->check(CLI::IsMember({std::string(kSwhShard)}));
    e->add_option("OUT", *out, "File to write (atomically)")->required();
    // --format is bound to *format: the callback keeps it alive with the App
    // (freed at the end of this block otherwise, and written when parsed).
    e->callback([&action, out, format, timeout] {
      (void)format;
      action = [out, timeout](Context& ctx) {
        const bool given = timeout && timeout->count() > 0;
        return export_snapshot(ctx, *out, given ? ctx.opt.timeout_s : kExportTimeoutS);
      };
    });
  }
  {
    auto file = std::make_shared<std::string>();
    auto hashes = std::make_shared<std::vector<std::string>>();
    auto* l = app.add_subcommand("lookup-snapshot",
                                 "Look chunk hashes up in a snapshot file written by export (no daemon needed)");
    l->add_option("FILE", *file, "Snapshot (swh-shard) file")->required();
    l->add_option("HASH", *hashes, "Raw chunk hashes (Xet string form); - reads them from stdin")->required();
    l->callback([&action, file, hashes] {
      action = [file, hashes](Context& ctx) { return lookup_snapshot(ctx, *file, *hashes); };
    });
  }
}

}  // namespace dedupctl
