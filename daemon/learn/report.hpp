// What the local Xet endpoint's nginx reports of a shard upload: nginx's
// request id for it and the status the CAS gave (pending.hpp holds the body
// under that id, confirm_socket.hpp receives the report). Pure parsing: the
// fuzz target takes this file alone.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace dedupd::daemon::learn {

// nginx's $request_id: 32 lower-case hex digits.
bool is_request_id(std::string_view id);

struct Confirmation {
  std::string request_id;
  unsigned status = 0;
};

// The message of a syslog datagram as nginx sends it ("<pri>timestamp
// tag: message", no host name), or the datagram itself when bare; without
// the spaces and line ends around it; "" for a framing without a message.
std::string_view syslog_message(std::string_view datagram);

// "<pri>timestamp tag: <id> <status>" (nginx's syslog line without host
// name), or the bare "<id> <status>"; nullopt for anything else.
std::optional<Confirmation> parse_confirmation(std::string_view datagram);

}  // namespace dedupd::daemon::learn
