// libFuzzer target: reading a data.mdb whose pages were scribbled on. A
// small valid index is made once (every kind of page in it); each input is
// a list of scribbles (a page, an offset in it, bytes) laid over a copy,
// and the copy goes through what `dedupd --check` reads before LMDB maps
// anything (the meta pages, then every page of every tree:
// index/page_check.hpp), and, when that passes, through what the daemon
// does with its index: the open, a whole scrub pass in small slices, the
// counts and stats, and lookups. Damage must come back as a value (a
// verdict naming the page, an error, a problem the scrub names): never a
// crash, never a read outside the file, never one of LMDB's assertions
// (the daemon's handler would exec a rebuild, which a fuzzer cannot; here
// an assertion is a file the page walk passed that LMDB could not read, a
// finding), and the scrub's pass must end. The unscribbled index must come
// out clean, every query answered, or the target stops at once.
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "index/file_check.hpp"
#include "index/index.hpp"
#include "index/page_check.hpp"
#include "shard/reader.hpp"
#include "tests/unit/shard/test_support.hpp"

using namespace dedupd;
namespace fs = std::filesystem;

namespace {

constexpr std::uint32_t kPage = 4096;

char g_dir[4096];  // removed at exit

struct Base {
  std::string dir;
  std::vector<std::uint8_t> image;   // data.mdb as made
  std::uint64_t pages = 0;           // pages in use (the newest meta's last page + 1)
  std::vector<shard::Hash> queries;  // raw hashes of chunks indexed
};

// The first `bytes` of data.mdb rewritten: the pages in use (the file
// stays as large as the map, as LMDB wants it).
void write_image(const std::string& path, std::span<const std::uint8_t> bytes) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) std::abort();
  for (std::size_t done = 0; done < bytes.size();) {
    ssize_t n = ::pwrite(fd, bytes.data() + done, bytes.size() - done, off_t(done));
    if (n <= 0) std::abort();
    done += std::size_t(n);
  }
  ::close(fd);
}

std::vector<std::uint8_t> read_image(const std::string& path) {
  std::vector<std::uint8_t> out(fs::file_size(path));
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || ::pread(fd, out.data(), out.size(), 0) != ssize_t(out.size())) std::abort();
  ::close(fd);
  return out;
}

// How far a file got: named by a check before LMDB, refused by the open,
// damage the scrub named (or a query unanswered), or a clean pass with
// every query answered.
enum class Outcome : std::uint8_t { named, not_opened, scrub_found, clean };

Outcome read_as_the_daemon_does(const Base& b) {
  const std::string dir = b.dir + "/run";
  // What every start reads, then the walk of every page.
  for (auto* check : {&index::check_data_file, &index::check_data_file_pages}) {
    const index::DataFileCheck c = check(dir);
    if (c.verdict == index::DataFileCheck::Verdict::ok) continue;
    if (c.problem.empty()) std::abort();  // a verdict says why
    return Outcome::named;
  }
  auto opened = index::Index::open({.dir = dir, .no_sync_for_benchmarks = true});
  if (!opened) return Outcome::not_opened;
  const index::Index& idx = **opened;
  // Small slices: the resumption between them is walked too.
  index::Index::ScrubPosition pos;
  bool found_damage = false;
  for (std::size_t slices = 0;; ++slices) {
    // A pass over an index of a few thousand items: far fewer slices.
    if (slices > 100'000) {
      std::fprintf(stderr, "the scrub's pass does not end (%llu items checked)\n", (unsigned long long)pos.items);
      std::abort();
    }
    auto found = idx.scrub(pos, 7);
    found_damage = !found || !found->empty();
    if (found_damage || pos.done) break;
  }
  (void)idx.counts();
  (void)idx.stats();
  index::BatchResult r;
  auto looked = idx.lookup_batch(b.queries, r);
  if (found_damage || !looked || r.size() != b.queries.size()) return Outcome::scrub_found;
  for (std::size_t i = 0; i < r.size(); ++i)
    if (r.of(i).empty()) return Outcome::scrub_found;
  return Outcome::clean;
}

