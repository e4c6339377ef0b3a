#include "daemon/fleet_link/reader_pool.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "daemon/fleet_link/kept_filters.hpp"
#include "fleet/key_filters.hpp"

namespace dedupd::daemon::fleet_link {

namespace {
constexpr auto kStatusTimeout = std::chrono::seconds(5);
// An idle pool is checked this often even when nobody asked, so a link
// found down by the connector alone (nothing borrowed) still comes back.
constexpr auto kIdleCheck = std::chrono::seconds(1);

// A statement the server refused (a hot standby cancelling a read that
// conflicts with replay, say) says nothing about the other connections.
bool outage(const fleet::Error& e) { return e.rule != fleet::kRuleQuery; }
}  // namespace

FleetLookup::FleetLookup(fleet::ConnectOptions options, std::chrono::milliseconds timeout, LookupMemory memory,
                         std::filesystem::path kept_filters)
    : options_(std::move(options)),
      key_filters_(fleet::make_key_filters(memory.key_filters)),
      kept_filters_file_(std::move(kept_filters)),
      memory_(memory),
      xorb_cache_(std::make_shared<fleet::XorbCache>(memory.xorb_cache)),
      timeout_(timeout),
      patience_(silence_for(timeout)) {
  options_.key_filters_shared = key_filters_;
  options_.xorb_cache = xorb_cache_;
  connector_ = std::thread([this] { run_connector(); });
  heartbeat_ = std::thread([this] { run_heartbeat(); });
  filter_keeper_ = std::thread([this] { run_filter_keeper(); });
}

FleetLookup::~FleetLookup() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  beat_.notify_all();
  keep_.notify_all();
  kept_read_.notify_all();
  lendable_.notify_all();
  wake_.post();
  connector_.join();
  heartbeat_.join();
  filter_keeper_.join();
}

void FleetLookup::configure(fleet::ConnectOptions options, std::chrono::milliseconds timeout, LookupMemory memory) {
  {
    std::lock_guard lock(mu_);
    timeout_ = timeout;
    patience_.set_silence(silence_for(timeout));
    if (options.url == options_.url && options.host_name == options_.host_name && memory == memory_) return;
    options_ = std::move(options);
    if (memory.xorb_cache != memory_.xorb_cache) xorb_cache_ = std::make_shared<fleet::XorbCache>(memory.xorb_cache);
    memory_ = memory;
    // Another fleet, maybe: its keys are not these.
    key_filters_ = fleet::make_key_filters(memory.key_filters);
    options_.key_filters_shared = key_filters_;
    options_.xorb_cache = xorb_cache_;
    ++generation_;
    idle_.clear();
    xorb_cache_->clear();
    want_idle_ = 1;
    down_ = false;  // a new url is tried at once
  }
  beat_.notify_all();
  keep_.notify_all();
  lendable_.notify_all();
  wake_.post();
}

std::chrono::milliseconds FleetLookup::timeout() const {
  std::lock_guard lock(mu_);
  return timeout_;
}

LookupMemoryInUse FleetLookup::memory_in_use() const {
  std::shared_ptr<fleet::KeyFilters> filters;
  std::shared_ptr<fleet::XorbCache> cache;
  {
    std::lock_guard lock(mu_);
    filters = key_filters_;
    cache = xorb_cache_;
  }
  const auto s = filters->summary();
  return {.key_filter_bytes = std::uint64_t(s.bytes),
          .key_filter_max_bytes = std::uint64_t(filters->budget()),
          .key_filters = s.complete,
          .keys_over_budget = s.over_budget,
          .key_filter_entries = s.entries,
          .thinnest_bits = s.thinnest_bits,
          .raw_filter_entries = s.raw_entries,
          .raw_filter_bits = s.raw_bits,
          .raw_filter_over_budget = s.raw_over_budget,
          .xorb_cache_bytes = std::uint64_t(cache->bytes()),
          .xorb_cache_max_bytes = std::uint64_t(cache->budget())};
}

std::string FleetLookup::last_error() const {
  std::lock_guard lock(mu_);
  return last_error_;
}

