// hash and scan: every file is read once, in blocks (chunk::digest_file), so
// memory does not follow its size. scan asks dedupd about the chunks in
// bounded batches on a thread of their own while the file is read, then
// about the whole file by its Xet file hash.
#include "cli/scan_verbs.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <set>
#include <unordered_set>
#include <vector>

#include "api/routes.hpp"
#include "chunk/file_digest.hpp"
#include "cli/client.hpp"
#include "cli/daemon_verbs.hpp"
#include "cli/output.hpp"
#include "cli/upload_walk.hpp"

namespace dedupctl {

namespace api = dedupd::api;
using dedupd::chunk::ChunkRecord;
using dedupd::shard::Hash;

namespace {

// Hashes per request at most (--batch). Far under the daemon's 100,000 so an
// answer stays a few MiB, and the file's reading is never held up long.
constexpr std::size_t kScanBatch = 8192;
// New chunks remembered to count a repeat inside the scan once, as an
// upload would send it once (32 bytes each: 32 MiB at most).
constexpr std::size_t kMaxRememberedNew = 1 << 20;
// Files at least this large get a progress bar on a terminal.
constexpr std::uint64_t kProgressFrom = 64ull << 20;

std::string percent(std::uint64_t part, std::uint64_t whole) {
  if (whole == 0) return "100%";
  char b[16];
  std::snprintf(b, sizeof b, "%.1f%%", 100.0 * double(part) / double(whole));
  return b;
}

dedupd::chunk::FileDigest digest_or_throw(const std::string& path, const dedupd::chunk::DigestOptions& opt) {
  auto d = dedupd::chunk::digest_file(path, opt);
  if (!d) {
    const auto& e = d.error();
    throw CliError(kBadInput, path + ": cannot " + (e.rule == "open" ? "open" : "read") +
                                  (e.rule == "read" ? " at byte " + std::to_string(e.offset) : std::string()) + ": " +
                                  e.message);
  }
  return *d;
}

// A progress line on stderr for long runs (human output on a terminal, at
// least kProgressFrom bytes in all): bytes done of the total, the rate, the
// time left and the file being read, redrawn at most ten times a second.
class Progress {
 public:
  Progress(Context& ctx, std::uint64_t total, std::size_t files)
      : ctx_(ctx), total_(total), files_(files), on_(ctx.human() && ctx.io.out_is_tty && total >= kProgressFrom) {}
  ~Progress() {
    if (on_ && drawn_) ctx_.err() << "\r\033[K" << std::flush;
  }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // The callback for one file's reading (bytes of that file done so far).
  std::function<void(std::uint64_t)> file(const std::string& path, std::uint64_t size) {
    base_ += size_;
    size_ = size;
    path_ = path;
    ++index_;
    if (!on_) return {};
    return [this](std::uint64_t d) { update(base_ + std::min(d, size_)); };
  }

 private:
  using Clock = std::chrono::steady_clock;

  void update(std::uint64_t done) {
    const auto now = Clock::now();
    // The last byte is always drawn, so the line ends on 100%.
    if (drawn_ && now - last_ < std::chrono::milliseconds(100) && done < total_) return;
    last_ = now;
    drawn_ = true;
    const double secs = std::chrono::duration<double>(now - start_).count();
    const double rate = secs > 0 ? double(done) / secs : 0;
    std::string line = "[" + grouped(index_) + "/" + grouped(files_) + "] " + human_bytes(done) + " of " +
                       human_bytes(total_) + " (" + percent(done, total_) + ")";
    if (secs >= 0.5 && rate > 0) {
      line += ", " + human_bytes(std::uint64_t(rate)) + "/s, ETA " +
              duration(std::uint64_t(double(total_ - std::min(done, total_)) / rate));
    }
    ctx_.err() << "\r\033[K" << line << "  " << path_ << std::flush;
  }

