#pragma once

#include <string_view>

namespace dedupd::fleet {

// A fleet host name: 1-253 of [A-Za-z0-9._-], as a DNS name or a
// machine's hostname is; answers list holders separated by ',' and ' '.
inline bool valid_host_name(std::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  for (char ch : name) {
    bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' ||
              ch == '_' || ch == '-';
    if (!ok) return false;
  }
  return true;
}

}  // namespace dedupd::fleet
