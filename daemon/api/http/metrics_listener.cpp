#include "daemon/api/http/metrics_listener.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <exception>
#include <optional>

#include "daemon/api/http/connection_sweeper.hpp"
#include "daemon/api/http/connections.hpp"
#include "daemon/api/http/http.hpp"
#include "daemon/api/http/mhd_connections.hpp"

namespace dedupd::daemon::api::http {

namespace {

using Clock = std::chrono::steady_clock;

// The metrics page is tens of KiB; a managed cache adds a few series. A
// socket answering more than this is not answering /metrics.
constexpr std::size_t kMaxPassedBody = 16 << 20;
// Request headers and MHD's read buffer: a scraper sends a few hundred bytes.
constexpr std::size_t kConnectionMemory = 16 << 10;

base::Error listen_failure(std::string message) { return base::Error{"metrics.listen", 0, std::move(message), false}; }
base::Error upstream_failure(std::string message) {
  return base::Error{"metrics.upstream", 0, std::move(message), false};
}

void listener_mhd_log(void*, const char* fmt, va_list ap) {
  char buf[512];
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  std::string_view text(buf);
  while (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  spdlog::debug("metrics: http: {}", text);
}

void free_listener_body(void* cls) { delete static_cast<std::string*>(cls); }

ConnectionTable::Entry* listener_connection(MHD_Connection* conn) {
  const MHD_ConnectionInfo* info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return info ? static_cast<ConnectionTable::Entry*>(info->socket_context) : nullptr;
}

std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// A header's value in a response head ("" when absent); names compare
// without case.
std::string header_value(std::string_view head, std::string_view name) {
  const std::string lowered = ascii_lower(head), key = "\r\n" + ascii_lower(name) + ":";
  auto at = lowered.find(key);
  if (at == std::string::npos) return "";
  auto start = at + key.size();
  auto end = head.find("\r\n", start);
  std::string_view v = head.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return std::string(v);
}

// A chunked body decoded; nullopt when it is not well formed or cut short.
std::optional<std::string> dechunk(std::string_view in) {
  std::string out;
  for (;;) {
    auto eol = in.find("\r\n");
    if (eol == std::string_view::npos) return std::nullopt;
    std::string_view size_text = in.substr(0, eol);
    if (auto semi = size_text.find(';'); semi != std::string_view::npos) size_text = size_text.substr(0, semi);
    std::size_t size = 0;
    auto [p, ec] = std::from_chars(size_text.data(), size_text.data() + size_text.size(), size, 16);
    if (ec != std::errc() || p == size_text.data()) return std::nullopt;
    in.remove_prefix(eol + 2);
    if (size == 0) return out;
    if (in.size() < size + 2) return std::nullopt;
    out.append(in.substr(0, size));
    in.remove_prefix(size + 2);
  }
}

struct PerRequest {
  std::optional<Response> early;  // decided from the headers alone
};

}  // namespace

base::Result<UnixAnswer> get_over_unix(const std::string& socket_path, std::string_view path,
                                       std::chrono::milliseconds timeout, std::size_t max_body, int cancel_fd) {
  const auto deadline = Clock::now() + timeout;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.empty() || socket_path.size() >= sizeof addr.sun_path)
    return upstream_failure(fmt::format("no usable socket path '{}'", socket_path));
  std::memcpy(addr.sun_path, socket_path.data(), socket_path.size());
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return upstream_failure(fmt::format("socket(): {}", std::strerror(errno)));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  auto failed = [&](std::string_view what) {
    return upstream_failure(fmt::format("{} {}: {}", what, socket_path, std::strerror(errno)));
  };
  // A Unix connect completes at once or fails (EAGAIN: its backlog is full).
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return failed("cannot connect to");

