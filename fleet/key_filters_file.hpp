// The key filters kept in a file across a restart. At 100 M fleet entries
// the raw filter alone is 241 MiB of bits that took 32 s and 4.3 GB of CAS
// blocks read from the fleet database to build; a host that restarts (a
// rolling upgrade restarts them all) reads its file instead, and asks the
// database only for the xorbs published since (KeyFilters::adopt).
//
// The file holds each kept filter with the xorbs it holds, in this host's
// byte order, and a checksum of the whole. Anything in doubt (another
// layout or format, a size that does not add up, a checksum that does not
// match) and nothing is taken: the filters are built from the database as
// if there were no file.
#pragma once

#include <cstdint>
#include <filesystem>

#include "fleet/errors.hpp"
#include "fleet/key_filters.hpp"

namespace dedupd::fleet {

struct KeptFiltersFile {
  std::size_t filters = 0;    // written, or taken in
  std::size_t skipped = 0;    // read but not taken (KeyFilters::adopt said no)
  std::uint64_t bytes = 0;    // the file's size
  std::uint64_t entries = 0;  // what the filters hold
};

// Writes what `filters.kept()` returns to `path`, through a temporary file
// beside it renamed over it. Not synced (key_filters_file.cpp): a file a
// crash left torn fails its checksum when read, and is not used.
Result<KeptFiltersFile> save_kept_filters(const KeyFilters& filters, const std::filesystem::path& path);

// Reads `path` and gives each filter to `filters.adopt`. No file: zero
// filters, no error. An error says what is wrong and where.
Result<KeptFiltersFile> load_kept_filters(KeyFilters& filters, const std::filesystem::path& path);

}  // namespace dedupd::fleet
