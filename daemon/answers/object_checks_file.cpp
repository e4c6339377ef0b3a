#include "daemon/answers/object_checks_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

namespace dedupd::daemon::answers {

namespace {

base::Error checks_file_error(const std::filesystem::path& file, std::string message) {
  return base::Error{"xet_download.checks_file", 0, file.string() + ": " + std::move(message), false};
}

bool is_cache_key(std::string_view key) {
  // xet1:<64 hex>:<digits>-<digits>
  if (key.size() < 5 + 64 + 4 || key.substr(0, 5) != "xet1:" || key[69] != ':') return false;
  std::string_view span = key.substr(70);
  auto dash = span.find('-');
  if (dash == 0 || dash == std::string_view::npos || dash + 1 == span.size()) return false;
  for (std::size_t i = 0; i < span.size(); ++i)
    if (i != dash && (span[i] < '0' || span[i] > '9')) return false;
  return bool(shard::Hash::parse(key.substr(5, 64)));
}

}  // namespace

ObjectChecksFile::Loaded ObjectChecksFile::parse(std::string_view text, std::size_t keep) {
  Loaded out;
  // Newest last: read all, keep the last `keep` keys.
  std::vector<std::pair<std::string_view, shard::Hash>> lines;
  while (!text.empty()) {
    ++out.lines;
    const auto end = text.find('\n');
    const bool torn = end == std::string_view::npos;  // no newline after it
    const std::string_view l = text.substr(0, end);
    text = torn ? std::string_view() : text.substr(end + 1);
    auto digest = shard::Hash::parse(l.substr(0, 64));
    if (torn || l.size() < 65 || l[64] != ' ' || !digest || !is_cache_key(l.substr(65))) {
      ++out.skipped;
      continue;
    }
    lines.emplace_back(l.substr(65), *digest);
  }
  for (auto it = lines.rbegin(); it != lines.rend() && out.digests.size() < keep; ++it)
    out.digests.emplace(std::string(it->first), it->second);  // (the newest of a key is met first)
  return out;
}

base::Result<ObjectChecksFile::Loaded> ObjectChecksFile::load() const {
  std::ifstream in(path_, std::ios::binary);
  if (!in) {
    if (errno == ENOENT) return Loaded{};
    return checks_file_error(path_, std::string("cannot read: ") + std::strerror(errno));
  }
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return checks_file_error(path_, "cannot read");
  return parse(text, keep_);
}

base::Result<std::monostate> ObjectChecksFile::append(std::string_view key, const shard::Hash& digest) {
  const std::string line = digest.to_string() + " " + std::string(key) + "\n";
  const int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return checks_file_error(path_, std::string("cannot open: ") + std::strerror(errno));
  // One write of a short line with O_APPEND: lines of two fills never mix.
  const ssize_t n = ::write(fd, line.data(), line.size());
  const int saved = errno;
  ::close(fd);
  if (n != ssize_t(line.size()))
    return checks_file_error(path_, std::string("cannot append: ") + (n < 0 ? std::strerror(saved) : "short write"));
  return std::monostate{};
}

base::Result<std::monostate> ObjectChecksFile::rewrite(const std::map<std::string, shard::Hash, std::less<>>& digests) {
  auto tmp = path_;
  tmp += ".new";
  {
    std::ofstream out(tmp, std::ios::trunc);
    for (const auto& [key, digest] : digests) out << digest.to_string() << ' ' << key << '\n';
    if (!out.flush()) return checks_file_error(tmp, "cannot write");
  }
  std::error_code ec;
  std::filesystem::permissions(tmp, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write, ec);
  std::filesystem::rename(tmp, path_, ec);
  if (ec) return checks_file_error(path_, "cannot replace: " + ec.message());
  return std::monostate{};
}

}  // namespace dedupd::daemon::answers
