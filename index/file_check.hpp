// What can be told of an LMDB data file (data.mdb) before LMDB maps it:
// its two meta pages, the page the newest one says is its last against the
// file's size, and the roots it names. A truncated file mapped by LMDB is a
// SIGBUS on the first read past its end, and a zeroed meta page an error
// that says nothing useful; these checks say what is wrong instead. The
// daemon runs them at every start (a few reads), `dedupd --check` before
// anything else. The layout is LMDB 0.9's (Debian 12's liblmdb0, 64-bit):
// a 16-byte page header, then MDB_meta (magic, version, address, map size,
// the free and main MDB_db of 48 bytes each, last page, transaction id).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>

namespace dedupd::index {

struct DataFileCheck {
  enum class Verdict : std::uint8_t {
    ok,          // both checks pass: LMDB may map it
    absent,      // no data.mdb: a new index
    damaged,     // the file is there and wrong: `problem` says how
    unreadable,  // it could not be read at all (permissions, not a file, EIO)
  };
  Verdict verdict = Verdict::ok;
  std::string problem;
  std::uint64_t file_size = 0;
  std::uint32_t page_size = 0;
  std::uint64_t last_page = 0;  // of the newest valid meta
  std::uint64_t txnid = 0;
  // The newest valid meta's two trees (~0: empty), for page_check.hpp,
  // and what its walk counted.
  std::uint64_t free_root = ~std::uint64_t(0), main_root = ~std::uint64_t(0);
  std::uint16_t main_flags = 0;
  std::uint64_t pages_in_use = 0, pages_free = 0;
};

// Reads `size` bytes at `offset` into `out`; false when it cannot.
using ReadAt = std::function<bool(std::uint64_t offset, std::span<std::uint8_t> out)>;

// The checks over a file of `file_size` bytes read through `read`: what
// the fuzz target feeds arbitrary bytes.
DataFileCheck check_data_image(std::uint64_t file_size, const ReadAt& read);

// The checks over `dir`/data.mdb.
DataFileCheck check_data_file(const std::string& dir);

// `check` over `dir`/data.mdb, read with pread: what check_data_file
// does, for another check of the image (page_check.hpp).
DataFileCheck check_data_file_with(const std::string& dir,
                                   DataFileCheck (*check)(std::uint64_t file_size, const ReadAt& read));

const char* to_string(DataFileCheck::Verdict v);

}  // namespace dedupd::index
