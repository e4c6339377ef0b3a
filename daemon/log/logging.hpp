// Where dedupd's log lines go: the journal (with priorities) when systemd
// started us, stderr otherwise. One default spdlog logger, set up once and
// re-levelled on SIGHUP.
#pragma once

#include <fmt/format.h>

#include <filesystem>
#include <string>

#include "base/result.hpp"
#include "shard/hash.hpp"

namespace dedupd::daemon::log {

// True when stderr is connected to the journal or we run as a unit
// (JOURNAL_STREAM or INVOCATION_ID set by systemd).
bool started_by_systemd();

void setup_logging(const std::string& level);
// Returns false for an unknown level name (the config already validated it).
bool set_log_level(const std::string& level);

}  // namespace dedupd::daemon::log

// fmt (used by spdlog 1.10) formats only types it has a formatter for.
template <>
struct fmt::formatter<dedupd::shard::Hash> : fmt::formatter<std::string_view> {
  template <class Ctx>
  auto format(const dedupd::shard::Hash& h, Ctx& ctx) const {
    return fmt::formatter<std::string_view>::format(h.to_string(), ctx);
  }
};

template <>
struct fmt::formatter<dedupd::base::Error> : fmt::formatter<std::string_view> {
  template <class Ctx>
  auto format(const dedupd::base::Error& e, Ctx& ctx) const {
    return fmt::formatter<std::string_view>::format(e.to_string(), ctx);
  }
};

template <>
struct fmt::formatter<std::filesystem::path> : fmt::formatter<std::string_view> {
  template <class Ctx>
  auto format(const std::filesystem::path& p, Ctx& ctx) const {
    return fmt::formatter<std::string_view>::format(p.native(), ctx);
  }
};
