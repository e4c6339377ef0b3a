// A test that cannot run here for want of something outside it (a tool, a
// file system): outside CI it is skipped, saying why; under CI (CI=true),
// where every test must run, that is a failure.
#pragma once

#include <gtest/gtest.h>

#include "harness/daemon_process.hpp"

// In a test body (or a void helper): returns from it.
#define DEDUPD_CANNOT_RUN(why)                                                              \
  do {                                                                                      \
    if (::dedupd::itest::in_ci()) FAIL() << "CI must run this test, and cannot: " << (why); \
    GTEST_SKIP() << (why);                                                                  \
  } while (0)
