#!/usr/bin/env python3
"""Downloads through the local Xet endpoint (issue 72; docs/XET-ENDPOINT.md,
"Downloads"; docs/PERFORMANCE.md, "Downloads"), each figure beside its bare
baseline measured in the same run.

  bench_xet_download.py [--mib M] [--repeat R] [--paced-mbps P] [--terms N]
                        [--answers A] [--part cold|hits|answers]... [--dir D]
                        [--json FILE] [--keep] [--quick]

The Hub and CAS stand-in (hub_standin.py, HTTPS) holds a file of M MiB of
random bytes (200 by default), uploaded once; its storage port serves the
xorb ranges of presigned-style URLs on loopback (the direct path). The real
dedupd and nginx from packaging/xet-endpoint/nginx.conf.in (harness.py's
XetEndpoint, as the download tests run them) are the endpoint.

1. Cold downloads, R of each, the order turning each round:
   - the real client (huggingface_hub's hf_hub_download with hf_xet, the
     build's xet-venv, the call alone timed) straight to the stand-in,
     against the same through an endpoint with an empty cache (a new nginx
     and cache directory each time, so each range is a miss that dedupd
     fills from the storage, checks and hands nginx to cache);
   - the bare fetch of the same ranges, so the client's own work does not
     hide the difference: the v2 reconstruction asked of the stand-in (its
     presigned URLs) or of a new endpoint (its range URLs), then every
     range fetched by one curl at once (-Z) to /dev/null;
   - the same bare fetch through a plain nginx caching the storage's
     answers (TLS to it, proxy_cache, an empty cache; no dedupd): the
     least a cold path costs whose bytes nginx moves and caches;
   - the same bare fetch with each storage answer paced at P MB/s (50 by
     default; 0: not), a CDN's connection rather than loopback at memory
     speed.
   Throughput = file size / time; the figures are medians. The CPU seconds
   of nginx, dedupd and the stand-in are kept for each run (--json).
2. Hits: the ranges of an endpoint whose cache holds the file, read by a
   lean reader (http.client, readinto a 1 MiB buffer, one connection, the
   ranges one after the other, as the client asks them) against reading the
   same bytes of nginx's cache files (in the page cache) into the same
   buffer, and against a plain nginx serving the same bytes of the same
   files (HTTP's own cost on loopback); curl to /dev/null against cat of the
   cache files and the plain nginx. At least 15 rounds, the order turning
   each round; median throughput.
3. The reconstruction answer of a file of N terms (1,000 by default: the
   stand-in's synthetic file, each term a whole xorb of its own, so N
   ranges to rename), asked A times of each of two endpoints on one
   connection each, interleaved: one with downloads (dedupd asks the CAS and
   renames every fetch URL) and one whose reconstruction location passes
   the answer through (as before issue 72), with the same proxy buffers. p50 and
   p99 of each, what the rewrite adds, and the CPU each way costs an answer
   (from /proc: what the load does not move). bench_xet_rewrite (C++) times
   the rewrite alone.

Nothing here asserts a timing: it fails when a download is wrong (sha256),
when a cold download did not fetch every range from the storage or a hit
did, or when an answer was not rewritten (or was, on the pass-through).
Goals are printed beside the ratios. Exit 77 without the client, nginx or
curl.

Programs come from the environment (as ctest sets it) or from --build:
DEDUPD, DEDUPCTL, XET_PYTHON.
"""

import argparse
import hashlib
import http.client
import json
import os
import platform
import re
import shutil
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time

import bench_xet_cache as base
from bench_xet_endpoint import cpu_seconds, nginx_version, random_file

TOKEN = "hf_benchDownloadToken0123456789abcdef"
ACCESS_TOKEN = "xet_benchDownloadCas0123456789abcdef"
HUB_REPO = "dedupd/bench-download"
MIB = 1 << 20
READ_BUFFER = 1 << 20


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mib", type=int, default=200, help="file size in MiB (default 200)")
    p.add_argument("--repeat", type=int, default=5, help="cold downloads each way (default 5; median)")
    p.add_argument("--paced-mbps", type=float, default=50,
                   help="also the bare fetch with each storage answer paced at this many MB/s, as a CDN's "
                        "connection (default 50; 0: not)")
    p.add_argument("--terms", type=int, default=1000, help="terms of the timed reconstruction (default 1000)")
    p.add_argument("--answers", type=int, default=300, help="reconstructions asked of each endpoint (default 300)")
    p.add_argument("--part", action="append", choices=("cold", "hits", "answers"),
                   help="run only this part (repeatable; hits include a cold download)")
    base.scratch_options(p, "32 MiB, once each way, 30 answers: the ctest smoke")
    a = p.parse_args()
    if a.quick:
        a.mib, a.repeat, a.answers = 32, 1, 30
    return a


