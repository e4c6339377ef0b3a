#include "harness/daemon_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace dedupd::itest {

std::string dedupd_binary() { return DEDUPD_BINARY; }
std::filesystem::path fixtures_dir() { return DEDUPD_FIXTURES; }
std::string libfaketime() { return DEDUPD_LIBFAKETIME; }
bool in_ci() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

namespace {

// The environment the daemon gets: the runner's, less its systemd context
// (not the daemon's), with `extra` ("NAME=value") set over it.
std::vector<std::string> daemon_environment(const std::vector<std::string>& extra) {
  static const char* const kRunnerOnly[] = {"NOTIFY_SOCKET", "JOURNAL_STREAM", "INVOCATION_ID", "LISTEN_FDS",
                                            "LISTEN_PID",    "LISTEN_FDNAMES", "WATCHDOG_USEC", "WATCHDOG_PID"};
  auto name_of = [](const std::string& e) { return e.substr(0, e.find('=')); };
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    const std::string name = name_of(entry);
    bool drop = std::any_of(std::begin(kRunnerOnly), std::end(kRunnerOnly), [&](const char* v) { return name == v; });
    drop = drop || std::any_of(extra.begin(), extra.end(), [&](const std::string& x) { return name_of(x) == name; });
    if (!drop) env.push_back(entry);
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

// posix_spawn, not fork: a runner that holds gigabytes (bench_e2e's data
// set) would spend most of a measured start copying its page tables.
void DaemonProcess::start(const LaunchOptions& o) {
  if (pid_ > 0) throw std::logic_error("already started");
  std::vector<std::string> argv = o.wrapper;
  argv.push_back(o.program.empty() ? dedupd_binary() : o.program);
  argv.insert(argv.end(), o.args.begin(), o.args.end());
  std::vector<std::string> env = daemon_environment(o.env);
  std::vector<char*> cargv = c_strings(argv), cenv = c_strings(env);

  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawnattr_init(&attr);
  if (!o.work_dir.empty()) ::posix_spawn_file_actions_addchdir_np(&actions, o.work_dir.c_str());
  if (!o.log_file.empty()) {
    ::posix_spawn_file_actions_addopen(&actions, 1, o.log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    ::posix_spawn_file_actions_adddup2(&actions, 1, 2);
  }
  // Its own process group, so wrappers die with it; and no blocked signals
  // (ctest might block some; dedupd blocks what it handles itself).
  sigset_t none;
  sigemptyset(&none);
  ::posix_spawnattr_setsigmask(&attr, &none);
  ::posix_spawnattr_setpgroup(&attr, 0);
  ::posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
  pid_t pid = -1;
  int rc = ::posix_spawnp(&pid, cargv[0], &actions, &attr, cargv.data(), cenv.data());
  ::posix_spawnattr_destroy(&attr);
  ::posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("starting " + argv[0] + ": " + std::strerror(rc));
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
