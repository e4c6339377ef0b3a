// libpq loaded on demand: dedupd links this in place of libpq, so that a
// host without a `fleet` section never maps libpq and the dozen libraries
// it brings (Kerberos, LDAP, SASL, ...). They were a third of the files a
// cold first start read back from disk (docs/PERFORMANCE.md, "Start ->
// READY"). The tests and benches link libpq itself (fleet/CMakeLists.txt).
//
// Each function libpq-fe.h declares and the fleet library calls is defined
// here with libpq's own signature (the header makes the compiler check
// that) and forwards to libpq.so.5, opened on the first call. When it
// cannot be opened, a connection cannot start: PQconnectStartParams and
// PQconnectdbParams return null, and dedupd_libpq_load_error() says why.
#include "fleet/libpq_on_demand.hpp"

#include <dlfcn.h>
#include <libpq-fe.h>

#include <string>

namespace {

// The library's major version, as in its SONAME (Debian's libpq5).
constexpr const char* kLibrary = "libpq.so.5";

struct Libpq {
  std::string error;  // empty: every function below was found
#define DEDUPD_LIBPQ_FUNCTIONS(X) \
  X(PQconnectStartParams)         \
  X(PQconnectdbParams)            \
  X(PQconnectPoll)                \
  X(PQstatus)                     \
  X(PQerrorMessage)               \
  X(PQsocket)                     \
  X(PQhost)                       \
  X(PQport)                       \
  X(PQsetnonblocking)             \
  X(PQfinish)                     \
  X(PQsendQuery)                  \
  X(PQsendQueryParams)            \
  X(PQsendPrepare)                \
  X(PQsendQueryPrepared)          \
  X(PQputCopyData)                \
  X(PQputCopyEnd)                 \
  X(PQflush)                      \
  X(PQconsumeInput)               \
  X(PQisBusy)                     \
  X(PQgetResult)                  \
  X(PQresultStatus)               \
  X(PQresultErrorMessage)         \
  X(PQresultErrorField)           \
  X(PQntuples)                    \
  X(PQgetvalue)                   \
  X(PQgetlength)                  \
  X(PQgetisnull)                  \
  X(PQcmdTuples)                  \
  X(PQclear)
#define DEDUPD_LIBPQ_POINTER(name) decltype(&(name)) name##_ = nullptr;
  DEDUPD_LIBPQ_FUNCTIONS(DEDUPD_LIBPQ_POINTER)
#undef DEDUPD_LIBPQ_POINTER

  Libpq() {
    void* handle = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* why = dlerror();
      error = std::string(kLibrary) + " cannot be loaded: " + (why ? why : "no reason given");
      return;
    }
    // Never closed: connections may live until the process ends.
#define DEDUPD_LIBPQ_RESOLVE(name)                                     \
  name##_ = reinterpret_cast<decltype(&(name))>(dlsym(handle, #name)); \
  if (!name##_ && error.empty()) error = std::string(kLibrary) + " has no " #name;
    DEDUPD_LIBPQ_FUNCTIONS(DEDUPD_LIBPQ_RESOLVE)
#undef DEDUPD_LIBPQ_RESOLVE
  }
  bool ok() const { return error.empty(); }
};

// Opened once, on the first call from any thread (a static's
// initialization is thread-safe).
const Libpq& libpq() {
  static const Libpq loaded;
  return loaded;
}

}  // namespace

extern "C" {

const char* dedupd_libpq_load_error() {
  const Libpq& l = libpq();
  return l.ok() ? nullptr : l.error.c_str();
}

// Only these two start from nothing; every other call needs a connection
// or a result one of them made, so the library is loaded by then.
PGconn* PQconnectStartParams(const char* const* keywords, const char* const* values, int expand_dbname) {
  return libpq().ok() ? libpq().PQconnectStartParams_(keywords, values, expand_dbname) : nullptr;
}
PGconn* PQconnectdbParams(const char* const* keywords, const char* const* values, int expand_dbname) {
  return libpq().ok() ? libpq().PQconnectdbParams_(keywords, values, expand_dbname) : nullptr;
}
PostgresPollingStatusType PQconnectPoll(PGconn* conn) { return libpq().PQconnectPoll_(conn); }
ConnStatusType PQstatus(const PGconn* conn) { return libpq().PQstatus_(conn); }
char* PQerrorMessage(const PGconn* conn) { return libpq().PQerrorMessage_(conn); }
int PQsocket(const PGconn* conn) { return libpq().PQsocket_(conn); }
char* PQhost(const PGconn* conn) { return libpq().PQhost_(conn); }
char* PQport(const PGconn* conn) { return libpq().PQport_(conn); }
int PQsetnonblocking(PGconn* conn, int arg) { return libpq().PQsetnonblocking_(conn, arg); }
void PQfinish(PGconn* conn) {
  if (conn) libpq().PQfinish_(conn);
}
int PQsendQuery(PGconn* conn, const char* query) { return libpq().PQsendQuery_(conn, query); }
int PQsendQueryParams(PGconn* conn, const char* command, int nParams, const Oid* paramTypes,
                      const char* const* paramValues, const int* paramLengths, const int* paramFormats,
                      int resultFormat) {
  return libpq().PQsendQueryParams_(conn, command, nParams, paramTypes, paramValues, paramLengths, paramFormats,
                                    resultFormat);
}
int PQsendPrepare(PGconn* conn, const char* stmtName, const char* query, int nParams, const Oid* paramTypes) {
  return libpq().PQsendPrepare_(conn, stmtName, query, nParams, paramTypes);
}
int PQsendQueryPrepared(PGconn* conn, const char* stmtName, int nParams, const char* const* paramValues,
                        const int* paramLengths, const int* paramFormats, int resultFormat) {
  return libpq().PQsendQueryPrepared_(conn, stmtName, nParams, paramValues, paramLengths, paramFormats, resultFormat);
}
int PQputCopyData(PGconn* conn, const char* buffer, int nbytes) { return libpq().PQputCopyData_(conn, buffer, nbytes); }
int PQputCopyEnd(PGconn* conn, const char* errormsg) { return libpq().PQputCopyEnd_(conn, errormsg); }
int PQflush(PGconn* conn) { return libpq().PQflush_(conn); }
int PQconsumeInput(PGconn* conn) { return libpq().PQconsumeInput_(conn); }
int PQisBusy(PGconn* conn) { return libpq().PQisBusy_(conn); }
PGresult* PQgetResult(PGconn* conn) { return libpq().PQgetResult_(conn); }
ExecStatusType PQresultStatus(const PGresult* res) { return libpq().PQresultStatus_(res); }
char* PQresultErrorMessage(const PGresult* res) { return libpq().PQresultErrorMessage_(res); }
char* PQresultErrorField(const PGresult* res, int fieldcode) { return libpq().PQresultErrorField_(res, fieldcode); }
int PQntuples(const PGresult* res) { return libpq().PQntuples_(res); }
char* PQgetvalue(const PGresult* res, int tup_num, int field_num) {
  return libpq().PQgetvalue_(res, tup_num, field_num);
}
int PQgetlength(const PGresult* res, int tup_num, int field_num) {
  return libpq().PQgetlength_(res, tup_num, field_num);
}
int PQgetisnull(const PGresult* res, int tup_num, int field_num) {
  return libpq().PQgetisnull_(res, tup_num, field_num);
}
char* PQcmdTuples(PGresult* res) { return libpq().PQcmdTuples_(res); }
void PQclear(PGresult* res) {
  if (res) libpq().PQclear_(res);
}

}  // extern "C"
