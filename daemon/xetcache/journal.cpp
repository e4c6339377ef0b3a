#include "daemon/xetcache/journal.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <spdlog/spdlog.h>

namespace dedupd::daemon::xetcache {

namespace {
constexpr const char* kStewardJournalName = "xet-cache-pending";
}  // namespace

std::vector<JournalLine> read_pending_journal(const std::string& state_dir) {
  std::vector<JournalLine> lines;
  std::ifstream in(state_dir + "/" + kStewardJournalName);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    JournalLine l;
    if (!std::getline(fields, l.endpoint, '\t') || !std::getline(fields, l.merged, '\t') ||
        !std::getline(fields, l.original))
      continue;
    lines.push_back(std::move(l));
  }
  return lines;
}

bool write_pending_journal(const std::string& state_dir, const std::vector<JournalLine>& lines) {
  const std::string path = state_dir + "/" + kStewardJournalName;
  const std::string temp = path + ".tmp";
  std::string text;
  for (const auto& l : lines) text += l.endpoint + "\t" + l.merged + "\t" + l.original + "\n";
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  bool ok = fd >= 0;
  if (ok) ok = ::write(fd, text.data(), text.size()) == ssize_t(text.size()) && ::fsync(fd) == 0;
  if (fd >= 0 && ::close(fd) != 0) ok = false;
  if (ok) ok = ::rename(temp.c_str(), path.c_str()) == 0;
  if (ok) {
    const int dfd = ::open(state_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      ok = ::fsync(dfd) == 0;
      ::close(dfd);
    }
  }
  if (!ok) {
    spdlog::warn("xet cache: cannot write the journal {}: {}", path, std::strerror(errno));
    ::unlink(temp.c_str());
  }
  return ok;
}

}  // namespace dedupd::daemon::xetcache
