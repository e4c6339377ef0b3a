// A real index in a test's scratch directory, for the daemon's tests that
// drive a part over one.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "index/index.hpp"

namespace dedupd::daemon::testing {

// The index in `dir` (made when missing); null, with the failure reported,
// when it cannot be opened.
inline std::unique_ptr<index::Index> open_index_in(const std::string& dir) {
  index::Options o;
  o.dir = dir;
  auto opened = index::Index::open(o);
  if (!opened) {
    ADD_FAILURE() << "cannot open the index in " << dir << ": " << opened.error().to_string();
    return nullptr;
  }
  return std::move(opened).value();
}

}  // namespace dedupd::daemon::testing
