#include "daemon/api/http/connections.hpp"

#include <sys/socket.h>

namespace dedupd::daemon::api::http {

struct ConnectionTable::Entry {
  int fd = -1;
  Clock::time_point since;  // waiting for a request since
  bool waiting = true;      // in waiting_ (at `pos`)
  bool closed = false;      // shut down by sweep(); MHD has yet to notice
  std::list<Entry*>::iterator pos;
};

ConnectionTable::~ConnectionTable() {
  // MHD forgets every connection before it stops; anything left is ours.
  for (Entry* e : waiting_) delete e;
}

ConnectionTable::Entry* ConnectionTable::add(int fd, Clock::time_point now) {
  auto* e = new Entry;
  e->fd = fd;
  e->since = now;
  std::lock_guard lock(mutex_);
  e->pos = waiting_.insert(waiting_.end(), e);
  ++size_;
  return e;
}

void ConnectionTable::forget(Entry* e) {
  if (!e) return;
  {
    std::lock_guard lock(mutex_);
    if (e->waiting) waiting_.erase(e->pos);
    --size_;
  }
  delete e;
}

void ConnectionTable::request_started(Entry* e) {
  if (!e) return;
  std::lock_guard lock(mutex_);
  if (!e->waiting) return;
  waiting_.erase(e->pos);
  e->waiting = false;
}

void ConnectionTable::request_ended(Entry* e, Clock::time_point now) {
  if (!e) return;
  std::lock_guard lock(mutex_);
  if (e->waiting || e->closed) return;
  e->since = now;
  e->waiting = true;
  // Times only grow, so appending keeps waiting_ oldest first.
  e->pos = waiting_.insert(waiting_.end(), e);
}

void ConnectionTable::close_front(const std::function<void(int fd)>& close) {
  Entry* e = waiting_.front();
  waiting_.pop_front();
  e->waiting = false;
  e->closed = true;
  if (close) close(e->fd);
  else ::shutdown(e->fd, SHUT_RDWR);
}

ConnectionTable::SweepResult ConnectionTable::sweep(Clock::time_point now, Clock::duration header_timeout,
                                                    std::size_t room, Clock::duration grace,
                                                    const std::function<void(int fd)>& close) {
  SweepResult r;
  std::lock_guard lock(mutex_);
  while (!waiting_.empty() && now - waiting_.front()->since >= header_timeout) {
    close_front(close);
    ++r.timed_out;
  }
  while (r.evicted < room && !waiting_.empty() && now - waiting_.front()->since >= grace) {
    close_front(close);
    ++r.evicted;
  }
  return r;
}

std::size_t ConnectionTable::size() const {
  std::lock_guard lock(mutex_);
  return size_;
}

}  // namespace dedupd::daemon::api::http
