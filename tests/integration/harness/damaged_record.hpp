// An index as a fleet host leaves it (the outbox on) holding some shards,
// one of whose file records is scribbled over as a bad disk block would
// leave it: that shard no longer rebuilds from the index, so the publisher
// parks its outbox entry. Written in this process before dedupd starts on it.
#pragma once

#include <filesystem>
#include <vector>

#include "harness/make_shard.hpp"

namespace dedupd::itest {

// Throws when the index cannot be made.
void index_with_a_damaged_file_record(const std::filesystem::path& index_dir,
                                      const std::vector<const MadeShard*>& shards, const MadeShard& damaged);

}  // namespace dedupd::itest
