// The files with a given SHA-256 (GET /v1/sha256/<hex>): this index's, else
// the fleet's.
#pragma once

#include <vector>

#include "base/result.hpp"
#include "daemon/answers/lookups.hpp"
#include "shard/hash.hpp"

namespace dedupd::daemon::answers {

struct Sha256Answer {
  std::vector<shard::Hash> files;
  bool from_fleet = false;  // `files` are the fleet's: this index has none
  Reach reach = Reach::off;
};

base::Result<Sha256Answer> answer_sha256(const Lookups& lookups, const shard::Hash& sha256);

}  // namespace dedupd::daemon::answers
