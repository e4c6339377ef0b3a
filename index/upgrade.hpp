// The in-place upgrades that rewrite records, not only add tables (those
// schema.cpp creates in the transaction that opens them).
#pragma once

#include "index/env.hpp"
#include "index/schema.hpp"
#include "index/status.hpp"

namespace dedupd::index::upgrade {

// Schema 5: the 12-byte chunk entries of schema 4 and earlier (five hash
// bytes) become 11 bytes (four), key byte by key byte, in both chunk
// tables. A transaction takes whole keys up to detail::g_upgrade_step_entries
// entries (always one), so its memory and dirty pages stay bounded at any
// size. A kill between two leaves keys of both widths: readers take each as
// it is (records.hpp), and the next open goes on where this one stopped.
// The caller writes the version once this returns.
Status chunk_entries_to_v5(lmdb::Env& env, const schema::Dbs& dbs);

}  // namespace dedupd::index::upgrade
