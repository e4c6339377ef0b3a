// The verb groups. Each registers its subcommands on the CLI11 app and, when
// one of them is chosen, stores what to run in `action`; main runs it after
// parsing so that every error, usage or not, goes through one exit path.
#pragma once

#include <functional>
#include <string>

namespace CLI {
class App;
}

namespace dedupctl {

struct Context;
using Action = std::function<int(Context&)>;

// A verb of one required argument (a hash, a file) that runs `run` with it.
void add_one_argument_verb(CLI::App& app, Action& action, const std::string& name, const std::string& help,
                           const std::string& argument, const std::string& argument_help,
                           int (*run)(Context&, const std::string&));

void add_offline_verbs(CLI::App& app, Action& action);  // inspect, verify
void add_lookup_verbs(CLI::App& app, Action& action);   // query, xorb, file, ...
void add_admin_verbs(CLI::App& app, Action& action);    // rescan, purge, ...

}  // namespace dedupctl
