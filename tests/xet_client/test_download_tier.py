#!/usr/bin/env python3
"""The fleet's cache tier of the endpoint's downloads (docs/XET-ENDPOINT.md,
"Fleet tier"; issue 72): edge endpoints whose misses go to tier hosts (the
same nginx and dedupd, on a tier port, each xorb on the host nginx's
consistent hash picks), all with one key file. The real `hf download`
through the real nginx; the stand-in's storage counts what each host cost
the internet, and each edge's dedupd counts where its bytes came from. A
file of several xorbs spreads over the tier hosts as the hash says, and a
tier host killed in the middle of a body costs the storage what it had not
sent, never the download."""

import bisect
import hashlib
import http.client
import json
import os
import secrets
import shutil
import signal
import struct
import zlib

import harness
import tcp_relay

TOKEN = "hf_downloadTierHubToken0123456789abcdef"
ACCESS_TOKEN = "xet_downloadTierCasToken0123456789abcdef"
REPO = "dedupd/download-tier"
MIB = 1024 * 1024
SIZE = int(os.environ.get("DEDUPD_XET_DOWNLOAD_MIB", "48")) * MIB
PART = 6 * MIB  # a xorb of the file of several


def tier_host_of(xorb, servers):
    """The server of `servers` ("host:port", as the upstream block names
    them) nginx's `hash $xet_xorb consistent` sends `xorb` to while all are
    up: nginx's ketama (ngx_http_upstream_hash_module.c): 160 points per
    server, each CRC32(host NUL port, previous point), the key's CRC32 served
    by the first point at or past it."""
    points = {}
    for server in servers:
        host, port = server.rsplit(":", 1)
        base, prev = zlib.crc32(host.encode() + b"\0" + port.encode()), 0
        for _ in range(160):
            prev = zlib.crc32(struct.pack("<I", prev), base)
            points.setdefault(prev, server)
    ring = sorted(points)
    return points[ring[bisect.bisect_left(ring, zlib.crc32(xorb.encode())) % len(ring)]]


def cache_file(cache_dir, xorb, span):
    """Where nginx keeps object `span` ("s-e") of `xorb` (levels=1:2 of
    the MD5 of its key, as daemon/answers/download_objects.hpp)."""
    h = hashlib.md5(("xet1:%s:%s" % (xorb, span)).encode()).hexdigest()
    return os.path.join(cache_dir, h[-1], h[-3:-1], h)


