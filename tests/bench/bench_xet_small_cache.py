#!/usr/bin/env python3
"""The real Xet client's session start against the number of chunk entries
its shard cache holds, for the steward's small-cache default (issue 31;
docs/XET-ENDPOINT.md, "The client's cache with the endpoint on").

  bench_xet_small_cache.py [--entries N,N,...] [--repeat R] [--dir D]
                           [--json FILE] [--keep] [--quick]

One client cache: a tiny real upload makes its endpoint directory, then for
each size make_xet_cache fills the shard cache with generated shards of
about that many chunk entries (in files of about 48 MiB, as the steward
leaves a cache it merged), replacing the previous size's. At each size the
real client (hf_xet, one process per session) uploads a new 100 kB file R
times cold (the shard files dropped from the page cache first) and R times
warm. Session start = upload call -> first request the CAS stand-in logs,
as in bench_xet_cache.py; each session's own shard is removed again.

Prints a row per size and the least-squares line of the warm medians
(ns per entry, fixed cost). Asserts nothing about timings; fails when a
session fails. Exit 77 without the client.
"""

import json
import os
import platform
import statistics
import subprocess
import sys
import time

import bench_xet_cache as base

KI = 1024
MI = 1024 * 1024
# make_xet_cache sizes a cache by bytes: 64 bytes a chunk entry (its 48-byte
# CAS entry, 16-byte lookup entry).
BYTES_PER_ENTRY = 64


def parse_args():
    p = base.argument_parser(0, 0.0, 3, 600, "0 and 64 Ki entries, 1 session each")
    p.add_argument("--entries", default="0,262144,1048576,4194304,16777216",
                   help="chunk entries of each cache (default 0, 256 Ki, 1 Mi, 4 Mi, 16 Mi)")
    a = p.parse_args()
    a.sizes = [int(x) for x in a.entries.split(",")]
    if a.quick:
        a.sizes, a.repeat = [0, 64 * KI], 1
    return a


def label(n):
    if n == 0:
        return "0"
    if n % MI == 0:
        return "%d Mi" % (n // MI)
    return "%d Ki" % (n // KI) if n % KI == 0 else "{:,}".format(n)


def fill(bench, entries, previous):
    """Replaces the generated shards with about `entries` chunk entries;
    returns make_xet_cache's summary (zero files for 0)."""
    for n in previous:
        os.unlink(os.path.join(bench.shard_cache, n))
    if entries == 0:
        return {"files": 0, "chunk_entries": 0, "bytes": 0}, []
    before = set(os.listdir(bench.shard_cache))
    mib = entries * BYTES_PER_ENTRY / MI
    shards = max(1, round(mib / 48))
    r = subprocess.run([os.environ["MAKE_XET_CACHE"], "--dir", bench.shard_cache, "--shards", str(shards),
                        "--mib", "%.3f" % mib, "--keyed-percent", "0", "--now", str(int(time.time()))],
                       capture_output=True, text=True, check=True)
    added = sorted(n for n in set(os.listdir(bench.shard_cache)) - before if base.SHARD_NAME.match(n))
    return json.loads(r.stdout), added


def measure(bench, entries, tag):
    cold, warm = [], []
    for i in range(bench.args.repeat):
        for is_cold in (True, False):
            small = bench.file("small-%s-%d-%d.bin" % (tag, i, is_cold),
                               bench.h.random_bytes(100_000, 1000 + 7 * entries % 1000 + 2 * i + is_cold))
            if is_cold:
                base.evict(bench.shard_cache)
            s = bench.session([small])
            (cold if is_cold else warm).append(s["session_start_s"])
            print("  %s entries, session %d (%s): start %.3f s" % (label(entries), i + 1,
                                                                  "cold" if is_cold else "warm",
                                                                  s["session_start_s"]), file=sys.stderr)
    return {"cold_s": statistics.median(cold), "warm_s": statistics.median(warm), "cold_all_s": cold,
            "warm_all_s": warm}


def fit(points):
    """Least squares y = a + b x over (x, y)."""
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    b = sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else 0.0
    return my - b * mx, b


def main():
    args = parse_args()
    harness = base.import_harness(args.build)
    harness.require_client()

    bench = base.Bench(args, harness)
    failed = True
    try:
        bench.client.upload(bench.cas.endpoint, bench.file("tiny.bin", harness.random_bytes(1000, 1)))
        bench.endpoint_dir = bench.client.endpoint_dirs()[0]
        bench.shard_cache = os.path.join(bench.endpoint_dir, "shard-cache")
        rows, generated = [], []
        for entries in args.sizes:
            summary, generated = fill(bench, entries, generated)
            stats = base.cache_stats(bench.shard_cache)
            print("%s entries (%d generated, %d files) ..." % (label(entries), summary["chunk_entries"],
                                                             stats["files"]), file=sys.stderr)
            m = measure(bench, entries, label(entries).replace(" ", ""))
            m.update({"entries": entries, "generated_entries": summary["chunk_entries"],
                      "files": stats["files"], "bytes": stats["bytes"]})
            rows.append(m)
        intercept, slope = fit([(r["generated_entries"], r["warm_s"]) for r in rows])
        load = os.getloadavg()
        result = {"hf_xet": harness.hf_xet_version(), "repeat": args.repeat, "rows": rows,
                  "warm_fit": {"fixed_s": intercept, "per_entry_ns": slope * 1e9},
                  "machine": {"cpus": os.cpu_count(), "kernel": platform.release(), "load_end": load},
                  "date_utc": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
        print("| cache entries | shard files | MiB | session start, warm (median of %d) | cold |" % args.repeat)
        print("|---:|---:|---:|---:|---:|")
        for r in rows:
            print("| %s (%s) | %d | %.0f | %s | %s |" % (label(r["entries"]), "{:,}".format(r["generated_entries"]),
                                                      r["files"], r["bytes"] / MI, base.fmt_s(r["warm_s"]),
                                                      base.fmt_s(r["cold_s"])))
        print("\nwarm: %.0f ms + %.0f ns per entry (least squares); hf_xet %s; load average %.2f at the end"
              % (intercept * 1000, slope * 1e9, result["hf_xet"], load[0]))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(result, f, indent=1)
        failed = False
        return 0
    finally:
        bench.close(failed)


if __name__ == "__main__":
    sys.exit(main())
