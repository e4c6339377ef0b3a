// libcurl loaded on demand: dedupd links this in place of libcurl, so that a
// host whose endpoint never asks for a download never maps libcurl and the
// libraries it brings (nghttp2, ssh2, rtmp, LDAP, Kerberos, ...: 19 more
// files in the process, which a cold first start reads back from disk before
// READY; docs/PERFORMANCE.md, "Start -> READY"). The tests, dedupctl and the
// benches link libcurl itself (daemon/api/CMakeLists.txt). The same scheme
// as fleet/libpq_on_demand.cpp.
//
// Each function curl.h declares and dedupd calls is defined here with
// libcurl's own signature (the header makes the compiler check that) and
// forwards to libcurl.so.4, opened on the first call. When it cannot be
// opened, no transfer can start: curl_easy_init returns null, which the
// callers already take as "no upstream" (the endpoint then fails open).

// The function definitions below would collide with the header's
// type-checking macros of the same names.
#include "daemon/api/http/curl_on_demand.hpp"

#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>
#include <dlfcn.h>

#include <cstdarg>
#include <string>

namespace {

// The library's major version, as in its SONAME (Debian's libcurl4).
constexpr const char* kLibrary = "libcurl.so.4";

struct Libcurl {
  std::string error;  // empty: every function below was found
#define DEDUPD_CURL_FUNCTIONS(X) \
  X(curl_global_init)            \
  X(curl_easy_init)              \
  X(curl_easy_cleanup)           \
  X(curl_easy_reset)             \
  X(curl_easy_perform)           \
  X(curl_easy_pause)             \
  X(curl_easy_setopt)            \
  X(curl_easy_getinfo)           \
  X(curl_easy_strerror)          \
  X(curl_easy_escape)            \
  X(curl_free)                   \
  X(curl_slist_append)           \
  X(curl_slist_free_all)
#define DEDUPD_CURL_POINTER(name) decltype(&(name)) name##_ = nullptr;
  DEDUPD_CURL_FUNCTIONS(DEDUPD_CURL_POINTER)
#undef DEDUPD_CURL_POINTER

  Libcurl() {
    void* handle = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* why = dlerror();
      error = std::string(kLibrary) + " cannot be loaded: " + (why ? why : "no reason given");
      return;
    }
    // Never closed: transfers may run until the process ends.
#define DEDUPD_CURL_RESOLVE(name)                                      \
  name##_ = reinterpret_cast<decltype(&(name))>(dlsym(handle, #name)); \
  if (!name##_ && error.empty()) error = std::string(kLibrary) + " has no " #name;
    DEDUPD_CURL_FUNCTIONS(DEDUPD_CURL_RESOLVE)
#undef DEDUPD_CURL_RESOLVE
    // Before any handle exists, once: libcurl's own lazy global set-up
    // inside curl_easy_init is not safe from two threads at once on every
    // build of it.
    if (error.empty() && curl_global_init_(CURL_GLOBAL_DEFAULT) != CURLE_OK)
      error = std::string(kLibrary) + ": curl_global_init failed";
  }
  bool ok() const { return error.empty(); }
};

// Opened once, on the first call from any thread (a static's
// initialization is thread-safe).
const Libcurl& libcurl() {
  static const Libcurl loaded;
  return loaded;
}

}  // namespace

extern "C" {

const char* dedupd_curl_load_error() {
  const Libcurl& l = libcurl();
  return l.ok() ? nullptr : l.error.c_str();
}

// The library is set up when it is loaded (above).
CURLcode curl_global_init(long /*flags*/) { return libcurl().ok() ? CURLE_OK : CURLE_FAILED_INIT; }

// Only these start from nothing; every other call needs a handle or a list
// one of them made, so the library is loaded by then.
CURL* curl_easy_init() { return libcurl().ok() ? libcurl().curl_easy_init_() : nullptr; }
curl_slist* curl_slist_append(curl_slist* list, const char* data) {
  return libcurl().ok() ? libcurl().curl_slist_append_(list, data) : nullptr;
}
const char* curl_easy_strerror(CURLcode code) {
  return libcurl().ok() ? libcurl().curl_easy_strerror_(code) : "libcurl is not loaded";
}

void curl_easy_cleanup(CURL* curl) {
  if (curl) libcurl().curl_easy_cleanup_(curl);
}
void curl_easy_reset(CURL* curl) { libcurl().curl_easy_reset_(curl); }
CURLcode curl_easy_perform(CURL* curl) { return libcurl().curl_easy_perform_(curl); }
CURLcode curl_easy_pause(CURL* handle, int bitmask) { return libcurl().curl_easy_pause_(handle, bitmask); }
char* curl_easy_escape(CURL* handle, const char* string, int length) {
  return libcurl().curl_easy_escape_(handle, string, length);
}
void curl_free(void* p) {
  if (p) libcurl().curl_free_(p);
}
void curl_slist_free_all(curl_slist* list) {
  if (list) libcurl().curl_slist_free_all_(list);
}

// curl.h declares both variadic functions after an enum parameter, which
// C++ promotes: va_start on it is what libcurl's own C code does, and the
// x86-64 and aarch64 ABIs pass an int-sized enum as an int. clang warns.
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wvarargs"
#endif

// The option's number says the type of its one argument (curl.h's
// CURLOPTTYPE_* bases), as libcurl itself reads it: a long, a data or
// function pointer, or a curl_off_t.
CURLcode curl_easy_setopt(CURL* curl, CURLoption option, ...) {
  va_list args;
  va_start(args, option);
  CURLcode rc;
  if (option < CURLOPTTYPE_OBJECTPOINT) {
    rc = libcurl().curl_easy_setopt_(curl, option, va_arg(args, long));
  } else if (option < CURLOPTTYPE_FUNCTIONPOINT) {
    rc = libcurl().curl_easy_setopt_(curl, option, va_arg(args, void*));
  } else if (option < CURLOPTTYPE_OFF_T) {
    using AnyFunction = void (*)();
    rc = libcurl().curl_easy_setopt_(curl, option, va_arg(args, AnyFunction));
  } else if (option < CURLOPTTYPE_BLOB) {
    rc = libcurl().curl_easy_setopt_(curl, option, va_arg(args, curl_off_t));
  } else {
    rc = libcurl().curl_easy_setopt_(curl, option, va_arg(args, void*));
  }
  va_end(args);
  return rc;
}

// Every CURLINFO_* takes one pointer to where the answer goes.
CURLcode curl_easy_getinfo(CURL* curl, CURLINFO info, ...) {
  va_list args;
  va_start(args, info);
  void* where = va_arg(args, void*);
  va_end(args);
  return libcurl().curl_easy_getinfo_(curl, info, where);
}

#if defined(__clang__)
#pragma clang diagnostic pop
#endif

}  // extern "C"
