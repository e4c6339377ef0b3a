#include "daemon/watch/watcher.hpp"

#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

#include <spdlog/spdlog.h>

#include "daemon/log/logging.hpp"

namespace dedupd::daemon::watch {

namespace fs = std::filesystem;

namespace {

// Complete files arrive by close-after-write or by rename/move in; new
// directories by create or move in; the rest keeps the wd map truthful.
constexpr std::uint32_t kDirMask = IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_MOVED_FROM | IN_DELETE_SELF |
                                   IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK;

bool is_under(const fs::path& path, const fs::path& root) {
  auto rel = path.lexically_relative(root);
  return !rel.empty() && rel != "." && *rel.begin() != "..";
}

// A dot-directory is work in progress or private, as a dot-file is: the Xet
// client builds each upload session in staging/shard-session/.tmpXXXXXX and
// deletes it when the session ends, and its shards name xorbs that may never
// reach the CAS if the upload fails. What the session produced for good is
// exported into shard-cache/ afterwards.
bool is_hidden(const fs::path& path) {
  const std::string name = path.filename().native();  // a copy: filename() is a temporary
  return !name.empty() && name.front() == '.';
}

}  // namespace

Watcher::Watcher() {
  fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "inotify_init1");
}

Watcher::~Watcher() {
  if (fd_ >= 0) ::close(fd_);
}

void Watcher::drop_all_watches() {
  for (auto& [wd, dir] : dirs_) ::inotify_rm_watch(fd_, wd);
  dirs_.clear();
}

void Watcher::set_roots(std::vector<config::WatchDir> roots) {
  for (auto& r : roots) r.path = config::clean_path(fs::absolute(r.path));
  drop_all_watches();
  roots_ = std::move(roots);
  warned_missing_.clear();
  for (const auto& r : roots_)
    if (fs::is_directory(r.path)) add_tree(r.path, r.recursive, nullptr);
}

bool Watcher::add_watch(const fs::path& dir, bool recursive) {
  int wd = ::inotify_add_watch(fd_, dir.c_str(), kDirMask);
  if (wd < 0) {
    // ENOSPC here means fs.inotify.max_user_watches is exhausted.
    spdlog::warn("cannot watch {}: {}{}", dir, std::strerror(errno),
                 errno == ENOSPC ? " (raise fs.inotify.max_user_watches)" : "");
    return false;
  }
  auto [it, inserted] = dirs_.try_emplace(wd, Dir{dir, recursive});
  if (!inserted) {
    // The same directory reached twice (overlapping roots, a rescan): the
    // kernel reuses the wd; keep the widest setting and the current name.
    it->second.path = dir;
    it->second.recursive = it->second.recursive || recursive;
  }
  return true;
}

void Watcher::add_tree(const fs::path& top, bool recursive, std::vector<Candidate>* out) {
  std::vector<fs::path> pending{top};
  while (!pending.empty()) {
    fs::path dir = std::move(pending.back());
    pending.pop_back();
    // Watch before listing, so a file landing in between is not missed
    // (at worst it is seen twice; the ingester recognises it).
    if (!add_watch(dir, recursive)) continue;
    std::error_code ec;
    fs::directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
    if (ec) {
      spdlog::warn("cannot list {}: {}", dir, ec.message());
      continue;
    }
    for (; it != fs::directory_iterator(); it.increment(ec)) {
      if (ec) break;
      auto st = it->symlink_status(ec);  // never follow links out of the tree
      if (ec) continue;
      if (fs::is_directory(st)) {
        if (recursive && !is_hidden(it->path())) pending.push_back(it->path());
      } else if (fs::is_symlink(st)) {
        note_skipped(it->path(), true);
      } else if (fs::is_regular_file(st) && out) {
        FileKind kind = file_kind(it->path().filename().native());
        if (kind != FileKind::ignored) out->push_back({it->path(), kind});
        else note_skipped(it->path(), false);
      }
    }
  }
}

