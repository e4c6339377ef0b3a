// An answer's body that a thread of the handler's writes while the server
// sends it (a fill of the Xet endpoint's download cache relays each chunk
// of the storage's bytes once it passed its check): a bounded buffer
// between that writer, which waits for room, and the server's content
// reader, which must never wait (it runs on an HTTP thread that serves
// many connections). A reader that finds nothing parks (the server
// suspends its connection) and the writer wakes it (the server resumes
// it) when there is more, or when the body ends.
//
// The length is known before the first byte (the answer's
// Content-Length); a body that cannot reach it ends in error, so its
// client sees the connection close short of the length and never takes
// it for whole. Any thread; one writer.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <vector>

namespace dedupd::daemon::api::http {

class BodyPipe {
 public:
  // `capacity` bytes are held at most: a writer faster than the reader
  // waits for room (a slow client throttles the fetch, not the memory).
  BodyPipe(std::uint64_t length, std::size_t capacity);
  BodyPipe(const BodyPipe&) = delete;
  BodyPipe& operator=(const BodyPipe&) = delete;

  std::uint64_t length() const { return length_; }

  // The writer's side. Appends `bytes`, waiting while the buffer is full.
  // False when not all of them went in: the body is no longer wanted (its
  // reader is gone, or the pipe was stopped or failed), or they would run
  // past the length (the body fails); the writer gives up.
  bool write(std::span<const std::uint8_t> bytes);
  // Every byte is written. Short of the length, the body fails.
  void end();
  // The body will never be whole: the reader ends it in error at once
  // (what it has not read yet is dropped). A no-op once ended.
  void fail();
  // The server is stopping: the writer's waits end, its writes fail, and
  // the body fails.
  void stop();

  // The reader's side: the server's content reader.
  enum class Got { bytes, not_yet, end, error };
  struct Read {
    Got got;
    std::size_t n = 0;  // with Got::bytes
  };
  // Copies up to `max` bytes into `buf`. Got::not_yet: nothing now;
  // `park` was called under the pipe's lock (so no wake is missed between
  // the two) and the waker will be called once, when there is more or the
  // body ended.
  Read read(char* buf, std::size_t max, const std::function<void()>& park);
  // Set before the first read: called, on the writer's thread (or
  // stop()'s), once after each park. Never after close().
  void set_waker(std::function<void()> wake);
  // The reader is gone (the answer was dropped): the writer's writes fail.
  void close();

 private:
  // Under the lock: the waker when a reader is parked (it is then taken
  // out of parked), else empty; the caller calls it once unlocked.
  std::function<void()> unpark();
  bool over() const { return failed_ || stopped_ || closed_; }

  const std::uint64_t length_;
  std::mutex mu_;
  std::condition_variable room_;
  std::vector<std::uint8_t> ring_;
  std::size_t head_ = 0;  // first unread byte in ring_
  std::size_t size_ = 0;  // unread bytes
  std::uint64_t written_ = 0;
  bool ended_ = false, failed_ = false, stopped_ = false, closed_ = false;
  bool parked_ = false;
  std::function<void()> wake_;
};

}  // namespace dedupd::daemon::api::http
