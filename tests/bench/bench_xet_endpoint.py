#!/usr/bin/env python3
"""Upload throughput through the local Xet endpoint (issues 31 and 41;
docs/XET-ENDPOINT.md; docs/PERFORMANCE.md, "The local Xet endpoint").

  bench_xet_endpoint.py [--mib M] [--repeat R] [--dir D] [--json FILE]
                        [--keep] [--quick] [--fleet]

The real client (huggingface_hub's HfApi.upload_file with hf_xet, from the
build's xet-venv) uploads a file of M MiB of random bytes made at run time
(1 GiB by default), R times straight to the Hub and CAS stand-in over HTTPS
(hub_standin.py: the baseline), R times through nginx configured from
packaging/xet-endpoint/nginx.conf.in by the script the .deb runs
(packaging/xet-endpoint/dedupd-xet-endpoint), with the real dedupd behind
it and learning on (each shard mirrored to dedupd, learned once the CAS
accepts it), and R times through the same endpoint with learning off (the
template's mirror lines taken out: the endpoint as it was before issue 41).
Runs alternate (the order turning each round), each with a new file and a new client
home, so no side finds anything to deduplicate and all send every byte;
dedupd answers 404 to every chunk query, which then goes upstream, the
endpoint's whole overhead on a new file. Throughput = file size / the
upload_file call's duration; the figures are the medians. Learning's
latency: from the CAS's answer to the shard upload (the stand-in's log
time) to dedupd counting the shard learned (its status, polled every 2 ms);
with --fleet (a throwaway PostgreSQL from tests/fleet/pg_cluster, dedupd
publishing to it, and a second dedupd, host B, on the same fleet), also to
host B answering the uploaded file's reconstruction from the fleet (GET
/v1/file/<hash>, polled every 2 ms).

Nothing here asserts a timing: it fails when an upload fails, when the
stand-in did not receive the whole file each time, or when an upload that
should pass through the endpoint did not. The ratio's goal (>= 0.95x) is
printed beside it. Exit 77 without the client or nginx.

Programs come from the environment (as ctest sets it) or from --build:
DEDUPD, DEDUPCTL, XET_PYTHON.
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

RENDERER = os.path.join(base.REPO, "packaging", "xet-endpoint", "dedupd-xet-endpoint")
TEMPLATE = os.path.join(base.REPO, "packaging", "xet-endpoint", "nginx.conf.in")
TOKEN = "hf_benchHubToken0123456789abcdef"
ACCESS_TOKEN = "xet_benchCasToken0123456789abcdef"
HUB_REPO = "dedupd/bench-endpoint"
MIB = 1 << 20


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mib", type=int, default=1024, help="file size in MiB (default 1024)")
    p.add_argument("--repeat", type=int, default=1, help="uploads each way (default 1; median)")
    p.add_argument("--fleet", action="store_true", help="also time a learned shard reaching a second host")
    base.scratch_options(p, "32 MiB, once each way: the ctest smoke")
    a = p.parse_args()
    if a.quick:
        a.mib, a.repeat = 32, 1
    return a


def cpu_seconds(pid):
    """User + system CPU seconds of a process and its children still
    running (nginx's workers), from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            kids = [int(k) for k in f.read().split()]
    except OSError:
        kids = []
    for p in [pid] + kids:
        try:
            with open("/proc/%d/stat" % p) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
        except OSError:
            pass
    return total / tick


def random_file(path, mib):
    """mib MiB from the kernel's generator, written in 1 MiB blocks (never
    all in memory), flushed to disk so the first upload does not pay for
    the writeback."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        for _ in range(mib):
            f.write(os.urandom(MIB))
        f.flush()
        os.fsync(f.fileno())
    return path


class Endpoint:
    """nginx from the shipped template, rendered and started by the .deb's
    script (as root: --as-root, as ./dev run does; the chunk queries then
    reach dedupd's socket without a group to give)."""

    def __init__(self, h, root, hub, dedupd_socket, ca, learning=True):
        self.root = root
        self.hub_port, self.cas_port = h.free_port(), h.free_port()
        os.makedirs(root, exist_ok=True)
        template = TEMPLATE
        if not learning:
            # The endpoint without its learning path: no mirror of the shard.
            template = os.path.join(root, "nginx.conf.in")
            with open(TEMPLATE) as src, open(template, "w") as dst:
                dst.writelines(line for line in src if "mirror" not in line)
        config = self.config = os.path.join(root, "xet-endpoint.conf")
        with open(config, "w") as f:
            # The stand-in's certificate names localhost (and 127.0.0.1,
            # which nginx's name check does not read); its token replies
            # name its CAS as hub.cas_url, the exact string to rewrite.
            f.write("hub_port = %d\ncas_port = %d\nhub_upstream = %s\ncas_upstream = %s\nca_file = %s\n"
                    "dedupd_socket = %s\nhub_tls_name = localhost\ncas_tls_name = localhost\n"
                    % (self.hub_port, self.cas_port, hub.endpoint, hub.cas_url, ca, dedupd_socket))
        args = [RENDERER, "--config", config, "--template", template, "--prefix", root]
        if os.geteuid() == 0:
            args.append("--as-root")
        env = dict(os.environ, DEDUPD_XET_NGINX=h.find_nginx())
        self.proc = h.Proc(args, os.path.join(root, "start.log"), env=env)
        h.wait_for("nginx to listen", lambda: self._listening(h), timeout=20)
        self.endpoint = "http://127.0.0.1:%d" % self.hub_port

    def _listening(self, h):
        import socket
        if self.proc.p.poll() is not None:
            raise AssertionError("the endpoint exited:\n" + self.proc.tail())
        try:
            for port in (self.hub_port, self.cas_port):
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            return False

    def xorb_posts(self):
        with open(os.path.join(self.root, "logs", "access.log")) as f:
            return sum(1 for line in f if '"POST /v1/xorbs/' in line and " %d " % self.cas_port in line)

    def stop(self):
        self.proc.stop()


def main():
    args = parse_args()
    harness = base.import_harness(args.build)
    harness.require_client()
    harness.find_nginx()

    root = tempfile.mkdtemp(prefix="dedupd-bench-endpoint-", dir=args.dir)
    procs, failed = [], True
    try:
        tls = harness.make_test_ca(os.path.join(root, "tls"))
        homes = os.path.join(root, "homes")
        os.makedirs(homes)
        os.makedirs(os.path.join(root, "dedupd"))
        fleet_yaml = {}
        if args.fleet:
            pointer = os.path.join(root, "pg-pointer")
            subprocess.run([PG_CLUSTER, "start", pointer, str(os.getpid())], check=True)
            procs.append(PgCluster(pointer))
            with open(os.path.join(open(pointer).read().strip(), "url")) as f:
                url = f.read().strip()
            fleet_yaml = {h: "fleet:\n  url: %s\n  host: %s\n" % (json.dumps(url), h) for h in ("a", "b")}
        dedupd = harness.Dedupd(os.path.join(root, "dedupd"), [homes], harness.endpoint_yaml(
            os.path.join(root, "endpoint", "xet-endpoint.conf")) + fleet_yaml.get("a", ""))
        procs.append(dedupd)
        host_b = None
        if args.fleet:
            os.makedirs(os.path.join(root, "dedupd-b", "incoming"))
            host_b = harness.Dedupd(os.path.join(root, "dedupd-b"), [os.path.join(root, "dedupd-b", "incoming")],
                                    fleet_yaml["b"])
            procs.append(host_b)
        hub = harness.HubStandin(os.path.join(root, "hub"), tls, TOKEN, ACCESS_TOKEN)
        procs.append(hub)
        ep = Endpoint(harness, os.path.join(root, "endpoint"), hub, dedupd.socket, tls["ca"])
        procs.append(ep)
        ep_off = Endpoint(harness, os.path.join(root, "endpoint-off"), hub, dedupd.socket, tls["ca"], learning=False)
        procs.append(ep_off)
        endpoints = {"endpoint": ep, "learning_off": ep_off}
        harness.HubClient(os.path.join(homes, "setup"), hub.endpoint, TOKEN, tls["ca"]).run("create-repo", HUB_REPO)

        runs = {"direct": [], "endpoint": [], "learning_off": []}
        learn_ms, fleet_ms = [], []
        problems = []
        n = 0
        for i in range(args.repeat):
            # The order turns with each round, so no way always goes first
            # (or always right after another) on a busy machine.
            ways = ["direct", "endpoint", "learning_off"]
            for way in ways[i % 3:] + ways[:i % 3]:
                n += 1
                path = random_file(os.path.join(root, "files", "%s-%d.bin" % (way, i)), args.mib)
                e = endpoints.get(way, ep)
                endpoint = hub.endpoint if way == "direct" else e.endpoint
                user = harness.HubClient(os.path.join(homes, "%s-%d" % (way, i)), endpoint, TOKEN, tls["ca"])
                hub.reset()
                posts_before = e.xorb_posts()
                cpu_before = {"nginx": cpu_seconds(e.proc.p.pid), "standin": cpu_seconds(hub.proc.p.pid)}
                print("upload %d of %d: %d MiB %s ..." % (n, 3 * args.repeat, args.mib, way), file=sys.stderr)
                watch = LearnWatch(dedupd) if way == "endpoint" else None
                files_before = set(hub.state()["files"])
                out = user.run("upload-file", HUB_REPO, os.path.basename(path), path)
                if watch and host_b:
                    new_files = sorted(set(hub.state()["files"]) - files_before)
                    seen_b = file_seen(host_b, new_files[0]) if new_files else None
                    accepted = last_shard_accept(os.path.join(root, "hub"))
                    if seen_b is None or accepted is None:
                        problems.append("upload %d: host B never found the file in the fleet" % i)
                    else:
                        fleet_ms.append((seen_b - accepted) * 1000)
                if watch:
                    seen = watch.wait()
                    accepted = last_shard_accept(os.path.join(root, "hub"))
                    if seen is None or accepted is None:
                        problems.append("upload %d through the endpoint: its shard was not learned" % i)
                    else:
                        learn_ms.append((seen - accepted) * 1000)
                cpu = {"nginx": cpu_seconds(e.proc.p.pid) - cpu_before["nginx"],
                       "standin": cpu_seconds(hub.proc.p.pid) - cpu_before["standin"]}
                sent = hub.state()["xorb_chunk_bytes"]
                if sent != args.mib * MIB:
                    problems.append("%s upload %d: the stand-in received %d chunk bytes of %d"
                                    % (way, i, sent, args.mib * MIB))
                # nginx logs a request as it ends: give it a moment.
                posts = harness.wait_for("nginx's log", lambda: e.xorb_posts() - posts_before or None, 10) \
                    if way != "direct" else e.xorb_posts() - posts_before
                if way == "direct" and posts:
                    problems.append("the direct upload %d passed the endpoint" % i)
                runs[way].append({"seconds": out["seconds"], "mib_s": args.mib / out["seconds"], "xorbs": posts,
                                  "cpu_s": cpu})
                os.remove(path)
        med = {w: statistics.median(r["mib_s"] for r in runs[w]) for w in runs}
        ratio = med["endpoint"] / med["direct"]
        learning_cost = 1 - med["endpoint"] / med["learning_off"]
        load = os.getloadavg()
        result = {"mib": args.mib, "repeat": args.repeat, "runs": runs, "median_mib_s": med, "ratio": ratio,
                  "learning_cost": learning_cost, "learn_ms": learn_ms, "fleet_ms": fleet_ms,
                  "hf_xet": harness.hf_xet_version(), "nginx": nginx_version(harness.find_nginx()),
                  "machine": {"cpus": os.cpu_count(), "kernel": platform.release(), "load_end": load},
                  "date_utc": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
        print("| upload of %d MiB (random), median of %d | MiB/s | ratio | goal |" % (args.mib, args.repeat))
        print("|---|---:|---:|---|")
        print("| straight to the stand-in (baseline) | %.1f | | |" % med["direct"])
        print("| through the local Xet endpoint, learning off | %.1f | %.2fx | |"
              % (med["learning_off"], med["learning_off"] / med["direct"]))
        print("| through the local Xet endpoint (nginx + dedupd), learning on | %.1f | %.2fx | >= 0.95x |"
              % (med["endpoint"], ratio))
        print("\nlearning costs %.1f %% of the throughput (goal <= 5 %%); from the CAS's acceptance to the shard "
              "learned here: median %.0f ms, max %.0f ms (goal < 1000 ms)"
              % (100 * learning_cost, statistics.median(learn_ms) if learn_ms else float("nan"),
                 max(learn_ms) if learn_ms else float("nan")))
        if fleet_ms:
            print("from the CAS's acceptance to host B answering the file from the fleet: median %.0f ms, max %.0f ms "
                  "(goal < 1000 ms)" % (statistics.median(fleet_ms), max(fleet_ms)))
        cpu = {w: {k: statistics.median(r["cpu_s"][k] for r in runs[w]) for k in ("nginx", "standin")}
               for w in runs}
        result["median_cpu_s"] = cpu
        print("\nCPU seconds per upload (median): the stand-in %.1f direct, %.1f through the endpoint; "
              "nginx %.1f" % (cpu["direct"]["standin"], cpu["endpoint"]["standin"], cpu["endpoint"]["nginx"]))
        print("hf_xet %s, %s; %d CPUs; load average %.2f at the end"
              % (result["hf_xet"], result["nginx"], os.cpu_count(), load[0]))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(result, f, indent=1)
        failed = bool(problems)
        return base.report("bench_xet_endpoint", problems)
    finally:
        for p in reversed(procs):
            p.stop()
        if failed or args.keep:
            print("(kept %s)" % root, file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)


class LearnWatch:
    """Polls dedupd's learning counts every 2 ms from now on, and says when
    they first moved: the moment a shard was learned (or found known)."""

    def __init__(self, dedupd):
        import threading
        self.dedupd, self.seen = dedupd, None
        self.before = self.count()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def count(self):
        doc = self.dedupd.json("/v1/status")["xet_endpoint"]["learning"]
        return doc["learned"] + doc["already_known"]

    def run(self):
        while not self.stop.is_set():
            if self.count() > self.before:
                self.seen = time.time()
                return
            time.sleep(0.002)

    def wait(self, timeout=10):
        self.thread.join(timeout)
        self.stop.set()
        return self.seen


PG_CLUSTER = os.path.join(base.REPO, "tests", "fleet", "pg_cluster")


class PgCluster:
    """The throwaway fleet database, stopped with the rest."""

    def __init__(self, pointer):
        self.pointer = pointer

    def stop(self):
        subprocess.run([PG_CLUSTER, "stop", self.pointer], check=False)


def file_seen(dedupd, file_hash, timeout=10):
    """When `dedupd` first answered the file's reconstruction (from the
    fleet: it never saw the shard), polled every 2 ms; None past timeout."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if dedupd.get("/v1/file/" + file_hash)[0] == 200:
            return time.time()
        time.sleep(0.002)
    return None


def last_shard_accept(store):
    """When the CAS stand-in last answered a shard upload with a 200 (on
    /v1/shards through the endpoint, which answers /v2/shards itself)."""
    t = None
    with open(os.path.join(store, "requests.jsonl")) as f:
        for line in f:
            entry = json.loads(line)
            if entry.get("path") in ("/v2/shards", "/v1/shards") and entry.get("status") == 200:
                t = entry["t"]
    return t


def nginx_version(nginx):
    r = subprocess.run([nginx, "-v"], capture_output=True, text=True)
    return r.stderr.strip().replace("nginx version: ", "")


if __name__ == "__main__":
    sys.exit(main())
