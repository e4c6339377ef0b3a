#include "prometheus.hpp"

#include <curl/curl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <stdexcept>

#include "harness/eventually.hpp"
#include "tests/support/text_file.hpp"

namespace dedupd::itest {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

const fs::path kPrometheusDir = DEDUPD_PROMETHEUS_DIR;
const char* const kPrometheus = "/usr/bin/prometheus";

std::size_t append_body(char* data, std::size_t size, std::size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

std::string url_escaped(const std::string& text) {
  CURL* c = curl_easy_init();
  char* escaped = curl_easy_escape(c, text.c_str(), int(text.size()));
  std::string out = escaped ? escaped : "";
  curl_free(escaped);
  curl_easy_cleanup(c);
  return out;
}

double unix_now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

// An RFC 3339 time as Go writes it ("2026-01-02T03:04:05.123456789Z" or
// "...+01:00"), in unix seconds.
double rfc3339(const std::string& t) {
  std::tm tm{};
  int consumed = 0;
  if (std::sscanf(t.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
                  &tm.tm_sec, &consumed) != 6)
    throw std::runtime_error("not an RFC 3339 time: " + t);
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  double s = double(::timegm(&tm));
  std::size_t at = std::size_t(consumed);
  if (at < t.size() && t[at] == '.') {
    double scale = 0.1;
    for (++at; at < t.size() && std::isdigit(static_cast<unsigned char>(t[at])); ++at, scale /= 10)
      s += (t[at] - '0') * scale;
  }
  int oh = 0, om = 0;
  if (at < t.size() && (t[at] == '+' || t[at] == '-') && std::sscanf(t.c_str() + at + 1, "%2d:%2d", &oh, &om) == 2)
    s -= (t[at] == '+' ? 1 : -1) * (oh * 3600.0 + om * 60.0);
  return s;
}

// `text` with each run of white space one space, none at the ends:
// format_query prints long expressions over several lines, the rules API
// on one.
std::string one_line(const std::string& text) {
  std::string out;
  for (char c : text) {
    const bool space = std::isspace(static_cast<unsigned char>(c)) != 0;
    if (!space) out += c;
    else if (!out.empty() && out.back() != ' ') out += ' ';
  }
  if (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::map<std::string, std::string> string_map(const YAML::Node& n) {
  std::map<std::string, std::string> out;
  if (n)
    for (const auto& kv : n) out[kv.first.as<std::string>()] = kv.second.as<std::string>();
  return out;
}
std::map<std::string, std::string> string_map(const json& j) {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : j.items()) out[k] = v.get<std::string>();
  return out;
}

}  // namespace

std::uint16_t free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    throw std::runtime_error("no free port");
  ::close(fd);
  return ntohs(a.sin_port);
}

std::pair<long, std::string> http_get(const std::string& url) {
  std::string body;
  long status = 0;
  CURL* c = curl_easy_init();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &append_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
  if (curl_easy_perform(c) == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(c);
  return {status, body};
}

Prometheus::Prometheus(const fs::path& dir, const std::vector<std::string>& targets)
    : dir_(dir), targets_(targets), port_(free_port()) {
  if (!fs::exists(kPrometheus))
    throw std::runtime_error(std::string(kPrometheus) +
                             " missing: packaging/install-deps installs Debian's prometheus");
  fs::create_directories(dir);
  YAML::Node alerts = YAML::LoadFile((kPrometheusDir / "dedupd-alerts.yml").string());
  for (auto group : alerts["groups"])
    for (auto rule : group["rules"])
      if (rule["for"]) rule["for"] = std::to_string(kFor.count()) + "s";
  YAML::Emitter copy;
  copy << alerts;
  std::ofstream(dir / "dedupd-alerts.yml") << copy.c_str() << "\n";
  fs::copy_file(kPrometheusDir / "dedupd-recording.yml", dir / "dedupd-recording.yml");
  std::ofstream config(dir / "prometheus.yml");
  const auto interval = std::to_string(kScrapeInterval.count()) + "s";
  config << "global:\n  scrape_interval: " << interval << "\n  scrape_timeout: " << interval
         << "\n  evaluation_interval: " << interval
         << "\nrule_files:\n  - dedupd-alerts.yml\n  - dedupd-recording.yml\n"
            "scrape_configs:\n  - job_name: dedupd\n    static_configs:\n      - targets:\n";
  for (const auto& t : targets) config << "          - \"" << t << "\"\n";
  config.close();
  LaunchOptions o;
  o.program = kPrometheus;
  o.args = {"--config.file=" + (dir / "prometheus.yml").string(), "--storage.tsdb.path=" + (dir / "data").string(),
            "--web.listen-address=127.0.0.1:" + std::to_string(port_), "--log.level=warn"};
  o.log_file = dir / "prometheus.log";
  o.work_dir = dir;
  process_.start(o);
}

std::string Prometheus::base() const { return "http://127.0.0.1:" + std::to_string(port_); }
std::string Prometheus::log() const { return tests::file_text(dir_ / "prometheus.log"); }

json Prometheus::api(const std::string& path_and_query) {
  auto [status, body] = http_get(base() + path_and_query);
  json doc = json::parse(body, nullptr, false);
  if (status != 200 || doc.is_discarded() || doc.value("status", "") != "success")
    throw std::runtime_error("Prometheus could not be asked " + path_and_query + ": HTTP " + std::to_string(status) +
                             " " + body.substr(0, 500));
  return doc["data"];
}

void Prometheus::wait_ready() {
  if (!eventually([&] { return process_.running() && http_get(base() + "/-/ready").first == 200; }, 30s))
    throw std::runtime_error("Prometheus is not ready after 30 s:\n" + log());
  if (!eventually([&] { return !api("/api/v1/rules?type=alert")["groups"].empty(); }, 10s))
    throw std::runtime_error("Prometheus loaded no alerting rules:\n" + log());
  check_rules_are_the_shipped();
}

void Prometheus::check_rules_are_the_shipped() {
  std::map<std::string, json> loaded;
  const json rules = api("/api/v1/rules?type=alert");
  for (const auto& g : rules["groups"])
    for (const auto& r : g["rules"]) loaded[r["name"].get<std::string>()] = r;
  std::string problems;
  std::size_t shipped_count = 0;
  const YAML::Node shipped = YAML::LoadFile((kPrometheusDir / "dedupd-alerts.yml").string());
  for (const auto& group : shipped["groups"])
    for (const auto& rule : group["rules"]) {
      if (!rule["alert"]) continue;
      ++shipped_count;
      const std::string name = rule["alert"].as<std::string>();
      auto it = loaded.find(name);
      if (it == loaded.end()) {
        problems += name + ": not loaded\n";
        continue;
      }
      const json& r = it->second;
      const std::string expr =
          one_line(api("/api/v1/format_query?query=" + url_escaped(rule["expr"].as<std::string>())).get<std::string>());
      const std::string query = one_line(r["query"].get<std::string>());
      if (query != expr) problems += name + ": evaluates " + query + ", ships " + expr + "\n";
      const double for_s = rule["for"] ? double(kFor.count()) : 0.0;
      if (std::abs(r["duration"].get<double>() - for_s) > 1e-9)
        problems += name + ": for " + r["duration"].dump() + " s, not " + std::to_string(for_s) + "\n";
      if (string_map(r["labels"]) != string_map(rule["labels"])) problems += name + ": other labels\n";
      if (string_map(r["annotations"]) != string_map(rule["annotations"])) problems += name + ": other annotations\n";
    }
  if (loaded.size() != shipped_count)
    problems += std::to_string(loaded.size()) + " alerts loaded, " + std::to_string(shipped_count) + " shipped\n";
  if (!problems.empty())
    throw std::runtime_error("the rules Prometheus evaluates are not the shipped ones:\n" + problems);
}

json Prometheus::query(const std::string& expr) { return api("/api/v1/query?query=" + url_escaped(expr))["result"]; }

json Prometheus::alerts() { return api("/api/v1/alerts")["alerts"]; }

std::string Prometheus::alert_state(const std::string& name, const std::string& instance) {
  for (const auto& a : alerts())
    if (a["labels"]["alertname"] == name && a["labels"]["instance"] == instance) return a["state"];
  return "";
}

bool Prometheus::fires(const std::string& name, const std::string& instance, std::chrono::seconds timeout) {
  return eventually([&] { return alert_state(name, instance) == "firing"; }, timeout);
}

bool Prometheus::resolves(const std::string& name, const std::string& instance, std::chrono::seconds timeout) {
  return eventually([&] { return alert_state(name, instance).empty(); }, timeout);
}

void Prometheus::wait_evaluated() {
  const double asked = unix_now();
  double scraped = asked;
  for (const auto& t : targets_) {
    const std::string q = "timestamp(up{job=\"dedupd\",instance=\"" + t + "\"})";
    double at = 0;
    auto after = [&] {
      json r = query(q);
      at = r.empty() ? 0 : std::stod(r[0]["value"][1].get<std::string>());
      return at > asked;
    };
    if (!eventually(after, 30s)) throw std::runtime_error("Prometheus has not scraped " + t + " for 30 s");
    scraped = std::max(scraped, at);
  }
  // An evaluation a scrape interval later: the samples of that scrape are
  // in by then.
  auto evaluated = [&] {
    const json rules = api("/api/v1/rules");
    for (const auto& g : rules["groups"])
      if (rfc3339(g["lastEvaluation"].get<std::string>()) < scraped + double(kScrapeInterval.count())) return false;
    return true;
  };
  if (!eventually(evaluated, 30s)) throw std::runtime_error("Prometheus has not evaluated its rules for 30 s");
}

}  // namespace dedupd::itest
