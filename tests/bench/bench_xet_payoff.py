#!/usr/bin/env python3
"""What the local Xet endpoint buys a client with a small shard cache, side
by side in one run (issue 31; docs/PERFORMANCE.md, "The local Xet endpoint").

  bench_xet_payoff.py [--shards N] [--mib M] [--oldest-mib O] [--cap C]
                      [--repeat R] [--dir D] [--json FILE] [--keep] [--quick]

1. A history: the real client (huggingface_hub's HfApi.upload_file with
   hf_xet) uploads the "oldest" file (O MiB, random) to the Hub and CAS
   stand-in over HTTPS, then make_xet_cache adds N generated upload sessions
   of about M MiB in all (default 700 and 1,900 MiB: about 31 M chunk
   entries) beside its real shard. The real upload can only be made now, so
   the generator's clock is set 20 days ahead: every generated session is
   newer than the oldest file, in creation and in expiry.
2. Unmanaged: R sessions each uploading a new 100 kB file straight to the
   stand-in, on a cache evicted from the page cache (cold) and right after
   (warm); session start = the upload call -> the stand-in's first CAS
   request. Then a re-upload of the oldest file (chunk bytes the stand-in
   received). Shards these sessions add are removed again.
3. dedupd first watches the cache plainly until it has indexed every
   shard, then restarts managing it (manage: xet-cache, max_chunk_entries
   C, default 1 Mi) until the steward holds the cap; the evicted shards
   must still be in dedupd's index. dedupd stops.
4. Small cache alone: the same sessions and re-upload straight to the
   stand-in on the small cache (their shards removed again).
5. Small cache + endpoint: the endpoint (nginx from the shipped template,
   started by the .deb's script) in front of the stand-in, dedupd managing
   the cache again behind it; the same with HF_ENDPOINT = the endpoint.
   Last, because the shards these sessions leave hold the oldest file.

The client names its cache directory after the CAS URL, so the cache moves
between the stand-in's name and the endpoint's between phases (a rename,
with nothing running on it). It fails when a session fails, when dedupd
lost a shard it indexed, or when the cap does not hold; the goals (>= 10x
faster start, 0 bytes re-sent with the endpoint) are printed beside the
figures, not asserted. Exit 77 without the client or nginx.

Programs come from the environment (as ctest sets it) or from --build:
DEDUPD, DEDUPCTL, MAKE_XET_CACHE, XET_PYTHON.
"""

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import bench_xet_cache as base
import bench_xet_endpoint as ep_bench

TOKEN = "hf_benchHubToken0123456789abcdef"
ACCESS_TOKEN = "xet_benchCasToken0123456789abcdef"
HUB_REPO = "dedupd/bench-payoff"
DAY = 24 * 3600


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--shards", type=int, default=700, help="generated sessions (default 700)")
    p.add_argument("--mib", type=float, default=1900.0, help="MiB of generated shards (default 1900)")
    p.add_argument("--keyed-percent", type=int, default=15, help="share of global-dedup replies (default 15)")
    p.add_argument("--oldest-mib", type=int, default=16, help="size of the oldest file (default 16)")
    p.add_argument("--cap", type=int, default=1 << 20, help="dedupd's xet_cache.max_chunk_entries (default 1 Mi)")
    p.add_argument("--repeat", type=int, default=3, help="small-file sessions per phase, cold and warm (median)")
    base.scratch_options(p, "30 shards, 6 MiB, a 2 MiB oldest file, cap 20,000, 1 session: the ctest smoke")
    p.add_argument("--timeout", type=float, default=1800, help="seconds to wait for dedupd")
    a = p.parse_args()
    if a.quick:
        a.shards, a.mib, a.oldest_mib, a.cap, a.repeat = 30, 6.0, 2, 20_000, 1
    return a


