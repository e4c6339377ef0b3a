#include "index/swh_export.hpp"

#include <sys/stat.h>

#include <vector>

#include "index/export.hpp"
#include "swh/location.hpp"

namespace dedupd::index {

Result<SwhExport> export_swh_shard(const Index& index, const std::string& path) {
  auto writer = swh::Writer::create(path);
  if (!writer) return writer.error();
  SwhExport out;
  std::vector<swh::Location> locs;
  auto walked = for_each_raw_chunk(index, [&](const Hash& chunk, std::span<const RawLocation> found) -> Status {
    // The record has no flags: locations differing only there are one.
    locs.clear();
    for (const RawLocation& l : found) {
      swh::Location s{l.xorb, l.chunk_index, l.byte_start, l.byte_end, l.unpacked_bytes};
      if (locs.empty() || !(locs.back() == s)) locs.push_back(s);
    }
    auto added = writer->add(chunk.bytes, swh::encode_locations(locs));
    if (!added) return added.error();
    out.locations += locs.size();
    return Ok{};
  });
  if (!walked) return walked.error();
  out.keys = writer->count();
  out.keyed_entries = walked->keyed_entries;
  if (out.keys == 0) return make_error(kRuleSwhEmpty, "the index holds no chunk under its raw hash: nothing to export");
  auto header = writer->finish();
  if (!header) return header.error();
  out.header = *header;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) out.file_bytes = std::uint64_t(st.st_size);
  return out;
}

}  // namespace dedupd::index
