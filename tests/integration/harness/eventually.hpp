// Waiting for progress, never for time: a test or benchmark asks again until
// what it waits for holds, the bound only stopping a broken run hanging.
#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace dedupd::itest {

// Asks pred every `poll` until it holds or `timeout` has passed; then once more.
inline bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds timeout = std::chrono::seconds(60),
                       std::chrono::milliseconds poll = std::chrono::milliseconds(25)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(poll);
  }
  return pred();
}

}  // namespace dedupd::itest
