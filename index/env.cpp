#include "index/env.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <set>

#include "index/observer.hpp"

namespace dedupd::index::lmdb {

namespace {

// LMDB forbids opening one environment twice in a process (its POSIX locks
// are per process: closing the second handle would drop the first's locks).
std::mutex g_registry_mu;
std::set<std::string> g_registry;

bool is_no_space(int rc) { return rc == ENOSPC || rc == EFBIG || rc == EDQUOT; }

// A growth step never goes below this on a nearly full disk.
constexpr std::uint64_t kMinGrowthStep = 64 * 1024;
// The first two growths of a write() call add 1/kGrowthShare of the map (at
// least this) each; each further growth in the same call doubles the step,
// so a large transaction needs few retries. Not doubling at once: a write a
// little larger than one step (a 10 MB shard at 10 M entries) would leave
// the map two steps ahead for good. data.mdb is as large as the map, so
// the share is what the file holds ahead of the pages ever used: an eighth
// left 10 % of a 10 M-entry index's file unused (4.9 B of its 54.6 B an
// entry), a 32nd up to 3 %, a 64th up to 1.6 %. Each growth redoes the
// write that did not fit (and remaps while no reader is inside): at 10 M
// entries a 64th means about 200 of them in all (bench_e2e's ingest).
constexpr std::uint64_t kGrowthShare = 64;
constexpr std::uint64_t kGrowthFloor = 1 << 20;

}  // namespace

std::string describe(int rc) { return mdb_strerror(rc); }

namespace {
std::atomic<void (*)(const char*)> g_assert_handler{nullptr};
void on_lmdb_assert(MDB_env*, const char* what) {
  if (auto* handler = g_assert_handler.load()) handler(what);
}
}  // namespace

void set_assert_handler(void (*handler)(const char*)) { g_assert_handler = handler; }

Error error_of(int rc, const std::string& what) {
  if (is_no_space(rc))
    return make_error(kRuleNoSpace, what + ": " + describe(rc) + " (nothing was written; the index is unchanged)");
  if (rc == EIO)
    return make_error(kRuleIo, what + ": " + describe(rc) +
                                   " (LMDB reports a short write, e.g. on a full disk, as this; the transaction was "
                                   "not committed and the index is unchanged)");
  return make_error(kRuleLmdb, what + ": " + describe(rc));
}

ReadTxn& ReadTxn::operator=(ReadTxn&& o) noexcept {
  if (this != &o) {
    release();
    env_ = o.env_, slot_ = o.slot_;
    o.env_ = nullptr, o.slot_ = nullptr;
  }
  return *this;
}

void ReadTxn::release() {
  if (env_ && slot_) env_->end_read(slot_);
  env_ = nullptr, slot_ = nullptr;
}

int ReadTxn::cursor(MDB_dbi dbi, MDB_cursor*& out) {
  for (auto& [d, c] : slot_->cursors)
    if (d == dbi) {
      out = c;
      return 0;
    }
  int rc = mdb_cursor_open(slot_->txn, dbi, &out);
  if (rc == 0) slot_->cursors.push_back({dbi, out});
  return rc;
}

void Env::destroy(ReadSlot* slot) {
  // Read-only cursors must be closed explicitly, before their transaction.
  for (auto& [d, c] : slot->cursors) mdb_cursor_close(c);
  if (slot->txn) mdb_txn_abort(slot->txn);
  delete slot;
}

Result<std::unique_ptr<Env>> Env::open(const EnvOptions& options) {
  if (!options.read_only && ::mkdir(options.dir.c_str(), 0750) != 0 && errno != EEXIST)
    return make_error(kRuleLmdb, "cannot create " + options.dir + ": " + std::strerror(errno));
  struct stat st {};
  if (::stat(options.dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return make_error(kRuleLmdb, options.dir + " is not a directory");
  std::string key = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  {
    std::lock_guard lock(g_registry_mu);
    if (!g_registry.insert(key).second)
      return make_error(kRuleAlreadyOpen, "the index in " + options.dir + " is already open in this process");
  }
  std::unique_ptr<Env> env(new Env(options));
  env->registry_key_ = key;

  int rc = mdb_env_create(&env->env_);
  if (rc != 0) {
    env->env_ = nullptr;
    return error_of(rc, "mdb_env_create");
  }
  if ((rc = mdb_env_set_maxdbs(env->env_, options.max_dbs)) != 0) return error_of(rc, "mdb_env_set_maxdbs");
  mdb_env_set_assert(env->env_, &on_lmdb_assert);
  if ((rc = mdb_env_set_maxreaders(env->env_, options.max_readers)) != 0) return error_of(rc, "mdb_env_set_maxreaders");
  // With MDB_WRITEMAP LMDB sets data.mdb's size to the map's: never ask
  // for less than the file has (that would cut off a larger map another
  // process grew).
  std::uint64_t map_size = options.map_size;
  struct stat data {};
  if (::stat((options.dir + "/data.mdb").c_str(), &data) == 0)
    map_size = std::max<std::uint64_t>(map_size, std::uint64_t(data.st_size));
  if ((rc = mdb_env_set_mapsize(env->env_, map_size)) != 0) return error_of(rc, "mdb_env_set_mapsize");
  // NOTLS: read transactions belong to the pool, not to a thread, so any
  // HTTP worker may renew any of them. NORDAHEAD: lookups are random reads;
  // readahead would only evict useful pages once the index outgrows RAM.
  // WRITEMAP: see the top of env.hpp.
  unsigned flags = MDB_NOTLS | MDB_NORDAHEAD | (options.read_only ? MDB_RDONLY : MDB_WRITEMAP);
  if (options.no_sync) flags |= MDB_NOSYNC;
  if ((rc = mdb_env_open(env->env_, options.dir.c_str(), flags, 0640)) != 0)
    return error_of(rc, "opening the index in " + options.dir);

  // Slots of readers that died (kill -9) would pin old pages for ever.
  int dead = 0;
  if ((rc = mdb_reader_check(env->env_, &dead)) != 0) return error_of(rc, "mdb_reader_check");
  env->stale_cleared_ = dead;
  if (dead > 0 && options.observer) options.observer->stale_readers_cleared(dead);

  MDB_stat ms;
  if (mdb_env_stat(env->env_, &ms) == 0) env->page_size_ = ms.ms_psize;
  // The map is reserved by the first write (reads need no reserved space):
  // start-up does not wait for it, and a full disk fails only writes.
  if ((rc = mdb_env_get_fd(env->env_, &env->fd_)) != 0) return error_of(rc, "mdb_env_get_fd");
  return env;
}

Env::~Env() {
  for (ReadSlot* slot : idle_) destroy(slot);
  idle_.clear();
  if (env_) mdb_env_close(env_);
  if (!registry_key_.empty()) {
    std::lock_guard lock(g_registry_mu);
    g_registry.erase(registry_key_);
  }
}

std::uint64_t Env::map_size() const {
  MDB_envinfo info;
  mdb_env_info(env_, &info);
  return info.me_mapsize;
}

Result<ReadTxn> Env::begin_read() {
  ReadSlot* slot = nullptr;
  {
    std::unique_lock lock(gate_mu_);
    gate_cv_.wait(lock, [&] { return !resizing_; });
    ++readers_inside_;
    if (!idle_.empty()) {
      slot = idle_.back();
      idle_.pop_back();
    }
  }
  int rc;
  if (slot) {
    rc = mdb_txn_renew(slot->txn);
    for (auto& [d, c] : slot->cursors)
      if (rc == 0) rc = mdb_cursor_renew(slot->txn, c);
  } else {
    slot = new ReadSlot;
    rc = mdb_txn_begin(env_, nullptr, MDB_RDONLY, &slot->txn);
    if (rc) slot->txn = nullptr;
  }
  if (rc != 0) {
    destroy(slot);
    end_read(nullptr);
    if (rc == MDB_MAP_RESIZED) {
      // Another process grew the file beyond our map: adopt its size, retry.
      if (auto s = adopt_foreign_size(); !s) return s.error();
      return begin_read();
    }
    return error_of(rc, "beginning a read transaction");
  }
  return ReadTxn(this, slot);
}

void Env::end_read(ReadSlot* slot) {
  if (slot) mdb_txn_reset(slot->txn);
  std::lock_guard lock(gate_mu_);
  if (slot) {
    // Keep as many as were ever used at once, up to the reader slots.
    if (idle_.size() < options_.max_readers) idle_.push_back(slot);
    else destroy(slot);
  }
  if (--readers_inside_ == 0 && resizing_) gate_cv_.notify_all();
}

Status Env::adopt_foreign_size() {
  std::unique_lock lock(gate_mu_);
  gate_cv_.wait(lock, [&] { return !resizing_; });
  resizing_ = true;
  gate_cv_.wait(lock, [&] { return readers_inside_ == 0; });
  // With MDB_WRITEMAP LMDB truncates data.mdb to the new map size, and the
  // size another process recorded can be below the file another one grew
  // (not committed yet): a shrink would put its mapped pages past the end
  // (SIGBUS). So grow to the file when it is larger, and take the recorded
  // size (0) only when that is larger still.
  std::uint64_t size = 0;
  struct stat st {};
  if (::fstat(fd_, &st) == 0 && std::uint64_t(st.st_size) > map_size()) size = std::uint64_t(st.st_size);
  int rc = mdb_env_set_mapsize(env_, size);
  resizing_ = false;
  gate_cv_.notify_all();
  if (rc != 0) return error_of(rc, "adopting the map size");
  return Ok{};
}

int Env::reserve(std::uint64_t size) {
  if (size <= reserved_) return 0;
  int err = ::posix_fallocate(fd_, off_t(reserved_), off_t(size - reserved_));
  if (err == 0) reserved_ = size;
  return err;
}

Status Env::grow(unsigned growths) {
  std::uint64_t old_size = map_size();
  if (old_size >= options_.max_map_size)
    return make_error(kRuleMapFull, "the index map is full at its maximum size (" + std::to_string(old_size) +
                                        " bytes); raise the maximum map size");
  std::uint64_t step = std::max(old_size / kGrowthShare, kGrowthFloor) << std::min(growths > 0 ? growths - 1 : 0, 24u);
  std::uint64_t new_size;
  for (;;) {
    new_size = std::min(old_size + step, options_.max_map_size);
    new_size = (new_size + page_size_ - 1) / page_size_ * page_size_;
    int err = reserve(new_size);
    if (err == 0) break;
    // Take what the disk still has, down to a small step.
    if (!is_no_space(err) || step <= kMinGrowthStep)
      return error_of(err, "reserving disk space to grow the index map to " + std::to_string(new_size) + " bytes");
    step /= 2;
  }
  {
    std::unique_lock lock(gate_mu_);
    gate_cv_.wait(lock, [&] { return !resizing_; });
    resizing_ = true;
    gate_cv_.wait(lock, [&] { return readers_inside_ == 0; });
    // Reset transactions in the pool hold no pages; they survive the remap.
    int rc = mdb_env_set_mapsize(env_, new_size);
    resizing_ = false;
    gate_cv_.notify_all();
    if (rc != 0) return error_of(rc, "growing the map to " + std::to_string(new_size) + " bytes");
  }
  if (options_.observer) options_.observer->map_grown(old_size, new_size);
  return Ok{};
}

Status Env::write(const std::function<TxnResult(MDB_txn*)>& body, const char* what) {
  if (options_.read_only)
    return make_error(kRuleArgument, std::string(what) + ": the index in " + options_.dir + " is open read-only");
  for (unsigned growths = 0;;) {
    // A write transaction may touch any page of the map: all of them must
    // have their blocks (the map may have changed since: another process).
    std::uint64_t size = map_size();
    if (int err = reserve(size))
      return error_of(
          err, std::string(what) + ": reserving disk space for the index map (" + std::to_string(size) + " bytes)");
    MDB_txn* raw = nullptr;
    int rc = mdb_txn_begin(env_, nullptr, 0, &raw);
    if (rc == MDB_MAP_RESIZED) {
      if (auto s = adopt_foreign_size(); !s) return s;
      continue;
    }
    if (rc != 0) return error_of(rc, std::string("beginning a write transaction for ") + what);
    WriteTxn txn(raw);
    std::uint64_t id = mdb_txn_id(raw);
    TxnResult result = body(txn.get());
    switch (result.kind()) {
      case TxnResult::Kind::rollback:
        return Ok{};
      case TxnResult::Kind::failed:
        return result.error();
      case TxnResult::Kind::lmdb:
        rc = result.lmdb_code();
        break;
      case TxnResult::Kind::commit:
        rc = txn.commit();
        if (rc == 0) {
          // A transaction that changed nothing commits without taking its id
          // (the next one gets it again): only a commit that did counts.
          MDB_envinfo info;
          if (on_commit_ && mdb_env_info(env_, &info) == 0 && info.me_last_txnid == id) on_commit_(id);
          return Ok{};
        }
        break;
    }
    if (rc != MDB_MAP_FULL) return error_of(rc, what);
    if (growths >= kMaxGrowths)
      return make_error(kRuleMapFull, std::string(what) + ": the transaction did not fit after growing the map " +
                                          std::to_string(kMaxGrowths) + " times (now " + std::to_string(map_size()) +
                                          " bytes)");
    // No write transaction may be live while the map is resized.
    txn.abort();
    if (auto s = grow(growths++); !s) return s;
  }
}

}  // namespace dedupd::index::lmdb
