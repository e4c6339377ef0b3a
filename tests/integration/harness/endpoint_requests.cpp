#include "harness/endpoint_requests.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "shard/writer.hpp"

namespace dedupd::itest {

std::pair<int, std::string> status_and_fleet_header(const FleetHost& h, const std::string& path,
                                                    const std::string& header_line) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, h.socket.c_str(), sizeof(addr.sun_path) - 1);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    if (fd >= 0) ::close(fd);
    return {0, ""};
  }
  std::string request = "GET " + path + " HTTP/1.1\r\nHost: dedupd\r\nConnection: close\r\n" +
                        (header_line.empty() ? "" : header_line + "\r\n") + "\r\n";
  bool sent = ::send(fd, request.data(), request.size(), MSG_NOSIGNAL) == ssize_t(request.size());
  std::string text;
  std::array<char, 4096> buf;
  while (sent) {
    ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
    if (n <= 0) break;
    text.append(buf.data(), std::size_t(n));
  }
  ::close(fd);
  std::string head = text.substr(0, text.find("\r\n\r\n"));
  int status = head.size() > 12 ? std::atoi(head.c_str() + 9) : 0;
  std::string lower = head;
  for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
  const std::string name = "\r\nx-dedupd-fleet:";
  auto at = lower.find(name);
  if (at == std::string::npos) return {status, ""};
  std::string value = head.substr(at + name.size(), head.find("\r\n", at + 2) - at - name.size());
  value.erase(0, value.find_first_not_of(' '));
  return {status, value};
}

void refuse_upload_relying_on(FleetHost& h, const MadeShard& relied_on, const std::string& cas,
                              const std::string& request_id) {
  shard::ShardWriter w;
  shard::FileRecord f;
  f.header.file_hash = relied_on.file_hash;  // any hash: a file's is not checked against its terms
  f.terms.push_back({.xorb_hash = relied_on.xorbs[0], .unpacked_bytes = 4, .chunk_start = 0, .chunk_end = 1});
  w.add_file(f);
  auto refused = w.write({});
  auto held = h.http().post("/v1/xet-endpoint/shards/" + request_id, std::string(refused.begin(), refused.end()),
                            "application/octet-stream", {"X-Dedupd-Cas: " + cas});
  ASSERT_EQ(held.status, 202) << held.body;
  int out = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(out, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string learn = (h.dir / "dedupd-learn.sock").string();
  std::strncpy(addr.sun_path, learn.c_str(), sizeof(addr.sun_path) - 1);
  const std::string report = request_id + " 400";
  ASSERT_EQ(::sendto(out, report.data(), report.size(), 0, reinterpret_cast<sockaddr*>(&addr), sizeof addr),
            ssize_t(report.size()))
      << std::strerror(errno);
  ::close(out);
}

}  // namespace dedupd::itest