  // Waits until fd is ready for `events`: nullopt then, else why it is not
  // (the deadline passed, or the listener is stopping).
  auto wait = [&](short events) -> std::optional<std::string> {
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0)
        return fmt::format("{} did not answer {} within {} ms", socket_path, path, timeout.count());
      pollfd p[2] = {{fd, events, 0}, {cancel_fd, POLLIN, 0}};
      int n = ::poll(p, cancel_fd >= 0 ? 2 : 1, int(left.count()));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return fmt::format("poll(): {}", std::strerror(errno));
      if (cancel_fd >= 0 && (p[1].revents & POLLIN)) return std::string("stopping");
      if (n > 0) return std::nullopt;
    }
  };

  const std::string request = fmt::format(
      "GET {} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nUser-Agent: dedupd-metrics\r\n\r\n", path);
  for (std::size_t sent = 0; sent < request.size();) {
    if (auto why = wait(POLLOUT)) return upstream_failure(*why);
    ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n < 0) return failed("cannot send to");
    sent += std::size_t(n);
  }

  std::string text;
  std::size_t head_end = std::string::npos;
  std::optional<std::size_t> length;
  char buf[16 << 10];
  for (;;) {
    if (head_end != std::string::npos && length && text.size() >= head_end + 4 + *length) break;
    if (auto why = wait(POLLIN)) return upstream_failure(*why);
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n < 0) return failed("cannot read from");
    if (n == 0) break;
    text.append(buf, std::size_t(n));
    if (text.size() > max_body + (16 << 10))
      return upstream_failure(fmt::format("{} answered {} with over {} bytes", socket_path, path, max_body));
    if (head_end == std::string::npos && (head_end = text.find("\r\n\r\n")) != std::string::npos) {
      std::string cl = header_value(std::string_view(text).substr(0, head_end + 2), "Content-Length");
      std::size_t v = 0;
      if (!cl.empty() && std::from_chars(cl.data(), cl.data() + cl.size(), v).ec == std::errc()) length = v;
    }
  }
  if (head_end == std::string::npos || text.compare(0, 9, "HTTP/1.1 ") != 0 || text.size() < 12)
    return upstream_failure(fmt::format("{} gave no HTTP answer to {}", socket_path, path));
  const std::string_view head = std::string_view(text).substr(0, head_end + 2);
  UnixAnswer a;
  auto code = std::from_chars(text.data() + 9, text.data() + 12, a.status);
  if (code.ec != std::errc() || a.status < 100 || a.status > 599)
    return upstream_failure(fmt::format("{} gave no HTTP status for {}", socket_path, path));
  a.content_type = header_value(head, "Content-Type");
  std::string_view body = std::string_view(text).substr(head_end + 4);
  if (length) {
    if (body.size() < *length) return upstream_failure(fmt::format("{} cut its answer to {} short", socket_path, path));
    a.body = std::string(body.substr(0, *length));
  } else if (ascii_lower(header_value(head, "Transfer-Encoding")) == "chunked") {
    auto whole = dechunk(body);
    if (!whole) return upstream_failure(fmt::format("{} cut its answer to {} short", socket_path, path));
    a.body = std::move(*whole);
  } else {
    a.body = std::string(body);
  }
  if (a.body.size() > max_body)
    return upstream_failure(fmt::format("{} answered {} with over {} bytes", socket_path, path, max_body));
  return a;
}

struct MetricsListener::Impl {
  explicit Impl(MetricsListenerOptions o) : options(std::move(o)) {}

  base::Result<Started> start();
  void stop();

  static enum MHD_Result on_request(void* cls, MHD_Connection* conn, const char* url, const char* method,
                                    const char* version, const char* upload_data, size_t* upload_data_size,
                                    void** con_cls);
  static void on_completed(void* cls, MHD_Connection* conn, void** con_cls, enum MHD_RequestTerminationCode code);
  static void on_connection(void* cls, MHD_Connection* conn, void** socket_context,
                            enum MHD_ConnectionNotificationCode code);
  Response answer(std::string_view path);
  static enum MHD_Result respond(MHD_Connection* conn, Response&& r);

  MetricsListenerOptions options;
  ConnectionTable connections;
  std::unique_ptr<ConnectionSweeper> sweeper;
  MHD_Daemon* mhd = nullptr;
  int listen_fd = -1;
  int stop_fd = -1;  // eventfd: readable once stopping, ends waits on the socket
  std::uint16_t bound_port = 0;
  // Logged once when the socket stops answering, once when it is back.
  std::atomic<bool> upstream_failing{false};
};

