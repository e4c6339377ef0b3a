// Reader::lookup_chunks: a batch goes out as ONE statement: each query's raw
// form and its form under every live key, grouped by chunk-table partition
// (one "= ANY" array per partition, so each partition probes only its own
// keys). The answer carries the live key list too, so a key published since
// the last call is noticed in the same round trip (and the block asked again
// for it), with each key's generation, which says whether its key filter
// still holds every entry stored under it (fleet/key_filters.hpp).
#include <algorithm>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "fleet/answer_text.hpp"
#include "fleet/connection.hpp"
#include "fleet/fleet.hpp"
#include "fleet/host_name.hpp"
#include "fleet/key_filters.hpp"
#include "fleet/partitions.hpp"
#include "fleet/reader_sql.hpp"
#include "fleet/schema_version.hpp"
#include "fleet/sql.hpp"
#include "fleet/xorb_cache.hpp"

namespace dedupd::fleet {
namespace {

using namespace reader_sql;
using wire::Params;
using Clock = std::chrono::steady_clock;

// A chunk row's place: its xorb row id and chunk index in one key.
std::uint64_t place_of(std::int32_t xorb_id, std::int32_t chunk_index) {
  return (std::uint64_t(std::uint32_t(xorb_id)) << 32) | std::uint32_t(chunk_index);
}

// One form a query is asked in: which query, the stored hash expected, and
// the key (zero = raw).
struct Form {
  std::uint32_t query;
  Hash stored;
  Key key;
  std::int64_t prefix;  // of `stored`
};

}  // namespace

Result<Ok> Reader::lookup_chunks(std::span<const Hash> raw_hashes, ChunkAnswers& out, Deadline deadline,
                                 bool fresh_holders) {
  const auto started = Clock::now();
  out.clear();
  counters_ = {};
  if (auto c = ensure_connected(deadline); !c) return c.error();
  for (int round = 0; round < 2; ++round) {
    // Round 0 skips the keyed forms a key filter rules out; round 1 (after
    // the key list or a used filter's generation changed) asks every form.
    struct Asked {
      std::shared_ptr<const KeyFilter> filter;  // null: every form of this key is asked
      std::string generation;                   // the generation the filter was complete for
    };
    std::vector<Asked> asked(keys_.size());
    Asked raw;  // the raw forms' filter
    counters_.filtered_keys = 0;
    if (round == 0 && options_.raw_filter)
      for (const auto& live : live_)
        if (live.raw() && (raw.filter = filters_->usable(live.key, live.generation, epoch_)))
          raw.generation = live.generation;
    counters_.raw_filtered = raw.filter != nullptr;
    if (round == 0 && options_.key_filters)
      for (std::size_t j = 0; j < keys_.size(); ++j)
        for (const auto& live : live_)
          if (live.key == keys_[j] && (asked[j].filter = filters_->usable(live.key, live.generation, epoch_))) {
            asked[j].generation = live.generation;
            ++counters_.filtered_keys;
          }
    // Every form asked of every query; then, sorted by prefix (a flat
    // array: a node per form cost more than the rest of the preparation),
    // each prefix once in its partition's array.
    std::vector<Form> forms;
    forms.reserve(raw_hashes.size() * (1 + keys_.size()));
    auto add = [&](std::uint32_t q, const Hash& stored, const Key& key) {
      forms.push_back(Form{q, stored, key, wire::prefix_of(stored.data())});
    };
    // Form by form: a filter tests the whole block at once, each line
    // fetched ahead of its test (filters of a few MB miss the CPU's caches).
    std::vector<Hash> stored(raw_hashes.size());
    std::vector<std::int64_t> stored_prefixes(raw_hashes.size());
    std::vector<std::uint8_t> maybe;
    if (raw.filter) {
      for (std::size_t q = 0; q < raw_hashes.size(); ++q) stored_prefixes[q] = wire::prefix_of(raw_hashes[q].data());
      raw.filter->may_contain_many(stored_prefixes, maybe);
    }
    for (std::uint32_t q = 0; q < raw_hashes.size(); ++q)
      if (!raw.filter || maybe[q]) add(q, raw_hashes[q], Key{});
    for (std::size_t j = 0; j < keys_.size(); ++j) {
      // Many at once: one at a time, the keyed hashes of four keys cost a
      // miss about as much as its probe.
      shard::KeyedChunkHasher(keys_[j]).hash_many(raw_hashes, stored.data());
      for (std::size_t q = 0; q < raw_hashes.size(); ++q) stored_prefixes[q] = wire::prefix_of(stored[q].data());
      if (asked[j].filter) asked[j].filter->may_contain_many(stored_prefixes, maybe);
      for (std::uint32_t q = 0; q < raw_hashes.size(); ++q)
        if (!asked[j].filter || maybe[q]) add(q, stored[q], keys_[j]);
    }
    // Sorted as (prefix, form) pairs: moving 16 bytes, not a whole form.
    std::vector<std::pair<std::int64_t, std::uint32_t>> sorted(forms.size());
    for (std::uint32_t i = 0; i < forms.size(); ++i) sorted[i] = {forms[i].prefix, i};
    std::sort(sorted.begin(), sorted.end());
    std::vector<std::vector<std::int64_t>> by_partition(schema::kChunkPartitions);
    for (std::size_t i = 0; i < sorted.size(); ++i)
      if (i == 0 || sorted[i].first != sorted[i - 1].first)
        by_partition[schema::partition_of(sorted[i].first)].push_back(sorted[i].first);
    counters_.forms += raw_hashes.size() * (1 + keys_.size());
    counters_.forms_asked += forms.size();
    ++counters_.rounds;
    Params params;
    for (auto& p : by_partition) params.int8_array(p);
    const bool with_entries = probe_entries_;
    counters_.probed_entries = with_entries;
    auto rows = conn_->exec_prepared_until(with_entries ? kLookupEntriesStatement : kLookupStatement, params, deadline);
    if (!rows) {
      if (rows.error().rule != std::string(kRuleQuery)) drop_connection();
      return rows.error();
    }
    // The live keys first: if they changed, this answer may miss forms.
    std::vector<detail::LiveKey> live;
    auto list = read_key_rows(*rows, live);
    if (!list) return list.error();
    bool ask_again = false;
    if (list->digest != keys_digest_ && round == 0) {
      auto keys = parse_key_list(list->digest);
      if (!keys) return keys.error();
      keys_ = std::move(*keys);
      keys_digest_ = std::string(list->digest);
      ask_again = true;
    }
    // A filter used for a key whose generation moved since it was complete
    // may lack what was published meanwhile: those forms are asked again.
    // So may one whose generation is of other tables (a restore since).
    auto moved = [&](const Key& key, const Asked& a) {
      if (!a.filter) return false;
      if (list->epoch != epoch_) return true;
      return std::none_of(live.begin(), live.end(),
                          [&](const detail::LiveKey& l) { return l.key == key && l.generation == a.generation; });
    };
    ask_again = ask_again || moved(Key{}, raw);
    for (std::size_t j = 0; j < asked.size() && !ask_again; ++j) ask_again = moved(keys_[j], asked[j]);
    live_ = std::move(live);
    note_epoch(*xorbs_, epoch_, era_, list->epoch);
    if (ask_again) continue;

    // Candidates: each chunk row with each form its prefix picked. The
    // prefix only picks them: the xorb's key and the full stored hash in
    // its chunk entry decide, below.
    struct Candidate {
      const Form* form;
      std::int32_t xorb_id;
      std::int32_t chunk_index;
      int row;  // its row of the probe's answer (with_entries: its entry's fields in columns 3-6)
    };
    std::vector<Candidate> candidates;
    std::unordered_map<std::int32_t, std::int32_t> hits;  // per xorb row id
    std::vector<bool> entry_counted(with_entries ? std::size_t(rows->size()) : 0);
    // The server answers each partition's prefixes in index order, and the
    // partitions in turn: each prefix is looked for from the last one found,
    // from the start only if one comes out of order.
    auto cursor = sorted.begin();
    for (int r = 0; r < rows->size(); ++r) {
      if (rows->null(r, 0)) continue;  // a key row
      if (rows->bytes(r, 0).size() != 8 || rows->bytes(r, 1).size() != 8)
        return make_error(kRuleProtocol, "lookup answer with a malformed hit row");
      const std::int64_t p = rows->int8(r, 0), place = rows->int8(r, 1);
      if (cursor != sorted.begin() && std::prev(cursor)->first >= p) cursor = sorted.begin();
      cursor = std::lower_bound(cursor, sorted.end(), p, [](const auto& e, std::int64_t v) { return e.first < v; });
      const auto xorb_id = std::int32_t(place >> 32), chunk_index = std::int32_t(place & 0xffffffff);
      if (with_entries)
        for (int col = 3; col < 7; ++col)
          if (rows->bytes(r, col).size() != 4) return make_error(kRuleProtocol, "lookup answer with a malformed entry");
      for (; cursor != sorted.end() && cursor->first == p; ++cursor) {
        candidates.push_back({&forms[cursor->second], xorb_id, chunk_index, r});
        ++hits[xorb_id];
      }
    }

    // What the cache holds of each xorb hit, and what it lacks.
    struct Have {
      std::shared_ptr<const CachedXorb> cached;  // what the cache held
      CachedXorb fresh;                          // what the fill read (meta, holders, block)
      std::int64_t hits = 0;                     // counted against it, over lookups
      bool asked = false;                        // the fill was asked for this xorb
      bool read = false;                         // and answered for it
      bool holders_read = false;
      std::int32_t set = -1;  // its shard set in `out`
    };
    std::unordered_map<std::int32_t, Have> have;
    have.reserve(hits.size());
    std::vector<std::int32_t> fill_ids, fill_hits, fill_holders, slice_xorbs, slice_chunks;
    const auto now = Clock::now();
    for (const auto& [id, count] : hits) {
      Have& h = have[id];
      auto held = xorbs_->find(era_, id, count);
      h.cached = std::move(held.x);
      h.hits = held.hits;
      const bool holders_ok =
          h.cached && h.cached->has_holders && !fresh_holders && now - h.cached->holders_at <= options_.holders_max_age;
      const bool block_ok = h.cached && h.cached->block;
      if (h.cached && holders_ok && block_ok) continue;
      // Hit too seldom for its whole block (the fill's own rule, which
      // needs only the chunk count the cache holds): asking for its meta
      // again would only say so. Hits spread over thousands of xorbs are
      // mostly these: their meta cost the server and this side about 0.3 us
      // a hit each, on top of the slice.
      if (h.cached && holders_ok &&
          std::int64_t(shard::kEntrySize) * (std::int64_t(h.cached->chunks) + 1) >
              std::min(std::min<std::int64_t>(h.hits, INT32_MAX) * kWholeBlockBytesPerHit, xorbs_->budget()))
        continue;
      h.asked = true;
      fill_ids.push_back(id);
      fill_hits.push_back(block_ok ? 0 : std::int32_t(std::min<std::int64_t>(h.hits, INT32_MAX)));
      fill_holders.push_back(holders_ok ? 0 : 1);
    }
    if (!with_entries) {                         // else the probe read what the hits answer
      std::unordered_set<std::uint64_t> sliced;  // each entry once, whatever the forms it matched
      for (const Candidate& c : candidates) {
        const Have& h = have[c.xorb_id];
        if (h.cached && h.cached->block) continue;
        if (!sliced.insert(place_of(c.xorb_id, c.chunk_index)).second) continue;
        slice_xorbs.push_back(c.xorb_id);
        slice_chunks.push_back(c.chunk_index);
      }
    }
    std::optional<detail::Rows> filled;
    std::unordered_map<std::uint64_t, std::span<const std::uint8_t>> slices;
    if (!fill_ids.empty() || !slice_xorbs.empty()) {
      const auto sent = Clock::now();
      Params fp;
      fp.int4_array(fill_ids).int4_array(fill_hits).int4_array(fill_holders).int8(xorbs_->budget());
      fp.int4_array(slice_xorbs).int4_array(slice_chunks);
      auto f = conn_->exec_prepared_until(kFillStatement, fp, deadline);
      if (!f) {
        if (f.error().rule != std::string(kRuleQuery)) drop_connection();
        return f.error();
      }
      filled = std::move(*f);
      ++counters_.fills;
      std::unordered_map<std::int32_t, bool> asked_holders;
      for (std::size_t i = 0; i < fill_ids.size(); ++i) asked_holders[fill_ids[i]] = fill_holders[i] != 0;
      for (int r = 0; r < filled->size(); ++r) {
        const std::int32_t id = filled->int4(r, 0);
        if (!filled->null(r, 6)) {  // a sliced entry
          slices.emplace(place_of(id, filled->int4(r, 6)), filled->bytes(r, 4));
          ++counters_.entries_sliced;
          continue;
        }
        auto it = have.find(id);
        if (it == have.end()) return make_error(kRuleProtocol, "fill answer names a xorb not asked for");
        Have& h = it->second;
        h.read = true;
        ++counters_.xorbs_read;
        h.fresh.hash = filled->hash(r, 1);
        h.fresh.key = filled->null(r, 2) ? Key{} : filled->hash(r, 2);
        h.fresh.chunks = filled->int4(r, 3);
        if (h.fresh.chunks < 0) return make_error(kRuleProtocol, "a xorb with a negative chunk count");
        if (!filled->null(r, 4)) {
          auto block = filled->bytes(r, 4);
          // Published from a validated shard; checked again so an entry
          // read from it never runs off its end.
          if (block.size() != shard::kEntrySize * (std::uint64_t(h.fresh.chunks) + 1))
            return make_error(kRuleProtocol,
                              "stored CAS block of xorb " + h.fresh.hash.to_string() + " has the wrong size");
          h.fresh.block = std::make_shared<const std::vector<std::uint8_t>>(block.begin(), block.end());
          ++counters_.blocks_read;
        }
        if (asked_holders[id]) {
          h.holders_read = true;
          h.fresh.has_holders = true;
          h.fresh.holders_at = sent;
          if (!filled->null(r, 5)) h.fresh.holders = std::string(filled->text(r, 5));
          ++counters_.holders_read;
        }
      }
    }

    // The next probe reads the hits' entries with them when over a quarter
    // of this one's hits had no block, cached or read (hits spread over many
    // xorbs): a slice costs an index descent a hit, the heap row beside the
    // probe's own about a sixth of that; else the probe stays index-only.
    if (!candidates.empty()) {
      std::size_t without_block = 0;
      for (const Candidate& c : candidates) {
        const Have& h = have[c.xorb_id];
        without_block += !h.fresh.block && !(h.cached && h.cached->block);
      }
      probe_entries_ = without_block * 4 > candidates.size();
    }

    // Each candidate whose xorb, key and stored hash match its form.
    struct Found {
      std::uint32_t query;
      ChunkLocation location;
    };
    std::vector<Found> found;
    found.reserve(candidates.size());
    std::unordered_map<std::string_view, std::uint32_t> sets;
    for (const Candidate& c : candidates) {
      Have& h = have[c.xorb_id];
      // Asked and not answered: the xorb left the fleet between the two
      // statements.
      if (h.asked && !h.read) continue;
      const CachedXorb* meta = h.read ? &h.fresh : h.cached.get();
      if (!meta) continue;
      if (meta->key != c.form->key) continue;
      if (c.chunk_index < 0 || c.chunk_index >= meta->chunks)
        return make_error(kRuleProtocol, "a chunk row past the end of its xorb");
      shard::ChunkEntry e;
      const auto* block = h.fresh.block ? h.fresh.block.get() : h.cached ? h.cached->block.get() : nullptr;
      if (!block && with_entries) {
        // The prefix picked it; with the 4 bytes after it, 96 bits of the
        // stored hash decide (schema 6: the rest is in the block).
        if (std::memcmp(c.form->stored.data() + 8, rows->bytes(c.row, 3).data(), 4) != 0) continue;
        if (!entry_counted[std::size_t(c.row)]) {
          entry_counted[std::size_t(c.row)] = true;
          ++counters_.entries_sliced;
        }
        e.byte_start = std::uint32_t(rows->int4(c.row, 4));
        e.unpacked_bytes = std::uint32_t(rows->int4(c.row, 5));
        e.flags = std::uint32_t(rows->int4(c.row, 6));
      } else {
        const std::uint8_t* entry = nullptr;
        if (block) {
          entry = block->data() + shard::kEntrySize * (std::size_t(c.chunk_index) + 1);
        } else {
          auto it = slices.find(place_of(c.xorb_id, c.chunk_index));
          // Not asked about (its cached meta served) and no slice: the xorb
          // left the fleet between the two statements.
          if (it == slices.end() && !h.asked) continue;
          if (it == slices.end() || it->second.size() != shard::kEntrySize)
            return make_error(kRuleProtocol, "chunk entry of the wrong size");
          entry = it->second.data();
        }
        // The prefix only picked it: the full stored hash decides.
        if (std::memcmp(c.form->stored.data(), entry, 32) != 0) continue;
        e = shard::ChunkEntry::decode(entry);
      }
      if (h.set < 0) {
        const std::string& text = h.holders_read ? h.fresh.holders : h.cached->holders;
        auto [set, inserted] = sets.emplace(text, std::uint32_t(out.shard_sets.size()));
        if (inserted) {
          auto refs = parse_shard_list(text);
          if (!refs) return refs.error();
          out.shard_sets.push_back(std::move(*refs));
        }
        h.set = std::int32_t(set->second);
      }
      ChunkLocation loc;
      loc.xorb = meta->hash;
      loc.chunk_index = std::uint32_t(c.chunk_index);
      loc.byte_start = e.byte_start;
      loc.unpacked_bytes = e.unpacked_bytes;
      loc.byte_end = e.byte_start + e.unpacked_bytes;
      loc.flags = e.flags;
      loc.keyed = !meta->key.is_zero();
      loc.key = meta->key;
      loc.shard_set = std::uint32_t(h.set);
      found.push_back({c.form->query, loc});
    }
    // In query order (placed by count, not sorted: most queries have one
    // location), each query's by xorb and chunk index.
    out.first.assign(raw_hashes.size() + 1, 0);
    for (const Found& f : found) ++out.first[f.query + 1];
    for (std::size_t q = 0; q < raw_hashes.size(); ++q) out.first[q + 1] += out.first[q];
    out.locations.resize(found.size());
    {
      std::vector<std::uint32_t> at(out.first.begin(), out.first.end() - 1);
      for (Found& f : found) out.locations[at[f.query]++] = std::move(f.location);
    }
    for (std::size_t q = 0; q < raw_hashes.size(); ++q)
      if (out.first[q + 1] - out.first[q] > 1)
        std::sort(out.locations.begin() + out.first[q], out.locations.begin() + out.first[q + 1],
                  [](const ChunkLocation& a, const ChunkLocation& b) {
                    if (a.xorb != b.xorb) return a.xorb < b.xorb;
                    if (a.chunk_index != b.chunk_index) return a.chunk_index < b.chunk_index;
                    return a.key < b.key;  // the same xorb hash raw and keyed
                  });

    // What the fill read goes into the cache, with what the cache held of
    // the same xorb (its block; its holders when they were not read again).
    for (auto& [id, h] : have) {
      if (!h.read) continue;
      CachedXorb x = std::move(h.fresh);
      if (h.cached) {
        if (!x.block) x.block = h.cached->block;
        if (!h.holders_read) {
          x.has_holders = h.cached->has_holders;
          x.holders = h.cached->holders;
          x.holders_at = h.cached->holders_at;
        }
      }
      xorbs_->put(era_, id, std::move(x), h.hits);
    }
    have.clear();
    // Steps start only in the first half of the lookup's time and are sized
    // to end in it; each may run to the lookup's own deadline, so a slow
    // one still ends within the caller's bound and rarely costs the
    // connection. Never the raw filter's: its CAS blocks are most of the
    // fleet's (1.3 GB at 30 M entries), mostly not in the server's memory,
    // and at 30 M steps of them in lookups' spare time made 395 of a new
    // reader's 50 ms lookups time out; warm_up builds it.
    refresh_filters(started + (deadline.at - started) / 2, deadline, false);
    return Ok{};
  }
  return make_error(kRuleProtocol, "the live keys kept changing");
}

}  // namespace dedupd::fleet
