#include "daemon/fleet/lookup.hpp"

namespace dedupd::daemon::fleet_link {

namespace {
// Idle connections kept for the HTTP threads; more are made when needed
// and closed when given back over this.
constexpr std::size_t kMaxIdle = 8;
constexpr auto kStatusTimeout = std::chrono::seconds(5);
}  // namespace

struct FleetLookup::Lease {
  std::unique_ptr<fleet::Reader> reader;
  std::uint64_t generation = 0;
  std::chrono::milliseconds timeout{};
};

FleetLookup::FleetLookup(fleet::ConnectOptions options, std::chrono::milliseconds timeout)
    : options_(std::move(options)), timeout_(timeout) {}

void FleetLookup::configure(fleet::ConnectOptions options, std::chrono::milliseconds timeout) {
  std::lock_guard lock(mu_);
  timeout_ = timeout;
  if (options.url == options_.url && options.host_name == options_.host_name) return;
  options_ = std::move(options);
  ++generation_;
  idle_.clear();
}

std::chrono::milliseconds FleetLookup::timeout() const {
  std::lock_guard lock(mu_);
  return timeout_;
}

std::string FleetLookup::last_error() const {
  std::lock_guard lock(mu_);
  return last_error_;
}

FleetLookup::Lease FleetLookup::borrow() {
  std::lock_guard lock(mu_);
  Lease l;
  l.generation = generation_;
  l.timeout = timeout_;
  if (!idle_.empty()) {
    l.reader = std::move(idle_.back());
    idle_.pop_back();
  } else {
    // Connects on first use, within that call's deadline.
    l.reader = fleet::Reader::lazy(options_);
  }
  return l;
}

void FleetLookup::give_back(std::unique_ptr<fleet::Reader> r, std::uint64_t generation) {
  std::lock_guard lock(mu_);
  if (generation == generation_ && idle_.size() < kMaxIdle) idle_.push_back(std::move(r));
}

template <class F>
Reach FleetLookup::with_reader(F&& f) {
  Lease l = borrow();
  auto error = f(*l.reader, fleet::Deadline::in(l.timeout));
  // A Reader that failed keeps its own retry pause, so it goes back too.
  give_back(std::move(l.reader), l.generation);
  if (!error) return Reach::answered;
  std::lock_guard lock(mu_);
  last_error_ = error->to_string();
  return Reach::unavailable;
}

Reach FleetLookup::chunks(std::span<const fleet::Hash> raw, fleet::ChunkAnswers& out) {
  return with_reader([&](fleet::Reader& r, fleet::Deadline d) -> std::optional<fleet::Error> {
    auto res = r.lookup_chunks(raw, out, d);
    if (!res) return res.error();
    return std::nullopt;
  });
}

Reach FleetLookup::xorb(const fleet::Hash& h, std::optional<fleet::XorbAnswer>& out) {
  return with_reader([&](fleet::Reader& r, fleet::Deadline d) -> std::optional<fleet::Error> {
    auto res = r.xorb(h, d);
    if (!res) return res.error();
    out = std::move(res).value();
    return std::nullopt;
  });
}

Reach FleetLookup::file(const fleet::Hash& h, std::optional<fleet::FileAnswer>& out) {
  return with_reader([&](fleet::Reader& r, fleet::Deadline d) -> std::optional<fleet::Error> {
    auto res = r.file(h, d);
    if (!res) return res.error();
    out = std::move(res).value();
    return std::nullopt;
  });
}

Reach FleetLookup::files_with_sha256(const fleet::Hash& sha256, std::vector<fleet::Hash>& out) {
  return with_reader([&](fleet::Reader& r, fleet::Deadline d) -> std::optional<fleet::Error> {
    auto res = r.files_with_sha256(sha256, d);
    if (!res) return res.error();
    out = std::move(res).value();
    return std::nullopt;
  });
}

Reach FleetLookup::status(fleet::Status& out, std::string& error) {
  Lease l = borrow();
  auto res = l.reader->status(fleet::Deadline::in(kStatusTimeout));
  give_back(std::move(l.reader), l.generation);
  if (!res) {
    error = res.error().to_string();
    return Reach::unavailable;
  }
  out = std::move(res).value();
  return Reach::answered;
}

}  // namespace dedupd::daemon::fleet_link
