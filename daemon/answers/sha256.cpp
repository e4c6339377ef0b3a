#include "daemon/answers/sha256.hpp"

namespace dedupd::daemon::answers {

base::Result<Sha256Answer> answer_sha256(const Lookups& lookups, const shard::Hash& sha256) {
  auto files = lookups.index().files_with_sha256(sha256);
  if (!files) return files.error();
  Sha256Answer answer;
  answer.files = std::move(*files);
  if (answer.files.empty() && lookups.fleet()) {
    answer.reach = lookups.fleet()->files_with_sha256(sha256, answer.files);
    answer.from_fleet = !answer.files.empty();
  }
  return answer;
}

}  // namespace dedupd::daemon::answers
