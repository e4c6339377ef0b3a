"""Runs the real programs for the real-client tests: dedupd (watching a Xet
client's cache), the CAS stand-in (cas_standin.py) and the real client
(hf_xet, in the virtualenv ./dev test made, through xet_client.py).

Paths come from the environment ctest sets (tests/xet_client/CMakeLists.txt):
DEDUPD, DEDUPCTL, XET_PYTHON. Without a usable hf_xet the tests are skipped
(exit 77, which ctest shows as skipped) with a notice, unless
DEDUPD_XET_REQUIRED=1 (CI), where that is a failure.

XET_PAIR names the clients the test runs with: unset or "newest", the
pair (huggingface_hub and hf_xet) of requirements.txt; "1.1", "1.4" and the
other names of requirements-<pair>.txt, the older releases the endpoint
serves (docs/XET-ENDPOINT.md "Which clients"); "js", @huggingface/hub from
js/package-lock.json, run by Node.js from XET_JS_MODULES (its node_modules).
A pair's virtualenv is XET_PYTHON's when that is set, else
XET_VENV_ROOT/xet-venv[-PAIR] (a build directory ./dev test filled). The
installed versions must be the pins: a virtualenv of another pair fails the
test, never runs it.

Under an older pair or "js", the tests marked `once` (nothing in them is the
client's: plain requests, nginx or dedupd alone) are not run at all; they
run with the newest pair; those marked `ends_only` run with the newest and
the oldest pair only. A test that a client cannot take skips, with the
reason ../skips.txt gives it; a skip not listed there fails.
"""

import hashlib
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

from digests import sha256_of  # noqa: F401 (harness.sha256_of, for the tests)

HERE = os.path.dirname(os.path.abspath(__file__))
DEDUPD = os.environ.get("DEDUPD", "")
DEDUPCTL = os.environ.get("DEDUPCTL", "")
XET_PAIR = os.environ.get("XET_PAIR", "") or "newest"
SKIP = 77


JS_LOCK = os.path.join(HERE, "js", "package-lock.json")
SKIPS = os.path.join(HERE, "..", "skips.txt")


def is_js():
    """Whether this run's client is @huggingface/hub (Node.js), not hf_xet."""
    return XET_PAIR == "js"


def has_shard_cache():
    """Whether the client keeps a Xet cache on disk (hf_xet does, under
    HF_XET_CACHE; @huggingface/hub keeps what it learns in memory only)."""
    return not is_js()


def chunks_like_xet_core():
    """Whether the client cuts a file into the chunks dedupd and `dedupctl
    scan` cut it into. hf_xet up to 1.1.9 and @huggingface/hub 2.17.5 do
    not always: their chunker can end a chunk before the 8 KiB minimum, on
    what the rolling hash kept from before the chunk (xet-core fixed it in
    1.1.10, "eliminate spurious boundary triggering"); chunks of 8,128
    bytes show it. So a file they upload shares most but not all of its
    chunks with the same file from a newer hf_xet, and scan's prediction of
    what they send is only a bound; the same file from two hosts of the same
    client shares every chunk."""
    if is_js():
        return False
    return tuple(int(x) for x in pair_pins()["hf_xet"].split(".")[:3]) >= (1, 1, 10)


def pair_requirements(pair=None):
    pair = pair or XET_PAIR
    if pair == "js":
        return JS_LOCK
    return os.path.join(HERE, "requirements.txt" if pair == "newest" else "requirements-%s.txt" % pair)


def pair_pins(pair=None):
    """{"hf_xet": version, "huggingface_hub": version} pinned for a pair;
    {"@huggingface/hub": version} for "js"."""
    import re
    with open(pair_requirements(pair)) as f:
        text = f.read()
    if (pair or XET_PAIR) == "js":
        return {"@huggingface/hub": json.loads(text)["packages"]["node_modules/@huggingface/hub"]["version"]}
    return dict(re.findall(r"^(hf_xet|huggingface_hub)==(\S+)", text, re.M))


def _pair_python():
    if os.environ.get("XET_PYTHON"):
        return os.environ["XET_PYTHON"]
    root = os.environ.get("XET_VENV_ROOT", "")
    if not root:
        return ""
    pair = "newest" if is_js() else XET_PAIR
    return os.path.join(root, "xet-venv" if pair == "newest" else "xet-venv-" + pair, "bin", "python")


XET_PYTHON = _pair_python()
XET_JS_MODULES = os.environ.get("XET_JS_MODULES", "") or (
    os.path.join(os.environ["XET_VENV_ROOT"], "xet-js", "node_modules") if os.environ.get("XET_VENV_ROOT") else "")


# The CAS routes as each client release spells them (docs/XET-ENDPOINT.md,
# "Which clients"), for reading nginx's and the stand-ins' logs (a path of
# the access log, split, keeps the request's closing quote).
import re as _re
CHUNK_QUERY = _re.compile(r"^/(?:v1/chunks|chunks|chunk)/[^/]+/[0-9a-fA-F]{64}$")
XORB_UPLOAD = _re.compile(r"^/(?:v1/xorbs|xorbs|xorb)/[^/]+/[0-9a-f]{64}$")
SHARD_UPLOAD = _re.compile(r"^/(?:v2/shards|v1/shards|shards|shard/[^/]+/[0-9a-f]{64})$")
RECONSTRUCTION = _re.compile(r"^/(?:v2/reconstructions|v1/reconstructions|reconstructions|reconstruction)/")


def is_chunk_query(path):
    return bool(CHUNK_QUERY.match(path.split("?", 1)[0].strip('"')))


def is_xorb_upload(path):
    return bool(XORB_UPLOAD.match(path.split("?", 1)[0].strip('"')))


def is_shard_upload(path):
    return bool(SHARD_UPLOAD.match(path.split("?", 1)[0].strip('"')))


def is_reconstruction(path):
    return bool(RECONSTRUCTION.match(path.split("?", 1)[0].strip('"')))


