#include "cli/client.hpp"

#include <curl/curl.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <mutex>

#include "shard/hash.hpp"

namespace dedupctl {

namespace {

constexpr long kConnectTimeoutMs = 5000;
constexpr long kStreamBufferBytes = 512 << 10;  // libcurl's largest

// How to bring back the dedupd behind `socket`: the package's units, or a
// checkout's ./dev run.
std::string start_hint(const std::string& socket) {
  if (socket == kPackagedSocket)
    return "start it with `systemctl start dedupd.socket` (`systemctl status dedupd.socket dedupd` says why it "
           "stopped)";
  if (socket == kLocalSocket) return "start it with `./dev run` from the checkout";
  return "start the dedupd that listens there, or point --socket / DEDUPD_SOCKET at another";
}

std::string group_name(gid_t gid) {
  if (const group* g = getgrgid(gid)) return g->gr_name;
  return std::to_string(gid);
}

std::string mode_string(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", unsigned(mode & 07777));
  return buf;
}

// Socket path for messages: absolute, because "./local/dedupd.sock" alone
// does not say which checkout.
std::string shown(const std::string& socket) {
  std::error_code ec;
  auto abs = std::filesystem::absolute(socket, ec);
  return ec ? socket : abs.lexically_normal().string();
}

std::string printable_excerpt(std::string_view body) {
  std::string out;
  for (char c : body.substr(0, 200)) out += (c >= 0x20 && c < 0x7f) ? c : '.';
  if (body.size() > 200) out += "...";
  return out;
}

struct Sink {
  std::string* body;
  bool* got_bytes;
  int fd = -1;  // post_to_fd: a 200 body goes here
  CURL* curl = nullptr;
  std::uint64_t* written = nullptr;
  int write_errno = 0;
  // post_stream
  const Client::Producer* produce = nullptr;
  const Client::LineSink* on_line = nullptr;
  bool* body_started = nullptr;
  std::string partial{};         // a line cut at a read boundary
  std::exception_ptr failure{};  // thrown by produce or on_line
};

// Hands complete lines to the sink; a line cut by the read is kept for the next.
void split_lines(Sink& s, const char* data, std::size_t n) {
  const char* end = data + n;
  while (data < end) {
    const char* nl = static_cast<const char*>(std::memchr(data, '\n', std::size_t(end - data)));
    if (!nl) {
      s.partial.append(data, end);
      return;
    }
    if (s.partial.empty()) {
      (*s.on_line)(std::string_view(data, std::size_t(nl - data)));
    } else {
      s.partial.append(data, nl);
      (*s.on_line)(s.partial);
      s.partial.clear();
    }
    data = nl + 1;
  }
}

size_t on_upload(char* buf, size_t size, size_t n, void* user) {
  auto* s = static_cast<Sink*>(user);
  try {
    std::size_t k = (*s->produce)(buf, size * n);
    if (k) *s->body_started = true;
    return k;
  } catch (...) {
    s->failure = std::current_exception();
    return CURL_READFUNC_ABORT;
  }
}

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* s = static_cast<Sink*>(user);
  long status = 0;
  if (s->fd >= 0 || s->on_line) curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &status);
  if (status == 200 && s->on_line) {
    try {
      split_lines(*s, data, size * n);
    } catch (...) {
      s->failure = std::current_exception();
      return 0;  // curl stops with CURLE_WRITE_ERROR
    }
    return size * n;
  }
  if (status != 200) {
    s->body->append(data, size * n);
    return size * n;
  }
  for (std::size_t done = 0; done < size * n;) {
    const ssize_t w = ::write(s->fd, data + done, size * n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      s->write_errno = w < 0 ? errno : EIO;
      return 0;  // curl stops with CURLE_WRITE_ERROR
    }
    done += std::size_t(w);
    *s->written += std::uint64_t(w);
  }
  return size * n;
}

struct HeaderSeen {
  bool* got_bytes;
  bool* index_rebuilding;
};

