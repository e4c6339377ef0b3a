// The Xet global-dedup reply's bytes: a shard shaped as the Hugging Face
// server answers GET /v1/chunks/default-merkledb/<hash>, made of the answer
// daemon/answers/global_dedup chose (which xorbs, which key, how long).
#pragma once

#include <cstdint>
#include <vector>

#include "daemon/answers/global_dedup.hpp"

namespace dedupd::daemon::api::render {

// The xorbs in the answer's order, their chunk hashes keyed with its key
// when it says so; a footer with the key, its expiry and the creation time;
// no files and, as the server writes them, no lookup tables.
std::vector<std::uint8_t> global_dedup_reply_bytes(answers::GlobalDedupReply reply);

}  // namespace dedupd::daemon::api::render
