#include "cli/fleet_verbs.hpp"

#include <CLI/CLI.hpp>

#include <ctime>
#include <memory>
#include <ostream>

#include "api/routes.hpp"
#include "cli/client.hpp"
#include "cli/context.hpp"
#include "cli/daemon_verbs.hpp"
#include "cli/exit_codes.hpp"

namespace dedupctl {

namespace api = dedupd::api;

std::string local_only_query(bool local_only) {
  return local_only ? "?" + std::string(api::kLocalOnly) + "=1" : std::string();
}

void warn_if_fleet_unavailable(Context& ctx, const json& doc) {
  if (!doc.is_object() || !doc.contains("fleet") || doc["fleet"] != "unavailable") return;
  ctx.err() << "dedupctl: warning: the fleet did not answer in time; this is the local answer only\n";
}

bool is_fleet_ref(const json& ref) { return ref.is_object() && ref.contains("holders"); }

std::string fleet_ref_text(const json& ref) {
  std::string text = ref.value("shard", std::string("?")) + "  fleet, held by ";
  bool first = true;
  if (ref["holders"].is_array())
    for (const auto& h : ref["holders"]) {
      text += (first ? "" : ", ") + (h.is_string() ? h.get<std::string>() : h.dump());
      first = false;
    }
  return first ? text + "nobody" : text;
}

void add_fleet_status_fields(Fields& f, const json& fl, std::uint64_t now) {
  if (!fl.is_object()) return;
  const std::string state = fl.value("state", std::string("?"));
  f.add("Fleet", state + " as host " + fl.value("host", std::string("?")),
        state == "connected"     ? Color::green
        : state == "unavailable" ? Color::red
                                 : Color::yellow);
  if (fl.contains("outbox") && fl["outbox"].is_object()) {
    const json& ob = fl["outbox"];
    std::string text = std::to_string(ob.value("depth", std::uint64_t(0))) + " queued";
    if (ob.contains("oldest_age_s") && ob["oldest_age_s"].is_number_unsigned())
      text += ", oldest " + std::to_string(ob["oldest_age_s"].get<std::uint64_t>()) + " s";
    f.add("Outbox", text);
    if (std::uint64_t parked = ob.value("parked", std::uint64_t(0)))
      f.add("Parked", std::to_string(parked) + " not published (dedupctl fleet retry queues them again)", Color::red);
  }
  if (fl.contains("primary") && fl["primary"].is_string()) f.add("Writes to", fl["primary"].get<std::string>());
  if (fl.contains("lookup_memory") && fl["lookup_memory"].is_object()) {
    const json& m = fl["lookup_memory"];
    const json kf = m.value("key_filters", json::object()), xc = m.value("xorb_cache", json::object());
    const auto n = [](const json& o, const char* k) { return o.is_object() ? o.value(k, std::uint64_t(0)) : 0; };
    const std::uint64_t keys = n(kf, "keys"), over = n(kf, "keys_over_budget");
    std::string text = human_bytes(n(kf, "bytes")) + " of " + human_bytes(n(kf, "max_bytes")) + " key filters (" +
                       std::to_string(keys) + (keys == 1 ? " key" : " keys");
    if (const std::uint64_t bits = n(kf, "thinnest_bits_per_entry"); bits != 0 && bits < 16)
      text += ", thinnest " + std::to_string(bits) + " bits an entry";
    if (const std::uint64_t raw_bits = n(kf, "raw_bits_per_entry"); raw_bits != 0)
      text +=
          "; raw forms: " + std::to_string(n(kf, "raw_entries")) + " entries at " + std::to_string(raw_bits) + " bits";
    text += "), " + human_bytes(n(xc, "bytes")) + " of " + human_bytes(n(xc, "max_bytes")) + " xorb cache";
    f.add("Lookup memory", text);
    if (kf.is_object() && kf.value("raw_over_budget", false))
      f.add("Raw filter", "over half of fleet.key_filter_memory: every raw form is asked", Color::yellow);
    if (over != 0)
      f.add(
          "Key filters",
          std::to_string(over) + (over == 1 ? " key" : " keys") + " over fleet.key_filter_memory: asked in every form",
          Color::yellow);
  }
  if (fl.contains("failover") && fl["failover"].is_object() && fl["failover"].contains("last_at") &&
      fl["failover"]["last_at"].is_number_unsigned()) {
    const json& fo = fl["failover"];
    std::string text = time_text(fo["last_at"].get<std::uint64_t>(), now);
    if (fo.contains("from") && fo["from"].is_string()) text += ", from " + fo["from"].get<std::string>();
    const std::uint64_t seen = fo.value("seen", std::uint64_t(0));
    if (seen > 1) text += " (" + std::to_string(seen) + " since dedupd started)";
    f.add("Last failover", text, Color::yellow);
  }
  if (fl.contains("last_contact") && fl["last_contact"].is_number_unsigned())
    f.add("Last contact", time_text(fl["last_contact"].get<std::uint64_t>(), now));
  if (fl.contains("last_error") && fl["last_error"].is_string())
    f.add("Last error", fl["last_error"].get<std::string>(), Color::red);
}

namespace {

std::uint64_t parked_count(const json& doc) {
  const json& fl = doc["this_host"];
  if (!fl.is_object() || !fl.contains("outbox") || !fl["outbox"].is_object()) return 0;
  const json& n = fl["outbox"].value("parked", json(0));
  return n.is_number_unsigned() ? n.get<std::uint64_t>() : 0;
}

bool parked_listed(const json& doc) {
  const json& fl = doc["this_host"];
  return fl.is_object() && fl.contains("parked") && fl["parked"].is_array() && !fl["parked"].empty();
}

// A fleet route's answer; a daemon without a fleet is exit 69.
json fleet_call(Context& ctx, const char* method, std::string_view path, const std::string& what) {
  Client client(socket_of(ctx), ctx.opt.timeout_s);
  bool not_found = false;
  json doc = call(client, method, std::string(path), what, &not_found);
  if (not_found) throw CliError(kUnavailable, "dedupd has no fleet configured (the fleet section of dedupd.yaml)");
  return doc;
}

int fleet_retry(Context& ctx) {
  const std::string what = "fleet retry";
  json doc = fleet_call(ctx, "POST", api::kFleetRetry, what);
  const std::uint64_t queued = need_u64(doc, "queued", what);
  if (ctx.opt.json) print_json(ctx.out(), doc);
  else if (ctx.human())
    ctx.out() << queued << " parked outbox entr" << (queued == 1 ? "y" : "ies") << " queued again\n";
  return kOk;
}

int fleet_status(Context& ctx) {
  const std::string what = "fleet status";
  json doc = fleet_call(ctx, "GET", api::kFleetStatus, what);
  need(doc, "this_host", what);
  const bool answered = doc.value("fleet", std::string()) == "ok";
  if (answered) {
    need_u64(doc, "shards", what);
    need_u64(doc, "entries", what);
    for (const auto& h : need_array(doc, "hosts", what)) {
      need_str(h, "name", what);
      need_time(h, "last_contact", what);
      need_u64(h, "shards", what);
    }
  }
  if (ctx.opt.json) {
    print_json(ctx.out(), doc);
  } else if (!ctx.opt.quiet) {
    const std::uint64_t now = now_s();
    Fields f;
    add_fleet_status_fields(f, doc["this_host"], now);
    if (answered) {
      f.add("Fleet index", grouped(doc["shards"]) + " shards, " + grouped(doc["entries"]) + " chunk entries" +
                               (doc.value("standby", false) ? " (as a standby sees it)" : ""));
      if (doc.value("mid_upgrade", false))
        f.add("Upgrade", "under way: the hosts run different releases (VERSION below)", Color::yellow);
      if (const std::uint64_t marks = doc.value("set_aside_marks", std::uint64_t(0)))
        f.add("Set aside", grouped(marks) + " shard" + (marks == 1 ? "" : "s") +
                               " a CAS refused; no host answers with them for that CAS");
    } else {
      f.add("Fleet index", "unavailable: " + doc.value("error", std::string("no answer")), Color::red);
    }
    f.print(ctx.out(), ctx.style);
    if (answered) {
      ctx.out() << '\n';
      Table t({{"HOST"}, {"VERSION"}, {"SHARDS", Table::right}, {"LAST CONTACT"}});
      for (const auto& h : doc["hosts"]) {
        std::optional<std::uint64_t> last;
        if (h["last_contact"].is_number_unsigned()) last = h["last_contact"].get<std::uint64_t>();
        const json& v = h.contains("version") ? h["version"] : json();
        t.add({h["name"].get<std::string>(), v.is_string() ? v.get<std::string>() : std::string("before 0.2.0"),
               grouped(h["shards"]), time_text(last, now)});
      }
      t.print(ctx.out(), ctx.style);
    }
    if (parked_listed(doc)) {
      ctx.out() << '\n';
      Table t({{"PARKED"}, {"SHARD"}, {"SINCE"}, {"REASON"}});
      for (const auto& p : doc["this_host"]["parked"])
        t.add({p.value("op", std::string("?")), p.value("shard", std::string("?")),
               time_text(p.value("parked_at", std::uint64_t(0)), now), p.value("reason", std::string())});
      t.print(ctx.out(), ctx.style);
    }
  }
  if (const std::uint64_t parked = parked_count(doc)) {
    if (!ctx.opt.quiet)
      ctx.err() << "dedupctl: " << parked << " outbox entr" << (parked == 1 ? "y is" : "ies are")
                << " parked: not in the fleet\n";
    return kNotFound;
  }
  if (!answered) {
    if (!ctx.opt.quiet) ctx.err() << "dedupctl: warning: the fleet database did not answer\n";
    return kUnavailable;
  }
  return kOk;
}

int forget_host(Context& ctx, const std::string& name) {
  Client client(socket_of(ctx), ctx.opt.timeout_s);
  const std::string what = "fleet forget-host " + name;
  bool not_found = false;
  json doc = call(client, "POST", std::string(api::kFleetForgetHost) + name, what, &not_found);
  if (ctx.opt.json) print_json(ctx.out(), doc);
  if (not_found) {
    if (!ctx.opt.quiet)
      ctx.err() << "dedupctl: " << what << ": "
                << (doc.contains("error") && doc["error"].is_object()
                        ? doc["error"].value("message", std::string("no such host"))
                        : std::string("no such host"))
                << '\n';
    return kNotFound;
  }
  if (ctx.human()) ctx.out() << "host " << name << " forgotten: its holds are dropped\n";
  return kOk;
}

}  // namespace

void add_fleet_verbs(CLI::App& app, Action& action) {
  auto* fleet = app.add_subcommand("fleet", "The fleet index shared by several hosts (docs/FLEET.md)");
  fleet->require_subcommand(1);
  fleet->add_subcommand("status", "Hosts, their last contact, fleet shards and entries, this host's outbox")
      ->callback([&action] { action = fleet_status; });
  fleet->add_subcommand("retry", "Queue the parked outbox entries again (admin)")->callback([&action] {
    action = fleet_retry;
  });
  auto name = std::make_shared<std::string>();
  auto* forget = fleet->add_subcommand("forget-host", "Drop every hold of a host gone for good (admin)");
  forget->add_option("NAME", *name, "The host's name in the fleet")->required();
  forget->callback([&action, name] { action = [name](Context& ctx) { return forget_host(ctx, *name); }; });
}

}  // namespace dedupctl
