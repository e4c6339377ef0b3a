#!/usr/bin/env python3
"""Query latency while dedupd takes in a large Xet client cache and its
steward makes its first pass over it, against the same queries idle
(issue 30; docs/PERFORMANCE.md, "Queries while a large cache is taken in and stewarded").

  bench_xet_cache_pass.py [--gib G] [--shards N] [--idle-s S] [--rate Q]
                          [--dir D] [--json FILE] [--keep] [--quick]

1. make_xet_cache writes a cache of about G GiB (N shards) under
   <scratch>/xet/hub/shard-cache, and a small one (unkeyed shards only)
   into <scratch>/known; `dedupctl inspect --chunks` lists the chunks of
   the known shards, the queries' known answers.
2. Idle: dedupd watching only `known` answers GET /v1/chunk/<hash>, one
   query every 1/Q s on one kept-alive connection, for S seconds.
3. First pass: dedupd restarted with the cache added as a `manage: xet-cache`
   watch entry (same index), under a watchdog (WATCHDOG_USEC, and a
   NOTIFY_SOCKET this script reads); the same queries run until the cache
   is indexed and its steward has settled (nothing pending, the file count
   steady over three passes). Each query is tagged with what the daemon
   was doing (GET /v1/status, polled): taking in shards, the steward's
   pass running, both, or neither.
4. Idle again on the index now holding the cache, for S seconds.

Every query must answer 200 with its chunk found; nothing asserts a
timing. Fails when a query fails, dedupd exits, or a watchdog ping is
late by more than WATCHDOG_USEC (systemd would have killed it).

Programs come from the environment (ctest) or from --build: DEDUPD,
DEDUPCTL, MAKE_XET_CACHE.
"""

import argparse
import http.client
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import threading
import time

import bench_xet_cache as base

sys.path.insert(0, os.path.join(base.REPO, "tests", "xet_client"))
import harness  # for its dedupd client alone, which reads nothing from the environment


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--gib", type=float, default=16.0, help="size of the cache (default 16 GiB)")
    p.add_argument("--shards", type=int, default=0, help="its shards (default 400 a GiB)")
    p.add_argument("--idle-s", type=float, default=20.0, help="seconds of each idle phase (default 20)")
    p.add_argument("--rate", type=float, default=100.0, help="queries a second (default 100)")
    p.add_argument("--watchdog-s", type=float, default=30.0, help="WATCHDOG_USEC given to dedupd (default 30 s)")
    base.scratch_options(p, "64 MiB in 64 shards, 3 s idle: a check that it runs")
    p.add_argument("--timeout", type=float, default=7200, help="seconds to wait for the steward to settle")
    a = p.parse_args()
    if a.quick:
        a.gib, a.shards, a.idle_s = 1.0 / 16, 64, 3.0
    if a.shards <= 0:
        a.shards = max(64, int(a.gib * 400))
    base.programs(a.build)
    return a