def expected_shard_routes(hf_xet):
    """The shard-upload paths a release asks through the endpoint, in order
    (nginx answers /v2/shards itself with a 404); "js" for @huggingface/hub."""
    if hf_xet == "js":
        return ["/v1/shards"]
    v = tuple(int(x) for x in hf_xet.split(".")[:3])
    if v < (1, 1, 10):
        return ["/shard/{prefix}/{hash}"]
    if v < (1, 5, 2):
        return ["/shards"]
    if v < (1, 6, 0):
        return ["/v1/shards"]
    return ["/v2/shards", "/v1/shards"]


def shard_route(path):
    """A shard-upload path as expected_shard_routes writes it."""
    path = path.split("?", 1)[0].strip('"')
    return _re.sub(r"^/shard/[^/]+/[0-9a-f]{64}$", "/shard/{prefix}/{hash}", path)


def cache_dir_prefix(url):
    """The readable half of the cache directory name hf_xet gives a CAS URL:
    its first 16 characters, each not an ASCII letter or digit as '_', then
    '-' (the rest is a hash only dedupd computes: xetcache/cas_url.hpp)."""
    return "".join(c if c.isascii() and c.isalnum() else "_" for c in url[:16]) + "-"


def newest_pair():
    """Whether this run has the newest clients; the tests marked `once`
    run with those only."""
    return XET_PAIR == "newest"


def once(why):
    """Marks a test in which no request is the client's own (plain requests,
    or a client only preparing what nginx or dedupd alone is tested on, as
    `why` says): it runs with the newest pair, and is not part of the other
    pairs' runs at all (PairLoader)."""
    def mark(test):
        test.once = why
        return test
    return mark


OLDEST_PAIR = "1.1.9"


def download_cache_files(cache_dir):
    """nginx's cache files of an endpoint's download cache, by path: size."""
    out = {}
    for d, _, names in os.walk(cache_dir):
        for n in names:
            p = os.path.join(d, n)
            if len(n) == 32 and os.path.isfile(p):
                out[p] = os.path.getsize(p)
    return out


def flip_middle_bit(path):
    """One bit of the byte in the middle of `path` flipped, its size kept
    (in a cached object: a chunk's stored data, which the structure check
    passes)."""
    with open(path, "r+b") as f:
        f.seek(os.path.getsize(path) // 2)
        byte = f.read(1)[0]
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte ^ 1]))


def assert_each_range_once(test, served):
    """That the storage served each range it was asked once (the stand-in's
    state()["storage"]["xorbs"]: xorb -> {"first-last": bytes served}), and
    the bytes it served in all."""
    total = 0
    for xorb, ranges in served.items():
        for r, n in ranges.items():
            first, last = (int(x) for x in r.split("-"))
            test.assertEqual(n, last + 1 - first, "%s %s fetched more than once" % (xorb, r))
            total += n
    return total


def ends_only(why):
    """Marks a test whose client part the pairs between the newest and the
    oldest take as one of those two does (as `why` says): it runs with the
    newest and the oldest pair only, and is not part of the other pairs'
    runs at all (PairLoader). Each of those costs CI time per pair."""
    def mark(test):
        test.ends_only = why
        return test
    return mark


class PairLoader(unittest.TestLoader):
    """Leaves the tests marked `once` out of every run but the newest pair's,
    and those marked `ends_only` out of the runs between the newest and the
    oldest pair."""

    def getTestCaseNames(self, test_case_class):
        names = super().getTestCaseNames(test_case_class)
        if newest_pair():
            return names
        keep = [n for n in names if not getattr(getattr(test_case_class, n), "once", None)]
        if XET_PAIR == OLDEST_PAIR:
            return keep
        return [n for n in keep if not getattr(getattr(test_case_class, n), "ends_only", None)]


def listed_skips():
    """{(ctest name, test method or ""): reason} from ../skips.txt, whose
    lines read `<ctest name> [<test method>]: <reason>`."""
    out = {}
    with open(SKIPS) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            head, _, reason = line.partition(": ")
            name, _, method = head.partition(" ")
            out[(name, method)] = reason
    return out


def ctest_name():
    """This run's ctest name: xetclient.<part>[@<pair>]."""
    part = os.path.basename(sys.argv[0])[len("test_"):-len(".py")]
    return "xetclient." + part + ("" if newest_pair() else "@" + XET_PAIR)


def cannot_take(*pairs):
    """Skips a test under the named pairs (e.g. "js"), with the reason
    ../skips.txt gives for it; a skip the list does not name fails."""
    def mark(test):
        def run(self, *args, **kwargs):
            if XET_PAIR not in pairs:
                return test(self, *args, **kwargs)
            reason = listed_skips().get((ctest_name(), test.__name__))
            if reason is None:
                self.fail("%s %s skips under XET_PAIR=%s, but %s does not list it" % (
                    ctest_name(), test.__name__, XET_PAIR, os.path.normpath(SKIPS)))
            self.skipTest(reason)
        run.__name__, run.__doc__ = test.__name__, test.__doc__
        return run
    return mark


def require_client():
    """Exits 77 (skipped) or 1 (CI) when the real client cannot run here."""
    if is_js():
        return require_js_client()
    why = None
    if not os.path.exists(pair_requirements()):
        print("XET_PAIR=%s: no %s" % (XET_PAIR, pair_requirements()), file=sys.stderr)
        sys.exit(1)
    if not XET_PYTHON or not os.path.exists(XET_PYTHON):
        why = "no virtualenv with hf_xet at %r (./dev test makes it)" % XET_PYTHON
    else:
        r = subprocess.run([XET_PYTHON, "-c", "import json, hf_xet, huggingface_hub; from importlib.metadata "
                            "import version; print(json.dumps({p: version(p) for p in ('hf_xet', "
                            "'huggingface_hub')}))"], capture_output=True, text=True)
        if r.returncode != 0:
            why = "hf_xet or huggingface_hub does not import: " + r.stderr.strip()[-400:]
        elif json.loads(r.stdout) != pair_pins():
            # The wrong pair would pass for the right one: always a failure.
            print("XET_PAIR=%s wants %s; %s has %s" % (XET_PAIR, pair_pins(), XET_PYTHON, r.stdout.strip()),
                  file=sys.stderr)
            sys.exit(1)
    client_missing(why)


