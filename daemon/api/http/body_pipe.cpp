#include "daemon/api/http/body_pipe.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

namespace dedupd::daemon::api::http {

BodyPipe::BodyPipe(std::uint64_t length, std::size_t capacity)
    : length_(length), ring_(std::max<std::size_t>(capacity, 1)) {}

std::function<void()> BodyPipe::unpark() {
  if (!parked_) return {};
  parked_ = false;
  return wake_;
}

bool BodyPipe::write(std::span<const std::uint8_t> bytes) {
  std::unique_lock lock(mu_);
  if (!over() && written_ + bytes.size() > length_) {
    failed_ = true;
    auto wake = unpark();
    lock.unlock();
    room_.notify_all();
    if (wake) wake();
    return false;
  }
  while (!bytes.empty()) {
    room_.wait(lock, [&] { return over() || size_ < ring_.size(); });
    if (over()) return false;
    // Into the free part of the ring, which may wrap once.
    const std::size_t take = std::min(bytes.size(), ring_.size() - size_);
    const std::size_t at = (head_ + size_) % ring_.size();
    const std::size_t first = std::min(take, ring_.size() - at);
    std::memcpy(ring_.data() + at, bytes.data(), first);
    std::memcpy(ring_.data(), bytes.data() + first, take - first);
    size_ += take;
    written_ += take;
    bytes = bytes.subspan(take);
    if (auto wake = unpark()) {
      // Outside the lock: the server's waker resumes a connection, which
      // takes the HTTP library's own lock.
      lock.unlock();
      wake();
      lock.lock();
    }
  }
  // All in: the reader may have read them and gone already.
  return true;
}

void BodyPipe::end() {
  std::function<void()> wake;
  {
    std::lock_guard lock(mu_);
    if (ended_ || over()) return;
    if (written_ == length_) ended_ = true;
    else failed_ = true;
    wake = unpark();
  }
  if (wake) wake();
}

void BodyPipe::fail() {
  std::function<void()> wake;
  {
    std::lock_guard lock(mu_);
    if (ended_ || failed_) return;
    failed_ = true;
    wake = unpark();
  }
  room_.notify_all();
  if (wake) wake();
}

void BodyPipe::stop() {
  std::function<void()> wake;
  {
    std::lock_guard lock(mu_);
    stopped_ = true;
    wake = unpark();
  }
  room_.notify_all();
  if (wake) wake();
}

BodyPipe::Read BodyPipe::read(char* buf, std::size_t max, const std::function<void()>& park) {
  std::lock_guard lock(mu_);
  // A failed body ends at once: what is left of it is never whole anyway.
  if (failed_ || stopped_) return {Got::error};
  if (size_ == 0) {
    if (ended_) return {Got::end};
    park();
    parked_ = true;
    return {Got::not_yet};
  }
  const std::size_t take = std::min(max, size_);
  const std::size_t first = std::min(take, ring_.size() - head_);
  std::memcpy(buf, ring_.data() + head_, first);
  std::memcpy(buf + first, ring_.data(), take - first);
  head_ = (head_ + take) % ring_.size();
  size_ -= take;
  room_.notify_one();
  return {Got::bytes, take};
}

void BodyPipe::set_waker(std::function<void()> wake) {
  std::lock_guard lock(mu_);
  wake_ = std::move(wake);
}

void BodyPipe::close() {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    // Whatever the waker would wake is gone with the reader.
    parked_ = false;
    wake_ = nullptr;
  }
  room_.notify_all();
}

}  // namespace dedupd::daemon::api::http
