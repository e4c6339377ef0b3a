// Whether an error of the index says its file is damaged (not what its
// pages say) rather than a setting, a permission or the disk: damage is
// moved aside and rebuilt, the rest is reported.
#pragma once

#include <string>

#include "base/result.hpp"
#include "index/status.hpp"

namespace dedupd::daemon::core {

inline bool says_damaged(const base::Error& e) {
  if (e.rule == index::kRuleCorrupt) return true;
  if (e.rule != index::kRuleLmdb) return false;
  for (const char* code : {"MDB_CORRUPTED", "MDB_PAGE_NOTFOUND", "MDB_INVALID", "MDB_VERSION_MISMATCH"})
    if (e.message.find(code) != std::string::npos) return true;
  return false;
}

}  // namespace dedupd::daemon::core