// "X-Dedupd-Index: rebuilding": the daemon's index was found damaged and is
// being rebuilt from the shards, so a "not found" may be wrong for now.
size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* seen = static_cast<HeaderSeen*>(user);
  *seen->got_bytes = true;
  std::string_view line(data, size * n);
  constexpr std::string_view kName = "x-dedupd-index:";
  if (line.size() > kName.size() &&
      std::equal(kName.begin(), kName.end(), line.begin(),
                 [](char a, char b) { return a == std::tolower(static_cast<unsigned char>(b)); }) &&
      line.substr(kName.size()).find("rebuilding") != std::string_view::npos)
    *seen->index_rebuilding = true;
  return size * n;
}

}  // namespace

std::string resolve_socket(const std::string& option, const std::optional<std::string>& env,
                           const std::function<bool(const std::string&)>& exists) {
  if (!option.empty()) return option;
  if (env && !env->empty()) return *env;
  if (exists(std::string(kPackagedSocket))) return std::string(kPackagedSocket);
  for (std::string_view unit : kPackagedSocketUnits)
    if (exists(std::string(unit))) return std::string(kPackagedSocket);
  return std::string(kLocalSocket);
}

Client::Client(std::string socket_path, double timeout_s) : socket_(std::move(socket_path)), timeout_s_(timeout_s) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  curl_ = curl_easy_init();
  if (!curl_) throw CliError(kUnavailable, "cannot initialise libcurl");
}

Client::~Client() { curl_easy_cleanup(static_cast<CURL*>(curl_)); }

Response Client::get(std::string_view path) { return perform("GET", path, {}, {}); }
Response Client::post(std::string_view path, std::span<const std::uint8_t> body, std::string_view content_type,
                      bool expect_continue) {
  return perform("POST", path, body, content_type, expect_continue);
}
Response Client::del(std::string_view path) { return perform("DELETE", path, {}, {}); }
Response Client::post_to_fd(std::string_view path, int fd) {
  body_fd_ = fd;
  struct Reset {
    int& fd;
    ~Reset() { fd = -1; }
  } reset{body_fd_};
  return perform("POST", path, {}, "application/json");
}

Response Client::post_stream(std::string_view path, std::string_view content_type, std::string_view accept,
                             const Producer& produce, const LineSink& on_line) {
  produce_ = &produce;
  on_line_ = &on_line;
  accept_ = accept;
  struct Reset {
    Client& c;
    ~Reset() {
      c.produce_ = nullptr;
      c.on_line_ = nullptr;
      c.accept_ = "application/json";
    }
  } reset{*this};
  return perform("POST", path, {}, content_type, true);
}

namespace {
bool error_code_is(const Response& r, std::string_view code) {
  try {
    auto doc = json::parse(r.body);
    return doc.at("error").at("code") == code;
  } catch (const std::exception&) {
    return false;
  }
}
}  // namespace

bool is_busy(const Response& r) { return r.status == 503 && error_code_is(r, "busy"); }

Response Client::perform(std::string_view method, std::string_view path, std::span<const std::uint8_t> body,
                         std::string_view content_type, bool expect_continue) {
  long wait_ms = 100;
  for (int attempt = 0;; ++attempt) {
    body_started_ = false;
    Response r = perform_once(method, path, body, content_type, expect_continue);
    // A streamed body that has begun cannot be sent again.
    if (!is_busy(r) || attempt == kBusyRetries || body_started_) return r;
    CURL* c = static_cast<CURL*>(curl_);
    curl_off_t retry_after = 0;
    long ms = wait_ms;
    if (curl_easy_getinfo(c, CURLINFO_RETRY_AFTER, &retry_after) == CURLE_OK && retry_after > 0)
      ms = long(retry_after) * 1000;
    ::usleep(useconds_t(std::min(ms, kBusyMaxWaitMs) * 1000));
    wait_ms = std::min(wait_ms * 2, kBusyMaxWaitMs);
  }
}