  Context& ctx_;
  std::uint64_t total_;
  std::size_t files_;
  bool on_;
  bool drawn_ = false;
  std::uint64_t base_ = 0, size_ = 0;
  std::size_t index_ = 0;
  std::string path_;
  Clock::time_point start_ = Clock::now(), last_{};
};

std::uint64_t file_size_of(const std::string& path) {
  std::error_code ec;
  const auto n = std::filesystem::file_size(path, ec);
  return ec ? 0 : std::uint64_t(n);
}

// ---- hash ---------------------------------------------------------------

int hash_files(Context& ctx, const std::vector<std::string>& paths) {
  json files = json::array();
  int code = kOk;
  Table t({{"XET FILE HASH"}, {"SHA256"}, {"SIZE", Table::right}, {"PATH"}});
  std::vector<std::uint64_t> sizes;  // stat'ed once, for the progress line
  std::uint64_t total = 0;
  for (const auto& path : paths) total += sizes.emplace_back(file_size_of(path));
  Progress progress(ctx, total, paths.size());
  for (std::size_t i = 0; i < paths.size(); ++i) {
    const std::string& path = paths[i];
    dedupd::chunk::DigestOptions opt;
    opt.on_progress = progress.file(path, sizes[i]);
    std::optional<dedupd::chunk::FileDigest> d;
    try {
      d = digest_or_throw(path, opt);
    } catch (const CliError& e) {
      ctx.err() << "dedupctl: hash " << e.what() << '\n';
      if (ctx.opt.json) files.push_back({{"path", path}, {"error", e.what()}});
      code = kBadInput;
      continue;
    }
    files.push_back({{"path", path},
                     {"size", d->size},
                     {"file_hash", d->file_hash.to_string()},
                     {"sha256", d->sha256.to_hex_bytes()},
                     {"chunks", d->chunks}});
    t.add({d->file_hash.to_string(), d->sha256.to_hex_bytes(), human_bytes(d->size), path});
  }
  if (ctx.opt.json) print_json(ctx.out(), {{"files", std::move(files)}});
  else if (!ctx.opt.quiet && t.size()) t.print(ctx.out(), ctx.style);
  return code;
}

// ---- scan ---------------------------------------------------------------

// The one place scan asks dedupd about chunks: one POST /v1/chunk with the
// given hashes (at most kScanBatch). Returns one result per hash, in order,
// each checked for the fields scan reads.
std::vector<json> lookup_chunks(Client& client, const std::vector<std::string>& hashes) {
  std::string body;
  body.reserve(16 + hashes.size() * 67);
  body += "{\"hashes\":[";
  for (std::size_t i = 0; i < hashes.size(); ++i) {
    if (i) body += ',';
    body += '"';
    body += hashes[i];
    body += '"';
  }
  body += "]}";
  const std::string what = "scan (batch of " + std::to_string(hashes.size()) + " chunk hashes)";
  json doc = call(client, "POST", std::string(api::kChunkBatch), what, nullptr, body);
  json& results = doc["results"];
  need_array(doc, "results", what);
  if (results.size() != hashes.size())
    throw CliError(kProtocol, what + ": dedupd answered " + std::to_string(results.size()) + " results for " +
                                  std::to_string(hashes.size()) + " hashes");
  std::vector<json> out;
  out.reserve(hashes.size());
  for (std::size_t i = 0; i < hashes.size(); ++i) {
    json& r = results[i];
    if (need_hash(r, "hash", what) != hashes[i])
      throw CliError(kProtocol, what + ": result " + std::to_string(i) + " is for another hash");
    for (const auto& loc : need_array(r, "locations", what)) {
      need_hash(loc, "xorb", what);
      for (const auto& s : need_array(loc, "shards", what)) need_hash(s, "shard", what);
    }
    out.push_back(std::move(r));
  }
  return out;
}

struct XorbUse {
  std::uint64_t chunks = 0, bytes = 0;
};

struct FileScan {
  std::string path;
  dedupd::chunk::FileDigest digest;
  std::uint64_t known_bytes = 0, known_chunks = 0;
  std::uint64_t new_bytes = 0, new_chunks = 0;
  std::uint64_t repeated_bytes = 0;      // unknown chunks met before in this scan
  std::map<std::string, XorbUse> xorbs;  // where the known bytes are (first location of each chunk)
  std::set<std::string> shards;
  std::optional<json> known_file;  // GET /v1/file/<hash> when the index has the file
};

class Scanner {
 public:
  // Asks once before reading anything, so a daemon that is down or still
  // starting is reported before minutes of reading a large file.
  Scanner(Context& ctx, std::size_t batch) : client_(socket_of(ctx), ctx.opt.timeout_s), batch_(batch) {
    call(client_, "GET", std::string(api::kHealth), "scan");
  }

