#include "harness/program_run.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <fstream>

namespace dedupd::itest {

SpawnedProgram spawn_program(const std::string& binary, const std::vector<std::string>& args,
                             const std::string& stdin_path) {
  int pipefd[2];
  if (::pipe(pipefd) != 0) return {};
  // argv is built before fork: the child only calls async-signal-safe functions.
  std::vector<char*> argv{const_cast<char*>(binary.c_str())};
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    if (!stdin_path.empty()) {
      int in = ::open(stdin_path.c_str(), O_RDONLY);
      if (in < 0) _exit(126);
      ::dup2(in, 0);
    }
    ::dup2(pipefd[1], 1);
    ::close(pipefd[0]);
    ::close(pipefd[1]);
    ::execv(argv[0], argv.data());
    _exit(127);
  }
  ::close(pipefd[1]);
  if (pid < 0) {
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

}  // namespace dedupd::itest
