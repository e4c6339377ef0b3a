// Chunk Archive Format (CAF): a bundle of files, here of MDB shards.
//
//   [ member data, concatenated ][ JSON index ][ u32 LE index size ]
//
// The index is {"format_version":"1.0","files":{NAME:{"start_byte":S,
// "end_byte":E}}} with E EXCLUSIVE: both public implementations (Go:
// JackalLabs/gocaf caf/caf.go, TypeScript: JackalLabs/jackal-js-worker
// src/cafSerializer.ts) write end = start + length and read end - start
// bytes. The spec's example shows inclusive-looking ends and trailing commas;
// it is not valid JSON and no implementation writes it.
//
// Reading is strict JSON (nlohmann, no trailing commas, no comments): both
// public readers (Go json.Unmarshal, JS JSON.parse) reject the spec's example
// too, so accepting it would make us read files nobody else can, and a
// lenient parser is more attack surface on a root-run daemon's input path.
//
// BundleView::parse validates everything once (footer, index size, JSON,
// version, every range inside the data section, no overlap, safe names), so
// members are then zero-copy subspans of the input. Rules (Error::rule):
//   footer.truncated   fewer than 4 bytes
//   footer.index_size  index size larger than the file minus the footer
//   index.json         index is not well-formed JSON (offset = the bad byte)
//   index.schema       JSON of the wrong shape (not an object, files missing,
//                      start_byte/end_byte missing or not non-negative ints)
//   index.version      format_version is not "1.0"
//   member.name        unsafe name (empty, absolute, a ".." component, NUL or
//                      another control character): names matter when a tool
//                      extracts members to disk
//   member.range       start > end or end past the data section
//   member.overlap     two members share bytes
// Offsets are absolute in the bundle: the member's key in the index when it
// can be located, else the index start.
//
// write_bundle() lays members out in the given order and writes the index the
// way Go's encoding/json.Marshal does for gocaf's structs, so the bytes are
// identical to what gocaf writes for the same members added in the same
// order: compact; "format_version" then "files" (struct field order);
// file names sorted bytewise (Go sorts map keys); "start_byte" then
// "end_byte"; strings HTML-escaped (< > & as \u003c \u003e \u0026, U+2028
// and U+2029 as \u2028 \u2029, `"` and `\` backslash-escaped). Names with
// control characters are refused by both reader and writer, which also
// sidesteps the Go 1.21/1.22 difference in how \b and \f are escaped.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"

namespace dedupd::shard::caf {

inline constexpr std::string_view kFormatVersion = "1.0";
inline constexpr std::uint64_t kFooterSize = 4;
inline constexpr std::string_view kShardSuffix = ".mdb";

struct Member {
  std::string name;
  std::uint64_t start = 0;              // in the bundle (= in the data section, which starts at 0)
  std::uint64_t end = 0;                // exclusive
  std::span<const std::uint8_t> bytes;  // [start, end) of the bundle, zero-copy

  std::uint64_t size() const { return end - start; }
  // A member the daemon ingests: its name ends in ".mdb".
  bool is_shard() const;
};

class BundleView {
 public:
  static base::Result<BundleView> parse(std::span<const std::uint8_t> bytes);

  std::span<const std::uint8_t> bytes() const { return bytes_; }
  // Members in data order (by start, then name).
  const std::vector<Member>& members() const { return members_; }
  const Member* find(std::string_view name) const;
  // Members named *.mdb, in data order: parse each with ShardView::parse,
  // one failure does not concern the others.
  std::vector<const Member*> shard_members() const;
  // Everything else: to be reported as ignored.
  std::vector<const Member*> other_members() const;

  std::uint64_t data_size() const { return index_offset_; }
  std::uint64_t index_offset() const { return index_offset_; }
  std::uint64_t index_size() const { return index_size_; }
  const std::string& format_version() const { return version_; }

 private:
  BundleView() = default;
  std::span<const std::uint8_t> bytes_;
  std::vector<Member> members_;
  std::uint64_t index_offset_ = 0;
  std::uint64_t index_size_ = 0;
  std::string version_;
};

// Why a member name is unsafe, or empty when it is fine.
std::string unsafe_name_reason(std::string_view name);

struct MemberInput {
  std::string name;
  std::span<const std::uint8_t> bytes;
};

// The bundle bytes. Errors (rule, offset = member position in the input list):
// member.name (unsafe or not UTF-8), member.duplicate, bundle.too_large (the
// index does not fit the u32 footer).
base::Result<std::vector<std::uint8_t>> write_bundle(std::span<const MemberInput> members);

// The index JSON exactly as Go's encoding/json writes gocaf's CAFIndex.
// `ranges` pairs name -> [start, end); sorted here. Names must be valid UTF-8.
struct IndexEntry {
  std::string name;
  std::uint64_t start = 0;
  std::uint64_t end = 0;
};
std::string encode_index_json(std::vector<IndexEntry> entries);
// A JSON string literal (with quotes) as Go's encoding/json writes it.
std::string go_json_string(std::string_view s);

}  // namespace dedupd::shard::caf
