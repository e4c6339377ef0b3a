#!/usr/bin/env python3
"""The real Xet client's session start on a large shard cache, before and
after dedupd consolidates it (issue 24, "Proof with the real client";
docs/PERFORMANCE.md, "The Xet client's shard cache").

  bench_xet_cache.py [--shards N] [--mib M] [--keyed-percent P] [--repeat R]
                     [--dir D] [--json FILE] [--keep] [--quick] [--slow-fs US]

1. A cache like the one xet-core issue #853 measured (708 files, 90 MB): a
   tiny real upload makes the client create its endpoint directory, real
   uploads of three test files add their real shards, and make_xet_cache
   adds N generated shards of about M MiB beside them (exported upload
   sessions and P% keyed global-dedup replies).
2. Without dedupd ("before"): the real client (hf_xet, one process per
   session, as `hf upload` runs) uploads a new small file R times. Session
   start = from the upload call (t_start of xet_client.py) to the first
   request the CAS stand-in logs; the whole upload is t_end - t_start. Then
   a fixed set of edits of the three test files is uploaded, and the stand-in
   counts the chunk bytes of the xorbs it received. Every shard a measured
   session adds is removed afterwards, so each one starts on the same cache
   and the edits find only what was there before.
3. dedupd starts with the cache as a managed watch entry (manage: xet-cache,
   steward every second, replaced originals deleted at once) and the bench
   waits until it has consolidated the cache; then the same again ("after"),
   with dedupd still running, as on a build host (the shards these sessions
   add stay, for dedupd to merge).

With --slow-fs US the client's cache (and so dedupd's managed root) is a
FUSE mount (faultfs --delay-us, tests/support/faultfs.c) of a scratch
directory that waits US microseconds in every operation: a slow file
system where device-mapper's dm-delay is not available.

The stand-in answers no global-dedup query in either phase, so only the
client's own cache decides what it sends. Nothing here asserts a timing: it
fails when a client session fails, when the after-cache has no fewer files,
or when more bytes are sent after than before. Exit 77 without the client.

Programs come from the environment (as ctest sets it) or from --build:
DEDUPD, DEDUPCTL, MAKE_XET_CACHE, XET_PYTHON, and FAULTFS for --slow-fs.
"""

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SHARD_NAME = re.compile(r"^[0-9a-fA-F]{64}\.mdb$")  # what the client loads


def programs(build):
    """Fills the environment the harness reads from a build directory, for
    runs by hand; ctest sets it itself."""
    defaults = {
        "DEDUPD": os.path.join(build, "daemon", "dedupd"),
        "DEDUPCTL": os.path.join(build, "cli", "dedupctl"),
        "MAKE_XET_CACHE": os.path.join(build, "tests", "bench", "make_xet_cache"),
        "XET_PYTHON": os.path.join(build, "xet-venv", "bin", "python"),
        "FAULTFS": os.path.join(build, "tests", "support", "faultfs"),
    }
    for k, v in defaults.items():
        os.environ.setdefault(k, v)


def argument_parser(shards, mib, repeat, timeout, quick):
    """The options both benchmarks share, with their defaults."""
    p = argparse.ArgumentParser(description=sys.modules["__main__"].__doc__.split("\n")[0])
    p.add_argument("--shards", type=int, default=shards, help="generated shards (default %d)" % shards)
    p.add_argument("--mib", type=float, default=mib, help="MiB of generated shards (default %g)" % mib)
    p.add_argument("--keyed-percent", type=int, default=15, help="share of global-dedup replies (default 15)")
    p.add_argument("--repeat", type=int, default=repeat,
                   help="small-file sessions per phase (default %d; median)" % repeat)
    scratch_options(p, quick + ": the ctest smoke")
    p.add_argument("--timeout", type=float, default=timeout, help="seconds to wait for dedupd")
    return p


