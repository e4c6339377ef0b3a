#include "daemon/daemon.hpp"

#include <fcntl.h>
#include <grp.h>
#include <malloc.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>

#include "daemon/config/load.hpp"
#include "daemon/config/reload_keys.hpp"
#include "daemon/config/units.hpp"
#include "daemon/config/xet_endpoint.hpp"
#include "daemon/core/clock.hpp"
#include "daemon/core/scrub_pace.hpp"
#include "daemon/log/logging.hpp"
#include "daemon/restart.hpp"
#include "daemon/systemd/listen_fds.hpp"
#include "daemon/systemd/notify.hpp"
#include "index/file_check.hpp"
#include "index/status.hpp"

#ifndef DEDUPD_VERSION
#define DEDUPD_VERSION "0.0.0"
#endif

namespace dedupd::daemon {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

static_assert(FleetConfig::kDefaultKeyFilterMemory == std::uint64_t(fleet::kDefaultKeyFilterBytes),
              "dedupd.yaml's default is the library's");

fleet_link::LookupMemory lookup_memory(const FleetConfig& f) {
  auto bytes = [](std::uint64_t v) { return std::int64_t(std::min<std::uint64_t>(v, std::uint64_t(INT64_MAX))); };
  return {.xorb_cache = bytes(f.lookup_cache), .key_filters = bytes(f.key_filter_memory)};
}

// How long one loop iteration may spend ingesting queued files before it
// looks at signals, admin tasks and the watchdog again.
constexpr auto kIngestBudget = 200ms;
// One file's ingest (or removal) worth a warning: a third of the unit's
// WatchdogSec.
constexpr auto kSlowIngest = 10s;
// STATUS= is refreshed at most this often while things change.
constexpr auto kStatusEvery = 2s;

// The free space a waiting file's retry needs to see appear before the
// files out of space are all tried again at once (besides their backoff).
constexpr std::uint64_t kSpaceReturned = 1 << 20;
constexpr auto kSpaceCheckEvery = 1s;
// Beside the index: the fleet's key filters, kept across restarts
// (daemon/fleet/kept_filters.hpp).
constexpr const char* kKeptKeyFiltersFile = "fleet-key-filters";

// What the file system under `dir` has free for dedupd (f_bavail: root's
// reserve is not ours when the unit runs as its own user).
StateDirSpace space_of(const fs::path& dir) {
  StateDirSpace s;
  struct statvfs v {};
  if (::statvfs(dir.c_str(), &v) != 0) return s;
  s.known = true;
  s.free_bytes = std::uint64_t(v.f_bavail) * v.f_frsize;
  s.size_bytes = std::uint64_t(v.f_blocks) * v.f_frsize;
  return s;
}

std::optional<gid_t> gid_of(const std::optional<std::string>& group, const char* setting, const char* without) {
  if (!group) return std::nullopt;
  if (const struct group* g = ::getgrnam(group->c_str())) return g->gr_gid;
  spdlog::warn("{} \"{}\" does not exist; {}", setting, *group, without);
  return std::nullopt;
}
std::optional<gid_t> admin_gid_of(const std::optional<std::string>& group) {
  return gid_of(group, "admin_group", "only root may use admin routes");
}
// Unset, the group the package gives its endpoint (sysusers.d), where the
// system has it: nothing to configure for the packaged endpoint.
std::optional<gid_t> endpoint_gid_of(const XetEndpointConfig& e) {
  if (!e.group) {
    if (const struct group* g = ::getgrnam(kPackageEndpointGroup)) return g->gr_gid;
    return std::nullopt;
  }
  return gid_of(e.group, "xet_endpoint.group", "only root and dedupd's user may teach it shards");
}

// Where the endpoint's nginx reports the CAS's statuses, when dedupd binds
// it itself (not under systemd); nothing without an endpoint configured:
// then nothing is learned.
std::string learn_socket_of(const Config& c) {
  if (!c.xet_endpoint.enabled()) return "";
  if (!c.xet_endpoint.learn_socket.empty()) return c.xet_endpoint.learn_socket.native();
  return (c.socket.parent_path() / "dedupd-learn.sock").native();
}

}  // namespace

Daemon::Daemon(DaemonOptions options, Frontend& frontend)
    : options_(std::move(options)),
      frontend_(frontend),
      config_(options_.config),
      started_(std::chrono::steady_clock::now()) {}

Daemon::~Daemon() {
  if (serving_) frontend_.stop();
  std::lock_guard lock(fleet_mu_);
  publisher_.reset();  // before the index it drains closes
}

