// Exit codes of dedupctl. They follow sysexits(3) so that scripts can tell
// "the answer is no" (1) from "I could not ask" (69) and "you may not ask"
// (77) without parsing messages.
#pragma once

#include <stdexcept>
#include <string>

namespace dedupctl {

enum Exit : int {
  kOk = 0,            // found / done
  kNotFound = 1,      // the daemon answered: no such thing (query: any hash missing)
  kUsage = 64,        // EX_USAGE: bad command line
  kBadInput = 65,     // EX_DATAERR: malformed hash, unreadable or invalid file
  kUnavailable = 69,  // EX_UNAVAILABLE: no daemon on the socket, not ready
  kProtocol = 76,     // EX_PROTOCOL: the daemon's answer makes no sense
  kPermission = 77,   // EX_NOPERM: socket or admin route refused
};

// Thrown by any verb; main prints "dedupctl: <what>" and exits with code.
// A hint, when present, goes on a second line (how to fix it).
class CliError : public std::runtime_error {
 public:
  CliError(int code, const std::string& what, std::string hint = {})
      : std::runtime_error(what), code_(code), hint_(std::move(hint)) {}
  int code() const { return code_; }
  const std::string& hint() const { return hint_; }

 private:
  int code_;
  std::string hint_;
};

}  // namespace dedupctl