class Load:
    """The machine's 1-minute load average, sampled at each measurement."""

    def __init__(self):
        self.samples = []

    def sample(self):
        self.samples.append(os.getloadavg()[0])

    def summary(self):
        s = sorted(self.samples) or [float("nan")]
        return {"min": s[0], "median": statistics.median(s), "max": s[-1]}


def pass_through_template(root):
    """The shipped template with its reconstruction location passing the
    CAS's answer on as it came (the endpoint before issue 72), relayed as
    that location relays it (its proxy buffer lines kept): what the
    rewrite adds is then dedupd's hop and work, not a buffer size."""
    start = re.compile(r'(\s*)location ~ "\^/\(\?:v2/reconstructions')
    with open(os.path.join(base.REPO, "packaging", "xet-endpoint", "nginx.conf.in")) as f:
        lines = f.read().splitlines(True)
    out, depth, cut, kept = [], None, 0, []
    for line in lines:
        m = start.match(line) if depth is None else None
        if m:
            depth, cut, indent = 0, cut + 1, m.group(1).strip("\n")
            kept = [line]
        if depth is None:
            out.append(line)
            continue
        if line.strip().startswith(("proxy_buffer", "proxy_busy_buffers")):
            kept.append(line.split("#")[0].rstrip() + "\n")
        depth += line.count("{") - line.count("}")
        if depth == 0:
            depth = None
            out += kept + [indent + "    proxy_pass @CAS_UPSTREAM@;\n",
                           indent + "    proxy_ssl_name @CAS_TLS_NAME@;\n", indent + "}\n"]
    if cut != 1:
        raise AssertionError("the template has %d reconstruction locations, not one" % cut)
    path = os.path.join(root, "nginx-pass-through.conf.in")
    with open(path, "w") as f:
        f.writelines(out)
    return path


