#include "daemon/log/journal_sink.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "daemon/log/journal_entry.hpp"

namespace dedupd::daemon::log {

JournalSink::JournalSink(std::string identifier, std::string socket_path)
    : identifier_(std::move(identifier)),
      socket_path_(std::move(socket_path)),
      fd_(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) {}

JournalSink::~JournalSink() {
  if (fd_ >= 0) ::close(fd_);
}

int syslog_priority(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace:
    case spdlog::level::debug:
      return LOG_DEBUG;
    case spdlog::level::warn:
      return LOG_WARNING;
    case spdlog::level::err:
      return LOG_ERR;
    case spdlog::level::critical:
      return LOG_CRIT;
    default:
      return LOG_INFO;
  }
}

void JournalSink::sink_it_(const spdlog::details::log_msg& msg) {
  const int priority = syslog_priority(msg.level);
  const std::string_view message(msg.payload.data(), msg.payload.size());
  const std::string entry = journal_entry(priority, identifier_, message);
  sockaddr_un to{};
  to.sun_family = AF_UNIX;
  std::strncpy(to.sun_path, socket_path_.c_str(), sizeof to.sun_path - 1);
  ssize_t sent = -1;
  if (fd_ >= 0) {
    do {
      sent = ::sendto(fd_, entry.data(), entry.size(), MSG_NOSIGNAL, reinterpret_cast<const sockaddr*>(&to), sizeof to);
    } while (sent < 0 && errno == EINTR);
  }
  if (sent == ssize_t(entry.size())) return;
  // Nothing is lost: stderr is the journal's stream under systemd.
  const std::string line = "<" + std::to_string(priority) + ">" + std::string(message) + "\n";
  [[maybe_unused]] auto written = ::write(STDERR_FILENO, line.data(), line.size());
}

}  // namespace dedupd::daemon::log
