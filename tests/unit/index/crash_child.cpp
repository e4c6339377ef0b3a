// Child of the crash test: ingests the crash shard sequence from argv[2] on,
// removing some as it goes, and prints "A i" / "R i" on stdout after each
// acknowledged (committed) ingest / removal, until it is killed or, with
// argv[3], has ingested shard argv[3] (a test that wants exactly those
// writes: a parent slow to kill it would otherwise see later ones, such as
// the removal of shard i two ingests on).
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "index/index.hpp"
#include "tests/unit/index/crash_common.hpp"

using namespace dedupd::index;

static void say(char what, std::uint64_t i) {
  char line[32];
  int n = std::snprintf(line, sizeof line, "%c %llu\n", what, static_cast<unsigned long long>(i));
  if (write(1, line, std::size_t(n)) != n) _exit(5);
}

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) return 64;
  const std::uint64_t last = argc == 4 ? std::strtoull(argv[3], nullptr, 10) : UINT64_MAX;
  Options o;
  o.dir = argv[1];
  o.map_size = 256 * 1024;   // grows while being killed, too
  o.merge_threshold = 3000;  // merges often, and gets killed in them
  auto idx = Index::open(o);
  if (!idx) {
    std::fprintf(stderr, "crash child: %s\n", idx.error().to_string().c_str());
    return 2;
  }
  for (std::uint64_t i = std::strtoull(argv[2], nullptr, 10);; ++i) {
    auto c = gen::crash_shard(i);
    auto r = (*idx)->ingest(*c.shard.view, SourceInfo{"/crash/" + std::to_string(i), c.shard.bytes.size(), 0});
    if (!r) {
      std::fprintf(stderr, "crash child: %s\n", r.error().to_string().c_str());
      return 3;
    }
    say('A', i);
    if (i == last) return 0;
    if (gen::crash_removes_after(i)) {
      auto victim = gen::crash_shard(i - 2);
      auto rm = (*idx)->remove(victim.shard.hash);
      if (!rm) {
        std::fprintf(stderr, "crash child: %s\n", rm.error().to_string().c_str());
        return 4;
      }
      say('R', i - 2);
    }
  }
}
