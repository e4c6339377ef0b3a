#include "cli/app.hpp"

#include <CLI/CLI.hpp>

#include <exception>
#include <memory>
#include <ostream>

#include "cli/bundle_verbs.hpp"
#include "cli/exit_codes.hpp"
#include "cli/fleet_verbs.hpp"
#include "cli/scan_verbs.hpp"
#include "cli/snapshot_verbs.hpp"
#include "cli/verbs.hpp"

#ifndef DEDUPCTL_VERSION
#define DEDUPCTL_VERSION "unknown"
#endif

namespace dedupctl {

void add_one_argument_verb(CLI::App& app, Action& action, const std::string& name, const std::string& help,
                           const std::string& argument, const std::string& argument_help,
                           int (*run)(Context&, const std::string&)) {
  auto value = std::make_shared<std::string>();
  auto* verb = app.add_subcommand(name, help);
  verb->add_option(argument, *value, argument_help)->required();
  verb->callback([&action, value, run] { action = [value, run](Context& ctx) { return run(ctx, *value); }; });
}

int run(const std::vector<std::string>& args, Io& io) {
  CLI::App app{"dedupctl: ask dedupd about chunks, xorbs, files and shards, or read shard files offline", "dedupctl"};
  app.require_subcommand(1);
  // Global options may also follow the verb: `dedupctl query --json HASH`.
  app.fallthrough();
  app.set_version_flag("--version", "dedupctl " DEDUPCTL_VERSION);

  Context ctx{io, {}, {}};
  app.add_option("--socket", ctx.opt.socket,
                 "dedupd socket (default: $DEDUPD_SOCKET, /run/dedupd/dedupd.sock, ./local/dedupd.sock)");
  app.add_flag("--json", ctx.opt.json, "Print one JSON document on stdout (see dedupctl(1))");
  app.add_flag("-q,--quiet", ctx.opt.quiet, "Print nothing on stdout; the exit code answers");
  app.add_option("--timeout", ctx.opt.timeout_s, "Seconds a whole request may take")
      ->check(CLI::Range(0.1, 86400.0))
      ->capture_default_str();

  Action action;
  add_offline_verbs(app, action);
  add_lookup_verbs(app, action);
  add_admin_verbs(app, action);
  add_bundle_verbs(app, action);
  add_snapshot_verbs(app, action);
  add_scan_verbs(app, action);
  add_fleet_verbs(app, action);

  // CLI11 wants argv; keep the strings alive in `args`.
  std::vector<const char*> argv{"dedupctl"};
  for (const auto& a : args) argv.push_back(a.c_str());
  try {
    app.parse(int(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    // --help and --version are "errors" with code 0 in CLI11.
    app.exit(e, io.out, io.err);
    return e.get_exit_code() == 0 ? kOk : kUsage;
  }

  ctx.style.color = !ctx.opt.json && want_color(io.out_is_tty, io.getenv("NO_COLOR"));
  try {
    return action(ctx);
  } catch (const CliError& e) {
    io.err << "dedupctl: " << e.what() << '\n';
    if (!e.hint().empty()) io.err << "dedupctl: " << e.hint() << '\n';
    return e.code();
  } catch (const std::bad_alloc&) {
    io.err << "dedupctl: out of memory\n";
    return kUnavailable;
  }
}

}  // namespace dedupctl
