// The endpoint learns what its CAS accepted, so the index answers with
// shards that CAS holds and stops answering with ones it refused: the
// daemon's side of the learning path. A shard a client uploads through the local Xet endpoint
// arrives twice: its body, mirrored by nginx to POST /v1/xet-endpoint/shards/
// <request id> (hold(), any HTTP thread), and the CAS's status for it, on
// the learning socket (on_readable(), the work loop). An accepted shard goes
// into the index scoped to the endpoint's CAS (and so to the fleet, as any
// other); a refused one sets aside the shards whose answers it relied on
// (heal.hpp). Learning never holds an upload up: nginx gives the mirror a
// short bound and the upload goes on whatever dedupd does.
#pragma once

#include <functional>

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "daemon/core/status.hpp"
#include "daemon/learn/confirm_socket.hpp"
#include "daemon/learn/copies.hpp"
#include "daemon/learn/download_counts.hpp"
#include "daemon/learn/pending.hpp"
#include "daemon/learn/report.hpp"
#include "daemon/loop/event_loop.hpp"
#include "index/index.hpp"

namespace dedupd::daemon::learn {

class Learner {
 public:
  Learner(index::Index& index, loop::EventLoop& loop) : index_(index), loop_(loop) {}
  ~Learner();

  // Listens on the learning socket at `path` (empty: stops listening).
  // Work loop only. An error leaves learning off; the daemon runs on. Once
  // listening on systemd's socket (adopt), that one stays whatever `path`.
  base::Result<bool> listen(const std::string& path);
  // The learning socket systemd passed (dedupd.socket): learning is on for
  // good, whatever xet_endpoint says, since the endpoint reports there.
  base::Result<bool> adopt(int fd);
  void set_endpoint_gid(std::optional<gid_t> gid);
  void set_unknown_cas_answers(bool on);
  // Where an accepted shard's bytes are kept (nullptr: nowhere), so a
  // rebuilt index learns them again.
  void set_copies(LearnedCopies* copies) { copies_ = copies; }
  // Told on the work loop when a refusal set a shard aside (with the CAS
  // that refused and why) and when the CAS accepted a shard: the fleet's
  // marks follow both (a shard set aside anywhere answers again everywhere
  // once its very bytes were accepted).
  struct Events {
    std::function<void(const shard::Hash& shard, const std::string& cas, const std::string& why)> set_aside;
    // Every shard the CAS accepted, new here or not.
    std::function<void(const shard::Hash& shard, const std::string& cas)> accepted;
    // A refusal: the xorbs the refused shard relied on (named, not
    // carried), for the fleet's shards holding them, which this host may
    // have answered with though it holds no copy (`unknown_too`: shards of
    // no known CAS answered that CAS's clients too).
    std::function<void(const std::vector<shard::Hash>& xorbs, const std::string& cas, bool unknown_too,
                       const std::string& why)>
        relied_on;
  };
  void set_events(Events events) { events_ = std::move(events); }

  // A body the endpoint mirrored; `cas` as the endpoint named it.
  core::LearnHold hold(const std::string& request_id, const std::string& cas, std::vector<std::uint8_t> bytes);

  core::LearnStats stats() const;
  // What the endpoint reported of its downloads' range requests.
  core::XetDownloadCounts download_counts() const { return downloads_.snapshot(); }

 private:
  void on_readable();                             // work loop
  void settle(const std::string& id, Settled s);  // work loop

  LearnedCopies* copies_ = nullptr;
  Events events_;
  index::Index& index_;
  loop::EventLoop& loop_;
  PendingShards pending_;
  DownloadCounts downloads_;
  std::optional<ConfirmSocket> socket_;  // work loop only
  std::atomic<bool> listening_{false};   // what HTTP threads may read of it
  std::atomic<std::int64_t> endpoint_gid_{-1};
  std::atomic<bool> unknown_cas_answers_{false};
  std::atomic<std::uint64_t> restored_{0};  // set aside, then accepted again
  std::atomic<std::uint64_t> learned_{0}, already_known_{0}, set_aside_{0}, refused_senders_{0}, unreadable_{0},
      not_learned_{0};
};

}  // namespace dedupd::daemon::learn
