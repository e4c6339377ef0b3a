#include "daemon/config/xet_endpoint.hpp"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>

namespace dedupd::daemon::config {

namespace {

std::string trim(const std::string& s) {
  const char* ws = " \t\r";
  const auto b = s.find_first_not_of(ws);
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

bool port_of(const std::string& v, std::uint32_t& out) {
  std::uint32_t n = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || p != v.data() + v.size() || n == 0 || n > 65535) return false;
  out = n;
  return true;
}

}  // namespace

XetEndpointSettings read_xet_endpoint_settings(const std::filesystem::path& file) {
  XetEndpointSettings s;
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) {
    if (ec) s.problem = file.native() + ": " + ec.message();
    return s;
  }
  std::ifstream in(file);
  if (!in) {
    s.problem = file.native() + ": " + std::strerror(errno);
    return s;
  }
  s.present = true;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    const std::string t = trim(line);
    if (t.empty() || t[0] == '#') continue;
    const auto eq = t.find('=');
    // The script refuses such a file, so nginx does not run from it: say so
    // and keep reading, as the rest still says what was meant.
    if (eq == std::string::npos) {
      if (s.problem.empty()) s.problem = file.native() + ":" + std::to_string(n) + ": not 'key = value'";
      continue;
    }
    const std::string key = trim(t.substr(0, eq));
    const std::string value = trim(t.substr(eq + 1));
    if (key == "hub_upstream") s.hub_upstream = value;
    else if (key == "cas_upstream") s.cas_upstream = value;
    else if (key == "cache_dir") s.cache_dir = value;
    else if ((key == "hub_port" && !port_of(value, s.hub_port)) || (key == "cas_port" && !port_of(value, s.cas_port)))
      if (s.problem.empty()) s.problem = file.native() + ":" + std::to_string(n) + ": " + key + " is not a port";
  }
  return s;
}

}  // namespace dedupd::daemon::config
