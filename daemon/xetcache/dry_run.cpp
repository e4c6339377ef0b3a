// CacheSteward::plan: a pass on copies of what the steward remembers, with
// a file layer that reads for real and writes and deletes nothing; what the
// pass would do is collected instead of logged.
#include <spdlog/spdlog.h>

#include "daemon/xetcache/pass_jobs.hpp"
#include "daemon/xetcache/steward.hpp"
#include "shard/reader.hpp"

namespace dedupd::daemon::xetcache {

namespace {

class DryRunFiles final : public StewardFiles {
 public:
  explicit DryRunFiles(StewardFiles& real) : real_(real) {}
  Listing list_logs(const std::string& dir) override { return real_.list_logs(dir); }
  std::optional<std::string> network_fs(const std::string& path) override { return real_.network_fs(path); }
  base::Result<std::vector<std::uint8_t>> read(const std::string& path) override { return real_.read(path); }
  base::Result<dedupd::xetcache::WrittenShard> write_shard(const std::string& dir, std::span<const std::uint8_t> bytes,
                                                           mode_t, std::int64_t) override {
    dedupd::xetcache::WrittenShard w;
    w.hash = shard::shard_file_hash(bytes);
    w.size = bytes.size();
    w.path = dir + "/" + w.hash.to_string() + ".mdb";
    return w;
  }
  int unlink(const std::string&) override { return 0; }
  bool log_dest_redirected() override { return real_.log_dest_redirected(); }

 private:
  StewardFiles& real_;
};

}  // namespace

std::optional<std::vector<core::XetCachePlan>> CacheSteward::plan(const std::string& root) {
  std::unique_lock pass(run_mu_, std::try_to_lock);
  if (!pass.owns_lock()) return std::nullopt;
  apply_configuration();
  if (!journal_loaded_) load_journal();
  // Everything a pass remembers is put back afterwards, but a lock it took
  // stays taken (locks_ is not copied: the fd is the one held).
  const auto endpoints = endpoints_;
  const auto sightings = sightings_;
  const auto roots = roots_;
  const bool journal_dirty = journal_dirty_;
  DryRunFiles dry(*probes_.files);
  StewardFiles* const real = probes_.files;
  probes_.files = &dry;
  dry_run_ = true;
  auto under = [&](const std::string& path) {
    return root.empty() || path == root || path.starts_with(root + "/") || root.starts_with(path + "/");
  };
  std::erase_if(roots_, [&](const std::filesystem::path& r) { return !under(r.native()); });
  try {
    run_roots();
  } catch (const StewardPassStopped&) {
  } catch (const std::exception& e) {
    spdlog::error("xet cache: the dry run failed: {}", e.what());
  }
  std::vector<core::XetCachePlan> out;
  for (const auto& st : dry_published_) {
    if (!under(st.endpoint)) continue;
    core::XetCachePlan p;
    p.endpoint = st.endpoint;
    p.liveness_established = st.liveness_established;
    p.liveness_why = st.liveness_why;
    p.standing_by = st.standing_by;
    p.lock_holder = st.lock_holder;
    p.held_back = st.held_back;
    if (auto s = dry_steps_.find(st.endpoint); s != dry_steps_.end()) p.steps = std::move(s->second);
    out.push_back(std::move(p));
  }
  endpoints_ = endpoints;
  sightings_ = sightings;
  roots_ = roots;
  journal_dirty_ = journal_dirty;
  probes_.files = real;
  dry_run_ = false;
  dry_steps_.clear();
  dry_published_.clear();
  return out;
}

}  // namespace dedupd::daemon::xetcache
