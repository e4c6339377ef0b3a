// dedupd: command line, then --check-config, --config-table, --check or the service itself,
// where the daemon core and its HTTP layer meet.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>

#include <spdlog/spdlog.h>

#include "daemon/config/key_docs.hpp"
#include "daemon/config/load.hpp"
#include "daemon/fleet_link/migrate.hpp"
#include "daemon/log/logging.hpp"
#include "daemon/loop/signals.hpp"
#include "daemon/supervisor/daemon.hpp"
#include "daemon/supervisor/restart.hpp"
#include "daemon/wiring/api_frontend.hpp"
#include "index/file_check.hpp"
#include "index/index.hpp"
#include "index/page_check.hpp"
#include "index/status.hpp"
#include "index/tables.hpp"

#ifndef DEDUPD_VERSION
#define DEDUPD_VERSION "0.0.0"
#endif

namespace {

namespace fs = std::filesystem;
using namespace dedupd::daemon;
using supervisor::Daemon;
using supervisor::DaemonOptions;

constexpr const char* kUsage =
    "usage: dedupd [--config PATH | --state-dir DIR] [--check-config | --fleet-migrate [--final]]\n"
    "       dedupd --check INDEX_DIR\n"
    "       dedupd --config-table\n"
    "\n"
    "  --config PATH    read the configuration from PATH (YAML); SIGHUP re-reads it\n"
    "  --state-dir DIR  no config file: index in DIR/index, watch DIR/incoming,\n"
    "                   socket DIR/dedupd.sock (default DIR: ./local)\n"
    "  --check-config   validate the configuration, print \"ok\" or every error, exit 0/1\n"
    "  --config-table   print every configuration key, its default and meaning (markdown)\n"
    "  --fleet-migrate  create or upgrade the fleet schema (the fleet section's url), then exit;\n"
    "                   additive migrations only: older dedupd keep working on the result\n"
    "  --final          with --fleet-migrate: also the migrations older dedupd cannot use\n"
    "                   (run it once every host of the fleet runs this release)\n"
    "  --check DIR      check the index in DIR (state_dir/index) offline: print \"ok\" or\n"
    "                   every broken invariant or damage; read-only (an older schema is\n"
    "                   reported, not upgraded). Exit 0 ok, 1 damaged, 3 could not read\n"
    "  --version        print the version\n";

struct Args {
  std::optional<fs::path> config;
  std::optional<fs::path> state_dir;
  bool check = false;
  bool fleet_migrate = false;
  bool final_migration = false;
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
    } else if (arg == "--final") {
      a.final_migration = true;
    } else if (arg == "--check" || arg.starts_with("--check=")) {
      auto v = value("--check");
      if (!v) return std::nullopt;
      a.check_index = *v;
    } else if (arg == "--config-table") {
      std::fputs(config::config_table_markdown().c_str(), stdout);
      std::exit(0);
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
  if (a.final_migration && !a.fleet_migrate) {
    std::fprintf(stderr, "dedupd: --final goes with --fleet-migrate\n");
    return std::nullopt;
  }
  if (a.config && a.state_dir) {
    std::fprintf(stderr, "dedupd: use either --config or --state-dir (the config sets state_dir)\n");
    return std::nullopt;
  }
  return a;
}

// --check's exit codes (dedupd(8)): 2 is a usage error, as for every option.
constexpr int kCheckOk = 0, kCheckDamaged = 1, kCheckUnreadable = 3;

constexpr const char* kDamageAdvice =
    "dedupd moves a damaged index aside at its next start and rebuilds it from the shards it knows "
    "(docs/OPERATIONS.md, \"When things go wrong\"); while it runs: dedupctl index rebuild";

// The LMDB half of --check, in a child process: a page that LMDB follows
// off the map (a scribbled offset) is a signal there, never here. What it
// prints comes back through a pipe; its exit code is --check's.
int check_invariants_in_child(const fs::path& dir, std::string& out) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    std::fprintf(stderr, "dedupd: --check: pipe: %s\n", std::strerror(errno));
    return kCheckUnreadable;
  }
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) {
    std::fprintf(stderr, "dedupd: --check: fork: %s\n", std::strerror(errno));
    return kCheckUnreadable;
  }
  if (pid == 0) {
    ::close(fds[0]);
    std::string text;
    int rc = kCheckOk;
    auto index = dedupd::index::Index::open(dedupd::index::Options{.dir = dir.string(), .read_only = true});
    if (!index) {
      const auto& e = index.error();
      text = "cannot open: " + e.to_string() + "\n";
      rc = e.rule == dedupd::index::kRuleLmdb || e.rule == dedupd::index::kRuleCorrupt ? kCheckDamaged
                                                                                       : kCheckUnreadable;
    } else {
      if (std::uint32_t v = (*index)->schema_version(); v != dedupd::index::schema::kVersion)
        text += "schema " + std::to_string(v) + ", will be upgraded to " +
                std::to_string(dedupd::index::schema::kVersion) + " when dedupd opens it\n";
      auto problems = (*index)->check_invariants();
      if (!problems) {
        text += "cannot check: " + problems.error().to_string() + "\n";
        rc = kCheckDamaged;
      } else {
        for (const auto& p : *problems) text += p + "\n";
        if (!problems->empty()) rc = kCheckDamaged;
      }
    }
    for (std::size_t done = 0; done < text.size();) {
      ssize_t n = ::write(fds[1], text.data() + done, text.size() - done);
      if (n <= 0) break;
      done += std::size_t(n);
    }
    ::_exit(rc);
  }
  ::close(fds[1]);
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, std::size_t(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    out += "reading it crashed LMDB (signal " + std::to_string(WTERMSIG(status)) + ", " +
           sigdescr_np(WTERMSIG(status)) + "): a page points outside the file\n";
    return kCheckDamaged;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : kCheckDamaged;
}

