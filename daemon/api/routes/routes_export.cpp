// POST /v1/admin/export?format=swh-shard: the raw part of the index as a
// Software Heritage read shard (index/swh_export.hpp), streamed back.
//
// Runs on the admin thread, not the work loop: it only reads (one LMDB read
// transaction for the walk), so ingest and expiry go on meanwhile; other
// admin actions queue behind it. The file is written in the state directory
// (never in a watched one), opened, unlinked at once and handed to the
// server as the body, so the disk space goes back when the last byte is
// sent or the client hangs up, and nothing is left behind after a crash but
// what the next export sweeps away.
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>

#include "daemon/api/routes/route_util.hpp"
#include "daemon/api/routes/routes.hpp"
#include "index/swh_export.hpp"

namespace dedupd::daemon::api::routes {

namespace {

constexpr std::string_view kExportDir = "export";
constexpr std::string_view kExportPrefix = "snapshot-";

// Leftovers of an export that never finished (the daemon was killed): only
// one export runs at a time, so anything here now is stale.
void sweep(const std::filesystem::path& dir) {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.path().filename().string().starts_with(kExportPrefix)) std::filesystem::remove(e.path(), ec);
  }
}

}  // namespace

http::Response post_export(http::Context& ctx, http::Request& req) {
  auto format = req.query_value("format");
  if (!format) return http::error(http::kBadRequest, "format is missing: ?format=swh-shard");
  if (*format != "swh-shard")
    return http::error(http::kBadRequest, "unknown format '" + std::string(*format) + "': swh-shard");
  const index::Index* idx = open_index(ctx);
  if (!idx) return not_ready();

  const std::filesystem::path dir = std::filesystem::path(ctx.service.status().state_dir) / kExportDir;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    spdlog::error("api: export: cannot create {}: {}", dir.native(), ec.message());
    return http::error(http::kInternal, "cannot create the export directory: " + ec.message());
  }
  sweep(dir);
  static std::atomic<std::uint64_t> seq{0};
  const std::string path =
      (dir / (std::string(kExportPrefix) + std::to_string(::getpid()) + "-" + std::to_string(++seq) + ".swh")).native();

  const auto t0 = std::chrono::steady_clock::now();
  auto e = index::export_swh_shard(*idx, path);
  if (!e) {
    if (e.error().rule == index::kRuleSwhEmpty) return http::error(http::kNotFound, e.error().message);
    spdlog::error("api: export to {}: {}", path, e.error().to_string());
    return http::error(http::kInternal, "export failed: " + e.error().message);
  }
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  const int open_errno = errno;
  ::unlink(path.c_str());
  if (fd < 0) {
    spdlog::error("api: export: cannot reopen {}: {}", path, std::strerror(open_errno));
    return http::error(http::kInternal, std::string("cannot read the export back: ") + std::strerror(open_errno));
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  spdlog::info("export: swh-shard of {} raw chunk hashes ({} locations, {} keyed entries left out), {} bytes, {:.2f}s",
               e->keys, e->locations, e->keyed_entries, e->file_bytes, secs);

  http::Response r;
  r.content_type = std::string(http::kOctets);
  r.file = std::make_shared<const http::FileBody>(fd, e->file_bytes);
  r.headers.emplace_back("X-Dedupd-Keys", std::to_string(e->keys));
  r.headers.emplace_back("X-Dedupd-Locations", std::to_string(e->locations));
  return r;
}

}  // namespace dedupd::daemon::api::routes
