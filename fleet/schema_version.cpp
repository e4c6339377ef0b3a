#include "fleet/schema_version.hpp"

#include <string>

#include "fleet/migrations.hpp"

namespace dedupd::fleet {

std::uint32_t known_schema_version() { return std::uint32_t(schema::migrations().size()); }

namespace schema {
namespace {

// Serializes migrations of concurrent hosts (the key is "dedupd" in ASCII).
constexpr const char* kLock = "SELECT pg_advisory_xact_lock(110386607761508)";

Error newer(const Version& found) {
  return make_error(kRuleSchemaNewer, "the fleet database has schema version " + std::to_string(found.applied) +
                                          ", which needs a dedupd that knows version " +
                                          std::to_string(found.required) + "; this one knows " +
                                          std::to_string(known_schema_version()) + ": upgrade dedupd");
}

Error older(const Version& found, const std::string& why) {
  return make_error(kRuleSchema, "the fleet database has schema version " + std::to_string(found.applied) +
                                     " and this dedupd needs version " + std::to_string(known_schema_version()) +
                                     (why.empty() ? "" : ": " + why) +
                                     "; run `dedupd --fleet-migrate` as a role that may create tables");
}

}  // namespace

Result<Version> version_of(const detail::Rows& rows) {
  if (rows.size() != 1) return make_error(kRuleSchema, "dedupd.schema_version does not hold exactly one row");
  Version v;
  v.required = std::uint32_t(rows.int4(0, 0));
  v.applied = rows.null(0, 1) ? v.required : std::uint32_t(rows.int4(0, 1));
  return v;
}

Result<Version> read_version(detail::Connection& c) {
  auto exists = c.exec("SELECT to_regclass('dedupd.schema_version') IS NOT NULL");
  if (!exists) return exists.error();
  if (!exists->boolean(0, 0)) return Version{};
  auto v = c.exec(kVersionQuery);
  if (!v) return v.error();
  return version_of(*v);
}

std::optional<Error> unusable(const Version& found) {
  if (found.required > known_schema_version()) return newer(found);
  if (found.applied < known_schema_version()) return older(found, "");
  return std::nullopt;
}

Result<MigrateOutcome> migrate(detail::Connection& c, const std::vector<Migration>& steps, bool final) {
  auto run = [&]() -> Result<MigrateOutcome> {
    if (auto r = c.exec(kLock); !r) return r.error();
    auto found = read_version(c);
    if (!found) return found.error();
    MigrateOutcome out{found->applied, found->applied};
    if (found->required > steps.size()) return newer(*found);
    if (found->applied >= steps.size()) return out;
    // What the schema will ask of a dedupd: the last migration that was
    // not additive. Before 0.2.0 `version` was both, and no migration was.
    std::uint32_t required = found->required;
    for (std::size_t v = found->applied; v < steps.size(); ++v) {
      const auto to = std::uint32_t(v + 1);
      if (steps[v].additive) continue;
      if (to > kLastAutomatic && found->applied > 0 && !final)
        return make_error(kRuleSchemaFinal,
                          "the fleet schema's migration to version " + std::to_string(to) +
                              " is not additive: dedupd that know only version " + std::to_string(found->applied) +
                              " could not use it. It waits until every host runs this release; then run "
                              "`dedupd --fleet-migrate --final`");
      required = to;
    }
    if (found->applied == 0) {
      auto made = c.exec_script(
          "CREATE SCHEMA IF NOT EXISTS dedupd;"
          "CREATE TABLE dedupd.schema_version ("
          "  single boolean PRIMARY KEY DEFAULT true CHECK (single),"
          "  version integer NOT NULL,"
          "  upgraded_at timestamptz NOT NULL DEFAULT now());"
          "INSERT INTO dedupd.schema_version (version) VALUES (0);");
      if (!made) return made.error();
    }
    for (std::size_t v = found->applied; v < steps.size(); ++v) {
      auto step = c.exec_script(steps[v].sql.c_str());
      if (!step) {
        Error e = step.error();
        e.message = "migration to version " + std::to_string(v + 1) + ": " + e.message;
        return e;
      }
    }
    auto mark = c.exec("UPDATE dedupd.schema_version SET version = $1, applied = $2, upgraded_at = now()",
                       wire::Params().int4(std::int32_t(required)).int4(std::int32_t(steps.size())));
    if (!mark) return mark.error();
    out.to = std::uint32_t(steps.size());
    return out;
  };
  if (auto b = c.exec("BEGIN"); !b) return b.error();
  auto out = run();
  if (!out) {
    std::string state = c.last_sqlstate();
    if (!c.broken()) c.rollback();
    if (state == "42501") {  // insufficient_privilege
      auto found = read_version(c);
      return older(found ? *found : Version{}, out.error().message);
    }
    return out.error();
  }
  if (auto e = c.exec("COMMIT"); !e) return e.error();
  return out;
}

Result<MigrateOutcome> migrate(detail::Connection& c, bool final) { return migrate(c, migrations(), final); }

Result<Ok> require_current(detail::Connection& c) {
  auto found = read_version(c);
  if (!found) return found.error();
  if (auto e = unusable(*found)) return *e;
  return Ok{};
}

}  // namespace schema
}  // namespace dedupd::fleet
