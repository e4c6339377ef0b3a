// The ConnectionTable kept in step with libmicrohttpd's connection
// notifications: one entry a connection from its start to its close, so
// the sweeper can close idle and slow ones. Both of the daemon's MHD
// servers (the API socket, the metrics listener) register it alike.
#pragma once

#include <microhttpd.h>

#include <new>

#include "daemon/api/http/connections.hpp"

namespace dedupd::daemon::api::http {

inline void track_connection(ConnectionTable& table, MHD_Connection* conn, void** socket_context,
                             enum MHD_ConnectionNotificationCode code, ConnectionTable::Clock::time_point now) {
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    const MHD_ConnectionInfo* info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    try {
      if (info) *socket_context = table.add(info->connect_fd, now);
    } catch (const std::bad_alloc&) {
      // Untracked: still served, only MHD's own timeout applies to it.
    }
  } else {
    table.forget(static_cast<ConnectionTable::Entry*>(*socket_context));
    *socket_context = nullptr;
  }
}

}  // namespace dedupd::daemon::api::http