base::Result<MetricsListener::Started> MetricsListener::Impl::start() {
  if (mhd) return Started{};
  sockaddr_storage ss{};
  socklen_t len = 0;
  const bool v6 = options.host.find(':') != std::string::npos;
  if (v6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(options.port);
    if (inet_pton(AF_INET6, options.host.c_str(), &a->sin6_addr) != 1)
      return listen_failure(fmt::format("'{}' is not an IPv6 address", options.host));
    len = sizeof *a;
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    a->sin_port = htons(options.port);
    if (inet_pton(AF_INET, options.host.c_str(), &a->sin_addr) != 1)
      return listen_failure(fmt::format("'{}' is not an IPv4 address", options.host));
    len = sizeof *a;
  }
  const std::string where =
      v6 ? fmt::format("[{}]:{}", options.host, options.port) : fmt::format("{}:{}", options.host, options.port);
  int fd = ::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    // dedupd.service allows Unix sockets only until a drop-in lifts it.
    std::string hint = errno == EAFNOSUPPORT || errno == EPERM || errno == EACCES
                           ? " (a sandbox forbids IP sockets? dedupd.service needs the drop-in of "
                             "docs/OPERATIONS.md, \"Monitoring\")"
                           : "";
    return listen_failure(fmt::format("cannot make a TCP socket for {}: {}{}", where, std::strerror(errno), hint));
  }
  // A restart must not wait out the last run's connections in TIME_WAIT.
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 || ::listen(fd, SOMAXCONN) != 0) {
    auto e = listen_failure(fmt::format("cannot listen on {}: {}", where, std::strerror(errno)));
    ::close(fd);
    return e;
  }
  sockaddr_storage bound{};
  socklen_t bound_len = sizeof bound;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &bound_len) == 0)
    bound_port = ntohs(v6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                          : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  stop_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_fd < 0) {
    auto e = listen_failure(fmt::format("eventfd(): {}", std::strerror(errno)));
    ::close(fd);
    return e;
  }
  listen_fd = fd;
  unsigned limit = std::max(1u, options.max_connections);
  unsigned threads = std::max(1u, options.threads);
  unsigned idle = unsigned(std::max<std::int64_t>(
      1, std::chrono::duration_cast<std::chrono::seconds>(options.timeout + std::chrono::milliseconds(999)).count()));
  mhd = MHD_start_daemon(MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG, 0, nullptr, nullptr, &Impl::on_request,
                         this, MHD_OPTION_LISTEN_SOCKET, MHD_socket(listen_fd), MHD_OPTION_THREAD_POOL_SIZE, threads,
                         MHD_OPTION_CONNECTION_LIMIT, limit, MHD_OPTION_CONNECTION_TIMEOUT, idle,
                         MHD_OPTION_CONNECTION_MEMORY_LIMIT, kConnectionMemory, MHD_OPTION_NOTIFY_COMPLETED,
                         &Impl::on_completed, this, MHD_OPTION_NOTIFY_CONNECTION, &Impl::on_connection, this,
                         MHD_OPTION_EXTERNAL_LOGGER, &listener_mhd_log, nullptr, MHD_OPTION_END);
  if (!mhd) {
    ::close(listen_fd);
    ::close(stop_fd);
    listen_fd = stop_fd = -1;
    return listen_failure("libmicrohttpd refused to start on " + where);
  }
  sweeper = std::make_unique<ConnectionSweeper>(connections, listen_fd, limit, options.header_timeout);
  return Started{};
}

void MetricsListener::Impl::stop() {
  if (!mhd) return;
  sweeper.reset();
  // Requests waiting for the socket give up now rather than at their
  // timeout: MHD_stop_daemon joins the threads they run on.
  std::uint64_t one = 1;
  [[maybe_unused]] auto w = ::write(stop_fd, &one, sizeof one);
  MHD_stop_daemon(mhd);
  mhd = nullptr;
  // MHD does not close a listen socket it was handed.
  ::close(listen_fd);
  ::close(stop_fd);
  listen_fd = stop_fd = -1;
}

Response MetricsListener::Impl::answer(std::string_view path) {
  auto got = get_over_unix(options.socket_path, path, options.timeout, kMaxPassedBody, stop_fd);
  if (!got) {
    if (!upstream_failing.exchange(true))
      spdlog::warn("metrics: the API socket does not answer (scrapes get 503 until it does): {}", got.error().message);
    return error(kNotReady, "not_ready", "dedupd's API socket did not answer: " + got.error().message);
  }
  if (upstream_failing.exchange(false)) spdlog::info("metrics: the API socket answers again");
  Response r;
  r.status = got->status;
  r.content_type = got->content_type.empty() ? std::string(kOctets) : std::move(got->content_type);
  r.body = std::move(got->body);
  return r;
}