def scratch_options(p, quick):
    """The options every Xet bench has: where it works, what it writes, and
    its quick mode (described by `quick`)."""
    p.add_argument("--dir", default=tempfile.gettempdir(), help="scratch space (default $TMPDIR)")
    p.add_argument("--build", default=os.path.join(REPO, "build"), help="build directory (default ./build)")
    p.add_argument("--json", help="write the results here")
    p.add_argument("--keep", action="store_true", help="keep the scratch directory")
    p.add_argument("--quick", action="store_true", help=quick)


def parse_args():
    # 704 generated and 4 real shards, 88 MiB: about 90 MB in all.
    p = argument_parser(704, 88.0, 5, 900, "40 shards, 4 MiB, 2 sessions")
    p.add_argument("--slow-fs", type=int, metavar="US", default=0,
                   help="put the cache on a FUSE mount that waits US microseconds an operation (faultfs)")
    a = p.parse_args()
    if a.quick:
        a.shards, a.mib, a.repeat = 40, 4.0, 2
    return a


def evict(shard_cache):
    """Drops the shard files' pages from the page cache (fsync first: dirty
    pages stay), as after a while without a session; only these files, so
    other work on the machine keeps its cache."""
    for n in os.listdir(shard_cache):
        if SHARD_NAME.match(n):
            fd = os.open(os.path.join(shard_cache, n), os.O_RDONLY)
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def cache_stats(shard_cache):
    names = [n for n in os.listdir(shard_cache) if SHARD_NAME.match(n)]
    return {"files": len(names), "bytes": sum(os.path.getsize(os.path.join(shard_cache, n)) for n in names)}


class NoSteward(Exception):
    """This dedupd cannot manage a Xet cache (built before issue 24's steward)."""


def steward_config_error(root):
    """dedupd --check-config's complaint about a managed watch entry and the
    xet_cache section, or None when it accepts them."""
    os.makedirs(root, exist_ok=True)
    config = os.path.join(root, "probe.yaml")
    with open(config, "w") as f:
        f.write("state_dir: %s\nwatch:\n  - {path: %s, recursive: true, manage: xet-cache}\n"
                "xet_cache:\n  interval: 1s\n  replaced_grace: 0s\n"
                % (json.dumps(os.path.join(root, "state")), json.dumps(root)))
    r = subprocess.run([os.environ["DEDUPD"], "--config", config, "--check-config"], capture_output=True, text=True)
    return None if r.returncode == 0 else (r.stdout + r.stderr).strip()


