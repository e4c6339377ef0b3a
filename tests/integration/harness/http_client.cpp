#include "harness/http_client.hpp"

#include <curl/curl.h>

namespace dedupd::itest {

nlohmann::json Response::json() const { return nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false); }

namespace {
size_t collect(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}
}  // namespace

HttpClient::HttpClient(std::string socket_path) : socket_(std::move(socket_path)), curl_(curl_easy_init()) {}

HttpClient::~HttpClient() { curl_easy_cleanup(static_cast<CURL*>(curl_)); }

Response HttpClient::get(const std::string& path, const std::vector<std::string>& headers) {
  return perform("GET", path, nullptr, "", headers);
}
Response HttpClient::del(const std::string& path) { return perform("DELETE", path, nullptr, ""); }
Response HttpClient::post(const std::string& path, const std::string& body, const std::string& content_type,
                          const std::vector<std::string>& headers) {
  return perform("POST", path, &body, content_type, headers);
}

Response HttpClient::perform(const char* method, const std::string& path, const std::string* body,
                             const std::string& content_type, const std::vector<std::string>& extra) {
  CURL* c = static_cast<CURL*>(curl_);
  Response r;
  std::string url = "http://localhost" + path;
  curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, socket_.c_str());
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &r.body);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_slist* headers = nullptr;
  if (body) {
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body->data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body->size()));
    headers = curl_slist_append(headers, ("Content-Type: " + content_type).c_str());
    for (const std::string& h : extra) headers = curl_slist_append(headers, h.c_str());
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, nullptr);
  } else {
    curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    for (const std::string& h : extra) headers = curl_slist_append(headers, h.c_str());
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, std::string(method) == "GET" ? nullptr : method);
  }
  if (curl_easy_perform(c) == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, nullptr);
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, nullptr);
  if (headers) curl_slist_free_all(headers);
  return r;
}

}  // namespace dedupd::itest
