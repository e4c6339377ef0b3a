// The API server's open connections and whether each is in a request, for
// the two rules libmicrohttpd has no option for (connection_sweeper applies them
// every tick):
//  - a deadline for a request's headers, counted from when the connection
//    was accepted or its previous response was sent. MHD's own timeout
//    restarts with every byte received, so a client sending one byte every
//    few seconds (slowloris) would otherwise hold a connection for ever; so
//    would an idle keep-alive connection that is poked now and then.
//  - room for a newcomer at the connection limit: the connections that have
//    waited longest without a request in progress are closed first. A
//    connection in a request (receiving its body, waiting for an admin
//    action, sending its answer) is never closed by this table.
// A connection is closed with shutdown(2) on its socket, under the table's
// lock: MHD sees the end of the stream and cleans up as for any client that
// hung up. forget() takes the same lock and MHD calls it before it closes
// the descriptor, so a descriptor number is never shut down after it was
// closed and handed to someone else.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <list>
#include <mutex>

namespace dedupd::daemon::api::http {

class ConnectionTable {
 public:
  using Clock = std::chrono::steady_clock;
  struct Entry;  // one connection; MHD keeps the pointer as its socket context

  ConnectionTable() = default;
  ~ConnectionTable();
  ConnectionTable(const ConnectionTable&) = delete;
  ConnectionTable& operator=(const ConnectionTable&) = delete;

  // Accepted: waiting for its first request from `now` on.
  Entry* add(int fd, Clock::time_point now);
  // About to be closed by MHD (from any cause). `e` is gone afterwards.
  void forget(Entry* e);
  // The headers of a request are in; until request_ended it is left alone.
  void request_started(Entry* e);
  // Its response was sent (or the request failed): waiting again from `now`.
  void request_ended(Entry* e, Clock::time_point now);

  struct SweepResult {
    std::size_t timed_out = 0;  // no complete request headers in time
    std::size_t evicted = 0;    // made room for newcomers
  };
  // Closes every connection that has waited for a request's headers for
  // `header_timeout` or longer; then up to `room` more, the longest waiting
  // first, among those that have waited at least `grace` (a client that
  // just connected is about to send its request). `close` is called with
  // each descriptor under the table's lock; the default shuts it down.
  SweepResult sweep(Clock::time_point now, Clock::duration header_timeout, std::size_t room, Clock::duration grace,
                    const std::function<void(int fd)>& close = {});

  // Connections MHD still holds, including ones sweep() closed that it has
  // not cleaned up yet: what counts against its connection limit.
  std::size_t size() const;

 private:
  void close_front(const std::function<void(int fd)>& close);

  mutable std::mutex mutex_;
  std::list<Entry*> waiting_;  // not in a request, oldest first
  std::size_t size_ = 0;
};

}  // namespace dedupd::daemon::api::http
