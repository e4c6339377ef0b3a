#!/usr/bin/env python3
"""The package as an admin runs it, under a real systemd (issue 70;
docs/OPERATIONS.md, "Installing and running the package"): the .deb this
tree builds, installed with apt into a booted Debian 12 (container.py),
and the paths every admin takes, in the order an admin takes them:

  the previous release installed, shards indexed; the upgrade to this one
  (answered after, nothing lost); socket activation; restart, stop, reload
  and kill -9 of dedupd; daemon-reload; the local Xet endpoint turned on as
  its conffile says, uploads from this host through it learned (an empty
  cache then sends no bytes), across a restart of dedupd under it; the
  fleet section against a PostgreSQL on this host; apt purge.

The steps share one container and run in order: each starts from what the
one before left, as on a real host. Run by ctest (label systemd) with
BUILD_DIR (the plain build, whose CPack config makes the .deb), DEDUPCTL
(this build's, on the host, to read shards), XET_PYTHON (the real client,
for the uploads). Needs root, systemd-nspawn and debootstrap; without them
it is skipped, and fails under CI=true.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRC, "tests", "xet_client"))

import container  # noqa: E402
import harness  # noqa: E402

SKIP = 77
BUILD = os.environ.get("BUILD_DIR", "")
CPACK = os.environ.get("CPACK", "cpack")
TOKEN = "hf_systemdHubToken0123456789abcdef"
ACCESS_TOKEN = "xet_systemdCasToken0123456789abcdef"
REPO = "dedupd/systemd"
MIB = 1024 * 1024
# The real client's session shards (tests/fixtures/hf_xet): they never
# expire, so they answer before and after an upgrade.
SHARDS = [os.path.join(SRC, "tests", "fixtures", "hf_xet", name) for name in (
    "f737ffef2fcb3fad29facb31bcf6d3b982b432e149ea76651fbddc3324bac21e.mdb",
    "9aa6da7a7d39fd33481de6e2004cfbf7eb44bb3919e8092d257ad3bb9fcecd60.mdb")]


def unavailable():
    """Why this machine cannot boot the container, or None."""
    if os.geteuid() != 0:
        return "needs root (systemd-nspawn boots the container)"
    for tool in ("systemd-nspawn", "debootstrap", "nsenter", "dpkg-deb", CPACK):
        if not shutil.which(tool):
            return "%s is missing (packaging/install-deps installs it)" % tool
    if not BUILD or not os.path.exists(os.path.join(BUILD, "CPackConfig.cmake")):
        return "BUILD_DIR has no CPackConfig.cmake: configure and build first"
    return None


def port_open(port):
    import socket
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def chunk_of(shard):
    """One chunk hash the shard holds (this build's dedupctl, offline)."""
    r = subprocess.run([harness.DEDUPCTL, "inspect", "--json", shard], capture_output=True, text=True, check=True)
    doc = json.loads(r.stdout)
    for xorb in doc.get("xorbs", []):
        for h in xorb.get("chunk_hashes", []):
            return h
    raise AssertionError("no chunk in %s: %s" % (shard, r.stdout[:500]))


class PgCluster:
    """tests/fleet/pg_cluster's cluster, stopped with the test's processes."""

    def __init__(self, script, pointer):
        self.script, self.pointer = script, pointer

    def stop(self):
        subprocess.run([self.script, "stop", self.pointer], capture_output=True)


class PackageUnderSystemd(unittest.TestCase):
    times = {}

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="dedupd-systemd-")
        t0 = time.monotonic()
        # This tree's package, and the previous release's (built by its own
        # packaging, once per machine: tests/compat/build_release.sh).
        r = subprocess.run([CPACK, "-G", "DEB", "--config", os.path.join(BUILD, "CPackConfig.cmake"), "-B",
                            os.path.join(cls.dir, "new")], capture_output=True, text=True)
        if r.returncode != 0:
            raise AssertionError("cpack: %s%s" % (r.stdout[-3000:], r.stderr[-3000:]))
        cls.new_deb = [os.path.join(cls.dir, "new", n) for n in os.listdir(os.path.join(cls.dir, "new"))
                       if n.endswith(".deb")][0]
        r = subprocess.run([os.path.join(SRC, "tests", "compat", "build_release.sh"), os.path.join(cls.dir, "old"),
                            "--deb"], capture_output=True, text=True)
        if r.returncode != 0:
            raise AssertionError("the previous release's package: %s" % r.stderr[-3000:])
        cls.old_deb = [os.path.join(cls.dir, "old", n) for n in os.listdir(os.path.join(cls.dir, "old"))
                       if n.endswith(".deb")][0]
        cls.times["packages"] = time.monotonic() - t0
        # The root: what both packages need, and the endpoint's nginx, so
        # that apt installs them from the root and not the network.
        wanted = set(container.deb_depends(cls.new_deb)) | set(container.deb_depends(cls.old_deb)) | {"nginx-light"}
        root, made = container.cached_root(wanted, os.path.join(cls.dir, "debootstrap.log"))
        cls.times["debootstrap"] = made
        cls.c = container.Container(root, "dedupd-test-%d" % os.getpid(), os.path.join(cls.dir, "console.log"))
        cls.times["boot"] = cls.c.boot_seconds
        cls.c.put(cls.old_deb, "/root/" + os.path.basename(cls.old_deb))
        cls.c.put(cls.new_deb, "/root/" + os.path.basename(cls.new_deb))
        cls.procs = []
        cls.tls = harness.make_test_ca(os.path.join(cls.dir, "tls"))

    @classmethod
    def tearDownClass(cls):
        for p in reversed(cls.procs):
            p.stop()
        if hasattr(cls, "c"):
            cls.c.stop()
        print("systemd test times (s): %s" % json.dumps({k: round(v, 1) for k, v in cls.times.items()}),
              file=sys.stderr)
        if getattr(cls, "failed", False):
            print("(kept %s)" % cls.dir, file=sys.stderr)
        else:
            shutil.rmtree(cls.dir, ignore_errors=True)

    def run(self, result=None):
        before = len(result.failures) + len(result.errors) if result else 0
        out = super().run(result)
        if result and len(result.failures) + len(result.errors) > before:
            type(self).failed = True
            print("---- journal ----\n%s" % self.c.journal()[-6000:], file=sys.stderr)
        return out

    # ---- helpers -------------------------------------------------------

    def ctl(self, *args, check=True):
        return self.c.run("dedupctl", *args, check=check)

    def ctl_json(self, *args):
        return json.loads(self.ctl("--json", *args).stdout)

    def active(self, unit):
        return self.c.run("systemctl", "is-active", unit, check=False).stdout.strip()

    def main_pid(self):
        return int(self.c.run("systemctl", "show", "-P", "MainPID", "dedupd.service").stdout.strip())

    def wait(self, what, predicate, timeout=60):
        return harness.wait_for(what, predicate, timeout=timeout, interval=0.2)

    def answers(self):
        """What dedupd says of one chunk of each fixture shard."""
        return {c: self.ctl_json("query", c) for c in self.chunks}

    def assert_nothing_lost(self):
        self.assertEqual(self.answers(), self.before, "answers changed")
        live = {s["hash"] for s in self.ctl_json("shards")["shards"] if s["state"] == "live"}
        self.assertTrue(self.shards <= live, "shards lost: %s" % (self.shards - live))

    def journal_since(self, cursor_file, *units):
        """The units' journal since the last call with this cursor file."""
        args = ["journalctl", "--no-pager", "--cursor-file", cursor_file]
        for u in units:
            args += ["-u", u]
        return self.c.run(*args, check=False).stdout

    # ---- the steps, in order -------------------------------------------

    def test_01_previous_release_installs_and_indexes(self):
        t0 = time.monotonic()
        self.c.run("apt-get", "install", "-y", "-q", "/root/" + os.path.basename(self.old_deb), timeout=600)
        self.wait("the previous release to run", lambda: self.active("dedupd.service") == "active")
        for shard in SHARDS:
            self.c.put(shard, "/var/lib/dedupd/incoming/" + os.path.basename(shard))
        type(self).chunks = [chunk_of(s) for s in SHARDS]
        self.wait("the fixtures indexed", lambda: all(a["found"] for a in self.answers().values()))
        type(self).before = self.answers()
        type(self).shards = {s["hash"] for s in self.ctl_json("shards")["shards"]}
        self.assertEqual(len(self.shards), len(SHARDS))
        self.times["install_old"] = time.monotonic() - t0

    def test_02_upgrade_keeps_every_answer(self):
        t0 = time.monotonic()
        old_pid = self.main_pid()
        self.c.run("apt-get", "install", "-y", "-q", "/root/" + os.path.basename(self.new_deb), timeout=600)
        version = self.c.run("dpkg-query", "-W", "-f", "${Version}", "dedupd").stdout
        self.assertEqual(version, os.path.basename(self.new_deb).split("_")[1])
        self.wait("the new release to run", lambda: self.active("dedupd.service") == "active")
        self.assertNotEqual(self.main_pid(), old_pid, "postinst did not restart dedupd")
        self.assertEqual(self.active("dedupd.socket"), "active")
        self.assertIn("version " + version, self.ctl("status").stdout)
        self.assert_nothing_lost()
        self.times["upgrade"] = time.monotonic() - t0

    def test_03_socket_activation(self):
        self.c.run("systemctl", "stop", "dedupd.service")
        self.assertEqual(self.active("dedupd.service"), "inactive")
        self.assertEqual(self.active("dedupd.socket"), "active")
        # The first client starts it through the socket.
        self.assertTrue(self.ctl_json("query", self.chunks[0])["found"])
        self.assertEqual(self.active("dedupd.service"), "active")

    def test_04_restart_and_stop_keep_the_socket(self):
        cursor = "/root/journal.cursor"
        self.journal_since(cursor)
        for verb in ("restart", "restart", "stop"):
            self.c.run("systemctl", verb, "dedupd.service")
            self.assertEqual(self.active("dedupd.socket"), "active", verb)
            # A client right after: answered (after a stop, by activation).
            self.assert_nothing_lost()
        logged = self.journal_since(cursor, "dedupd.socket")
        self.assertNotIn("POLLHUP", logged)
        self.assertNotIn("Failed with result", logged)

    def test_05_reload_applies_and_refuses(self):
        conf = self.c.path("/etc/dedupd/dedupd.yaml")
        with open(conf) as f:
            original = f.read()
        cursor = "/root/reload.cursor"
        self.journal_since(cursor)
        pid = self.main_pid()
        with open(conf, "a") as f:
            f.write("\nlog_level: debug\n")
        self.c.run("systemctl", "reload", "dedupd.service")
        self.assertIn("configuration reloaded from /etc/dedupd/dedupd.yaml", self.journal_since(cursor, "dedupd"))
        # A broken file: the reload fails and says why; dedupd runs on with
        # what it had.
        with open(conf, "a") as f:
            f.write("\nexpiry: [not, a, mapping\n")
        r = self.c.run("systemctl", "reload", "dedupd.service", check=False)
        self.assertNotEqual(r.returncode, 0)
        logged = self.journal_since(cursor, "dedupd")
        self.assertIn("dedupd.yaml", logged)
        self.assertIn("not reloaded", logged)
        # Each line an entry of journald's native protocol, with its
        # priority (dedupd writes it without libsystemd: daemon/log/journal_sink);
        # a line that fell back to stderr would say _TRANSPORT=stdout.
        entries = [json.loads(line) for line in
                   self.c.run("journalctl", "-u", "dedupd", "-o", "json", "--no-pager").stdout.splitlines()]
        said = {e.get("MESSAGE"): (e.get("_TRANSPORT"), e.get("PRIORITY"), e.get("SYSLOG_IDENTIFIER"))
                for e in entries if isinstance(e.get("MESSAGE"), str)}
        self.assertEqual(said.get("configuration reloaded from /etc/dedupd/dedupd.yaml"), ("journal", "6", "dedupd"))
        self.assertEqual(said.get("reload: configuration not reloaded; still running with the previous one"),
                         ("journal", "3", "dedupd"))
        self.assertEqual(self.active("dedupd.service"), "active")
        self.assertEqual(self.main_pid(), pid)
        with open(conf, "w") as f:
            f.write(original)
        self.c.run("systemctl", "reload", "dedupd.service")
        self.assert_nothing_lost()

    def test_06_kill_9_restarts_it(self):
        # The steps before started dedupd five times in a few seconds, which
        # is systemd's crash-loop bound (StartLimitBurst=5 in 10 s): a crash
        # now would be one start too many. An admin's restarts are further
        # apart; the counter is set back as time would.
        self.c.run("systemctl", "reset-failed", "dedupd.service")
        pid = self.main_pid()
        # The shell's own kill: the container has no /bin/kill (procps).
        self.c.run("sh", "-c", "kill -9 %d" % pid)
        self.wait("systemd to start dedupd again",
                  lambda: self.active("dedupd.service") == "active" and self.main_pid() not in (0, pid))
        self.assert_nothing_lost()

    def test_07_daemon_reload(self):
        pid = self.main_pid()
        self.c.run("systemctl", "daemon-reload")
        self.assertEqual(self.active("dedupd.socket"), "active")
        self.assertEqual(self.main_pid(), pid)
        self.assert_nothing_lost()

    def test_07b_without_its_socket_the_client_names_the_unit(self):
        self.c.run("systemctl", "stop", "dedupd.socket", "dedupd.service")
        r = self.c.run("sh", "-c", "cd / && dedupctl status", check=False)
        self.assertEqual(r.returncode, 69, r.stderr)
        self.assertIn("no socket at /run/dedupd/dedupd.sock", r.stderr)
        self.assertIn("systemctl start dedupd.socket", r.stderr)
        self.c.run("systemctl", "start", "dedupd.socket")
        self.assert_nothing_lost()

    def test_08_endpoint_as_its_conffile_says(self):
        hub = harness.HubStandin(os.path.join(self.dir, "hub"), self.tls, TOKEN, ACCESS_TOKEN)
        self.procs.append(hub)
        hub_port, cas_port = harness.free_port(), harness.free_port()
        # The settings an admin writes (the conffile's keys), pointing at
        # the stand-ins on this host, whose certificates chain to the test CA.
        self.c.put(self.tls["ca"], "/etc/dedupd/test-ca.pem")
        self.c.write("/etc/dedupd/xet-endpoint.conf",
                     "hub_port = %d\ncas_port = %d\nhub_upstream = %s\ncas_upstream = %s\nhub_tls_name = localhost\n"
                     "cas_tls_name = localhost\nca_file = /etc/dedupd/test-ca.pem\n"
                     % (hub_port, cas_port, hub.endpoint, hub.cas_url))
        # The switch, as the conffile says: nothing in dedupd.yaml.
        self.c.run("systemctl", "enable", "--now", "dedupd-xet-endpoint.service")
        self.wait("the endpoint to listen", lambda: self.active("dedupd-xet-endpoint.service") == "active")
        endpoint = "http://127.0.0.1:%d" % hub_port
        self.wait("nginx on " + endpoint, lambda: port_open(hub_port) and port_open(cas_port), timeout=30)

        def learned():
            return self.ctl_json("status")["xet_endpoint"]["learning"]["learned"]

        def user(name):
            return harness.HubClient(os.path.join(self.dir, name), endpoint, TOKEN, self.tls["ca"])

        data = harness.random_bytes(6 * MIB, 70)
        src = harness.write(os.path.join(self.dir, "src", "model.bin"), data)
        user("host-a").hf("upload", REPO, src, "model.bin")
        self.wait("dedupd to learn the upload", lambda: learned() >= 1)
        self.assertNotIn("not the endpoint", self.c.journal("dedupd"))
        # Another host, an empty cache: nothing sent again.
        hub.reset()
        user("host-b").run("upload-file", REPO, "copy.bin", src)
        self.assertEqual(hub.state()["xorb_chunk_bytes"], 0)

        # dedupd restarted under the running endpoint: still learning.
        self.c.run("systemctl", "restart", "dedupd.service")
        before = learned()
        src2 = harness.write(os.path.join(self.dir, "src", "second.bin"), harness.random_bytes(5 * MIB, 71))
        user("host-c").hf("upload", REPO, src2, "second.bin")
        self.wait("dedupd to learn after its restart", lambda: learned() >= before + 1 if before else learned() >= 1)
        hub.reset()
        user("host-d").run("upload-file", REPO, "second-copy.bin", src2)
        self.assertEqual(hub.state()["xorb_chunk_bytes"], 0)
        errors = self.c.run("cat", "/var/log/dedupd-xet-endpoint/error.log", check=False).stdout
        errors += self.c.run("sh", "-c", "cat /var/log/private/dedupd-xet-endpoint/error.log 2>/dev/null || true").stdout
        self.assertNotIn("Connection refused", errors)
        # The endpoint's own reload, with nothing but its own programs.
        self.c.run("systemctl", "reload", "dedupd-xet-endpoint.service")
        self.assertEqual(self.active("dedupd-xet-endpoint.service"), "active")
        type(self).hub, type(self).endpoint = hub, endpoint

    def test_08b_downloads_through_the_packaged_endpoint(self):
        """A download through the packaged endpoint is rewritten, filled by
        dedupd through the endpoint's way out (dedupd.service has no
        network) and cached where dedupd can check it: a second host with
        empty caches fetches nothing from the storage."""
        hub, endpoint = self.hub, self.endpoint

        def user(name):
            return harness.HubClient(os.path.join(self.dir, name), endpoint, TOKEN, self.tls["ca"])

        data = harness.random_bytes(12 * MIB, 72)
        src = harness.write(os.path.join(self.dir, "src", "weights.bin"), data)
        user("uploader").hf("upload", REPO, src, "weights.bin")
        storage, got = {}, {}
        for host in ("host-e", "host-f"):
            before = hub.state()["storage"]["bytes"]
            out = os.path.join(self.dir, host, "download")
            user(host).hf("download", REPO, "weights.bin", "--local-dir", out)
            storage[host] = hub.state()["storage"]["bytes"] - before
            got[host] = harness.sha256_of(os.path.join(out, "weights.bin"))
        print("packaged endpoint, %d bytes: from storage host E %d, host F %d" % (len(data), storage["host-e"],
                                                                                 storage["host-f"]), file=sys.stderr)
        self.assertEqual(got["host-e"], harness.sha256_of(src))
        self.assertEqual(got["host-f"], got["host-e"])
        self.assertGreaterEqual(storage["host-e"], len(data) // 2)  # random bytes: stored near their size
        self.assertEqual(storage["host-f"], 0, "the second host fetched from storage: the cache was not used")
        # dedupd counted it (nginx reports each range as it ends), and its
        # walk of the cache (at each reload) can read the endpoint's files.
        self.c.run("systemctl", "reload", "dedupd.service")
        downloads = self.wait("the downloads counted and the cache walked", lambda: (
            lambda d: d if d["bytes"]["local_cache"] >= storage["host-e"] and (d.get("cache") or {}).get("bytes")
            else None)(self.ctl_json("status")["xet_downloads"]), timeout=30)
        self.assertEqual(downloads["bytes"]["internet"], storage["host-e"], downloads)
        # No storage URL (its signature) in any file the endpoint writes.
        logs = self.c.run("sh", "-c", "cat /var/log/dedupd-xet-endpoint/*.log").stdout
        self.assertNotIn("Signature=", logs)
        self.assertIn("/.xet-storage", logs)  # the fills went through the way out
        # The cache is the endpoint's user's, and the index out of its reach.
        owner = self.c.run("stat", "-c", "%U:%G %a", "/var/cache/dedupd-xet-endpoint").stdout.split()
        self.assertEqual(owner, ["dedupd:dedupd-xet", "700"])
        pid = self.c.run("systemctl", "show", "-P", "MainPID", "dedupd-xet-endpoint.service").stdout.strip()
        # (root sees through InaccessiblePaths=' mode 000: what it lists is
        # an empty node in place of the state directory)
        listed = self.c.run("nsenter", "-t", pid, "-m", "ls", "-A", "/var/lib/dedupd", check=False).stdout.split()
        self.assertIn("incoming", self.c.run("ls", "-A", "/var/lib/dedupd").stdout.split())
        self.assertEqual(listed, [], "the endpoint sees dedupd's state directory")

    def test_09_fleet_against_postgresql_on_the_host(self):
        pointer = os.path.join(self.dir, "pg-pointer")
        env = dict(os.environ, PG_CLUSTER_TCP="1")
        script = os.path.join(SRC, "tests", "fleet", "pg_cluster")
        subprocess.run([script, "start", pointer, str(os.getpid())], check=True, env=env, capture_output=True)
        self.procs.append(PgCluster(script, pointer))
        with open(pointer) as f:
            pg = f.read().strip()
        with open(os.path.join(pg, "primary.port")) as f:
            port = f.read().strip()
        psql = ["psql", "-h", os.path.join(pg, "sock"), "-p", port, "-U", "fleet_admin", "-d", "postgres", "-q",
                "-v", "ON_ERROR_STOP=1"]
        subprocess.run(psql + ["-c", "CREATE ROLE dedupd LOGIN PASSWORD 'fleet-secret'",
                               "-c", "CREATE DATABASE dedupd OWNER dedupd"], check=True, capture_output=True)
        # docs/FLEET.md, "Operator": the password where libpq looks for it,
        # the fleet section; docs/OPERATIONS.md: the drop-in that gives the
        # service the network it needs.
        self.c.sh("echo '127.0.0.1:%s:dedupd:dedupd:fleet-secret' | install -o dedupd -m 600 /dev/stdin "
                  "/etc/dedupd/pgpass" % port)
        with open(self.c.path("/etc/dedupd/dedupd.yaml"), "a") as f:
            f.write('\nfleet:\n  url: "host=127.0.0.1 port=%s dbname=dedupd user=dedupd '
                    'passfile=/etc/dedupd/pgpass"\n  host: container-1\n' % port)
        self.c.run("mkdir", "-p", "/etc/systemd/system/dedupd.service.d")
        self.c.write("/etc/systemd/system/dedupd.service.d/fleet.conf",
                     "[Service]\nPrivateNetwork=no\nRestrictAddressFamilies=AF_UNIX AF_INET AF_INET6\n"
                     "IPAddressAllow=127.0.0.1\n")
        self.c.run("systemctl", "daemon-reload")
        self.c.run("runuser", "-u", "dedupd", "--", "dedupd", "--fleet-migrate", "--config",
                   "/etc/dedupd/dedupd.yaml")
        self.c.run("systemctl", "restart", "dedupd.service")

        def published():
            doc = self.ctl_json("fleet", "status")
            hosts = {h["name"]: h for h in doc.get("hosts", [])}
            return hosts.get("container-1", {}).get("shards", 0) >= len(self.shards) and doc

        self.wait("this host's shards in the fleet", published, timeout=90)
        self.assert_nothing_lost()

    def test_10_purge_leaves_nothing(self):
        self.c.run("apt-get", "purge", "-y", "-q", "dedupd", timeout=300)
        for path in ("/var/lib/dedupd", "/etc/dedupd", "/run/dedupd", "/usr/sbin/dedupd", "/usr/bin/dedupctl"):
            self.assertFalse(os.path.lexists(self.c.path(path)), path)
        units = self.c.run("systemctl", "list-units", "--all", "--no-legend", "dedupd*").stdout
        self.assertNotIn("active", units.replace("inactive", ""))
        self.assertEqual(self.c.run("systemctl", "is-enabled", "dedupd.socket", check=False).stdout.strip() in
                         ("", "not-found"), True)


def main():
    why = unavailable()
    if why:
        banner = "*" * 72
        print("%s\nSYSTEMD PACKAGE TEST NOT RUN: %s\n%s" % (banner, why, banner), file=sys.stderr)
        sys.exit(1 if os.environ.get("CI") == "true" else SKIP)
    harness.require_client()
    unittest.main(verbosity=2)


if __name__ == "__main__":
    main()
