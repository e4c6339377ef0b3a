// bundle create / bundle list / inspect of a bundle. The bundle is read
// with BundleView::parse (every rule checked once), members are zero-copy
// views of the mapped file, and each *.mdb member is shown as `inspect`
// shows a shard. Errors name the rule and the offset: exit 65.
#include "cli/bundle_verbs.hpp"

#include <CLI/CLI.hpp>

#include <ctime>
#include <filesystem>
#include <map>
#include <memory>
#include <ostream>
#include <vector>

#include "cli/atomic_file.hpp"
#include "cli/context.hpp"
#include "cli/exit_codes.hpp"
#include "cli/output.hpp"
#include "cli/shard_inspect.hpp"
#include "shard/mapped_file.hpp"
#include "shard/reader.hpp"

namespace dedupctl {

namespace base = dedupd::base;
namespace shard = dedupd::shard;
namespace caf = dedupd::shard::caf;
using json = nlohmann::ordered_json;

namespace {

bool ends_with_caf(const std::string& path) {
  const std::string ext = std::filesystem::path(path).extension().string();
  return ext == ".caf" || ext == ".CAF";
}

shard::MappedFile map(const std::string& path) {
  auto m = shard::MappedFile::open(path);
  if (!m) throw CliError(kBadInput, m.error().message);
  return std::move(m.value());
}

caf::BundleView parse_bundle(const shard::MappedFile& file, const std::string& path) {
  auto b = caf::BundleView::parse(file.bytes());
  if (!b) throw CliError(kBadInput, path + ": " + b.error().to_string());
  return std::move(b.value());
}

json member_json(const caf::Member& m) {
  return {{"name", m.name}, {"start", m.start}, {"end", m.end}, {"size", m.size()}, {"shard", m.is_shard()}};
}

void print_members(Context& ctx, const caf::BundleView& b) {
  Table t({{"NAME"}, {"START", Table::right}, {"END", Table::right}, {"SIZE", Table::right}, {"KIND"}});
  for (const auto& m : b.members())
    t.add({m.name, grouped(m.start), grouped(m.end), grouped(m.size()),
           m.is_shard() ? Table::Cell("shard") : Table::Cell("other (not ingested)", Color::dim)});
  if (t.size()) t.print(ctx.out(), ctx.style);
  else ctx.out() << "  no members\n";
}

std::string summary(const caf::BundleView& b) {
  const std::size_t shards = b.shard_members().size(), others = b.other_members().size();
  return count(b.members().size(), "member") + ": " + count(shards, "shard") + ", " + grouped(others) +
         (others == 1 ? " other" : " others");
}

// ---- bundle create --------------------------------------------------------

int create(Context& ctx, const std::string& out_path, const std::vector<std::string>& inputs) {
  std::vector<shard::MappedFile> files;
  std::vector<caf::MemberInput> members;
  std::map<std::string, std::string> seen;  // member name -> input path
  files.reserve(inputs.size());
  for (const auto& in : inputs) {
    files.push_back(map(in));
    auto v = shard::ShardView::parse(files.back().bytes());
    if (!v) throw CliError(kBadInput, in + ": not a valid shard: " + v.error().to_string());
    std::string name = std::filesystem::path(in).filename().string();
    // dedupd ingests the members named *.mdb: name the others so it does.
    if (!name.ends_with(caf::kShardSuffix)) name += caf::kShardSuffix;
    if (auto [it, fresh] = seen.emplace(name, in); !fresh)
      throw CliError(kUsage, "two inputs would both be member " + name + ": " + it->second + " and " + in,
                     "bundle files with distinct names (rename or copy one)");
    members.push_back({name, files.back().bytes()});
  }
  auto bytes = caf::write_bundle(members);
  if (!bytes) throw CliError(kBadInput, out_path + ": " + bytes.error().to_string());
  AtomicFile out(out_path);
  out.write(*bytes);
  out.commit();

  // Show what a reader sees: the bundle just written, parsed back.
  auto b = caf::BundleView::parse(*bytes);
  if (!b) throw CliError(kProtocol, "the bundle written does not parse: " + b.error().to_string());
  if (ctx.opt.json) {
    print_json(ctx.out(), bundle_document(*b, out_path));
  } else if (!ctx.opt.quiet) {
    ctx.out() << "wrote " << out_path << ": " << count(members.size(), "shard") << ", " << grouped(bytes->size())
              << " bytes (" << human_bytes(bytes->size()) << ")\n";
    for (const auto& m : members)
      if (std::filesystem::path(seen[m.name]).filename().string() != m.name)
        ctx.out() << "  " << seen[m.name] << " is member " << m.name << '\n';
  }
  return kOk;
}

// ---- bundle list ----------------------------------------------------------

int list(Context& ctx, const std::string& path) {
  shard::MappedFile file = map(path);
  caf::BundleView b = parse_bundle(file, path);
  if (ctx.opt.json) {
    print_json(ctx.out(), bundle_document(b, path));
  } else if (!ctx.opt.quiet) {
    print_members(ctx, b);
    ctx.out() << '\n'
              << summary(b) << ", index " << grouped(b.index_size()) << " bytes at " << grouped(b.index_offset())
              << '\n';
  }
  return kOk;
}

// ---- inspect of a bundle --------------------------------------------------

int inspect_bundle(Context& ctx, const caf::BundleView& b, const std::string& path, bool list_chunks,
                   std::uint64_t now) {
  json doc = bundle_document(b, path);
  std::vector<std::string> problems;
  std::vector<std::optional<json>> inspected(b.members().size());
  std::vector<std::optional<base::Error>> errors(b.members().size());
  for (std::size_t i = 0; i < b.members().size(); ++i) {
    const caf::Member& m = b.members()[i];
    if (!m.is_shard()) continue;
    auto v = shard::ShardView::parse(m.bytes);
    if (v) {
      inspected[i] = inspect_document(*v, path + ":" + m.name, now);
    } else {
      errors[i] = v.error();
      problems.push_back("member " + m.name + ": " + v.error().to_string() + " (bundle offset " +
                         std::to_string(m.start + v.error().offset) + ")");
    }
  }

  if (ctx.opt.json) {
    for (std::size_t i = 0; i < b.members().size(); ++i) {
      json& mj = doc["members"][i];
      if (inspected[i]) {
        mj["valid"] = true;
        mj["inspect"] = std::move(*inspected[i]);
      } else if (errors[i]) {
        mj["valid"] = false;
        mj["error"] = {{"rule", errors[i]->rule},
                       {"offset", errors[i]->offset},
                       {"bundle_offset", b.members()[i].start + errors[i]->offset},
                       {"message", errors[i]->message}};
      }
    }
    doc["invalid"] = problems.size();
    print_json(ctx.out(), doc);
  } else if (!ctx.opt.quiet) {
    std::ostream& out = ctx.out();
    const Style& s = ctx.style;
    Fields f;
    f.add("Bundle", path);
    f.add("Size", grouped(b.bytes().size()) + " bytes (" + human_bytes(b.bytes().size()) + ")");
    f.add("Format", "CAF " + b.format_version() + ", data " + grouped(b.data_size()) + " bytes, index " +
                        grouped(b.index_size()) + " bytes at " + grouped(b.index_offset()));
    f.add("Members", summary(b) + (problems.empty() ? "" : ", " + grouped(problems.size()) + " invalid"),
          problems.empty() ? Color::none : Color::red);
    f.print(out, s);
    out << '\n';
    print_members(ctx, b);
    for (std::size_t i = 0; i < b.members().size(); ++i) {
      const caf::Member& m = b.members()[i];
      if (!m.is_shard()) continue;
      out << '\n'
          << s.paint("Member " + m.name, Color::bold) << " (bytes " << grouped(m.start) << ".." << grouped(m.end)
          << ")\n";
      if (inspected[i]) {
        print_inspect(ctx, *inspected[i], list_chunks, now);
      } else {
        out << "  " << s.paint("invalid", Color::red) << ": " << errors[i]->to_string() << " (bundle offset "
            << (m.start + errors[i]->offset) << ")\n";
      }
    }
  }
  for (const auto& p : problems) ctx.err() << "dedupctl: " << path << ": " << p << '\n';
  return problems.empty() ? kOk : kBadInput;
}

}  // namespace

json bundle_document(const caf::BundleView& b, const std::string& path) {
  json members = json::array();
  for (const auto& m : b.members()) members.push_back(member_json(m));
  return {{"path", path},
          {"size", b.bytes().size()},
          {"format", "caf"},
          {"format_version", b.format_version()},
          {"data_size", b.data_size()},
          {"index_offset", b.index_offset()},
          {"index_size", b.index_size()},
          {"members", std::move(members)}};
}

std::optional<int> inspect_if_bundle(Context& ctx, const std::string& path, bool list_chunks, std::uint64_t now) {
  shard::MappedFile file = map(path);
  if (!ends_with_caf(path)) {
    // Not named like a bundle: a shard unless it fails as one and reads
    // as a bundle (then the shard's error would only mislead).
    if (shard::ShardView::parse(file.bytes())) return std::nullopt;
    auto b = caf::BundleView::parse(file.bytes());
    if (!b) return std::nullopt;
    return inspect_bundle(ctx, *b, path, list_chunks, now);
  }
  caf::BundleView b = parse_bundle(file, path);
  return inspect_bundle(ctx, b, path, list_chunks, now);
}

void add_bundle_verbs(CLI::App& app, Action& action) {
  auto* bundle = app.add_subcommand("bundle", "Make or list CAF bundles of shard files (no daemon needed)");
  bundle->require_subcommand(1);
  bundle->fallthrough();

  auto out = std::make_shared<std::string>();
  auto inputs = std::make_shared<std::vector<std::string>>();
  auto* c = bundle->add_subcommand("create", "Write shard files into one .caf bundle (atomically)");
  c->add_option("OUT", *out, "Bundle to write (.caf)")->required();
  c->add_option("SHARD", *inputs, "Shard files; members are named by their file names")->required();
  c->fallthrough();
  c->callback([&action, out, inputs] { action = [out, inputs](Context& ctx) { return create(ctx, *out, *inputs); }; });

  auto file = std::make_shared<std::string>();
  auto* l = bundle->add_subcommand("list", "List the members of a .caf bundle");
  l->add_option("FILE", *file, "Bundle file")->required();
  l->fallthrough();
  l->callback([&action, file] { action = [file](Context& ctx) { return list(ctx, *file); }; });
}

}  // namespace dedupctl
