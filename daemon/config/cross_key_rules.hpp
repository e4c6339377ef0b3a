// The rules of dedupd.yaml that span several keys, each registered in the
// key table (config/key_table.cpp): a section's after its keys are read,
// the file's after every key is.
#pragma once

#include "daemon/config/config.hpp"
#include "daemon/config/yaml_reader.hpp"

namespace dedupd::daemon::config {

// limits: one upload of the largest size must fit beside a batch query.
void check_body_memory(YamlReader& r, Config& c);
// fleet: a url is required; the host defaults to this machine's name.
void settle_fleet_identity(YamlReader& r, Config& c);
// The Xet caches' entry cap: set by hand, or small with the endpoint on.
void settle_cache_entry_cap(YamlReader& r, Config& c);
// quarantine_dir: outside every watched tree.
void check_quarantine_outside_watch(YamlReader& r, Config& c);

}  // namespace dedupd::daemon::config
