// Xorbs as the CAS's storage serves them, for the tests of the download
// cache (xorb_range_check_test, download_objects_test,
// object_checks_file_test): chunks of each compression scheme with their
// 8-byte headers, a xorb of four, a range's bytes through the check in
// pieces, and an nginx cache file holding them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "daemon/answers/xorb_range_check.hpp"
#include "shard/keys.hpp"

namespace dedupd::daemon::answers::download_testing {

using Bytes = std::vector<std::uint8_t>;

// A serialized chunk: the 8-byte header, then the stored bytes.
Bytes chunk(const Bytes& data, std::uint8_t scheme, std::uint8_t version = 0);

Bytes random_data(std::size_t n, unsigned seed);

// Compressible, so LZ4 stores it smaller.
Bytes text_data(std::size_t n, unsigned seed);

// A xorb of four chunks, one of each scheme (raw, LZ4, grouped LZ4, raw).
struct Xorb {
  std::vector<Bytes> data;
  std::vector<Bytes> serialized;
  std::vector<std::uint32_t> starts;  // of each chunk, and the end
  Bytes bytes;
  shard::Hash hash;

  Xorb();
  // Bytes of chunks [a, b).
  Bytes range(std::size_t a, std::size_t b) const;
  RangeExpectation expect(std::uint32_t a, std::uint32_t b) const;
  std::vector<KnownChunk> known(const std::optional<shard::Key>& key = std::nullopt) const;
};

// An nginx cache file of `key` with `body`: a binary header, the KEY line,
// the upstream's header block, the body.
void write_cache_file(const std::filesystem::path& file, const std::string& key, const Bytes& body);

// The bytes through a checker in pieces of `piece` bytes.
base::Result<CheckedRange> check(const Bytes& bytes, RangeExpectation e, std::size_t piece = 1000);

}  // namespace dedupd::daemon::answers::download_testing