class Bench:
    def __init__(self, args, harness):
        self.args = args
        self.h = harness
        self.root = tempfile.mkdtemp(prefix="dedupd-bench-xet-", dir=args.dir)
        self.procs = []
        self.dedupd = None
        self.cache = os.path.join(self.root, "xet")
        self.backing = None  # the directory under the slow mount
        if getattr(args, "slow_fs", 0):
            self.backing = os.path.join(self.root, "xet-backing")
            os.makedirs(self.backing)
            os.makedirs(self.cache)
            subprocess.run([os.environ["FAULTFS"], self.backing, self.cache, "--delay-us", str(args.slow_fs)],
                           check=True)
            harness.wait_for("the slow mount", lambda: os.path.ismount(self.cache), timeout=10)
        self.files = os.path.join(self.root, "files")
        self.client = harness.Client(self.cache)
        self.cas = harness.CasStandin(os.path.join(self.root, "cas"))
        self.procs.append(self.cas)

    def close(self, failed):
        for p in reversed(self.procs):
            p.stop()
        if self.backing:
            subprocess.run(["fusermount3", "-u", self.cache], check=False)
        if failed or self.args.keep:
            print("(kept %s)" % self.root, file=sys.stderr)
        else:
            shutil.rmtree(self.root, ignore_errors=True)

    def file(self, name, data):
        return self.h.write(os.path.join(self.files, name), data)

    def build_cache(self):
        """Real shards first (the client makes its endpoint directory), then
        the generated ones beside them."""
        mib = 1 if self.args.quick else 4
        self.client.upload(self.cas.endpoint, self.file("tiny.bin", self.h.random_bytes(1000, 1)))
        self.real = []
        for i in range(3):
            self.real.append(self.file("real-%d.bin" % i, self.h.random_bytes((mib << 20) + 77777 * i, 10 + i)))
            self.client.upload(self.cas.endpoint, self.real[-1])
        self.endpoint_dir = self.client.endpoint_dirs()[0]
        self.shard_cache = os.path.join(self.endpoint_dir, "shard-cache")
        real_shards = cache_stats(self.shard_cache)["files"]
        r = subprocess.run([os.environ["MAKE_XET_CACHE"], "--dir", self.shard_cache, "--shards",
                            str(self.args.shards), "--mib", str(self.args.mib), "--keyed-percent",
                            str(self.args.keyed_percent), "--now", str(int(time.time()))],
                           capture_output=True, text=True, check=True)
        self.generated = json.loads(r.stdout)
        self.generated["real_shards"] = real_shards

        # The edits uploaded in each phase: one file unchanged, one grown by
        # a quarter, one with 64 KiB overwritten in its middle, and a new one.
        with open(self.real[1], "rb") as f:
            grown = f.read()
        grown += self.h.random_bytes(len(grown) // 4, 31)
        with open(self.real[2], "rb") as f:
            edited = bytearray(f.read())
        mid = len(edited) // 2
        edited[mid:mid + 65536] = self.h.random_bytes(65536, 32)
        self.edits = [self.real[0], self.file("edit-grown.bin", grown), self.file("edit-middle.bin", bytes(edited)),
                      self.file("edit-new.bin", self.h.random_bytes(mib << 19, 33))]

    def session(self, paths):
        """One upload session; returns its result with the session start.
        Without dedupd it removes the shards the session added, so the next
        one starts on the same cache. With dedupd running they stay, as on a
        build host: its steward may merge a session's shard into one of its
        own while the session runs, and a file that appeared meanwhile can
        be either (removing it lost a merged shard and its content once)."""
        before = set(os.listdir(self.shard_cache))
        log = os.path.join(self.cas.root, "requests.jsonl")
        out = self.client.upload(self.cas.endpoint, *paths)
        with open(log) as f:
            times = [json.loads(line)["t"] for line in f]
        after_start = [t for t in times if t >= out["t_start"]]
        if not after_start:
            raise AssertionError("the stand-in logged no request of this session")
        out["session_start_s"] = min(after_start) - out["t_start"]
        out["upload_s"] = out["t_end"] - out["t_start"]
        for n in set(os.listdir(self.shard_cache)) - before if self.dedupd is None else ():
            if SHARD_NAME.match(n):
                try:
                    os.unlink(os.path.join(self.shard_cache, n))
                except FileNotFoundError:
                    pass
        return out

    def measure(self, phase):
        """Each repeat: a session on a cache evicted from the page cache
        (cold), then one right after it (warm), each with a new file."""
        starts, uploads, cold_starts, cold_uploads = [], [], [], []
        for i in range(self.args.repeat):
            for cold in (True, False):
                small = self.file("small-%s-%d-%d.bin" % (phase, i, cold), self.h.random_bytes(100_000, 100 + 2 * i + cold))
                if cold:
                    evict(self.shard_cache)
                    if self.backing:  # and what the slow mount reads from
                        evict(os.path.join(self.backing, os.path.relpath(self.shard_cache, self.cache)))
                s = self.session([small])
                (cold_starts if cold else starts).append(s["session_start_s"])
                (cold_uploads if cold else uploads).append(s["upload_s"])
                print("  %s session %d (%s): start %.3f s, upload %.3f s"
                      % (phase, i + 1, "cold" if cold else "warm", s["session_start_s"], s["upload_s"]),
                      file=sys.stderr)
        stats = cache_stats(self.shard_cache)
        self.cas.reset()
        edits = self.session(self.edits)
        state = self.cas.state()
        return {
            "session_start_s": statistics.median(starts), "session_start_all_s": starts,
            "upload_s": statistics.median(uploads), "upload_all_s": uploads,
            "cold_session_start_s": statistics.median(cold_starts), "cold_session_start_all_s": cold_starts,
            "cold_upload_s": statistics.median(cold_uploads), "cold_upload_all_s": cold_uploads,
            "cache_files": stats["files"], "cache_bytes": stats["bytes"],
            "edits_uploaded_bytes": state["xorb_chunk_bytes"],
            "edits_file_hashes": [f["hash"] for f in edits["files"]],
        }

    def consolidate(self, also=lambda cache: True, xet_cache=""):
        """dedupd on the cache as a managed root (`xet_cache`: more lines of
        that section); waits until a pass leaves nothing to delete, the file
        count holds over two passes and `also` holds for the cache's status."""
        watch = [{"path": self.cache, "recursive": True, "manage": "xet-cache"}]
        os.makedirs(os.path.join(self.root, "dedupd"))
        t0 = time.monotonic()
        self.dedupd = self.h.Dedupd(os.path.join(self.root, "dedupd"), watch,
                                    "xet_cache:\n  interval: 1s\n  replaced_grace: 0s\n" + xet_cache)
        self.procs.append(self.dedupd)
        seen = []  # (last_pass, files) of each pass observed

        def settled():
            doc = self.dedupd.json("/v1/status")
            if "xet_caches" not in doc:
                raise NoSteward("GET /v1/status has no xet_caches")
            caches = doc["xet_caches"] or []
            # The endpoint as a path (its directory or its shard-cache) or
            # as the directory's name: the one cache here either way.
            names = {os.path.realpath(self.endpoint_dir), os.path.realpath(self.shard_cache),
                     os.path.basename(self.endpoint_dir)}
            mine = [c for c in caches if c["endpoint"] in names or os.path.realpath(c["endpoint"]) in names]
            if not mine:
                return None
            c = mine[0]
            if not seen or seen[-1][0] != c["last_pass"]:
                seen.append((c["last_pass"], c["files"]))
            done = (c["merges"] > 0 and c["pending_deletions"] == 0 and len(seen) >= 3
                    and seen[-1][1] == seen[-2][1] == seen[-3][1] and also(c))
            return c if done else None

        status = self.h.wait_for("dedupd to consolidate the cache", settled, timeout=self.args.timeout,
                                 interval=0.5)
        status["consolidation_s"] = time.monotonic() - t0
        return status


def scratch_done(root, failed, keep):
    """Keeps the scratch directory when the run failed or was asked to (and
    says where it is), else removes it."""
    if failed or keep:
        print("(kept %s)" % root, file=sys.stderr)
    else:
        shutil.rmtree(root, ignore_errors=True)


def report(program, problems):
    """Prints each problem under the program's name; the exit code."""
    for p in problems:
        print("%s: %s" % (program, p), file=sys.stderr)
    return 1 if problems else 0


def fmt_s(s):
    if s is None:
        return "n/a"
    return "%.0f ms" % (s * 1000) if s < 10 else "%.1f s" % s


def ratio(a, b):
    return "%.1fx" % (a / b) if a is not None and b else "n/a"


def count(n):
    return "n/a" if n is None else "{:,}".format(n)


def markdown_table(header, align, rows):
    """A markdown table: `align` is the rule under the header ("---",
    "---:"), each row a tuple of cells already formatted."""
    out = ["| %s |" % " | ".join(header), "|%s|" % "|".join(align)]
    out += ["| %s |" % " | ".join(row) for row in rows]
    return "\n".join(out)


def import_harness(build):
    """tests/xet_client/harness.py, with the programs it runs taken from
    `build` unless the environment names them: it reads them at import."""
    programs(build)
    sys.path.insert(0, os.path.join(REPO, "tests", "xet_client"))
    import harness
    return harness


def table(r):
    b = r["before"]
    a = r["after"] or {k: None for k in b}
    rows = []
    for kind, prefix in (("cold", "cold_"), ("warm", "")):
        rows += [
            ("session start, %s (upload call -> first CAS request), median of %d" % (kind, r["repeat"]),
             fmt_s(b[prefix + "session_start_s"]), fmt_s(a[prefix + "session_start_s"]),
             ratio(b[prefix + "session_start_s"], a[prefix + "session_start_s"]), ">= 10x faster"),
            ("whole upload of a 100 kB file, %s, median" % kind, fmt_s(b[prefix + "upload_s"]),
             fmt_s(a[prefix + "upload_s"]), ratio(b[prefix + "upload_s"], a[prefix + "upload_s"]), ""),
        ]
    rows += [
        ("shard-cache files", count(b["cache_files"]), count(a["cache_files"]),
         ratio(b["cache_files"], a["cache_files"]), ""),
        ("shard-cache bytes", count(b["cache_bytes"]), count(a["cache_bytes"]),
         ratio(b["cache_bytes"], a["cache_bytes"]), ""),
        ("chunk bytes uploaded for the same edits", count(b["edits_uploaded_bytes"]),
         count(a["edits_uploaded_bytes"]), "", "equal or fewer after"),
    ]
    return markdown_table(("metric", "without dedupd", "with dedupd", "ratio", "goal"),
                          ("---", "---:", "---:", "---:", "---"), rows)


def main():
    args = parse_args()
    harness = import_harness(args.build)
    harness.require_client()

    bench = Bench(args, harness)
    failed = True
    try:
        no_steward = steward_config_error(os.path.join(bench.root, "probe"))
        print("building the cache ...", file=sys.stderr)
        bench.build_cache()
        print("without dedupd ...", file=sys.stderr)
        before = bench.measure("before")
        status, after = None, None
        if no_steward is None:
            print("dedupd consolidating ...", file=sys.stderr)
            try:
                status = bench.consolidate()
            except NoSteward as e:
                no_steward = str(e)
        if no_steward is None:
            print("with dedupd ...", file=sys.stderr)
            after = bench.measure("after")
        load = os.getloadavg()
        result = {
            "hf_xet": harness.hf_xet_version(), "repeat": args.repeat, "generated": bench.generated,
            "before": before, "after": after, "dedupd": status, "no_steward": no_steward,
            "slow_fs_delay_us": args.slow_fs,
            "machine": {"cpus": os.cpu_count(), "kernel": platform.release(), "load_end": load},
            "date_utc": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        }
        print(table(result))
        print("\ncache: %d generated shards (%d keyed) + %d real, %d chunk entries generated; hf_xet %s; "
              "load average %.2f at the end" % (bench.generated["files"], bench.generated["keyed"],
                                                 bench.generated["real_shards"], bench.generated["chunk_entries"],
                                                 result["hf_xet"], load[0]))
        if status:
            print("consolidation: %.1f s, %d merges" % (status["consolidation_s"], status["merges"]))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(result, f, indent=1)
        if no_steward is not None:
            # Only the "before" half could run: a skip, not a pass.
            print("bench_xet_cache: no \"after\": this dedupd does not manage Xet caches:\n  " + no_steward,
                  file=sys.stderr)
            failed = False
            return harness.SKIP
        problems = []
        if after["cache_files"] >= before["cache_files"]:
            problems.append("the cache has %d files after, %d before" % (after["cache_files"], before["cache_files"]))
        if after["edits_uploaded_bytes"] > before["edits_uploaded_bytes"]:
            problems.append("more bytes uploaded after (%d) than before (%d)"
                            % (after["edits_uploaded_bytes"], before["edits_uploaded_bytes"]))
        if after["edits_file_hashes"] != before["edits_file_hashes"]:
            problems.append("the same files hashed differently before and after")
        failed = bool(problems)
        return report("bench_xet_cache", problems)
    finally:
        bench.close(failed)

if __name__ == "__main__":
    sys.exit(main())
