// A fill's bytes on their way to nginx (docs/XET-ENDPOINT.md, "Downloads"):
// the storage's bytes go through the range's check (answers::RangeChecker),
// and each chunk into the answer's body once it passed. The range's last
// chunk waits until the whole range passed (finish): what only the end
// decides (the chunk count, the xorb hash) may still fail it. So a body
// that fails any check is never whole; its answer ends short of its
// Content-Length, and nginx, which keeps no upstream body cut short,
// caches nothing. One thread: the fill's.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <variant>
#include <vector>

#include "base/result.hpp"
#include "daemon/answers/xorb_range_check.hpp"
#include "daemon/api/http/body_pipe.hpp"

namespace dedupd::daemon::api::routes {

// The rule of a relay's error when the body is no longer wanted (its
// reader, nginx, went away, or dedupd is stopping), not the bytes'
// fault; the check's errors keep theirs ("xet_download.verify").
inline constexpr std::string_view kRelayGone = "xet_download.relay";

class FillRelay {
 public:
  // `out`'s length is the expected range's.
  FillRelay(answers::RangeExpectation expected, http::BodyPipe& out);

  // The storage's next bytes: checked, and the leading whole chunks that
  // passed (never the range's last) relayed, which waits while `out` is
  // full.
  base::Result<std::monostate> feed(std::span<const std::uint8_t> bytes);
  // After the storage's last byte: the whole range's check. Nothing more
  // is relayed until complete().
  base::Result<answers::CheckedRange> finish();
  // Once the range passed: the bytes held back relayed, and the body
  // ended. False when it is no longer wanted.
  bool complete();

 private:
  base::Error gone() const;

  answers::RangeChecker checker_;
  http::BodyPipe& out_;
  std::uint64_t relayed_ = 0;
  // Fed and not yet relayed: the range's bytes from relayed_ on.
  std::vector<std::uint8_t> held_;
};

}  // namespace dedupd::daemon::api::routes
