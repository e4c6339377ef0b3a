// What answers are made of: the open index, the global-dedup key and the
// fleet. The running daemon supplies them (daemon/wiring/answer_sources),
// tests their own; the answer layer never learns which. Any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "daemon/core/status.hpp"
#include "daemon/fleet_link/answers.hpp"
#include "fleet/fleet.hpp"
#include "index/index.hpp"
#include "shard/cas_scope.hpp"
#include "shard/hash.hpp"

namespace dedupd::daemon::answers {

using fleet_link::Reach;

// The fleet as answers ask it. Each question waits at most the fleet lookup
// bound and says how it went; without a fleet configured, each answers
// Reach::off and asks nothing.
class FleetPort {
 public:
  virtual ~FleetPort() = default;

  // A fleet is configured: answers may wait on its database.
  virtual bool configured() const = 0;
  // Every fleet location of each raw hash, in one round trip. With `busy`:
  // when every connection is lent out while the link is up, *busy is set
  // and nothing is asked.
  virtual Reach chunks(std::span<const shard::Hash> raw, fleet::ChunkAnswers& out, bool* busy) = 0;
  virtual Reach xorb(const shard::Hash& xorb, std::optional<fleet::XorbAnswer>& out) = 0;
  virtual Reach file(const shard::Hash& file, std::optional<fleet::FileAnswer>& out) = 0;
  virtual Reach files_with_sha256(const shard::Hash& sha256, std::vector<shard::Hash>& out) = 0;
  // The shard a chunk came from, with its xorbs within `bounds`
  // (fleet::Reader::shard_xorbs), in one bound: only a shard `scope` admits
  // (nullopt: any) and `excluded` does not name.
  virtual Reach source_shard(const shard::Hash& raw_chunk, const fleet::ShardXorbBounds& bounds, std::uint64_t now,
                             const std::optional<shard::CasScope>& scope,
                             const std::function<bool(const shard::Hash& shard)>& excluded,
                             std::optional<fleet::ShardXorbs>& out) = 0;
  // Marked set aside in the fleet for `cas` (for any CAS: nullopt), as the
  // marks were last read.
  virtual bool marked_set_aside(const shard::Hash& shard, const std::optional<std::string>& cas) const = 0;
};

// A daemon without a fleet: nothing is asked, every answer is local.
class NoFleet final : public FleetPort {
 public:
  bool configured() const override { return false; }
  Reach chunks(std::span<const shard::Hash>, fleet::ChunkAnswers&, bool*) override { return Reach::off; }
  Reach xorb(const shard::Hash&, std::optional<fleet::XorbAnswer>&) override { return Reach::off; }
  Reach file(const shard::Hash&, std::optional<fleet::FileAnswer>&) override { return Reach::off; }
  Reach files_with_sha256(const shard::Hash&, std::vector<shard::Hash>&) override { return Reach::off; }
  Reach source_shard(const shard::Hash&, const fleet::ShardXorbBounds&, std::uint64_t,
                     const std::optional<shard::CasScope>&, const std::function<bool(const shard::Hash&)>&,
                     std::optional<fleet::ShardXorbs>&) override {
    return Reach::off;
  }
  bool marked_set_aside(const shard::Hash&, const std::optional<std::string>&) const override { return false; }
};

class Sources {
 public:
  virtual ~Sources() = default;

  // The open index, or nullptr while it is not open (the daemon is starting
  // or stopping). What it points to stays valid until the HTTP server stops.
  virtual const index::Index* index() const = 0;
  // The key and settings global-dedup replies are made with.
  virtual core::GlobalDedupKey global_dedup_key() const = 0;
  virtual FleetPort& fleet() = 0;
};

}  // namespace dedupd::daemon::answers
