// Helpers shared by the verbs that talk to dedupd (lookup and admin).
#pragma once

#include <istream>
#include <string>
#include <string_view>
#include <vector>

#include "cli/client.hpp"
#include "cli/context.hpp"

namespace dedupctl {

// A route path with its argument: route(api::kShard, hash).
inline std::string route(std::string_view prefix, std::string_view arg = {}) {
  return std::string(prefix) + std::string(arg);
}

// A client on the socket the options and environment name.
std::string socket_of(Context& ctx);

// A Xet hash from the command line, normalised; malformed input is 65 with
// the parser's reason.
std::string parse_hash_arg(std::string_view text, std::string_view what = "hash");

// Hashes from a stream, one per line: blanks around them, empty lines and
// "#" comments are ignored; a malformed line is 65 naming its line number.
std::vector<std::string> read_hashes(std::istream& in);

// The chunk hashes a verb was given: arguments, with "-" standing for the
// lines of stdin (read once). from_stdin tells a single-hash call apart.
struct ChunkHashArgs {
  std::vector<std::string> hashes;
  bool from_stdin = false;
};
ChunkHashArgs chunk_hash_args(Context& ctx, const std::vector<std::string>& args);

// GET/POST/DELETE returning the parsed 200 body; other statuses throw via
// status_error(). With `not_found` set, a 404 returns its parsed body (or
// an empty object) and sets *not_found instead of throwing.
json call(Client& c, std::string_view method, const std::string& path, std::string_view what, bool* not_found = nullptr,
          std::string_view body = {});

// Human formatting of daemon values.
std::string expiry_text(const std::optional<std::uint64_t>& unix_s, std::uint64_t now);
std::string time_text(const std::optional<std::uint64_t>& unix_s, std::uint64_t now);

}  // namespace dedupctl