StatusInfo Daemon::status() const {
  StatusInfo s;
  s.version = DEDUPD_VERSION;
  s.pid = ::getpid();
  s.uptime_s = std::uint64_t(
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started_).count());
  fs::path endpoint_config;
  {
    std::lock_guard lock(config_mutex_);
    s.socket = config_.socket.native();
    s.state_dir = config_.state_dir.native();
    for (const auto& w : config_.watch) s.watch.push_back(w.path.native());
    endpoint_config = config_.xet_endpoint.config;
  }
  {
    std::lock_guard lock(health_mu_);
    s.index_health = health_;
  }
  for (const auto& c : learned_copies_.all()) {
    std::error_code size_ec;
    ++s.index_health.learned_copies;
    s.index_health.learned_copies_bytes += fs::file_size(c.path, size_ec);
  }
  s.waiting = waiting_.status(unix_now());
  s.state_dir_space = space_of(s.state_dir);
  s.state_dir_space.full = waiting_.out_of_space();
  if (steward_) s.xet_caches = steward_->status();
  if (!endpoint_config.empty()) {
    // Read at each status, outside the lock: it follows the file as the
    // endpoint's reload does, without a restart of dedupd.
    const XetEndpointSettings e = read_xet_endpoint_settings(endpoint_config);
    s.xet_endpoint = XetEndpointStatus{endpoint_config.native(), e.present,  e.problem, e.hub_upstream,
                                       e.cas_upstream,           e.hub_port, e.cas_port};
  }
  return s;
}

GlobalDedupKey Daemon::global_dedup_key() const {
  GlobalDedupKey k;
  k.key = key_store_->current();
  std::lock_guard lock(config_mutex_);
  k.reply_lifetime_s = std::uint64_t(config_.global_dedup.reply_expiry.count());
  k.endpoint_reply_lifetime_s = std::uint64_t(config_.xet_endpoint.reply_expiry.count());
  k.reply_max_xorbs = config_.global_dedup.reply_max_xorbs;
  k.reply_max_bytes = config_.global_dedup.reply_max_bytes;
  k.unknown_cas_answers = config_.xet_endpoint.unknown_cas_answers;
  return k;
}

std::chrono::milliseconds Daemon::admin_timeout() const {
  std::lock_guard lock(config_mutex_);
  return config_.limits.request_timeout;
}

// ---- start and stop ---------------------------------------------------------

constexpr int kWriterNice = 5;

