// The keeper thread's file of key filters (fleet/key_filters_file.hpp):
// read into the pool's set before its first build, so a restart asks the
// fleet database only for the xorbs published since; written when the set
// holds more filters than the file, else at most every kSaveEvery while
// they change, and at stop. A file that cannot be read or written is said
// once and costs only the build it would have spared.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>

#include "fleet/key_filters.hpp"

namespace dedupd::daemon::fleet_link {

class KeptFilters {
 public:
  static constexpr auto kSaveEvery = std::chrono::minutes(10);

  explicit KeptFilters(std::filesystem::path file) : file_(std::move(file)) {}  // empty: nothing kept

  // The first call for a set reads the file into it.
  void load_into(const std::shared_ptr<fleet::KeyFilters>& set);
  // `stopping`: written if anything changed since, whatever the time.
  void save_if_due(bool stopping, std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now());

 private:
  std::filesystem::path file_;
  std::shared_ptr<fleet::KeyFilters> set_;
  fleet::KeyFilters::KeptState written_{};
  std::chrono::steady_clock::time_point written_at_{};
  bool failed_ = false;  // said once
};

}  // namespace dedupd::daemon::fleet_link
