// A file's reconstruction (GET /v1/file/<hash>): this index's record of it,
// else the fleet's.
#pragma once

#include <optional>

#include "base/result.hpp"
#include "daemon/answers/lookups.hpp"
#include "fleet/fleet.hpp"
#include "index/types.hpp"

namespace dedupd::daemon::answers {

struct FileAnswer {
  std::optional<index::FileInfo> local;
  // Asked only when `local` is empty.
  std::optional<fleet::FileAnswer> remote;
  Reach reach = Reach::off;

  bool found() const { return local || remote; }
};

base::Result<FileAnswer> answer_file(const Lookups& lookups, const shard::Hash& file);

}  // namespace dedupd::daemon::answers
