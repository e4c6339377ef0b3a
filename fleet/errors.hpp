// Error values of the fleet library: base::Error with a rule starting with
// "fleet.", offset 0. The message carries libpq's text, never the password
// (libpq does not put it in its messages; we never print the url).
#pragma once

#include <string>

#include "base/result.hpp"

namespace dedupd::fleet {

using base::Error;
using base::Result;

struct Ok {};

inline constexpr const char* kRuleConnect = "fleet.connect";           // cannot connect to a usable server
inline constexpr const char* kRuleTimeout = "fleet.timeout";           // the deadline passed
inline constexpr const char* kRuleUnavailable = "fleet.unavailable";   // a recent failure; not retried yet
inline constexpr const char* kRuleQuery = "fleet.query";               // the server refused a statement
inline constexpr const char* kRuleSchema = "fleet.schema";             // missing, older and not ours to upgrade
inline constexpr const char* kRuleSchemaNewer = "fleet.schema_newer";  // written by a newer dedupd
inline constexpr const char* kRuleSchemaFinal = "fleet.schema_final";  // the next migration waits for --final
inline constexpr const char* kRuleArgument = "fleet.argument";         // e.g. a bad host name
inline constexpr const char* kRuleProtocol = "fleet.protocol";         // an answer we cannot decode

inline Error make_error(const char* rule, std::string message) { return Error{rule, 0, std::move(message)}; }

}  // namespace dedupd::fleet