class Payoff:
    def __init__(self, args, h):
        self.args, self.h = args, h
        self.root = tempfile.mkdtemp(prefix="dedupd-bench-payoff-", dir=args.dir)
        self.procs = []
        self.dedupd = self.endpoint = None
        self.tls = h.make_test_ca(os.path.join(self.root, "tls"))
        self.hub = h.HubStandin(os.path.join(self.root, "hub"), self.tls, TOKEN, ACCESS_TOKEN)
        self.procs.append(self.hub)
        h.HubClient(os.path.join(self.root, "setup"), self.hub.endpoint, TOKEN, self.tls["ca"]).run(
            "create-repo", HUB_REPO)
        self.home = os.path.join(self.root, "home")
        self.cache = os.path.join(self.home, "xet")
        self.files = os.path.join(self.root, "files")
        self.uploads = 0

    def close(self, failed):
        for p in reversed(self.procs):
            p.stop()
        if failed or self.args.keep:
            print("(kept %s)" % self.root, file=sys.stderr)
        else:
            shutil.rmtree(self.root, ignore_errors=True)

    def user(self, endpoint):
        return self.h.HubClient(self.home, endpoint, TOKEN, self.tls["ca"])

    def upload(self, endpoint, path):
        # A new name in the repository each time: the Hub skips a file it
        # already holds at that path, and then nothing would be measured.
        self.uploads += 1
        return self.user(endpoint).run("upload-file", HUB_REPO, "%d-%s" % (self.uploads, os.path.basename(path)),
                                       path)

    def endpoint_dir(self):
        dirs = [d for d in os.listdir(self.cache) if os.path.isdir(os.path.join(self.cache, d, "shard-cache"))]
        if len(dirs) != 1:
            raise AssertionError("expected one endpoint directory in the client's cache: %s" % dirs)
        return os.path.join(self.cache, dirs[0])

    def shard_cache(self):
        return os.path.join(self.endpoint_dir(), "shard-cache")

    def build_history(self):
        a = self.args
        self.oldest = ep_bench.random_file(os.path.join(self.files, "oldest.bin"), a.oldest_mib)
        self.upload(self.hub.endpoint, self.oldest)
        sc = self.shard_cache()
        self.real_shards = sorted(n for n in os.listdir(sc) if base.SHARD_NAME.match(n))
        r = subprocess.run([os.environ["MAKE_XET_CACHE"], "--dir", sc, "--shards", str(a.shards), "--mib",
                            str(a.mib), "--keyed-percent", str(a.keyed_percent),
                            "--now", str(int(time.time()) + 20 * DAY)],
                           capture_output=True, text=True, check=True)
        self.generated = json.loads(r.stdout)
        self.entries = self.generated["chunk_entries"] + sum(self.inspect(os.path.join(sc, n))["counts"]["chunks"]
                                                             for n in self.real_shards)

    def inspect(self, path):
        return json.loads(subprocess.run([os.environ["DEDUPCTL"], "--json", "inspect", path], capture_output=True,
                                         text=True, check=True).stdout)

    def session(self, endpoint, path, keep_shards):
        sc = self.shard_cache()
        before = set(os.listdir(sc))
        out = self.upload(endpoint, path)
        with open(os.path.join(self.hub.root, "requests.jsonl")) as f:
            times = [json.loads(line)["t"] for line in f]
        after_start = [t for t in times if t >= out["t_start"]]
        if not after_start:
            raise AssertionError("the stand-in logged no CAS request of this session")
        out["session_start_s"] = min(after_start) - out["t_start"]
        if not keep_shards:
            # So that each session starts on the same cache (as in
            # bench_xet_cache.py); with the steward on they stay, for it.
            for n in set(os.listdir(sc)) - before:
                if base.SHARD_NAME.match(n):
                    os.unlink(os.path.join(sc, n))
        return out

    def measure(self, phase, endpoint, keep_shards=False, entries=None):
        starts = {"cold": [], "warm": []}
        for i in range(self.args.repeat):
            for kind in ("cold", "warm"):
                small = self.h.write(os.path.join(self.files, "small-%s-%d-%s.bin" % (phase, i, kind)),
                                     self.h.random_bytes(100_000, 300 + 2 * i + (kind == "warm")))
                if kind == "cold":
                    base.evict(self.shard_cache())
                s = self.session(endpoint, small, keep_shards)
                starts[kind].append(s["session_start_s"])
                print("  %s session %d (%s): start %.3f s, upload %.3f s"
                      % (phase, i + 1, kind, s["session_start_s"], s["seconds"]), file=sys.stderr)
        stats = base.cache_stats(self.shard_cache())
        local_before = self.endpoint.answered_locally() if self.endpoint else 0
        self.hub.reset()
        self.session(endpoint, self.oldest, keep_shards)
        sent = self.hub.state()["xorb_chunk_bytes"]
        local = (self.endpoint.answered_locally(wait=True) - local_before) if self.endpoint else 0
        print("  %s: the oldest file re-sent %d chunk bytes of %d (%d chunk queries answered by dedupd)"
              % (phase, sent, os.path.getsize(self.oldest), local), file=sys.stderr)
        return {"session_start_s": statistics.median(starts["warm"]),
                "cold_session_start_s": statistics.median(starts["cold"]),
                "session_start_all_s": starts, "cache_files": stats["files"], "cache_bytes": stats["bytes"],
                "chunk_entries": entries or self.entries_now(), "oldest_sent": sent, "answered_by_dedupd": local}

    def entries_now(self):
        sc = self.shard_cache()
        total = 0
        for n in os.listdir(sc):
            if base.SHARD_NAME.match(n):
                try:
                    total += self.inspect(os.path.join(sc, n))["counts"]["chunks"]
                except subprocess.CalledProcessError:
                    pass  # merged away by the steward meanwhile: its entries are in the merged file
        return total

    def start_dedupd(self, managed):
        """dedupd on the client's cache: a plain watch, or managed with the
        small cap. Its state stays from one start to the next."""
        self.stop_dedupd()
        root = os.path.join(self.root, "dedupd")
        os.makedirs(root, exist_ok=True)
        if managed:
            watch = {"path": self.cache, "recursive": True, "manage": "xet-cache"}
            extra = "xet_cache:\n  interval: 1s\n  replaced_grace: 0s\n  max_chunk_entries: %d\n" % self.args.cap
        else:
            watch, extra = self.cache, ""
        self.dedupd = self.h.Dedupd(root, [watch], extra)
        self.procs.append(self.dedupd)

    def stop_dedupd(self):
        if self.dedupd:
            self.dedupd.stop()
            self.procs.remove(self.dedupd)
            self.dedupd = None

    def wait_capped(self):
        """The steward's status for the cache once a pass left it within
        the cap with nothing waiting to be deleted."""
        def capped():
            names = {os.path.realpath(self.endpoint_dir()), os.path.realpath(self.shard_cache()),
                     os.path.basename(self.endpoint_dir())}
            for c in self.dedupd.json("/v1/status").get("xet_caches") or []:
                if (c["endpoint"] in names or os.path.realpath(c["endpoint"]) in names) and c["last_pass"] \
                        and c["chunk_entries"] <= c["max_chunk_entries"] and c["pending_deletions"] == 0:
                    return c
            return None
        return self.h.wait_for("the steward to hold the cap", capped, timeout=self.args.timeout, interval=1)

    def index_then_cap(self):
        """dedupd indexes the whole history as a plain watch, so the
        steward cannot delete a shard before it is indexed; then it restarts
        managing the cache, and the evicted shards must stay indexed."""
        t0 = time.monotonic()
        self.start_dedupd(managed=False)
        files = base.cache_stats(self.shard_cache())["files"]

        def indexed():
            s = self.dedupd.json("/v1/stats")
            return s if s["shards"]["live"] + s["shards"]["rejected"] >= files else None

        stats = self.h.wait_for("dedupd to index %d shards" % files, indexed, timeout=self.args.timeout,
                                interval=1)
        index_s = time.monotonic() - t0
        real = set(self.real_shards)
        real_hashes = [d["hash"] for d in self.dedupd.json("/v1/shards?state=live")["shards"]
                       if any(os.path.basename(p) in real for p in d["paths"])]
        print("  indexed %d shards (%d rejected), %d chunk entries, in %.0f s"
              % (stats["shards"]["live"], stats["shards"]["rejected"], stats["chunks"], index_s), file=sys.stderr)
        t1 = time.monotonic()
        self.start_dedupd(managed=True)
        cache = self.wait_capped()
        after = self.dedupd.json("/v1/stats")
        real_live = [h for h in real_hashes if self.dedupd.json("/v1/shard/" + h)["state"] == "live"]
        self.stop_dedupd()
        return {"index_s": index_s, "cap_s": time.monotonic() - t1, "indexed": stats, "after_cap": after,
                "xet_cache": cache, "real_shards_indexed": len(real_hashes),
                "real_shards_still_indexed": len(real_live)}

    def start_endpoint(self):
        """nginx in front of the stand-in, dedupd (managed, as it left the
        cache) behind it."""
        socket_path = os.path.join(self.root, "dedupd", "dedupd.sock")  # what harness.Dedupd names it
        self.endpoint = Endpoint(self.h, os.path.join(self.root, "endpoint"), self.hub, socket_path,
                                 self.tls["ca"])
        self.procs.append(self.endpoint)
        # The client names its cache directory after the CAS URL: learn the
        # endpoint's name from a throwaway client, then move the history.
        probe = os.path.join(self.root, "probe")
        self.h.HubClient(probe, self.endpoint.endpoint, TOKEN, self.tls["ca"]).run(
            "upload-file", HUB_REPO, "probe.bin",
            self.h.write(os.path.join(self.files, "probe.bin"), self.h.random_bytes(100_000, 7)))
        names = [d for d in os.listdir(os.path.join(probe, "xet"))
                 if os.path.isdir(os.path.join(probe, "xet", d, "shard-cache"))]
        os.rename(self.endpoint_dir(), os.path.join(self.cache, names[0]))
        self.start_dedupd(managed=True)
        self.wait_capped()


