// The key filters: per live fleet key, a KeyFilter of the prefixes of every
// chunk entry stored under it, and the key "generation" it is complete for;
// and the raw filter, of every raw chunk entry, kept the same way as the
// filter of the key of zeros (its generation: reader_sql::kRawGeneration).
// The generation is the xmin of the key's dedupd.chunk_key row: every
// transaction that adds or removes xorbs under a key updates that row (the
// writer's use count), so while a lookup's snapshot shows the same xmin it
// shows the same keyed xorbs, and a filter complete for that generation
// cannot hide an entry. Any other generation: the filter is not used.
// Built from the xorbs' stored CAS blocks (the stored hashes), a bounded
// step at a time, so a refresh fits in a lookup's spare time.
//
// One set serves every Reader of a pool (ConnectOptions::key_filters_shared):
// a filter costs its CAS blocks once, not once per connection. Thread-safe;
// one Reader at a time steps a key, over its own connection and outside the
// lock, into a filter nobody reads yet; the others go on with the filter
// complete for the generation they see.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "fleet/connection.hpp"
#include "fleet/fleet.hpp"
#include "fleet/key_filter.hpp"
#include "shard/keys.hpp"

namespace dedupd::fleet {

class KeyFilters {
 public:
  // At most `budget` bytes of filter in all. A key's filter takes 16 bits
  // an entry while the budget has room, fewer (down to 4: more false
  // positives) when it has less; a key whose filter would not fit even so
  // is asked in every form until its generation moves.
  explicit KeyFilters(std::int64_t budget);

  // The entries a key's filter is sized for when it holds `entries`: half
  // as many again, at least kMinGrowth more. Outgrown, a filter starts
  // over and fetches every CAS block of its key again (10 M keyed entries:
  // 480 MB, 0.7 s), so the room trades memory against how often that is.
  static constexpr std::size_t kMinGrowth = 65536;
  static std::size_t room_for(std::size_t entries);
  KeyFilters(const KeyFilters&) = delete;
  KeyFilters& operator=(const KeyFilters&) = delete;

  // The filter of that key when it is complete for `generation` as seen in
  // `epoch` (the Reader's name for the server and its tables: a generation
  // means nothing in another), else null. Stays valid, unchanged, while held.
  std::shared_ptr<const KeyFilter> usable(const shard::Key& key, std::string_view generation,
                                          std::string_view epoch) const;

  enum class Step : std::uint8_t {
    complete,   // the filter is complete for the generation it last listed
    more,       // a step was made; more are needed
    elsewhere,  // another Reader is stepping this key now
    stopped,    // nothing more will come of this generation: over the budget
    gone,       // the key row is gone: its filter is dropped
  };
  // One step towards a filter complete for the key's current generation:
  // list the key's xorbs, or fetch the CAS blocks of as many as should
  // arrive in `seconds`. The statement is bounded by `deadline` (past it
  // the connection is left mid-statement: fleet.timeout).
  Result<Step> step(detail::Connection& c, const detail::LiveKey& key, std::string_view epoch, double seconds,
                    std::chrono::steady_clock::time_point deadline);
  // True when that key's filter for `generation` (seen in `epoch`) did not
  // fit the budget: nothing will come of stepping it.
  bool over_budget(const shard::Key& key, std::string_view generation, std::string_view epoch) const;
  // Drops the filters of keys not in `live`.
  void keep_only_live(const std::vector<detail::LiveKey>& live);

  // How long the last step's statement took: a step must fit in what is left.
  double last_step_seconds() const;
  std::int64_t budget() const { return budget_; }
  // What an operator is shown: the bytes the filters take (of budget()),
  // the keys whose filter is in use and the entries they hold, those over
  // the budget, and the fewest bits an entry a filter in use has (16 while
  // there is room).
  struct Summary {
    std::int64_t bytes = 0;  // the raw filter's included
    std::size_t complete = 0;
    std::uint64_t entries = 0;  // what the keys' filters in use hold
    std::size_t over_budget = 0;
    int thinnest_bits = 0;  // 0: none in use
    // The raw forms' filter (the key of zeros), apart from the keys'.
    std::uint64_t raw_entries = 0;
    std::int64_t raw_bytes = 0;  // of `bytes`
    int raw_bits = 0;            // 0: not in use
    bool raw_over_budget = false;
  };
  Summary summary() const;
  // What is left of the budget, and the chunk entries fetched from CAS
  // blocks since the set was made (what building the filters cost).
  std::int64_t budget_left() const;
  std::uint64_t entries_fetched() const;

