#include "cli/query_stream.hpp"

#include <array>
#include <cstring>
#include <optional>
#include <string_view>

#include "api/routes.hpp"
#include "cli/client.hpp"
#include "cli/daemon_verbs.hpp"
#include "cli/fleet_verbs.hpp"
#include "cli/output.hpp"
#include "cli/write_behind.hpp"
#include "shard/hash.hpp"

namespace dedupctl {

namespace {

constexpr std::size_t kReadBytes = 256 << 10;
constexpr std::size_t kFlushBytes = 256 << 10;

// Digits of the Xet string form, normalised to lower case; 0xFF otherwise.
constexpr std::array<std::uint8_t, 256> kLower = [] {
  std::array<std::uint8_t, 256> t{};
  t.fill(0xFF);
  for (int c = 0; c < 10; ++c) t['0' + c] = std::uint8_t('0' + c);
  for (int c = 0; c < 6; ++c) t['a' + c] = t['A' + c] = std::uint8_t('a' + c);
  return t;
}();

// The order the answers come in must be the order the hashes went out, but
// neither side keeps them: both fold the hashes, in order, into a digest.
struct OrderDigest {
  std::uint64_t value = 0x9E3779B97F4A7C15ull;
  void add(std::string_view hash) {
    std::uint64_t w;
    for (int i = 0; i < 64; i += 8) {
      std::memcpy(&w, hash.data() + i, 8);
      value = (value ^ w) * 0x100000001B3ull;
      value ^= value >> 29;
    }
  }
};

// Reads hashes from the input and hands out "<hash>\n" lines.
class HashReader {
 public:
  HashReader(std::istream& in, const std::string& source, OrderDigest& digest)
      : in_(in), source_(source), digest_(digest) {}

  std::size_t produce(char* buf, std::size_t max) {
    std::size_t n = 0;
    while (n < max) {
      if (sent_ == out_.size()) {
        out_.clear();
        sent_ = 0;
        if (!refill()) break;
        continue;
      }
      std::size_t k = std::min(max - n, out_.size() - sent_);
      std::memcpy(buf + n, out_.data() + sent_, k);
      n += k;
      sent_ += k;
    }
    return n;
  }
  std::uint64_t count() const { return count_; }

 private:
  // Reads the next piece of input into out_; false at its end.
  bool refill() {
    while (out_.empty()) {
      if (eof_) {
        if (!carry_.empty()) line(carry_), carry_.clear();
        return !out_.empty();
      }
      in_buf_.resize(kReadBytes);
      in_.read(in_buf_.data(), std::streamsize(in_buf_.size()));
      in_buf_.resize(std::size_t(in_.gcount()));
      if (in_.bad()) throw CliError(kBadInput, "cannot read " + source_ + ": " + std::strerror(errno));
      if (!in_) eof_ = true;
      std::string_view rest(in_buf_);
      while (!rest.empty()) {
        std::size_t nl = rest.find('\n');
        if (nl == std::string_view::npos) {
          carry_.append(rest);
          break;
        }
        if (carry_.empty()) {
          line(rest.substr(0, nl));
        } else {
          carry_.append(rest.substr(0, nl));
          line(carry_);
          carry_.clear();
        }
        rest.remove_prefix(nl + 1);
      }
    }
    return true;
  }

