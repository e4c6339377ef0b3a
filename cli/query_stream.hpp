// `dedupctl query -` / `query --from FILE`: any number of hashes, streamed
// both ways. The input is read, checked and sent as it goes (a chunked
// upload of one hash a line); the daemon's NDJSON answer is printed line by
// line as it arrives, so memory stays the same whatever the count.
#pragma once

#include <istream>
#include <string>

#include "cli/context.hpp"

namespace dedupctl {

enum class QueryFormat { table, json_document, json_lines, short_text };

struct QueryStreamOptions {
  QueryFormat format = QueryFormat::table;
  std::string fields;       // --fields, empty: the format's default
  bool local_only = false;  // --local-only: this host's index, not the fleet
};

// `source` names the input in messages ("stdin", the file's path).
int query_stream(Context& ctx, std::istream& in, const std::string& source, const QueryStreamOptions& options);

}  // namespace dedupctl
