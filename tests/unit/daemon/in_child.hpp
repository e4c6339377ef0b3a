// Code that reads what a process is given once (its environment, its
// descriptors from 3 on), run in a forked child as a started service finds
// them, so the test process keeps its own. The child says what happened as
// text through a pipe kept above the descriptors a test places.
#pragma once

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

namespace dedupd::daemon::testing {

// What `body` returned in the child, or "child failed" when it returned
// nothing and did not exit 0.
template <class Body>
std::string in_child(Body body) {
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return "pipe failed";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipe_fds[0]);
    // Out of the way of the descriptors placed from 3 on.
    const int report = ::fcntl(pipe_fds[1], F_DUPFD, 40);
    ::close(pipe_fds[1]);
    const std::string out = body();
    [[maybe_unused]] auto w = ::write(report, out.data(), out.size());
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  std::string out;
  char buf[512];
  for (ssize_t n; (n = ::read(pipe_fds[0], buf, sizeof buf)) > 0;) out.append(buf, std::size_t(n));
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (out.empty() && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) return "child failed";
  return out;
}

}  // namespace dedupd::daemon::testing