def make_cache(shard_cache, shards, mib, keyed_percent, seed):
    os.makedirs(shard_cache, exist_ok=True)
    r = subprocess.run([os.environ["MAKE_XET_CACHE"], "--dir", shard_cache, "--shards", str(shards), "--mib",
                        str(mib), "--keyed-percent", str(keyed_percent), "--seed", str(seed),
                        "--now", str(int(time.time()))], capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def known_chunks(known_dir, limit=2000):
    """Chunk hashes of the known shards (unkeyed: a raw query finds them)."""
    hashes = []
    for name in sorted(os.listdir(known_dir)):
        r = subprocess.run([os.environ["DEDUPCTL"], "--json", "inspect", os.path.join(known_dir, name)],
                           capture_output=True, text=True, check=True)
        for x in json.loads(r.stdout)["xorbs"]:
            hashes += x["chunk_hashes"]
    return hashes[:limit]


class Watchdog:
    """The NOTIFY_SOCKET end systemd would hold: the time of every ping."""

    def __init__(self, path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.sock.settimeout(0.5)
        self.pings, self.ready = [], None
        self.stopping = False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stopping:
            try:
                msg = self.sock.recv(4096).decode(errors="replace")
            except socket.timeout:
                continue
            now = time.monotonic()
            if "WATCHDOG=1" in msg.split("\n"):
                self.pings.append(now)
            if "READY=1" in msg.split("\n") and self.ready is None:
                self.ready = now

    def longest_gap(self, since, until):
        times = [since] + [t for t in self.pings if since <= t <= until] + [until]
        return max(b - a for a, b in zip(times, times[1:]))

    def close(self):
        self.stopping = True
        self.thread.join()
        self.sock.close()


class Dedupd(harness.DedupdClient):
    timeout = 60  # status polls while it takes in a cache of many GiB

    def __init__(self, root, watch, extra_yaml, env):
        self.socket = os.path.join(root, "dedupd.sock")
        config = os.path.join(root, "dedupd.yaml")
        with open(config, "w") as f:
            f.write("state_dir: %s\nsocket: %s\nwatch:\n" % (json.dumps(os.path.join(root, "state")),
                                                           json.dumps(self.socket)))
            for w in watch:
                f.write("  - {%s}\n" % ", ".join("%s: %s" % (k, json.dumps(v)) for k, v in w.items()))
            f.write(extra_yaml)
        self.log_path = os.path.join(root, "dedupd.log")
        self.log = open(self.log_path, "ab")
        self.p = subprocess.Popen([os.environ["DEDUPD"], "--config", config], stdout=self.log,
                                  stderr=subprocess.STDOUT, env=env, start_new_session=True)
        deadline = time.monotonic() + 120
        while not self.healthy():
            if time.monotonic() > deadline:
                raise AssertionError("dedupd did not answer /healthz")
            time.sleep(0.05)

    def alive(self):
        return self.p.poll() is None

    def healthy(self):
        if not self.alive():
            raise AssertionError("dedupd exited (%s); see %s" % (self.p.returncode, self.log_path))
        try:
            return self.get("/healthz")[0] == 200
        except OSError:
            return False

    def stop(self):
        if self.alive():
            self.p.terminate()
            try:
                self.p.wait(60)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.log.close()


class Queries:
    """One query every 1/rate s on one kept-alive connection, each timed and
    tagged with `self.tag` as it was when the query was sent."""

    def __init__(self, dedupd, hashes, rate):
        self.dedupd, self.hashes, self.period = dedupd, hashes, 1.0 / rate
        self.samples = []  # (tag, seconds)
        self.failures = []
        self.tag = "idle"
        self.stopping = False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        conn, i = None, 0
        next_t = time.monotonic()
        while not self.stopping:
            h = self.hashes[i % len(self.hashes)]
            i += 1
            tag = self.tag
            try:
                if conn is None:
                    conn = self.dedupd.connect()
                t0 = time.perf_counter()
                conn.request("GET", "/v1/chunk/%s?local_only=1" % h)
                r = conn.getresponse()
                body = r.read()
                dt = time.perf_counter() - t0
                if r.status != 200 or not json.loads(body).get("found", True):
                    self.failures.append("%s: %d %s" % (h, r.status, body[:200]))
                else:
                    self.samples.append((tag, dt))
            except (OSError, http.client.HTTPException) as e:
                self.failures.append("%s: %s" % (h, e))
                conn = None
            next_t += self.period
            pause = next_t - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            else:
                next_t = time.monotonic()  # behind: no burst to catch up

    def stop(self):
        self.stopping = True
        self.thread.join()


def percentiles(values):
    if not values:
        return None
    v = sorted(values)

    def q(p):
        return v[min(len(v) - 1, int(p * len(v)))]

    return {"n": len(v), "p50_ms": q(0.50) * 1e3, "p99_ms": q(0.99) * 1e3, "max_ms": v[-1] * 1e3}


def first_pass(d, q, wd, expect_files, args, t_start):
    """Tags the queries while dedupd takes the cache in and its steward works,
    until it has settled. Returns what it saw."""
    seen_passes, first_pass_end, indexed_at = [], None, None
    deadline = time.monotonic() + args.timeout
    out = {"passes": 0, "max_files_read": 0}
    next_report = time.monotonic() + 30
    while True:
        if not d.alive():
            raise AssertionError("dedupd exited during the first pass (%s); see %s" % (d.p.returncode, d.log_path))
        doc = d.json("/v1/status")
        shards = (doc.get("stats") or {}).get("shards") or {}
        # Every shard the index knows, whatever its state: the cache is in
        # once there are as many as it has files (merges add a few more, so
        # this is early by at most the merges of the passes meanwhile).
        known = sum(shards.get(k, 0) for k in ("live", "expired", "removed", "rejected"))
        caches = doc.get("xet_caches") or []
        # Before its first pass ends the steward shows the root, with the pass.
        running = any(x["pass"]["running"] for x in caches)
        caches = [x for x in caches if x["endpoint"].endswith("/hub")]
        c = caches[0] if caches else None
        for x in doc.get("xet_caches") or []:
            out["max_files_read"] = max(out["max_files_read"], x["pass"]["files_read"])
        taking_in = indexed_at is None
        if taking_in and known >= expect_files:
            indexed_at = time.monotonic()
            taking_in = False
        q.tag = ("ingest+pass" if running else "ingest") if taking_in else ("pass" if running else "between")
        if c and (not seen_passes or seen_passes[-1][0] != c["last_pass"]):
            seen_passes.append((c["last_pass"], c["files"]))
            out["passes"] += 1
            if indexed_at is not None and first_pass_end is None:
                first_pass_end = time.monotonic()
        if (c and indexed_at is not None and c["pending_deletions"] == 0 and len(seen_passes) >= 3
                and seen_passes[-1][1] == seen_passes[-2][1] == seen_passes[-3][1] and not running):
            out.update(status=c, index_shards=shards, settled=True)
            break
        if time.monotonic() > deadline:
            # Reported as it stands: how far it got is a result too.
            print("  the steward did not settle in %.0f s" % args.timeout, file=sys.stderr)
            out.update(status=c or {}, index_shards=shards, settled=False)
            break
        if time.monotonic() > next_report:
            # A long run says how far it is, and what the queries saw so far.
            next_report += 30
            p = percentiles([s for _, s in q.samples[-3000:]]) or {"p50_ms": 0, "p99_ms": 0}
            print("  %4.0f s: %s, %d shards in the index, pass read %d files, %d passes; last 3000 queries "
                  "p50 %.2f ms p99 %.2f ms" % (time.monotonic() - t_start, q.tag, known,
                                                max([x["pass"]["files_read"] for x in doc.get("xet_caches") or []] + [0]),
                                                out["passes"], p["p50_ms"],
                                                p["p99_ms"]), file=sys.stderr)
        time.sleep(0.25)
    now = time.monotonic()
    out["indexed_s"] = (indexed_at or now) - t_start
    out["first_full_pass_s"] = (first_pass_end or now) - t_start
    out["settled_s"] = now - t_start
    out["watchdog_longest_gap_s"] = wd.longest_gap(t_start, now)
    out["watchdog_pings"] = len([t for t in wd.pings if t >= t_start])
    return out


def main():
    args = parse_args()
    root = os.path.abspath(tempfile.mkdtemp(prefix="dedupd-bench-pass-", dir=args.dir))
    procs, failed = [], True
    wd = None
    try:
        shard_cache = os.path.join(root, "xet", "hub", "shard-cache")
        known = os.path.join(root, "known")
        print("writing a %.2f GiB cache of %d shards ..." % (args.gib, args.shards), file=sys.stderr)
        t = time.monotonic()
        generated = make_cache(shard_cache, args.shards, args.gib * 1024, 15, 1)
        make_cache(known, 8, 2, 0, 2)
        hashes = known_chunks(known)
        print("  %.0f s; %d known chunks" % (time.monotonic() - t, len(hashes)), file=sys.stderr)
        subprocess.run(["sync"], check=True)

        wd = Watchdog(os.path.join(root, "notify.sock"))
        env = dict(os.environ, NOTIFY_SOCKET=wd.path, WATCHDOG_USEC=str(int(args.watchdog_s * 1e6)))
        env.pop("WATCHDOG_PID", None)
        dd = os.path.join(root, "dedupd")
        os.makedirs(dd)
        known_watch = {"path": known}
        xet = "xet_cache:\n  interval: 1s\n  replaced_grace: 0s\n"

        d = Dedupd(dd, [known_watch], xet, env)
        procs.append(d)
        harness_wait(lambda: d.json("/v1/chunk/%s?local_only=1" % hashes[0]).get("found", True), "the known shards")
        q = Queries(d, hashes, args.rate)
        time.sleep(args.idle_s)
        q.stop()
        idle = [s for _, s in q.samples]
        idle_failures = q.failures
        d.stop()
        procs.remove(d)

        print("first pass ...", file=sys.stderr)
        t_start = time.monotonic()
        d = Dedupd(dd, [known_watch, {"path": os.path.join(root, "xet"), "recursive": True,
                                      "manage": "xet-cache"}], xet, env)
        procs.append(d)
        q = Queries(d, hashes, args.rate)
        q.tag = "ingest"
        seen = first_pass(d, q, wd, generated["files"] + 8, args, t_start)
        q.tag = "idle_after"
        time.sleep(args.idle_s)
        q.stop()
        longest_gap = seen["watchdog_longest_gap_s"]
        load = os.getloadavg()

        by_tag = {}
        for tag, s in q.samples:
            by_tag.setdefault(tag, []).append(s)
        during = [s for tag, s in q.samples if tag != "idle_after"]
        result = {
            "generated": generated, "rate_per_s": args.rate, "watchdog_usec": int(args.watchdog_s * 1e6),
            "idle": percentiles(idle), "during": percentiles(during),
            "during_by_phase": {k: percentiles(v) for k, v in by_tag.items() if k != "idle_after"},
            "idle_after": percentiles(by_tag.get("idle_after", [])),
            "first_pass": {k: v for k, v in seen.items() if k != "status"}, "status": seen.get("status"),
            "failures": idle_failures + q.failures,
            "machine": {"cpus": os.cpu_count(), "kernel": platform.release(), "load_end": load},
            "date_utc": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        }
        print(table(result))
        st = {k: 0 for k in ("merges", "merged_away", "evicted", "files")}
        st.update(seen["status"] or {})
        print("\ncache: %d shards, %s bytes, %s chunk entries; indexed in %.1f s, steward %s %.1f s after "
              "dedupd's start (%d passes, %d merges, %d merged away, %d evicted; %d files after); watchdog: %d "
              "pings, longest gap %.2f s (limit %.0f s); load average %.2f at the end"
              % (generated["files"], "{:,}".format(generated["bytes"]),
                 "{:,}".format(generated["chunk_entries"]), seen["indexed_s"],
                 "settled" if seen["settled"] else "NOT settled (stopped waiting)", seen["settled_s"], seen["passes"],
                 st["merges"], st["merged_away"], st["evicted"], st["files"], seen["watchdog_pings"], longest_gap,
                 args.watchdog_s, load[0]))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(result, f, indent=1)
        problems = ["query failed: " + f for f in result["failures"][:5]]
        if longest_gap > args.watchdog_s:
            problems.append("a watchdog ping came %.1f s after the last (limit %.0f s)" % (longest_gap, args.watchdog_s))
        if not idle or not during:
            problems.append("no queries measured")
        failed = bool(problems)
        return base.report("bench_xet_cache_pass", problems)
    finally:
        for p in reversed(procs):
            p.stop()
        if wd:
            wd.close()
        base.scratch_done(root, failed, args.keep)


def harness_wait(predicate, what, timeout=60):
    deadline = time.monotonic() + timeout
    while True:
        try:
            if predicate():
                return
        except AssertionError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.1)


def table(r):
    def row(name, p):
        if not p:
            return "| %s | | | | |" % name
        return "| %s | %.2f ms | %.2f ms | %.2f ms | %s |" % (name, p["p50_ms"], p["p99_ms"], p["max_ms"],
                                                          "{:,}".format(p["n"]))
    out = ["| GET /v1/chunk/<hash>, one every %.0f ms | p50 | p99 | max | queries |" % (1e3 / r["rate_per_s"]),
           "|---|---:|---:|---:|---:|", row("idle, before (small index)", r["idle"]),
           row("during: start to settled", r["during"])]
    names = {"ingest": "  taking in shards, no pass", "ingest+pass": "  taking in shards, pass running",
             "pass": "  pass running (all indexed)", "between": "  between passes (all indexed)"}
    for k in ("ingest", "ingest+pass", "pass", "between"):
        if r["during_by_phase"].get(k):
            out.append(row(names[k], r["during_by_phase"][k]))
    out.append(row("idle, after (cache indexed)", r["idle_after"]))
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