  FileScan scan(const std::string& path, std::function<void(std::uint64_t)> on_progress) {
    FileScan fs;
    fs.path = path;
    dedupd::chunk::DigestOptions opt;
    opt.on_progress = std::move(on_progress);
    opt.on_chunks = [&](std::span<const ChunkRecord> records) {
      for (const auto& r : records) {
        pending_.push_back(r);
        if (pending_.size() >= batch_) send_pending(fs);
      }
    };
    try {
      fs.digest = digest_or_throw(path, opt);
      send_pending(fs);
      collect(fs);
    } catch (...) {
      // Whatever is in flight belongs to this file: wait for it and drop it.
      if (inflight_.valid()) {
        try {
          (void)inflight_.get();
        } catch (const CliError&) {
        }
      }
      pending_.clear();
      throw;
    }

    bool not_found = false;
    const std::string h = fs.digest.file_hash.to_string();
    if (fs.digest.size > 0) {
      json doc = call(client_, "GET", std::string(api::kFile) + h, "scan " + path + ": file " + h, &not_found);
      if (!not_found) fs.known_file = std::move(doc);
    }
    return fs;
  }

 private:
  // One batch is asked while the file reading goes on; the next waits for
  // its answer first, so at most two batches of chunk records are held and
  // the client is used by one thread at a time.
  void send_pending(FileScan& fs) {
    collect(fs);
    if (pending_.empty()) return;
    inflight_records_.swap(pending_);
    pending_.clear();
    std::vector<std::string> hashes;
    hashes.reserve(inflight_records_.size());
    for (const auto& r : inflight_records_) hashes.push_back(r.hash.to_string());
    inflight_ =
        std::async(std::launch::async, [this, hashes = std::move(hashes)] { return lookup_chunks(client_, hashes); });
  }

  // Waits for the batch in flight (its errors surface here) and counts it.
  void collect(FileScan& fs) {
    if (!inflight_.valid()) return;
    const std::vector<json> results = inflight_.get();
    for (std::size_t i = 0; i < inflight_records_.size(); ++i) {
      const ChunkRecord& c = inflight_records_[i];
      const json& locs = results[i]["locations"];
      if (!locs.empty()) {
        fs.known_bytes += c.size;
        ++fs.known_chunks;
        XorbUse& x = fs.xorbs[locs[0]["xorb"].get<std::string>()];
        ++x.chunks;
        x.bytes += c.size;
        for (const auto& loc : locs)
          for (const auto& s : loc["shards"]) fs.shards.insert(s["shard"].get<std::string>());
      } else if (seen_new_.contains(c.hash)) {
        fs.repeated_bytes += c.size;
      } else {
        fs.new_bytes += c.size;
        ++fs.new_chunks;
        if (seen_new_.size() < kMaxRememberedNew) seen_new_.insert(c.hash);
      }
    }
    inflight_records_.clear();
  }

