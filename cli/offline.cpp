// inspect and verify: the shard library's view of one file, for people
// (aligned summary) and scripts (--json). No daemon, no socket.
#include <CLI/CLI.hpp>

#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cli/bundle_verbs.hpp"
#include "cli/context.hpp"
#include "cli/exit_codes.hpp"
#include "cli/output.hpp"
#include "cli/shard_inspect.hpp"
#include "cli/verbs.hpp"
#include "shard/mapped_file.hpp"
#include "shard/reader.hpp"
#include "shard/verify.hpp"

namespace dedupctl {

namespace base = dedupd::base;
namespace shard = dedupd::shard;
using json = nlohmann::ordered_json;

namespace {

struct LoadedShard {
  shard::MappedFile file;
  std::optional<shard::ShardView> view;
  std::optional<base::Error> error;  // why view is empty
};

// Opening or parsing failures are the user's input, not ours: exit 65.
LoadedShard load(const std::string& path, bool structure_errors_fatal) {
  LoadedShard s;
  auto m = shard::MappedFile::open(path);
  if (!m) throw CliError(kBadInput, m.error().message);
  s.file = std::move(m.value());
  auto v = shard::ShardView::parse(s.file.bytes());
  if (v) {
    s.view = std::move(v.value());
  } else {
    s.error = v.error();
  }
  if (!v && structure_errors_fatal) {
    throw CliError(kBadInput, path + ": " + v.error().to_string());
  }
  return s;
}

int inspect(Context& ctx, const std::string& path, bool list_chunks) {
  const std::uint64_t now = now_s();
  if (auto code = inspect_if_bundle(ctx, path, list_chunks, now)) return *code;
  LoadedShard s = load(path, true);
  json doc = inspect_document(*s.view, path, now);
  if (ctx.opt.json) {
    print_json(ctx.out(), doc);
  } else if (!ctx.opt.quiet) {
    print_inspect(ctx, doc, list_chunks, now);
  }
  return kOk;
}

struct Problem {
  std::string rule;
  std::uint64_t offset;
  std::string message;
};

int verify(Context& ctx, const std::string& path) {
  LoadedShard s = load(path, false);
  std::vector<Problem> problems;
  // Structure stops at its first problem; the integrity checks (xorb
  // hashes, verification entries, term sizes, lookup tables, <hash>.mdb
  // name) then report every problem they find.
  for (auto& e : shard::verify_shard(s.file.bytes(), std::string_view(path)))
    problems.push_back({std::move(e.rule), e.offset, std::move(e.message)});
  if (ctx.opt.json) {
    json list = json::array();
    for (const auto& p : problems) list.push_back({{"rule", p.rule}, {"offset", p.offset}, {"message", p.message}});
    print_json(ctx.out(), {{"path", path}, {"ok", problems.empty()}, {"problems", std::move(list)}});
  } else if (!ctx.opt.quiet) {
    // One line per problem, greppable: "rule at offset N: message".
    for (const auto& p : problems) ctx.out() << p.rule << " at offset " << p.offset << ": " << p.message << '\n';
    if (problems.empty()) ctx.out() << path << ": " << ctx.style.paint("ok", Color::green) << '\n';
  }
  return problems.empty() ? kOk : kBadInput;
}

}  // namespace

void add_offline_verbs(CLI::App& app, Action& action) {
  auto file = std::make_shared<std::string>();
  auto chunks = std::make_shared<bool>(false);

  auto* in = app.add_subcommand("inspect", "Show what a shard file or .caf bundle holds (no daemon needed)");
  in->add_option("FILE", *file, "Shard file (.mdb) or CAF bundle (.caf)")->required();
  in->add_flag("--chunks", *chunks, "List every chunk of every xorb");
  in->callback(
      [&action, file, chunks] { action = [file, chunks](Context& ctx) { return inspect(ctx, *file, *chunks); }; });

  auto* ve = app.add_subcommand("verify", "Run every structural and integrity check on a shard file");
  ve->add_option("FILE", *file, "Shard file (.mdb)")->required();
  ve->callback([&action, file] { action = [file](Context& ctx) { return verify(ctx, *file); }; });
}

}  // namespace dedupctl