  // What a restart may keep (fleet/key_filters_file.hpp): each key's filter
  // with the xorbs it holds (sorted), none that a Reader is building. A
  // (xorb hash, key) form always has the same CAS block, so the pair stays
  // true in any database: taken in again by adopt(), the filter is used
  // once its key's xorbs are listed, and only xorbs not held are fetched.
  struct Kept {
    shard::Key key{};
    std::shared_ptr<const KeyFilter> filter;
    std::vector<shard::Hash> xorbs;  // sorted
  };
  std::vector<Kept> kept() const;
  // False (and nothing taken) when the set holds anything of that key
  // already, or the filter does not fit what is left of the budget (the
  // raw filter: half of it), or `xorbs` is not sorted.
  bool adopt(Kept kept);
  // Moves each time what kept() returns changes; `filters`: how many it
  // returns now. A caller keeps a file up to date by these, not by copies.
  struct KeptState {
    std::uint64_t version = 0;
    std::size_t filters = 0;
  };
  KeptState kept_state() const;

 private:
  struct Listed {
    std::int32_t id;  // the listing connection's row id, to fetch it
    std::int32_t chunks;
    shard::Hash xorb;
  };
  struct OfKey {
    std::shared_ptr<const KeyFilter> filter;  // complete for `complete_for`; read by lookups
    std::string complete_for;                 // ("": none)
    std::string epoch;                        // the generations above are of this epoch
    // The filter being built, for the generation listed at `listed_at`,
    // with what it holds already (`have`) and what is still to fetch.
    // Xorbs by hash, not row id: a (xorb hash, key) form always has the
    // same CAS block, while ids and generations may be handed out again by
    // a promoted standby.
    std::shared_ptr<KeyFilter> building;
    std::vector<shard::Hash> have;  // sorted
    std::string listed_at;          // ("": list again)
    std::vector<Listed> todo;
    bool stepping = false;        // a Reader is at it, outside the lock
    std::int64_t reserved = 0;    // of the budget
    std::string over_budget_for;  // generation whose filter did not fit ("": none)
  };
  Result<Step> list(std::unique_lock<std::mutex>& lock, detail::Connection& c, OfKey& k, const detail::LiveKey& key,
                    std::chrono::steady_clock::time_point deadline);
  Result<Step> fetch(std::unique_lock<std::mutex>& lock, detail::Connection& c, OfKey& k, double seconds,
                     std::chrono::steady_clock::time_point deadline);
  static Step finish(OfKey& k);
  // Sets k's share of the budget to `bytes`; false (and unchanged) when
  // that would pass the budget.
  bool resize_reservation(OfKey& k, std::int64_t bytes);
  // That key's state when its generations are of `epoch`, else null. Under mu_.
  const OfKey* of_epoch(const shard::Key& key, std::string_view epoch) const;

  const std::int64_t budget_;
  mutable std::mutex mu_;
  std::map<shard::Key, OfKey> by_key_;  // under mu_; nodes stay put while stepped outside it
  std::int64_t budget_left_;            // under mu_
  // How fast CAS blocks came in (entries per second; 0: not measured yet),
  // and how long the last step's statement took: a step is sized to what
  // should arrive in the time it is given.
  double entries_per_second_ = 0;      // under mu_
  double last_step_seconds_ = 0;       // under mu_
  std::uint64_t entries_fetched_ = 0;  // under mu_
  std::uint64_t kept_version_ = 0;     // under mu_
};

}  // namespace dedupd::fleet
