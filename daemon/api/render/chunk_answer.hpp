// The answer to POST /v1/chunk, written as the client reads it: a block of
// hashes from the spool is looked up (one read transaction), its results
// are written into the buffer libmicrohttpd hands over, then the next
// block. Two shapes: the documented {"results": [...], "found", "missing"}
// document, or NDJSON (one result a line). Memory is three blocks' results
// (below) and what one read asks for, whatever the batch holds.
//
// A batch of more than one block has its next two blocks looked up, each on
// a helper thread, while this one is written: the lookups (most of the
// work) take a second core, beside the JSON, the socket and the client.
// With a fleet, each helper asks the fleet for its block's misses on a
// pooled connection of its own: the fleet's round trips and the database's
// work overlap too.
// A block asked ahead that finds every connection lent out is not answered
// "unavailable": it is asked again in turn, once the lookups in flight are
// done (fleet_misses_if_idle). Memory: three blocks.
#pragma once

#include <deque>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daemon/api/http/hash_spool.hpp"
#include "daemon/api/http/http.hpp"
#include "daemon/api/render/lookup_fields.hpp"
#include "daemon/fleet/answers.hpp"
#include "index/index.hpp"

namespace dedupd::daemon {
class Service;
}  // namespace dedupd::daemon

namespace dedupd::daemon::http {

class Metrics;

class ChunkAnswer : public BodyStream {
 public:
  enum class Shape { document, lines };
  // `fleet`: where each block's local misses are asked of the fleet (null:
  // this host's index alone).
  ChunkAnswer(const index::Index& index, std::shared_ptr<HashSpool> hashes, LookupFields fields, Shape shape,
              Metrics& metrics, Service* fleet = nullptr);

  ~ChunkAnswer() override;
  ChunkAnswer(const ChunkAnswer&) = delete;
  ChunkAnswer& operator=(const ChunkAnswer&) = delete;

  shard::Result<std::size_t> read(char* buf, std::size_t max) override;

 private:
  // One block's hashes and answers, local and fleet.
  struct Block {
    std::vector<shard::Hash> hashes;
    index::BatchResult local;
    fleet_link::FleetMisses remote;
    fleet_link::Reach reach = fleet_link::Reach::off;
    bool fleet_deferred = false;  // asked ahead, every connection was lent: ask in turn
    std::optional<shard::Error> error;
  };
  // Reads the next block of the spool (on this thread: the spool is not
  // shared) and looks it up, on a helper thread when `ahead`.
  void start_next(bool ahead);
  static constexpr std::size_t kAhead = 2;  // blocks looked up ahead, at most
  // The block start_next started, looked up; empty hashes at the end.
  Block take_next();

  // Appends results to pending_ until it holds `want` bytes or all is
  // written; false with error_ when a lookup fails.
  bool fill(std::size_t want);

  const index::Index& index_;
  std::shared_ptr<HashSpool> hashes_;
  LookupFields fields_;
  Shape shape_;
  Metrics& metrics_;
  Service* fleet_;
  fleet_link::Reach reach_ = fleet_link::Reach::off;  // the worst of the blocks so far
  Block block_;                                       // being written
  std::size_t next_ = 0;                              // in block_.hashes
  std::deque<std::future<Block>> ahead_;              // the next blocks, looked up meanwhile, in order
  bool spool_ended_ = false;                          // the spool gave its last block
  std::optional<Block> ready_;                        // or already looked up (no helper thread)
  std::string pending_;
  std::size_t sent_ = 0;  // of pending_
  std::uint64_t written_ = 0, found_ = 0;
  bool started_ = false, ended_ = false;
  shard::Error error_{};
};

}  // namespace dedupd::daemon::http
