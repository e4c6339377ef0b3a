#include "daemon/config/watch_list.hpp"

#include <algorithm>
#include <array>
#include <filesystem>

#include "daemon/config/value_types.hpp"

namespace dedupd::daemon::config {

namespace {

namespace fs = std::filesystem;

// The keys of one entry in the mapping form, each read into its WatchDir.
struct EntryKey {
  const char* name;
  void (*read)(YamlReader& r, const std::string& key, const YAML::Node& v, WatchDir& w);
};

template <class Kind, class Field>
void read_into(const Kind& kind, YamlReader& r, const std::string& key, const YAML::Node& v, Field& out) {
  if (auto got = kind.parse(r, key, v)) out = std::move(*got);
}

constexpr std::array<EntryKey, 4> kEntryKeys{{
    {"path", [](YamlReader& r, const std::string& k, const YAML::Node& v,
                WatchDir& w) { read_into(PathValue{}, r, k, v, w.path); }},
    {"recursive", [](YamlReader& r, const std::string& k, const YAML::Node& v,
                     WatchDir& w) { read_into(FlagValue{}, r, k, v, w.recursive); }},
    {"manage", [](YamlReader& r, const std::string& k, const YAML::Node& v,
                  WatchDir& w) { read_into(ManageValue{}, r, k, v, w.manage); }},
    {"cas", [](YamlReader& r, const std::string& k, const YAML::Node& v,
               WatchDir& w) { read_into(CasUrlValue{}, r, k, v, w.cas); }},
}};

std::string entry_key_names() {
  std::string names;
  for (const auto& k : kEntryKeys) names += (names.empty() ? "" : ", ") + std::string(k.name);
  return names;
}

// One entry in the mapping form, into `w`.
void read_entry_map(YamlReader& r, const std::string& key, const YAML::Node& item, WatchDir& w) {
  bool has_path = false;
  for (auto it = item.begin(); it != item.end(); ++it) {
    const std::string dotted = r.enter(it, key);
    const std::string name = it->first.Scalar();
    auto known = std::find_if(kEntryKeys.begin(), kEntryKeys.end(), [&](const EntryKey& k) { return name == k.name; });
    if (known == kEntryKeys.end()) {
      r.unknown(dotted, it->first, entry_key_names());
      continue;
    }
    known->read(r, dotted, it->second, w);
    has_path = has_path || name == "path";
  }
  if (!has_path) r.fail(key, item, "a watch entry needs a path");
  if (w.manage == Manage::xet_cache && !w.recursive)
    r.fail(key + ".recursive", item,
           "a managed Xet cache nests <endpoint>/shard-cache/: it must be watched recursively");
}

// Two managed entries over one cache make two stewards deleting under
// each other's merges (one deletes the originals the other is merging,
// under a running client): the same directory twice, or one inside the other, is refused.
void refuse_managed_overlap(YamlReader& r, const std::string& key, const YAML::Node& at, const fs::path& path,
                            const std::vector<WatchDir>& earlier, const std::vector<int>& lines) {
  auto inside = [](const fs::path& outer, const fs::path& inner) {
    auto [o, i] = std::mismatch(outer.begin(), outer.end(), inner.begin(), inner.end());
    return o == outer.end();
  };
  for (std::size_t j = 0; j < earlier.size(); ++j) {
    if (earlier[j].manage != Manage::xet_cache) continue;
    const fs::path& other = earlier[j].path;
    if (!inside(other, path) && !inside(path, other)) continue;
    const char* how = other == path ? "is the same directory as" : "overlaps";
    r.fail(key, at,
           "managed Xet cache " + path.string() + " " + how + " the managed cache " + other.string() + " on line " +
               std::to_string(lines[j]) + ": one cache, one steward");
    return;
  }
}

}  // namespace

std::optional<WatchListValue::Value> WatchListValue::parse(YamlReader& r, const std::string& key,
                                                           const YAML::Node& v) const {
  if (v.IsNull()) return Value{};
  if (!v.IsSequence()) {
    r.fail(key, v, "expected a list of directories");
    return std::nullopt;
  }
  Value out;
  std::vector<int> lines;  // of each entry in `out`
  for (std::size_t i = 0; i < v.size(); ++i) {
    const YAML::Node item = v[i];
    const std::string k = key + "[" + std::to_string(i) + "]";
    WatchDir w;
    if (item.IsMap()) read_entry_map(r, k, item, w);
    else read_into(PathValue{}, r, k, item, w.path);
    if (w.path.empty()) continue;
    if (w.manage == Manage::xet_cache) refuse_managed_overlap(r, k, item, w.path, out, lines);
    out.push_back(w);
    lines.push_back(line_of(item));
  }
  return out;
}

std::string WatchListValue::show(const Value& dirs) const {
  std::string out;
  for (const auto& w : dirs) out += (out.empty() ? "" : ", ") + w.path.native();
  return out;
}

}  // namespace dedupd::daemon::config
