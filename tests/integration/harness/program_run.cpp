#include "harness/program_run.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>

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