enum MHD_Result MetricsListener::Impl::respond(MHD_Connection* conn, Response&& r) {
  auto* body = new std::string(std::move(r.body));
  MHD_Response* resp =
      MHD_create_response_from_buffer_with_free_callback_cls(body->size(), body->data(), &free_listener_body, body);
  if (!resp) {
    delete body;
    return MHD_NO;
  }
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r.content_type.c_str());
  for (const auto& [k, v] : r.headers) MHD_add_response_header(resp, k.c_str(), v.c_str());
  // One request a connection: a scraper comes back every few seconds at
  // most, so keeping its connection saves little, and at the connection
  // limit busy kept-alive clients would keep newcomers waiting in the
  // backlog for as long as they go on; closed, the connections turn over
  // and the backlog is served in order.
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
  enum MHD_Result ok = MHD_queue_response(conn, r.status, resp);
  MHD_destroy_response(resp);
  return ok;
}

enum MHD_Result MetricsListener::Impl::on_request(void* cls, MHD_Connection* conn, const char* url, const char* method,
                                                  const char*, const char*, size_t* upload_data_size, void** con_cls) {
  auto* self = static_cast<Impl*>(cls);
  auto* st = static_cast<PerRequest*>(*con_cls);
  try {
    if (!st) {
      st = new PerRequest;
      *con_cls = st;
      self->connections.request_started(listener_connection(conn));
      const std::string_view path(url), verb(method);
      const bool known =
          std::find(self->options.paths.begin(), self->options.paths.end(), path) != self->options.paths.end();
      const char* length = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
      const bool has_body = (length && std::string_view(length) != "0") ||
                            MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
      if (!known) {
        st->early = error(kNotFound, fmt::format("no route {} here: this listener serves only the metrics", path));
      } else if (verb != "GET" && verb != "HEAD") {
        st->early = error(kMethodNotAllowed, fmt::format("{} takes GET or HEAD, not {}", path, verb));
        st->early->headers.emplace_back("Allow", "GET, HEAD");
      } else if (has_body) {
        st->early = error(kBadRequest, fmt::format("{} {} takes no request body", verb, path));
      }
      // A refusal with a body still coming is answered now, so the body is
      // never read (MHD then closes the connection); anything else once the
      // request is complete, which keeps the connection open for the next.
      if (st->early && has_body) return respond(conn, std::move(*st->early));
      return MHD_YES;
    }
    if (*upload_data_size > 0) {  // not expected: answered above
      *upload_data_size = 0;
      return MHD_YES;
    }
    if (st->early) return respond(conn, std::move(*st->early));
    return respond(conn, self->answer(url));
  } catch (const std::exception& e) {
    spdlog::error("metrics: {} {}: {}", method, url, e.what());
  }
  return MHD_NO;
}

void MetricsListener::Impl::on_completed(void* cls, MHD_Connection* conn, void** con_cls,
                                         enum MHD_RequestTerminationCode) {
  auto* self = static_cast<Impl*>(cls);
  delete static_cast<PerRequest*>(*con_cls);
  *con_cls = nullptr;
  self->connections.request_ended(listener_connection(conn), Clock::now());
}

void MetricsListener::Impl::on_connection(void* cls, MHD_Connection* conn, void** socket_context,
                                          enum MHD_ConnectionNotificationCode code) {
  track_connection(static_cast<Impl*>(cls)->connections, conn, socket_context, code, Clock::now());
}

MetricsListener::MetricsListener(MetricsListenerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

MetricsListener::~MetricsListener() { stop(); }

base::Result<MetricsListener::Started> MetricsListener::start() {
  auto started = impl_->start();
  if (started)
    spdlog::info("metrics: listening on {} (GET {}; at most {} connections)", address(),
                 fmt::join(impl_->options.paths, ", "), impl_->options.max_connections);
  return started;
}

void MetricsListener::stop() { impl_->stop(); }

std::uint16_t MetricsListener::port() const { return impl_->bound_port; }

std::string MetricsListener::address() const {
  const auto& h = impl_->options.host;
  return h.find(':') != std::string::npos ? fmt::format("[{}]:{}", h, port()) : fmt::format("{}:{}", h, port());
}

}  // namespace dedupd::daemon::api::http
