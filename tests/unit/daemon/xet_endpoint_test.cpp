// The local Xet endpoint's settings as dedupd reads them (daemon/config/
// xet_endpoint): the script's defaults for what the file leaves out or a
// missing file, and the first line in doubt named.
#include "daemon/config/xet_endpoint.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "tests/support/temp_dir.hpp"

namespace dedupd::daemon::config {
namespace {

// The endpoint's settings as dedupd shows them: the script's defaults for
// what the file leaves out, and for a missing file.
TEST(XetEndpointSettings, ReadsUpstreamsAndPortsWithTheScriptsDefaults) {
  tests::TempDir dir("xet-endpoint-conf");
  XetEndpointSettings none = read_xet_endpoint_settings(dir / "absent.conf");
  EXPECT_FALSE(none.present);
  EXPECT_TRUE(none.problem.empty());
  EXPECT_EQ(none.hub_upstream, "https://huggingface.co");
  EXPECT_EQ(none.cas_upstream, "https://cas-server.xethub.hf.co");
  EXPECT_EQ(none.hub_port, 8787u);
  EXPECT_EQ(none.cas_port, 8788u);

  {
    std::ofstream f(dir / "a.conf");
    f << "# comment\n\n  cas_upstream = https://cas.example:8443  \nhub_port=9000\n#hub_upstream = https://x\n";
  }
  XetEndpointSettings a = read_xet_endpoint_settings(dir / "a.conf");
  EXPECT_TRUE(a.present);
  EXPECT_TRUE(a.problem.empty()) << a.problem;
  EXPECT_EQ(a.hub_upstream, "https://huggingface.co");
  EXPECT_EQ(a.cas_upstream, "https://cas.example:8443");
  EXPECT_EQ(a.hub_port, 9000u);
  EXPECT_EQ(a.cas_port, 8788u);

  {
    std::ofstream f(dir / "b.conf");
    f << "cas_port = 70000\nnonsense\n";
  }
  XetEndpointSettings b = read_xet_endpoint_settings(dir / "b.conf");
  EXPECT_NE(b.problem.find(":1: cas_port is not a port"), std::string::npos) << b.problem;
  EXPECT_EQ(b.cas_port, 8788u);
}

TEST(XetEndpointSettings, OnlyTheFirstLineInDoubtIsNamedAndTheRestIsStillRead) {
  tests::TempDir dir("xet-endpoint-conf");
  {
    std::ofstream f(dir / "c.conf");
    f << "\n# ports\nhub_port = 0\ncas_port = 12x\nhub_upstream=https://hub.example\n";
  }
  XetEndpointSettings c = read_xet_endpoint_settings(dir / "c.conf");
  EXPECT_TRUE(c.present);
  EXPECT_EQ(c.problem, dir / "c.conf" + ":3: hub_port is not a port");
  EXPECT_EQ(c.hub_port, 8787u);
  EXPECT_EQ(c.cas_port, 8788u);
  EXPECT_EQ(c.hub_upstream, "https://hub.example");
  {
    std::ofstream f(dir / "d.conf");
    f << "cas_upstream\n";
  }
  EXPECT_EQ(read_xet_endpoint_settings(dir / "d.conf").problem, dir / "d.conf" + ":1: not 'key = value'");
}

}  // namespace
}  // namespace dedupd::daemon::config