std::vector<Candidate> Watcher::scan() {
  std::vector<Candidate> found;
  for (const auto& r : roots_) {
    if (!fs::is_directory(r.path)) {
      if (std::find(warned_missing_.begin(), warned_missing_.end(), r.path.native()) == warned_missing_.end()) {
        spdlog::warn("watched directory {} does not exist (yet); will look again", r.path);
        warned_missing_.push_back(r.path.native());
      }
      continue;
    }
    add_tree(r.path, r.recursive, &found);
  }
  std::sort(found.begin(), found.end(), [](const Candidate& a, const Candidate& b) { return a.path < b.path; });
  found.erase(
      std::unique(found.begin(), found.end(), [](const Candidate& a, const Candidate& b) { return a.path == b.path; }),
      found.end());
  return found;
}

void Watcher::forget_subtree(fs::path dir) {
  for (auto it = dirs_.begin(); it != dirs_.end();) {
    if (it->second.path == dir || is_under(it->second.path, dir)) {
      ::inotify_rm_watch(fd_, it->first);
      it = dirs_.erase(it);
    } else {
      ++it;
    }
  }
}

WatchBatch Watcher::read_events() {
  WatchBatch batch;
  alignas(inotify_event) char buf[64 * 1024];
  for (;;) {
    ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      break;  // EAGAIN: drained
    }
    for (char* p = buf; p < buf + n;) {
      auto* ev = reinterpret_cast<inotify_event*>(p);
      p += sizeof(inotify_event) + ev->len;

      if (ev->mask & IN_Q_OVERFLOW) {
        batch.overflow = true;
        continue;
      }
      if (ev->mask & IN_IGNORED) {
        dirs_.erase(ev->wd);
        continue;
      }
      auto it = dirs_.find(ev->wd);
      if (it == dirs_.end()) continue;  // a watch we dropped; its last events
      if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF)) {
        // Gone or renamed: its recorded path is wrong now. If it moved within
        // a watched tree, the parent's IN_MOVED_TO adds it back under its
        // new name; a moved root is picked up again by the next scan.
        forget_subtree(it->second.path);
        continue;
      }
      if (ev->len == 0) continue;
      const Dir dir = it->second;  // copy: add_tree may rehash dirs_
      fs::path full = dir.path / ev->name;
      if (ev->mask & IN_ISDIR) {
        if (ev->mask & IN_MOVED_FROM) forget_subtree(full);
        else if ((ev->mask & (IN_CREATE | IN_MOVED_TO)) && dir.recursive && !is_hidden(full))
          add_tree(full, true, &batch.ready);
        continue;
      }
      if (ev->mask & (IN_CREATE | IN_MOVED_TO)) {
        std::error_code ec;
        if (fs::is_symlink(fs::symlink_status(full, ec))) {
          note_skipped(full, true);
          continue;
        }
      }
      if (ev->mask & (IN_CLOSE_WRITE | IN_MOVED_TO)) {
        FileKind kind = file_kind(ev->name);
        if (kind != FileKind::ignored) batch.ready.push_back({std::move(full), kind});
        else note_skipped(full, false);
      }
    }
  }
  return batch;
}

void Watcher::note_skipped(const fs::path& path, bool symlink) {
  const std::string name = path.filename().native();
  if (name.empty() || name.front() == '.') return;  // in progress or hidden
  // Never a shard: the Xet client writes a log per session into its cache.
  if (!symlink && name.ends_with(".log")) return;
  // Bounded: a directory of many other files costs a few lines, not memory.
  constexpr std::size_t kRemembered = 4096;
  if (skipped_.size() >= kRemembered || !skipped_.insert(path.native()).second) return;
  if (symlink) spdlog::info("skipping {}: a symlink (dedupd does not follow symlinks; see dedupd(8))", path);
  else spdlog::info("skipping {}: not a shard (*.mdb) or bundle (*.caf)", path);
  if (skipped_.size() == kRemembered) spdlog::info("more skipped files are not logged");
}

bool Watcher::inside_roots(const fs::path& path) const {
  fs::path p = config::clean_path(fs::absolute(path));
  for (const auto& r : roots_) {
    if (!r.recursive) {
      if (p.parent_path() == r.path) return true;
    } else if (is_under(p, r.path)) {
      return true;
    }
  }
  return false;
}

}  // namespace dedupd::daemon::watch
