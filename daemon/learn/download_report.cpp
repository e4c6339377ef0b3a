#include "daemon/learn/download_report.hpp"

#include <charconv>

#include "daemon/learn/report.hpp"

namespace dedupd::daemon::learn {

namespace {

// nginx writes these variables with no quote nor space in them; a value
// holding one is not a report of its.
constexpr std::size_t kMaxField = 512;

template <class N>
bool number(std::string_view s, N& out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size() && !s.empty();
}

bool status_code(std::string_view s, unsigned& out) { return number(s, out) && out >= 100 && out <= 599; }

// The next space-separated word of `s`, taken off it.
std::string_view word(std::string_view& s) {
  const auto space = s.find(' ');
  std::string_view w = s.substr(0, space);
  s.remove_prefix(space == std::string_view::npos ? s.size() : space + 1);
  return w;
}

// The next "quoted" field of `s`, taken off it (nginx escapes a quote in a
// value as \x22, so none is inside); nullopt when there is none.
std::optional<std::string_view> quoted(std::string_view& s) {
  if (s.size() < 2 || s.front() != '"') return std::nullopt;
  const auto close = s.find('"', 1);
  if (close == std::string_view::npos || close - 1 > kMaxField) return std::nullopt;
  std::string_view q = s.substr(1, close - 1);
  s.remove_prefix(close + 1);
  if (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  return q;
}

// `text` cut at each `sep`.
std::vector<std::string_view> split(std::string_view text, std::string_view sep) {
  std::vector<std::string_view> out;
  for (;;) {
    const auto at = text.find(sep);
    out.push_back(text.substr(0, at));
    if (at == std::string_view::npos) return out;
    text.remove_prefix(at + sep.size());
  }
}

// $upstream_addr beside $upstream_status, group by group and server by
// server; nullopt when their shapes differ.
std::optional<std::vector<std::vector<UpstreamTry>>> upstream_tries(std::string_view addrs, std::string_view statuses) {
  std::vector<std::vector<UpstreamTry>> out;
  if (addrs == "-" && statuses == "-") return out;
  const auto addr_groups = split(addrs, " : "), status_groups = split(statuses, " : ");
  if (addr_groups.size() != status_groups.size()) return std::nullopt;
  for (std::size_t g = 0; g < addr_groups.size(); ++g) {
    const auto a = split(addr_groups[g], ", "), s = split(status_groups[g], ", ");
    if (a.size() != s.size()) return std::nullopt;
    std::vector<UpstreamTry> group;
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (a[i].empty() || a[i].find_first_of(" ,") != std::string_view::npos) return std::nullopt;
      UpstreamTry t{std::string(a[i]), 0};
      if (s[i] != "-" && !status_code(s[i], t.status)) return std::nullopt;
      group.push_back(std::move(t));
    }
    out.push_back(std::move(group));
  }
  return out;
}

}  // namespace

std::optional<DownloadReport> parse_download_report(std::string_view datagram) {
  std::string_view msg = syslog_message(datagram);
  if (word(msg) != kDownloadReportTag) return std::nullopt;
  DownloadReport r;
  if (!status_code(word(msg), r.status) || !number(word(msg), r.body_bytes)) return std::nullopt;
  const std::string_view cache = word(msg), host = word(msg);
  if (cache.empty() || host.empty() || cache.size() > kMaxField || host.size() > kMaxField) return std::nullopt;
  for (char ch : cache)
    if (!((ch >= 'A' && ch <= 'Z') || ch == '-')) return std::nullopt;
  if (cache != "-") r.cache_status = std::string(cache);
  if (host != "-") r.proxy_host = std::string(host);
  const auto addrs = quoted(msg), statuses = quoted(msg);
  if (!addrs || !statuses) return std::nullopt;
  if (!msg.empty()) {
    const std::string_view length = word(msg);
    std::uint64_t n = 0;
    if (!msg.empty() || (length != "-" && !number(length, n))) return std::nullopt;
    if (length != "-") r.content_length = n;
  }
  auto tries = upstream_tries(*addrs, *statuses);
  if (!tries) return std::nullopt;
  r.upstream = std::move(*tries);
  return r;
}

}  // namespace dedupd::daemon::learn
