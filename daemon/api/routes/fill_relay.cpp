#include "daemon/api/routes/fill_relay.hpp"

#include <algorithm>
#include <string>
#include <utility>

namespace dedupd::daemon::api::routes {

FillRelay::FillRelay(answers::RangeExpectation expected, http::BodyPipe& out)
    : checker_(std::move(expected)), out_(out) {}

base::Error FillRelay::gone() const {
  return base::Error{std::string(kRelayGone), 0, "the answer is no longer read (nginx went, or dedupd stops)", false};
}

base::Result<std::monostate> FillRelay::feed(std::span<const std::uint8_t> bytes) {
  if (auto fed = checker_.feed(bytes); !fed) return fed;
  std::uint64_t upto = checker_.checked_bytes();
  // The range's last chunk waits for finish().
  if (upto >= out_.length()) upto = checker_.last_checked_start();
  // What goes out: the held bytes first, then the head of these.
  const auto out = std::size_t(upto - relayed_);
  const std::size_t from_held = std::min(out, held_.size());
  const std::size_t from_bytes = out - from_held;
  if (from_held > 0 && !out_.write(std::span<const std::uint8_t>(held_).first(from_held))) return gone();
  if (from_bytes > 0 && !out_.write(bytes.first(from_bytes))) return gone();
  held_.erase(held_.begin(), held_.begin() + std::ptrdiff_t(from_held));
  held_.insert(held_.end(), bytes.begin() + std::ptrdiff_t(from_bytes), bytes.end());
  relayed_ = upto;
  return std::monostate{};
}

base::Result<answers::CheckedRange> FillRelay::finish() { return checker_.finish(); }

bool FillRelay::complete() {
  if (!held_.empty() && !out_.write(held_)) return false;
  relayed_ += held_.size();
  held_.clear();
  out_.end();
  return relayed_ == out_.length();
}

}  // namespace dedupd::daemon::api::routes
