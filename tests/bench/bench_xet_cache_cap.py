#!/usr/bin/env python3
"""The real Xet client on a shard cache past its chunk-index cap, without and
with dedupd as the cache's steward (issue 24, "Proof with the real client":
70 Mi entries; docs/PERFORMANCE.md, "Past the client's entry cap").

  bench_xet_cache_cap.py [--shards N] [--mib M] [--keyed-percent P] [--cap C]
                         [--repeat R] [--dir D] [--json FILE] [--keep] [--quick]

1. The cache: a tiny real upload makes the client's endpoint directory, a
   real 4 MiB file ("first") is uploaded, make_xet_cache adds N shards of
   about M MiB in all (default 1,500 and 4,600 MiB: about 75 M chunk
   entries, past the client's 64 Mi), then a second real file ("last").
   The generated shards are older than both real ones (created within the
   last 20 days, as on a host that uploads every day).
2. Without dedupd: R sessions uploading a new 100 kB file (session start,
   whole upload, the client's peak memory), then a session each re-uploading
   "last" and "first" (chunk bytes the CAS stand-in received). Shards these
   sessions add are removed again.
3. dedupd manages the cache with its defaults (the client's own caps: 64 Mi
   chunk entries, 16 GB); once it has consolidated the cache and brought it
   under the caps, the same again with dedupd running.

Nothing here asserts a timing: it fails when a session fails, when dedupd
leaves the cache past its entry cap, or when a real file sends more bytes
with dedupd than without. Exit 77 without the client. Needs about 10 GB of
scratch space (the cache, dedupd's index) and 3 GB of memory for the client.
"""

import json
import os
import platform
import statistics
import subprocess
import sys
import time

import bench_xet_cache as base



def parse_args():
    p = base.argument_parser(1500, 4600.0, 3, 3600, "40 shards, 4 MiB, cap 50,000, 1 session")
    p.add_argument("--cap", type=int, default=0,
                   help="the client's entry cap (HF_XET_SHARD_CHUNK_INDEX_TABLE_MAX_SIZE) and dedupd's "
                        "max_chunk_entries (default: theirs, 64 Mi)")
    a = p.parse_args()
    if a.quick:
        a.shards, a.mib, a.cap, a.repeat = 40, 4.0, 50_000, 1
    return a


def chunk_entries(paths):
    """What the client's chunk index takes from these shards (dedupctl)."""
    total = 0
    for p in paths:
        doc = json.loads(subprocess.run([os.environ["DEDUPCTL"], "--json", "inspect", p], capture_output=True,
                                        text=True, check=True).stdout)
        total += doc["counts"]["chunks"]
    return total


