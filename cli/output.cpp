#include "cli/output.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <ostream>

namespace dedupctl {

std::string Style::paint(std::string_view text, Color c) const {
  if (!color || c == Color::none) return std::string(text);
  const char* code = "";
  switch (c) {
    case Color::bold:
      code = "1";
      break;
    case Color::dim:
      code = "2";
      break;
    case Color::red:
      code = "31";
      break;
    case Color::green:
      code = "32";
      break;
    case Color::yellow:
      code = "33";
      break;
    case Color::cyan:
      code = "36";
      break;
    case Color::none:
      break;
  }
  return std::string("\x1b[") + code + "m" + std::string(text) + "\x1b[0m";
}

bool want_color(bool out_is_tty, const std::optional<std::string>& no_color) {
  if (no_color && !no_color->empty()) return false;
  return out_is_tty;
}

std::string human_bytes(std::uint64_t n) {
  if (n < 1024) return std::to_string(n) + " B";
  static const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = double(n) / 1024.0;
  int u = 0;
  // Switch unit before printing would round up to "1024.0".
  while (v >= 1023.95 && u < 5) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

std::string grouped(std::uint64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  out.reserve(digits.size() + digits.size() / 3);
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string count(std::uint64_t n, std::string_view noun) {
  return grouped(n) + " " + std::string(noun) + (n == 1 ? "" : "s");
}

namespace {
// time_t is 64-bit on our targets; values past year 9999 are not times a
// shard can mean, print them as numbers rather than garbage.
constexpr std::uint64_t kLastPrintable = 253402300799;  // 9999-12-31T23:59:59Z
}  // namespace

std::string iso_utc(std::uint64_t unix_s) {
  if (unix_s > kLastPrintable) return std::to_string(unix_s);
  std::time_t t = std::time_t(unix_s);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string iso_local(std::uint64_t unix_s) {
  if (unix_s > kLastPrintable) return std::to_string(unix_s);
  std::time_t t = std::time_t(unix_s);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[40];
  std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S%z", &tm);
  std::string s(buf, n);
  // strftime gives +0200; ISO 8601 extended form wants +02:00.
  if (s.size() >= 5) s.insert(s.size() - 2, ":");
  return s;
}

std::string duration(std::uint64_t s) {
  const std::uint64_t d = s / 86400, h = s / 3600 % 24, m = s / 60 % 60;
  std::string out;
  if (d) out += std::to_string(d) + "d ";
  if (d || h) out += std::to_string(h) + "h ";
  if (d < 10) out += std::to_string(m) + "m";  // minutes stop mattering after days
  if (!out.empty() && out.back() == ' ') out.pop_back();
  if (out.empty() || (s < 60 && !d && !h)) out = std::to_string(s) + "s";
  return out;
}

std::string relative(std::int64_t seconds_from_now) {
  if (seconds_from_now == 0) return "now";
  if (seconds_from_now > 0) return "in " + duration(std::uint64_t(seconds_from_now));
  return duration(std::uint64_t(-seconds_from_now)) + " ago";
}

void Table::print(std::ostream& out, const Style& style, bool with_header) const {
  std::vector<std::size_t> width(columns_.size(), 0);
  if (with_header)
    for (std::size_t c = 0; c < columns_.size(); ++c) width[c] = columns_[c].title.size();
  for (const auto& row : rows_)
    for (std::size_t c = 0; c < row.size() && c < width.size(); ++c) width[c] = std::max(width[c], row[c].text.size());

  std::string line;
  auto emit = [&](auto cell_at, std::size_t n, bool header) {
    line = indent_;
    for (std::size_t c = 0; c < n; ++c) {
      const Cell& cell = cell_at(c);
      const bool last = c + 1 == n;
      const std::size_t pad = width[c] - std::min(width[c], cell.text.size());
      if (columns_[c].align == right) line.append(pad, ' ');
      line += style.paint(cell.text, header ? Color::bold : cell.color);
      if (columns_[c].align == left && !last) line.append(pad, ' ');
      if (!last) line += "  ";
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    line += '\n';
    out << line;
  };
  if (with_header) {
    std::vector<Cell> titles;
    for (const auto& c : columns_) titles.emplace_back(c.title);
    emit([&](std::size_t c) -> const Cell& { return titles[c]; }, titles.size(), true);
  }
  for (const auto& row : rows_)
    emit([&](std::size_t c) -> const Cell& { return row[c]; }, std::min(row.size(), columns_.size()), false);
}

void Fields::print(std::ostream& out, const Style& style) const {
  std::size_t width = 0;
  for (const auto& r : rows_) width = std::max(width, r.label.size());
  for (const auto& r : rows_) {
    std::string line = indent_ + style.paint(r.label, Color::bold);
    line.append(width - r.label.size() + 2, ' ');
    line += style.paint(r.value, r.color);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << '\n';
  }
}

void print_json(std::ostream& out, const nlohmann::ordered_json& doc) {
  // Replace invalid UTF-8 (a path from a hostile directory) instead of
  // throwing halfway through the document.
  out << doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << '\n';
}

}  // namespace dedupctl