std::optional<FleetLookup::Lease> FleetLookup::borrow(bool* busy) {
  std::unique_lock lock(mu_);
  if (idle_.empty() && !down_ && !stopping_) {
    // Others hold every connection: keep one more ready from now on. (The
    // link down: the connector is already at it, with backoff.)
    if (in_use_ > 0) want_idle_ = std::min(kMaxIdle, want_idle_ + 1);
    wake_.post();
    if (busy) {
      *busy = in_use_ > 0;
      return std::nullopt;
    }
    // Only while the server answers (pings, statements): a server that
    // never answered, or stopped, gives nothing back to wait for.
    const auto until =
        std::min(std::chrono::steady_clock::now() + std::min<std::chrono::milliseconds>(timeout_, kMaxLeaseWait),
                 patience_.answering_until());
    const std::uint64_t generation = generation_;
    lendable_.wait_until(lock, until,
                         [&] { return !idle_.empty() || down_ || stopping_ || generation != generation_; });
  }
  if (idle_.empty()) return std::nullopt;
  Lease l{std::move(idle_.back()), generation_, timeout_};
  idle_.pop_back();
  if (in_use_++ == 0) beat_.notify_all();
  return l;
}

void FleetLookup::settle(Lease lease, const std::optional<fleet::Error>& error) {
  if (!error) patience_.answered();
  std::lock_guard lock(mu_);
  --in_use_;
  if (!error) {
    if (lease.generation == generation_ && idle_.size() < kMaxIdle) {
      idle_.push_back(std::move(lease.reader));
      lendable_.notify_one();
    }
    return;
  }
  last_error_ = error->to_string();
  // Past its work bound while the server answers pings: this lookup was
  // slow (a huge block, a lock, a standby's replay conflict); the others
  // may go on.
  const bool slow = error->rule == std::string(fleet::kRuleTimeout) && patience_.answering();
  if (slow) spdlog::warn("fleet: a lookup outlasted its bound while the fleet database answers: {}", last_error_);
  if (outage(*error) && !slow && lease.generation == generation_) {
    // The others lead to the same server: none is lent until the connector
    // has reached it again.
    ++generation_;
    idle_.clear();
    if (!down_) spdlog::warn("fleet: lookups answer locally until the fleet database answers: {}", last_error_);
    down_ = true;
    beat_.notify_all();
    lendable_.notify_all();
  }
  wake_.post();
  // lease.reader, failed, is dropped here: never lent again.
}

template <class F>
Reach FleetLookup::with_reader(F&& f, bool* busy, std::size_t work_hashes) {
  auto lease = borrow(busy);
  if (!lease) return Reach::unavailable;
  const auto work = lease->timeout + std::chrono::duration_cast<std::chrono::milliseconds>(
                                         kWorkPerHash * std::int64_t(std::max<std::size_t>(1, work_hashes)));
  std::optional<fleet::Error> error = f(*lease->reader, fleet::Deadline::patient(lease->timeout, patience_, work));
  settle(std::move(*lease), error);
  return error ? Reach::unavailable : Reach::answered;
}

void FleetLookup::run_connector() {
  std::chrono::milliseconds backoff{0};
  for (;;) {
    fleet::ConnectOptions o;
    std::uint64_t generation;
    bool need;
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
      if (!down_) backoff = std::chrono::milliseconds(0);
      o = options_;
      generation = generation_;
      need = !o.url.empty() && idle_.size() < want_idle_;
    }
    if (!need) {
      wake_.wait(kIdleCheck);
      continue;
    }
    // Bounded by connect_timeout (our own deadline on a non-blocking
    // connect, schema check and prepare included); DNS may take longer,
    // on this thread only.
    auto r = fleet::Reader::connect(o);
    // Off the request path, the key filters may take the whole connect
    // bound; a reader lent before they are complete would spend each
    // lookup's spare time on them, of which a tight bound leaves none. Not
    // complete in time: lookups still answer, asking every form. The raw
    // filter is the keeper's alone: seconds of CAS blocks at 10 M entries
    // and more, which would hold up every connection the pool adds.
    // After the keeper has read the kept filters: a key this warm_up
    // started building could not take its kept filter in.
    {
      std::unique_lock lock(mu_);
      kept_read_.wait(lock, [&] { return kept_filters_read_ || stopping_; });
    }
    if (r) (void)(*r)->warm_up(fleet::Deadline::in(o.connect_timeout), false);
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
      if (r) {
        if (down_) {
          spdlog::info("fleet: lookups reach the fleet database again");
          xorb_cache_->clear();  // maybe another server now, or a restored database
        }
        down_ = false;
        backoff = std::chrono::milliseconds(0);
        // Made for an older url, or across an outage a request just found:
        // not lent; the next round connects again.
        if (generation == generation_) {
          idle_.push_back(std::move(r).value());
          lendable_.notify_one();
        }
        continue;
      }
      if (!down_)
        spdlog::warn("fleet: lookups answer locally until the fleet database answers: {}", r.error().to_string());
      last_error_ = r.error().to_string();
      down_ = true;
      lendable_.notify_all();
    }
    backoff = backoff.count() == 0 ? std::chrono::milliseconds(kFirstBackoff) : std::min(backoff * 2, kMaxBackoff);
    wake_.wait(backoff);
  }
}

