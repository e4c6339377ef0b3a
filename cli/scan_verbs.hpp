// `dedupctl hash FILE...` (the Xet file hash and sha256, no daemon) and
// `dedupctl scan FILE...` (how much of each file dedupd already knows),
// both chunking exactly as xet-core does (chunk/).
#pragma once

#include "cli/verbs.hpp"

namespace dedupctl {

void add_scan_verbs(CLI::App& app, Action& action);  // hash, scan

}  // namespace dedupctl
