// Request ids of nginx's form for the learning path's tests (daemon/learn/).
#pragma once

#include <string>

namespace dedupd::daemon::learn::testing {

inline const std::string kId = "0123456789abcdef0123456789abcdef";
inline const std::string kId2 = "fedcba9876543210fedcba9876543210";

}  // namespace dedupd::daemon::learn::testing