class Endpoint(ep_bench.Endpoint):
    def answered_locally(self, wait=False):
        """Chunk queries dedupd answered (one upstream status, 200); nginx
        writes a line as the request ends, so the last ones may lag."""
        def count():
            try:
                with open(os.path.join(self.root, "logs", "access.log")) as f:
                    return sum(1 for line in f if '"GET /v1/chunks/' in line and "upstream_status=200\n" in line
                               and "upstream=unix:" in line)
            except OSError:
                return 0
        if wait:
            time.sleep(0.5)
        return count()


def table(r):
    u, e, s = r["unmanaged"], r["endpoint"], r["small_alone"]
    fmt, count = base.fmt_s, base.count
    ratio = lambda a, b: "%.1fx faster" % (a / b) if b else "n/a"
    rows = [
        ("chunk entries in the client's shard cache", count(u["chunk_entries"]), count(e["chunk_entries"]),
         count(s["chunk_entries"]), "", ""),
        ("shard-cache files", count(u["cache_files"]), count(e["cache_files"]), count(s["cache_files"]), "", ""),
        ("session start, cold (upload call -> first CAS request), median of %d" % r["repeat"],
         fmt(u["cold_session_start_s"]), fmt(e["cold_session_start_s"]), fmt(s["cold_session_start_s"]),
         ratio(u["cold_session_start_s"], e["cold_session_start_s"]), ">= 10x"),
        ("session start, warm, median of %d" % r["repeat"], fmt(u["session_start_s"]), fmt(e["session_start_s"]),
         fmt(s["session_start_s"]), ratio(u["session_start_s"], e["session_start_s"]), ">= 10x"),
        ("re-upload of the oldest file (%d MiB): chunk bytes sent" % r["oldest_mib"], count(u["oldest_sent"]),
         count(e["oldest_sent"]), count(s["oldest_sent"]), "", "0 with the endpoint"),
    ]
    return base.markdown_table(("metric", "unmanaged cache", "small cache + endpoint", "small cache alone", "ratio",
                                "goal"), ("---", "---:", "---:", "---:", "---:", "---"), rows)


