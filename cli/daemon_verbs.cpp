#include "cli/daemon_verbs.hpp"

#include <sys/stat.h>

#include <ctime>

#include "cli/output.hpp"
#include "shard/hash.hpp"

namespace dedupctl {

std::string socket_of(Context& ctx) {
  return resolve_socket(ctx.opt.socket, ctx.io.getenv("DEDUPD_SOCKET"), [](const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0;
  });
}

std::string parse_hash_arg(std::string_view text, std::string_view what) {
  auto h = dedupd::shard::Hash::parse(text);
  if (!h)
    throw CliError(kBadInput, "malformed " + std::string(what) + " '" + std::string(text.substr(0, 80)) +
                                  "': " + h.error().message);
  return h->to_string();
}

std::vector<std::string> read_hashes(std::istream& in) {
  std::vector<std::string> out;
  std::string line;
  std::size_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    std::string_view v(line);
    while (!v.empty() && (v.back() == '\r' || v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    if (v.empty() || v.front() == '#') continue;
    auto h = dedupd::shard::Hash::parse(v);
    if (!h)
      throw CliError(kBadInput, "stdin line " + std::to_string(n) + ": malformed hash '" +
                                    std::string(v.substr(0, 80)) + "': " + h.error().message);
    out.push_back(h->to_string());
  }
  return out;
}

ChunkHashArgs chunk_hash_args(Context& ctx, const std::vector<std::string>& args) {
  ChunkHashArgs out;
  for (const auto& a : args) {
    if (a == "-") {
      if (out.from_stdin) continue;
      out.from_stdin = true;
      auto more = read_hashes(ctx.io.in);
      out.hashes.insert(out.hashes.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
    } else {
      out.hashes.push_back(parse_hash_arg(a, "chunk hash"));
    }
  }
  return out;
}

json call(Client& c, std::string_view method, const std::string& path, std::string_view what, bool* not_found,
          std::string_view body) {
  Response r = method == "GET" ? c.get(path) : method == "POST" ? c.post(path, body) : c.del(path);
  if (r.status == 404 && not_found) {
    *not_found = true;
    try {
      return json::parse(r.body);
    } catch (const json::parse_error&) {
      return json::object();
    }
  }
  if (r.status != 200) throw status_error(r, what);
  return parse_body(r, what);
}

std::string time_text(const std::optional<std::uint64_t>& unix_s, std::uint64_t now) {
  if (!unix_s) return "-";
  return iso_local(*unix_s) + " (" + relative(std::int64_t(*unix_s) - std::int64_t(now)) + ")";
}

std::string expiry_text(const std::optional<std::uint64_t>& unix_s, std::uint64_t now) {
  if (!unix_s) return "never";
  return time_text(unix_s, now);
}

}  // namespace dedupctl