  Client client_;
  std::size_t batch_;
  std::vector<ChunkRecord> pending_;           // not yet sent
  std::vector<ChunkRecord> inflight_records_;  // sent, answer not counted yet
  std::future<std::vector<json>> inflight_;
  std::unordered_set<Hash> seen_new_;  // across files: one upload sends a chunk once
};

json file_json(const FileScan& f) {
  json xorbs = json::array();
  for (const auto& [x, use] : f.xorbs) xorbs.push_back({{"xorb", x}, {"chunks", use.chunks}, {"bytes", use.bytes}});
  json doc = {{"path", f.path},
              {"size", f.digest.size},
              {"file_hash", f.digest.file_hash.to_string()},
              {"sha256", f.digest.sha256.to_hex_bytes()},
              {"chunks", f.digest.chunks},
              {"known_bytes", f.known_bytes},
              {"known_chunks", f.known_chunks},
              {"new_bytes", f.new_bytes},
              {"new_chunks", f.new_chunks},
              {"repeated_bytes", f.repeated_bytes},
              {"xorbs", std::move(xorbs)},
              {"shards", json(f.shards)},
              {"file_known", f.known_file.has_value()},
              {"reconstruction", f.known_file ? *f.known_file : json(nullptr)}};
  return doc;
}

void print_file(Context& ctx, const FileScan& f) {
  const Style& s = ctx.style;
  const bool all_known = f.new_bytes == 0;
  ctx.out() << s.paint(f.path, Color::bold) << "  "
            << (all_known ? s.paint("all known", Color::green) : s.paint("new bytes", Color::yellow)) << '\n';
  Fields fl("  ");
  fl.add("Size",
         grouped(f.digest.size) + " bytes (" + human_bytes(f.digest.size) + "), " + count(f.digest.chunks, "chunk"));
  fl.add("File hash", f.digest.file_hash.to_string());
  fl.add("SHA-256", f.digest.sha256.to_hex_bytes());
  fl.add("Known",
         human_bytes(f.known_bytes) + " (" + percent(f.known_bytes, f.digest.size) + "), " +
             count(f.known_chunks, "chunk") + " in " + count(f.xorbs.size(), "xorb") + " of " +
             count(f.shards.size(), "shard"),
         f.known_bytes ? Color::green : Color::none);
  std::string fresh =
      human_bytes(f.new_bytes) + " (" + percent(f.new_bytes, f.digest.size) + "), " + count(f.new_chunks, "chunk");
  if (f.repeated_bytes) fresh += "; " + human_bytes(f.repeated_bytes) + " more repeat new chunks (sent once)";
  fl.add("New", fresh, f.new_bytes ? Color::yellow : Color::none);
  if (f.known_file) {
    const json& d = *f.known_file;
    const std::size_t terms = d.contains("terms") && d["terms"].is_array() ? d["terms"].size() : 0;
    fl.add("Whole file", "known by its file hash: " + count(terms, "term") + " to rebuild it", Color::green);
  } else {
    fl.add("Whole file", "not known by its file hash");
  }
  fl.print(ctx.out(), s);
  if (!f.xorbs.empty()) {
    Table t({{"XORB"}, {"CHUNKS", Table::right}, {"BYTES", Table::right}}, "  ");
    for (const auto& [x, use] : f.xorbs) t.add({x, grouped(use.chunks), human_bytes(use.bytes)});
    t.print(ctx.out(), s);
  }
  if (!f.shards.empty()) {
    Table t({{"SHARD"}}, "  ");
    for (const auto& sh : f.shards) t.add({sh});
    t.print(ctx.out(), s);
  }
}

json skipped_json(const std::vector<SkippedPath>& skipped) {
  json out = json::array();
  for (const auto& s : skipped) out.push_back({{"path", s.path}, {"reason", s.reason}});
  return out;
}

int scan_files(Context& ctx, const std::vector<std::string>& args, std::size_t batch) {
  const UploadSet set = walk_upload_paths(args);
  Scanner scanner(ctx, batch);
  json files = json::array();
  std::uint64_t size = 0, chunks = 0, known = 0, fresh = 0, repeated = 0, known_files = 0, scanned = 0;
  int code = kOk;
  bool first = true;
  std::uint64_t total = 0;
  for (const auto& f : set.files) total += f.size;
  Progress progress(ctx, total, set.files.size());
  for (const auto& [path, file_size] : set.files) {
    std::optional<FileScan> f;
    try {
      f = scanner.scan(path, progress.file(path, file_size));
    } catch (const CliError& e) {
      if (e.code() != kBadInput) throw;  // the daemon, not the file: stop
      ctx.err() << "dedupctl: scan " << e.what() << '\n';
      if (ctx.opt.json) files.push_back({{"path", path}, {"error", e.what()}});
      code = kBadInput;
      continue;
    }
    ++scanned;
    size += f->digest.size;
    chunks += f->digest.chunks;
    known += f->known_bytes;
    fresh += f->new_bytes;
    repeated += f->repeated_bytes;
    known_files += f->known_file ? 1 : 0;
    if (f->new_bytes && code == kOk) code = kNotFound;
    if (ctx.opt.json) {
      files.push_back(file_json(*f));
    } else if (!ctx.opt.quiet) {
      if (!first) ctx.out() << '\n';
      first = false;
      print_file(ctx, *f);
    }
  }
  if (!ctx.opt.json && !ctx.opt.quiet && !set.skipped.empty()) {
    // What an upload of these folders would leave out, and why.
    if (!first) ctx.out() << '\n';
    first = false;
    ctx.out() << ctx.style.paint("Skipped", Color::bold) << "  " << count(set.skipped.size(), "path") << '\n';
    Table t({{"PATH"}, {"WHY"}}, "  ");
    for (const auto& sk : set.skipped) t.add({sk.path, sk.reason});
    t.print(ctx.out(), ctx.style);
  }
  if (ctx.opt.json) {
    print_json(ctx.out(), {{"files", std::move(files)},
                           {"skipped", skipped_json(set.skipped)},
                           {"total",
                            {{"files", scanned},
                             {"size", size},
                             {"chunks", chunks},
                             {"known_bytes", known},
                             {"new_bytes", fresh},
                             {"repeated_bytes", repeated},
                             {"known_files", known_files}}}});
  } else if (!ctx.opt.quiet && scanned > 1) {
    ctx.out() << '\n'
              << ctx.style.paint("Total", Color::bold) << "  " << count(scanned, "file") << ", " << human_bytes(size)
              << ": " << ctx.style.paint(human_bytes(known) + " known", known ? Color::green : Color::none) << " ("
              << percent(known, size) << "), "
              << ctx.style.paint(human_bytes(fresh) + " new", fresh ? Color::yellow : Color::none) << ", "
              << known_files << " known by file hash\n";
  }
  return code;
}

}  // namespace

void add_scan_verbs(CLI::App& app, Action& action) {
  {
    auto files = std::make_shared<std::vector<std::string>>();
    auto* h = app.add_subcommand("hash", "Xet file hash and sha256 of files, chunked as xet-core does (no daemon)");
    h->add_option("FILE", *files, "Files to hash")->required();
    h->callback([&action, files] { action = [files](Context& ctx) { return hash_files(ctx, *files); }; });
  }
  {
    auto files = std::make_shared<std::vector<std::string>>();
    auto batch = std::make_shared<std::size_t>(kScanBatch);
    auto* s = app.add_subcommand("scan", "How much of each file dedupd already knows (chunked as xet-core does)");
    s->add_option("PATH", *files, "Files, or folders walked as an upload of them would be")->required();
    s->add_option("--batch", *batch, "Chunk hashes per request to dedupd")
        ->check(CLI::Range(std::size_t(1), kScanBatch))
        ->capture_default_str();
    s->callback(
        [&action, files, batch] { action = [files, batch](Context& ctx) { return scan_files(ctx, *files, *batch); }; });
  }
}

}  // namespace dedupctl
