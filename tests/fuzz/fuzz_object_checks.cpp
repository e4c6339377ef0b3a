// The file of checked download objects' digests as dedupd reads it back at
// a start (daemon/answers/object_checks_file.hpp).
//
// Properties beyond "no crash": every object taken is a well-formed cache
// key, no more than asked for are kept, and what is taken, written as the
// file writes it and read again, is the same.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string_view>

#include "daemon/answers/object_checks_file.hpp"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  using dedupd::daemon::answers::ObjectChecksFile;
  const std::size_t keep = 1 + data[0] % 8;
  const auto loaded =
      ObjectChecksFile::parse(std::string_view(reinterpret_cast<const char*>(data + 1), size - 1), keep);
  check(loaded.digests.size() <= keep && loaded.skipped <= loaded.lines);
  std::ostringstream again;
  for (const auto& [key, digest] : loaded.digests) {
    check(key.size() > 70 && key.substr(0, 5) == "xet1:");
    again << digest.to_string() << ' ' << key << '\n';
  }
  const auto reread = ObjectChecksFile::parse(again.str(), keep);
  check(reread.digests == loaded.digests && reread.skipped == 0);
  return 0;
}
