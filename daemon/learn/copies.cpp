#include "daemon/learn/copies.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "xetcache/cas_url.hpp"

namespace dedupd::daemon::learn {

namespace fs = std::filesystem;

namespace {

constexpr const char* kCasFile = "cas";

base::Error copy_error(const std::string& what) { return base::Error{"daemon.learned_copy", 0, what, false}; }

bool write_whole(const fs::path& path, std::span<const std::uint8_t> bytes, std::string& why) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
  if (fd < 0) {
    why = path.native() + ": " + std::strerror(errno);
    return false;
  }
  const std::uint8_t* p = bytes.data();
  std::size_t left = bytes.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      why = path.native() + ": " + std::strerror(errno);
      ::close(fd);
      return false;
    }
    p += n;
    left -= std::size_t(n);
  }
  if (::fsync(fd) != 0) {
    why = path.native() + ": fsync: " + std::strerror(errno);
    ::close(fd);
    return false;
  }
  ::close(fd);
  return true;
}

void fsync_dir(const fs::path& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

std::string read_cas(const fs::path& dir) {
  std::ifstream in(dir / kCasFile);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace

base::Result<fs::path> LearnedCopies::keep(std::span<const std::uint8_t> bytes, const std::string& shard_hash,
                                           const std::string& cas) {
  if (root_.empty()) return copy_error("no folder for learned shards");
  const fs::path dir = root_ / dedupd::xetcache::client_cache_dir_name(cas);
  const fs::path target = dir / (shard_hash + ".mdb");
  std::error_code ec;
  if (fs::file_size(target, ec) == bytes.size() && !ec) return target;
  fs::create_directories(dir, ec);
  if (ec) return copy_error("cannot create " + dir.native() + ": " + ec.message());
  std::string why;
  if (read_cas(dir) != cas) {
    const std::string text = cas + "\n";
    const fs::path tmp = dir / ".cas.tmp";
    if (!write_whole(tmp, std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()), why))
      return copy_error(why);
    fs::rename(tmp, dir / kCasFile, ec);
    if (ec) return copy_error("cannot rename " + tmp.native() + ": " + ec.message());
  }
  const fs::path tmp = dir / ("." + shard_hash + ".mdb_temp");
  if (!write_whole(tmp, bytes, why)) {
    fs::remove(tmp, ec);
    return copy_error(why);
  }
  fs::rename(tmp, target, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return copy_error("cannot rename " + tmp.native() + ": " + ec.message());
  }
  fsync_dir(dir);
  return target;
}

std::vector<LearnedCopies::Copy> LearnedCopies::all() const {
  std::vector<Copy> out;
  std::error_code ec;
  if (root_.empty() || !fs::is_directory(root_, ec)) return out;
  for (const auto& d : fs::directory_iterator(root_, ec)) {
    if (!d.is_directory(ec) || d.is_symlink(ec)) continue;
    const std::string cas = read_cas(d.path());
    if (cas.empty()) continue;
    for (const auto& f : fs::directory_iterator(d.path(), ec)) {
      const std::string name = f.path().filename().native();
      if (f.is_regular_file(ec) && !f.is_symlink(ec) && name.ends_with(".mdb") && !name.starts_with("."))
        out.push_back({f.path(), cas});
    }
  }
  return out;
}

std::optional<std::string> LearnedCopies::cas_of(const fs::path& path) const {
  if (root_.empty() || path.parent_path().parent_path() != root_) return std::nullopt;
  std::string cas = read_cas(path.parent_path());
  if (cas.empty()) return std::nullopt;
  return cas;
}

}  // namespace dedupd::daemon::learn
