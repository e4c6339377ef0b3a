// The whole program behind main(): parse, run one verb, map every failure
// to an exit code. Tests call run() directly with string streams.
#pragma once

#include <string>
#include <vector>

#include "cli/context.hpp"

namespace dedupctl {

int run(const std::vector<std::string>& args, Io& io);  // args without argv[0]

}  // namespace dedupctl
