// The fleet migrations of a release after this one, for dedupd_next_release
// (tests/compat/CMakeLists.txt), the dedupd that runs `--fleet-migrate
// --final` in final_test.cpp: this build's migrations and one more that is
// not additive, declared as a release declares one (Migration::additive
// false), so that the command runs through the binary on a migration that
// waits for it. This build has no such migration past 0.1.0's six, and its
// dedupd takes its migrations from fleet::schema::migrations() alone, so a
// program with another list is the honest way to have one: no option or
// environment of the product changes what it migrates.
//
// This build's list is taken whole, not copied: fleet/migrations.cpp is
// compiled in here with its migrations() renamed released_migrations(), and
// this file defines migrations(). The product's own object of that file
// (kept out of unity batches for this, fleet/CMakeLists.txt) then defines
// nothing the program lacks, and the linker leaves it out of the archive.
#define migrations released_migrations
#include "fleet/migrations.cpp"  // NOLINT(bugprone-suspicious-include): this build's list, renamed
#undef migrations

namespace dedupd::fleet::schema {
namespace {

// Version 8 of the next release. What it does is beside the point (a table
// with one row, for the test to find); that it is not additive is the point.
const char* const kNextRelease = R"sql(
CREATE TABLE dedupd.next_release (
  single boolean PRIMARY KEY DEFAULT true CHECK (single),
  note text NOT NULL
);
INSERT INTO dedupd.next_release (note) VALUES ('made by the next release''s --final');
)sql";

}  // namespace

const std::vector<Migration>& migrations();

const std::vector<Migration>& migrations() {
  static const std::vector<Migration> all = [] {
    std::vector<Migration> steps = released_migrations();
    steps.push_back({kNextRelease, false});
    return steps;
  }();
  return all;
}

}  // namespace dedupd::fleet::schema
