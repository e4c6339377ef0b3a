// The CAS URL's normal form, and the client's cache directory name for a
// CAS, against names the real client made.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "xetcache/cas_url.hpp"

namespace dedupd::xetcache {
namespace {

// Directories hf_xet 1.8.0 (PyPI, the pinned tests/xet_client/requirements.txt)
// created under HF_XET_CACHE for an upload to each URL, given as shown.
TEST(ClientCacheDirName, IsTheNameTheRealClientGaveEachCas) {
  EXPECT_EQ(client_cache_dir_name("http://127.0.0.1:1"), "http___127_0_0_1-I3gxQGHqlfbd_nll");
  EXPECT_EQ(client_cache_dir_name("https://cas-server.xethub.hf.co"), "https___cas_serv-tGqkUaZf_CBPHQ6h");
  EXPECT_EQ(client_cache_dir_name("http://localhost:8788/"), "http___localhost-n0HSDnxn8n-TtyXt");
  EXPECT_EQ(client_cache_dir_name("http://[::1]:9/some/path"), "http______1__9_s-Nrs2QD85zZrsgXNk");
}

TEST(NormalizeCasUrl, GivesOneSpellingOfEachCas) {
  EXPECT_EQ(normalize_cas_url("https://cas-server.xethub.hf.co"), "https://cas-server.xethub.hf.co");
  EXPECT_EQ(normalize_cas_url("HTTPS://CAS-Server.XetHub.hf.co/"), "https://cas-server.xethub.hf.co");
  EXPECT_EQ(normalize_cas_url("https://cas.example:443//"), "https://cas.example");
  EXPECT_EQ(normalize_cas_url("http://cas.example:80"), "http://cas.example");
  EXPECT_EQ(normalize_cas_url("http://127.0.0.1:8788"), "http://127.0.0.1:8788");
  EXPECT_EQ(normalize_cas_url("https://cas.example:8443/Prefix/"), "https://cas.example:8443/Prefix");
  EXPECT_EQ(normalize_cas_url("http://[::1]:9/x"), "http://[::1]:9/x");
}

TEST(NormalizeCasUrl, RefusesWhatIsNotOneCasUrl) {
  for (const char* bad :
       {"", "cas.example", "ftp://cas.example", "https://", "https://:443", "https://a b", "https://cas.example?x=1",
        "https://cas.example#f", "https://user@cas.example", "https://cas.example:", "https://cas.example:0",
        "https://cas.example:70000", "https://cas.example:12x", "https://cas_example", "https://[::1",
        "https://cas.example\n", "https://cas.example/a\"b", "https://cas.example/a{b}",
        // Found by fuzz_learn: a colon in the host made the
        // port of the second normalization.
        "HTTPS://verco:4co:443/.hf.co43/", "https://[]", "https://[zz]:1"})
    EXPECT_EQ(normalize_cas_url(bad), std::nullopt) << bad;
}

}  // namespace
}  // namespace dedupd::xetcache