int Daemon::run() {
  auto t0 = std::chrono::steady_clock::now();
  std::error_code ec;
  fs::create_directories(config_.state_dir, ec);
  if (ec) {
    spdlog::critical("cannot create the state directory {}: {}", config_.state_dir, ec.message());
    return 1;
  }
  if (options_.create_watch_dirs)
    for (const auto& w : config_.watch) fs::create_directories(w.path, ec);

  if (!open_index()) return 1;
  key_store_ = std::make_unique<GlobalDedupKeyStore>(config_.key_file(), config_.global_dedup.key_rotation);
  if (auto loaded = key_store_->load_or_create(unix_now()); !loaded) {
    spdlog::critical("{}", loaded.error());
    return 1;
  }
  fleet_lookup_ =
      std::make_unique<fleet_link::FleetLookup>(fleet_options(), config_.fleet.lookup_timeout,
                                                lookup_memory(config_.fleet), config_.state_dir / kKeptKeyFiltersFile);
  ingester_ = std::make_unique<Ingester>(*index_, counters_, cas_scopes_);
  learner_ = std::make_unique<learn::Learner>(*index_, loop_);
  learner_->set_copies(&learned_copies_);
  learner_->set_events({[this](const shard::Hash& h, const std::string& cas, const std::string& why) {
                          std::lock_guard lock(fleet_mu_);
                          if (publisher_) publisher_->mark_set_aside(h, cas, why);
                        },
                        [this](const shard::Hash& h, const std::string& cas) {
                          std::lock_guard lock(fleet_mu_);
                          if (publisher_) publisher_->accepted_again(h, cas);
                        }});
  expiry_ = std::make_unique<expiry::Runner>(*index_, watcher_, counters_);
  steward_ = std::make_unique<CacheSteward>(*index_, StewardOptions{.state_dir = config_.state_dir.native()});
  if (!take_activated_sockets()) return 1;
  apply_config(config_, true);

  if (!start_server()) return 1;

  loop_.watch_fd(signals_.fd(), [this] { on_signals(); });
  loop_.watch_fd(watcher_.fd(), [this] { on_watch_events(); });
  loop_.watch_fd(timer_.fd(), [this] { on_timer(); });

  watchdog_interval_ = systemd::watchdog_ping_interval();
  next_watchdog_ = std::chrono::steady_clock::now();
  const std::string status = status_line();
  auto ready_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  systemd::notify_ready(status);
  spdlog::info("ready in {:.1f} ms: index {}, socket {}, watching {} director{}", ready_ms, config_.index_dir(),
               config_.socket, config_.watch.size(), config_.watch.size() == 1 ? "y" : "ies");

  filter_builder_ = std::make_unique<FilterBuilder>(*index_);
  filter_builder_->request();
  // This thread writes (ingest, expiry, purge, merges); the HTTP threads
  // answer queries. On a small machine a big removal or ingest competes with
  // them for the CPU: give the writes lower priority, so queries keep their
  // latency and the writes take the time left over. Raising one's own nice
  // value needs no privilege; failing to is harmless.
  if (::setpriority(PRIO_PROCESS, ::gettid(), kWriterNice) != 0)
    spdlog::debug("could not lower the work loop's priority: {}", std::strerror(errno));

  // What landed while we were not running: the index tells which files are
  // known already, so this costs a stat and a lookup per file.
  queue(watcher_.scan());
  if (rebuilding_) {
    // The shards learned at the endpoint, from their copies: the watched
    // directories do not hold them.
    std::vector<Candidate> learned;
    for (const auto& c : learned_copies_.all()) learned.push_back({c.path, FileKind::shard});
    queue(std::move(learned));
    std::lock_guard lock(health_mu_);
    health_.rebuild_files_total = pending_.size();
  }
  expiry_pass_wanted_ = true;
  next_safety_scan_ = unix_now() + std::uint64_t(config_.expiry.check_interval.count());

  while (!stopping_) {
    auto wait = pending_.empty() && !expiry_pass_wanted_ ? std::chrono::milliseconds(1000) : 0ms;
    // The scrub's slices and a restart due come from this loop too.
    if (restart_due_ || (next_scrub_pass_ && !scrub_pos_.done)) wait = std::min<std::chrono::milliseconds>(wait, 20ms);
    if (watchdog_interval_)
      wait = std::min(
          wait, std::chrono::duration_cast<std::chrono::milliseconds>(std::max(
                    next_watchdog_ - std::chrono::steady_clock::now(), std::chrono::steady_clock::duration::zero())));
    loop_.run_once(wait);
    if (stopping_) break;
    process_pending(kIngestBudget);
    retry_waiting();
    note_rebuild_progress();
    if (pending_.empty()) scrub_step();
    if (restart_due_ && std::chrono::steady_clock::now() >= *restart_due_) {
      restart_due_.reset();
      request_rebuild("asked by an operator (dedupctl index rebuild)");
    }
    if (expiry_pass_wanted_) expiry_pass();
    if (pending_.empty()) steward_pass_if_due();
    if (timer_rearm_wanted_) rearm_timer();
    ping_watchdog_if_due();
    publish_status(false);
  }

  if (restart_for_rebuild_) {
    // Not STOPPING=1: the same process starts again (execv in main).
    systemd::notify_reloading();
    spdlog::warn("restarting in place to rebuild the index");
  } else {
    systemd::notify_stopping();
    spdlog::info("stopping");
  }
  steward_->stop();  // at its next file
  frontend_.stop();
  index_ready_ = nullptr;
  return 0;
}