def client_missing(why):
    """Returns when `why` is None; else skips the whole run (exit 77), or
    fails it under DEDUPD_XET_REQUIRED=1 (CI)."""
    if why is None:
        return
    banner = "*" * 72
    print("%s\nREAL XET CLIENT TESTS NOT RUN: %s\n%s" % (banner, why, banner), file=sys.stderr)
    sys.exit(1 if os.environ.get("DEDUPD_XET_REQUIRED") == "1" else SKIP)


def require_js_client():
    why = None
    package = os.path.join(XET_JS_MODULES, "@huggingface", "hub", "package.json")
    if not shutil.which("node"):
        why = "no node (Node.js) on PATH"
    elif not os.path.exists(package):
        why = "no @huggingface/hub at %r (./dev test installs it)" % XET_JS_MODULES
    else:
        with open(package) as f:
            have = {"@huggingface/hub": json.load(f)["version"]}
        if have != pair_pins():
            print("XET_PAIR=js wants %s; %s has %s" % (pair_pins(), XET_JS_MODULES, have), file=sys.stderr)
            sys.exit(1)
    client_missing(why)


def wait_for(what, predicate, timeout=30.0, interval=0.05):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %.0f s waiting for %s" % (timeout, what))
        time.sleep(interval)


def json_call(conn, method, path, body=None):
    """One request on `conn` (closed after), its answer as JSON: the stand-ins'
    own /_standin routes."""
    try:
        conn.request(method, path, body=body)
        return json.loads(conn.getresponse().read())
    finally:
        conn.close()


def random_bytes(n, seed):
    return random.Random(seed).randbytes(n)


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    return path


_PR_SET_PDEATHSIG = 1


def _die_with_parent():
    """In a child before exec: SIGTERM when the test process dies, however
    it dies (a SIGKILL from ctest's timeout included), so no dedupd, nginx
    or stand-in outlives its test. (A change of user clears it: nginx run
    through setpriv sets it again with --pdeathsig.)"""
    import ctypes
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


_live_procs = set()


def _stop_all_and_exit(signum, _frame):
    """A test process told to stop (SIGTERM, SIGINT, SIGHUP) stops its
    children's process groups first, workers included."""
    for p in list(_live_procs):
        p.stop()
    os._exit(128 + signum)


for _sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(_sig, _stop_all_and_exit)


class Proc:
    """A child in its own process group, killed with its group at the end,
    or when the test process is stopped or dies."""

    def __init__(self, args, log_path, env=None):
        self.log_path = log_path
        self.log = open(log_path, "ab")
        self.p = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT, env=env,
                                  start_new_session=True, preexec_fn=_die_with_parent)
        _live_procs.add(self)

    def stop(self):
        _live_procs.discard(self)
        if self.p.poll() is None:
            os.killpg(self.p.pid, signal.SIGTERM)
            try:
                self.p.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.p.pid, signal.SIGKILL)
                self.p.wait()
        self.log.close()

    def tail(self, n=60):
        try:
            with open(self.log_path, "rb") as f:
                return b"\n".join(f.read().splitlines()[-n:]).decode(errors="replace")
        except OSError:
            return ""


class DedupdClient:
    """HTTP to a dedupd on its Unix socket, `self.socket`."""

    timeout = 30

    def connect(self):
        """A connection to keep for several requests."""
        import http.client
        conn = http.client.HTTPConnection("localhost", timeout=self.timeout)
        conn.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.sock.settimeout(self.timeout)
        try:
            conn.sock.connect(self.socket)
        except OSError:
            conn.close()
            raise
        return conn

    def get(self, path, headers=None):
        """(status, body bytes) of a GET on the socket."""
        conn = self.connect()
        try:
            conn.request("GET", path, headers=headers or {})
            r = conn.getresponse()
            return r.status, r.read()
        finally:
            conn.close()

    def get_status_and_header(self, path, headers, name):
        """(status, the value of response header `name` or None) of a GET."""
        conn = self.connect()
        try:
            conn.request("GET", path, headers=headers)
            r = conn.getresponse()
            r.read()
            return r.status, r.getheader(name)
        finally:
            conn.close()

    def json(self, path):
        status, body = self.get(path)
        if status != 200:
            raise AssertionError("GET %s: %d %s" % (path, status, body[:300]))
        return json.loads(body)


class Dedupd(DedupdClient):
    """The real dedupd on its own state dir and socket, watching `watch`."""

    def __init__(self, root, watch, extra_yaml=""):
        self.root = root
        self.socket = os.path.join(root, "dedupd.sock")
        self.config = os.path.join(root, "dedupd.yaml")
        lines = ["state_dir: %s" % json.dumps(os.path.join(root, "state")),
                 "socket: %s" % json.dumps(self.socket),
                 "log_level: debug", "watch:"]
        # A plain path, or a dict for an entry with settings (manage: ...).
        lines += ["  - %s" % (json.dumps(w) if isinstance(w, str) else
                              "{%s}" % ", ".join("%s: %s" % (k, json.dumps(v)) for k, v in w.items()))
                  for w in watch]
        with open(self.config, "w") as f:
            f.write("\n".join(lines) + "\n" + extra_yaml)
        self.proc = Proc([DEDUPD, "--config", self.config], os.path.join(root, "dedupd.log"))
        wait_for("dedupd to answer /healthz", self.healthy, timeout=60)

    def healthy(self):
        if self.proc.p.poll() is not None:
            raise AssertionError("dedupd exited (%s):\n%s" % (self.proc.p.returncode, self.proc.tail()))
        try:
            return self.get("/healthz")[0] == 200
        except OSError:
            return False

    def shards(self, state=None):
        return self.json("/v1/shards" + ("?state=" + state if state else ""))["shards"]

    def ctl(self, *args, check=True, stdin=None):
        r = subprocess.run([DEDUPCTL, "--socket", self.socket, *args], capture_output=True, text=True,
                           input=stdin)
        if check and r.returncode not in (0, 1):
            raise AssertionError("dedupctl %s: exit %d\n%s%s" % (" ".join(args), r.returncode, r.stdout, r.stderr))
        return r

    def stop(self):
        self.proc.stop()


