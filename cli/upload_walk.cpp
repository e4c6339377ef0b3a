#include "cli/upload_walk.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <system_error>
#include <utility>

namespace dedupctl {

namespace fs = std::filesystem;

namespace {

// huggingface_hub's DEFAULT_IGNORE_PATTERNS (utils/_paths.py, 2.4.0) leave
// out .git and .cache/huggingface at any depth.
std::string ignored_reason(const fs::path& rel) {
  fs::path prev;
  for (const auto& part : rel) {
    if (part == ".git") return "a .git directory: huggingface_hub never uploads it";
    if (prev == ".cache" && part == "huggingface")
      return "huggingface_hub's own metadata (.cache/huggingface): never uploaded";
    prev = part;
  }
  return {};
}

class FolderWalk {
 public:
  FolderWalk(const fs::path& top, UploadSet& out) : top_(top), out_(out) {}

  void run() {
    std::vector<std::pair<std::string, fs::path>> found;  // relative (generic form), full path
    walk(top_, found);
    // upload_folder sorts by path (Python's order on str: code points, the
    // same as bytes for UTF-8).
    std::sort(found.begin(), found.end());
    for (auto& [rel, full] : found) {
      std::error_code ec;
      const auto size = fs::file_size(full, ec);
      out_.files.push_back({full.string(), ec ? 0 : std::uint64_t(size)});
    }
  }

 private:
  void walk(const fs::path& dir, std::vector<std::pair<std::string, fs::path>>& found) {
    // Symlinked directories are followed, as huggingface_hub does (a file
    // reached by two paths is uploaded twice), but never into a directory
    // that encloses the link: that walk would not end.
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) return;
    const std::pair<dev_t, ino_t> id{st.st_dev, st.st_ino};
    if (std::find(ancestors_.begin(), ancestors_.end(), id) != ancestors_.end()) {
      out_.skipped.push_back({dir.string(), "a symlink to a directory that contains it (a loop)"});
      return;
    }
    ancestors_.push_back(id);
    walk_entries(dir, found);
    ancestors_.pop_back();
  }

  void walk_entries(const fs::path& dir, std::vector<std::pair<std::string, fs::path>>& found) {
    std::error_code ec;
    fs::directory_iterator it(dir, ec);
    if (ec) {
      out_.skipped.push_back({dir.string(), "cannot list: " + ec.message()});
      return;
    }
    for (; it != fs::directory_iterator(); it.increment(ec)) {
      if (ec) {
        out_.skipped.push_back({dir.string(), "cannot list: " + ec.message()});
        break;
      }
      const fs::path& p = it->path();
      const fs::path rel = p.lexically_relative(top_);
      if (std::string why = ignored_reason(rel); !why.empty()) {
        out_.skipped.push_back({p.string(), why});
        continue;
      }
      std::error_code sec;
      const auto status = fs::status(p, sec);  // follows links
      if (sec) {
        out_.skipped.push_back({p.string(), fs::is_symlink(fs::symlink_status(p, sec))
                                                ? "a dangling symlink"
                                                : "cannot stat: " + sec.message()});
      } else if (fs::is_directory(status)) {
        walk(p, found);
      } else if (fs::is_regular_file(status)) {
        found.emplace_back(rel.generic_string(), p);
      } else {
        out_.skipped.push_back({p.string(), "not a regular file"});
      }
    }
  }

  fs::path top_;
  UploadSet& out_;
  std::vector<std::pair<dev_t, ino_t>> ancestors_;
};

}  // namespace

UploadSet walk_upload_paths(const std::vector<std::string>& args) {
  UploadSet out;
  for (const auto& arg : args) {
    std::error_code ec;
    if (fs::is_directory(arg, ec)) {
      const std::size_t from = out.skipped.size();
      FolderWalk(fs::path(arg), out).run();
      std::sort(out.skipped.begin() + std::ptrdiff_t(from), out.skipped.end(),
                [](const SkippedPath& a, const SkippedPath& b) { return a.path < b.path; });
    } else {
      const auto size = fs::file_size(arg, ec);
      out.files.push_back({arg, ec ? 0 : std::uint64_t(size)});
    }
  }
  return out;
}

}  // namespace dedupctl
