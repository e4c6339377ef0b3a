// The daemon's client: HTTP/1.1 over its Unix socket with libcurl. One easy
// handle per process, so a batch of requests reuses one kept-alive
// connection. Every failure leaves here as a CliError with the exit code it
// means (69 unreachable, 76 nonsense, 77 refused), never as a hang: connect
// has 5 s, the whole request --timeout.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "cli/exit_codes.hpp"

namespace dedupctl {

using json = nlohmann::ordered_json;

inline constexpr std::string_view kPackagedSocket = "/run/dedupd/dedupd.sock";
inline constexpr std::string_view kLocalSocket = "./local/dedupd.sock";  // `./dev run`
// The package's socket unit, where Debian's systemd looks (usrmerge or not):
// on an installed system the socket is the package's even while it is gone.
inline constexpr std::string_view kPackagedSocketUnits[] = {"/usr/lib/systemd/system/dedupd.socket",
                                                            "/lib/systemd/system/dedupd.socket"};

// --socket, else $DEDUPD_SOCKET, else the packaged path when it exists or
// the package is installed, else the checkout's local path.
std::string resolve_socket(const std::string& option, const std::optional<std::string>& env,
                           const std::function<bool(const std::string&)>& exists);

struct Response {
  long status = 0;
  std::string body;
  std::string content_type;
  std::uint64_t body_bytes = 0;  // post_to_fd: bytes written to the file
  // The answer said "X-Dedupd-Index: rebuilding" (a warning is printed once).
  bool index_rebuilding = false;
};

class Client {
 public:
  Client(std::string socket_path, double timeout_s);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  Response get(std::string_view path);
  // expect_continue: send "Expect: 100-continue" and wait for the daemon's
  // go-ahead, so a body over its limit is refused (413) before it is sent.
  Response post(std::string_view path, std::span<const std::uint8_t> body,
                std::string_view content_type = "application/json", bool expect_continue = false);
  Response post(std::string_view path, std::string_view body, std::string_view content_type = "application/json") {
    return post(path, std::span(reinterpret_cast<const std::uint8_t*>(body.data()), body.size()), content_type);
  }
  Response del(std::string_view path);
  // POST with an empty body whose 200 answer is written to `fd` as it
  // arrives (a large download: an export) instead of kept in memory; any
  // other answer is kept in Response::body as usual. Response::body_bytes
  // counts what went to the file; a failed write is a CliError 65 (a file
  // problem, like an unreadable input) naming the errno.
  Response post_to_fd(std::string_view path, int fd);

  // A POST whose body is produced while it is sent and whose answer is
  // consumed while it arrives, so neither is ever whole in memory (a hash
  // batch of any size). `produce` fills buf[0, max) and returns how many
  // bytes, 0 at the end; `on_line` gets each line of a 200 answer (without
  // its newline) as it arrives; any other answer is kept in Response::body.
  // A CliError thrown by either stops the transfer and leaves here. A 503
  // "busy" is retried only while none of the body has been produced.
  using Producer = std::function<std::size_t(char* buf, std::size_t max)>;
  using LineSink = std::function<void(std::string_view line)>;
  Response post_stream(std::string_view path, std::string_view content_type, std::string_view accept,
                       const Producer& produce, const LineSink& on_line);

  const std::string& socket() const { return socket_; }

 private:
  Response perform(std::string_view method, std::string_view path, std::span<const std::uint8_t> body,
                   std::string_view content_type, bool expect_continue = false);
  Response perform_once(std::string_view method, std::string_view path, std::span<const std::uint8_t> body,
                        std::string_view content_type, bool expect_continue);
  void check_socket_file() const;

  std::string socket_;
  double timeout_s_;
  void* curl_ = nullptr;  // CURL*, kept for connection reuse
  bool checked_ = false;
  int body_fd_ = -1;  // post_to_fd: where a 200 body goes
  // post_stream: the body's producer and the answer's line sink.
  const Producer* produce_ = nullptr;
  const LineSink* on_line_ = nullptr;
  bool body_started_ = false;
  std::string_view accept_ = "application/json";
};

// A 503 "busy" is retried this many times, waiting Retry-After (or 100 ms
// doubling) up to kBusyMaxWaitMs each time: about 15 s in all, then it is an
// error that says "busy".
inline constexpr int kBusyRetries = 10;
inline constexpr long kBusyMaxWaitMs = 2000;
// Whether an answer is a 503 with the error code "busy".
bool is_busy(const Response& r);

// Mappings, separate so that tests can drive each branch.
// How a libcurl failure reads to a person, and its exit code.
CliError transport_error(int curl_code, long os_errno, const std::string& socket, bool got_response_bytes,
                         double timeout_s);
// A connect() errno on the socket (EACCES names the socket's group).
CliError connect_error(long os_errno, const std::string& socket);
// A non-2xx answer: 400/413/422 -> 65, 403 -> 77, 404 -> 1, 503 -> 69 (said
// as "busy" or "not ready yet" after its code), else 76.
CliError status_error(const Response& r, std::string_view what);
// The daemon's {"error": {"message"}} text, or a printable excerpt of the body.
std::string error_message(const Response& r);
// Parses a JSON body; anything else is a protocol error (76).
json parse_body(const Response& r, std::string_view what);

// Field access for daemon answers: a missing field or wrong type is 76.
const json& need(const json& obj, std::string_view key, std::string_view what);
std::uint64_t need_u64(const json& obj, std::string_view key, std::string_view what);
std::string need_str(const json& obj, std::string_view key, std::string_view what);
// A hash field in Xet string form; validated, returned normalised.
std::string need_hash(const json& obj, std::string_view key, std::string_view what);
// Unix seconds or null (never).
std::optional<std::uint64_t> need_time(const json& obj, std::string_view key, std::string_view what);
const json& need_array(const json& obj, std::string_view key, std::string_view what);

}  // namespace dedupctl
