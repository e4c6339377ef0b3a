#include "daemon/api/routes/upstream_get.hpp"

#include "daemon/api/http/curl_on_demand.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <string_view>

namespace dedupd::daemon::api::routes {

namespace {

base::Error upstream_error(std::string message) {
  return base::Error{"xet_download.upstream", 0, std::move(message), false};
}

struct Sink {
  CURL* curl;
  std::string* body;
  std::size_t max;
  bool over = false;
};

std::size_t on_body(char* data, std::size_t size, std::size_t n, void* user) {
  auto* sink = static_cast<Sink*>(user);
  if (sink->body->size() + size * n > sink->max) {
    sink->over = true;
    return 0;  // libcurl stops with CURLE_WRITE_ERROR
  }
  if (sink->body->empty()) {
    // The whole body's room at once when its length is said (a
    // reconstruction answer is hundreds of KB: no copy as it grows).
    curl_off_t length = -1;
    if (curl_easy_getinfo(sink->curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length) == CURLE_OK && length > 0)
      sink->body->reserve(std::min<std::size_t>(std::size_t(length), sink->max));
  }
  sink->body->append(data, size * n);
  return size * n;
}

struct Stream {
  const StorageStream* to;
  CURL* curl;
  bool stopped = false;
};

std::size_t on_stream(char* data, std::size_t size, std::size_t n, void* user) {
  auto* stream = static_cast<Stream*>(user);
  if (!stream->to->body(std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(data), size * n))) {
    stream->stopped = true;
    return 0;
  }
  return size * n;
}

// Each header line; the empty one ends a block, whose status is then known.
std::size_t on_header(char* data, std::size_t size, std::size_t n, void* user) {
  auto* stream = static_cast<Stream*>(user);
  const std::string_view line(data, size * n);
  if (line != "\r\n" && line != "\n") return size * n;
  long status = 0;
  curl_easy_getinfo(stream->curl, CURLINFO_RESPONSE_CODE, &status);
  if (stream->to->head && !stream->to->head(status)) {
    stream->stopped = true;
    return 0;
  }
  return size * n;
}

// Called at least once a second during a transfer: a stop requested ends it.
int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* stream = static_cast<Stream*>(user);
  if (!stream->to->stop.stop_requested()) return 0;
  stream->stopped = true;
  return 1;
}

using Curl = std::unique_ptr<CURL, decltype(&curl_easy_cleanup)>;

// Why no handle could be made: dedupd opens libcurl at the first transfer
// (http/curl_on_demand.cpp), and that may fail.
base::Error no_handle() {
  const char* unloaded = dedupd_curl_load_error != nullptr ? dedupd_curl_load_error() : nullptr;
  return upstream_error(unloaded ? unloaded : "curl_easy_init failed");
}

// A handle for one GET of `path` through the Unix socket `way_out`, with
// `headers`, bounded by `timeout_s`, never following a redirect.
Curl get_handle(const std::string& way_out, std::string_view path, curl_slist* headers, long timeout_s) {
  Curl curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) return curl;
  const std::string url = "http://localhost" + std::string(path);
  curl_easy_setopt(curl.get(), CURLOPT_UNIX_SOCKET_PATH, way_out.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT, timeout_s);
  curl_easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(curl.get(), CURLOPT_PROTOCOLS_STR, "http");
  return curl;
}

using Headers = std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)>;

Headers header_list(const HeaderList& headers) {
  curl_slist* list = nullptr;
  for (const auto& [k, v] : headers) list = curl_slist_append(list, (k + ": " + v).c_str());
  return Headers(list, curl_slist_free_all);
}

}  // namespace

bool is_loopback_http(std::string_view url) {
  for (std::string_view host : {"http://127.0.0.1:", "http://localhost:"}) {
    if (!url.starts_with(host)) continue;
    std::string_view rest = url.substr(host.size());
    std::size_t digits = 0;
    while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9') ++digits;
    return digits > 0 && digits <= 5 && digits < rest.size() && rest[digits] == '/';
  }
  return false;
}

bool is_way_out(std::string_view path) {
  if (path.size() < 2 || path.size() > 107 || path.front() != '/') return false;
  for (char c : path)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '/' || c == '.' || c == '_' || c == '-')) return false;
  return path.find("/../") == std::string_view::npos;
}

base::Result<UpstreamAnswer> upstream_get(const std::string& way_out, std::string_view path, const HeaderList& headers,
                                          std::size_t max_body, long timeout_s) {
  if (!is_way_out(way_out)) return upstream_error("not a way out (an absolute socket path): " + way_out.substr(0, 120));
  if (!path.starts_with('/')) return upstream_error("not an absolute path: " + std::string(path.substr(0, 200)));
  Headers list = header_list(headers);
  Curl curl = get_handle(way_out, path, list.get(), timeout_s);
  if (!curl) return no_handle();
  UpstreamAnswer answer;
  Sink sink{curl.get(), &answer.body, max_body};
  // Large reads: an answer of hundreds of KB in a few calls, not dozens.
  curl_easy_setopt(curl.get(), CURLOPT_BUFFERSIZE, 256L * 1024);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &sink);
  CURLcode rc = curl_easy_perform(curl.get());
  if (sink.over) return upstream_error("the answer is over " + std::to_string(max_body) + " bytes");
  if (rc != CURLE_OK) return upstream_error(way_out + ": " + curl_easy_strerror(rc));
  curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &answer.status);
  char* type = nullptr;
  curl_easy_getinfo(curl.get(), CURLINFO_CONTENT_TYPE, &type);
  if (type) answer.content_type = type;
  return answer;
}

base::Result<long> storage_get(const std::string& way_out, const std::string& url, const std::string& range,
                               long timeout_s, const StorageStream& stream) {
  if (!is_way_out(way_out)) return upstream_error("not a way out (an absolute socket path): " + way_out.substr(0, 120));
  Headers list = header_list({{"Range", range}, {"X-Xet-Storage-Url", url}});
  Curl curl = get_handle(way_out, "/.xet-storage", list.get(), timeout_s);
  if (!curl) return no_handle();
  Stream transfer{&stream, curl.get()};
  curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, on_stream);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(curl.get(), CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(curl.get(), CURLOPT_HEADERDATA, &transfer);
  curl_easy_setopt(curl.get(), CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(curl.get(), CURLOPT_XFERINFODATA, &transfer);
  curl_easy_setopt(curl.get(), CURLOPT_NOPROGRESS, 0L);
  // Larger pieces than libcurl's 16 KiB: fewer calls into the check and
  // the relay for the same bytes.
  curl_easy_setopt(curl.get(), CURLOPT_BUFFERSIZE, 256L * 1024);
  // A refusal's body is not the range's: the sink never sees it.
  curl_easy_setopt(curl.get(), CURLOPT_FAILONERROR, 1L);
  // A stalled storage is given up after a minute without a byte.
  curl_easy_setopt(curl.get(), CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_LOW_SPEED_TIME, 60L);
  CURLcode rc = curl_easy_perform(curl.get());
  long status = 0;
  curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &status);
  if (transfer.stopped && stream.stop.stop_requested()) return upstream_error("dedupd is stopping");
  if (transfer.stopped || rc == CURLE_HTTP_RETURNED_ERROR) return status;
  if (rc != CURLE_OK) return upstream_error(std::string("the storage's answer: ") + curl_easy_strerror(rc));
  return status;
}

}  // namespace dedupd::daemon::api::routes
