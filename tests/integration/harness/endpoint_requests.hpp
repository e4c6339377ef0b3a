// What the local Xet endpoint's nginx sends a dedupd of the fleet, by hand:
// a global-dedup query naming its CAS (with the X-Dedupd-Fleet header of the
// answer, which the harness's client does not keep), and a client's upload
// the CAS refused.
#pragma once

#include <string>
#include <utility>

#include "harness/fleet_host.hpp"
#include "harness/make_shard.hpp"

namespace dedupd::itest {

// The status and X-Dedupd-Fleet header (empty when absent) of a GET over
// h's socket, with one more header line when given.
std::pair<int, std::string> status_and_fleet_header(const FleetHost& h, const std::string& path,
                                                    const std::string& header_line = "");

// What the endpoint's nginx does when `cas` refuses a client's upload
// shard that relied on the first xorb of `relied_on` without carrying it:
// mirror its body to h, then report the CAS's status on h's learning
// socket (beside its API socket). Fails the test when h does not take it.
void refuse_upload_relying_on(FleetHost& h, const MadeShard& relied_on, const std::string& cas,
                              const std::string& request_id);

}  // namespace dedupd::itest
