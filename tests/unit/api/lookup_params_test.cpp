// What a lookup request asks for beyond its hash (daemon/api/routes/
// lookup_params): ?local_only in its spellings, and ?fields read into the
// fields an answer carries or refused with a message for the 400.
#include "daemon/api/routes/lookup_params.hpp"

#include <gtest/gtest.h>

#include <string>
#include <variant>

#include "api/routes.hpp"

namespace dedupd::daemon::api::http {
namespace {

TEST(LookupAnswer, BadFieldListsAreRefused) {
  auto bad = routes::parse_lookup_fields("hash,sizes");
  ASSERT_TRUE(std::holds_alternative<std::string>(bad));
  EXPECT_NE(std::get<std::string>(bad).find("unknown field 'sizes'"), std::string::npos);
  EXPECT_TRUE(std::holds_alternative<std::string>(routes::parse_lookup_fields(",")));
}

render::LookupFields picked(std::string_view list) {
  auto parsed = routes::parse_lookup_fields(list);
  EXPECT_TRUE(std::holds_alternative<render::LookupFields>(parsed))
      << list << ": " << (std::holds_alternative<std::string>(parsed) ? std::get<std::string>(parsed) : "");
  return std::holds_alternative<render::LookupFields>(parsed) ? std::get<render::LookupFields>(parsed)
                                                              : render::LookupFields{};
}

TEST(LookupParams, EachFieldNameSetsItsOwnPart) {
  using F = render::LookupFields;
  const auto presence = picked("hash,found");
  EXPECT_TRUE(presence.hash);
  EXPECT_TRUE(presence.found);
  EXPECT_EQ(presence.location, 0) << "a presence check gets no locations";
  const auto found = picked("found");
  EXPECT_FALSE(found.hash);
  EXPECT_TRUE(found.found);
  EXPECT_EQ(picked("locations").location, F::kAll);
  EXPECT_FALSE(picked("locations").hash);
  EXPECT_EQ(picked("xorb,chunk_index,byte_start,byte_end,unpacked_bytes,flags,shards,origin").location, F::kAll);
  EXPECT_EQ(picked("byte_end,,xorb,").location, F::kByteEnd | F::kXorb) << "empty names are passed over";
  EXPECT_EQ(picked("shards,shards").location, F::kShards);
  EXPECT_EQ(picked("origin").location, F::kOrigin);
}

TEST(LookupParams, AListNamingNothingIsRefused) {
  for (std::string_view none : {"", ",", ",,,"}) {
    auto r = routes::parse_lookup_fields(none);
    ASSERT_TRUE(std::holds_alternative<std::string>(r)) << none;
    EXPECT_EQ(std::get<std::string>(r), "fields names none: give at least one");
  }
  // An unknown name is quoted, cut to 40 characters, with the names known.
  auto long_name = routes::parse_lookup_fields("hash," + std::string(100, 'z'));
  ASSERT_TRUE(std::holds_alternative<std::string>(long_name));
  EXPECT_EQ(std::get<std::string>(long_name), "unknown field '" + std::string(40, 'z') +
                                                  "' in fields: choose from hash, found, locations, xorb, "
                                                  "chunk_index, byte_start, byte_end, unpacked_bytes, flags, shards, "
                                                  "origin");
  EXPECT_TRUE(std::holds_alternative<std::string>(routes::parse_lookup_fields("Hash"))) << "names are lower case";
}

TEST(LookupParams, LocalOnlyIsABareFlagOrAYes) {
  auto with = [](std::string value) {
    Request r;
    r.query = {{"fields", "hash"}, {std::string(::dedupd::api::kLocalOnly), std::move(value)}};
    return routes::local_only(r);
  };
  for (const char* yes : {"", "1", "true", "yes"}) EXPECT_TRUE(with(yes)) << yes;
  for (const char* no : {"0", "false", "no", "YES", "2"}) EXPECT_FALSE(with(no)) << no;
  Request none;
  none.query = {{"fields", "hash"}};
  EXPECT_FALSE(routes::local_only(none));
  // The first value counts.
  Request twice;
  twice.query = {{std::string(::dedupd::api::kLocalOnly), "0"}, {std::string(::dedupd::api::kLocalOnly), "1"}};
  EXPECT_FALSE(routes::local_only(twice));
}

}  // namespace
}  // namespace dedupd::daemon::api::http
