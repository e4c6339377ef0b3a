// The LMDB environment: one per process and directory, RAII transactions, a
// pool of reusable read transactions, and map growth.
//
// Why MDB_WRITEMAP, and space reserved for the whole map: without it LMDB
// copies every page a write transaction dirties into malloc'd memory until
// the commit (tens of MB for a large shard, and the single pages stay on its
// free list), which was most of the daemon's private memory. With it the
// transaction writes into the mapped file, and LMDB makes data.mdb as large
// as the map; a page of a sparse file that the disk has no block for would be
// SIGBUS on first write, not an error. So every byte of the map has its
// blocks (posix_fallocate) before a write transaction may touch it: before
// the first write, before any write after the map changed, and before the
// map grows, in steps that shrink to whatever the disk still holds. A full
// disk is then a clean index.no_space before anything is written.
//
// Why the read gate: mdb_env_set_mapsize() remaps the file, so no read
// transaction of this process may be running while the map grows. Readers
// enter a gate (a counter under a mutex, held only to begin and end a
// transaction, never while LMDB works); growth closes the gate, waits for the
// readers inside to leave, resizes and reopens it. Growth is rare (the map
// doubles), so readers only ever wait for that, never for a write.
#pragma once

#include <lmdb.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "index/status.hpp"

namespace dedupd::index {

class Observer;

namespace lmdb {

std::string describe(int rc);
// index.hpp: set_lmdb_assert_handler.
void set_assert_handler(void (*handler)(const char*));
Error error_of(int rc, const std::string& what);

struct EnvOptions {
  std::string dir;
  std::uint64_t map_size = 0;
  std::uint64_t max_map_size = 0;
  unsigned max_readers = 0;
  unsigned max_dbs = 0;
  bool no_sync = false;  // benchmarks only: loses the last commits on power loss
  // MDB_RDONLY: an existing environment, mapped read-only; write() fails.
  // (LMDB still records its reader in lock.mdb.)
  bool read_only = false;
  Observer* observer = nullptr;
};

class Env;

// What a write body tells Env::write to do with its transaction: commit it,
// roll it back because there was nothing to do (not an error), or abort it
// for an LMDB code or for an error of the body's own (a record that does not
// decode, a limit). Converts from an LMDB return code, so a body can pass
// mdb_put's result on as it is: 0 commits, anything else aborts.
class [[nodiscard]] TxnResult {
 public:
  enum class Kind : std::uint8_t { commit, rollback, lmdb, failed };

  TxnResult(int lmdb_rc) : kind_(lmdb_rc == 0 ? Kind::commit : Kind::lmdb), rc_(lmdb_rc) {}
  TxnResult(Error error) : kind_(Kind::failed), error_(std::move(error)) {}
  static TxnResult commit() { return TxnResult(0); }
  static TxnResult rollback() {
    TxnResult r(0);
    r.kind_ = Kind::rollback;
    return r;
  }

  Kind kind() const { return kind_; }
  // True when the body may go on (nothing went wrong and nothing ended it):
  // `if (auto r = step(txn); !r.proceed()) return r;`.
  bool proceed() const { return kind_ == Kind::commit; }
  int lmdb_code() const { return rc_; }           // Kind::lmdb
  const Error& error() const { return *error_; }  // Kind::failed

 private:
  Kind kind_;
  int rc_ = 0;
  std::optional<Error> error_{};
};

// A pooled read transaction with the cursors opened on it so far: reusing
// both (mdb_txn_renew, mdb_cursor_renew) keeps malloc off the lookup path.
struct ReadSlot {
  MDB_txn* txn = nullptr;
  std::vector<std::pair<MDB_dbi, MDB_cursor*>> cursors;
};

// A read snapshot. Destruction returns the transaction to the pool (reset,
// not aborted) so the next reader only pays for mdb_txn_renew.
class ReadTxn {
 public:
  ReadTxn() = default;
  ReadTxn(ReadTxn&& o) noexcept : env_(o.env_), slot_(o.slot_) { o.env_ = nullptr, o.slot_ = nullptr; }
  ReadTxn& operator=(ReadTxn&& o) noexcept;
  ReadTxn(const ReadTxn&) = delete;
  ReadTxn& operator=(const ReadTxn&) = delete;
  ~ReadTxn() { release(); }
  MDB_txn* get() const { return slot_->txn; }
  // A cursor on `dbi` owned by the pool (never close it); one per table.
  int cursor(MDB_dbi dbi, MDB_cursor*& out);

