// The learning path's parsers (issue 41): the report nginx sends of a shard
// upload ("<request id> <status>", in syslog framing or bare), and the CAS
// URL a query or watch entry names, with the CAS sets the index keeps.
//
// Properties beyond "no crash": a parsed report names a request id and a
// status in 100..599, and its bare form parses back to it; a normalized CAS
// URL is a fixed point of normalization and holds nothing a JSON string or
// a CAS set would need escaped; a CAS added to a set is in it, once.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "daemon/learn/report.hpp"
#include "shard/cas_scope.hpp"
#include "xetcache/cas_url.hpp"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  using namespace dedupd;

  if (auto c = daemon::learn::parse_confirmation(in)) {
    check(daemon::learn::is_request_id(c->request_id));
    check(c->status >= 100 && c->status <= 599);
    auto again = daemon::learn::parse_confirmation(c->request_id + " " + std::to_string(c->status));
    check(again && again->request_id == c->request_id && again->status == c->status);
  }

  if (auto url = xetcache::normalize_cas_url(in)) {
    check(!url->empty());
    check(xetcache::normalize_cas_url(*url) == url);
    for (char ch : *url) check(ch > ' ' && ch != '"' && ch != '\\' && ch != 0x7f);
    // A set of CASes: adding is idempotent, and what was added is held.
    std::string set = "https://cas.example";
    bool added = shard::add_cas(set, *url);
    check(shard::holds_cas(set, *url));
    check(!shard::add_cas(set, *url));
    check(added == (*url != "https://cas.example"));
    check(shard::CasScope{*url}.admits(set));
    check(!xetcache::client_cache_dir_name(*url).empty());
  }
  return 0;
}