class Bench:
    def __init__(self, args, harness, root):
        self.args, self.h, self.root = args, harness, root
        self.procs, self.problems = [], []
        self.load = Load()
        self.tls = harness.make_test_ca(os.path.join(root, "tls"))
        self.ssl = ssl.create_default_context(cafile=self.tls["ca"])
        os.makedirs(os.path.join(root, "homes"))
        os.makedirs(os.path.join(root, "dedupd"))
        self.dedupd = harness.Dedupd(os.path.join(root, "dedupd"), [os.path.join(root, "homes")],
                                     harness.endpoint_yaml(os.path.join(root, "endpoint", "xet-endpoint.conf")))
        self.procs.append(self.dedupd)
        self.hub = harness.HubStandin(os.path.join(root, "hub"), self.tls, TOKEN, ACCESS_TOKEN)
        self.procs.append(self.hub)
        self.endpoints = 0

    def stop(self):
        for p in reversed(self.procs):
            p.stop()

    def endpoint(self, template=None):
        """A new endpoint (nginx) with an empty cache, on dedupd."""
        self.endpoints += 1
        kw = {"template": template} if template else {}
        ep = self.h.XetEndpoint(os.path.join(self.root, "endpoint-%d" % self.endpoints), self.hub,
                                self.dedupd.socket, self.tls["ca"], **kw)
        self.procs.append(ep)
        return ep

    def drop(self, ep):
        ep.stop()
        self.procs.remove(ep)
        shutil.rmtree(ep.root, ignore_errors=True)

    def user(self, name, endpoint):
        return self.h.HubClient(os.path.join(self.root, "homes", name), endpoint, TOKEN, self.tls["ca"])

    def storage_bytes(self):
        return self.hub.state()["storage"]["bytes"]

    def upload(self):
        self.src = random_file(os.path.join(self.root, "files", "model.bin"), self.args.mib)
        self.name = os.path.basename(self.src)
        self.sha256 = self.h.sha256_of(self.src)
        up = self.user("uploader", self.hub.endpoint)
        up.run("create-repo", HUB_REPO)
        up.run("upload-file", HUB_REPO, self.name, self.src)
        files = self.hub.state()["files"]
        if len(files) != 1:
            raise AssertionError("the stand-in holds %d files after one upload" % len(files))
        self.file_hash = files[0]

    # 1. Cold downloads.

    def client_download(self, way, i):
        ep = self.endpoint() if way == "endpoint" else None
        out = os.path.join(self.root, "out", "%s-%d" % (way, i))
        before, cpu = self.storage_bytes(), self.cpu(ep)
        self.load.sample()
        got = self.user("%s-%d" % (way, i), ep.endpoint if ep else self.hub.endpoint).run(
            "download", HUB_REPO, self.name, out)
        fetched = self.storage_bytes() - before
        cpu = self.cpu_since(ep, cpu)
        if got["sha256"] != self.sha256:
            self.problems.append("client download %s %d: sha256 %s, not the file's" % (way, i, got["sha256"]))
        self.check_cold(way, i, fetched)
        shutil.rmtree(out, ignore_errors=True)
        if ep:
            self.last_cold = ep  # its cache holds the file: the hits below read it
            self.drop_previous(ep)
        return {"seconds": got["seconds"], "mb_s": self.size() / got["seconds"] / 1e6, "storage_bytes": fetched,
                "cpu_s": cpu}

    def drop_previous(self, ep):
        prev = getattr(self, "_kept", None)
        if prev is not None:
            self.drop(prev)
        self._kept = ep

    def check_cold(self, what, i, fetched):
        # Every range once from the storage: random bytes do not compress,
        # so the xorbs' bytes are the file's and a header per chunk.
        if not self.size() <= fetched < self.size() * 1.02:
            self.problems.append("%s %d: %d bytes from the storage for a file of %d" % (what, i, fetched, self.size()))

    def size(self):
        return self.args.mib * MIB

    def reconstruction(self, ep, version="v2"):
        """(status, body bytes) of the file's reconstruction, from the
        stand-in itself (ep None, HTTPS) or through an endpoint."""
        if ep is None:
            conn = http.client.HTTPSConnection("127.0.0.1", self.hub.cas_port, timeout=60, context=self.ssl)
        else:
            conn = http.client.HTTPConnection("127.0.0.1", ep.cas_port, timeout=60)
        try:
            conn.request("GET", "/%s/reconstructions/%s" % (version, self.file_hash),
                         headers={"Authorization": "Bearer " + ACCESS_TOKEN})
            r = conn.getresponse()
            return r.status, r.read()
        finally:
            conn.close()

    def ranges(self, ep):
        """[(url, first, last)] of the file's v2 reconstruction: one per
        range, as the client fetches them."""
        status, body = self.reconstruction(ep)
        if status != 200:
            raise AssertionError("reconstruction: %d %s" % (status, body[:300]))
        out = []
        for entries in json.loads(body)["xorbs"].values():
            for e in entries:
                for r in e["ranges"]:
                    out.append((e["url"], r["bytes"]["start"], r["bytes"]["end"]))
        want = "/xet/o/" if ep else "Signature="
        if not all(want in u for u, _, _ in out):
            raise AssertionError("the reconstruction's URLs are not %s's: %s" % ("the endpoint" if ep else "the storage",
                                                                                  out[:2]))
        return out

    def curl(self, ranges, parallel):
        """Every range to /dev/null by one curl (at once with `parallel`);
        seconds, and a problem per range not fetched whole."""
        # (--parallel-immediate: else curl waits for the first transfer on
        # plain HTTP/1.1 to end before it opens more connections, as if it
        # could multiplex, and a cold endpoint's ranges would go one after
        # the other)
        args = ["curl", "--noproxy", "*", "-s", "-S"]
        if parallel:
            args += ["-Z", "--parallel-immediate", "--parallel-max", "64"]
        for n, (url, first, last) in enumerate(ranges):
            if n:
                args.append("--next")
            args += ["--cacert", self.tls["ca"], "-r", "%d-%d" % (first, last), "-o", "/dev/null",
                     "-w", "%{http_code} %{size_download}\\n", url]
        t0 = time.monotonic()
        r = subprocess.run(args, capture_output=True, text=True)
        seconds = time.monotonic() - t0
        got = sorted(tuple(int(x) for x in line.split()) for line in r.stdout.split("\n") if line.strip())
        want = sorted((206, last + 1 - first) for _, first, last in ranges)
        if r.returncode != 0 or got != want:
            self.problems.append("curl: exit %d, got %s, want %s: %s" % (r.returncode, got[:4], want[:4],
                                                                         r.stderr[-300:]))
        return seconds

    def storage_rate(self, bytes_per_s):
        conn = http.client.HTTPSConnection("127.0.0.1", self.hub.cas_port, timeout=30, context=self.ssl)
        conn.request("POST", "/_standin/storage-rate", body=str(int(bytes_per_s)).encode())
        if conn.getresponse().status != 200:
            raise AssertionError("the stand-in refused its storage rate")
        conn.close()

    def paced_download(self, way, i):
        self.storage_rate(self.args.paced_mbps * 1e6)
        try:
            return self.bare_download(way, i)
        finally:
            self.storage_rate(0)

    def bare_download(self, way, i):
        ep = self.endpoint() if way == "endpoint" else None
        ranges = self.ranges(ep)
        proxy = None
        if way == "nginx_cache":
            # The storage's own URLs, asked of a plain caching nginx in
            # front of it instead (the same path and signed query).
            proxy = caching_nginx(self.h, os.path.join(self.root, "nginx-cache-%d" % i), ranges[0][0])
            self.procs.append(proxy)
            ranges = [(proxy.url + re.sub(r"^https://[^/]+", "", u), a, b) for u, a, b in ranges]
        before, cpu = self.storage_bytes(), self.cpu(ep or proxy)
        self.load.sample()
        seconds = self.curl(ranges, parallel=True)
        fetched = self.storage_bytes() - before
        self.check_cold("bare fetch " + way, i, fetched)
        out = {"seconds": seconds, "mb_s": self.size() / seconds / 1e6, "ranges": len(ranges),
               "storage_bytes": fetched, "cpu_s": self.cpu_since(ep or proxy, cpu)}
        if ep:
            self.drop(ep)
        if proxy:
            proxy.stop()
            self.procs.remove(proxy)
            shutil.rmtree(proxy.root, ignore_errors=True)
        return out

    def cpu(self, ep):
        return {"nginx": cpu_seconds(ep.proc.p.pid) if ep else 0.0, "dedupd": cpu_seconds(self.dedupd.proc.p.pid),
                "standin": cpu_seconds(self.hub.proc.p.pid)}

    def cpu_since(self, ep, before):
        now = self.cpu(ep)
        return {k: now[k] - before[k] for k in now}

    def cold(self):
        kinds = {"client": self.client_download, "bare": self.bare_download}
        if self.args.paced_mbps:
            kinds["paced"] = self.paced_download
        runs = {"%s_%s" % (k, w): [] for k in kinds for w in ("direct", "endpoint")}
        runs["bare_nginx_cache"] = []
        for i in range(self.args.repeat):
            for kind, download in kinds.items():
                ways = ["direct", "endpoint"] if i % 2 == 0 else ["endpoint", "direct"]
                if kind == "bare":
                    ways.insert(1, "nginx_cache")
                for way in ways:
                    print("cold %d of %d: %s %s ..." % (i + 1, self.args.repeat, kind, way), file=sys.stderr)
                    runs["%s_%s" % (kind, way)].append(download(way, i))
        return runs

    # 2. Hits.

    def cache_file(self, ep, xorb, start, end):
        """nginx's cache file of an object (levels=1:2 of md5 of its key)
        and where its body starts in it."""
        key = "xet1:%s:%d-%d" % (xorb, start, end)
        md5 = hashlib.md5(key.encode()).hexdigest()
        path = os.path.join(ep.cache_dir, md5[-1], md5[-3:-1], md5)
        with open(path, "rb") as f:
            head = f.read(64 * 1024)
        at = head.index(b"\nKEY: " + key.encode() + b"\n")
        return path, head.index(b"\r\n\r\n", at) + 4

    def hit_ranges(self, ep):
        """[(path and query, first, last, cache file, body offset)] of the
        file's ranges through a warm endpoint."""
        out = []
        for url, first, last in self.ranges(ep):
            uri = url[len(ep.cas_url):]
            m = re.match(r"/xet/o/([0-9a-f]{64})/(\d+)-(\d+)\?", uri)
            path, offset = self.cache_file(ep, m.group(1), int(m.group(2)), int(m.group(3)))
            out.append((uri, first, last, path, offset))
        return out

    def read_http(self, port, requests, buf, hit=True):
        """Seconds to read every (path, first, last) on `port`, one after
        the other on one connection, readinto `buf`; a problem unless each
        is a 206 of its length (and, with `hit`, from the cache)."""
        view = memoryview(buf)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        t0 = time.monotonic()
        for uri, first, last in requests:
            conn.request("GET", uri, headers={"Range": "bytes=%d-%d" % (first, last)})
            r = conn.getresponse()
            n = 0
            while True:
                k = r.readinto(view)
                if not k:
                    break
                n += k
            if r.status != 206 or n != last + 1 - first or (hit and r.getheader("X-Xet-Cache") != "HIT"):
                self.problems.append("read of %s: %d, %d bytes of %d, cache %s" % (
                    uri[:40], r.status, n, last + 1 - first, r.getheader("X-Xet-Cache")))
        seconds = time.monotonic() - t0
        conn.close()
        return seconds

    @staticmethod
    def read_files(ranges, buf):
        """Seconds to read the same bytes of the cache files into `buf`."""
        view = memoryview(buf)
        t0 = time.monotonic()
        for _, first, last, path, offset in ranges:
            left = last + 1 - first
            with open(path, "rb", buffering=0) as f:
                f.seek(offset + first)
                while left:
                    k = f.readinto(view[:min(left, len(view))])
                    if not k:
                        raise AssertionError("%s ends early" % path)
                    left -= k
        return time.monotonic() - t0

    @staticmethod
    def cat(ranges):
        t0 = time.monotonic()
        subprocess.run(["cat"] + [path for _, _, _, path, _ in ranges], stdout=subprocess.DEVNULL, check=True)
        return time.monotonic() - t0

    def hits(self):
        ep = self.last_cold
        ranges = self.hit_ranges(ep)
        nbytes = sum(last + 1 - first for _, first, last, _, _ in ranges)
        cat_bytes = sum(os.path.getsize(p) for _, _, _, p, _ in ranges)
        # The same bytes of the same files from a plain nginx (no dedupd, no
        # cache, no check): what HTTP on loopback costs here.
        plain = plain_nginx(self.h, os.path.join(self.root, "plain-nginx"), ep.cache_dir)
        self.procs.append(plain)
        on_ep = [(uri, first, last) for uri, first, last, _, _ in ranges]
        on_plain = [("/" + os.path.relpath(path, ep.cache_dir), offset + first, offset + last)
                    for _, first, last, path, offset in ranges]
        buf = bytearray(READ_BUFFER)
        before = self.storage_bytes()
        ways = {
            "file": lambda: self.read_files(ranges, buf),
            "plain": lambda: self.read_http(plain.port, on_plain, buf, hit=False),
            "http": lambda: self.read_http(ep.cas_port, on_ep, buf),
            "cat": lambda: self.cat(ranges),
            "plain_curl": lambda: self.curl([("http://127.0.0.1:%d%s" % (plain.port, u), a, b) for u, a, b in on_plain],
                                            parallel=False),
            "curl": lambda: self.curl([(ep.cas_url + u, a, b) for u, a, b in on_ep], parallel=False),
        }
        for run in ways.values():  # once untimed: the files in the page cache, every way warm
            run()
        runs = {k: [] for k in ways}
        names = list(ways)
        for i in range(max(15, self.args.repeat)):
            # The order turns each round, so no way always follows another.
            for name in names[i % len(names):] + names[:i % len(names)]:
                self.load.sample()
                s = ways[name]()
                runs[name].append({"seconds": s, "mb_s": (cat_bytes if name == "cat" else nbytes) / s / 1e6})
        if self.storage_bytes() != before:
            self.problems.append("hits fetched %d bytes from the storage" % (self.storage_bytes() - before))
        # The whole client on the warm endpoint, for the record.
        out = os.path.join(self.root, "out", "warm")
        got = self.user("warm", ep.endpoint).run("download", HUB_REPO, self.name, out)
        if got["sha256"] != self.sha256 or self.storage_bytes() != before:
            self.problems.append("warm client download: sha256 %s, %d bytes from storage"
                                 % (got["sha256"], self.storage_bytes() - before))
        shutil.rmtree(out, ignore_errors=True)
        return {"ranges": len(ranges), "bytes": nbytes, "runs": runs,
                "client_warm": {"seconds": got["seconds"], "mb_s": self.size() / got["seconds"] / 1e6}}

    # 3. The reconstruction answer.

    def answers(self):
        ctx = self.ssl
        conn = http.client.HTTPSConnection("127.0.0.1", self.hub.cas_port, timeout=30, context=ctx)
        conn.request("POST", "/_standin/synthetic-file", body=str(self.args.terms).encode())
        synthetic = json.loads(conn.getresponse().read())["file"]
        conn.close()
        rewriting = self.endpoint()
        passing = self.endpoint(pass_through_template(self.root))
        conns = {"rewrite": http.client.HTTPConnection("127.0.0.1", rewriting.cas_port, timeout=30),
                 "pass": http.client.HTTPConnection("127.0.0.1", passing.cas_port, timeout=30)}
        eps = {"rewrite": rewriting, "pass": passing}
        out = {}
        for version in ("v2", "v1"):
            path = "/%s/reconstructions/%s" % (version, synthetic)
            ms = {"rewrite": [], "pass": []}
            # CPU seconds each way cost, summed over its asks: nginx's (that
            # endpoint's), dedupd's, the stand-in's (what the load does not move)
            cpu = {w: {"nginx": 0.0, "dedupd": 0.0, "standin": 0.0} for w in ms}
            sizes = {}
            for i in range(self.args.answers + 5):
                order = ("rewrite", "pass") if i % 2 == 0 else ("pass", "rewrite")
                for way in order:
                    if i % 50 == 0:
                        self.load.sample()
                    before = self.cpu(eps[way])
                    t0 = time.perf_counter()
                    conns[way].request("GET", path, headers={"Authorization": "Bearer " + ACCESS_TOKEN})
                    r = conns[way].getresponse()
                    body = r.read()
                    t = (time.perf_counter() - t0) * 1000
                    if i >= 5:  # the first few warm both paths (connections, caches)
                        ms[way].append(t)
                        for k, v in self.cpu_since(eps[way], before).items():
                            cpu[way][k] += v
                    sizes[way] = len(body)
                    renamed = body.count(b"/xet/o/")
                    if r.status != 200 or renamed != (self.args.terms if way == "rewrite" else 0):
                        self.problems.append("%s %s answer: %d, %d URLs renamed of %d"
                                             % (version, way, r.status, renamed, self.args.terms))
            out[version] = {"ms": ms, "bytes": sizes,
                            "cpu_ms": {w: {k: 1000 * v / len(ms[w]) for k, v in c.items()} for w, c in cpu.items()}}
        for c in conns.values():
            c.close()
        return out