void Client::check_socket_file() const {
  // Checked before libcurl so the message can say what is wrong with the
  // path itself; connect() would only say "failed".
  if (socket_.size() >= sizeof(sockaddr_un::sun_path))
    throw CliError(kBadInput, "socket path is too long for a Unix socket (" + std::to_string(socket_.size()) +
                                  " bytes): " + socket_);
  struct stat st {};
  if (::stat(socket_.c_str(), &st) != 0) {
    const int e = errno;
    if (e == EACCES) {
      // A directory on the way (e.g. /run/dedupd, mode 0750) is closed to us.
      std::string dir = std::filesystem::path(socket_).parent_path().string();
      struct stat ds {};
      std::string detail;
      if (!dir.empty() && ::stat(dir.c_str(), &ds) == 0)
        detail =
            " (directory " + dir + " is group " + group_name(ds.st_gid) + ", mode " + mode_string(ds.st_mode) + ")";
      throw CliError(kPermission, "permission denied reaching " + shown(socket_) + detail,
                     detail.empty() ? ""
                                    : "join group " + group_name(ds.st_gid) + " (usermod -aG " + group_name(ds.st_gid) +
                                          " $USER, then log in again)");
    }
    if (e == ENOENT || e == ENOTDIR)
      throw CliError(kUnavailable, "dedupd is not running: no socket at " + shown(socket_), start_hint(socket_));
    throw CliError(kUnavailable, "cannot reach " + shown(socket_) + ": " + std::strerror(e));
  }
  if (!S_ISSOCK(st.st_mode))
    throw CliError(kUnavailable, shown(socket_) + " is not a socket", "point --socket at dedupd's socket");
}

Response Client::perform_once(std::string_view method, std::string_view path, std::span<const std::uint8_t> body,
                              std::string_view content_type, bool expect_continue) {
  if (!checked_) {
    check_socket_file();
    checked_ = true;
  }
  CURL* c = static_cast<CURL*>(curl_);
  Response r;
  bool got_bytes = false;
  Sink sink{&r.body, &got_bytes, body_fd_, c, &r.body_bytes};
  sink.produce = produce_;
  sink.on_line = on_line_;
  sink.body_started = &body_started_;
  const std::string url = "http://localhost" + std::string(path);

  curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, socket_.c_str());
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  // http_proxy in the environment must not divert a local socket call.
  curl_easy_setopt(c, CURLOPT_PROXY, "");
  curl_easy_setopt(c, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, kConnectTimeoutMs);
  // Large reads and writes for a stream: fewer wake-ups on both sides.
  curl_easy_setopt(c, CURLOPT_BUFFERSIZE, produce_ ? kStreamBufferBytes : long(CURL_MAX_WRITE_SIZE));
  curl_easy_setopt(c, CURLOPT_UPLOAD_BUFFERSIZE, produce_ ? kStreamBufferBytes : 65536L);
  if (produce_) {
    // A stream takes as long as it takes; it only must keep moving.
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 0L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, std::max(1L, long(timeout_s_)));
  } else {
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, long(timeout_s_ * 1000));
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 0L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 0L);
  }
  curl_easy_setopt(c, CURLOPT_USERAGENT, "dedupctl/" DEDUPCTL_VERSION);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &sink);
  HeaderSeen seen{&got_bytes, &r.index_rebuilding};
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &seen);

  const std::string accept_header = "Accept: " + std::string(accept_);
  curl_slist* headers = curl_slist_append(nullptr, accept_header.c_str());
  // Query batches (up to 6.7 MB) go at once; an ingested file asks first,
  // so a body over the daemon's limit is refused before it is sent.
  headers = curl_slist_append(headers, expect_continue ? "Expect: 100-continue" : "Expect:");
  std::string ct_header;
  if (method == "POST") {
    ct_header = "Content-Type: " + std::string(content_type);
    headers = curl_slist_append(headers, ct_header.c_str());
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, nullptr);
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    if (produce_) {
      // Chunked: the body's size is not known until it has been read.
      headers = curl_slist_append(headers, "Transfer-Encoding: chunked");
      curl_easy_setopt(c, CURLOPT_POSTFIELDS, nullptr);
      curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(-1));
      curl_easy_setopt(c, CURLOPT_READFUNCTION, on_upload);
      curl_easy_setopt(c, CURLOPT_READDATA, &sink);
    } else {
      static const char empty = 0;
      curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.empty() ? &empty : reinterpret_cast<const char*>(body.data()));
      curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.size()));
    }
  } else {
    curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    const std::string m(method);  // libcurl copies it
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method == "GET" ? nullptr : m.c_str());
  }
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);

  const CURLcode rc = curl_easy_perform(c);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, nullptr);
  curl_slist_free_all(headers);
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, nullptr);
  curl_easy_setopt(c, CURLOPT_READFUNCTION, nullptr);
  curl_easy_setopt(c, CURLOPT_READDATA, nullptr);

  if (sink.failure) std::rethrow_exception(sink.failure);
  if (rc == CURLE_OK && sink.on_line && !sink.partial.empty() && r.body.empty()) {
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    if (status == 200) (*sink.on_line)(sink.partial);  // a last line without its newline
  }
  if (rc == CURLE_WRITE_ERROR && sink.write_errno)
    throw CliError(kBadInput,
                   std::string("cannot write the answer to the output file: ") + std::strerror(sink.write_errno));
  if (rc != CURLE_OK) {
    long os_errno = 0;
    curl_easy_getinfo(c, CURLINFO_OS_ERRNO, &os_errno);
    throw transport_error(int(rc), os_errno, socket_, got_bytes, timeout_s_);
  }
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
  const char* ct = nullptr;
  if (curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ct) == CURLE_OK && ct) r.content_type = ct;
  // Said once a process, on stderr: scripts reading stdout see the answers
  // as they are, a person sees why a "not found" may not be final.
  static bool warned = false;
  if (r.index_rebuilding && !warned) {
    warned = true;
    std::fputs(
        "dedupctl: warning: dedupd is rebuilding its index after finding it damaged; a \"not found\" may be "
        "wrong until it is done (dedupctl status)\n",
        stderr);
  }
  return r;
}

