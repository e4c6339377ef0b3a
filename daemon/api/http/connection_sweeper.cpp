#include "daemon/api/http/connection_sweeper.hpp"

#include <malloc.h>
#include <poll.h>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace dedupd::daemon::api::http {

namespace {

// How often the header deadline and the connection limit are looked at:
// the resolution of the deadline and the wait of a newcomer at the limit.
constexpr auto kSweepTick = std::chrono::milliseconds(100);
// At the limit, connections that have waited this little are not closed to
// make room: a client that just connected is about to send its request.
constexpr auto kEvictGrace = std::chrono::seconds(1);
// Connections gone at once after which their buffers are worth returning
// to the system (a few MiB).
constexpr std::size_t kCrowd = 256;

}  // namespace

ConnectionSweeper::ConnectionSweeper(ConnectionTable& table, int listen_fd, std::size_t limit,
                                     std::chrono::seconds header_timeout)
    : table_(table), listen_fd_(listen_fd), limit_(limit), header_timeout_(header_timeout) {
  thread_ = std::thread([this] { loop(); });
}

ConnectionSweeper::~ConnectionSweeper() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool ConnectionSweeper::newcomer_waiting() const {
  // A listening socket polls readable while a connection waits to be accepted.
  pollfd p{listen_fd_, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

void ConnectionSweeper::loop() {
  std::size_t room = 0;
  std::size_t crowd = 0;  // most connections since memory was last given back
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, kSweepTick, [this] { return stop_; })) {
    // Connection buffers are malloc'd; once a crowd of connections has
    // gone, glibc would keep their freed buffers for reuse: give them back
    // so memory at rest does not follow the largest crowd.
    std::size_t open = table_.size();
    crowd = std::max(crowd, open);
    if (crowd >= open + kCrowd && open <= crowd / 2) {
      ::malloc_trim(0);
      crowd = open;
    }

    // MHD stops accepting only when every connection slot is taken; a
    // client then waits in the listen backlog until one frees up, which an
    // idle client could put off for ever. Room grows while they keep
    // waiting (1, 2, 4, ... per tick), so one newcomer costs one connection
    // and a crowd is still let in quickly.
    bool full = open >= limit_ && newcomer_waiting();
    room = full ? std::min<std::size_t>(std::max<std::size_t>(room * 2, 1), limit_ / 8 + 1) : 0;
    auto r = table_.sweep(ConnectionTable::Clock::now(), header_timeout_, room, kEvictGrace);
    if (r.timed_out || r.evicted)
      spdlog::debug("api: closed {} connections without request headers after {}s, {} to make room", r.timed_out,
                    header_timeout_.count(), r.evicted);
  }
}

}  // namespace dedupd::daemon::api::http
