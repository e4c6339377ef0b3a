// inotify over the watched directories, recursively where asked. It reports
// a file only when it is complete (closed after writing, or renamed/moved
// in), never on create or modify. Directories that appear are watched and
// scanned at once, since files may land in them before the watch exists.
#pragma once

#include <filesystem>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "daemon/config/config.hpp"
#include "daemon/watch/file_kind.hpp"

namespace dedupd::daemon::watch {

struct Candidate {
  std::filesystem::path path;
  FileKind kind;
};

struct WatchBatch {
  std::vector<Candidate> ready;  // complete files to consider, in event order
  bool overflow = false;         // events were lost: the caller should rescan
};

class Watcher {
 public:
  Watcher();
  ~Watcher();
  Watcher(const Watcher&) = delete;
  Watcher& operator=(const Watcher&) = delete;

  int fd() const { return fd_; }

  // Replaces the watched set (start, SIGHUP) and adds watches everywhere.
  // Nothing is scanned; call scan() for the files already there.
  void set_roots(std::vector<config::WatchDir> roots);
  const std::vector<config::WatchDir>& roots() const { return roots_; }

  // Walks every root: (re)adds watches on directories missing one (a root
  // created since, a lost watch) and returns every candidate file there.
  std::vector<Candidate> scan();

  // Reads what inotify has queued. Non-blocking.
  WatchBatch read_events();

  // True when `path` lies inside a watched root (lexically, after
  // normalisation); deletions are confined to these trees.
  bool inside_roots(const std::filesystem::path& path) const;

  std::size_t watch_count() const { return dirs_.size(); }

 private:
  struct Dir {
    std::filesystem::path path;
    bool recursive;
  };
  // Adds a watch on `top` and, scanning it, on its subdirectories when
  // recursive; appends the candidate files found to `out` (if given).
  void add_tree(const std::filesystem::path& top, bool recursive, std::vector<Candidate>* out);
  bool add_watch(const std::filesystem::path& dir, bool recursive);
  // By value: callers pass paths held in dirs_, whose entries this erases.
  void forget_subtree(std::filesystem::path dir);
  void drop_all_watches();
  // Says once per path, at info, why a file someone may expect to be taken
  // is not: a symlink (never followed: the tree is what dedupd may delete
  // from), or a name that is not *.mdb or *.caf. Dot-files stay silent.
  void note_skipped(const std::filesystem::path& path, bool symlink);

  int fd_ = -1;
  std::vector<config::WatchDir> roots_;
  std::unordered_map<int, Dir> dirs_;  // by watch descriptor
  std::vector<std::string> warned_missing_;
  std::unordered_set<std::string> skipped_;  // paths note_skipped has told of
};

}  // namespace dedupd::daemon::watch