// The key filters and the raw filter are built here, not on the request
// path: a lookup spends on them only what is left of its bound, which a
// tight bound and a large key (10 M keyed entries: 0.7 s of CAS blocks)
// never leave, nor the raw forms of a large fleet. Once a second
// (a key row query while they are complete), whole steps bounded by
// connect_timeout so that stopping is not held up for longer; a failure
// (the link down: the connector says so) is tried again next time.
//
// The filters are kept in a file across restarts (KeptFilters): read
// before the first build, written here, off every request's path.
void FleetLookup::run_filter_keeper() {
  constexpr auto kKeepEvery = std::chrono::seconds(1);
  std::unique_ptr<fleet::Reader> reader;
  std::uint64_t made_for = 0;
  KeptFilters kept(kept_filters_file_);
  std::unique_lock lock(mu_);
  // First of all, before any Reader builds a filter (the connector waits):
  // a host without a fleet holds none of them in memory.
  if (!options_.url.empty() && (options_.key_filters || options_.raw_filter)) {
    const std::shared_ptr<fleet::KeyFilters> set = key_filters_;
    lock.unlock();
    kept.load_into(set);
    lock.lock();
  }
  kept_filters_read_ = true;
  kept_read_.notify_all();
  // The first round at once: the filters read above are used once listed.
  for (bool first = true;; first = false) {
    if (!first) keep_.wait_for(lock, kKeepEvery, [&] { return stopping_ || made_for != generation_; });
    if (stopping_) {
      lock.unlock();
      kept.save_if_due(true);
      return;
    }
    if (options_.url.empty() || (!options_.key_filters && !options_.raw_filter)) continue;
    if (made_for != generation_) reader.reset();  // another url or set of filters, or after an outage
    made_for = generation_;
    const fleet::ConnectOptions o = options_;
    const std::shared_ptr<fleet::KeyFilters> set = key_filters_;
    lock.unlock();
    kept.load_into(set);
    // A Reader connects (again) within warm_up, with its own backoff.
    if (!reader) reader = fleet::Reader::lazy(o);
    (void)reader->warm_up(fleet::Deadline::in(o.connect_timeout));
    kept.save_if_due(false);
    lock.lock();
  }
}

void FleetLookup::run_heartbeat() {
  std::unique_ptr<fleet::Reader> reader;
  std::uint64_t made_for = 0;  // the generation `reader` was made for
  std::chrono::milliseconds slowest_ping{};
  std::unique_lock lock(mu_);
  for (;;) {
    // Connected as soon as there is a url, so that the first lookups have
    // their evidence too; pinging only while lookups are in flight.
    beat_.wait(lock, [&] {
      return stopping_ || (!options_.url.empty() && (in_use_ > 0 || !reader || made_for != generation_));
    });
    if (stopping_) return;
    const fleet::ConnectOptions o = options_;
    const std::chrono::milliseconds bound = timeout_;
    if (made_for != generation_) reader.reset();  // another url, or after an outage
    made_for = generation_;
    const bool ping = reader && in_use_ > 0;
    lock.unlock();
    // Its own connection, never lent: a ping must not wait behind a lookup.
    // No answer within a second (so that stopping is never held up for
    // long) is no evidence either way; a late one still is.
    constexpr auto ping_bound = std::chrono::seconds(1);
    const auto beat = std::clamp<std::chrono::milliseconds>(bound / 4, kMinBeat, kMaxBeat);
    bool failed = false;
    if (!reader) {
      // Within connect_timeout, as the connector connects: a connection
      // that answers is itself evidence.
      auto r = fleet::Reader::connect(o);
      if (r) {
        reader = std::move(r).value();
        patience_.answered();
      } else {
        failed = true;
      }
    } else if (ping) {
      const auto sent = std::chrono::steady_clock::now();
      if (reader->ping(fleet::Deadline::in(ping_bound))) {
        const auto now = std::chrono::steady_clock::now();
        patience_.answered(now);
        // The slowest recent ping, forgotten by an eighth a beat.
        slowest_ping =
            std::max(std::chrono::duration_cast<std::chrono::milliseconds>(now - sent), slowest_ping * 7 / 8);
        patience_.set_silence(silence_for(bound, slowest_ping));
      } else {
        reader.reset();  // connected again on the next round
      }
    }
    lock.lock();
    if (!failed) {
      beat_.wait_for(lock, beat, [&] { return stopping_; });
      continue;
    }
    // Not reached (down, or no schema yet): tried again after the
    // connector's longest backoff, or sooner when lookups start, but never
    // more often than its first.
    beat_.wait_for(lock, kFirstBackoff, [&] { return stopping_; });
    beat_.wait_for(lock, kMaxBackoff - kFirstBackoff,
                   [&] { return stopping_ || in_use_ > 0 || made_for != generation_; });
  }
}