class CasStandin:
    """cas_standin.py on 127.0.0.1, forwarding chunk queries to a dedupd."""

    def __init__(self, root, dedupd_socket=None):
        self.root = root
        os.makedirs(root, exist_ok=True)
        port_file = os.path.join(root, "port")
        args = [sys.executable, os.path.join(HERE, "cas_standin.py"), "--store", root, "--dedupctl", DEDUPCTL,
                "--port-file", port_file]
        if dedupd_socket:
            args += ["--dedupd-socket", dedupd_socket]
        self.proc = Proc(args, os.path.join(root, "standin.log"))
        wait_for("the CAS stand-in to listen", lambda: os.path.exists(port_file), timeout=20)
        with open(port_file) as f:
            self.port = int(f.read())
        self.endpoint = "http://127.0.0.1:%d" % self.port

    def _call(self, method, path, body=None):
        import http.client
        return json_call(http.client.HTTPConnection("127.0.0.1", self.port, timeout=30), method, path, body)

    def state(self):
        return self._call("GET", "/_standin/state")

    def reset(self):
        self._call("POST", "/_standin/reset")

    def forward_to(self, dedupd):
        self._call("POST", "/_standin/forward", (dedupd.socket if dedupd else "").encode())

    def requests(self):
        with open(os.path.join(self.root, "requests.jsonl")) as f:
            return [json.loads(line) for line in f]

    def stop(self):
        self.proc.stop()


def make_test_ca(root):
    """A CA made now with openssl, and a certificate it signs for 127.0.0.1
    and localhost: {"ca", "cert", "key"} paths under root. Nothing of it
    outlives the test."""
    os.makedirs(root, exist_ok=True)
    p = {k: os.path.join(root, k + ".pem") for k in ("ca", "ca-key", "cert", "key")}
    csr, ext = os.path.join(root, "cert.csr"), os.path.join(root, "ext.cnf")
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:127.0.0.1\nbasicConstraints=CA:FALSE\n"
                "keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n")
    steps = [
        ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
         "-subj", "/CN=dedupd test CA", "-keyout", p["ca-key"], "-out", p["ca"],
         "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"],
        ["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=127.0.0.1",
         "-keyout", p["key"], "-out", csr],
        ["x509", "-req", "-in", csr, "-CA", p["ca"], "-CAkey", p["ca-key"], "-CAcreateserial", "-days", "2",
         "-extfile", ext, "-out", p["cert"]],
    ]
    for args in steps:
        r = subprocess.run(["openssl", *args], capture_output=True, text=True)
        if r.returncode != 0:
            raise AssertionError("openssl %s: %s" % (args[0], r.stderr[-2000:]))
    return p


class HubStandin:
    """hub_standin.py: a Hub and its CAS over HTTPS on 127.0.0.1, with a
    certificate from `tls` (make_test_ca), forwarding chunk queries to a
    dedupd."""

    def __init__(self, root, tls, token, access_token, dedupd_socket=None):
        self.root, self.tls, self.token = root, tls, token
        os.makedirs(root, exist_ok=True)
        port_file = os.path.join(root, "ports.json")
        args = [sys.executable, os.path.join(HERE, "hub_standin.py"), "--store", root, "--dedupctl", DEDUPCTL,
                "--cert", tls["cert"], "--key", tls["key"], "--token", token, "--access-token", access_token,
                "--port-file", port_file]
        if dedupd_socket:
            args += ["--dedupd-socket", dedupd_socket]
        if is_js():
            # huggingface_hub puts HF_ENDPOINT in place of the Hub's own URL
            # in a Link header; @huggingface/hub takes it as it is, and the
            # Hub's own URL must then be one it can reach.
            args += ["--public-url", "self"]
        self.proc = Proc(args, os.path.join(root, "standin.log"))
        wait_for("the Hub stand-in to listen", lambda: os.path.exists(port_file), timeout=20)
        with open(port_file) as f:
            ports = json.load(f)
        self.hub_port, self.cas_port = ports["hub"], ports["cas"]
        self.endpoint = "https://127.0.0.1:%d" % self.hub_port
        self.cas_url = "https://127.0.0.1:%d" % self.cas_port

    def _call(self, port, method, path, body=None):
        import http.client
        import ssl
        ctx = ssl.create_default_context(cafile=self.tls["ca"])
        return json_call(http.client.HTTPSConnection("127.0.0.1", port, timeout=30, context=ctx), method, path, body)

    def state(self):
        """What the CAS received (cas_standin's /_standin/state)."""
        return self._call(self.cas_port, "GET", "/_standin/state")

    def hub(self):
        """What the Hub received and holds."""
        return self._call(self.hub_port, "GET", "/_standin/hub")

    def reset(self):
        self._call(self.cas_port, "POST", "/_standin/reset")

    def requests(self):
        """The CAS's request log (cas_standin's)."""
        with open(os.path.join(self.root, "requests.jsonl")) as f:
            return [json.loads(line) for line in f]

    def hold_queries(self, n):
        """The CAS holds its answers to the next n chunk queries (release)."""
        self._call(self.cas_port, "POST", "/_standin/hold-queries", str(n).encode())

    def release(self):
        self._call(self.cas_port, "POST", "/_standin/release")

    def forget_xorbs(self, hashes):
        """The CAS loses these xorbs: a shard naming one is refused (400)."""
        import http.client
        import ssl
        ctx = ssl.create_default_context(cafile=self.tls["ca"])
        conn = http.client.HTTPSConnection("127.0.0.1", self.cas_port, timeout=30, context=ctx)
        conn.request("POST", "/_standin/forget-xorbs", body="\n".join(hashes).encode())
        assert conn.getresponse().status == 200

    def stop(self):
        self.proc.stop()