 private:
  friend class Env;
  ReadTxn(Env* env, ReadSlot* slot) : env_(env), slot_(slot) {}
  void release();
  Env* env_ = nullptr;
  ReadSlot* slot_ = nullptr;
};

// A write transaction: aborted on destruction unless committed.
class WriteTxn {
 public:
  explicit WriteTxn(MDB_txn* txn) : txn_(txn) {}
  WriteTxn(const WriteTxn&) = delete;
  WriteTxn& operator=(const WriteTxn&) = delete;
  ~WriteTxn() {
    if (txn_) mdb_txn_abort(txn_);
  }
  MDB_txn* get() const { return txn_; }
  void abort() {
    if (txn_) mdb_txn_abort(txn_);
    txn_ = nullptr;
  }
  // LMDB frees the transaction whether commit succeeds or not.
  int commit() {
    int rc = mdb_txn_commit(txn_);
    txn_ = nullptr;
    return rc;
  }

 private:
  MDB_txn* txn_;
};

class Env {
 public:
  static Result<std::unique_ptr<Env>> open(const EnvOptions& options);
  ~Env();
  Env(const Env&) = delete;
  Env& operator=(const Env&) = delete;

  MDB_env* raw() const { return env_; }
  const EnvOptions& options() const { return options_; }

  Result<ReadTxn> begin_read();

  // Runs `body` in a write transaction and commits it when it says so.
  // MDB_MAP_FULL (from any put, or from the commit) aborts, grows the map and
  // runs `body` again from the start in a fresh transaction, so `body` must
  // build its outputs from scratch each time; after kMaxGrowths in one call
  // it is an index.map_full error. A rollback returns Ok; an LMDB code or the
  // body's own error aborts and is returned. Writers are serialised by the
  // caller (the Index holds its writer mutex).
  Status write(const std::function<TxnResult(MDB_txn*)>& body, const char* what);
  // Doubling from the smallest map reaches any max_map_size a 64-bit
  // address space allows well within this; more means a body that can
  // never fit, and is reported instead of looping.
  static constexpr unsigned kMaxGrowths = 48;
  // Called with the id of each transaction write() commits that changed
  // something, right after the commit, still under the caller's writer lock
  // (the chunk filter follows which snapshots it covers this way).
  void on_commit(std::function<void(std::uint64_t txn_id)> hook) { on_commit_ = std::move(hook); }

  std::uint64_t map_size() const;
  std::uint64_t page_size() const { return page_size_; }
  int stale_readers_cleared() const { return stale_cleared_; }

 private:
  friend class ReadTxn;
  Env(EnvOptions options) : options_(std::move(options)) {}
  void end_read(ReadSlot* slot);
  static void destroy(ReadSlot* slot);
  // `growths`: growths so far in this write() call; each one doubles the step.
  Status grow(unsigned growths);
  Status adopt_foreign_size();
  // Gives data.mdb blocks up to `size` bytes (writer only). 0 or an errno.
  int reserve(std::uint64_t size);

  EnvOptions options_;
  MDB_env* env_ = nullptr;
  std::uint64_t page_size_ = 4096;
  int stale_cleared_ = 0;
  std::string registry_key_;
  int fd_ = -1;                 // data.mdb, LMDB's descriptor
  std::uint64_t reserved_ = 0;  // bytes of data.mdb known to have their blocks (writer only)

  std::mutex gate_mu_;
  std::condition_variable gate_cv_;
  int readers_inside_ = 0;
  bool resizing_ = false;
  std::vector<ReadSlot*> idle_;  // reset read transactions, ready to renew
  std::function<void(std::uint64_t)> on_commit_;
};

}  // namespace lmdb
}  // namespace dedupd::index
