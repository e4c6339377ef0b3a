// A Prometheus of a test's own (Debian's), on loopback, its data in a
// scratch dir, scraping the given targets as job "dedupd" every second with
// the rules packaging/prometheus ships.
//
// The `for:` of each alert is cut to seconds, so a test takes seconds, not
// minutes, and nothing else: the copy is the shipped YAML read and written
// again with only the `for:` values changed (as promtool would read it), and
// once Prometheus has loaded it, every alert it evaluates is compared with
// the shipped file: the same names, labels and annotations, each `for:` the
// short one where the shipped rule has one, and the same expression (the
// shipped text as Prometheus's own /api/v1/format_query parses and prints
// it, equal to the query it evaluates, white space aside).
//
// Every question to it either gets its answer or throws: a test cannot pass
// because Prometheus could not be asked.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "harness/daemon_process.hpp"

namespace dedupd::itest {

// A loopback port nobody listens on now.
std::uint16_t free_port();
// GET over TCP: status (0: no answer) and body.
std::pair<long, std::string> http_get(const std::string& url);

class Prometheus {
 public:
  static constexpr std::chrono::seconds kScrapeInterval{1};  // also the rules' evaluation interval
  static constexpr std::chrono::seconds kFor{3};             // every `for:` of the shipped rules, shortened

  Prometheus(const std::filesystem::path& dir, const std::vector<std::string>& targets);

  // Waits until it answers and has loaded the rules, then checks they are
  // the shipped ones (throws if not, or if it never answers).
  void wait_ready();
  std::string log() const;

  // The result list of an instant query.
  nlohmann::json query(const std::string& expr);
  // The alerts pending or firing, as /api/v1/alerts lists them.
  nlohmann::json alerts();
  // The state of `name` for `instance`: "firing", "pending" or "" (neither).
  std::string alert_state(const std::string& name, const std::string& instance);
  // Waits until `name` fires for `instance` (or is neither pending nor
  // firing); false when it has not within `timeout`.
  bool fires(const std::string& name, const std::string& instance,
             std::chrono::seconds timeout = std::chrono::seconds(60));
  bool resolves(const std::string& name, const std::string& instance,
                std::chrono::seconds timeout = std::chrono::seconds(60));
  // Returns once the rules have been evaluated on a scrape of every target
  // made after this call: from then on an alert whose expression holds is
  // pending or firing, and one that is neither has an expression that does
  // not hold.
  void wait_evaluated();

 private:
  std::string base() const;
  nlohmann::json api(const std::string& path_and_query);
  void check_rules_are_the_shipped();

  std::filesystem::path dir_;
  std::vector<std::string> targets_;
  std::uint16_t port_;
  DaemonProcess process_;
};

}  // namespace dedupd::itest
