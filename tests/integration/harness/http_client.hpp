// A keep-alive HTTP/1.1 client over a Unix socket (libcurl), for tests and
// the latency probe.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dedupd::itest {

struct Response {
  long status = 0;  // 0: no answer (connection failed)
  std::string body;
  nlohmann::json json() const;
};

class HttpClient {
 public:
  explicit HttpClient(std::string socket_path);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  Response get(const std::string& path, const std::vector<std::string>& headers = {});
  Response post(const std::string& path, const std::string& body, const std::string& content_type = "application/json",
                const std::vector<std::string>& headers = {});
  Response del(const std::string& path);

 private:
  Response perform(const char* method, const std::string& path, const std::string* body,
                   const std::string& content_type, const std::vector<std::string>& extra = {});
  std::string socket_;
  void* curl_;  // CURL*
};

}  // namespace dedupd::itest
