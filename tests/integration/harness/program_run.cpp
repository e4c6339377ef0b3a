#include "harness/program_run.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>

namespace dedupd::itest {

SpawnedProgram spawn_program(const std::string& binary, const std::vector<std::string>& args,
                             const std::string& stdin_path) {
  int pipefd[2];
  if (::pipe(pipefd) != 0) return {};
  std::vector<char*> argv{const_cast<char*>(binary.c_str())};
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  // posix_spawn, not fork: the runner may hold gigabytes (see DaemonProcess).
  posix_spawn_file_actions_t actions;
  ::posix_spawn_file_actions_init(&actions);
  if (!stdin_path.empty()) ::posix_spawn_file_actions_addopen(&actions, 0, stdin_path.c_str(), O_RDONLY, 0);
  ::posix_spawn_file_actions_adddup2(&actions, pipefd[1], 1);
  ::posix_spawn_file_actions_addclose(&actions, pipefd[0]);
  ::posix_spawn_file_actions_addclose(&actions, pipefd[1]);
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  ::posix_spawn_file_actions_destroy(&actions);
  ::close(pipefd[1]);
  if (rc != 0) {
    ::close(pipefd[0]);
    return {};
  }
  return {pid, pipefd[0]};
}

int wait_program(SpawnedProgram& p) {
  if (p.out_fd >= 0) ::close(p.out_fd);
  p.out_fd = -1;
  if (p.pid < 0) return -1;
  int status = 0;
  ::waitpid(p.pid, &status, 0);
  p.pid = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

long program_peak_rss_kib(pid_t pid, const std::string& name) {
  std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
  std::string running;
  if (!std::getline(comm, running) || running != name) return 0;
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::atol(line.c_str() + 6);
  return 0;
}

ProgramRun run_program(const std::string& binary, const std::vector<std::string>& args, const std::string& stdin_path) {
  SpawnedProgram p = spawn_program(binary, args, stdin_path);
  ProgramRun r;
  if (p.pid < 0) return r;
  std::array<char, 4096> buf;
  for (ssize_t n; (n = ::read(p.out_fd, buf.data(), buf.size())) > 0;) r.out.append(buf.data(), std::size_t(n));
  r.code = wait_program(p);
  return r;
}

ProgramRun run_shell(const std::string& cmd) {
  ProgramRun r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  while (std::size_t n = std::fread(buf.data(), 1, buf.size(), p)) r.out.append(buf.data(), n);
  int status = ::pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string shell_output(const std::string& cmd, int* exit_code) {
  ProgramRun r = run_shell(cmd);
  if (exit_code) *exit_code = r.code;
  while (!r.out.empty() && r.out.back() == '\n') r.out.pop_back();
  return r.out;
}

}  // namespace dedupd::itest
