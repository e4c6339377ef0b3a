#include "shard/caf.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "shard/bytes.hpp"

namespace dedupd::shard::caf {
namespace {

using json = nlohmann::json;

base::Error err(std::string rule, std::uint64_t offset, std::string message) {
  return base::Error{std::move(rule), offset, std::move(message)};
}

// Decodes one UTF-8 sequence at s[i]; returns its length, 0 when invalid.
std::size_t utf8_len(std::string_view s, std::size_t i, std::uint32_t* cp) {
  auto b = [&](std::size_t k) { return static_cast<std::uint8_t>(s[k]); };
  std::uint8_t c = b(i);
  std::size_t n;
  std::uint32_t v;
  if (c < 0x80) {
    *cp = c;
    return 1;
  } else if ((c & 0xE0) == 0xC0) {
    n = 2, v = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3, v = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    n = 4, v = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    v = v << 6 | (b(i + k) & 0x3F);
  }
  static constexpr std::uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (v < kMin[n] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
  *cp = v;
  return n;
}

bool valid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    std::uint32_t cp;
    std::size_t n = utf8_len(s, i, &cp);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

// Where NAME's key sits in the index, best effort (names with escapes are
// not found and fall back to the index start).
std::uint64_t key_offset(std::string_view index, std::uint64_t index_offset, const std::string& name) {
  std::string needle = "\"" + name + "\"";
  auto pos = index.find(needle);
  return pos == std::string_view::npos ? index_offset : index_offset + pos;
}

}  // namespace

bool Member::is_shard() const {
  return name.size() >= kShardSuffix.size() &&
         std::string_view(name).substr(name.size() - kShardSuffix.size()) == kShardSuffix;
}

std::string unsafe_name_reason(std::string_view name) {
  if (name.empty()) return "empty name";
  for (unsigned char c : name) {
    if (c == 0) return "name contains a NUL byte";
    if (c < 0x20 || c == 0x7F) return "name contains a control character";
  }
  if (name.front() == '/') return "absolute path";
  std::size_t start = 0;
  while (start <= name.size()) {
    std::size_t slash = name.find('/', start);
    if (slash == std::string_view::npos) slash = name.size();
    if (name.substr(start, slash - start) == "..") return "path has a '..' component";
    start = slash + 1;
  }
  return {};
}

base::Result<BundleView> BundleView::parse(std::span<const std::uint8_t> bytes) {
  const std::uint64_t size = bytes.size();
  if (size < kFooterSize) {
    return err("footer.truncated", 0, "bundle is " + std::to_string(size) + " bytes, shorter than its 4-byte footer");
  }
  const std::uint64_t index_size = load_u32(bytes.data() + size - kFooterSize);
  if (index_size > size - kFooterSize) {
    return err("footer.index_size", size - kFooterSize,
               "index size " + std::to_string(index_size) + " exceeds the " + std::to_string(size - kFooterSize) +
                   " bytes before the footer");
  }
  BundleView v;
  v.bytes_ = bytes;
  v.index_size_ = index_size;
  v.index_offset_ = size - kFooterSize - index_size;
  const std::uint64_t data_size = v.index_offset_;
  const auto* index_begin = bytes.data() + v.index_offset_;
  std::string_view index_text(reinterpret_cast<const char*>(index_begin), index_size);

  json doc;
  try {
    doc = json::parse(index_begin, index_begin + index_size);
  } catch (const json::parse_error& e) {
    std::uint64_t at = e.byte == 0 ? 0 : e.byte - 1;
    if (at > index_size) at = index_size;
    return err("index.json", v.index_offset_ + at, std::string("index is not valid JSON: ") + e.what());
  } catch (const std::exception& e) {
    return err("index.json", v.index_offset_, std::string("index is not valid JSON: ") + e.what());
  }
  if (!doc.is_object()) return err("index.schema", v.index_offset_, "index is not a JSON object");

  auto ver = doc.find("format_version");
  if (ver == doc.end() || !ver->is_string()) {
    return err("index.version", v.index_offset_, "format_version missing or not a string");
  }
  v.version_ = ver->get<std::string>();
  if (v.version_ != kFormatVersion) {
    return err("index.version", v.index_offset_, "unknown format_version \"" + v.version_ + "\" (known: \"1.0\")");
  }
  auto files = doc.find("files");
  if (files == doc.end() || !files->is_object()) {
    return err("index.schema", v.index_offset_, "\"files\" missing or not an object");
  }

  v.members_.reserve(files->size());
  for (auto it = files->begin(); it != files->end(); ++it) {
    const std::string& name = it.key();
    const std::uint64_t at = key_offset(index_text, v.index_offset_, name);
    if (std::string why = unsafe_name_reason(name); !why.empty()) {
      return err("member.name", at, "unsafe member name \"" + name + "\": " + why);
    }
    const json& meta = it.value();
    if (!meta.is_object()) {
      return err("index.schema", at, "entry for \"" + name + "\" is not an object");
    }
    std::uint64_t range[2];
    const char* keys[2] = {"start_byte", "end_byte"};
    for (int k = 0; k < 2; ++k) {
      auto f = meta.find(keys[k]);
      if (f == meta.end()) {
        return err("index.schema", at, std::string(keys[k]) + " missing for \"" + name + "\"");
      }
      if (f->is_number_unsigned()) {
        range[k] = f->get<std::uint64_t>();
      } else if (f->is_number_integer() && f->get<std::int64_t>() >= 0) {
        range[k] = static_cast<std::uint64_t>(f->get<std::int64_t>());
      } else {
        return err("index.schema", at, std::string(keys[k]) + " of \"" + name + "\" is not a non-negative integer");
      }
    }
    if (range[0] > range[1]) {
      return err(
          "member.range", at,
          "\"" + name + "\": start_byte " + std::to_string(range[0]) + " > end_byte " + std::to_string(range[1]));
    }
    if (range[1] > data_size) {
      return err("member.range", at,
                 "\"" + name + "\": end_byte " + std::to_string(range[1]) + " is past the data section (" +
                     std::to_string(data_size) + " bytes)");
    }
    Member m;
    m.name = name;
    m.start = range[0];
    m.end = range[1];
    m.bytes = bytes.subspan(m.start, m.end - m.start);
    v.members_.push_back(std::move(m));
  }

  std::sort(v.members_.begin(), v.members_.end(),
            [](const Member& a, const Member& b) { return a.start != b.start ? a.start < b.start : a.name < b.name; });
  // Empty members occupy no bytes and cannot overlap anything.
  const Member* prev = nullptr;
  for (const Member& m : v.members_) {
    if (m.size() == 0) continue;
    if (prev && m.start < prev->end) {
      return err("member.overlap", key_offset(index_text, v.index_offset_, m.name),
                 "\"" + m.name + "\" [" + std::to_string(m.start) + ", " + std::to_string(m.end) + ") overlaps \"" +
                     prev->name + "\" [" + std::to_string(prev->start) + ", " + std::to_string(prev->end) + ")");
    }
    prev = &m;
  }
  return v;
}

const Member* BundleView::find(std::string_view name) const {
  for (const Member& m : members_) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

std::vector<const Member*> BundleView::shard_members() const {
  std::vector<const Member*> out;
  for (const Member& m : members_) {
    if (m.is_shard()) out.push_back(&m);
  }
  return out;
}

std::vector<const Member*> BundleView::other_members() const {
  std::vector<const Member*> out;
  for (const Member& m : members_) {
    if (!m.is_shard()) out.push_back(&m);
  }
  return out;
}

std::string go_json_string(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size() + 2);
  out.push_back('"');
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<std::uint8_t>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '"':
          out += "\\\"";
          break;
        case '\\':
          out += "\\\\";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        default:
          if (c < 0x20 || c == '<' || c == '>' || c == '&') {
            out += "\\u00";
            out.push_back(kHex[c >> 4]);
            out.push_back(kHex[c & 0xF]);
          } else {
            out.push_back(static_cast<char>(c));
          }
      }
      ++i;
      continue;
    }
    std::uint32_t cp = 0;
    std::size_t n = utf8_len(s, i, &cp);
    if (n == 0) {  // Go replaces invalid UTF-8 by U+FFFD
      out += "\\ufffd";
      ++i;
      continue;
    }
    if (cp == 0x2028 || cp == 0x2029) {
      out += cp == 0x2028 ? "\\u2028" : "\\u2029";
    } else {
      out.append(s.substr(i, n));
    }
    i += n;
  }
  out.push_back('"');
  return out;
}