class BenchNginx:
    """An nginx of the bench's own on a free port, as the endpoint's user
    (so it reads nginx's 0600 cache files), sendfile on as the endpoint's
    template has it, no log; `http` is what its http block holds beside
    that, with {port} for its port."""

    def __init__(self, h, root, what, http):
        self.root, self.what = root, what
        os.makedirs(os.path.join(root, "logs"), exist_ok=True)
        self.port = h.free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        user = "user nobody nogroup;\n" if os.geteuid() == 0 else ""
        conf = os.path.join(root, "nginx.conf")
        with open(conf, "w") as f:
            f.write("%sdaemon off;\nworker_processes 2;\npid nginx.pid;\nevents { worker_connections 256; }\n"
                    "http {\n access_log off;\n client_body_temp_path cb;\n proxy_temp_path pt;\n"
                    " fastcgi_temp_path ft;\n uwsgi_temp_path ut;\n scgi_temp_path st;\n sendfile on;\n%s}\n"
                    % (user, http.replace("{port}", str(self.port))))
        self.proc = h.Proc([h.find_nginx(), "-p", root, "-c", conf, "-e", os.path.join(root, "logs", "error.log")],
                           os.path.join(root, "nginx.out"))
        h.wait_for(what + " to listen", self.listening, timeout=20)

    def listening(self):
        if self.proc.p.poll() is not None:
            raise AssertionError("%s exited:\n%s" % (self.what, self.proc.tail()))
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
            return True
        except OSError:
            return False

    def stop(self):
        self.proc.stop()


