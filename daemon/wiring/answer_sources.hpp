// What the answer layer (daemon/answers/) is made of in the running daemon:
// the index the Daemon opened, its global-dedup key, and its fleet lookups
// (FleetLookup), asked only while a fleet is configured.
#pragma once

#include <atomic>

#include "daemon/answers/sources.hpp"
#include "daemon/core/operations.hpp"
#include "daemon/fleet_link/reader_pool.hpp"

namespace dedupd::daemon::wiring {

class AnswerSources final : public answers::Sources, private answers::FleetPort {
 public:
  AnswerSources(const std::atomic<const index::Index*>& index, core::Operations& ops, fleet_link::FleetLookup& lookup)
      : index_(index), ops_(ops), lookup_(lookup) {}

  const index::Index* index() const override { return index_.load(); }
  core::GlobalDedupKey global_dedup_key() const override { return ops_.global_dedup_key(); }
  answers::FleetPort& fleet() override { return *this; }

 private:
  bool configured() const override { return ops_.fleet_enabled(); }
  answers::Reach chunks(std::span<const shard::Hash> raw, fleet::ChunkAnswers& out, bool* busy) override;
  answers::Reach xorb(const shard::Hash& xorb, std::optional<fleet::XorbAnswer>& out) override;
  answers::Reach file(const shard::Hash& file, std::optional<fleet::FileAnswer>& out) override;
  answers::Reach files_with_sha256(const shard::Hash& sha256, std::vector<shard::Hash>& out) override;
  answers::Reach source_shard(const shard::Hash& raw_chunk, const fleet::ShardXorbBounds& bounds, std::uint64_t now,
                              const std::optional<shard::CasScope>& scope,
                              const std::function<bool(const shard::Hash& shard)>& excluded,
                              std::optional<fleet::ShardXorbs>& out) override;
  bool marked_set_aside(const shard::Hash& shard, const std::optional<std::string>& cas) const override {
    return ops_.fleet_set_aside(shard, cas);
  }

  const std::atomic<const index::Index*>& index_;
  core::Operations& ops_;
  fleet_link::FleetLookup& lookup_;
};

}  // namespace dedupd::daemon::wiring
