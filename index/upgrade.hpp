// The in-place upgrades that rewrite records, not only add tables (those
// open_tables.cpp creates in the transaction that opens them).
#pragma once

#include <functional>
#include <string>

#include "index/env.hpp"
#include "index/status.hpp"
#include "index/tables.hpp"

namespace dedupd::index::upgrade {

// Schemas 5 and 6: the chunk entries of an older schema (12 bytes with five
// hash bytes before 5, 11 with four in 5) become the current 10 bytes
// (three), key byte by key byte, in both chunk tables. A transaction takes
// whole keys up to detail::g_upgrade_step_entries entries (always one), so
// its memory and dirty pages stay bounded at any size. A kill between two
// leaves keys of several widths: readers take each as it is (records.hpp),
// and the next open goes on where this one stopped. The caller writes the
// version once this returns.
Status chunk_entries_to_current(lmdb::Env& env, const schema::Dbs& dbs);

// Schema 7: each shard record without a CAS gets the one `scope_of_path`
// gives its first path that names one (nothing when unset or none does),
// a bounded number of records a transaction. Running it again changes
// nothing, so a kill in between is taken up at the next open.
Status shard_scopes_from_paths(lmdb::Env& env, const schema::Dbs& dbs,
                               const std::function<std::string(const std::string&)>& scope_of_path);

}  // namespace dedupd::index::upgrade