  void line(std::string_view v) {
    ++line_no_;
    while (!v.empty() && (v.back() == '\r' || v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    if (v.empty() || v.front() == '#') return;
    std::uint8_t bad = 0;
    const std::size_t at = out_.size();
    if (v.size() == 64) {
      out_.resize(at + 65);
      for (std::size_t i = 0; i < 64; ++i) bad |= (out_[at + i] = char(kLower[static_cast<unsigned char>(v[i])]));
      out_[at + 64] = '\n';
    }
    if (v.size() != 64 || (bad & 0x80)) {
      out_.resize(at);
      auto h = dedupd::shard::Hash::parse(v);
      throw CliError(kBadInput, source_ + " line " + std::to_string(line_no_) + ": malformed hash '" +
                                    std::string(v.substr(0, 80)) + "': " + (h ? "not a hash" : h.error().message));
    }
    digest_.add(std::string_view(out_).substr(at, 64));
    ++count_;
  }

  std::istream& in_;
  const std::string& source_;
  OrderDigest& digest_;
  std::string in_buf_, carry_, out_;
  std::size_t sent_ = 0;
  std::uint64_t line_no_ = 0, count_ = 0;
  bool eof_ = false;
};

// A result line as the daemon writes it: {"hash":"<64>","found":<bool>...}.
struct LineHead {
  std::string_view hash;
  bool found = false;
};

std::optional<LineHead> read_head(std::string_view line) {
  constexpr std::string_view kHash = R"({"hash":")";
  constexpr std::string_view kFound = R"(,"found":)";
  if (line.size() < kHash.size() + 65 + kFound.size() + 4 || line.substr(0, kHash.size()) != kHash) return std::nullopt;
  LineHead h;
  h.hash = line.substr(kHash.size(), 64);
  std::string_view rest = line.substr(kHash.size() + 64);
  if (rest[0] != '"' || rest.substr(1, kFound.size()) != kFound) return std::nullopt;
  rest.remove_prefix(1 + kFound.size());
  if (rest.substr(0, 4) == "true") h.found = true;
  else if (rest.substr(0, 5) != "false") return std::nullopt;
  return h;
}

// Whether a result line says the fleet did not answer. dedupd writes the
// mark last in a line, and only with a fleet configured: the line's end
// decides (a search through every line was most of dedupctl's time in a
// long query, and with no fleet every line was searched to its end).
bool fleet_marked_unavailable(std::string_view line) {
  constexpr std::string_view kUnavailable = R"("fleet":"unavailable")";
  std::string_view body = line.substr(0, line.size() - (line.ends_with('}') ? 1 : 0));
  return body.ends_with(kUnavailable);
}

// "xorb:chunk_index" for each location of a result line (short form).
void append_short_locations(std::string& out, std::string_view line) {
  constexpr std::string_view kXorb = R"("xorb":")";
  constexpr std::string_view kIndex = R"("chunk_index":)";
  for (std::size_t at = line.find(kXorb); at != std::string_view::npos; at = line.find(kXorb, at)) {
    at += kXorb.size();
    out += ' ';
    out.append(line.substr(at, 64));
    std::size_t ix = line.find(kIndex, at);
    std::size_t next = line.find(kXorb, at);
    if (ix != std::string_view::npos && (next == std::string_view::npos || ix < next)) {
      ix += kIndex.size();
      std::size_t end = line.find_first_not_of("0123456789", ix);
      out += ':';
      out.append(line.substr(ix, end - ix));
    }
  }
}

std::string table_header(const Style& s) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-64s  %-64s  %6s  %21s  %10s  %6s  %s\n", "CHUNK", "XORB", "#", "BYTES", "SIZE",
                "SHARDS", "LIVES UNTIL");
  return s.paint(std::string(buf, std::strlen(buf) - 1), Color::bold) + "\n";
}

void append_table_rows(std::string& out, std::string_view line, const LineHead& head, const Style& s) {
  if (!head.found) {
    out.append(head.hash).append("  ").append(s.paint("not found", Color::red)).append("\n");
    return;
  }
  json doc = json::parse(line, nullptr, false);
  if (doc.is_discarded() || !doc.contains("locations") || !doc["locations"].is_array())
    throw CliError(kProtocol, "query: dedupd sent a result line that is not a lookup result");
  for (const auto& loc : doc["locations"]) {
    // A location lives until its last shard expires; "never" if any never does.
    bool never = false;
    std::uint64_t until = 0;
    for (const auto& sh : loc.value("shards", json::array())) {
      if (!sh.contains("expiry") || !sh["expiry"].is_number_unsigned()) never = true;
      else until = std::max(until, sh["expiry"].get<std::uint64_t>());
    }
    const std::string lives = never ? "never" : iso_local(until);
    const std::string bytes =
        std::to_string(loc.value("byte_start", 0ull)) + ".." + std::to_string(loc.value("byte_end", 0ull));
    char buf[512];
    std::snprintf(buf, sizeof buf, "%.*s  %-64s  %6llu  %21s  %10s  %6zu  %s\n", int(head.hash.size()),
                  head.hash.data(), loc.value("xorb", std::string()).c_str(),
                  (unsigned long long)loc.value("chunk_index", 0ull), bytes.c_str(),
                  human_bytes(loc.value("unpacked_bytes", 0ull)).c_str(), loc.value("shards", json::array()).size(),
                  lives.c_str());
    out += buf;
  }
}

}  // namespace

