#include "harness/pg_formation.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include "harness/program_run.hpp"
#include "tests/support/text_file.hpp"

namespace dedupd::itest {
using tests::file_value;

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
  dir_ = file_value(pointer_);
}

PgFormation::~PgFormation() {
  int rc = 0;
  std::string out = shell_output(script("stop") + " 2>&1", &rc);
  if (rc != 0) std::fprintf(stderr, "pg_formation stop: %s\n", out.c_str());
}

std::string PgFormation::script(const std::string& cmd, const std::string& node) const {
  return std::string(DEDUPD_PG_FORMATION) + " " + cmd + (node.empty() ? "" : " " + node) + " '" + pointer_ + "'";
}

std::string PgFormation::url() const { return file_value(std::filesystem::path(dir_) / "url") + "&user=postgres"; }
std::string PgFormation::port(const std::string& node) const {
  return file_value(std::filesystem::path(dir_) / (node + ".port"));
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
