#include "harness/daemon_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>
#include <thread>

namespace dedupd::itest {

std::string dedupd_binary() { return DEDUPD_BINARY; }
std::filesystem::path fixtures_dir() { return DEDUPD_FIXTURES; }
std::string libfaketime() { return DEDUPD_LIBFAKETIME; }

void DaemonProcess::start(const LaunchOptions& o) {
  if (pid_ > 0) throw std::logic_error("already started");
  std::vector<std::string> argv = o.wrapper;
  argv.push_back(dedupd_binary());
  argv.insert(argv.end(), o.args.begin(), o.args.end());

  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::setpgid(0, 0);
    // The test runner may block signals (gtest does not, ctest might);
    // dedupd blocks what it handles itself.
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (!o.work_dir.empty() && ::chdir(o.work_dir.c_str()) != 0) std::_Exit(126);
    if (!o.log_file.empty()) {
      int fd = ::open(o.log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) {
        ::dup2(fd, 1);
        ::dup2(fd, 2);
        ::close(fd);
      }
    }
    // Whatever systemd context the test runner has is not the daemon's.
    for (const char* v : {"NOTIFY_SOCKET", "JOURNAL_STREAM", "INVOCATION_ID", "LISTEN_FDS", "LISTEN_PID",
                          "LISTEN_FDNAMES", "WATCHDOG_USEC", "WATCHDOG_PID"})
      ::unsetenv(v);
    for (const auto& e : o.env) ::putenv(const_cast<char*>(e.c_str()));
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
    cargv.push_back(nullptr);
    ::execvp(cargv[0], cargv.data());
    std::_Exit(127);
  }
  ::setpgid(pid, pid);  // also here, so there is no window where it is unset
  pid_ = pid;
}

bool DaemonProcess::running() {
  if (pid_ <= 0) return false;
  int status;
  pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    pid_ = -1;
    return false;
  }
  return true;
}

void DaemonProcess::signal(int sig) {
  if (pid_ > 0) ::kill(pid_, sig);
}

std::optional<int> DaemonProcess::wait_exit(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return std::nullopt;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      ::kill(-pid_, SIGKILL);  // leftovers of the group, if any
      pid_ = -1;
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      if (WIFSIGNALED(status)) return -WTERMSIG(status);
      return -1;
    }
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

int DaemonProcess::stop(std::chrono::seconds patience) {
  if (pid_ <= 0) return -1;
  ::kill(pid_, SIGTERM);
  if (auto code = wait_exit(patience)) return *code;
  kill_hard();
  return -1;
}

void DaemonProcess::kill_hard() {
  if (pid_ <= 0) return;
  ::kill(-pid_, SIGKILL);
  ::kill(pid_, SIGKILL);
  int status;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

}  // namespace dedupd::itest
