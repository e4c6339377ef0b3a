#include "daemon/ingest/quarantine.hpp"

#include <cerrno>
#include <system_error>

namespace dedupd::daemon::ingest {

namespace fs = std::filesystem;

std::variant<fs::path, std::string> move_to_quarantine(const fs::path& file, const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return "cannot create " + dir.string() + ": " + ec.message();
  fs::path target = dir / file.filename();
  for (int i = 1; fs::exists(fs::symlink_status(target, ec)); ++i) {
    if (i > 1000) return "too many quarantined files named " + file.filename().string();
    target = dir / (file.filename().string() + "." + std::to_string(i));
  }
  fs::rename(file, target, ec);
  if (ec == std::errc::cross_device_link) {
    // Another file system: copy, then drop the original.
    ec.clear();
    fs::copy_file(file, target, ec);
    if (!ec) fs::remove(file, ec);
  }
  if (ec) return "cannot move to " + target.string() + ": " + ec.message();
  return target;
}

}  // namespace dedupd::daemon::ingest
