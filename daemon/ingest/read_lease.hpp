// A read lease (fcntl F_SETLEASE) held while a file is mapped and ingested.
// Truncating a file someone has mapped makes their next access SIGBUS; with
// the lease, whoever opens the file for writing or truncates it waits (up to
// /proc/sys/fs/lease-break-time) until the lease is released, so a file
// rewritten in place cannot crash the daemon mid-ingest.
#pragma once

#include <filesystem>

namespace dedupd::daemon::ingest {

class ReadLease {
 public:
  enum class State {
    held,
    busy,         // the file is open for writing right now: not complete
    unsupported,  // not the owner without CAP_LEASE, or a file system without leases
  };

  explicit ReadLease(const std::filesystem::path& file);
  ~ReadLease();
  ReadLease(const ReadLease&) = delete;
  ReadLease& operator=(const ReadLease&) = delete;

  State state() const { return state_; }

 private:
  int fd_ = -1;
  State state_ = State::unsupported;
};

}  // namespace dedupd::daemon::ingest
