// Shared pieces of the reliability suite: what a shard holds, a check of the
// index on disk (opened in this process while the daemon is down), raw
// socket helpers for clients curl will not imitate, and timing summaries.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/daemon_process.hpp"
#include "harness/http_client.hpp"
#include "harness/make_shard.hpp"
#include "shard/hash.hpp"

namespace dedupd::reliability {

// A shard the test made: its name and every chunk hash it stores (raw: the
// suite makes unkeyed shards only, so stored = queried).
struct KnownShard {
  shard::Hash hash;
  std::vector<shard::Hash> chunks;
};
KnownShard known(const itest::MadeShard& made);

// Opens the index in `index_dir` (the daemon must not be running), checks
// its invariants and every shard in `shards`: a live shard must answer each
// of its chunks with exactly one location naming exactly that shard once;
// a shard the index does not have must answer none. Anything else is a
// problem (a half shard, a duplicate, a broken invariant).
struct IndexReport {
  std::size_t live = 0, absent = 0;
  std::vector<std::string> problems;
  std::uint64_t chunk_entries = 0;
  std::vector<shard::Hash> live_hashes;
};
IndexReport inspect_index(const std::filesystem::path& index_dir, const std::vector<KnownShard>& shards,
                          bool check_invariants = true);

// Integer from the environment, or `fallback`.
long env_long(const char* name, long fallback);

// Polls `http`'s /v1/status until index_health says "rebuilt" or `daemon`
// has stopped (false only when neither came within `timeout`), keeping
// the last index_health seen in `health`. While dedupd starts again in its
// process to rebuild, the socket refuses.
bool until_rebuilt(itest::DaemonProcess& daemon, itest::HttpClient& http, nlohmann::json& health,
                   std::chrono::seconds timeout);

// The value of the last line of `dedupctl status` text with `label`: what
// follows the label and the spaces that align the values; nullopt without
// one. The last: "Index" labels the counts too, and the fault lines
// follow them.
std::optional<std::string> status_field(const std::string& text, const std::string& label);

// ---- raw sockets --------------------------------------------------------------
int connect_unix(const std::filesystem::path& path);  // blocking; -1 on failure
bool send_all(int fd, std::string_view data);         // MSG_NOSIGNAL
// Reads one HTTP response: until its headers and Content-Length bytes of
// body are in, the peer closes, or `timeout_ms` passes (keep-alive servers
// leave the connection open after answering).
std::string read_response(int fd, int timeout_ms);
// "HTTP/1.1 413 ..." -> 413; 0 when there is no status line.
int status_of(std::string_view reply);

// ---- timing --------------------------------------------------------------------
struct Percentiles {
  double p50 = 0, p99 = 0, max = 0;
  std::size_t n = 0;
};
Percentiles percentiles(std::vector<double> us);

}  // namespace dedupd::reliability
