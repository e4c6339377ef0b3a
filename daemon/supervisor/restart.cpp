#include "daemon/supervisor/restart.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace dedupd::daemon::supervisor {

namespace {
// Plain globals, set before any thread runs: restart_to_rebuild is called from
// LMDB's assertion handler in whichever thread met the damage, and must
// not allocate on the way to execv if it can help it.
char** g_argv = nullptr;
char g_mark[4096] = {};
int g_activated_api = -1;
int g_activated_learn = -1;
constexpr int kMaxRestarts = 5;

void write_all(int fd, const char* text) {
  for (std::size_t left = std::strlen(text); left > 0;) {
    ssize_t n = ::write(fd, text, left);
    if (n <= 0) return;
    text += n;
    left -= std::size_t(n);
  }
}
}  // namespace

void set_restart_arguments(char** argv) { g_argv = argv; }

void set_damage_mark_path(const std::string& path) { std::snprintf(g_mark, sizeof g_mark, "%s", path.c_str()); }

void set_restart_sockets(int api, int learn) {
  g_activated_api = api;
  g_activated_learn = learn;
}

void restart_self() {
  if (!g_argv) return;
  // Damage that comes back after every rebuild is not the index's (a
  // memory fault, a bug): a few tries, then no more, so it cannot loop.
  const char* before = std::getenv("DEDUPD_REBUILD_RESTARTS");
  const int restarts = before ? std::atoi(before) : 0;
  if (restarts >= kMaxRestarts) {
    write_all(2, "dedupd: the index was rebuilt and found damaged again too often; not starting again\n");
    errno = ELOOP;
    return;
  }
  char count[16];
  std::snprintf(count, sizeof count, "%d", restarts + 1);
  ::setenv("DEDUPD_REBUILD_RESTARTS", count, 1);
  if (g_activated_api >= 0) {
    if (::dup2(g_activated_api, 3) < 0) return;
    const bool learn = g_activated_learn >= 0;
    if (learn && ::dup2(g_activated_learn, 4) < 0) return;
    char pid[24];
    std::snprintf(pid, sizeof pid, "%d", int(::getpid()));
    ::setenv("LISTEN_FDS", learn ? "2" : "1", 1);
    ::setenv("LISTEN_PID", pid, 1);
    ::unsetenv("LISTEN_FDNAMES");
  }
  ::execv("/proc/self/exe", g_argv);
}

void restart_to_rebuild(const char* why) {
  if (g_mark[0] != '\0') {
    int fd = ::open(g_mark, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
    if (fd >= 0) {
      write_all(fd, why);
      write_all(fd, "\n");
      ::fsync(fd);
      ::close(fd);
    }
  }
  write_all(2, "dedupd: the index is damaged (");
  write_all(2, why);
  write_all(2, "): starting again to move it aside and rebuild it\n");
  restart_self();
  write_all(2, "dedupd: cannot start again: ");
  write_all(2, std::strerror(errno));
  write_all(2, "\n");
}

}  // namespace dedupd::daemon::supervisor