def plain_nginx(h, root, serve_dir):
    """nginx serving `serve_dir` as plain files, nothing else."""
    return BenchNginx(h, root, "plain nginx", " server { listen 127.0.0.1:{port}; root %s; }\n" % serve_dir)


def caching_nginx(h, root, storage_url):
    """A plain nginx caching the storage's answers (TLS to it, proxy_cache
    keyed by URL and Range, an empty cache), no dedupd: the least any
    endpoint costs whose bytes nginx moves and caches, as the endpoint's
    do (the floor of its cold path beside the direct one)."""
    upstream = re.match(r"^https://[^/]+", storage_url).group(0)
    return BenchNginx(h, root, "caching nginx",
                      " proxy_cache_path %s levels=1:2 keys_zone=bench:16m max_size=20g use_temp_path=off;\n"
                      " server {\n  listen 127.0.0.1:{port};\n  location / {\n   proxy_pass %s;\n"
                      "   proxy_ssl_verify off;\n   proxy_http_version 1.1;\n   proxy_set_header Connection \"\";\n"
                      "   proxy_cache bench;\n   proxy_cache_key \"$uri$is_args$args|$http_range\";\n"
                      "   proxy_set_header Range $http_range;\n   proxy_cache_valid 200 206 1h;\n"
                      "   proxy_buffering on;\n  }\n }\n" % (os.path.join(root, "cache"), upstream))


