// Checks a JSON document against the field list and types docs/API.md gives.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "shard/hash.hpp"

namespace dedupd::daemon::testing {

enum class T { string, hash, uint, boolean, array, object, uint_or_null, hash_or_null, string_or_null, object_or_null };

inline ::testing::AssertionResult has_type(const nlohmann::json& v, T t) {
  auto is_hash = [](const nlohmann::json& j) { return j.is_string() && shard::Hash::parse(j.get<std::string>()).ok(); };
  bool ok = false;
  switch (t) {
    case T::string:
      ok = v.is_string();
      break;
    case T::hash:
      ok = is_hash(v);
      break;
    case T::uint:
      ok = v.is_number_unsigned();
      break;
    case T::boolean:
      ok = v.is_boolean();
      break;
    case T::array:
      ok = v.is_array();
      break;
    case T::object:
      ok = v.is_object();
      break;
    case T::uint_or_null:
      ok = v.is_null() || v.is_number_unsigned();
      break;
    case T::hash_or_null:
      ok = v.is_null() || is_hash(v);
      break;
    case T::string_or_null:
      ok = v.is_null() || v.is_string();
      break;
    case T::object_or_null:
      ok = v.is_null() || v.is_object();
      break;
  }
  if (ok) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "unexpected type: " << v.dump();
}

// Every listed field is present with its type; `exact` also forbids others.
inline void expect_shape(const nlohmann::json& doc, const std::vector<std::pair<std::string, T>>& fields,
                         bool exact = true) {
  ASSERT_TRUE(doc.is_object()) << doc.dump();
  for (const auto& [name, type] : fields) {
    ASSERT_TRUE(doc.contains(name)) << "missing \"" << name << "\" in " << doc.dump();
    EXPECT_TRUE(has_type(doc[name], type)) << "field \"" << name << "\"";
  }
  if (exact) {
    EXPECT_EQ(doc.size(), fields.size()) << "unexpected fields in " << doc.dump();
  }
}

inline void expect_error(const nlohmann::json& doc, const std::string& code) {
  ASSERT_TRUE(doc.contains("error")) << doc.dump();
  expect_shape(doc["error"], {{"code", T::string}, {"message", T::string}}, false);
  EXPECT_EQ(doc["error"]["code"], code);
  EXPECT_FALSE(doc["error"]["message"].get<std::string>().empty());
}

inline const std::vector<std::pair<std::string, T>> kShardRefShape = {
    {"shard", T::hash}, {"expiry", T::uint_or_null}, {"keyed", T::boolean}};

inline const std::vector<std::pair<std::string, T>> kLocationShape = {
    {"xorb", T::hash},           {"chunk_index", T::uint}, {"byte_start", T::uint}, {"byte_end", T::uint},
    {"unpacked_bytes", T::uint}, {"flags", T::uint},       {"origin", T::string},   {"shards", T::array}};

inline const std::vector<std::pair<std::string, T>> kShardSummaryShape = {{"hash", T::hash},
                                                                          {"state", T::string},
                                                                          {"paths", T::array},
                                                                          {"size", T::uint},
                                                                          {"created", T::uint_or_null},
                                                                          {"expiry", T::uint_or_null},
                                                                          {"keyed", T::boolean},
                                                                          {"xorbs", T::uint},
                                                                          {"chunks", T::uint},
                                                                          {"files", T::uint},
                                                                          {"ingested_at", T::uint},
                                                                          {"cas", T::string_or_null},
                                                                          {"set_aside", T::object_or_null}};

inline const std::vector<std::pair<std::string, T>> kStatsShape = {
    {"shards", T::object},      {"xorbs", T::uint},    {"chunks", T::uint},
    {"files", T::uint},         {"keys", T::uint},     {"db_bytes", T::uint},
    {"map_size", T::uint},      {"map_used", T::uint}, {"next_expiry", T::uint_or_null},
    {"chunk_filter", T::object}};

}  // namespace dedupd::daemon::testing
