// Every page of data.mdb's trees, checked for what LMDB trusts when it
// reads them. LMDB 0.9 follows a page's node offsets, sizes and child
// page numbers as they are: a scribbled page header or node is a read
// outside the page, often outside the map (SIGSEGV), or one of its
// assertions (abort). This walk reads the file itself (through ReadAt,
// never a map) from the newest meta page down: each page once, its type,
// its free-space bounds, each node inside it, keys in order within the
// bounds its parent gives, child pages inside the file and no deeper than
// LMDB's cursor stack, overflow runs, duplicate sub-pages and
// sub-databases, the free list; and every page up to the last one either
// in a tree or free, exactly once (LMDB's own audit). `dedupd --check`
// runs it before LMDB reads anything; it costs a read of every page in
// use. A file it passes, LMDB reads without leaving its pages (fuzzed).
// The layout is LMDB 0.9's on 64-bit Linux, as file_check.hpp's.
#pragma once

#include <cstdint>
#include <string>

#include "index/file_check.hpp"

namespace dedupd::index {

// check_data_image first; then, when it is ok, the walk: `damaged` with
// the page and what is wrong with it, or ok with `pages_in_use` and
// `pages_free` counted.
DataFileCheck check_data_pages(std::uint64_t file_size, const ReadAt& read);

// The same over `dir`/data.mdb.
DataFileCheck check_data_file_pages(const std::string& dir);

// check_data_file_pages while an LMDB read transaction of this process
// holds the newest snapshot, for a walk beside a running dedupd: a writer
// reuses no page that snapshot (or a newer one) holds until the walk ends,
// so it sees one snapshot. Opening the environment reads the meta pages
// alone: run check_data_file first. Without the environment (it cannot be
// opened here) the walk runs as it is.
DataFileCheck check_index_pages(const std::string& dir);

}  // namespace dedupd::index