CliError connect_error(long os_errno, const std::string& socket) {
  if (os_errno == EACCES || os_errno == EPERM) {
    struct stat st {};
    if (::stat(socket.c_str(), &st) == 0) {
      const std::string g = group_name(st.st_gid);
      return CliError(
          kPermission,
          "permission denied on " + shown(socket) + " (group " + g + ", mode " + mode_string(st.st_mode) + ")",
          "join group " + g + " (usermod -aG " + g + " $USER, then log in again)");
    }
    return CliError(kPermission, "permission denied on " + shown(socket));
  }
  if (os_errno == ECONNREFUSED)
    return CliError(kUnavailable, "dedupd is not running: nothing listens on " + shown(socket) + " (stale socket)",
                    start_hint(socket));
  if (os_errno == ENOENT)
    return CliError(kUnavailable, "dedupd is not running: no socket at " + shown(socket), start_hint(socket));
  return CliError(
      kUnavailable,
      "cannot connect to " + shown(socket) + (os_errno ? std::string(": ") + std::strerror(int(os_errno)) : ""),
      start_hint(socket));
}

CliError transport_error(int curl_code, long os_errno, const std::string& socket, bool got_response_bytes,
                         double timeout_s) {
  const std::string where = "dedupd at " + shown(socket);
  switch (CURLcode(curl_code)) {
    case CURLE_COULDNT_CONNECT:
      return connect_error(os_errno, socket);
    case CURLE_OPERATION_TIMEDOUT: {
      char secs[32];
      std::snprintf(secs, sizeof secs, "%g", timeout_s);
      if (!got_response_bytes)
        return CliError(kUnavailable, where + " did not answer within " + secs + " s",
                        "it may be busy or hung: `systemctl status dedupd`; raise --timeout for big requests");
      return CliError(kProtocol, where + " stopped sending its answer (timeout after " + secs + " s)");
    }
    case CURLE_GOT_NOTHING:
      return CliError(kProtocol, where + " closed the connection without answering",
                      "did it crash? see `journalctl -u dedupd` or its terminal");
    case CURLE_PARTIAL_FILE:
      return CliError(kProtocol, where + " closed the connection in the middle of its answer",
                      "did it crash? see `journalctl -u dedupd` or its terminal");
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
      return CliError(kProtocol, "connection to " + where + " broke: " + curl_easy_strerror(CURLcode(curl_code)) +
                                     (os_errno ? std::string(" (") + std::strerror(int(os_errno)) + ")" : ""));
    default:
      return CliError(kProtocol, "talking to " + where + ": " + curl_easy_strerror(CURLcode(curl_code)));
  }
}