// What a check made before LMDB reads the file means for --check: its
// exit code, or nullopt to go on.
std::optional<int> check_exit(const fs::path& dir, const dedupd::index::DataFileCheck& c) {
  using Verdict = dedupd::index::DataFileCheck::Verdict;
  switch (c.verdict) {
    case Verdict::absent:
      std::fprintf(stderr, "dedupd: %s: no index here (no data.mdb)\n", dir.c_str());
      return kCheckUnreadable;
    case Verdict::unreadable:
      std::fprintf(stderr, "dedupd: %s: cannot read the index: %s\n", dir.c_str(), c.problem.c_str());
      return kCheckUnreadable;
    case Verdict::damaged:
      std::printf("%s: damaged: %s\n", dir.c_str(), c.problem.c_str());
      std::fprintf(stderr, "dedupd: %s\n", kDamageAdvice);
      return kCheckDamaged;
    case Verdict::ok:
      if (!c.problem.empty()) std::printf("%s: note: %s\n", dir.c_str(), c.problem.c_str());
      break;
  }
  return std::nullopt;
}

// --check: the data file's meta pages and size first (before anything maps
// it), then every page of every tree (before LMDB follows any), then every
// invariant Index::check_invariants knows, on an index that exists
// already, opened read-only: it writes nothing, not even the upgrade of an
// older schema (dedupd does that when it opens the index). Safe next to a
// running daemon: LMDB readers never wait for its writer.
int check_index(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    std::fprintf(stderr, "dedupd: %s: not a directory%s\n", dir.c_str(), ec ? (": " + ec.message()).c_str() : "");
    return kCheckUnreadable;
  }
  if (auto rc = check_exit(dir, dedupd::index::check_data_file(dir.string()))) return *rc;
  if (auto rc = check_exit(dir, dedupd::index::check_index_pages(dir.string()))) return *rc;
  std::string out;
  const int rc = check_invariants_in_child(dir, out);
  std::size_t at = 0;
  while (at < out.size()) {
    std::size_t end = out.find('\n', at);
    if (end == std::string::npos) end = out.size();
    std::printf("%s: %s\n", dir.c_str(), out.substr(at, end - at).c_str());
    at = end + 1;
  }
  if (rc == kCheckOk) {
    std::puts("ok");
  } else if (rc == kCheckDamaged) {
    std::fprintf(stderr, "dedupd: %s: the index is damaged; %s\n", dir.c_str(), kDamageAdvice);
  }
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  // Before any thread exists, so only the work loop's signalfd sees them.
  loop::block_daemon_signals();

  auto args = parse_args(argc, argv);
  if (!args) return 2;
  if (args->check_index) return check_index(*args->check_index);

  DaemonOptions options;
  if (args->config) {
    auto loaded = config::load_config_file(*args->config);
    if (auto* errors = std::get_if<std::vector<config::ConfigError>>(&loaded)) {
      for (const auto& e : *errors) std::fprintf(stderr, "%s\n", e.to_string(args->config->native()).c_str());
      return 1;
    }
    options.config = std::get<config::Config>(loaded);
    options.config_file = fs::absolute(*args->config);
  } else {
    options.config = config::local_defaults(args->state_dir.value_or("local"));
    options.create_watch_dirs = true;
  }
  if (args->check) {
    std::puts("ok");
    return 0;
  }
  if (args->fleet_migrate) return fleet_link::run_fleet_migrate(options.config, args->final_migration);

  log::setup_logging(options.config.log_level);
  // A page LMDB meets in the wrong shape deep in a read would abort():
  // dedupd marks its index and starts again, which rebuilds it.
  supervisor::set_restart_arguments(argv);
  dedupd::index::Index::set_lmdb_assert_handler(
      [](const char* what) { supervisor::restart_to_rebuild((std::string("LMDB: ") + what).c_str()); });
  int rc = 0;
  bool restart = false;
  try {
    // Core and HTTP layer meet here: the daemon serves its socket through
    // the frontend it is handed, and stops it before it goes.
    wiring::ApiFrontend api;
    Daemon daemon(std::move(options), api);
    rc = daemon.run();
    restart = daemon.restart_requested();
  } catch (const std::exception& e) {
    spdlog::critical("{}", e.what());
    return 1;
  }
  if (restart) {
    // The Daemon has written the mark; every part of it is stopped.
    spdlog::default_logger()->flush();
    supervisor::restart_self();
    spdlog::critical("cannot start again to rebuild the index: execv: {}; start dedupd again to rebuild it",
                     std::strerror(errno));
    return 1;
  }
  return rc;
}
