// A xorb's stored forms (GET /v1/xorb/<hash>): this index's, else the
// fleet's. The same xorb can be stored raw and keyed (different chunk
// hashes); an answer describes one form first, raw when there is one (its
// hashes are the ones users can look up), and the others after it.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "base/result.hpp"
#include "daemon/answers/lookups.hpp"
#include "fleet/fleet.hpp"
#include "index/types.hpp"

namespace dedupd::daemon::answers {

struct XorbAnswer {
  std::vector<index::XorbInfo> local;
  // Asked only when `local` is empty.
  std::optional<fleet::XorbAnswer> remote;
  Reach reach = Reach::off;
  // The form described first: in `local`, else in remote->forms.
  std::size_t primary = 0;

  bool found() const { return !local.empty() || (remote && !remote->forms.empty()); }
};

// The first raw form of `forms`, else the first; 0 when there is none.
template <class Form>
std::size_t primary_form(const std::vector<Form>& forms) {
  for (std::size_t i = 0; i < forms.size(); ++i)
    if (!forms[i].keyed) return i;
  return 0;
}

base::Result<XorbAnswer> answer_xorb(const Lookups& lookups, const shard::Hash& xorb);

}  // namespace dedupd::daemon::answers
