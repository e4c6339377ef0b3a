#include "harness/pg_formation.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace dedupd::itest {
namespace {

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  std::string out = s.str();
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

}  // namespace

std::string shell_output(const std::string& cmd, int* exit_code) {
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) {
    if (exit_code) *exit_code = -1;
    return "";
  }
  std::string text;
  std::array<char, 4096> buf{};
  while (std::size_t n = std::fread(buf.data(), 1, buf.size(), p)) text.append(buf.data(), n);
  int status = ::pclose(p);
  if (exit_code) *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

PgFormation::PgFormation() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "dedupd-pgaf-pointer-XXXXXX").string();
  int fd = ::mkstemp(tmpl.data());
  if (fd < 0) throw std::runtime_error("pg_formation: no pointer file");
  ::close(fd);
  pointer_ = tmpl;
  int rc = 0;
  // This process owns it: the script's reaper stops it once we are gone.
  std::string out = shell_output(script("start") + " " + std::to_string(::getpid()) + " 2>&1", &rc);
  if (rc != 0) throw std::runtime_error("pg_formation start failed:\n" + out);
  dir_ = slurp(pointer_);
}

PgFormation::~PgFormation() {
  int rc = 0;
  std::string out = shell_output(script("stop") + " 2>&1", &rc);
  if (rc != 0) std::fprintf(stderr, "pg_formation stop: %s\n", out.c_str());
}

std::string PgFormation::script(const std::string& cmd, const std::string& node) const {
  return std::string(DEDUPD_PG_FORMATION) + " " + cmd + (node.empty() ? "" : " " + node) + " '" + pointer_ + "'";
}

std::string PgFormation::url() const { return slurp(std::filesystem::path(dir_) / "url") + "&user=postgres"; }
std::string PgFormation::port(const std::string& node) const {
  return slurp(std::filesystem::path(dir_) / (node + ".port"));
}
std::string PgFormation::node_url(const std::string& node) const {
  return "host=127.0.0.1 port=" + port(node) + " dbname=dedupd user=postgres";
}

namespace {
std::string checked(const std::string& cmd) {
  int rc = 0;
  std::string out = shell_output(cmd + " 2>&1", &rc);
  return rc == 0 ? "" : cmd + " failed:\n" + (out.empty() ? "(no output)" : out);
}
}  // namespace

std::string PgFormation::kill(const std::string& node) { return checked(script("kill", node)); }
std::string PgFormation::run(const std::string& node) { return checked(script("run", node)); }
std::string PgFormation::wait_settled() { return checked(script("wait-settled")); }
std::string PgFormation::primary() const { return shell_output(script("primary") + " 2>/dev/null"); }

}  // namespace dedupd::itest
