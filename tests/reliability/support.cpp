#include "support.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>

#include "harness/eventually.hpp"
#include "index/index.hpp"
#include "shard/reader.hpp"

namespace dedupd::reliability {

KnownShard known(const itest::MadeShard& made) {
  KnownShard k{made.file_hash, {}};
  auto view = shard::ShardView::parse(made.bytes);
  if (!view) return k;
  k.chunks.reserve(made.chunks);
  for (shard::XorbBlock x : view->xorbs())
    for (std::uint32_t i = 0; i < x.num_chunks(); ++i) k.chunks.push_back(x.chunk(i).chunk_hash);
  return k;
}

IndexReport inspect_index(const std::filesystem::path& index_dir, const std::vector<KnownShard>& shards,
                          bool check_invariants) {
  IndexReport out;
  std::error_code ec;
  std::filesystem::create_directories(index_dir.parent_path(), ec);
  auto opened = index::Index::open(index::Options{.dir = index_dir.string()});
  if (!opened) {
    out.problems.push_back("cannot open the index: " + opened.error().to_string());
    return out;
  }
  const index::Index& idx = **opened;
  if (check_invariants) {
    auto broken = idx.check_invariants();
    if (!broken) out.problems.push_back("invariant check failed: " + broken.error().to_string());
    else
      for (auto& b : *broken) out.problems.push_back("invariant: " + b);
  }
  if (auto st = idx.stats(); st) out.chunk_entries = st->chunk_entries;

  index::BatchResult r;
  for (const auto& s : shards) {
    auto info = idx.shard(s.hash);
    if (!info) {
      out.problems.push_back("shard lookup failed: " + info.error().to_string());
      continue;
    }
    bool live = info->has_value() && (*info)->state == index::ShardState::live;
    if (info->has_value() && !live)
      out.problems.push_back(s.hash.to_string() + ": recorded but not live (nothing here removes shards)");
    if (live) {
      out.live++;
      out.live_hashes.push_back(s.hash);
    } else {
      out.absent++;
    }
    if (auto st = idx.lookup_batch(s.chunks, r); !st) {
      out.problems.push_back("lookup_batch failed: " + st.error().to_string());
      continue;
    }
    std::size_t found = 0, wrong = 0;
    for (std::size_t i = 0; i < s.chunks.size(); ++i) {
      auto locs = r.of(i);
      if (locs.empty()) continue;
      ++found;
      if (locs.size() != 1 || r.shards(locs[0]).size() != 1 || r.shards(locs[0])[0].shard != s.hash) ++wrong;
    }
    if (live && found != s.chunks.size())
      out.problems.push_back(s.hash.to_string() + ": live, but only " + std::to_string(found) + " of " +
                             std::to_string(s.chunks.size()) + " chunks answer (half a shard)");
    if (!live && found != 0)
      out.problems.push_back(s.hash.to_string() + ": not indexed, yet " + std::to_string(found) + " of " +
                             std::to_string(s.chunks.size()) + " chunks answer (half a shard)");
    if (wrong)
      out.problems.push_back(s.hash.to_string() + ": " + std::to_string(wrong) +
                             " chunks answer with other or duplicate locations/shards");
  }
  return out;
}

long env_long(const char* name, long fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  long n = std::strtol(v, &end, 10);
  return end && *end == 0 ? n : fallback;
}

int connect_unix(const std::filesystem::path& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool send_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(std::size_t(n));
  }
  return true;
}

std::string read_response(int fd, int timeout_ms) {
  std::string out;
  char buf[65536];
  auto complete = [&] {
    auto end = out.find("\r\n\r\n");
    if (end == std::string::npos) return false;
    std::string head = out.substr(0, end);
    for (auto& c : head) c = char(std::tolower(static_cast<unsigned char>(c)));
    auto cl = head.find("\r\ncontent-length:");
    std::size_t length = cl == std::string::npos ? 0 : std::strtoull(head.c_str() + cl + 17, nullptr, 10);
    return out.size() >= end + 4 + length;
  };
  while (!complete()) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) != 1) break;
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, std::size_t(n));
  }
  return out;
}

bool until_rebuilt(itest::DaemonProcess& daemon, itest::HttpClient& http, nlohmann::json& health,
                   std::chrono::seconds timeout) {
  return itest::eventually(
      [&] {
        if (!daemon.running()) return true;
        auto r = http.get("/v1/status");
        if (r.status != 200) return false;
        health = r.json()["index_health"];
        return health["state"] == "rebuilt";
      },
      timeout);
}

std::optional<std::string> status_field(const std::string& text, const std::string& label) {
  std::optional<std::string> value;
  for (std::size_t at = 0; at < text.size();) {
    std::size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(at, end - at);
    at = end + 1;
    if (line.starts_with(label + "  ")) value = line.substr(line.find_first_not_of(' ', label.size()));
  }
  return value;
}

int status_of(std::string_view reply) {
  if (reply.size() < 12 || reply.substr(0, 5) != "HTTP/") return 0;
  auto sp = reply.find(' ');
  if (sp == std::string_view::npos || sp + 4 > reply.size()) return 0;
  return std::atoi(std::string(reply.substr(sp + 1, 3)).c_str());
}

Percentiles percentiles(std::vector<double> us) {
  Percentiles p;
  p.n = us.size();
  if (us.empty()) return p;
  std::sort(us.begin(), us.end());
  auto at = [&](double q) { return us[std::min(us.size() - 1, std::size_t(q * double(us.size())))]; };
  p.p50 = at(0.5);
  p.p99 = at(0.99);
  p.max = us.back();
  return p;
}

}  // namespace dedupd::reliability
