#include "shard/verify.hpp"

#include "shard/reader.hpp"

namespace dedupd::shard {

std::vector<base::Error> verify_shard(std::span<const std::uint8_t> bytes, std::optional<std::string_view> path,
                                      const IntegrityOptions& options) {
  auto view = ShardView::parse(bytes);
  if (view) return check_integrity(*view, path, options);
  std::vector<base::Error> out{view.error()};
  // The name check needs no structure, and a truncated download is exactly
  // when both problems show up together.
  if (options.file_name && path) check_file_name(bytes, *path, out);
  return out;
}

}  // namespace dedupd::shard
