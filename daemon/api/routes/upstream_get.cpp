#include "daemon/api/routes/upstream_get.hpp"

#include <curl/curl.h>

#include <memory>

namespace dedupd::daemon::api::routes {

namespace {

base::Error upstream_error(std::string message) {
  return base::Error{"xet_download.upstream", 0, std::move(message), false};
}

struct Sink {
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
  sink->body->append(data, size * n);
  return size * n;
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

base::Result<UpstreamAnswer> upstream_get(std::string_view url,
                                          const std::vector<std::pair<std::string, std::string>>& headers,
                                          std::size_t max_body, long timeout_s) {
  if (!is_loopback_http(url)) return upstream_error("not a loopback http:// URL: " + std::string(url.substr(0, 200)));
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) return upstream_error("curl_easy_init failed");
  curl_slist* list = nullptr;
  for (const auto& [k, v] : headers) list = curl_slist_append(list, (k + ": " + v).c_str());
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> owned(list, curl_slist_free_all);
  UpstreamAnswer answer;
  Sink sink{&answer.body, max_body};
  const std::string u(url);
  curl_easy_setopt(curl.get(), CURLOPT_URL, u.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_HTTPHEADER, list);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT, timeout_s);
  curl_easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_PROTOCOLS_STR, "http");
  curl_easy_setopt(curl.get(), CURLOPT_FOLLOWLOCATION, 0L);
  CURLcode rc = curl_easy_perform(curl.get());
  if (sink.over) return upstream_error("the answer is over " + std::to_string(max_body) + " bytes");
  if (rc != CURLE_OK) return upstream_error(curl_easy_strerror(rc));
  curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &answer.status);
  char* type = nullptr;
  curl_easy_getinfo(curl.get(), CURLINFO_CONTENT_TYPE, &type);
  if (type) answer.content_type = type;
  return answer;
}

}  // namespace dedupd::daemon::api::routes
