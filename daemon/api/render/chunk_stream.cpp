#include "daemon/api/render/chunk_stream.hpp"

#include <algorithm>
#include <cstring>

#include "daemon/api/http/metrics.hpp"
#include "daemon/api/render/fleet_json.hpp"

namespace dedupd::daemon::api::render {

ChunkStream::ChunkStream(std::unique_ptr<answers::ChunkBlocks> blocks, LookupFields fields, Shape shape,
                         http::Metrics& metrics)
    : blocks_(std::move(blocks)), fields_(fields), shape_(shape), metrics_(metrics) {}

bool ChunkStream::fill(std::size_t want) {
  JsonOut out(pending_);
  if (!started_) {
    started_ = true;
    if (shape_ == Shape::document) out.raw("{").key("results").ch('[');
  }
  while (pending_.size() < want && !ended_) {
    if (next_ == block_.hashes.size()) {
      block_ = blocks_->next();
      next_ = 0;
      if (block_.error) {
        error_ = *block_.error;
        return false;
      }
      if (block_.hashes.empty()) {
        if (shape_ == Shape::document) {
          out.raw("],").key("found").num(found_).raw(",").key("missing").num(written_ - found_);
          write_fleet_reach(out, blocks_->reach());
          out.raw("}\n");
        }
        ended_ = true;
        break;
      }
      metrics_.count_lookups(block_.hashes.size(), block_.hits());
    }
    for (; next_ < block_.hashes.size() && pending_.size() < want; ++next_) {
      const FleetPart fleet{block_.remote, std::uint32_t(next_)};
      found_ += block_.found(next_);
      if (shape_ == Shape::document && written_) out.ch(',');
      write_lookup_result(out, fields_, block_.hashes[next_], block_.local.of(next_), block_.local, &fleet);
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

base::Result<std::size_t> ChunkStream::read(char* buf, std::size_t max) {
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

}  // namespace dedupd::daemon::api::render
