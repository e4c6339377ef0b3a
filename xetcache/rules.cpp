#include "xetcache/rules.hpp"

#include <algorithm>
#include <charconv>

namespace dedupd::xetcache {

namespace {

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
// days_from_civil): no timegm, whose answer would depend on nothing here but
// is one more library call a test cannot pin down.
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2 ? 1 : 0;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = unsigned(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + std::int64_t(doe) - 719468;
}

bool digits(std::string_view text, std::size_t at, std::size_t n, unsigned& out) {
  if (at + n > text.size()) return false;
  auto r = std::from_chars(text.data() + at, text.data() + at + n, out);
  return r.ec == std::errc{} && r.ptr == text.data() + at + n;
}

// The most any zone is away from UTC (UTC+14, Kiribati).
constexpr std::uint64_t kMaxZoneOffsetSeconds = 14 * 3600;

}  // namespace

std::optional<ClientLog> parse_client_log_name(std::string_view name) {
  constexpr std::string_view kPrefix = "xet_", kSuffix = ".log";
  if (!name.starts_with(kPrefix) || !name.ends_with(kSuffix)) return std::nullopt;
  name.remove_prefix(kPrefix.size());
  name.remove_suffix(kSuffix.size());
  const auto underscore = name.rfind('_');
  if (underscore == std::string_view::npos) return std::nullopt;
  ClientLog log;
  const std::string_view pid = name.substr(underscore + 1);
  auto pr = std::from_chars(pid.data(), pid.data() + pid.size(), log.pid);
  if (pr.ec != std::errc{} || pr.ptr != pid.data() + pid.size() || log.pid <= 0) return std::nullopt;
  const std::string_view stamp = name.substr(0, underscore);  // 20261124T044239620-0500
  unsigned year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!digits(stamp, 0, 4, year) || !digits(stamp, 4, 2, month) || !digits(stamp, 6, 2, day) || stamp.size() < 15 ||
      stamp[8] != 'T' || !digits(stamp, 9, 2, hour) || !digits(stamp, 11, 2, minute) || !digits(stamp, 13, 2, second))
    return std::nullopt;
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) return std::nullopt;
  std::size_t at = 15;
  while (at < stamp.size() && stamp[at] >= '0' && stamp[at] <= '9') ++at;  // the fraction of a second
  std::int64_t offset = 0;
  if (at == stamp.size()) {
    log.uncertainty_seconds = kMaxZoneOffsetSeconds;
  } else {
    unsigned oh = 0, om = 0;
    const char sign = stamp[at];
    if ((sign != '+' && sign != '-') || stamp.size() != at + 5 || !digits(stamp, at + 1, 2, oh) ||
        !digits(stamp, at + 3, 2, om) || oh > 14 || om > 59)
      return std::nullopt;
    offset = (sign == '-' ? -1 : 1) * std::int64_t(oh * 3600 + om * 60);
  }
  const std::int64_t local =
      days_from_civil(year, month, day) * 86400 + std::int64_t(hour) * 3600 + minute * 60 + second;
  // Local time = UTC + offset: a client at -0500 that logs 04:42 started at 09:42 UTC.
  log.started_unix = local - offset;
  return log;
}

bool may_be_logged_client(const ClientLog& log, std::uint64_t start_ticks, const BootClock& boot,
                          std::uint64_t slack_seconds) {
  if (boot.ticks_per_second == 0) return true;
  // The log's time as ticks since this boot; a log from before the boot is
  // a previous boot's, and no process running now wrote it.
  const std::int64_t since_boot = log.started_unix - boot.boot_unix;
  const auto margin = std::int64_t(slack_seconds + log.uncertainty_seconds);
  if (since_boot + margin < 0) return false;
  const auto latest_start = std::uint64_t(std::max<std::int64_t>(since_boot + margin, 0)) * boot.ticks_per_second;
  return start_ticks <= latest_start;
}

LivenessVerdict judge_liveness(const LivenessFacts& f) {
  LivenessVerdict v;
  v.alive_clients = f.alive_clients;
  using Logs = LivenessFacts::Logs;
  if (f.logs == Logs::missing) {
    v.why = "no logs/ directory: the clients' logs go elsewhere (HF_XET_LOG_DEST?), so any client may be alive";
  } else if (f.logs == Logs::denied) {
    v.why = "logs/ cannot be read (" + f.logs_error + "): another user's clients may be alive";
  } else if (f.logs == Logs::unreadable) {
    v.why = "logs/ cannot be listed (" + f.logs_error + "): any client may be alive";
  } else if (f.network_fs) {
    v.why = "the cache is on a network file system (" + *f.network_fs + "): clients on other hosts cannot be seen";
  } else if (f.foreign_pid_namespace) {
    v.why = "dedupd runs in a pid namespace of its own: clients outside it cannot be seen";
  } else if (f.log_dest_redirected) {
    v.why = "HF_XET_LOG_DEST is set: clients may log elsewhere";
  } else if (f.client_logs == 0) {
    v.why = "logs/ holds no client log: the clients' logs go elsewhere, so any client may be alive";
  } else if (f.recent_unmatched_logs != 0) {
    v.why = std::to_string(f.recent_unmatched_logs) +
            " client log(s) being written name a pid not running here: a client in another container or host?";
  } else {
    v.established = true;
    v.why = std::to_string(f.alive_clients) + " live client(s) of " + std::to_string(f.client_logs) + " logged";
  }
  return v;
}

Decision may_delete(const DeletionFacts& f, const LivenessVerdict& liveness) {
  if (f.removed_by_admin) return {false, "an admin removed this shard: the steward leaves its file alone"};
  if (!f.indexed_unchanged) return {false, "not the file dedupd indexed (changed, replaced or never taken)"};
  if (f.is_merge_original && !f.merged_verifies)
    return {false, "its merged file is missing or does not verify: the original stays"};
  if (liveness.established && liveness.alive_clients == 0) return {true, "no client that could have loaded it runs"};
  const std::uint64_t waited = f.now_mono >= f.wanted_since_mono ? f.now_mono - f.wanted_since_mono : 0;
  if (waited >= f.grace_seconds) return {true, "replaced_grace has passed"};
  return {false, liveness.established ? std::to_string(liveness.alive_clients) + " client(s) alive; grace ends in " +
                                            std::to_string(f.grace_seconds - waited) + " s"
                                      : "liveness unknown (" + liveness.why + "); grace ends in " +
                                            std::to_string(f.grace_seconds - waited) + " s"};
}

std::uint64_t backoff_seconds(std::uint32_t failures, std::uint64_t base_seconds, std::uint64_t max_seconds) {
  if (failures == 0) return 0;
  const std::uint32_t doublings = std::min<std::uint32_t>(failures - 1, 40);
  const std::uint64_t limit = max_seconds >> doublings;
  if (base_seconds > limit) return max_seconds;
  return std::min(max_seconds, base_seconds << doublings);
}

}  // namespace dedupd::xetcache
