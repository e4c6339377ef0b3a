// What dedupd shows of the local Xet endpoint (docs/XET-ENDPOINT.md): its
// upstreams and ports, read from the settings file its nginx is rendered
// from (packaging/xet-endpoint/xet-endpoint.conf). That script checks every
// value before nginx sees it; this only reads, with the same defaults, so
// both agree on what a missing key means.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace dedupd::daemon::config {

struct XetEndpointSettings {
  bool present = false;  // a missing file means every default, as for the script
  std::string problem;   // why the file could not be read; defaults then
  std::string hub_upstream = "https://huggingface.co";
  std::string cas_upstream = "https://cas-server.xethub.hf.co";
  std::uint32_t hub_port = 8787;
  std::uint32_t cas_port = 8788;
  // The download cache (nginx's proxy_cache_path): the package's
  // CacheDirectory unless the file names another.
  std::string cache_dir = "/var/cache/dedupd-xet-endpoint";
};

XetEndpointSettings read_xet_endpoint_settings(const std::filesystem::path& file);

}  // namespace dedupd::daemon::config
