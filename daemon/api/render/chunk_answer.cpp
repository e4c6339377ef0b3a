#include "daemon/api/render/chunk_answer.hpp"

#include <algorithm>
#include <cstring>

#include "daemon/api/http/metrics.hpp"
#include "daemon/api/render/fleet_json.hpp"
#include "daemon/api/service.hpp"

namespace dedupd::daemon::http {

ChunkAnswer::ChunkAnswer(const index::Index& index, std::shared_ptr<HashSpool> hashes, LookupFields fields, Shape shape,
                         Metrics& metrics, Service* fleet)
    : index_(index), hashes_(std::move(hashes)), fields_(fields), shape_(shape), metrics_(metrics), fleet_(fleet) {}

ChunkAnswer::~ChunkAnswer() {
  // A block looked up ahead refers to this answer's index and service.
  for (auto& f : ahead_)
    if (f.valid()) f.wait();
}

void ChunkAnswer::start_next(bool ahead) {
  Block b;
  auto next = hashes_->next();
  if (!next) {
    b.error = next.error();
    ready_ = std::move(b);
    return;
  }
  b.hashes.assign(next->begin(), next->end());
  spool_ended_ = b.hashes.empty();
  auto look_up = [this, ahead](Block blk) {
    if (blk.hashes.empty()) return blk;
    if (auto st = index_.lookup_batch(blk.hashes, blk.local); !st) {
      blk.error = st.error();
      return blk;
    }
    if (!fleet_) return blk;
    if (!ahead) {
      blk.reach = fleet_->fleet_misses(blk.hashes, blk.local, blk.remote);
      return blk;
    }
    auto reach = fleet_->fleet_misses_if_idle(blk.hashes, blk.local, blk.remote);
    blk.fleet_deferred = !reach;
    if (reach) blk.reach = *reach;
    return blk;
  };
  if (ahead && !b.hashes.empty()) ahead_.push_back(std::async(std::launch::async, look_up, std::move(b)));
  else ready_ = look_up(std::move(b));
}

ChunkAnswer::Block ChunkAnswer::take_next() {
  if (ahead_.empty() && !ready_) start_next(false);
  Block b;
  if (!ahead_.empty()) {
    b = ahead_.front().get();
    ahead_.pop_front();
  } else {
    b = std::move(*ready_);
    ready_.reset();
  }
  if (b.fleet_deferred) {
    // Asked in turn, with no lookup of this answer's in flight, so the
    // connections it held are back in the pool.
    for (auto& f : ahead_) f.wait();
    b.fleet_deferred = false;
    b.reach = fleet_->fleet_misses(b.hashes, b.local, b.remote);
  }
  // The next blocks are looked up while this one is written: on another
  // core, and with a fleet answering, their round trips overlap too.
  if (!b.error && !b.hashes.empty() && b.reach != fleet_link::Reach::unavailable)
    while (ahead_.size() < kAhead && !spool_ended_ && !ready_) start_next(true);
  return b;
}

bool ChunkAnswer::fill(std::size_t want) {
  JsonOut out(pending_);
  if (!started_) {
    started_ = true;
    if (shape_ == Shape::document) out.raw("{").key("results").ch('[');
  }
  while (pending_.size() < want && !ended_) {
    if (next_ == block_.hashes.size()) {
      block_ = take_next();
      next_ = 0;
      if (block_.error) {
        error_ = *block_.error;
        return false;
      }
      if (block_.hashes.empty()) {
        if (shape_ == Shape::document) {
          out.raw("],").key("found").num(found_).raw(",").key("missing").num(written_ - found_);
          write_fleet_reach(out, reach_);
          out.raw("}\n");
        }
        ended_ = true;
        break;
      }
      if (fleet_) {
        fleet_link::Reach reach = block_.reach;
        if (reach == fleet_link::Reach::unavailable || reach_ == fleet_link::Reach::off) reach_ = reach;
      }
      std::uint64_t hits = 0;
      for (std::size_t i = 0; i < block_.hashes.size(); ++i)
        hits += block_.local.first[i + 1] != block_.local.first[i] || !block_.remote.of(std::uint32_t(i)).empty();
      metrics_.count_lookups(block_.hashes.size(), hits);
    }
    for (; next_ < block_.hashes.size() && pending_.size() < want; ++next_) {
      auto locations = block_.local.of(next_);
      const FleetPart fleet{block_.remote, std::uint32_t(next_)};
      found_ += !locations.empty() || !block_.remote.of(fleet.query).empty();
      if (shape_ == Shape::document && written_) out.ch(',');
      write_lookup_result(out, fields_, block_.hashes[next_], locations, block_.local, &fleet);
      if (shape_ == Shape::lines) {
        // A line carries its own fleet mark: it may be read alone.
        if (block_.remote.reach != fleet_link::Reach::off) {
          pending_.pop_back();  // the result's closing brace
          write_fleet_reach(out, block_.remote.reach);
          out.ch('}');
        }
        out.ch('\n');
      }
      ++written_;
    }
  }
  return true;
}

shard::Result<std::size_t> ChunkAnswer::read(char* buf, std::size_t max) {
  std::size_t n = 0;
  while (n < max) {
    if (sent_ == pending_.size()) {
      pending_.clear();
      sent_ = 0;
      if (ended_) break;
      if (!fill(max - n)) return error_;
      continue;
    }
    std::size_t k = std::min(max - n, pending_.size() - sent_);
    std::memcpy(buf + n, pending_.data() + sent_, k);
    n += k;
    sent_ += k;
  }
  return n;
}

}  // namespace dedupd::daemon::http