std::string encode_index_json(std::vector<IndexEntry> entries) {
  // Go sorts map keys bytewise; std::string compares as unsigned chars.
  std::sort(entries.begin(), entries.end(), [](const IndexEntry& a, const IndexEntry& b) { return a.name < b.name; });
  std::string out = "{\"format_version\":";
  out += go_json_string(kFormatVersion);
  out += ",\"files\":{";
  bool first = true;
  for (const IndexEntry& e : entries) {
    if (!first) out.push_back(',');
    first = false;
    out += go_json_string(e.name);
    out += ":{\"start_byte\":";
    out += std::to_string(e.start);
    out += ",\"end_byte\":";
    out += std::to_string(e.end);
    out.push_back('}');
  }
  out += "}}";
  return out;
}

base::Result<std::vector<std::uint8_t>> write_bundle(std::span<const MemberInput> members) {
  std::vector<IndexEntry> entries;
  entries.reserve(members.size());
  std::map<std::string_view, std::size_t> seen;
  std::uint64_t pos = 0;
  for (std::size_t i = 0; i < members.size(); ++i) {
    const MemberInput& m = members[i];
    if (std::string why = unsafe_name_reason(m.name); !why.empty()) {
      return err("member.name", i, "unsafe member name \"" + m.name + "\": " + why);
    }
    if (!valid_utf8(m.name)) {
      return err("member.name", i, "member name \"" + m.name + "\" is not valid UTF-8");
    }
    if (!seen.emplace(m.name, i).second) {
      return err("member.duplicate", i, "member name \"" + m.name + "\" given twice");
    }
    entries.push_back({m.name, pos, pos + m.bytes.size()});
    pos += m.bytes.size();
  }
  std::string index = encode_index_json(std::move(entries));
  if (index.size() > std::numeric_limits<std::uint32_t>::max()) {
    return err("bundle.too_large", members.size(), "index does not fit the 32-bit footer");
  }
  std::vector<std::uint8_t> out;
  out.reserve(pos + index.size() + kFooterSize);
  for (const MemberInput& m : members) out.insert(out.end(), m.bytes.begin(), m.bytes.end());
  out.insert(out.end(), index.begin(), index.end());
  const auto n = static_cast<std::uint32_t>(index.size());
  for (int k = 0; k < 4; ++k) out.push_back(static_cast<std::uint8_t>(n >> (8 * k)));
  return out;
}

}  // namespace dedupd::shard::caf
