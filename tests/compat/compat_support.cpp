#include "compat_support.hpp"

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "harness/daemon_process.hpp"
#include "harness/eventually.hpp"
#include "harness/program_run.hpp"
#include "tests/support/text_file.hpp"

namespace dedupd::compat {

using itest::FleetHost;
using nlohmann::json;

namespace {

Release load_old() {
  const fs::path dir = DEDUPD_OLD_RELEASE_DIR;
  Release r{"v0.1.0", (dir / "dedupd").string(), (dir / "dedupctl").string()};
  const std::string described = tests::file_value(dir / "release");
  if (!described.empty()) r.name = described;
  return r;
}

}  // namespace

const Release& old_release() {
  static const Release r = load_old();
  for (const std::string& p : {r.dedupd, r.dedupctl})
    if (::access(p.c_str(), X_OK) != 0) {
      ADD_FAILURE() << "the previous release's " << p
                    << " is missing: run the compat tests through ctest (its fixture compat_release runs "
                       "tests/compat/build_release.sh), or run build_release.sh "
                    << fs::path(p).parent_path().string() << " first";
      throw std::runtime_error("no previous release");
    }
  return r;
}

const Release& new_release() {
  static const Release r{"this build", itest::dedupd_binary(), DEDUPCTL_BINARY};
  return r;
}

void write_old_config(const FleetHost& h, const std::string& url, const std::string& lookup_timeout) {
  std::ofstream f(h.config);
  f << "state_dir: " << (h.dir / "state").string() << "\n"
    << "socket: " << h.socket.string() << "\n"
    << "watch:\n  - " << h.incoming.string() << "\n"
    << "log_level: debug\n";
  if (url.empty()) return;
  f << "fleet:\n  url: \"" << url << "\"\n  host: " << h.name << "\n";
  if (!lookup_timeout.empty()) f << "  lookup_timeout: " << lookup_timeout << "\n";
}

std::string check_config(const Release& r, const fs::path& config) {
  itest::ProgramRun run = itest::run_shell("'" + r.dedupd + "' --config '" + config.string() + "' --check-config 2>&1");
  if (run.code == 0 && run.out == "ok\n") return "";
  return "exit " + std::to_string(run.code) + ": " + run.out;
}

void start_host(FleetHost& h, const Release& r) {
  itest::LaunchOptions o;
  o.program = r.dedupd;
  o.args = {"--config", h.config.string()};
  o.log_file = h.log;
  o.work_dir = h.dir;
  h.process.start(o);
  h.client = std::make_unique<itest::HttpClient>(h.socket.string());
  ASSERT_TRUE(itest::eventually([&] { return !h.process.running() || h.client->get("/healthz").status == 200; },
                                h.start_timeout) &&
              h.process.running())
      << h.name << " (" << r.name << ") did not start:\n"
      << h.log_text();
}

void expect_index_opened_in_place(const FleetHost& h, const std::string& who) {
  const std::string log = h.log_text();
  for (const char* sign : {"damaged", "moved aside", "rebuil"})
    EXPECT_EQ(log.find(sign), std::string::npos) << who << "'s log says \"" << sign << "\":\n" << log;
  for (const auto& e : fs::directory_iterator(h.dir / "state"))
    EXPECT_EQ(e.path().filename().string().find("damaged"), std::string::npos)
        << who << ": the index was moved aside: " << e.path().string();
}

void add_expected(std::vector<Expected>& out, const itest::MadeShard& s, const std::string& origin,
                  const std::string& holder) {
  const std::size_t per_xorb = s.raw_chunks.size() / s.xorbs.size();
  for (std::size_t i = 0; i < s.raw_chunks.size(); ++i)
    out.push_back({s.raw_chunks[i].to_string(), s.xorbs[i / per_xorb].to_string(), i % per_xorb, origin, holder});
}

std::string StreamAnswer::describe() const {
  std::ostringstream o;
  o << "exit " << code << ", " << lines << " results, " << right << " right";
  if (!first_wrong.empty()) o << "; first wrong: " << first_wrong;
  if (!err.empty()) o << "; stderr: " << err;
  return o.str();
}

namespace {

// Why `line` does not answer `want` ("" when it does).
std::string wrong_in(const std::string& line, const Expected& want) {
  json doc = json::parse(line, nullptr, false);
  if (doc.is_discarded()) return "not JSON";
  if (doc.value("hash", "") != want.hash) return "another hash (order)";
  if (!doc.value("found", false)) return "not found";
  for (const json& loc : doc.value("locations", json::array())) {
    if (loc.value("xorb", "") != want.xorb || loc.value("chunk_index", std::uint64_t(-1)) != want.chunk_index) continue;
    if (loc.value("origin", "") != want.origin) continue;
    if (want.origin != "fleet") return "";
    for (const json& s : loc.value("shards", json::array()))
      for (const json& holder : s.value("holders", json::array()))
        if (holder == want.holder) return "";
  }
  return "no location at xorb " + want.xorb + " index " + std::to_string(want.chunk_index) + " from " + want.origin +
         (want.origin == "fleet" ? " held by " + want.holder : "");
}

}  // namespace

StreamAnswer stream_query(const Release& r, const fs::path& socket, const std::vector<Expected>& want,
                          const fs::path& scratch) {
  const fs::path in = scratch / "hashes.txt", err = scratch / "query.err";
  {
    std::ofstream f(in);
    for (const Expected& e : want) f << e.hash << '\n';
  }
  itest::ProgramRun run = itest::run_shell("'" + r.dedupctl + "' --socket '" + socket.string() +
                                           "' query --json-lines - < '" + in.string() + "' 2> '" + err.string() + "'");
  StreamAnswer a;
  a.code = run.code;
  a.err = tests::file_text(err);
  std::istringstream lines(run.out);
  for (std::string line; std::getline(lines, line); ++a.lines) {
    if (a.lines >= want.size()) {
      if (a.first_wrong.empty()) a.first_wrong = "more results than hashes: " + line;
      continue;
    }
    std::string why = wrong_in(line, want[a.lines]);
    if (why.empty()) ++a.right;
    else if (a.first_wrong.empty()) a.first_wrong = want[a.lines].hash + ": " + why + " in " + line;
  }
  return a;
}

FileState file_state(const fs::path& p) {
  FileState s;
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return s;
  s.size = std::uintmax_t(st.st_size);
  s.mtime_ns = std::int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  s.ctime_ns = std::int64_t(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec;
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr);
  std::ifstream f(p, std::ios::binary);
  std::vector<char> buf(1 << 20);
  while (f.read(buf.data(), std::streamsize(buf.size())) || f.gcount() > 0)
    EVP_DigestUpdate(ctx.get(), buf.data(), std::size_t(f.gcount()));
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned n = 0;
  EVP_DigestFinal_ex(ctx.get(), md, &n);
  char hex[3];
  for (unsigned i = 0; i < n; ++i) {
    std::snprintf(hex, sizeof hex, "%02x", md[i]);
    s.digest += hex;
  }
  return s;
}

std::string describe(const FileState& s) {
  return std::to_string(s.size) + " bytes, sha256 " + s.digest.substr(0, 16) + "..., mtime " +
         std::to_string(s.mtime_ns) + " ns, ctime " + std::to_string(s.ctime_ns) + " ns";
}

}  // namespace dedupd::compat
