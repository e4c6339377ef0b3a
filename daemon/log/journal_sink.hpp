// dedupd's log lines into the journal when systemd started it: one
// datagram an entry to journald's socket (journal_entry.hpp), with its
// priority, so `journalctl -p err` finds the errors and a message of
// several lines stays one entry. An entry journald cannot take (too big, no
// journald) goes to stderr with a "<N>" priority prefix instead, which the
// journal reads from a unit's stderr.
#pragma once

#include <spdlog/sinks/base_sink.h>

#include <mutex>
#include <string>

namespace dedupd::daemon::log {

inline constexpr const char* kJournalSocket = "/run/systemd/journal/socket";

class JournalSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit JournalSink(std::string identifier, std::string socket_path = kJournalSocket);
  ~JournalSink() override;
  JournalSink(const JournalSink&) = delete;
  JournalSink& operator=(const JournalSink&) = delete;

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override;
  void flush_() override {}

 private:
  std::string identifier_;
  std::string socket_path_;
  int fd_ = -1;
};

// The syslog priority of an spdlog level (trace and debug are both debug).
int syslog_priority(spdlog::level::level_enum level);

}  // namespace dedupd::daemon::log
