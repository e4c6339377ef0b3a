// dedupd: command line, then --check-config, --check or the service itself,
// where the daemon core and its HTTP layer meet.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>

#include <spdlog/spdlog.h>

#include "daemon/config/load.hpp"
#include "daemon/daemon.hpp"
#include "daemon/fleet/migrate.hpp"
#include "daemon/log/logging.hpp"
#include "daemon/loop/signals.hpp"
#include "daemon/wiring/api_frontend.hpp"
#include "index/index.hpp"
#include "index/schema.hpp"

#ifndef DEDUPD_VERSION
#define DEDUPD_VERSION "0.0.0"
#endif

namespace {

namespace fs = std::filesystem;
using namespace dedupd::daemon;

constexpr const char* kUsage =
    "usage: dedupd [--config PATH | --state-dir DIR] [--check-config | --fleet-migrate]\n"
    "       dedupd --check INDEX_DIR\n"
    "\n"
    "  --config PATH    read the configuration from PATH (YAML); SIGHUP re-reads it\n"
    "  --state-dir DIR  no config file: index in DIR/index, watch DIR/incoming,\n"
    "                   socket DIR/dedupd.sock (default DIR: ./local)\n"
    "  --check-config   validate the configuration, print \"ok\" or every error, exit 0/1\n"
    "  --fleet-migrate  create or upgrade the fleet schema (the fleet section's url), then exit\n"
    "  --check DIR      check the index in DIR (state_dir/index) offline: print \"ok\" or\n"
    "                   every broken invariant, exit 0/1; read-only (an older schema is\n"
    "                   reported, not upgraded)\n"
    "  --version        print the version\n";

struct Args {
  std::optional<fs::path> config;
  std::optional<fs::path> state_dir;
  bool check = false;
  bool fleet_migrate = false;
  std::optional<fs::path> check_index;
};

// Exit code 2 for a usage error, like most tools.
std::optional<Args> parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const char* name) -> std::optional<std::string> {
      auto eq = arg.find('=');
      if (eq != std::string::npos) return arg.substr(eq + 1);
      if (i + 1 >= argc) {
        std::fprintf(stderr, "dedupd: %s needs a value\n", name);
        return std::nullopt;
      }
      return std::string(argv[++i]);
    };
    if (arg == "--config" || arg.starts_with("--config=")) {
      auto v = value("--config");
      if (!v) return std::nullopt;
      a.config = *v;
    } else if (arg == "--state-dir" || arg.starts_with("--state-dir=")) {
      auto v = value("--state-dir");
      if (!v) return std::nullopt;
      a.state_dir = *v;
    } else if (arg == "--check-config") {
      a.check = true;
    } else if (arg == "--fleet-migrate") {
      a.fleet_migrate = true;
    } else if (arg == "--check" || arg.starts_with("--check=")) {
      auto v = value("--check");
      if (!v) return std::nullopt;
      a.check_index = *v;
    } else if (arg == "--version") {
      std::printf("dedupd %s\n", DEDUPD_VERSION);
      std::exit(0);
    } else if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else {
      std::fprintf(stderr, "dedupd: unknown argument \"%s\"\n%s", arg.c_str(), kUsage);
      return std::nullopt;
    }
  }
  if (a.check_index && (a.config || a.state_dir || a.check)) {
    std::fprintf(stderr, "dedupd: --check takes the index directory alone\n");
    return std::nullopt;
  }
  if (a.config && a.state_dir) {
    std::fprintf(stderr, "dedupd: use either --config or --state-dir (the config sets state_dir)\n");
    return std::nullopt;
  }
  return a;
}

// --check: every invariant Index::check_invariants knows, on an index that
// exists already, opened read-only: it writes nothing, not even the upgrade
// of an older schema (dedupd does that when it opens the index). Safe next
// to a running daemon: LMDB readers never wait for its writer.
int check_index(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir / "data.mdb", ec)) {
    std::fprintf(stderr, "dedupd: %s: no index here (no data.mdb)\n", dir.c_str());
    return 1;
  }
  auto index = dedupd::index::Index::open(dedupd::index::Options{.dir = dir.string(), .read_only = true});
  if (!index) {
    std::fprintf(stderr, "dedupd: %s: %s\n", dir.c_str(), index.error().to_string().c_str());
    return 1;
  }
  if (std::uint32_t v = (*index)->schema_version(); v != dedupd::index::schema::kVersion)
    std::printf("%s: schema %u, will be upgraded to %u when dedupd opens it\n", dir.c_str(), unsigned(v),
                unsigned(dedupd::index::schema::kVersion));
  auto problems = (*index)->check_invariants();
  if (!problems) {
    std::fprintf(stderr, "dedupd: %s: %s\n", dir.c_str(), problems.error().to_string().c_str());
    return 1;
  }
  for (const auto& p : *problems) std::printf("%s: %s\n", dir.c_str(), p.c_str());
  if (!problems->empty()) return 1;
  std::puts("ok");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Before any thread exists, so only the work loop's signalfd sees them.
  block_daemon_signals();

  auto args = parse_args(argc, argv);
  if (!args) return 2;
  if (args->check_index) return check_index(*args->check_index);

  DaemonOptions options;
  if (args->config) {
    auto loaded = load_config_file(*args->config);
    if (auto* errors = std::get_if<std::vector<ConfigError>>(&loaded)) {
      for (const auto& e : *errors) std::fprintf(stderr, "%s\n", e.to_string(args->config->native()).c_str());
      return 1;
    }
    options.config = std::get<Config>(loaded);
    options.config_file = fs::absolute(*args->config);
  } else {
    options.config = local_defaults(args->state_dir.value_or("local"));
    options.create_watch_dirs = true;
  }
  if (args->check) {
    std::puts("ok");
    return 0;
  }
  if (args->fleet_migrate) return fleet_link::run_fleet_migrate(options.config);

  setup_logging(options.config.log_level);
  try {
    // Core and HTTP layer meet here: the daemon serves its socket through
    // the frontend it is handed, and stops it before it goes.
    ApiFrontend api;
    Daemon daemon(std::move(options), api);
    return daemon.run();
  } catch (const std::exception& e) {
    spdlog::critical("{}", e.what());
    return 1;
  }
}