def main():
    args = parse_args()
    harness = base.import_harness(args.build)
    harness.require_client()
    harness.find_nginx()

    load_start = os.getloadavg()
    bench = Payoff(args, harness)
    failed = True
    try:
        print("the history: the oldest file, then %d generated sessions ..." % args.shards, file=sys.stderr)
        bench.build_history()
        print("unmanaged (%d chunk entries) ..." % bench.entries, file=sys.stderr)
        # Its sessions' shards are removed again: the history's count holds.
        unmanaged = bench.measure("unmanaged", bench.hub.endpoint, entries=bench.entries)
        print("dedupd indexing, then capping the cache at %d entries ..." % args.cap, file=sys.stderr)
        steward = bench.index_then_cap()
        # Alone first: the endpoint's sessions leave shards holding the
        # oldest file (the reply, the session), which the steward keeps.
        print("small cache alone (dedupd stopped) ...", file=sys.stderr)
        alone = bench.measure("alone", bench.hub.endpoint)
        print("small cache + endpoint ...", file=sys.stderr)
        bench.start_endpoint()
        with_endpoint = bench.measure("endpoint", bench.endpoint.endpoint, keep_shards=True)
        load = os.getloadavg()
        result = {
            "hf_xet": harness.hf_xet_version(), "nginx": ep_bench.nginx_version(harness.find_nginx()),
            "repeat": args.repeat, "oldest_mib": args.oldest_mib, "cap": args.cap,
            "generated": bench.generated, "real_shards": len(bench.real_shards), "entries": bench.entries,
            "unmanaged": unmanaged, "endpoint": with_endpoint, "small_alone": alone, "dedupd": steward,
            "machine": {"cpus": os.cpu_count(), "kernel": platform.release(), "load_start": load_start,
                        "load_end": load},
            "date_utc": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        }
        print(table(result))
        x = steward["xet_cache"]
        print("\nhistory: 1 real upload (%d shard) + %d generated sessions (%d keyed), %s chunk entries; "
              "dedupd indexed it in %.0f s, then the steward held the cap of %s in %.0f s (%d merges, %d evicted); "
              "hf_xet %s, %s; load average %.2f at the start, %.2f at the end"
              % (len(bench.real_shards), bench.generated["files"], bench.generated["keyed"],
                 base.count(bench.entries), steward["index_s"], base.count(args.cap), steward["cap_s"],
                 x["merges"], x["evicted"], result["hf_xet"], result["nginx"], load_start[0], load[0]))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(result, f, indent=1)
        problems = []
        indexed, capped = steward["indexed"]["shards"], steward["after_cap"]["shards"]
        if capped["removed"] or capped["live"] < indexed["live"]:
            problems.append("the steward's evictions took shards out of dedupd's index: %s, before %s"
                            % (capped, indexed))
        if not steward["real_shards_indexed"] or \
                steward["real_shards_still_indexed"] != steward["real_shards_indexed"]:
            problems.append("the oldest file's shard is not in dedupd's index after the eviction")
        if x["chunk_entries"] > args.cap:
            problems.append("the steward left %d chunk entries, past the cap of %d" % (x["chunk_entries"], args.cap))
        failed = bool(problems)
        return base.report("bench_xet_payoff", problems)
    finally:
        bench.close(failed)


if __name__ == "__main__":
    sys.exit(main())
