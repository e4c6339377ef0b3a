#include "daemon/supervisor/daemon.hpp"

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>

#include "daemon/config/load.hpp"
#include "daemon/config/reload_keys.hpp"
#include "daemon/core/clock.hpp"
#include "daemon/core/errors.hpp"
#include "daemon/log/logging.hpp"
#include "daemon/supervisor/index_opening.hpp"
#include "daemon/supervisor/sockets.hpp"
#include "daemon/systemd/notify.hpp"

namespace dedupd::daemon::supervisor {

namespace fs = std::filesystem;

// This thread writes (ingest, expiry, purge, merges); the HTTP threads
// answer queries. On a small machine a big removal or ingest competes with
// them for the CPU: the writes get lower priority, so queries keep their
// latency and the writes take the time left over.
constexpr int kWriterNice = 5;

Daemon::Daemon(DaemonOptions options, core::Frontend& frontend)
    : options_(std::move(options)), frontend_(frontend), config_(options_.config) {}

Daemon::~Daemon() {
  if (serving_) frontend_.stop();
}

// ---- start and stop ---------------------------------------------------------

int Daemon::run() {
  const auto t0 = std::chrono::steady_clock::now();
  if (!start()) return 1;
  parts_->watchdog.start();
  const config::Config& c = config_.loop();
  const std::string status = parts_->status.line();
  const auto ready_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  systemd::notify_ready(status);
  spdlog::info("ready in {:.1f} ms: index {}, socket {}, watching {} director{}", ready_ms, c.index_dir(), c.socket,
               c.watch.size(), c.watch.size() == 1 ? "y" : "ies");

  parts_->filter_build.start();
  // Raising one's own nice value needs no privilege; failing to is harmless.
  if (::setpriority(PRIO_PROCESS, ::gettid(), kWriterNice) != 0)
    spdlog::debug("could not lower the work loop's priority: {}", std::strerror(errno));

  // What landed while we were not running: the index tells which files are
  // known already, so this costs a stat and a lookup per file.
  parts_->queue.add(watcher_.scan());
  if (health_.rebuilding()) {
    // The shards learned at the endpoint, from their copies: the watched
    // directories do not hold them.
    std::vector<watch::Candidate> learned;
    for (const auto& copy : learned_copies_.all()) learned.push_back({copy.path, watch::FileKind::shard});
    parts_->queue.add(std::move(learned));
    parts_->queue.track_rebuild();
  }
  parts_->expiry.want_pass();

  loop();
  stop();
  return 0;
}

bool Daemon::start() {
  const config::Config& c = config_.loop();
  std::error_code ec;
  fs::create_directories(c.state_dir, ec);
  if (ec) {
    spdlog::critical("cannot create the state directory {}: {}", c.state_dir, ec.message());
    return false;
  }
  if (options_.create_watch_dirs)
    for (const auto& w : c.watch) fs::create_directories(w.path, ec);

  if (!open_index()) return false;
  parts_ = std::make_unique<Parts>(Ground{*index_, c, counters_, loop_, watcher_, cas_scopes_, learned_copies_, health_,
                                          outbox_wake_, [this] { stopping_ = true; }});
  if (auto loaded = parts_->keys.load_or_create(core::unix_now()); !loaded) {
    spdlog::critical("{}", loaded.error());
    return false;
  }
  operations_ = std::make_unique<DaemonOperations>(config_, *parts_, *index_, counters_, watcher_, learned_copies_,
                                                   health_, [this] { return reload_config(); });
  // Before anything listens: the learner adopts systemd's learning socket
  // now, and the server its API socket.
  const std::optional<int> api_fd = take_activated_sockets(parts_->learner);
  if (!api_fd) return false;
  apply_config(c, jobs::Apply::at_start);
  if (!start_server(*api_fd)) return false;

  loop_.watch_fd(signals_.fd(), [this] { on_signals(); });
  loop_.watch_fd(watcher_.fd(), [this] { on_watch_events(); });
  return true;
}

bool Daemon::open_index() {
  const config::Config& c = config_.loop();
  cas_scopes_.configure(c.watch, c.xet_endpoint.config);
  learned_copies_ = learn::LearnedCopies(c.state_dir / "learned");
  cas_scopes_.set_override([this](const std::string& path) { return learned_copies_.cas_of(path); });
  index::Options o;
  o.dir = c.index_dir().native();
  o.observer = &index_log_;
  o.filter_memory = c.index.filter_memory;
  o.scope_of_path = [this](const std::string& path) { return cas_scopes_.of_path(path); };
  index_ = open_or_move_aside(o, health_);
  if (!index_) return false;
  // Shards found before their CAS could be told (a watch entry's cas: or
  // the endpoint's settings added since) get it on the work loop, after
  // READY: it reads every shard record, which start-up need not wait for.
  loop_.post([this, scope_of_path = o.scope_of_path] {
    if (auto st = index_->scope_unknown_shards(scope_of_path); !st)
      spdlog::warn("cannot give the shards of unknown CAS theirs: {}", st.error());
  });
  index_ready_ = index_.get();
  return true;
}

bool Daemon::start_server(int listen_fd) {
  const config::Config& c = config_.loop();
  const core::ListenSettings listen{listen_fd, admin_gid_of(c.admin_group), endpoint_gid_of(c.xet_endpoint)};
  if (listen.listen_fd < 0) {
    std::error_code ec;
    fs::create_directories(c.socket.parent_path(), ec);
  }
  const core::ServiceParts service{*operations_, loop_,           index_ready_,
                                   counters_,    parts_->learner, parts_->fleet.lookup()};
  if (!frontend_.start(service, c, listen)) return false;
  serving_ = true;
  return true;
}

// Each turn waits for an event (a signal, inotify, a task an HTTP thread
// posted) at most until the earliest job is due, then runs the jobs due.
void Daemon::loop() {
  while (!stopping_) {
    loop_.run_once(parts_->scheduler.sleep());
    if (stopping_) break;
    parts_->scheduler.run_due();
  }
}

void Daemon::stop() {
  if (restart_requested()) {
    // Not STOPPING=1: the same process starts again (execv in main).
    systemd::notify_reloading();
    spdlog::warn("restarting in place to rebuild the index");
  } else {
    systemd::notify_stopping();
    spdlog::info("stopping");
  }
  parts_->steward.stop();  // at its next file
  frontend_.stop();
  index_ready_ = nullptr;
}

// ---- events -----------------------------------------------------------------

void Daemon::on_signals() {
  for (int sig : signals_.read_pending()) {
    if (sig == SIGHUP) {
      (void)reload_config();  // logged either way
    } else {
      spdlog::info("{} received", sig == SIGTERM ? "SIGTERM" : "SIGINT");
      stopping_ = true;
    }
  }
}

void Daemon::on_watch_events() {
  watch::WatchBatch batch = watcher_.read_events();
  if (batch.overflow) {
    // Events were lost: only a walk of every tree can tell what arrived.
    spdlog::warn("inotify queue overflowed; rescanning the watched directories");
    parts_->queue.add(watcher_.scan());
  }
  parts_->queue.add(std::move(batch.ready));
}

// ---- reload -----------------------------------------------------------------

base::Result<core::ReloadResult> Daemon::reload_config() {
  systemd::notify_reloading();
  core::ReloadResult out;
  if (!options_.config_file) {
    spdlog::info("reload: running on local defaults, nothing to reload");
    systemd::notify_ready(parts_->status.line());
    return out;
  }
  out.config_file = options_.config_file->native();
  auto loaded = config::load_config_file(*options_.config_file);
  if (auto* errors = std::get_if<std::vector<config::ConfigError>>(&loaded)) {
    std::string all;
    for (const auto& e : *errors) {
      spdlog::error("{}", e.to_string(out.config_file));
      all += (all.empty() ? "" : "; ") + e.to_string(out.config_file);
    }
    spdlog::error("reload: configuration not reloaded; still running with the previous one");
    systemd::notify_ready(parts_->status.line());
    return core::seam_error(core::kRuleBadConfig, all);
  }
  out.not_applied = apply_config(std::get<config::Config>(loaded), jobs::Apply::on_reload);
  spdlog::info("configuration reloaded from {}", out.config_file);
  systemd::notify_ready(parts_->status.line());
  return out;
}

std::vector<std::string> Daemon::apply_config(const config::Config& next, jobs::Apply when) {
  const bool initial = when == jobs::Apply::at_start;
  // The key table says which keys wait for a restart (config/key_table.cpp).
  std::vector<std::string> not_applied;
  if (!initial) not_applied = config::changes_waiting_for_restart(config_.loop(), next);
  for (const auto& k : not_applied) spdlog::warn("not applied until a restart: {}", k);
  log::set_log_level(next.log_level);
  const bool watch_changed = initial || next.watch != config_.loop().watch;
  config_.replace(initial ? next : config::as_reload_applies(config_.loop(), next));
  const config::Config& c = config_.loop();
  parts_->ingester.set_quarantine_dir(c.quarantine_dir);
  cas_scopes_.configure(c.watch, c.xet_endpoint.config);
  parts_->learner.set_endpoint_gid(endpoint_gid_of(c.xet_endpoint));
  parts_->learner.set_unknown_cas_answers(c.xet_endpoint.unknown_cas_answers);
  if (auto listening = parts_->learner.listen(learn_socket_of(c)); !listening)
    spdlog::error("cannot learn what the local Xet endpoint's CAS accepts: {}", listening.error());
  if (serving_) frontend_.set_access(admin_gid_of(c.admin_group), endpoint_gid_of(c.xet_endpoint));
  // The jobs' parts: expiry, the scans, the key's rotation, the steward's
  // roots, the fleet, the scrub's interval.
  parts_->scheduler.configure(c, when);
  if (watch_changed) {
    watcher_.set_roots(c.watch);
    if (!initial) {
      std::string dirs;
      for (const auto& w : c.watch) dirs += (dirs.empty() ? "" : ", ") + w.path.native();
      spdlog::info("now watching: {}", dirs.empty() ? "nothing" : dirs);
      parts_->queue.add(watcher_.scan());
    }
  }
  return not_applied;
}

}  // namespace dedupd::daemon::supervisor
