// The fleet half of an answer, for any HTTP thread: each call borrows a
// fleet::Reader from a small pool (a Reader is one connection and not
// thread-safe) and waits at most lookup_timeout for it. Past that, or with
// the database down, the answer is "unavailable" and the caller sends the
// local answer marked so: the fleet never holds up a local answer for longer
// than the bound, and after a failure the Reader answers "unavailable" at
// once for a while (fleet::ConnectOptions::retry_after) instead of waiting
// the bound again on every request.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "daemon/fleet/answers.hpp"
#include "fleet/fleet.hpp"

namespace dedupd::daemon::fleet_link {

class FleetLookup {
 public:
  FleetLookup(fleet::ConnectOptions options, std::chrono::milliseconds timeout);
  FleetLookup(const FleetLookup&) = delete;
  FleetLookup& operator=(const FleetLookup&) = delete;

  // A changed url (or bound) applies to the next call; idle Readers of the
  // old url are dropped.
  void configure(fleet::ConnectOptions options, std::chrono::milliseconds timeout);
  std::chrono::milliseconds timeout() const;

  // Every fleet location of each raw hash, in one round trip.
  Reach chunks(std::span<const fleet::Hash> raw, fleet::ChunkAnswers& out);
  Reach xorb(const fleet::Hash& h, std::optional<fleet::XorbAnswer>& out);
  Reach file(const fleet::Hash& h, std::optional<fleet::FileAnswer>& out);
  Reach files_with_sha256(const fleet::Hash& sha256, std::vector<fleet::Hash>& out);
  // Status takes a longer bound (it is an operator's question, not a lookup).
  Reach status(fleet::Status& out, std::string& error);

  // The last failure's text (never the url), for status.
  std::string last_error() const;

 private:
  struct Lease;
  Lease borrow();
  void give_back(std::unique_ptr<fleet::Reader> r, std::uint64_t generation);
  template <class F>
  Reach with_reader(F&& f);

  mutable std::mutex mu_;
  fleet::ConnectOptions options_;
  std::chrono::milliseconds timeout_;
  std::uint64_t generation_ = 0;  // bumped by configure(): older Readers are dropped
  std::vector<std::unique_ptr<fleet::Reader>> idle_;
  std::string last_error_;
};

}  // namespace dedupd::daemon::fleet_link