namespace {

// LMDB's words for a file that is not what its pages say: damage, not a
// setting or a permission.
bool says_damaged(const shard::Error& e) {
  if (e.rule == index::kRuleCorrupt) return true;
  if (e.rule != index::kRuleLmdb) return false;
  for (const char* code : {"MDB_CORRUPTED", "MDB_PAGE_NOTFOUND", "MDB_INVALID", "MDB_VERSION_MISMATCH"})
    if (e.message.find(code) != std::string::npos) return true;
  return false;
}

std::string utc_stamp(std::uint64_t t) {
  std::time_t tt = std::time_t(t);
  std::tm tm{};
  ::gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

}  // namespace

bool Daemon::move_damaged_index_aside(const std::string& damage) {
  const fs::path dir = config_.index_dir();
  const std::uint64_t now = unix_now();
  fs::path aside = dir;
  aside += ".damaged-" + utc_stamp(now);
  for (int i = 1; fs::exists(aside); ++i) {
    aside = dir;
    aside += ".damaged-" + utc_stamp(now) + "-" + std::to_string(i);
  }
  std::error_code ec;
  fs::rename(dir, aside, ec);
  if (ec) {
    spdlog::critical("the index in {} is damaged ({}), and it cannot be moved aside to {}: {}", dir, damage, aside,
                     ec.message());
    return false;
  }
  spdlog::critical(
      "the index in {} is damaged: {}. It is kept as {} for an admin, and a new index is rebuilt from the shards of "
      "the watched directories; answers say \"X-Dedupd-Index: rebuilding\" until it is done",
      dir, damage, aside);
  std::lock_guard lock(health_mu_);
  health_ = IndexHealth{};
  health_.state = "rebuilding";
  health_.damage = damage;
  health_.moved_to = aside.native();
  health_.found_at = now;
  rebuilding_ = true;
  return true;
}

bool Daemon::open_index() {
  index::Options o;
  o.dir = config_.index_dir().native();
  o.observer = &index_log_;
  o.filter_memory = config_.index.filter_memory;
  cas_scopes_.configure(config_.watch, config_.xet_endpoint.config);
  learned_copies_ = learn::LearnedCopies(config_.state_dir / "learned");
  cas_scopes_.set_override([this](const std::string& path) { return learned_copies_.cas_of(path); });
  o.scope_of_path = [this](const std::string& path) { return cas_scopes_.of_path(path); };
  // What a few reads can tell before LMDB maps the file: a truncated file
  // or damaged meta pages would be a SIGBUS or a refusal to start.
  const index::DataFileCheck file = index::check_data_file(o.dir);
  restart::set_mark_path((config_.index_dir() / kDamagedMark).native());
  std::string marked;
  if (std::ifstream mark(config_.index_dir() / kDamagedMark); mark) {
    std::getline(mark, marked);
    if (marked.empty()) marked = "marked as damaged";
  }
  if (!marked.empty()) {
    if (!move_damaged_index_aside(marked)) return false;
  } else if (file.verdict == index::DataFileCheck::Verdict::damaged) {
    if (!move_damaged_index_aside(file.problem)) return false;
  } else if (!file.problem.empty()) {
    spdlog::warn("{}", file.problem);
  }
  auto opened = index::Index::open(o);
  if (!opened && says_damaged(opened.error()) && !rebuilding_) {
    if (!move_damaged_index_aside(opened.error().to_string())) return false;
    opened = index::Index::open(o);
  }
  if (!opened) {
    spdlog::critical("cannot open the index in {}: {}", o.dir, opened.error());
    return false;
  }
  index_ = std::move(opened).value();
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

void Daemon::request_rebuild(const std::string& why) {
  const fs::path mark = config_.index_dir() / kDamagedMark;
  std::ofstream out(mark, std::ios::trunc);
  out << why << '\n';
  out.close();
  if (!out) {
    spdlog::critical("the index must be rebuilt ({}), but {} cannot be written: stopping instead", why, mark);
  } else {
    restart_for_rebuild_ = true;
  }
  rebuilding_ = true;  // answers say so until the restart
  stopping_ = true;
}

// Loop thread, while nothing waits to be ingested: one slice of the scrub.
void Daemon::scrub_step() {
  if (!start_queue_drained_) {
    start_queue_drained_ = true;
    if (config_.index.scrub_interval) next_scrub_pass_ = std::chrono::steady_clock::now();
    std::lock_guard lock(health_mu_);
    health_.scrub_enabled = config_.index.scrub_interval.has_value();
  }
  const auto now = std::chrono::steady_clock::now();
  if (!next_scrub_pass_ || now < *next_scrub_pass_ || now < next_scrub_slice_) return;
  auto found = index_->scrub(scrub_pos_, kScrubSliceItems, kScrubSliceTime);
  next_scrub_slice_ = next_scrub_slice(now, std::chrono::steady_clock::now());
  std::string damage;
  if (!found) {
    damage = found.error().to_string();
    if (!says_damaged(found.error())) {
      // Not the index's pages (EIO, memory): said, and tried again next pass.
      spdlog::error("scrub: {}", damage);
      damage.clear();
      scrub_pos_.done = true;
    }
  } else if (!found->empty()) {
    damage = "the scrub found " + found->front() +
             (found->size() > 1 ? fmt::format(" (and {} more)", found->size() - 1) : "");
  }
  {
    std::lock_guard lock(health_mu_);
    health_.scrub_running = !scrub_pos_.done && damage.empty();
    health_.scrub_items = scrub_pos_.items;
    if (scrub_pos_.done || !damage.empty()) {
      health_.scrub_passes += damage.empty() ? 1 : 0;
      health_.scrub_last_end = unix_now();
      health_.scrub_last_result = damage.empty() ? "clean" : damage;
    }
  }
  if (!damage.empty()) {
    spdlog::critical("the index is damaged: {}; it is moved aside and rebuilt", damage);
    request_rebuild(damage);
    return;
  }
  if (scrub_pos_.done) {
    spdlog::info("scrub: a pass over {} items found nothing wrong", scrub_pos_.items);
    if (config_.index.scrub_interval) next_scrub_pass_ = now + *config_.index.scrub_interval;
    else next_scrub_pass_.reset();
  }
}

// Loop thread: the rebuild is the scan at start taken in; it is done when
// the queue it filled has drained (files that wait for space included).
void Daemon::note_rebuild_progress() {
  if (!rebuilding_) return;
  std::lock_guard lock(health_mu_);
  const std::uint64_t left = pending_.size() + waiting_.size();
  health_.rebuild_files_done = health_.rebuild_files_total > left ? health_.rebuild_files_total - left : 0;
  if (left == 0) {
    health_.state = "rebuilt";
    rebuilding_ = false;
    spdlog::warn("the index is rebuilt from {} file(s); the damaged one stays at {} until an admin removes it",
                 health_.rebuild_files_total, health_.moved_to);
  }
}

// Before anything listens: the learner adopts systemd's learning socket
// when apply_config first runs, and the server its API socket.
bool Daemon::take_activated_sockets() {
  auto activated = systemd::activated_sockets();
  if (auto* err = std::get_if<systemd::ActivationError>(&activated)) {
    spdlog::critical("socket activation: {}", err->message);
    return false;
  }
  auto* fds = std::get_if<systemd::ActivatedSockets>(&activated);
  if (!fds) return true;
  activated_api_ = fds->api;
  activated_learn_ = fds->learn;
  // The server closes its socket when it stops, and so does the learner; a
  // restart for a rebuild hands these copies to the next dedupd in the same
  // process. Above fd 4, where exec_self puts them back.
  const int api_copy = ::fcntl(fds->api, F_DUPFD_CLOEXEC, 5);
  const int learn_copy = fds->learn >= 0 ? ::fcntl(fds->learn, F_DUPFD_CLOEXEC, 5) : -1;
  restart::set_activated_sockets(api_copy, learn_copy);
  spdlog::info("listening on the socket{} systemd passed", fds->learn >= 0 ? "s" : "");
  if (fds->learn >= 0) {
    if (auto adopted = learner_->adopt(fds->learn); !adopted) {
      spdlog::error("cannot learn what the local Xet endpoint's CAS accepts: {}", adopted.error());
      ::close(fds->learn);
    }
  }
  return true;
}

bool Daemon::start_server() {
  ListenSettings listen;
  listen.listen_fd = activated_api_;
  listen.admin_gid = admin_gid_of(config_.admin_group);
  listen.endpoint_gid = endpoint_gid_of(config_.xet_endpoint);
  if (listen.listen_fd < 0) {
    std::error_code ec;
    fs::create_directories(config_.socket.parent_path(), ec);
  }
  const ServiceParts parts{*this, loop_, index_ready_, counters_, *learner_, *fleet_lookup_};
  if (!frontend_.start(parts, config_, listen)) return false;
  serving_ = true;
  return true;
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
  WatchBatch batch = watcher_.read_events();
  if (batch.overflow) {
    // Events were lost: only a walk of every tree can tell what arrived.
    spdlog::warn("inotify queue overflowed; rescanning the watched directories");
    queue(watcher_.scan());
  }
  queue(std::move(batch.ready));
}

void Daemon::on_timer() {
  timer_.acknowledge();
  std::uint64_t now = unix_now();
  if (now >= next_safety_scan_) {
    // Catches roots created since, files a full disk made us skip, and
    // anything inotify could not tell us.
    queue(watcher_.scan());
    next_safety_scan_ = now + std::uint64_t(config_.expiry.check_interval.count());
  }
  if (auto rotated = key_store_->rotate_if_due(now); !rotated)
    spdlog::error("global-dedup key rotation (the old key stays): {}", rotated.error());
  expiry_pass();
}

void Daemon::queue(std::vector<Candidate> files) {
  for (auto& f : files)
    if (pending_paths_.insert(f.path.native()).second) pending_.push_back(std::move(f));
}

void Daemon::process_pending(std::chrono::milliseconds budget) {
  if (pending_.empty()) return;
  auto deadline = std::chrono::steady_clock::now() + budget;
  while (!pending_.empty() && std::chrono::steady_clock::now() < deadline) {
    Candidate c = std::move(pending_.front());
    pending_.pop_front();
    pending_paths_.erase(c.path.native());
    auto t0 = std::chrono::steady_clock::now();
    ingest_one(c);
    auto took = std::chrono::steady_clock::now() - t0;
    // Nothing else runs on this loop meanwhile, the watchdog's ping
    // included: say so when one file held it long enough to matter.
    if (took > kSlowIngest)
      spdlog::warn("{} held the work loop for {:.1f} s", c.path.native(), std::chrono::duration<double>(took).count());
    ping_watchdog_if_due();
  }
  // A big shard's ingest allocates in proportion to it and frees it all
  // again, but glibc keeps freed heap for reuse: give it back once the
  // queue is empty, so memory at rest does not follow the largest shard.
  if (pending_.empty()) {
    ::malloc_trim(0);
    if (filter_builder_ && index_->chunk_filter_due()) filter_builder_->request();
  }
}

FileOutcome Daemon::ingest_one(const Candidate& c) {
  FileOutcome o = FileOutcome::failed;
  try {
    o = ingester_->ingest_file(c, unix_now());
  } catch (const std::exception& e) {
    // Whatever went wrong with one file, the daemon keeps serving.
    spdlog::error("ingesting {}: {}", c.path, e.what());
  }
  if (o == FileOutcome::added || o == FileOutcome::failed) timer_rearm_wanted_ = true;  // its expiry may be the next
  if (o == FileOutcome::expired) expiry_pass_wanted_ = true;                            // its file may be due at once
  const auto now = std::chrono::steady_clock::now();
  if (o == FileOutcome::failed) {
    const shard::Error& why = ingester_->last_failure();
    if (is_passing_failure(why.rule)) {
      if (waiting_.empty()) last_free_bytes_ = space_of(config_.state_dir).free_bytes;
      waiting_.wait(c, why.rule, why.message, unix_now(), now);
    }
  } else {
    waiting_.settled(c.path.native());
    // A write went through: the others may fit now too.
    if (o == FileOutcome::added && !waiting_.empty()) waiting_.all_due_now(now);
  }
  return o;
}

void Daemon::retry_waiting() {
  if (waiting_.empty()) return;
  const auto now = std::chrono::steady_clock::now();
  if (now >= next_space_check_) {
    next_space_check_ = now + kSpaceCheckEvery;
    StateDirSpace space = space_of(config_.state_dir);
    if (space.known) {
      if (last_free_bytes_ && space.free_bytes >= *last_free_bytes_ + kSpaceReturned && waiting_.out_of_space()) {
        spdlog::info("{} free under {} (was {}): trying the {} waiting file(s) again", space.free_bytes,
                     config_.state_dir, *last_free_bytes_, waiting_.size());
        waiting_.all_due_now(now);
      }
      last_free_bytes_ = space.free_bytes;
    }
  }
  queue(waiting_.due(now));
}

void Daemon::expiry_pass() {
  expiry_pass_wanted_ = false;
  const std::uint64_t expired_before = counters_.shards_expired;
  if (auto r = expiry_->run(unix_now(), false); !r) spdlog::error("expiry: {}", r.error());
  // Expiry gave pages back to the index: waiting files may fit in them.
  if (counters_.shards_expired != expired_before && !waiting_.empty())
    waiting_.all_due_now(std::chrono::steady_clock::now());
  rearm_timer();
  publish_status(true);
}

void Daemon::steward_pass_if_due() {
  if (!steward_->any()) return;
  const std::uint64_t now = unix_now();
  if (now < next_steward_pass_) return;
  // In the steward's worker: a first pass over a large cache reads every
  // shard, which on this loop would hold up ingest and the watchdog. A merge
  // writes a new shard, which the watcher then queues like any other.
  if (!steward_->start_pass()) return;  // the last pass is still under way
  next_steward_pass_ = now + std::uint64_t(config_.xet_cache.interval.count());
}

void Daemon::rearm_timer() {
  timer_rearm_wanted_ = false;
  std::uint64_t now_ms = unix_now_ms();
  std::uint64_t now = now_ms / 1000;
  std::optional<std::uint64_t> due;
  try {
    due = expiry_->next_due(now);
  } catch (const std::exception& e) {
    spdlog::error("expiry: {}", e.what());
  }
  std::uint64_t wake =
      expiry::next_wake(now, {due, next_safety_scan_, key_store_->next_rotation()}, config_.expiry.check_interval);
  timer_.arm(expiry::delay_until(wake, now_ms));
}

void Daemon::ping_watchdog_if_due() {
  if (!watchdog_interval_) return;
  auto now = std::chrono::steady_clock::now();
  if (now < next_watchdog_) return;
  systemd::notify_watchdog();
  next_watchdog_ = now + *watchdog_interval_;
}

std::string Daemon::status_line() const {
  std::string s;
  // counts(), not stats(): this goes out with READY=1 and every few
  // seconds after, and stats() walks the freelist, cold after a restart.
  if (auto st = index_->counts(); st) {
    s = fmt::format("{} live shards, {} chunk entries, {} xorbs; {} expired, {} rejected", st->shards_live,
                    st->chunk_entries, st->xorbs, st->shards_expired, st->rejected);
  }
  if (!pending_.empty()) s += fmt::format("; {} files queued", pending_.size());
  if (!waiting_.empty())
    s += fmt::format("; {} files waiting{}", waiting_.size(), waiting_.out_of_space() ? " (disk full)" : "");
  return s;
}

void Daemon::publish_status(bool force) {
  auto now = std::chrono::steady_clock::now();
  if (!force && now < next_status_) return;
  next_status_ = now + kStatusEvery;
  std::string s = status_line();
  if (s == last_status_) return;
  last_status_ = s;
  systemd::notify_status(s);
}

// ---- reload -----------------------------------------------------------------

shard::Result<ReloadResult> Daemon::reload_config() {
  systemd::notify_reloading();
  ReloadResult out;
  if (!options_.config_file) {
    spdlog::info("reload: running on local defaults, nothing to reload");
    systemd::notify_ready(status_line());
    return out;
  }
  out.config_file = options_.config_file->native();
  auto loaded = load_config_file(*options_.config_file);
  if (auto* errors = std::get_if<std::vector<ConfigError>>(&loaded)) {
    std::string all;
    for (const auto& e : *errors) {
      spdlog::error("{}", e.to_string(out.config_file));
      all += (all.empty() ? "" : "; ") + e.to_string(out.config_file);
    }
    spdlog::error("reload: configuration not reloaded; still running with the previous one");
    systemd::notify_ready(status_line());
    return seam_error(kRuleBadConfig, all);
  }
  out.not_applied = apply_config(std::get<Config>(loaded), false);
  spdlog::info("configuration reloaded from {}", out.config_file);
  systemd::notify_ready(status_line());
  return out;
}

std::vector<std::string> Daemon::apply_config(const Config& next, bool initial) {
  // The key table says which keys wait for a restart (config/key_table.cpp).
  std::vector<std::string> not_applied;
  if (!initial) not_applied = changes_waiting_for_restart(config_, next);
  for (const auto& k : not_applied) spdlog::warn("not applied until a restart: {}", k);
  set_log_level(next.log_level);
  bool watch_changed = initial || next.watch != config_.watch;
  const std::optional<std::chrono::seconds> scrub_was = config_.index.scrub_interval;
  {
    std::lock_guard lock(config_mutex_);
    config_ = initial ? next : as_reload_applies(config_, next);
  }
  if (!initial && start_queue_drained_ && scrub_was != config_.index.scrub_interval) {
    next_scrub_pass_ = next_scrub_pass_after_reload(next_scrub_pass_, scrub_was, config_.index.scrub_interval,
                                                    std::chrono::steady_clock::now());
    std::lock_guard lock(health_mu_);
    health_.scrub_enabled = config_.index.scrub_interval.has_value();
  }
  ingester_->set_quarantine_dir(config_.quarantine_dir);
  cas_scopes_.configure(config_.watch, config_.xet_endpoint.config);
  learner_->set_endpoint_gid(endpoint_gid_of(config_.xet_endpoint));
  learner_->set_unknown_cas_answers(config_.xet_endpoint.unknown_cas_answers);
  if (auto listening = learner_->listen(learn_socket_of(config_)); !listening)
    spdlog::error("cannot learn what the local Xet endpoint's CAS accepts: {}", listening.error());
  expiry_->set_config(config_.expiry);
  {
    std::vector<fs::path> managed;
    for (const auto& w : config_.watch)
      if (w.manage == Manage::xet_cache) managed.push_back(fs::absolute(w.path));
    steward_->configure(std::move(managed), config_.xet_cache);
    next_steward_pass_ = 0;
  }
  key_store_->set_rotation(config_.global_dedup.key_rotation);
  if (serving_) frontend_.set_access(admin_gid_of(config_.admin_group), endpoint_gid_of(config_.xet_endpoint));
  apply_fleet(initial);
  if (watch_changed) {
    watcher_.set_roots(config_.watch);
    if (!initial) {
      std::string dirs;
      for (const auto& w : config_.watch) dirs += (dirs.empty() ? "" : ", ") + w.path.native();
      spdlog::info("now watching: {}", dirs.empty() ? "nothing" : dirs);
      queue(watcher_.scan());
    }
  }
  if (!initial) {
    expiry_pass_wanted_ = true;  // a shorter grace or a cap may make files due now
    next_safety_scan_ = unix_now() + std::uint64_t(config_.expiry.check_interval.count());
  }
  return not_applied;
}

// ---- the fleet ----------------------------------------------------------------

fleet::ConnectOptions Daemon::fleet_options() const {
  std::lock_guard lock(config_mutex_);
  fleet::ConnectOptions o;
  o.url = config_.fleet.url;
  o.host_name = config_.fleet.host;
  o.software_version = DEDUPD_VERSION;
  return o;
}

fleet_link::ReconcileOptions Daemon::reconcile_options() const {
  std::lock_guard lock(config_mutex_);
  return {config_.fleet.reconcile_interval, config_.fleet.reconcile_batch};
}

bool Daemon::fleet_enabled() const {
  std::lock_guard lock(config_mutex_);
  return config_.fleet.enabled();
}

std::optional<fleet_link::PublisherState> Daemon::fleet_state() const {
  std::lock_guard lock(fleet_mu_);
  if (!publisher_) return std::nullopt;
  auto state = publisher_->state();
  state.lookup_memory = fleet_lookup_->memory_in_use();
  return state;
}

shard::Result<std::uint64_t> Daemon::fleet_retry() {
  std::lock_guard lock(fleet_mu_);
  if (!publisher_) return seam_error(kRuleNoFleet, "no fleet configured");
  return publisher_->retry_parked();
}

// Loop thread. Never logs the url: it may carry a password.
void Daemon::apply_fleet(bool initial) {
  fleet::ConnectOptions o = fleet_options();
  fleet_lookup_->configure(o, config_.fleet.lookup_timeout, lookup_memory(config_.fleet));
  std::lock_guard lock(fleet_mu_);
  if (!config_.fleet.enabled()) {
    if (!publisher_ && !initial) return;
    publisher_.reset();
    // Nobody drains the outbox now; a later fleet starts from every live shard.
    if (auto r = index_->set_outbox(false, unix_now()); !r)
      spdlog::error("fleet: turning the outbox off: {}", r.error());
    if (!initial) spdlog::info("fleet: off");
    return;
  }
  if (auto r = index_->set_outbox(true, unix_now()); !r) {
    spdlog::error("fleet: turning the outbox on: {}; not publishing", r.error());
    return;
  }
  if (publisher_) {
    publisher_->configure(std::move(o), reconcile_options());
    return;
  }
  spdlog::info("fleet: on, this host is {}", o.host_name);
  publisher_ =
      std::make_unique<fleet_link::Publisher>(*index_, outbox_wake_, std::move(o), reconcile_options(), fleet_marks_);
}

// ---- admin actions (loop thread) --------------------------------------------

shard::Result<IndexHealth> Daemon::rebuild_index() {
  if (restart_for_rebuild_) return seam_error(kRuleBusy, "a rebuild is starting already");
  // After this answer has gone out: the restart stops the server.
  restart_due_ = std::chrono::steady_clock::now() + 300ms;
  IndexHealth h;
  h.state = "rebuilding";
  h.damage = "asked by an operator";
  spdlog::warn("an operator asked for the index to be rebuilt: dedupd starts again in 300 ms and rebuilds it");
  return h;
}

RescanResult Daemon::rescan() {
  counters_.rescans++;
  RescanResult r;
  auto files = watcher_.scan();
  r.scanned = files.size();
  for (const auto& f : files) {
    pending_paths_.erase(f.path.native());  // done now rather than later
    FileOutcome o = ingest_one(f);
    if (o == FileOutcome::added) r.ingested++;
    if (o == FileOutcome::rejected) r.rejected++;
    ping_watchdog_if_due();
  }
  std::erase_if(pending_, [&](const Candidate& c) { return !pending_paths_.contains(c.path.native()); });
  return r;
}

shard::Result<PurgeResult> Daemon::purge(bool dry_run) {
  auto r = expiry_->run(unix_now(), dry_run);
  if (!dry_run) rearm_timer();
  if (!r) {
    shard::Error e = r.error();
    e.message = "purge: " + e.message;
    return e;
  }
  return std::move(r).value();
}

shard::Result<index::RemoveOutcome> Daemon::remove(const shard::Hash& shard) {
  auto r = index_->remove(shard, unix_now());
  if (!r) {
    shard::Error e = r.error();
    e.message = "removing shard " + shard.to_string() + ": " + e.message;
    return e;
  }
  if (r->outcome != index::RemoveOutcome::removed) return r->outcome;
  counters_.shards_removed++;
  spdlog::info("shard {} removed on request", shard);
  timer_rearm_wanted_ = true;
  return r->outcome;
}

shard::Result<std::optional<index::ShardInfo>> Daemon::restore(const shard::Hash& shard) {
  auto r = index_->restore(shard);
  if (r && *r) spdlog::info("shard {} restored: it answers global-dedup queries again", shard.to_string());
  // Everywhere: its fleet marks go, and every host's copy answers again.
  std::lock_guard lock(fleet_mu_);
  if (r && publisher_) publisher_->unmark_set_aside(shard);
  return r;
}

bool Daemon::fleet_set_aside(const shard::Hash& shard, const std::optional<std::string>& cas) const {
  return fleet_marks_->marked(shard, cas);
}

UploadResult Daemon::ingest_upload(const std::vector<std::uint8_t>& bytes, const std::string& name) {
  UploadResult r = ingester_->ingest_upload(bytes, name, unix_now());
  timer_rearm_wanted_ = true;
  return r;
}

}  // namespace dedupd::daemon