class FleetCacheTier(harness.EndpointTest):
    def setUp(self):
        super().setUp()
        os.chmod(self.dir, 0o711)  # (nginx's user passes through to each host's directory)
        self.hub = self.hub_standin(self.tls, TOKEN, ACCESS_TOKEN)
        # The fleet's key: range URLs one host signs, another checks.
        self.key_file = harness.write(self.path("fleet", "xet-download.key"), (secrets.token_hex(32) + "\n").encode())
        os.chmod(self.key_file, 0o600)
        self.tier_ports = [harness.free_port(), harness.free_port()]
        self.hosts = {}
        for i, port in enumerate(self.tier_ports):
            self.host("tier-%d" % (i + 1), tier_port=port)

    def host(self, name, **endpoint):
        """An endpoint instance (its dedupd, its nginx, its cache)."""
        yaml = harness.endpoint_yaml(self.path(name, "xet-endpoint.conf"))
        yaml += "  downloads:\n    key_file: %s\n" % self.key_file
        d = self.dedupd([self.path(name, "xet")], yaml, name=name + "/dedupd")
        ep = self.xet_endpoint(self.hub, d.socket, self.tls["ca"], name=name + "/endpoint", **endpoint)
        self.hosts[name] = (d, ep)
        return d, ep

    def edge(self, name, ports=None):
        return self.host(name, tier=ports or self.tier_ports)

    def user(self, name, ep, home="user"):
        return harness.HubClient(self.path(name, home), ep.endpoint, TOKEN, self.tls["ca"])

    def storage_bytes(self):
        return self.hub.state()["storage"]["bytes"]

    def counts(self, name):
        return self.hosts[name][0].json("/v1/status")["xet_downloads"]

    def cache_files(self, name):
        return len(harness.download_cache_files(self.hosts[name][1].cache_dir))

    def download(self, name, file_name, size=SIZE, during=None, user="user"):
        """`hf download` on host `name` by `user` (a home and a download
        directory of its own): (bytes it cost the storage, sha256 of what it
        got, its bytes by source as its dedupd counted them).
        `during(process)`, when given, runs while the download is under way."""
        d, ep = self.hosts[name]
        before_storage, before = self.storage_bytes(), self.counts(name)["bytes"]
        out = self.path(name, "download" if user == "user" else user + "-download")
        user = self.user(name, ep, user)
        if during is None:
            user.hf("download", REPO, file_name, "--local-dir", out)
        else:
            p = user.hf_started("download", REPO, file_name, "--local-dir", out)
            try:
                during(p)
            finally:
                stdout, stderr = p.communicate(timeout=600)
            self.assertEqual(p.returncode, 0, "hf download failed:\n%s\n%s" % (stdout, stderr[-3000:]))
        storage = self.storage_bytes() - before_storage
        # nginx reports each range as its request ends, a moment after the
        # client has it.
        now = harness.wait_for("%s's ranges counted" % name,
                               lambda: (lambda b: b if sum(b.values()) - sum(before.values()) >= size else None)(
                                   self.counts(name)["bytes"]))
        got = {k: now[k] - before[k] for k in now}
        print("%s: %d bytes from storage; counted %s" % (name, storage, got))
        return storage, harness.sha256_of(os.path.join(out, file_name)), got

    def get(self, port, uri, headers=None):
        return self.get_body(port, uri, headers)[0]

    def get_body(self, port, uri, headers=None):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        try:
            conn.request("GET", uri, headers=headers or {})
            r = conn.getresponse()
            return r.status, r.read()
        finally:
            conn.close()

    def range_uri(self, ep):
        """The path and query of the first range URL of the file's
        reconstruction, as `ep` rewrites it."""
        conn = http.client.HTTPConnection("127.0.0.1", ep.cas_port, timeout=60)
        try:
            conn.request("GET", "/v1/reconstructions/" + self.hub.state()["files"][0],
                         headers={"Authorization": "Bearer " + ACCESS_TOKEN})
            r = conn.getresponse()
            body = r.read()
            self.assertEqual(r.status, 200, body[:300])
        finally:
            conn.close()
        url = next(iter(json.loads(body)["fetch_info"].values()))[0]["url"]
        return url[url.index("/xet/o/"):]

    def edges_and_a_file(self, edges, file_name, seed):
        """The edges, and a file of SIZE random bytes uploaded through the
        first one (the storage's counts reset after): its path and name."""
        for e in edges:
            self.edge(e)
        src = harness.write(self.path("src", file_name), harness.random_bytes(SIZE, seed))
        up = self.user("uploader", self.hosts[edges[0]][1])
        up.run("create-repo", REPO)
        up.run("upload-file", REPO, file_name, src)
        self.hub.reset()
        return src, file_name

    def test_a_second_edge_fetches_nothing_from_storage_and_a_dead_tier_costs_a_direct_fetch(self):
        src, name = self.edges_and_a_file(("edge-a", "edge-b"), "model.bin", 73)
        want = harness.sha256_of(src)

        # Edge A: every object once from storage, through the tier host its
        # xorb hashes to, which keeps it; A's bytes came from the tier.
        storage_a, sha_a, got_a = self.download("edge-a", name)
        self.assertEqual(sha_a, want)
        self.assertGreaterEqual(storage_a, SIZE)
        self.assertLess(storage_a, SIZE + SIZE // 50)
        self.assertEqual(got_a["internet"], 0)
        self.assertEqual(got_a["tier"], storage_a)
        per_tier = [self.cache_files("tier-1"), self.cache_files("tier-2")]
        print("objects cached: edge A %d, tier 1 %d, tier 2 %d" % (self.cache_files("edge-a"), *per_tier))
        self.assertEqual(sum(per_tier), self.cache_files("edge-a"))
        # The tier hosts filled from storage themselves (their own counts).
        self.assertEqual(sum(self.counts(t)["bytes"]["internet"] for t in ("tier-1", "tier-2")), storage_a)
        harness.assert_each_range_once(self, self.hub.state()["storage"]["xorbs"])

        # Edge B, empty caches: nothing from storage, all from the tier.
        storage_b, sha_b, got_b = self.download("edge-b", name)
        self.assertEqual(sha_b, want)
        self.assertEqual(storage_b, 0)
        self.assertEqual(got_b["internet"], 0)
        self.assertEqual(got_b["tier"], storage_a)
        tier_hosts = {h["host"]: h["up"] for h in self.counts("edge-b")["tier"]}
        self.assertTrue(tier_hosts and all(tier_hosts.values()), tier_hosts)

        # What only nginx may say is not taken from a client: a whole object
        # (the tier's ask) at an edge without the granted Range, a tier port
        # asked for a URL not signed.
        uri = self.range_uri(self.hosts["edge-b"][1])
        self.assertEqual(self.get(self.hosts["edge-b"][1].cas_port, uri, {"X-Dedupd-Tier": "1"}), 403)
        tier_port = self.tier_ports[0] if self.cache_files("tier-1") else self.tier_ports[1]
        self.assertEqual(self.get(tier_port, uri), 200)
        self.assertEqual(self.get(tier_port, uri[:-1] + ("1" if uri.endswith("0") else "0")), 403)  # (g is last)

        # Every tier host gone: edge C (empty caches) fetches from storage
        # itself, and the download completes.
        for t in ("tier-1", "tier-2"):
            d, ep = self.hosts[t]
            ep.stop()
            d.stop()
        self.edge("edge-c")
        storage_c, sha_c, got_c = self.download("edge-c", name)
        self.assertEqual(sha_c, want)
        self.assertEqual(storage_c, storage_a)
        self.assertEqual(got_c["internet"], storage_c)
        self.assertEqual(got_c["tier"], 0)
        tier_hosts = {h["host"]: h["up"] for h in self.counts("edge-c")["tier"]}
        self.assertTrue(tier_hosts and not any(tier_hosts.values()), tier_hosts)
        # The fill after the tier failed is cached here, under the same key.
        self.assertEqual(self.cache_files("edge-c"), self.cache_files("edge-a"))

        # No storage URL in any file of any host (the tier's header is never
        # logged).
        for name_, (d, ep) in self.hosts.items():
            for root in (ep.root, d.root):
                for dirpath, _, names in os.walk(root):
                    for n in names:
                        p = os.path.join(dirpath, n)
                        if os.path.isfile(p) and not os.path.islink(p):
                            with open(p, "rb") as f:
                                self.assertNotIn(b"Signature=", f.read(), p)

    @harness.ends_only("what is tested is the edge's check of a cache file at a grant, the same for every "
                       "client; the ends cover its asks")
    def test_a_file_the_tier_filled_and_scribbled_on_the_edge_is_found_by_the_tier_hosts_digest(self):
        """Edge B downloads a file its index knows nothing of (uploaded
        through edge A): its objects come from the tier hosts, which checked
        them as the storage sent them, and B's dedupd never saw them. A bit
        of B's largest cached object flips (in a chunk's stored data: the
        structure still walks). A second user of B then gets the right
        bytes: B's first check of that file compares it with the digest of
        the tier host that filled it, removes it, and fetches the object
        again from the tier, costing the storage nothing."""
        src, name = self.edges_and_a_file(("edge-a", "edge-b"), "scribbled.bin", 81)
        want = harness.sha256_of(src)
        self.assertEqual(self.hosts["edge-b"][0].shards(), [], "edge B must not know the file's xorbs")
        storage_b, sha_b, got_b = self.download("edge-b", name)
        self.assertEqual((sha_b, got_b["internet"]), (want, 0))
        self.assertGreaterEqual(storage_b, SIZE)
        files = harness.download_cache_files(self.hosts["edge-b"][1].cache_dir)
        victim = max(files, key=files.get)
        harness.flip_middle_bit(victim)
        storage_again, sha_again, got_again = self.download("edge-b", name, user="second")
        print("object of %d bytes (file) scribbled on edge B; the second download cost the storage %d bytes, "
              "the tier %d" % (files[victim], storage_again, got_again["tier"]))
        self.assertEqual(sha_again, want)
        self.assertEqual(storage_again, 0)
        self.assertGreater(got_again["tier"], files[victim] - 4096)  # that object again, from the tier
        self.assertLess(got_again["tier"], files[victim])  # and nothing else
        self.assertIn("removed", self.hosts["edge-b"][0].proc.tail(400))
        self.assertEqual(self.counts("edge-b")["cache_damaged"], 1)
        # The tier port's digest route, as the edge's way out asks it: the
        # host holding the object tells its digest to a URL the fleet's key
        # signed, the other knows none; an altered URL is refused.
        uri = self.range_uri(self.hosts["edge-b"][1])
        asks = {p: self.get_body(p, uri.replace("/xet/o/", "/xet/d/", 1)) for p in self.tier_ports}
        self.assertEqual(sorted(status for status, _ in asks.values()), [200, 404], asks)
        digest = next(body for status, body in asks.values() if status == 200)
        self.assertRegex(digest, rb"^[0-9a-f]{64}\n$")
        altered = uri[:-1] + ("1" if uri.endswith("0") else "0")  # (g is last)
        self.assertEqual([self.get_body(p, altered.replace("/xet/o/", "/xet/d/", 1))[0] for p in self.tier_ports],
                         [403, 403])

    @harness.ends_only("the client's part, asking a range cut short again, is the single-host check test's, "
                       "which every pair runs")
    def test_bytes_that_fail_the_check_on_a_tier_host_are_cached_nowhere_and_the_download_completes(self):
        """The storage damages one answer to a tier host whose index holds
        the file's xorbs (their shards dropped in its watched directory): its
        dedupd ends the answer short at the damaged chunk, so neither that
        host's nginx nor the edge's caches any of it; the client asks the
        range again and the download completes with the right bytes. Only
        the damaged range cost the storage twice, and a second edge then
        costs it nothing. (A tier host that does not hold the xorb checks
        the structure only, as any host: docs/XET-ENDPOINT.md, "Fleet tier".)"""
        src, name = self.edges_and_a_file(("edge-a", "edge-b"), "damaged.bin", 79)
        want = harness.sha256_of(src)
        tiers = ("tier-1", "tier-2")
        shards = sorted(os.path.join(dirpath, n) for dirpath, _, names in os.walk(self.hub.root)
                        for n in names if n.endswith(".mdb") and os.path.basename(dirpath) == "shards")
        self.assertTrue(shards, "the stand-in kept no shard of the upload")
        for t in tiers:
            for i, f in enumerate(shards):
                shutil.copyfile(f, self.path(t, "xet", "upload-%d.mdb" % i))
            harness.wait_for("%s to index the upload's shards" % t,
                             lambda: len(self.hosts[t][0].shards()) >= len(shards))
        before = {t: self.counts(t)["fill_failed"] for t in tiers}
        self.hub_call("/_standin/storage-damage", b"1")
        storage_a, sha_a, got_a = self.download("edge-a", name)
        self.assertEqual(sha_a, want)
        self.assertEqual(got_a["internet"], 0)
        # Every range once from storage, but the damaged one: once whole
        # and once as far as the storage got before the tier host hung up.
        served = self.hub.state()["storage"]["xorbs"]
        again = {(x, r): n / (int(r.split("-")[1]) + 1 - int(r.split("-")[0])) for x, rs in served.items()
                 for r, n in rs.items() if n != int(r.split("-")[1]) + 1 - int(r.split("-")[0])}
        self.assertEqual(len(again), 1, served)
        self.assertTrue(1 < next(iter(again.values())) <= 2, served)
        failed = {t: {k: v - before[t][k] for k, v in self.counts(t)["fill_failed"].items()} for t in tiers}
        print("fills failed on the tier hosts: %s" % failed)
        self.assertEqual(sum(f["check"] for f in failed.values()), 1, failed)
        self.assertEqual(sum(f["storage"] + f["local"] for f in failed.values()), 0, failed)
        self.assertEqual(self.counts("edge-a")["fill_failed"], {"check": 0, "storage": 0, "local": 0})
        # What was cached (the good bytes of every object, once per host) is
        # what a second edge gets, and nothing of it from storage.
        self.assertEqual(self.cache_files("tier-1") + self.cache_files("tier-2"), self.cache_files("edge-a"))
        storage_b, sha_b, got_b = self.download("edge-b", name)
        self.assertEqual((sha_b, storage_b, got_b["internet"]), (want, 0, 0))

    @harness.ends_only("the tier host's cache lock holds the second edge, whichever client asks; the pairs "
                       "between fetch ranges as one of the ends does")
    def test_two_edges_downloading_at_once_fetch_each_range_from_storage_once(self):
        """Two hosts of a fleet, empty caches, the same file at the same
        time: their misses meet at the tier host each xorb hashes to, whose
        cache lock lets one fill while the other waits, so the storage
        serves each range once (issue 72: "two hosts downloading the same
        file at once")."""
        src, name = self.edges_and_a_file(("edge-d", "edge-e"), "together.bin", 74)
        started = {e: self.user(e, self.hosts[e][1]).hf_started("download", REPO, name, "--local-dir",
                                                                  self.path(e, "download"))
                   for e in ("edge-d", "edge-e")}
        for e, p in started.items():
            stdout, stderr = p.communicate(timeout=600)
            self.assertEqual(p.returncode, 0, "%s: hf download failed:\n%s\n%s" % (e, stdout, stderr[-3000:]))
            self.assertEqual(harness.sha256_of(self.path(e, "download", name)), harness.sha256_of(src), e)
        total = harness.assert_each_range_once(self, self.hub.state()["storage"]["xorbs"])
        print("two edges at once through the tier, file %d bytes: %d bytes from storage" % (SIZE, total))
        self.assertGreaterEqual(total, SIZE)
        self.assertLess(total, SIZE + SIZE // 50)
        # Both edges' bytes came from the tier (each counted its own).
        for e in ("edge-d", "edge-e"):
            got = harness.wait_for("%s's ranges counted" % e, lambda e=e: (
                lambda b: b if b["tier"] >= total else None)(self.counts(e)["bytes"]))
            self.assertEqual(got["internet"], 0, e)

    @harness.ends_only("a short body is retried by the fetch code of 1.1-1.2 (as 1.1.9's) or of xet-core's "
                       "file reconstruction (1.3 on, as the newest's)")
    def test_xorbs_spread_over_the_tier_hosts_and_one_killed_mid_body_costs_its_objects_again(self):
        # The edges reach the tier hosts through relays (their network face,
        # which the test can hold and cut); nginx hashes the relays' names.
        relays = [tcp_relay.Relay(p) for p in self.tier_ports]
        self.addCleanup(lambda: [r.cut() for r in relays])
        names = ["127.0.0.1:%d" % r.port for r in relays]
        for e in ("edge-a", "edge-b", "edge-c"):
            self.edge(e, [r.port for r in relays])
        up = self.user("uploader", self.hosts["edge-a"][1])
        up.run("create-repo", REPO)
        # A file of several xorbs: parts uploaded one by one (a xorb each),
        # until their xorbs hash to both tier hosts, then the file made of
        # them, whose terms are the parts' xorbs (the uploader's shard cache
        # knows them) and a small new xorb where the parts meet.
        parts, host_of = [], {}
        while len(set(host_of.values())) < 2 or len(parts) < 3:
            self.assertLess(len(parts), 12, "the parts' xorbs all hash to one tier host: %s" % host_of)
            part = harness.write(self.path("src", "part-%d.bin" % len(parts)),
                                 harness.random_bytes(PART, 90 + len(parts)))
            self.hub.reset()
            up.run("upload-file", REPO, os.path.basename(part), part)
            new = list(self.hub.state()["xorbs"])
            self.assertEqual(len(new), 1, new)
            host_of[new[0]] = tier_host_of(new[0], names)
            parts.append(part)
        data = bytearray()
        for p in parts:
            with open(p, "rb") as f:
                data += f.read()
        src = harness.write(self.path("src", "several.bin"), data)
        self.hub.reset()
        up.run("upload-file", REPO, "several.bin", src)
        for x in self.hub.state()["xorbs"]:
            host_of[x] = tier_host_of(x, names)
        want = harness.sha256_of(src)
        self.hub.reset()

        # Edge A: each object through the tier host its xorb hashes to, and
        # kept there, not on the other.
        storage_a, sha_a, got_a = self.download("edge-a", "several.bin", len(data))
        self.assertEqual(sha_a, want)
        self.assertEqual(got_a["tier"], storage_a)
        tier_dir = {names[i]: self.hosts["tier-%d" % (i + 1)][1].cache_dir for i in range(2)}
        objects = {}  # (xorb, "s-e"): bytes
        for x, ranges in self.hub.state()["storage"]["xorbs"].items():
            for span, n in ranges.items():
                objects[(x, span)] = n
                self.assertIn(x, host_of, "a xorb the file does not name was fetched")
                for name_, d in tier_dir.items():
                    self.assertEqual(os.path.exists(cache_file(d, x, span)), name_ == host_of[x],
                                     "object %s %s on %s (its xorb hashes to %s)" % (x, span, name_, host_of[x]))
        on = {n: sum(b for (x, _), b in objects.items() if host_of[x] == n) for n in names}
        print("file of %d bytes, %d xorbs, %d objects; bytes of them per tier host: %s"
              % (len(data), len(host_of), len(objects), on))
        self.assertTrue(all(on.values()), on)
        self.assertEqual(sum(on.values()), storage_a)

        # Edge B, empty caches: nothing from storage, from both tier hosts.
        storage_b, sha_b, got_b = self.download("edge-b", "several.bin", len(data))
        self.assertEqual((sha_b, storage_b, got_b["internet"]), (want, 0, 0))
        self.assertEqual(got_b["tier"], storage_a)

        # Edge C: the tier host of the largest object dies while it sends
        # that object to C (the relay holds its answers once one has passed
        # 1 MiB, the host is killed, its link cut). The client retries; the
        # edge's nginx, the host gone, asks the other tier host, which
        # fills from storage: what the dead host had not sent costs the
        # storage once more, and the download completes.
        victim = host_of[max(objects, key=objects.get)[0]]
        relay = relays[names.index(victim)]
        tier_name = "tier-%d" % (names.index(victim) + 1)

        def kill_mid_body(p):
            relay.freeze_after(MIB)
            self.assertTrue(relay.frozen.wait(120), "no answer of 1 MiB passed the relay")
            self.assertIsNone(p.poll(), "the download ended before its body did")
            for proc in self.hosts[tier_name]:
                os.killpg(proc.proc.p.pid, signal.SIGKILL)
            relay.cut()
        survivor = [n for n in names if n != victim][0]
        survivor_name = "tier-%d" % (names.index(survivor) + 1)
        survivor_filled = self.counts(survivor_name)["bytes"]["internet"]
        self.hub.reset()
        storage_c, sha_c, got_c = self.download("edge-c", "several.bin", len(data), during=kill_mid_body)
        self.assertEqual(sha_c, want)
        again = self.hub.state()["storage"]["xorbs"]
        print("tier host %s killed mid-body: edge C %d bytes from storage again (of %d on it); counted %s"
              % (victim, storage_c, on[victim], got_c))
        # Only objects of the dead host, each once, the cut one among them.
        for x, ranges in again.items():
            self.assertEqual(host_of[x], victim, x)
            for span, n in ranges.items():
                self.assertEqual(n, objects[(x, span)], "%s %s fetched %d bytes" % (x, span, n))
        self.assertTrue(any(n > MIB for r in again.values() for n in r.values()), again)
        self.assertLessEqual(storage_c, on[victim])
        # Counted: edge C's bytes are the file's ranges once, all from the
        # tier (a body cut short is a failed request, its bytes in no
        # source: Content-Length beside the bytes sent); the other tier
        # host filled from storage what C fetched again; no fill failed.
        self.assertEqual((got_c["tier"], got_c["internet"], got_c["local_cache"]), (storage_a, 0, 0))
        # (each body the relay held when the host died: one or more)
        self.assertGreaterEqual(self.counts("edge-c")["requests"]["failed"], 1)
        self.assertEqual(self.counts(survivor_name)["bytes"]["internet"] - survivor_filled, storage_c)
        for host in ("edge-c", survivor_name):
            self.assertEqual(sum(self.counts(host)["fill_failed"].values()), 0, host)
        tier_hosts = {h["host"]: h["up"] for h in self.counts("edge-c")["tier"]}
        self.assertEqual(tier_hosts, {victim: False, survivor: True})


if __name__ == "__main__":
    harness.main()