std::string error_message(const Response& r) {
  try {
    auto doc = json::parse(r.body);
    const auto& e = doc.at("error");
    std::string m = e.at("message").get<std::string>();
    if (e.contains("code") && e["code"].is_string()) m += " [" + e["code"].get<std::string>() + "]";
    return m;
  } catch (const std::exception&) {
    return r.body.empty() ? std::string("(empty body)") : printable_excerpt(r.body);
  }
}

CliError status_error(const Response& r, std::string_view what) {
  const std::string msg = error_message(r);
  const std::string w(what);
  switch (r.status) {
    case 400:
    case 413:
    case 422:
      return CliError(kBadInput, w + ": dedupd refused the request: " + msg);
    case 403:
      // The daemon's message names the group an admin must be in.
      return CliError(kPermission, w + ": permission denied: " + msg,
                      "admin verbs need root or membership of dedupd's admin_group");
    case 404:
      return CliError(kNotFound, w + ": not found");
    case 503:
      if (is_busy(r))
        return CliError(kUnavailable, w + ": dedupd is busy: " + msg,
                        "it stayed busy through " + std::to_string(kBusyRetries) + " retries; try again later");
      if (error_code_is(r, "in_progress"))
        return CliError(kUnavailable, w + ": dedupd did not finish in time: " + msg,
                        "it still runs; see `dedupctl status` or the journal before repeating it");
      if (error_code_is(r, "unavailable"))
        return CliError(kUnavailable, w + ": dedupd cannot do it now: " + msg,
                        "something it needs is out of reach (disk, fleet database): `journalctl -u dedupd`");
      return CliError(kUnavailable, w + ": dedupd is not ready yet: " + msg, "retry in a moment");
    case 500:
      return CliError(kProtocol, w + ": dedupd failed: " + msg, "`journalctl -u dedupd` has the details");
    default:
      return CliError(kProtocol, w + ": unexpected HTTP status " + std::to_string(r.status) + ": " + msg);
  }
}

json parse_body(const Response& r, std::string_view what) {
  try {
    return json::parse(r.body);
  } catch (const json::parse_error& e) {
    throw CliError(kProtocol, std::string(what) + ": dedupd sent malformed JSON (" + std::to_string(r.body.size()) +
                                  " bytes, " + e.what() + ")");
  }
}

namespace {
[[noreturn]] void malformed(std::string_view what, std::string_view key, std::string_view why) {
  throw CliError(kProtocol,
                 std::string(what) + ": dedupd's answer has " + std::string(why) + " \"" + std::string(key) + "\"");
}
}  // namespace

const json& need(const json& obj, std::string_view key, std::string_view what) {
  if (!obj.is_object()) malformed(what, key, "no object around");
  auto it = obj.find(key);
  if (it == obj.end()) malformed(what, key, "no field");
  return *it;
}

std::uint64_t need_u64(const json& obj, std::string_view key, std::string_view what) {
  const json& v = need(obj, key, what);
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<std::int64_t>() >= 0))
    malformed(what, key, "a non-count value in");
  return v.get<std::uint64_t>();
}

std::string need_str(const json& obj, std::string_view key, std::string_view what) {
  const json& v = need(obj, key, what);
  if (!v.is_string()) malformed(what, key, "a non-string");
  return v.get<std::string>();
}

std::string need_hash(const json& obj, std::string_view key, std::string_view what) {
  std::string s = need_str(obj, key, what);
  auto h = dedupd::shard::Hash::parse(s);
  if (!h) malformed(what, key, "a malformed hash in");
  return h->to_string();
}

std::optional<std::uint64_t> need_time(const json& obj, std::string_view key, std::string_view what) {
  const json& v = need(obj, key, what);
  if (v.is_null()) return std::nullopt;
  return need_u64(obj, key, what);
}

const json& need_array(const json& obj, std::string_view key, std::string_view what) {
  const json& v = need(obj, key, what);
  if (!v.is_array()) malformed(what, key, "a non-array");
  return v;
}

}  // namespace dedupctl
