// The answer to POST /v1/chunk written as the client reads it: each block
// the answer layer hands over (daemon/answers/chunk_batch.hpp: looked up,
// its misses asked of the fleet, the next ones meanwhile) is written into
// the buffer libmicrohttpd hands over, then the next. Two shapes: the
// documented {"results": [...], "found", "missing"} document, or NDJSON
// (one result a line). Memory is the answer layer's three blocks and what
// one read asks for, whatever the batch holds.
#pragma once

#include <memory>
#include <string>

#include "daemon/answers/chunk_batch.hpp"
#include "daemon/api/http/http.hpp"
#include "daemon/api/render/lookup_fields.hpp"

namespace dedupd::daemon::api::http {
class Metrics;
}

namespace dedupd::daemon::api::render {

class ChunkStream : public http::BodyStream {
 public:
  enum class Shape { document, lines };
  ChunkStream(std::unique_ptr<answers::ChunkBlocks> blocks, LookupFields fields, Shape shape, http::Metrics& metrics);

  base::Result<std::size_t> read(char* buf, std::size_t max) override;

 private:
  // Appends results to pending_ until it holds `want` bytes or all is
  // written; false with error_ when a lookup fails.
  bool fill(std::size_t want);

  std::unique_ptr<answers::ChunkBlocks> blocks_;
  LookupFields fields_;
  Shape shape_;
  http::Metrics& metrics_;
  answers::ChunkBlock block_;  // being written
  std::size_t next_ = 0;       // in block_.hashes
  std::string pending_;
  std::size_t sent_ = 0;  // of pending_
  std::uint64_t written_ = 0, found_ = 0;
  bool started_ = false, ended_ = false;
  base::Error error_{};
};

}  // namespace dedupd::daemon::api::render
