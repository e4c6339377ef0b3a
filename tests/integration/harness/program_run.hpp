// A program the tests run to its end (dedupctl, mostly), its standard output
// read through a pipe. Standard error is left to the test's log, so a
// failure shows what the program said.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace dedupd::itest {

struct ProgramRun {
  int code = -1;  // exit status; -1 when killed or not started
  std::string out;
};

// A started program: its pid and the read end of its standard output.
struct SpawnedProgram {
  pid_t pid = -1;
  int out_fd = -1;
};

// Starts `binary` with `args`; its stdin is `stdin_path` when given (else
// this process's). The caller reads out_fd to its end, then wait_program().
SpawnedProgram spawn_program(const std::string& binary, const std::vector<std::string>& args,
                             const std::string& stdin_path = {});
// Closes out_fd and reaps the program: its exit status, -1 when killed.
int wait_program(SpawnedProgram& p);

// VmHWM (kB) of a running program named `name`, 0 before it has exec'd
// (between fork and exec the child is a copy of the caller) or once it is
// gone. Not getrusage: a forked child's ru_maxrss counts the parent's pages.
long program_peak_rss_kib(pid_t pid, const std::string& name);

// spawn_program + the whole of stdout + wait_program.
ProgramRun run_program(const std::string& binary, const std::vector<std::string>& args,
                       const std::string& stdin_path = {});

// A command line run by the shell (popen), for redirections: its exit
// status (-1 when it did not exit or could not start) and its whole stdout.
ProgramRun run_shell(const std::string& cmd);
// run_shell's stdout without the trailing newlines; the status in *exit_code.
std::string shell_output(const std::string& cmd, int* exit_code = nullptr);

}  // namespace dedupd::itest