class FleetDatabase:
    """A throwaway PostgreSQL for a fleet of dedupds (tests/fleet/pg_cluster:
    Unix sockets only, in a private directory, as the postgres user when run
    by root), stopped and deleted by `stop` or once this process is gone."""

    SCRIPT = os.path.join(HERE, "..", "fleet", "pg_cluster")

    def __init__(self, root):
        os.makedirs(root, exist_ok=True)
        self.pointer = os.path.join(root, "pg-cluster")
        r = subprocess.run([self.SCRIPT, "start", self.pointer, str(os.getpid())], capture_output=True, text=True)
        if r.returncode != 0:
            raise AssertionError("pg_cluster start: %s%s" % (r.stdout, r.stderr))
        with open(self.pointer) as f:
            self.dir = f.read().strip()
        with open(os.path.join(self.dir, "url")) as f:
            self.url = f.read().strip()
        self.proc = self  # (RealClientTest prints a log per process on failure)
        self.log_path = os.path.join(self.dir, "primary.log")

    def yaml(self, host, **extra):
        """A dedupd's fleet section, as host `host`."""
        lines = ["fleet:", "  url: %s" % json.dumps(self.url), "  host: %s" % host]
        lines += ["  %s: %s" % (k, json.dumps(v)) for k, v in extra.items()]
        return "\n".join(lines) + "\n"

    def tail(self, n=60):
        return Proc.tail(self, n)

    def stop(self):
        subprocess.run([self.SCRIPT, "stop", self.pointer], capture_output=True)


def have_postgresql():
    import glob
    return bool(glob.glob("/usr/lib/postgresql/*/bin/initdb"))


NGINX_TEMPLATE = os.path.join(HERE, "..", "..", "packaging", "xet-endpoint", "nginx.conf.in")


def endpoint_yaml(settings_path, **extra):
    """dedupd's xet_endpoint section for an endpoint whose settings file is
    `settings_path`. Run by root, the endpoint's nginx runs as nobody:nogroup
    (XetEndpoint): that group is the endpoint's, the one that may teach
    dedupd what the CAS accepted."""
    lines = ["xet_endpoint:", "  config: %s" % json.dumps(settings_path)]
    if os.geteuid() == 0:
        lines.append("  group: nogroup")
    lines += ["  %s: %s" % (k, json.dumps(v)) for k, v in extra.items()]
    return "\n".join(lines) + "\n"