// Shards that give every kind of page: xorbs large enough for overflow
// pages, chunk tables of several leaves under a branch (both of them),
// a keyed shard, files, duplicates in sub-pages and in a sub-database,
// and a free list.
Base make_base() {
  Base b;
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/fuzz_index_pages.XXXXXX";
  if (!::mkdtemp(templ.data())) std::abort();
  b.dir = templ;
  std::snprintf(g_dir, sizeof g_dir, "%s", templ.c_str());
  std::atexit([] {
    std::error_code ec;
    fs::remove_all(g_dir, ec);
  });
  namespace st = shard::testing;
  {
    auto opened = index::Index::open({.dir = b.dir + "/made", .no_sync_for_benchmarks = true});
    if (!opened) std::abort();
    auto& idx = **opened;
    auto add = [&](const shard::ShardWriter& w, const shard::WriteOptions& o) {
      auto bytes = w.write(o);
      auto view = shard::ShardView::parse(bytes);
      if (!view || !idx.ingest(*view, {}, {.now = 1'750'000'000})) std::abort();
    };
    st::TestXorb a = st::make_xorb(1, 900), c = st::make_xorb(2, 700);
    shard::ShardWriter w1;
    w1.add_xorb(a.record);
    w1.add_xorb(c.record);
    w1.add_file(st::make_file(3, {{&a, 0, 40}, {&c, 5, 9}}, true, true));
    add(w1, {});
    // Its entries in the main chunk table, the later ones in the recent one.
    if (!idx.merge_recent()) std::abort();
    const shard::Key key = st::seeded_hash(4);
    st::TestXorb k = st::make_xorb(5, 120, key);
    shard::ShardWriter w2;
    w2.add_xorb(k.record);
    shard::WriteOptions o;
    o.footer.chunk_hash_key = key;
    o.footer.creation_timestamp = 1'750'000'000;
    o.footer.key_expiry = 1'760'000'000;
    add(w2, o);
    // One xorb in 80 shards: its 80 shard hashes are a sub-database of
    // LEAF2 pages in xorb_shards, not a sub-page.
    st::TestXorb shared = st::make_xorb(6, 16);
    for (std::uint64_t i = 0; i < 80; ++i) {
      shard::ShardWriter w;
      w.add_xorb(shared.record);
      shard::WriteOptions each;
      each.footer.creation_timestamp = 1'750'000'000 + i;
      add(w, each);
    }
    // A chunk in 16 of each xorb, in every chunk table's leaves.
    for (const auto* x : {&a, &c, &k, &shared})
      for (std::size_t i = 0; i < x->raw.size(); i += 16) b.queries.push_back(x->raw[i]);
  }
  b.image = read_image(b.dir + "/made/data.mdb");
  index::DataFileCheck check = index::check_data_file(b.dir + "/made");
  if (check.verdict != index::DataFileCheck::Verdict::ok || check.page_size != kPage) std::abort();
  b.pages = check.last_page + 1;
  fs::create_directories(b.dir + "/run");
  write_image(b.dir + "/run/data.mdb", b.image);
  // Nothing scribbled, nothing found: else every input proves nothing.
  if (read_as_the_daemon_does(b) != Outcome::clean) {
    std::fprintf(stderr, "the index as made does not read clean\n");
    std::abort();
  }
  return b;
}

const Base& the_base() {
  static const Base b = make_base();
  return b;
}

// Scribbles: page (2 bytes, modulo the pages in use), offset in the page
// (2 bytes), length (1 byte, 1..32), then that many bytes.
std::vector<std::uint8_t> scribbled(const Base& b, const std::uint8_t* data, std::size_t size) {
  std::vector<std::uint8_t> image(b.image.begin(), b.image.begin() + std::ptrdiff_t(b.pages * kPage));
  std::size_t at = 0;
  while (at + 5 <= size) {
    const std::uint64_t page = (std::uint64_t(data[at]) | std::uint64_t(data[at + 1]) << 8) % b.pages;
    const std::uint32_t offset = (std::uint32_t(data[at + 2]) | std::uint32_t(data[at + 3]) << 8) % kPage;
    std::size_t length = data[at + 4] % 32 + 1;
    at += 5;
    length = std::min({length, size - at, std::size_t(kPage - offset)});
    std::memcpy(image.data() + page * kPage + offset, data + at, length);
    at += length;
  }
  return image;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const Base& b = the_base();
  const std::vector<std::uint8_t> image = scribbled(b, data, size);
  write_image(b.dir + "/run/data.mdb", image);
  (void)read_as_the_daemon_does(b);
  return 0;
}
