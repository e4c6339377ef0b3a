// bare_http_get DIR SOCKET: the least HTTP server that answers a single
// chunk lookup (issue 73), the floor under dedupd's GET /v1/chunk/<hash>
// on this machine. libmicrohttpd on one epoll thread (dedupd's library and
// poll mode, without its thread pool), on a Unix socket it binds itself;
// each GET takes the 64 hex digits at the end of its path, asks the bare
// LMDB in DIR (bench_e2e's: 32-byte key, 16-byte value) with mdb_get in one
// read transaction renewed per request, and answers a short JSON document,
// 200 or 404. No access check, no limits, no metrics, no logging: whatever
// dedupd's answer costs above this one is dedupd's own.
//
// A program of its own rather than a thread of the bench: its one thread
// then competes with the bench's client and samplers only as dedupd's do,
// through the scheduler, with no shared allocator or address space, and
// `perf report --comm bare_http_get` tells it apart from dedupd. It runs
// until SIGTERM or SIGINT.
#include <lmdb.h>
#include <microhttpd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "shard/hash.hpp"

namespace {

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "bare_http_get: %s\n", what.c_str());
  std::exit(1);
}

struct Index {
  MDB_env* env = nullptr;
  MDB_dbi dbi = 0;
  MDB_txn* txn = nullptr;  // reset between requests, renewed for each
};

MHD_Result respond(MHD_Connection* conn, unsigned status, const std::string& body) {
  MHD_Response* r = MHD_create_response_from_buffer(body.size(), const_cast<char*>(body.data()), MHD_RESPMEM_MUST_COPY);
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
  MHD_Result ok = MHD_queue_response(conn, status, r);
  MHD_destroy_response(r);
  return ok;
}

// Answered at MHD's second call, once it has the whole request: a response
// queued at the first makes MHD close the connection after it (as dedupd's
// server notes), and a reconnect each time would not be a floor.
MHD_Result on_request(void* cls, MHD_Connection* conn, const char* url, const char*, const char*, const char*, size_t*,
                      void** request) {
  static int seen;
  if (*request == nullptr) {
    *request = &seen;
    return MHD_YES;
  }
  auto& index = *static_cast<Index*>(cls);
  const std::string_view path(url), text = path.substr(path.rfind('/') + 1);
  auto hash = dedupd::shard::Hash::parse(text);
  if (!hash) return respond(conn, MHD_HTTP_BAD_REQUEST, R"({"error":"not a chunk hash"})");
  MDB_val key{32, hash->bytes.data()}, value{};
  if (mdb_txn_renew(index.txn) != 0) return respond(conn, MHD_HTTP_SERVICE_UNAVAILABLE, R"({"error":"renew"})");
  const int rc = mdb_get(index.txn, index.dbi, &key, &value);
  std::string body = R"({"hash":")" + std::string(text) + R"(","found":)";
  if (rc == 0) {
    static const char kHex[] = "0123456789abcdef";
    body += R"(true,"locations":[{"value":")";
    for (std::size_t i = 0; i < value.mv_size; ++i) {
      const auto b = static_cast<const unsigned char*>(value.mv_data)[i];
      body += kHex[b >> 4];
      body += kHex[b & 15];
    }
    body += "\"}]}";
  } else {
    body += R"(false,"locations":[]})";
  }
  mdb_txn_reset(index.txn);
  return respond(conn, rc == 0 ? MHD_HTTP_OK : MHD_HTTP_NOT_FOUND, body);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) die("usage: bare_http_get DIR SOCKET");
  Index index;
  if (mdb_env_create(&index.env) != 0 || mdb_env_set_mapsize(index.env, std::size_t(256) << 30) != 0 ||
      mdb_env_open(index.env, argv[1], MDB_RDONLY | MDB_NOTLS | MDB_NORDAHEAD, 0) != 0)
    die(std::string("cannot open the LMDB in ") + argv[1]);
  if (mdb_txn_begin(index.env, nullptr, MDB_RDONLY, &index.txn) != 0 ||
      mdb_dbi_open(index.txn, nullptr, 0, &index.dbi) != 0)
    die("cannot open the main database");
  mdb_txn_reset(index.txn);

  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (std::strlen(argv[2]) >= sizeof addr.sun_path) die(std::string("socket path too long: ") + argv[2]);
  std::strcpy(addr.sun_path, argv[2]);
  ::unlink(argv[2]);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 64) != 0)
    die(std::string("cannot listen on ") + argv[2]);

  // Blocked before MHD starts its thread, which inherits the mask: the
  // signals come to sigwait below.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  MHD_Daemon* mhd = MHD_start_daemon(MHD_USE_EPOLL_INTERNAL_THREAD, 0, nullptr, nullptr, &on_request, &index,
                                     MHD_OPTION_LISTEN_SOCKET, MHD_socket(fd), MHD_OPTION_END);
  if (!mhd) die("libmicrohttpd did not start");
  int sig = 0;
  sigwait(&stop, &sig);
  MHD_stop_daemon(mhd);
  ::close(fd);
  ::unlink(argv[2]);
  mdb_txn_abort(index.txn);
  mdb_env_close(index.env);
  return 0;
}