def find_nginx():
    """Debian's nginx (packaging/install-deps), or skip/fail as require_client."""
    for candidate in (shutil.which("nginx"), "/usr/sbin/nginx"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    banner = "*" * 72
    print("%s\nXET ENDPOINT TESTS NOT RUN: no nginx (packaging/install-deps installs it)\n%s" % (banner, banner),
          file=sys.stderr)
    sys.exit(1 if os.environ.get("DEDUPD_XET_REQUIRED") == "1" else SKIP)


_ports_given = set()


def free_port():
    """A port of 127.0.0.1 free now, never one this process was given
    before: the kernel may hand the same port to two binds in a row (seen:
    an endpoint's Hub and CAS ports the same, its CAS requests then served
    by the Hub's server block)."""
    while True:
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        finally:
            s.close()
        if port not in _ports_given:
            _ports_given.add(port)
            return port


def marked_lines(text, keep):
    """The template's lines marked "#@NAME@ " kept (the mark cut) where
    keep[NAME], dropped elsewhere, as dedupd-xet-endpoint does."""
    import re
    out = []
    for line in text.splitlines(True):
        m = re.match(r"#@([A-Z_]+)@ ?", line)
        if m is None:
            out.append(line)
        elif keep[m.group(1)]:
            out.append(line[m.end():])
    return "".join(out)


class XetEndpoint:
    """nginx from packaging/xet-endpoint/nginx.conf.in, unprivileged, in
    its own prefix under root, in front of a HubStandin and a dedupd socket.
    `ca_file` is what upstream certificates must chain to.

    Run by root (a CI container), nginx runs as nobody:nogroup (setpriv),
    never as root: the test gives that user what a deployment would (its
    own directory, the CA file, and the dedupd socket's group, as
    dedupd.socket's SocketGroup does); `grant` does the same for any other
    socket put in dedupd's place."""

    def __init__(self, root, hub, dedupd_socket, ca_file, dedupd_timeout="2s", cas_upstream=None, tier=(),
                 tier_port=None, template=NGINX_TEMPLATE):
        """`tier`: the ports of the fleet's cache tier hosts (on 127.0.0.1)
        this host's misses go to; `tier_port`: the port this host serves the
        tier role on (docs/XET-ENDPOINT.md, "Fleet tier"). `template`: the
        nginx template to render (a bench's copy with parts taken out)."""
        self.root = root
        self.tier_port = tier_port
        self.logs = os.path.join(root, "logs")
        os.makedirs(self.logs, exist_ok=True)
        self.as_nobody = os.geteuid() == 0
        if self.as_nobody:
            import grp
            import pwd
            self.uid, self.gid = pwd.getpwnam("nobody").pw_uid, grp.getgrnam("nogroup").gr_gid
            os.chmod(os.path.dirname(root), 0o711)  # the test's directory: passable, not readable
            os.chmod(os.path.dirname(ca_file), 0o755)
            os.chmod(ca_file, 0o644)
            self.grant(dedupd_socket)
        self.hub_port, self.cas_port = free_port(), free_port()
        self.cache_dir = os.path.join(root, "cache")  # the download cache
        os.makedirs(self.cache_dir, exist_ok=True)
        values = {"HUB_PORT": self.hub_port, "CAS_PORT": self.cas_port,
                  "HUB_UPSTREAM": hub.endpoint, "HUB_TLS_NAME": "localhost",
                  "CAS_UPSTREAM": cas_upstream or hub.cas_url, "CAS_TLS_NAME": "localhost",
                  "CA_FILE": ca_file, "DEDUPD_SOCKET": dedupd_socket, "LOG_DIR": self.logs,
                  "DEDUPD_LEARN_SOCKET": os.path.join(os.path.dirname(dedupd_socket), "dedupd-learn.sock"),
                  "DEDUPD_TIMEOUT": dedupd_timeout, "CACHE_DIR": self.cache_dir,
                  "CACHE_MAX_SIZE": "1g", "WAY_OUT_SOCKET": os.path.join(root, "way-out.sock"),
                  # (the stand-ins' storage URLs name 127.0.0.1: nothing is resolved)
                  "RESOLVER": "127.0.0.1",
                  "TIER_SERVERS": " ".join("server 127.0.0.1:%d max_fails=1 fail_timeout=30s;" % p for p in tier),
                  "TIER_LISTEN": "127.0.0.1:%s" % tier_port}
        with open(template) as f:
            text = marked_lines(f.read(), {"TIER": bool(tier), "NOTIER": not tier, "TIER_HOST": bool(tier_port)})
        for k, v in values.items():
            text = text.replace("@%s@" % k, str(v))
        import re
        left = re.findall(r"@[A-Z_]+@", text)
        if left:
            raise AssertionError("template placeholders not filled: %s" % sorted(set(left)))
        self.config = os.path.join(root, "nginx.conf")
        with open(self.config, "w") as f:
            f.write(text)
        nginx = [find_nginx()]
        if self.as_nobody:
            for d, _, names in os.walk(root):
                for p in [d] + [os.path.join(d, n) for n in names]:
                    os.chown(p, self.uid, self.gid)
            nginx = ["setpriv", "--reuid=%d" % self.uid, "--regid=%d" % self.gid, "--clear-groups",
                     "--pdeathsig", "TERM"] + nginx
        error_log = os.path.join(self.logs, "error.log")
        check = subprocess.run(nginx + ["-t", "-q", "-p", root, "-c", self.config, "-e", error_log],
                               capture_output=True, text=True)
        if check.returncode != 0:
            raise AssertionError("nginx -t: %s%s" % (check.stdout, check.stderr))
        self.proc = Proc(nginx + ["-p", root, "-c", self.config, "-e", error_log], os.path.join(root, "nginx.out"))
        wait_for("nginx to listen", lambda: self._listening(self.hub_port) and self._listening(self.cas_port) and
                 (not tier_port or self._listening(tier_port)), timeout=20)
        self.endpoint = "http://127.0.0.1:%d" % self.hub_port
        self.cas_url = "http://127.0.0.1:%d" % self.cas_port

    def wait_logged(self, where, at_least, timeout=10):
        """The access log's lines for which where(line) holds, once there
        are at least `at_least` of them: nginx writes a request's line as
        the request ends, a moment after the client has its answer."""
        def lines():
            found = [l for l in self.access_log() if where(l)]
            return found if len(found) >= at_least else None
        return wait_for("%d matching lines in nginx's access log" % at_least, lines, timeout)

    def get(self, path, token):
        """(status, headers, body) of a GET on the Hub port with a token."""
        import http.client
        conn = http.client.HTTPConnection("127.0.0.1", self.hub_port, timeout=30)
        try:
            conn.request("GET", path, headers={"Authorization": "Bearer " + token})
            r = conn.getresponse()
            return r.status, r.headers, r.read()
        finally:
            conn.close()

    def worker_peak_rss_kib(self):
        """The largest peak resident set (VmHWM) of nginx's workers."""
        with open("/proc/%d/task/%d/children" % (self.proc.p.pid, self.proc.p.pid)) as f:
            workers = [int(x) for x in f.read().split()]
        peaks = []
        for w in workers:
            with open("/proc/%d/status" % w) as f:
                peaks += [int(l.split()[1]) for l in f if l.startswith("VmHWM:")]
        if not peaks:
            raise AssertionError("no nginx worker found under %d" % self.proc.p.pid)
        return max(peaks)

    def grant(self, socket_path):
        """Lets nginx's user connect to a socket (group nogroup, rw): a
        no-op unless the test runs as root."""
        if self.as_nobody:
            os.chown(socket_path, -1, self.gid)
            os.chmod(socket_path, 0o660)

    def _listening(self, port):
        if self.proc.p.poll() is not None:
            raise AssertionError("nginx exited (%s):\n%s" % (self.proc.p.returncode, self.proc.tail()))
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            return False

    def access_log(self):
        """The access log's lines, split: [time, port, method, path, status, ...]."""
        with open(os.path.join(self.logs, "access.log")) as f:
            return [line.split() for line in f if line.strip()]

    def stop(self):
        self.proc.stop()


class HubClient:
    """huggingface_hub (and its `hf` command) with hf_xet, as a user runs
    them: HF_ENDPOINT, HF_TOKEN, its own HF_HOME and Xet cache, and the test
    CA as the only trusted one (SSL_CERT_FILE, which both httpx2 and hf_xet
    honour). No proxy from the environment; no telemetry. Under XET_PAIR=js
    the same calls are @huggingface/hub's (js_client.mjs, and its `hfjs`
    command for `hf`), the test CA added by NODE_EXTRA_CA_CERTS."""

    def __init__(self, home, endpoint, token, ca):
        self.home = home
        self.env = {k: v for k, v in os.environ.items()
                    if not k.lower().endswith("_proxy") and not k.startswith(("HF_", "HUGGINGFACE_"))}
        self.env.update(HF_HOME=home, HF_XET_CACHE=os.path.join(home, "xet"), HF_ENDPOINT=endpoint,
                        HF_TOKEN=token, SSL_CERT_FILE=ca, HF_HUB_DISABLE_TELEMETRY="1", DO_NOT_TRACK="1",
                        HF_XET_TELEMETRY_ENABLED="false", HF_HUB_DISABLE_PROGRESS_BARS="1",
                        HF_HUB_DISABLE_UPDATE_CHECK="1", NO_COLOR="1")
        if is_js():
            self.env.update(NODE_EXTRA_CA_CERTS=ca, XET_JS_MODULES=XET_JS_MODULES)

    def command(self):
        """The program that makes the client's calls (verbs of hub_client.py)."""
        if is_js():
            return ["node", os.path.join(HERE, "js_client.mjs")]
        return [XET_PYTHON, os.path.join(HERE, "hub_client.py")]

    def held_upload(self, repo, first, *rest):
        """@huggingface/hub: one commit of `first` and `rest` whose second
        global-dedup query waits; returns the process once its first query
        is answered. Write a line to its stdin to go on, then communicate()."""
        p = subprocess.Popen(self.command() + ["held-upload", repo, first, *rest], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env)
        line = p.stdout.readline()
        if line.strip() != "HALF":
            p.kill()
            raise AssertionError("held upload did not start: %r %s" % (line, p.stderr.read()[-2000:]))
        return p

    def run(self, *args, check=True):
        r = subprocess.run(self.command() + list(args), capture_output=True,
                           text=True, env=self.env, timeout=600, preexec_fn=_die_with_parent)
        if r.returncode != 0 and args[0] == "upload-file" and "No such file or directory (os error 2)" in r.stderr:
            # hf_xet 1.8.0's start_upload_file failed with a local ENOENT in
            # two of eleven runs of test_endpoint on a machine at load average
            # 9-11 (dedupd moves or deletes nothing in a plain watched cache).
            # Not understood yet: said loudly and tried once more, so that a
            # second failure still fails the test.
            print("harness: hf_xet upload-file failed with a local ENOENT; trying once more:\n" + r.stderr[-1500:],
                  file=sys.stderr)
            r = subprocess.run(self.command() + list(args), capture_output=True,
                               text=True, env=self.env, timeout=600, preexec_fn=_die_with_parent)
        if check and r.returncode != 0:
            raise AssertionError("hub client %s failed (%d):\n%s\n%s" % (args[0], r.returncode, r.stdout,
                                                                          r.stderr[-3000:]))
        if r.returncode != 0:
            return r
        try:
            return json.loads(r.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            raise AssertionError("hub client %s printed no JSON document:\n%r\n%s" % (
                args[0], r.stdout[-3000:], r.stderr[-3000:]))

    def hf(self, *args, check=True):
        """The `hf` command of the virtualenv; under XET_PAIR=js, `hf upload
        REPO FILE NAME` is `hfjs upload REPO FILE` (which names the file in
        the repository after its own name)."""
        command = self.hf_command(args)
        r = subprocess.run(command, capture_output=True, text=True, env=self.env, timeout=600,
                           preexec_fn=_die_with_parent)
        if check and r.returncode != 0:
            raise AssertionError("hf %s failed (%d):\n%s\n%s" % (" ".join(args), r.returncode, r.stdout,
                                                                   r.stderr[-3000:]))
        return r

    def hf_started(self, *args):
        """`hf` started, not waited for: the process (text pipes), for a test
        that acts while it runs."""
        return subprocess.Popen(self.hf_command(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=self.env, preexec_fn=_die_with_parent)

    def hf_command(self, args):
        command = [os.path.join(os.path.dirname(XET_PYTHON), "hf"), *args]
        if is_js():
            verb, repo, src, name = args
            if verb != "upload" or os.path.basename(src) != name:
                raise AssertionError("hfjs runs only `upload REPO FILE NAME` with NAME the file's: %s" % (args,))
            command = ["node", os.path.join(XET_JS_MODULES, "@huggingface", "hub", "dist", "cli.js"),
                       "upload", repo, src, "--quiet"]
        return command


class Client:
    """The real client with one cache directory (one build host)."""

    def __init__(self, cache, extra_env=None):
        self.cache = cache
        self.env = dict(os.environ, HF_XET_CACHE=cache)
        self.env.pop("HF_HOME", None)
        self.env.update(extra_env or {})

    def run(self, *args):
        r = subprocess.run([XET_PYTHON, os.path.join(HERE, "xet_client.py"), *args], capture_output=True,
                           text=True, env=self.env, timeout=600, preexec_fn=_die_with_parent)
        if r.returncode != 0:
            raise AssertionError("xet client %s failed (%d):\n%s\n%s" % (args[0], r.returncode, r.stdout,
                                                                          r.stderr[-3000:]))
        return json.loads(r.stdout.strip().splitlines()[-1])

    def upload(self, endpoint, *paths):
        return self.run("upload", endpoint, *paths)

    def held_upload(self, endpoint, path, *rest):
        """Starts a session that streams half of `path` (or, with `rest`,
        all of `path` but none of `rest`) and waits; call
        .stdin.write("go\n") then .communicate() to finish it."""
        verb = ["held-upload-files", endpoint, path, *rest] if rest else ["held-upload", endpoint, path]
        p = subprocess.Popen([XET_PYTHON, os.path.join(HERE, "xet_client.py"), *verb],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=self.env)
        line = p.stdout.readline()
        if line.strip() != "HALF":
            p.kill()
            raise AssertionError("held upload did not start: %r %s" % (line, p.stderr.read()[-2000:]))
        return p

    def download(self, endpoint, file_hash, size, dest):
        return self.run("download", endpoint, file_hash, str(size), dest)

    def endpoint_dirs(self):
        return [os.path.join(self.cache, d) for d in sorted(os.listdir(self.cache))
                if os.path.isdir(os.path.join(self.cache, d, "shard-cache"))]

    def shard_files(self):
        out = []
        for d in self.endpoint_dirs():
            sc = os.path.join(d, "shard-cache")
            out += [os.path.join(sc, n) for n in sorted(os.listdir(sc)) if n.endswith(".mdb")]
        return out


def hf_xet_version():
    """hf_xet's version, or "js" under XET_PAIR=js."""
    if is_js():
        return "js"
    r = subprocess.run([XET_PYTHON, os.path.join(HERE, "xet_client.py"), "version"], capture_output=True,
                       text=True)
    return json.loads(r.stdout)["hf_xet"] if r.returncode == 0 else "unknown"


def digest_tree(root):
    """{relative path: (sha256, mtime_ns)} of every regular file under root."""
    out = {}
    for d, _, names in os.walk(root):
        for n in names:
            p = os.path.join(d, n)
            if os.path.isfile(p) and not os.path.islink(p):
                with open(p, "rb") as f:
                    out[os.path.relpath(p, root)] = (hashlib.sha256(f.read()).hexdigest(), os.stat(p).st_mtime_ns)
    return out


class RealClientTest(unittest.TestCase):
    """A temp dir per test; every process started is stopped, and the logs
    of dedupd, the stand-in and the client are printed when a test fails."""

    @classmethod
    def setUpClass(cls):
        require_client()

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="dedupd-xet-")
        self.procs = []
        result = getattr(self._outcome, "result", None)
        self._problems_before = (len(result.failures), len(result.errors)) if result else (0, 0)

    def tearDown(self):
        result = getattr(self._outcome, "result", None)
        problems = []
        if result is not None:
            problems = result.failures[self._problems_before[0]:] + result.errors[self._problems_before[1]:]
        failed = bool(problems)
        for p in reversed(self.procs):
            p.stop()
        if failed:
            # The failure first: CI keeps the head and the tail of a long
            # output, and the runner's own report comes after the logs.
            for _, trace in problems:
                print("==== failed:\n%s" % "\n".join(trace.rstrip().splitlines()[-40:]), file=sys.stderr)
            for p in self.procs:
                proc = p.proc if hasattr(p, "proc") else p
                print("---- %s ----\n%s" % (proc.log_path, proc.tail(80)), file=sys.stderr)
            print("(kept %s)" % self.dir, file=sys.stderr)
        else:
            shutil.rmtree(self.dir, ignore_errors=True)

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def dedupd(self, watch, extra_yaml="", name="dedupd"):
        os.makedirs(self.path(name), exist_ok=True)
        for w in watch:
            os.makedirs(w if isinstance(w, str) else w["path"], exist_ok=True)
        d = Dedupd(self.path(name), watch, extra_yaml)
        self.procs.append(d)
        return d

    def standin(self, dedupd=None, name="cas"):
        s = CasStandin(self.path(name), dedupd.socket if dedupd else None)
        self.procs.append(s)
        return s

    def fleet_database(self, name="fleet-db"):
        """A PostgreSQL for a fleet; without its server programs the test is
        skipped, or fails under DEDUPD_XET_REQUIRED=1 (CI installs them)."""
        if not have_postgresql():
            if os.environ.get("DEDUPD_XET_REQUIRED") == "1":
                self.fail("no PostgreSQL server programs (packaging/install-deps installs them)")
            self.skipTest("no PostgreSQL server programs")
        db = FleetDatabase(self.path(name))
        self.procs.insert(0, db)  # stopped last, after the dedupds that use it
        return db

    def hub_standin(self, tls, token, access_token, dedupd=None, name="hub"):
        s = HubStandin(self.path(name), tls, token, access_token, dedupd.socket if dedupd else None)
        self.procs.append(s)
        return s

    def xet_endpoint(self, hub, dedupd_socket, ca_file, name="endpoint", **kw):
        e = XetEndpoint(self.path(name), hub, dedupd_socket, ca_file, **kw)
        self.procs.append(e)
        return e

    def wait_indexed(self, dedupd, client, timeout=30, rejected_name=None):
        """Waits until dedupd has taken every shard file in the client's
        cache (live or expired), and returns them by path. Any rejected file
        fails the test, unless it is the one named `rejected_name`, which
        must then be rejected."""
        def taken():
            files = set(os.path.realpath(p) for p in client.shard_files()
                        if os.path.basename(p) != rejected_name)
            known = {}
            for s in dedupd.shards():
                for src in s.get("paths", []):
                    known[os.path.realpath(src)] = s
            rejected = dedupd.shards("rejected")
            if rejected_name is None:
                if rejected:
                    raise AssertionError("dedupd rejected files: %s" % json.dumps(rejected, indent=1))
            elif rejected_name not in {os.path.basename(p) for r in rejected for p in r["paths"]}:
                return None
            return known if files and files <= set(known) else None
        return wait_for("dedupd to index the client's shard cache", taken, timeout)


def main():
    require_client()
    unittest.main(verbosity=2, testLoader=PairLoader())


class EndpointTest(RealClientTest):
    """A test through the local Xet endpoint's nginx: nginx must be there,
    and each test gets a CA of its own for the Hub and CAS stand-ins."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        find_nginx()

    def setUp(self):
        super().setUp()
        self.tls = make_test_ca(self.path("tls"))

    def hub_call(self, path, body):
        """A POST to the Hub and CAS stand-in's control routes (self.hub:
        /_standin/...), which must answer 200."""
        import http.client
        import ssl
        ctx = ssl.create_default_context(cafile=self.tls["ca"])
        conn = http.client.HTTPSConnection("127.0.0.1", self.hub.cas_port, timeout=30, context=ctx)
        try:
            conn.request("POST", path, body=body)
            self.assertEqual(conn.getresponse().status, 200)
        finally:
            conn.close()


class TwoHosts:
    """Host A uploaded a file earlier; host B, with its own cache, now
    uploads the same bytes and more. One dedupd watches both caches (it
    indexed A's upload) and answers B's global-dedup queries through the
    stand-in, with replies that expire `reply_expiry` seconds after they are
    made; expired shard files are deleted at once."""

    def __init__(self, test, reply_expiry_s, size=4 * 1024 * 1024, added=1024 * 1024, delete_after="0s"):
        self.cache_a, self.cache_b = test.path("host-a", "xet"), test.path("host-b", "xet")
        self.dedupd = test.dedupd([self.cache_a, self.cache_b], "expiry:\n  delete_after: %s\n" % delete_after +
                                  "global_dedup:\n  reply_expiry: %ds\n" % reply_expiry_s)
        self.cas = test.standin(self.dedupd)
        self.a, self.b = Client(self.cache_a), Client(self.cache_b)
        self.old = write(test.path("host-a", "model.bin"), random_bytes(size, 21))
        with open(self.old, "rb") as f:
            old_bytes = f.read()
        self.new = write(test.path("host-b", "model.bin"), old_bytes + random_bytes(added, 22))
        self.old_info = self.a.upload(self.cas.endpoint, self.old)["files"][0]
        test.wait_indexed(self.dedupd, self.a)

    def stop_dedupd(self):
        self.dedupd.stop()

    def upload_on_b(self):
        """B's upload: (what scan predicted, what the client sent, its result)."""
        predicted = json.loads(self.dedupd.ctl("scan", "--json", self.new).stdout)["total"]["new_bytes"]
        self.cas.reset()
        result = self.b.upload(self.cas.endpoint, self.new)
        return predicted, self.cas.state(), result["files"][0]

    def replies_in_b(self):
        """The keyed shards in B's shard cache: the replies it saved."""
        out = []
        for f in self.b.shard_files():
            r = subprocess.run([DEDUPCTL, "inspect", "--json", f], capture_output=True, text=True)
            if r.returncode == 0 and json.loads(r.stdout)["keyed"]:
                out.append(f)
        return out
