// What the fleet tests against a real PostgreSQL share beside the server
// itself (pg_support.hpp): publishing a generated shard, a lookup that
// fails the test on error, and an answer as text to compare whole.
#pragma once

#include <chrono>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fleet/fleet.hpp"
#include "tests/unit/index/gen.hpp"

namespace dedupd::fleet::test {

inline constexpr auto kDeadline = std::chrono::seconds(30);  // generous: a busy CI machine is not an outage

// The outcome, or an empty one after failing the test. `cas`: the CASes
// that accepted the shard ("" unknown).
PublishOutcome publish(Writer& w, const index::gen::OwnedShard& s, std::string_view cas = {});

ChunkAnswers lookup(Reader& r, std::span<const Hash> hashes, bool fresh_holders = false);

// A shard of those xorbs, raw or keyed (a keyed one expires in 2096, as
// keyed shards must have an expiry), for the filter tests.
index::gen::OwnedShard filter_shard(std::vector<const index::gen::GenXorb*> xorbs, std::uint64_t created, Key key = {});

// Everything an answer says, a line per location, so two answers compare whole.
std::vector<std::string> describe(const ChunkAnswers& a);

}  // namespace dedupd::fleet::test
