// Presentation: everything a person sees. The daemon sends numbers and
// hashes; turning them into aligned tables, KiB/MiB and local times is the
// client's job, and it is done here only, so every verb looks the same.
#pragma once

#include <cstdint>
#include <ctime>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace dedupctl {

enum class Color { none, bold, dim, red, green, yellow, cyan };

// Colour is decided once: on only when stdout is a terminal and NO_COLOR is
// unset or empty (https://no-color.org), never in JSON.
struct Style {
  bool color = false;
  std::string paint(std::string_view text, Color c) const;
};

bool want_color(bool out_is_tty, const std::optional<std::string>& no_color);

// 1536 -> "1.5 KiB"; below 1 KiB exact bytes ("512 B").
std::string human_bytes(std::uint64_t n);
// 102104 -> "102,104": counts a person reads, never in JSON.
std::string grouped(std::uint64_t n);
// 1, "xorb" -> "1 xorb"; 2117, "chunk" -> "2,117 chunks".
std::string count(std::uint64_t n, std::string_view noun);
// Unix seconds -> "2025-08-01T14:51:45Z".
std::string iso_utc(std::uint64_t unix_s);
// Unix seconds -> "2025-08-01T16:51:45+02:00" in the local zone (TZ).
std::string iso_local(std::uint64_t unix_s);
// Now, in unix seconds (what "expires in", "created ago" count from).
inline std::uint64_t now_s() { return std::uint64_t(std::time(nullptr)); }
// Seconds of difference -> "in 3d 4h" / "2h 5m ago" / "now".
std::string relative(std::int64_t seconds_from_now);
// 93784 -> "1d 2h 3m".
std::string duration(std::uint64_t seconds);

// A left/right aligned table with a header row; columns are separated by two
// spaces and the last column is not padded (no trailing blanks). Cells carry
// their own colour so alignment counts only visible characters.
class Table {
 public:
  enum Align { left, right };
  struct Column {
    std::string title;
    Align align = left;
  };
  struct Cell {
    std::string text;
    Color color = Color::none;
    Cell(std::string t, Color c = Color::none) : text(std::move(t)), color(c) {}
    Cell(const char* t, Color c = Color::none) : text(t), color(c) {}
  };

  explicit Table(std::vector<Column> columns, std::string indent = "")
      : columns_(std::move(columns)), indent_(std::move(indent)) {}
  void add(std::vector<Cell> row) { rows_.push_back(std::move(row)); }
  std::size_t size() const { return rows_.size(); }
  void print(std::ostream& out, const Style& style, bool with_header = true) const;

 private:
  std::vector<Column> columns_;
  std::string indent_;
  std::vector<std::vector<Cell>> rows_;
};

// "label   value" lines with the labels padded to one width.
class Fields {
 public:
  explicit Fields(std::string indent = "") : indent_(std::move(indent)) {}
  void add(std::string label, std::string value, Color c = Color::none) {
    rows_.push_back({std::move(label), std::move(value), c});
  }
  void print(std::ostream& out, const Style& style) const;

 private:
  struct Row {
    std::string label, value;
    Color color;
  };
  std::string indent_;
  std::vector<Row> rows_;
};

// The one JSON document a verb prints with --json: two-space indent, one
// trailing newline. Kept in one place so every verb is formatted alike.
void print_json(std::ostream& out, const nlohmann::ordered_json& doc);

}  // namespace dedupctl
