#include "daemon/answers/file.hpp"

namespace dedupd::daemon::answers {

base::Result<FileAnswer> answer_file(const Lookups& lookups, const shard::Hash& file) {
  auto local = lookups.index().file(file);
  if (!local) return local.error();
  FileAnswer answer;
  answer.local = std::move(*local);
  if (!answer.local && lookups.fleet()) answer.reach = lookups.fleet()->file(file, answer.remote);
  return answer;
}

}  // namespace dedupd::daemon::answers
