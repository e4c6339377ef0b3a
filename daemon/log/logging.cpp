#include "daemon/log/logging.hpp"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>

#include "daemon/log/journal_sink.hpp"

namespace dedupd::daemon::log {

bool started_by_systemd() {
  return std::getenv("JOURNAL_STREAM") != nullptr || std::getenv("INVOCATION_ID") != nullptr;
}

void setup_logging(const std::string& level) {
  std::shared_ptr<spdlog::logger> logger;
  if (started_by_systemd()) {
    // The journal stamps time, pid and unit itself; keep the message bare.
    auto sink = std::make_shared<JournalSink>("dedupd");
    logger = std::make_shared<spdlog::logger>("dedupd", std::move(sink));
  } else {
    auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    logger = std::make_shared<spdlog::logger>("dedupd", std::move(sink));
    logger->set_pattern("%Y-%m-%d %H:%M:%S.%e dedupd[%P] %l: %v");
  }
  // Warnings and errors must reach the journal/terminal even if we crash
  // right after; info lines are flushed by the sink on each write anyway.
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(std::move(logger));
  set_log_level(level);
}

bool set_log_level(const std::string& level) {
  auto l = spdlog::level::from_str(level);
  // from_str maps unknown names to "off"; only accept "off" when asked for.
  if (l == spdlog::level::off && level != "off") return false;
  spdlog::set_level(l);
  return true;
}

}  // namespace dedupd::daemon::log
