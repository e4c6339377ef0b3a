#include "daemon/api/http/router.hpp"

#include <algorithm>

namespace dedupd::daemon::api::http {

Router::Router(std::vector<Route> routes) : routes_(std::move(routes)) {
  for (std::size_t i = 0; i < routes_.size(); ++i) {
    routes_[i].id = i;
    if (routes_[i].prefix) prefixes_.push_back(i);
    else exact_.emplace(routes_[i].path, i);
  }
  // Longest prefix first so a more specific prefix wins over a shorter one.
  std::stable_sort(prefixes_.begin(), prefixes_.end(),
                   [&](std::size_t a, std::size_t b) { return routes_[a].path.size() > routes_[b].path.size(); });
}

Match Router::match(std::string_view path, std::string_view method) const {
  Match m;
  if (auto it = exact_.find(path); it != exact_.end()) {
    m.route = &routes_[it->second];
  } else {
    for (std::size_t i : prefixes_) {
      const Route& r = routes_[i];
      if (path.size() >= r.path.size() && path.substr(0, r.path.size()) == r.path) {
        m.route = &r;
        m.tail = path.substr(r.path.size());
        break;
      }
    }
  }
  if (!m.route) return m;
  std::string_view want = method == "HEAD" ? std::string_view("GET") : method;
  for (const MethodEntry& e : m.route->methods)
    if (e.method == want) m.entry = &e;
  return m;
}

std::string Router::allow(const Route& route) {
  std::string out;
  for (const MethodEntry& e : route.methods) {
    if (!out.empty()) out += ", ";
    out += e.method;
    if (e.method == "GET") out += ", HEAD";
  }
  return out;
}

}  // namespace dedupd::daemon::api::http
