#include "daemon/ingest/validate.hpp"

#include "shard/integrity.hpp"

namespace dedupd::daemon::ingest {

base::Result<ValidShard> validate_shard(std::span<const std::uint8_t> bytes, std::string_view name) {
  auto view = shard::ShardView::parse(bytes);
  if (!view) return view.error();
  bool named_by_hash = !name.empty() && shard::is_shard_file_name(name);
  shard::IntegrityOptions options;
  options.file_name = named_by_hash;
  auto problems = shard::check_integrity(*view, named_by_hash ? std::optional(name) : std::nullopt, options);
  if (!problems.empty()) return problems.front();
  ValidShard out{*view, std::nullopt};
  if (named_by_hash) {
    // The name check passed, so the name is the content hash.
    std::string_view file = name.substr(name.find_last_of('/') + 1);
    auto h = shard::Hash::parse(file.substr(0, 64));
    if (h) out.content_hash = *h;
  }
  return out;
}

}  // namespace dedupd::daemon::ingest
