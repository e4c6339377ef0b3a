#include "daemon/watch/file_kind.hpp"

namespace dedupd::daemon::watch {

FileKind file_kind(std::string_view name) {
  // Dot-files are in-progress or hidden by convention ("." and ".." too).
  if (name.empty() || name.front() == '.') return FileKind::ignored;
  auto ends_with = [&](std::string_view suffix) { return name.size() > suffix.size() && name.ends_with(suffix); };
  if (ends_with(".mdb")) return FileKind::shard;
  if (ends_with(".caf")) return FileKind::bundle;
  return FileKind::ignored;  // includes *.mdb_temp
}

}  // namespace dedupd::daemon::watch
