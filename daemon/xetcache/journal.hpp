// The journal of pending deletions, in the daemon's state dir: the
// originals of merges still on disk, so a restart checks them again instead
// of forgetting them. One "endpoint\tmerged\toriginal" a line.
#pragma once

#include <string>
#include <vector>

namespace dedupd::daemon::xetcache {

struct JournalLine {
  std::string endpoint;
  std::string merged;
  std::string original;
};

// What the journal in `state_dir` holds; nothing when there is none.
std::vector<JournalLine> read_pending_journal(const std::string& state_dir);

// Replaces the journal whole (a temporary, fsync, rename, fsync of the
// dir). False, logged, when it cannot: the deletions then wait in memory
// only, and a restart merges those originals again rather than deleting
// them unchecked.
bool write_pending_journal(const std::string& state_dir, const std::vector<JournalLine>& lines);

}  // namespace dedupd::daemon::xetcache
