#include "fake_daemon.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cctype>
#include <cstring>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace dedupctl::testing {

namespace {

const char* reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 413:
      return "Payload Too Large";
    case 422:
      return "Unprocessable Entity";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "Whatever";
  }
}

// Waits for the fd to be readable, waking every 20 ms to check `stop`.
bool wait_readable(int fd, const std::atomic<bool>& stop) {
  while (!stop) {
    pollfd p{fd, POLLIN, 0};
    int n = ::poll(&p, 1, 20);
    if (n > 0) return true;
  }
  return false;
}

}  // namespace

Reply http(int status, const std::string& body, const std::string& content_type) {
  Reply r;
  r.raw = "HTTP/1.1 " + std::to_string(status) + " " + reason(status) + "\r\nContent-Type: " + content_type +
          "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  return r;
}

Reply http_error(int status, const std::string& code, const std::string& message) {
  nlohmann::json doc = {{"error", {{"code", code}, {"message", message}}}};
  return http(status, doc.dump());
}

FakeDaemon::FakeDaemon(Handler handler) : socket_(dir_ / "dedupd.sock"), handler_(std::move(handler)) {
  listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket_.c_str(), sizeof addr.sun_path - 1);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listen_fd_, 16) != 0)
    throw std::runtime_error("fake daemon: cannot listen on " + socket_ + ": " + std::strerror(errno));
  thread_ = std::thread([this] { serve(); });
}

FakeDaemon::~FakeDaemon() {
  stop_ = true;
  thread_.join();
  ::close(listen_fd_);
}

std::vector<Request> FakeDaemon::requests() const {
  std::lock_guard lock(mu_);
  return requests_;
}

void FakeDaemon::serve() {
  while (wait_readable(listen_fd_, stop_)) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    serve_connection(fd, ++connections_);
    ::close(fd);
  }
}

void FakeDaemon::serve_connection(int fd, int id) {
  std::string buf;
  char chunk[65536];
  for (;;) {
    // Read one request: headers, then Content-Length bytes of body.
    std::size_t header_end;
    while ((header_end = buf.find("\r\n\r\n")) == std::string::npos) {
      if (!wait_readable(fd, stop_)) return;
      ssize_t n = ::read(fd, chunk, sizeof chunk);
      if (n <= 0) return;
      buf.append(chunk, std::size_t(n));
    }
    Request req;
    req.connection = id;
    std::string head = buf.substr(0, header_end);
    std::size_t line_end = head.find("\r\n");
    std::string first = head.substr(0, line_end);
    auto sp1 = first.find(' '), sp2 = first.rfind(' ');
    req.method = first.substr(0, sp1);
    req.target = first.substr(sp1 + 1, sp2 - sp1 - 1);
    std::size_t pos = line_end == std::string::npos ? head.size() : line_end + 2;
    while (pos < head.size()) {
      std::size_t e = head.find("\r\n", pos);
      if (e == std::string::npos) e = head.size();
      std::string line = head.substr(pos, e - pos);
      auto colon = line.find(':');
      if (colon != std::string::npos) {
        std::string name = line.substr(0, colon);
        for (auto& c : name) c = char(std::tolower(static_cast<unsigned char>(c)));
        std::string value = line.substr(colon + 1);
        while (!value.empty() && value.front() == ' ') value.erase(0, 1);
        req.headers[name] = value;
      }
      pos = e + 2;
    }
    std::size_t length = 0;
    if (auto it = req.headers.find("content-length"); it != req.headers.end()) length = std::stoul(it->second);
    buf.erase(0, header_end + 4);
    if (auto it = req.headers.find("expect"); it != req.headers.end() && it->second == "100-continue") {
      Reply early = on_expect_ ? on_expect_(req) : Reply{};
      if (!early.raw.empty()) {
        std::lock_guard lock(mu_);
        requests_.push_back(req);
        ::send(fd, early.raw.data(), early.raw.size(), MSG_NOSIGNAL);
        return;
      }
      const std::string go = "HTTP/1.1 100 Continue\r\n\r\n";
      ::send(fd, go.data(), go.size(), MSG_NOSIGNAL);
    }
    auto more = [&] {
      if (!wait_readable(fd, stop_)) return false;
      ssize_t n = ::read(fd, chunk, sizeof chunk);
      if (n <= 0) return false;
      buf.append(chunk, std::size_t(n));
      return true;
    };
    if (auto it = req.headers.find("transfer-encoding"); it != req.headers.end() && it->second == "chunked") {
      // Chunks of "<hex size>\r\n<bytes>\r\n" up to a zero size and a blank line.
      for (;;) {
        std::size_t eol;
        while ((eol = buf.find("\r\n")) == std::string::npos)
          if (!more()) return;
        const std::size_t size = std::stoul(buf.substr(0, eol), nullptr, 16);
        while (buf.size() < eol + 2 + size + 2)
          if (!more()) return;
        req.body.append(buf, eol + 2, size);
        buf.erase(0, eol + 2 + size + 2);
        if (size == 0) break;
      }
    } else {
      while (buf.size() < length)
        if (!more()) return;
      req.body = buf.substr(0, length);
      buf.erase(0, length);
    }
    {
      std::lock_guard lock(mu_);
      requests_.push_back(req);
    }

    Reply reply = handler_(req);
    std::size_t off = 0;
    while (off < reply.raw.size()) {
      ssize_t n = ::send(fd, reply.raw.data() + off, reply.raw.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return;
      off += std::size_t(n);
    }
    if (reply.hang) {
      while (!stop_) ::usleep(10000);
      return;
    }
    if (reply.close_after) return;
  }
}

}  // namespace dedupctl::testing
