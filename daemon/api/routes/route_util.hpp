// Small pieces every route handler uses: the ready check, hash parameters
// with the parser's own explanation, and index failures as 500s.
#pragma once

#include <spdlog/spdlog.h>

#include <optional>
#include <string_view>

#include "daemon/api/http/context.hpp"
#include "daemon/api/http/http.hpp"
#include "index/index.hpp"
#include "shard/hash.hpp"

namespace dedupd::daemon::api::routes {

// The open index, or nullptr while the daemon is starting (answer 503).
inline const index::Index* open_index(http::Context& ctx) { return ctx.service.index(); }

inline http::Response not_ready() { return http::error(http::kNotReady, "the index is not open yet"); }

// Parses a hash path parameter; on failure *bad holds the 400.
inline std::optional<shard::Hash> hash_param(std::string_view text, std::string_view what, http::Response* bad) {
  auto h = shard::Hash::parse(text);
  if (h.ok()) return *h;
  *bad = http::error(http::kBadRequest, std::string("malformed ") + std::string(what) + " hash: " + h.error().message);
  return std::nullopt;
}

// An index read failed: LMDB trouble, never the caller's fault.
inline http::Response index_failure(const http::Request& request, const base::Error& e) {
  spdlog::error("api: {} {}: {}", request.method, request.path, e.to_string());
  return http::error(http::kInternal, "index read failed: " + e.message);
}

}  // namespace dedupd::daemon::api::routes
