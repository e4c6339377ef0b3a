// libpq loaded on demand (libpq_on_demand.cpp, linked into dedupd only).
#pragma once

// Why libpq.so.5 could not be loaded, or null when it was. Weak: a program
// that links libpq itself (the tests, the benches) has no such function,
// and its address is null there.
extern "C" const char* dedupd_libpq_load_error() __attribute__((weak));
