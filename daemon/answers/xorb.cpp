#include "daemon/answers/xorb.hpp"

namespace dedupd::daemon::answers {

base::Result<XorbAnswer> answer_xorb(const Lookups& lookups, const shard::Hash& xorb) {
  auto forms = lookups.index().xorb(xorb);
  if (!forms) return forms.error();
  XorbAnswer answer;
  answer.local = std::move(*forms);
  if (!answer.local.empty()) {
    answer.primary = primary_form(answer.local);
    return answer;
  }
  if (FleetPort* fleet = lookups.fleet()) answer.reach = fleet->xorb(xorb, answer.remote);
  if (answer.remote) answer.primary = primary_form(answer.remote->forms);
  return answer;
}

}  // namespace dedupd::daemon::answers
