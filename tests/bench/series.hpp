// `--series`: how a bench's costs grow with the index (issue 32). The bench
// runs itself once per size as a child process, so each size gets a fresh
// scratch directory, daemon and database server and inherits no page cache
// or state from a smaller one; the children's JSON documents are gathered
// into one, written again after each size so that a series stopped part way
// (its largest size runs for an hour) keeps the sizes it finished. A metric
// is {value, baseline, unit}, the baseline measured at the same size in the
// same child; tests/bench/plot_series.py draws them.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dedupd::bench {

// "1M,3M,10M,30M" (k and M multiply by 10^3 and 10^6); empty on a bad list.
inline std::vector<std::uint64_t> parse_sizes(const std::string& list) {
  std::vector<std::uint64_t> out;
  std::size_t at = 0;
  while (at <= list.size()) {
    std::size_t end = list.find(',', at);
    if (end == std::string::npos) end = list.size();
    std::string item = list.substr(at, end - at);
    char* rest = nullptr;
    double v = std::strtod(item.c_str(), &rest);
    std::string unit = rest ? rest : "";
    if (unit == "k" || unit == "K") v *= 1e3;
    else if (unit == "M" || unit == "m") v *= 1e6;
    else if (!unit.empty()) return {};
    if (item.empty() || v < 1) return {};
    out.push_back(std::uint64_t(v));
    at = end + 1;
  }
  return out;
}

inline nlohmann::json metric(const std::string& unit, double value, double baseline = NAN,
                             const std::string& baseline_is = "") {
  nlohmann::json m = {{"unit", unit}, {"value", value}};
  if (!std::isnan(baseline)) m["baseline"] = baseline, m["baseline_is"] = baseline_is;
  return m;
}

inline double load_average() {
  double l = 0;
  std::ifstream("/proc/loadavg") >> l;
  return l;
}

inline std::string utc_now() {
  char date[64];
  std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  return date;
}

// Writes a series' document whole or not at all (a rename), so that a series
// stopped while writing keeps the sizes written before.
inline void write_series(const std::string& path, const nlohmann::json& doc) {
  const std::string part = path + ".part";
  std::ofstream(part) << doc.dump(1) << "\n";
  std::filesystem::rename(part, path);
}

// Runs this program with `args` + `size_flag SIZE --json FILE` once per size
// and writes to `path` the document of the series: each child's document as
// `point_of` makes it a point, rewritten as soon as a child ends, and
// "finished" once every size ran. `list` and `args` are the command line,
// `args` without --series and --json. A child that fails (a wrong answer)
// gives the point {"entries": SIZE, "failed": exit status} and the larger
// sizes still run: one size's failure is a finding, not a reason to lose
// the others. Returns whether one failed.
inline bool run_series(const char* bench, const std::string& list, const std::vector<std::string>& args,
                       const std::string& size_flag, const std::vector<std::uint64_t>& sizes, const std::string& path,
                       const std::function<nlohmann::json(nlohmann::json)>& point_of) {
  std::string command = std::string(bench) + " --series " + list;
  for (const auto& a : args) command += " " + a;
  nlohmann::json doc = {
      {"bench", bench}, {"command", command}, {"started", utc_now()}, {"points", nlohmann::json::array()}};
  bool failed = false;
  for (std::uint64_t size : sizes) {
    std::string json_file =
        (std::filesystem::temp_directory_path() /
         (std::string(bench) + "-series-" + std::to_string(::getpid()) + "-" + std::to_string(size) + ".json"))
            .string();
    std::vector<std::string> child = args;
    child.insert(child.end(), {size_flag, std::to_string(size), "--json", json_file});
    std::fprintf(stderr, "%s --series: %llu entries (load %.2f)\n", bench, (unsigned long long)size, load_average());
    std::fflush(stdout);
    std::fflush(stderr);
    pid_t pid = ::fork();
    if (pid < 0) std::exit(1);
    if (pid == 0) {
      std::vector<char*> argv{const_cast<char*>(bench)};
      for (auto& a : child) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv("/proc/self/exe", argv.data());
      ::_exit(127);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::fprintf(stderr, "%s --series: the run at %llu entries failed\n", bench, (unsigned long long)size);
      failed = true;
      doc["points"].push_back({{"entries", size}, {"failed", WIFEXITED(status) ? WEXITSTATUS(status) : -1}});
    } else {
      std::ifstream f(json_file);
      doc["points"].push_back(point_of(nlohmann::json::parse(f)));
    }
    std::filesystem::remove(json_file);
    write_series(path, doc);
  }
  doc["finished"] = utc_now();
  write_series(path, doc);
  return failed;
}

}  // namespace dedupd::bench
