// Which files an upload of these paths takes, as huggingface_hub's
// upload_folder (`hf upload REPO DIR`) walks a folder: every regular file
// below it, symlinks followed, in the order of their relative paths, except
// what it never uploads (.git, its own .cache/huggingface). dedupctl scan
// uses it so that `scan DIR` predicts `hf upload REPO DIR`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dedupctl {

struct WalkedFile {
  std::string path;
  std::uint64_t size = 0;
};

struct SkippedPath {
  std::string path;
  std::string reason;
};

struct UploadSet {
  std::vector<WalkedFile> files;
  std::vector<SkippedPath> skipped;
};

// A file argument is taken as given (huggingface_hub uploads a file it is
// handed); a directory is walked. A path that does not exist is a file
// argument too: reading it reports the error in its place.
UploadSet walk_upload_paths(const std::vector<std::string>& args);

}  // namespace dedupctl
