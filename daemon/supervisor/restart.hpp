// Starting dedupd again in its own process (execv of /proc/self/exe with the
// same arguments): how a damaged index is rebuilt while the service stays
// the same unit, pid and journal stream. The start that follows finds the
// mark beside the index and moves the index aside (supervisor/index_opening.hpp).
// Set up once by main (the arguments) and by the Daemon (the mark's path,
// the socket systemd passed); then any thread may restart.
#pragma once

#include <string>

namespace dedupd::daemon::supervisor {

// The process's own arguments, kept for execv (argv outlives main's frames).
void set_restart_arguments(char** argv);
// Where the damage mark goes: <index dir>/dedupd-damaged.
void set_damage_mark_path(const std::string& path);
// Copies of the sockets systemd passed (-1: none), above fd 4: the API's
// goes to fd 3 again and the learning socket's to fd 4, with LISTEN_FDS and
// LISTEN_PID as systemd sets them at a first start.
void set_restart_sockets(int api, int learn);

// Writes `why` as the mark and starts dedupd again; returns (with errno's
// text logged) only when it could not.
void restart_to_rebuild(const char* why);

// Starts dedupd again (the mark written already); returns only on failure.
void restart_self();

}  // namespace dedupd::daemon::supervisor
