// The server's side of the socket before libmicrohttpd takes it: binding the
// path (replacing a stale socket file, never a live server's), and fitting
// the connection limit to the descriptors the process may open.
#pragma once

#include <sys/types.h>

#include <string>

#include "base/result.hpp"

namespace dedupd::daemon::api::http {

// A listening AF_UNIX stream socket (non-blocking, close-on-exec) at `path`
// with `mode`. A socket file nobody accepts on is replaced; one a live
// server answers on, or a file that is not a socket, is an error.
[[nodiscard]] base::Result<int> bind_unix(const std::string& path, mode_t mode);

// The path a listening AF_UNIX socket is bound to (a socket systemd
// passed); "" when it has none (unnamed or abstract).
std::string bound_path(int fd);

// Raises the soft descriptor limit as far as `connections` need (the
// default soft limit, 1024, predates epoll; nothing in the daemon uses
// select()) and returns how many connections fit beside the descriptors the
// rest of the daemon needs.
unsigned fit_to_descriptors(unsigned connections);

}  // namespace dedupd::daemon::api::http