Reach FleetLookup::chunks(std::span<const fleet::Hash> raw, fleet::ChunkAnswers& out, bool* busy) {
  return with_reader(
      [&](fleet::Reader& r, fleet::Deadline d) -> std::optional<fleet::Error> {
        auto res = r.lookup_chunks(raw, out, d);
        if (!res) return res.error();
        return std::nullopt;
      },
      busy, raw.size());
}

Reach FleetLookup::xorb(const fleet::Hash& h, std::optional<fleet::XorbAnswer>& out) {
  return with_reader([&](fleet::Reader& r, fleet::Deadline d) -> std::optional<fleet::Error> {
    auto res = r.xorb(h, d);
    if (!res) return res.error();
    out = std::move(res).value();
    return std::nullopt;
  });
}

Reach FleetLookup::file(const fleet::Hash& h, std::optional<fleet::FileAnswer>& out) {
  return with_reader([&](fleet::Reader& r, fleet::Deadline d) -> std::optional<fleet::Error> {
    auto res = r.file(h, d);
    if (!res) return res.error();
    out = std::move(res).value();
    return std::nullopt;
  });
}

Reach FleetLookup::files_with_sha256(const fleet::Hash& sha256, std::vector<fleet::Hash>& out) {
  return with_reader([&](fleet::Reader& r, fleet::Deadline d) -> std::optional<fleet::Error> {
    auto res = r.files_with_sha256(sha256, d);
    if (!res) return res.error();
    out = std::move(res).value();
    return std::nullopt;
  });
}

Reach FleetLookup::source_shard(const fleet::Hash& raw_chunk, const fleet::ShardXorbBounds& bounds, std::uint64_t now,
                                const std::optional<shard::CasScope>& scope,
                                const std::function<bool(const fleet::Hash& shard)>& set_aside,
                                std::optional<fleet::ShardXorbs>& out) {
  return with_reader([&](fleet::Reader& r, fleet::Deadline d) -> std::optional<fleet::Error> {
    fleet::ChunkAnswers holders;
    // The shards holding it as the database has them now, not as the
    // Reader's cache last read them: they are the reply's candidates.
    if (auto res = r.lookup_chunks(std::span(&raw_chunk, 1), holders, d, true); !res) return res.error();
    std::vector<fleet::ShardCandidate> candidates;
    if (holders.size() == 1)
      for (const fleet::ChunkLocation& loc : holders.of(0))
        for (const fleet::FleetShardRef& s : holders.shards(loc))
          if ((!scope || scope->admits(s.cas)) && !(set_aside && set_aside(s.shard)))
            candidates.push_back({s.shard, loc.xorb});
    auto res = r.shard_xorbs(candidates, bounds, now, d);
    if (!res) return res.error();
    out = std::move(res).value();
    return std::nullopt;
  });
}

Reach FleetLookup::status(fleet::Status& out, std::string& error) {
  auto lease = borrow();
  fleet::ConnectOptions o;
  {
    std::lock_guard lock(mu_);
    o = options_;
  }
  if (!lease) {
    // Its own connection, within the status bound: an operator asking
    // about the fleet wants its answer or the reason there is none.
    o.connect_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(kStatusTimeout);
    auto r = fleet::Reader::connect(o);
    if (!r) {
      error = r.error().to_string();
      return Reach::unavailable;
    }
    auto res = (*r)->status(fleet::Deadline::in(kStatusTimeout));
    if (!res) {
      error = res.error().to_string();
      return Reach::unavailable;
    }
    out = std::move(res).value();
    return Reach::answered;
  }
  auto res = lease->reader->status(fleet::Deadline::in(kStatusTimeout));
  std::optional<fleet::Error> failed;
  if (!res) failed = res.error();
  settle(std::move(*lease), failed);
  if (failed) {
    error = failed->to_string();
    return Reach::unavailable;
  }
  out = std::move(res).value();
  return Reach::answered;
}

}  // namespace dedupd::daemon::fleet_link
