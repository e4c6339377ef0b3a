// Which names in a watched directory dedupd takes. The Xet client writes
// ".<uuid>.mdb_temp" and renames it to "<hash>.mdb" when complete; bundles
// of shards are ".caf". Everything else is somebody else's file.
#pragma once

#include <string_view>

namespace dedupd::daemon::watch {

enum class FileKind {
  ignored,
  shard,   // *.mdb
  bundle,  // *.caf (Chunk Archive Format: several shards in one file)
};

FileKind file_kind(std::string_view file_name);

}  // namespace dedupd::daemon::watch
