#!/usr/bin/env python3
"""./dev run's last step (run_local in ./dev): dedupd on local defaults and
the local Xet endpoint beside it. The real client uploads through the
endpoint it announces; Ctrl-C stops both; an endpoint that cannot start
leaves dedupd running, with the reason printed. The function runs alone
(install-deps and the build are ./dev run's other steps), with the built
dedupd, against the Hub and CAS stand-in."""

import os
import re
import signal
import socket
import subprocess

import harness

REPO_DIR = os.path.dirname(os.path.dirname(harness.HERE))
TOKEN = "hf_devRunHubToken0123456789abcdef"
ACCESS_TOKEN = "xet_devRunCasToken0123456789abcdef"
# run_local alone, as ./dev defines it.
RUN_LOCAL = 'eval "$(sed -n "/^run_local() {/,/^}/p" dev)"; set -euo pipefail; run_local "$DEDUPD"'


def port_pair():
    """A port whose successor is free too (the endpoint's two ports)."""
    for _ in range(50):
        p = harness.free_port()
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", p + 1))
            return p
        except OSError:
            continue
        finally:
            s.close()
    raise AssertionError("no free pair of ports")


def listening(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


class DevRun(harness.RealClientTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        harness.find_nginx()

    def start(self, **env):
        self.local = self.path("local")
        self.port = port_pair()
        e = dict(os.environ, DEDUPD_LOCAL_DIR=self.local, DEDUPD_XET_PORT=str(self.port), **env)
        self.out = self.path("dev-run.out")
        with open(self.out, "wb") as f:
            self.p = subprocess.Popen(["bash", "-c", RUN_LOCAL], cwd=REPO_DIR, env=e, stdout=f,
                                      stderr=subprocess.STDOUT, start_new_session=True)
        self.addCleanup(self.kill)

    def kill(self):
        # The whole group, even when the script itself has exited: what it
        # started may outlive it.
        try:
            os.killpg(self.p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.p.wait()

    def output(self):
        with open(self.out, errors="replace") as f:
            return f.read()

    def wait_line(self, pattern):
        def found():
            if self.p.poll() is not None:
                raise AssertionError("run_local exited (%s):\n%s" % (self.p.returncode, self.output()))
            return re.search(pattern, self.output(), re.M)
        return harness.wait_for("run_local to print %r" % pattern, found, timeout=30)

    def dedupd_healthy(self):
        d = harness.DedupdClient()
        d.socket = os.path.join(self.local, "dedupd.sock")
        try:
            return d.get("/healthz")[0] == 200
        except OSError:
            return False

    def test_the_announced_endpoint_carries_a_real_upload_and_ctrl_c_stops_both(self):
        tls = harness.make_test_ca(self.path("tls"))
        hub = self.hub_standin(tls, TOKEN, ACCESS_TOKEN)
        self.start(DEDUPD_XET_HUB_UPSTREAM=hub.endpoint, DEDUPD_XET_CAS_UPSTREAM=hub.cas_url,
                   DEDUPD_XET_CA_FILE=tls["ca"], DEDUPD_XET_HUB_TLS_NAME="localhost",
                   DEDUPD_XET_CAS_TLS_NAME="localhost")
        m = self.wait_line(r"^export HF_ENDPOINT=(http://127\.0\.0\.1:(\d+))$")
        self.assertEqual(int(m.group(2)), self.port)
        self.assertTrue(self.dedupd_healthy())
        user = harness.HubClient(self.path("home"), m.group(1), TOKEN, tls["ca"])
        user.run("create-repo", "dedupd/dev-run")
        src = harness.write(self.path("src", "a.bin"), harness.random_bytes(2 << 20, 5))
        user.run("upload-file", "dedupd/dev-run", "a.bin", src)
        self.assertEqual(hub.state()["xorb_chunk_bytes"], 2 << 20)
        log = os.path.join(self.local, "xet-endpoint", "logs", "access.log")

        def through():
            with open(log) as f:
                lines = f.read().splitlines()
            xorbs = [l for l in lines if '"POST /v1/xorbs/' in l and " %d " % (self.port + 1) in l]
            queries = [l for l in lines if '"GET /v1/chunks/' in l and "upstream=unix:" in l]
            return xorbs and queries
        harness.wait_for("the upload's xorb and chunk queries in the endpoint's log", through, timeout=10)
        # Nothing watched but incoming/, yet dedupd learned the upload from
        # the endpoint (issue 41): a second host's copy sends nothing.
        d = harness.DedupdClient()
        d.socket = os.path.join(self.local, "dedupd.sock")
        harness.wait_for("the upload learned", lambda: any(
            s.get("cas") == hub.cas_url for s in d.json("/v1/shards")["shards"]), timeout=10)
        hub.reset()
        harness.HubClient(self.path("home-b"), m.group(1), TOKEN, tls["ca"]).run(
            "upload-file", "dedupd/dev-run", "b.bin", src)
        self.assertEqual(hub.state()["xorb_chunk_bytes"], 0)
        self.assertEqual(hub.state()["rejected"], [])
        with open(os.path.join(self.local, "xet-endpoint", "nginx.pid")) as f:
            nginx = int(f.read())

        os.killpg(self.p.pid, signal.SIGINT)  # what Ctrl-C sends the terminal's group
        self.p.wait(30)
        self.assertFalse(self.dedupd_healthy())
        harness.wait_for("nginx to exit", lambda: not os.path.exists("/proc/%d" % nginx), timeout=10)
        self.assertFalse(listening(self.port) or listening(self.port + 1))

    def test_an_endpoint_that_cannot_start_leaves_dedupd_running_and_says_why(self):
        # A setting the endpoint's script refuses: nginx never starts.
        self.start(DEDUPD_XET_HUB_UPSTREAM="http://127.0.0.1:1")
        m = self.wait_line(r"^== \./dev run: dedupd runs, the local Xet endpoint does not: (.*)$")
        self.assertIn("hub_upstream is not https://HOST[:PORT]", m.group(1))
        self.assertNotIn("export HF_ENDPOINT", self.output())
        harness.wait_for("dedupd to answer", self.dedupd_healthy, timeout=30)
        self.assertFalse(listening(self.port))
        # SIGTERM to the script alone stops dedupd too.
        os.kill(self.p.pid, signal.SIGTERM)
        self.p.wait(30)
        self.assertFalse(self.dedupd_healthy())

    def test_an_early_failure_leaves_nothing_running(self):
        # ./local/xet-endpoint is a file: mkdir fails after dedupd started,
        # and set -e ends the script; its EXIT trap must stop dedupd.
        harness.write(self.path("local", "xet-endpoint"), b"not a directory")
        self.start()
        self.p.wait(30)
        self.assertNotEqual(self.p.returncode, 0)
        self.assertIn("cannot create directory", self.output())
        # Without the trap dedupd would run on, in the script's group.
        def group_empty():
            return subprocess.run(["pgrep", "-g", str(self.p.pid)], capture_output=True).returncode == 1
        harness.wait_for("run_local's process group to empty (dedupd stopped)", group_empty, timeout=15)


if __name__ == "__main__":
    harness.main()
