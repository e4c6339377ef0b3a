// libcurl loaded on demand (curl_on_demand.cpp, linked into dedupd only).
#pragma once

// Why libcurl.so.4 could not be loaded, or null when it was. Weak: a program
// that links libcurl itself (the tests, the benches) has no such function,
// and its address is null there.
extern "C" const char* dedupd_curl_load_error() __attribute__((weak));
