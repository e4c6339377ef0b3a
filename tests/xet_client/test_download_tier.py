#!/usr/bin/env python3
"""The fleet's cache tier of the endpoint's downloads (docs/XET-ENDPOINT.md,
"Fleet tier"; issue 72): edge endpoints whose misses go to tier hosts (the
same nginx and dedupd, on a tier port, each xorb on the host nginx's
consistent hash picks), all with one key file. The real `hf download`
through the real nginx; the stand-in's storage counts what each host cost
the internet, and each edge's dedupd counts where its bytes came from."""

import http.client
import json
import os
import secrets

import harness

TOKEN = "hf_downloadTierHubToken0123456789abcdef"
ACCESS_TOKEN = "xet_downloadTierCasToken0123456789abcdef"
REPO = "dedupd/download-tier"
MIB = 1024 * 1024
SIZE = int(os.environ.get("DEDUPD_XET_DOWNLOAD_MIB", "48")) * MIB


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

    def edge(self, name):
        return self.host(name, tier=self.tier_ports)

    def user(self, name, ep):
        return harness.HubClient(self.path(name, "user"), ep.endpoint, TOKEN, self.tls["ca"])

    def storage_bytes(self):
        return self.hub.state()["storage"]["bytes"]

    def counts(self, name):
        return self.hosts[name][0].json("/v1/status")["xet_downloads"]

    def cache_files(self, name):
        ep = self.hosts[name][1]
        return sum(1 for _, _, names in os.walk(ep.cache_dir) for n in names if len(n) == 32)

    def download(self, name, file_name):
        """`hf download` on host `name`: (bytes it cost the storage, sha256
        of what it got, its bytes by source as its dedupd counted them)."""
        d, ep = self.hosts[name]
        before_storage, before = self.storage_bytes(), self.counts(name)["bytes"]
        out = self.path(name, "download")
        self.user(name, ep).hf("download", REPO, file_name, "--local-dir", out)
        storage = self.storage_bytes() - before_storage
        # nginx reports each range as its request ends, a moment after the
        # client has it.
        now = harness.wait_for("%s's ranges counted" % name,
                               lambda: (lambda b: b if sum(b.values()) - sum(before.values()) >= SIZE else None)(
                                   self.counts(name)["bytes"]))
        got = {k: now[k] - before[k] for k in now}
        print("%s: %d bytes from storage; counted %s" % (name, storage, got))
        return storage, harness.sha256_of(os.path.join(out, file_name)), got

    def get(self, port, uri, headers=None):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        try:
            conn.request("GET", uri, headers=headers or {})
            r = conn.getresponse()
            r.read()
            return r.status
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

    def test_a_second_edge_fetches_nothing_from_storage_and_a_dead_tier_costs_a_direct_fetch(self):
        self.edge("edge-a")
        self.edge("edge-b")
        src = harness.write(self.path("src", "model.bin"), harness.random_bytes(SIZE, 73))
        name = os.path.basename(src)
        up = self.user("uploader", self.hosts["edge-a"][1])
        up.run("create-repo", REPO)
        up.run("upload-file", REPO, name, src)
        self.hub.reset()
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
        for served in self.hub.state()["storage"]["xorbs"].values():
            for r, n in served.items():
                first, last = (int(x) for x in r.split("-"))
                self.assertEqual(n, last + 1 - first, "%s fetched more than once" % r)

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


if __name__ == "__main__":
    harness.main()