class CapBench(base.Bench):
    def __init__(self, args, harness):
        super().__init__(args, harness)
        if args.cap:
            self.client = harness.Client(self.cache, {"HF_XET_SHARD_CHUNK_INDEX_TABLE_MAX_SIZE": str(args.cap)})

    def build_cache(self):
        h = self.h
        self.client.upload(self.cas.endpoint, self.file("tiny.bin", h.random_bytes(1000, 1)))
        self.first = self.file("first.bin", h.random_bytes(4 << 20, 41))
        self.client.upload(self.cas.endpoint, self.first)
        self.endpoint_dir = self.client.endpoint_dirs()[0]
        self.shard_cache = os.path.join(self.endpoint_dir, "shard-cache")
        real = set(os.listdir(self.shard_cache))
        r = subprocess.run([os.environ["MAKE_XET_CACHE"], "--dir", self.shard_cache, "--shards",
                            str(self.args.shards), "--mib", str(self.args.mib), "--keyed-percent",
                            str(self.args.keyed_percent), "--now", str(int(time.time()))],
                           capture_output=True, text=True, check=True)
        self.generated = json.loads(r.stdout)
        generated = set(os.listdir(self.shard_cache)) - real
        self.last = self.file("last.bin", h.random_bytes(4 << 20, 42))
        self.client.upload(self.cas.endpoint, self.last)
        real = [os.path.join(self.shard_cache, n) for n in set(os.listdir(self.shard_cache)) - generated
                if base.SHARD_NAME.match(n)]
        self.generated["real_shards"] = len(real)
        self.entries_before = self.generated["chunk_entries"] + chunk_entries(real)

    def resend(self, path):
        self.cas.reset()
        self.session([path])
        return self.cas.state()["xorb_chunk_bytes"]

    def measure(self, phase):
        starts, uploads, cold_starts, rss = [], [], [], []
        for i in range(self.args.repeat):
            for cold in (True, False):
                small = self.file("small-%s-%d-%d.bin" % (phase, i, cold),
                                  self.h.random_bytes(100_000, 200 + 2 * i + cold))
                if cold:
                    base.evict(self.shard_cache)
                s = self.session([small])
                (cold_starts if cold else starts).append(s["session_start_s"])
                if not cold:
                    uploads.append(s["upload_s"])
                rss.append(s["max_rss_kib"])
                print("  %s session %d (%s): start %.2f s, upload %.2f s, peak memory %d MiB"
                      % (phase, i + 1, "cold" if cold else "warm", s["session_start_s"], s["upload_s"],
                         s["max_rss_kib"] // 1024), file=sys.stderr)
        stats = base.cache_stats(self.shard_cache)
        out = {
            "session_start_s": statistics.median(starts), "cold_session_start_s": statistics.median(cold_starts),
            "upload_s": statistics.median(uploads), "max_rss_kib": max(rss),
            "cache_files": stats["files"], "cache_bytes": stats["bytes"],
            "last_sent": self.resend(self.last), "first_sent": self.resend(self.first),
        }
        print("  %s: last.bin sent %d bytes, first.bin %d" % (phase, out["last_sent"], out["first_sent"]),
              file=sys.stderr)
        return out


def table(r):
    b, a = r["before"], r["after"]
    mib = lambda kib: "%d MiB" % (kib // 1024)
    rows = [
        ("chunk entries in the cache (the client indexes %s)" % r["client_cap"], base.count(r["entries_before"]),
         base.count(r["entries_after"]), ""),
        ("session start, warm (upload call -> first CAS request)", base.fmt_s(b["session_start_s"]),
         base.fmt_s(a["session_start_s"]), base.ratio(b["session_start_s"], a["session_start_s"])),
        ("session start, cold", base.fmt_s(b["cold_session_start_s"]), base.fmt_s(a["cold_session_start_s"]),
         base.ratio(b["cold_session_start_s"], a["cold_session_start_s"])),
        ("whole upload of a 100 kB file, warm", base.fmt_s(b["upload_s"]), base.fmt_s(a["upload_s"]),
         base.ratio(b["upload_s"], a["upload_s"])),
        ("client's peak memory (Python + hf_xet)", mib(b["max_rss_kib"]), mib(a["max_rss_kib"]),
         base.ratio(b["max_rss_kib"], a["max_rss_kib"])),
        ("shard-cache files", base.count(b["cache_files"]), base.count(a["cache_files"]), ""),
        ("shard-cache bytes", base.count(b["cache_bytes"]), base.count(a["cache_bytes"]), ""),
        ("re-upload of the newest real file: chunk bytes sent", base.count(b["last_sent"]),
         base.count(a["last_sent"]), ""),
        ("re-upload of the real file older than the generated shards", base.count(b["first_sent"]),
         base.count(a["first_sent"]), ""),
    ]
    return base.markdown_table(("metric", "without dedupd", "with dedupd", "ratio"), ("---", "---:", "---:", "---:"),
                               rows)


def main():
    args = parse_args()
    harness = base.import_harness(args.build)
    harness.require_client()

    bench = CapBench(args, harness)
    failed = True
    try:
        no_steward = base.steward_config_error(os.path.join(bench.root, "probe"))
        if no_steward is not None:
            print("bench_xet_cache_cap: this dedupd does not manage Xet caches:\n  " + no_steward, file=sys.stderr)
            failed = False
            return harness.SKIP
        print("building the cache ...", file=sys.stderr)
        bench.build_cache()
        print("without dedupd (%d chunk entries) ..." % bench.entries_before, file=sys.stderr)
        before = bench.measure("before")
        print("dedupd indexing, consolidating and capping ...", file=sys.stderr)
        status = bench.consolidate(also=lambda c: c["chunk_entries"] <= c["max_chunk_entries"],
                                   xet_cache="  max_chunk_entries: %d\n" % args.cap if args.cap else "")
        print("with dedupd ...", file=sys.stderr)
        after = bench.measure("after")
        load = os.getloadavg()
        result = {
            "hf_xet": harness.hf_xet_version(), "generated": bench.generated, "repeat": args.repeat,
            "entries_before": bench.entries_before, "entries_after": status["chunk_entries"],
            "client_cap": base.count(args.cap) if args.cap else "64 Mi",
            "before": before, "after": after, "dedupd": status,
            "machine": {"cpus": os.cpu_count(), "kernel": platform.release(), "load_end": load},
            "date_utc": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        }
        print(table(result))
        print("\ncache: %d generated shards (%d keyed) + %d real; hf_xet %s; dedupd ready after %.0f s "
              "(%d merges, %d evicted); load average %.2f at the end"
              % (bench.generated["files"], bench.generated["keyed"], bench.generated["real_shards"],
                 result["hf_xet"], status["consolidation_s"], status["merges"], status.get("evicted", 0), load[0]))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(result, f, indent=1)
        problems = []
        if status["chunk_entries"] > status["max_chunk_entries"]:
            problems.append("the cache has %d chunk entries, past dedupd's cap of %d"
                            % (status["chunk_entries"], status["max_chunk_entries"]))
        for name in ("last_sent", "first_sent"):
            if after[name] > before[name]:
                problems.append("%s: %d bytes with dedupd, %d without" % (name, after[name], before[name]))
        failed = bool(problems)
        return base.report("bench_xet_cache_cap", problems)
    finally:
        bench.close(failed)


if __name__ == "__main__":
    sys.exit(main())
