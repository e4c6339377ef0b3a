#include "daemon/api/chunk_answer.hpp"

#include <algorithm>
#include <cstring>

#include "daemon/api/fleet_json.hpp"
#include "daemon/api/metrics.hpp"
#include "daemon/api/service.hpp"

namespace dedupd::daemon::http {

ChunkAnswer::ChunkAnswer(const index::Index& index, std::shared_ptr<HashSpool> hashes, LookupFields fields, Shape shape,
                         Metrics& metrics, Service* fleet)
    : index_(index), hashes_(std::move(hashes)), fields_(fields), shape_(shape), metrics_(metrics), fleet_(fleet) {}

bool ChunkAnswer::fill(std::size_t want) {
  JsonOut out(pending_);
  if (!started_) {
    started_ = true;
    if (shape_ == Shape::document) out.raw("{").key("results").ch('[');
  }
  while (pending_.size() < want && !ended_) {
    if (next_ == block_.size()) {
      auto block = hashes_->next();
      if (!block) {
        error_ = block.error();
        return false;
      }
      block_ = *block;
      next_ = 0;
      if (block_.empty()) {
        if (shape_ == Shape::document) {
          out.raw("],").key("found").num(found_).raw(",").key("missing").num(written_ - found_);
          write_fleet_reach(out, reach_);
          out.raw("}\n");
        }
        ended_ = true;
        break;
      }
      if (auto st = index_.lookup_batch(block_, result_); !st) {
        error_ = st.error();
        return false;
      }
      remote_ = {};
      if (fleet_) {
        fleet_link::Reach reach = fleet_->fleet_misses(block_, result_, remote_);
        if (reach == fleet_link::Reach::unavailable || reach_ == fleet_link::Reach::off) reach_ = reach;
      }
      std::uint64_t hits = 0;
      for (std::size_t i = 0; i < block_.size(); ++i)
        hits += result_.first[i + 1] != result_.first[i] || !remote_.of(std::uint32_t(i)).empty();
      metrics_.count_lookups(block_.size(), hits);
    }
    for (; next_ < block_.size() && pending_.size() < want; ++next_) {
      auto locations = result_.of(next_);
      const FleetPart fleet{remote_, std::uint32_t(next_)};
      found_ += !locations.empty() || !remote_.of(fleet.query).empty();
      if (shape_ == Shape::document && written_) out.ch(',');
      write_lookup_result(out, fields_, block_[next_], locations, result_, &fleet);
      if (shape_ == Shape::lines) {
        // A line carries its own fleet mark: it may be read alone.
        if (remote_.reach != fleet_link::Reach::off) {
          pending_.pop_back();  // the result's closing brace
          write_fleet_reach(out, remote_.reach);
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