def pct(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def med(runs, key="mb_s"):
    return statistics.median(r[key] for r in runs)


def cold_table(cold, args):
    rows = []
    c_d, c_e = med(cold["client_direct"]), med(cold["client_endpoint"])
    b_d, b_e = med(cold["bare_direct"]), med(cold["bare_endpoint"])
    rows.append(("real client (hf_hub_download), straight to the storage (baseline)", "%.0f MB/s" % c_d, "", ""))
    rows.append(("real client through the endpoint, empty cache", "%.0f MB/s" % c_e, "%.2fx" % (c_e / c_d),
                 ">= 0.95x"))
    rows.append(("curl of the same ranges at once, straight (baseline)", "%.0f MB/s" % b_d, "", ""))
    rows.append(("curl of the same ranges at once through the endpoint, empty cache", "%.0f MB/s" % b_e,
                 "%.2fx" % (b_e / b_d), ">= 0.95x"))
    if cold.get("bare_nginx_cache"):
        b_n = med(cold["bare_nginx_cache"])
        rows.append(("the same through a plain caching nginx, no dedupd (the floor of nginx moving and caching "
                     "the bytes)", "%.0f MB/s" % b_n, "%.2fx" % (b_n / b_d), ""))
    if "paced_direct" in cold:
        p_d, p_e = med(cold["paced_direct"]), med(cold["paced_endpoint"])
        rows.append(("the same, each storage answer paced at %g MB/s (a CDN's connection), straight (baseline)"
                     % args.paced_mbps, "%.0f MB/s" % p_d, "", ""))
        rows.append(("the same paced, through the endpoint, empty cache", "%.0f MB/s" % p_e, "%.2fx" % (p_e / p_d),
                     ""))
    print("\ncold: %d MiB file of random bytes, %d ranges, median of %d each way"
          % (args.mib, cold["bare_endpoint"][0]["ranges"], args.repeat))
    print(base.markdown_table(("", "throughput", "ratio", "goal"), ("---", "---:", "---:", "---"), rows))


def hits_table(hits, cold, args):
    runs = hits["runs"]
    m = {k: med(v) for k, v in runs.items()}
    rows = [("read of nginx's cache files, 1 MiB reads (baseline)", "%.0f MB/s" % m["file"], "", ""),
            ("plain nginx, the same bytes of the same files (HTTP's own cost)", "%.0f MB/s" % m["plain"],
             "%.2fx" % (m["plain"] / m["file"]), ""),
            ("hits through the endpoint, 1 MiB reads (http.client)", "%.0f MB/s" % m["http"],
             "%.2fx" % (m["http"] / m["file"]), ">= 1000 MB/s, >= 0.83x"),
            ("cat of the cache files to /dev/null (baseline)", "%.0f MB/s" % m["cat"], "", ""),
            ("plain nginx, curl to /dev/null", "%.0f MB/s" % m["plain_curl"], "%.2fx" % (m["plain_curl"] / m["cat"]),
             ""),
            ("hits through the endpoint, curl to /dev/null", "%.0f MB/s" % m["curl"], "%.2fx" % (m["curl"] / m["cat"]),
             ">= 1000 MB/s, >= 0.83x")]
    warm = hits["client_warm"]["mb_s"]
    if cold:
        c_d = med(cold["client_direct"])
        rows.append(("(real client through the endpoint, all hits; beside it straight)", "%.0f MB/s" % warm,
                     "%.2fx" % (warm / c_d), ""))
    print("\nhits: the %d ranges (%d bytes) one after the other, median of %d; the endpoint against plain nginx: "
          "%.2fx (http.client), %.2fx (curl)" % (hits["ranges"], hits["bytes"], len(runs["http"]),
                                                 m["http"] / m["plain"], m["curl"] / m["plain_curl"]))
    print(base.markdown_table(("", "throughput", "ratio", "goal"), ("---", "---:", "---:", "---"), rows))


def answers_table(answers, args):
    rows = []
    for version, a in answers.items():
        p = {w: (pct(a["ms"][w], 0.5), pct(a["ms"][w], 0.99)) for w in ("pass", "rewrite")}
        rows.append(("%s, nginx passes it through (baseline), %d KB" % (version, a["bytes"]["pass"] // 1000),
                     "%.2f" % p["pass"][0], "%.2f" % p["pass"][1], ""))
        rows.append(("%s, dedupd renames its URLs, %d KB" % (version, a["bytes"]["rewrite"] // 1000),
                     "%.2f" % p["rewrite"][0], "%.2f" % p["rewrite"][1], ""))
        c = a["cpu_ms"]
        added = sum(c["rewrite"].values()) - sum(c["pass"].values())
        rows.append(("%s, added by the rewrite (CPU: %+.2f ms an answer, of it dedupd %.2f, nginx %+.2f)"
                     % (version, added, c["rewrite"]["dedupd"], c["rewrite"]["nginx"] - c["pass"]["nginx"]),
                     "%+.2f" % (p["rewrite"][0] - p["pass"][0]), "%+.2f" % (p["rewrite"][1] - p["pass"][1]),
                     "p99 <= +2 ms"))
    print("\nreconstruction answer of %d terms, %d asks of each endpoint, interleaved (ms)"
          % (args.terms, args.answers))
    print(base.markdown_table(("", "p50 ms", "p99 ms", "goal"), ("---", "---:", "---:", "---"), rows))


def table(result, args):
    if "cold" in result:
        cold_table(result["cold"], args)
    if "hits" in result:
        hits_table(result["hits"], result.get("cold"), args)
    if "answers" in result:
        answers_table(result["answers"], args)
    load = result["machine"]["load"]
    print("\nhf_xet %s, %s; %d CPUs; load average (1 min) during the runs: min %.1f, median %.1f, max %.1f"
          % (result["hf_xet"], result["nginx"], os.cpu_count(), load["min"], load["median"], load["max"]))


def main():
    args = parse_args()
    harness = base.import_harness(args.build)
    harness.require_client()
    harness.find_nginx()
    if not shutil.which("curl"):
        print("bench_xet_download: no curl", file=sys.stderr)
        return 77
    root = tempfile.mkdtemp(prefix="dedupd-bench-download-", dir=args.dir)
    bench, failed = None, True
    try:
        bench = Bench(args, harness, root)
        print("uploading %d MiB ..." % args.mib, file=sys.stderr)
        bench.upload()
        result = {"mib": args.mib, "repeat": args.repeat, "terms": args.terms}
        parts = args.part or ["cold", "hits", "answers"]
        if "cold" in parts:
            result["cold"] = bench.cold()
        if "hits" in parts:
            print("hits ...", file=sys.stderr)
            if "cold" not in parts:
                bench.client_download("endpoint", 0)  # (fills a cache)
            result["hits"] = bench.hits()
        if "answers" in parts:
            print("reconstruction answers ...", file=sys.stderr)
            result["answers"] = bench.answers()
        result.update({"hf_xet": harness.hf_xet_version(), "nginx": nginx_version(harness.find_nginx()),
                       "machine": {"cpus": os.cpu_count(), "kernel": platform.release(),
                                   "load": bench.load.summary()},
                       "date_utc": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())})
        table(result, args)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(result, f, indent=1)
        failed = bool(bench.problems)
        return base.report("bench_xet_download", bench.problems)
    finally:
        if bench:
            bench.stop()
        base.scratch_done(root, failed, args.keep)


if __name__ == "__main__":
    sys.exit(main())
