// The global-dedup key's rotation, at the second it is due by the wall
// clock (global_dedup.key_rotation after the key's creation). A rotation
// that fails keeps the old key and is tried again.
#pragma once

#include "daemon/jobs/job.hpp"
#include "daemon/keys/global_dedup_key.hpp"

namespace dedupd::daemon::jobs {

class KeyRotationJob final : public Job {
 public:
  explicit KeyRotationJob(keys::GlobalDedupKeyStore& keys) : keys_(keys) {}

  const char* name() const override { return "key rotation"; }
  std::optional<std::chrono::milliseconds> due_in() override;
  void run() override;
  void configure(const config::Config& config, Apply when) override;

 private:
  keys::GlobalDedupKeyStore& keys_;
};

}  // namespace dedupd::daemon::jobs