int query_stream(Context& ctx, std::istream& in, const std::string& source, const QueryStreamOptions& options) {
  const QueryFormat format = options.format;
  std::string fields = options.fields;
  if (!fields.empty() && format == QueryFormat::table)
    throw CliError(kUsage, "--fields goes with --json, --json-lines or --format short, not the table");
  if (fields.empty() && format == QueryFormat::short_text) fields = "xorb,chunk_index";
  // Every line carries its hash and whether it was found: counting and the
  // order check read them.
  std::string path(dedupd::api::kChunkBatch);
  if (!fields.empty()) path += "?fields=hash,found," + fields;
  if (options.local_only) path += (fields.empty() ? "?" : "&") + std::string(dedupd::api::kLocalOnly) + "=1";

  Client client(socket_of(ctx), ctx.opt.timeout_s);
  OrderDigest sent, received;
  HashReader reader(in, source, sent);
  std::uint64_t found = 0, missing = 0;
  bool fleet_unavailable = false;
  std::string out;
  out.reserve(kFlushBytes + 4096);
  const bool quiet = ctx.opt.quiet;
  WriteBehind behind(ctx.io.out_fd);
  auto flush = [&] {
    ctx.out().write(out.data(), std::streamsize(out.size()));
    out.clear();
    if (behind.active()) {
      ctx.out().flush();
      behind.wrote();
    }
  };
  if (!quiet && format == QueryFormat::table) out += table_header(ctx.style);
  if (!quiet && format == QueryFormat::json_document) out += "{\"results\":[\n";

  const std::string what = "query (" + source + ")";
  Client::Producer produce = [&](char* buf, std::size_t max) { return reader.produce(buf, max); };
  Client::LineSink on_line = [&](std::string_view line) {
    auto head = read_head(line);
    if (!head) throw CliError(kProtocol, what + ": dedupd sent a line that is not a lookup result");
    received.add(head->hash);
    if (!fleet_unavailable && fleet_marked_unavailable(line)) fleet_unavailable = true;
    (head->found ? found : missing) += 1;
    if (!quiet) switch (format) {
        case QueryFormat::json_lines:
          out.append(line).push_back('\n');
          break;
        case QueryFormat::json_document:
          if (found + missing > 1) out += ",\n";
          out.append(line);
          break;
        case QueryFormat::short_text:
          out.append(head->hash).append(head->found ? " found" : " missing");
          append_short_locations(out, line);
          out += '\n';
          break;
        case QueryFormat::table:
          append_table_rows(out, line, *head, ctx.style);
          break;
      }
    if (out.size() >= kFlushBytes) flush();
  };
  Response r = client.post_stream(path, "text/plain", "application/x-ndjson", produce, on_line);
  if (r.status != 200) throw status_error(r, what);
  if (found + missing != reader.count())
    throw CliError(kProtocol, what + ": dedupd answered " + std::to_string(found + missing) + " results for " +
                                  std::to_string(reader.count()) + " hashes");
  if (sent.value != received.value)
    throw CliError(kProtocol, what + ": dedupd's answers are not in the order of the hashes");
  if (fleet_unavailable) warn_if_fleet_unavailable(ctx, json{{"fleet", "unavailable"}});
  if (!quiet && format == QueryFormat::json_document)
    out += "\n],\"found\":" + std::to_string(found) + ",\"missing\":" + std::to_string(missing) + "}\n";
  if (!quiet && format == QueryFormat::table)
    out += "\n" + ctx.style.paint(grouped(found) + " found", found ? Color::green : Color::none) + ", " +
           ctx.style.paint(grouped(missing) + " missing", missing ? Color::red : Color::none) + "\n";
  flush();
  ctx.out().flush();
  return missing ? kNotFound : kOk;
}

}  // namespace dedupctl
