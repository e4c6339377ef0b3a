// The answer to POST /v1/chunk, written as the client reads it: a block of
// hashes from the spool is looked up (one read transaction), its results
// are written into the buffer libmicrohttpd hands over, then the next
// block. Two shapes: the documented {"results": [...], "found", "missing"}
// document, or NDJSON (one result a line). Memory is one block's results
// and what one read asks for, whatever the batch holds.
#pragma once

#include <memory>
#include <string>

#include "daemon/api/hash_spool.hpp"
#include "daemon/api/http.hpp"
#include "daemon/api/lookup_fields.hpp"
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

  shard::Result<std::size_t> read(char* buf, std::size_t max) override;

 private:
  // Appends results to pending_ until it holds `want` bytes or all is
  // written; false with error_ when a lookup fails.
  bool fill(std::size_t want);

  const index::Index& index_;
  std::shared_ptr<HashSpool> hashes_;
  LookupFields fields_;
  Shape shape_;
  Metrics& metrics_;
  Service* fleet_;
  fleet_link::FleetMisses remote_;
  fleet_link::Reach reach_ = fleet_link::Reach::off;  // the worst of the blocks so far
  std::span<const shard::Hash> block_;
  std::size_t next_ = 0;  // in block_
  index::BatchResult result_;
  std::string pending_;
  std::size_t sent_ = 0;  // of pending_
  std::uint64_t written_ = 0, found_ = 0;
  bool started_ = false, ended_ = false;
  shard::Error error_{};
};

}  // namespace dedupd::daemon::http
