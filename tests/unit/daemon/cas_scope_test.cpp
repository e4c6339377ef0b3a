// Which CAS a shard found at a path belongs to (daemon/ingest/cas_scope.hpp).
#include <gtest/gtest.h>

#include "daemon/ingest/cas_scope.hpp"
#include "tests/support/temp_dir.hpp"
#include "xetcache/cas_url.hpp"

namespace dedupd::daemon::ingest {
namespace {

std::string in_cache(const std::string& root, const std::string& url) {
  return root + "/" + dedupd::xetcache::client_cache_dir_name(url) + "/shard-cache/" + std::string(64, 'a') + ".mdb";
}

TEST(CasScopes, AWatchEntrysCasWinsThenTheCacheDirectoryElseUnknown) {
  CasScopes s;
  config::WatchDir drop{"/srv/drop", true};
  drop.cas = "https://cas-a.example";
  config::WatchDir nested{"/srv/drop/b", true};
  nested.cas = "https://cas-b.example";
  s.configure({drop, nested, config::WatchDir{"/home/u/.cache/huggingface/xet", true}}, "");
  EXPECT_EQ(s.of_path("/srv/drop/x.mdb"), "https://cas-a.example");
  EXPECT_EQ(s.of_path("/srv/drop/b/x.mdb"), "https://cas-b.example");
  EXPECT_EQ(s.of_path("/srv/dropped/x.mdb"), "");  // a name that only starts alike
  // The Hub's CAS is always known; a cache of a CAS named nowhere is not.
  EXPECT_EQ(s.of_path(in_cache("/home/u/.cache/huggingface/xet", "https://cas-server.xethub.hf.co")),
            "https://cas-server.xethub.hf.co");
  EXPECT_EQ(s.of_path(in_cache("/home/u/.cache/huggingface/xet", "https://cas-a.example/")), "https://cas-a.example");
  EXPECT_EQ(s.of_path(in_cache("/home/u/.cache/huggingface/xet", "https://elsewhere.example")), "");
  EXPECT_EQ(s.of_path("/home/u/notes.mdb"), "");
}

TEST(CasScopes, ACacheOfTheEndpointsOwnPortHoldsItsUpstreamsShards) {
  tests::TempDir dir("scope");
  const std::string settings = dir / "xet-endpoint.conf";
  tests::write_file(settings, "cas_upstream = https://CAS.internal.example\ncas_port = 9788\n");
  CasScopes s;
  s.configure({}, settings);
  EXPECT_EQ(s.endpoint_cas(), "https://cas.internal.example");
  EXPECT_EQ(s.of_path(in_cache("/c", "http://127.0.0.1:9788")), "https://cas.internal.example");
  EXPECT_EQ(s.of_path(in_cache("/c", "http://localhost:9788")), "https://cas.internal.example");
  EXPECT_EQ(s.of_path(in_cache("/c", "http://127.0.0.1:8788")), "");
  // The settings file is read again when it changes.
  tests::write_file(settings, "cas_upstream = https://other.example\ncas_port = 9790\n");
  std::filesystem::last_write_time(settings, std::filesystem::last_write_time(settings) + std::chrono::seconds(5));
  EXPECT_EQ(s.of_path(in_cache("/c", "http://127.0.0.1:9790")), "https://other.example");
  EXPECT_EQ(s.endpoint_cas(), "https://other.example");
}

}  // namespace
}  // namespace dedupd::daemon::ingest
