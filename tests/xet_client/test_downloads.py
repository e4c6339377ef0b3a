#!/usr/bin/env python3
"""Downloads through the local Xet endpoint (docs/XET-ENDPOINT.md,
"Downloads"; issue 72, first slice): the real `hf download` through the real
nginx, whose reconstruction answers dedupd rewrites so every range comes
through the endpoint, cached by (xorb, range). The stand-in's storage
(cas_standin.py, a port of its own, presigned-style URLs it checks) counts
the bytes it serves: what each host cost the internet."""

import http.client
import json
import os
import time

import harness

TOKEN = "hf_downloadsHubToken0123456789abcdef"
ACCESS_TOKEN = "xet_downloadsCasToken0123456789abcdef"
REPO = "dedupd/downloads"
MIB = 1024 * 1024
SIZE = int(os.environ.get("DEDUPD_XET_DOWNLOAD_MIB", "48")) * MIB


class DownloadsThroughTheEndpoint(harness.EndpointTest):
    def setUp(self):
        super().setUp()
        self.settings = self.path("endpoint-settings", "xet-endpoint.conf")
        self.dedupd = self.dedupd([self.path("host-" + h, "xet") for h in "ab"], harness.endpoint_yaml(self.settings))
        self.hub = self.hub_standin(self.tls, TOKEN, ACCESS_TOKEN)
        self.ep = self.xet_endpoint(self.hub, self.dedupd.socket, self.tls["ca"])

    def user(self, host):
        return harness.HubClient(self.path(host), self.ep.endpoint, TOKEN, self.tls["ca"])

    def uploaded(self, size, seed):
        """A file of random bytes uploaded by a user of its own: its path
        and its Xet file hash."""
        src = harness.write(self.path("src", "model-%d.bin" % seed), harness.random_bytes(size, seed))
        up = self.user("uploader")
        up.run("create-repo", REPO)
        up.run("upload-file", REPO, os.path.basename(src), src)
        files = self.hub.state()["files"]
        self.assertEqual(len(files), 1, files)
        return src, files[0]

    def storage_bytes(self):
        return self.hub.state()["storage"]["bytes"]

    def cas_get(self, path, headers=None):
        """(status, headers, body) of a GET on the endpoint's CAS port."""
        conn = http.client.HTTPConnection("127.0.0.1", self.ep.cas_port, timeout=30)
        try:
            conn.request("GET", path, headers=headers or {})
            r = conn.getresponse()
            return r.status, r.headers, r.read()
        finally:
            conn.close()

    def reconstruction(self, file_hash, version="v1"):
        status, _, body = self.cas_get("/%s/reconstructions/%s" % (version, file_hash),
                                       {"Authorization": "Bearer " + ACCESS_TOKEN})
        self.assertEqual(status, 200, body[:500])
        return json.loads(body)

    def test_a_second_host_with_empty_caches_fetches_nothing_from_storage(self):
        src, _ = self.uploaded(SIZE, 72)
        self.hub.reset()
        got = {}
        for host in ("host-a", "host-b"):
            before = self.storage_bytes()
            out = self.path(host, "download")
            self.user(host).hf("download", REPO, os.path.basename(src), "--local-dir", out)
            got[host] = (self.storage_bytes() - before, harness.sha256_of(os.path.join(out, os.path.basename(src))))
        print("file %d bytes; from storage: host A %d, host B %d" % (SIZE, got["host-a"][0], got["host-b"][0]))
        want = harness.sha256_of(src)
        self.assertEqual(got["host-a"][1], want)
        self.assertEqual(got["host-b"][1], want)
        # Host A fetched every range once (xorb bytes: at least the file's,
        # random bytes do not compress); host B nothing.
        self.assertGreaterEqual(got["host-a"][0], SIZE)
        self.assertLess(got["host-a"][0], SIZE + SIZE // 50)
        self.assertEqual(got["host-b"][0], 0)
        # Each range was fetched from storage once, and through the endpoint.
        served = self.hub.state()["storage"]["xorbs"]
        self.assertTrue(served)
        for xorb, ranges in served.items():
            for r, n in ranges.items():
                first, last = (int(x) for x in r.split("-"))
                self.assertEqual(n, last + 1 - first, "%s %s fetched more than once" % (xorb, r))
        ranges = [l for l in self.ep.access_log() if l[3].startswith("/xet/o/")]
        self.assertTrue(ranges, "no range came through the endpoint")
        self.assertEqual({l[4] for l in ranges}, {"206"}, ranges)
        # No presigned URL in any file of the endpoint or of dedupd.
        for root in (self.ep.root, self.dedupd.root):
            for d, _, names in os.walk(root):
                for n in names:
                    p = os.path.join(d, n)
                    if os.path.isfile(p) and not os.path.islink(p):
                        with open(p, "rb") as f:
                            self.assertNotIn(b"Signature=", f.read(), p)

    @harness.once("range URLs are the endpoint's; no client of its own")
    def test_altered_expired_and_other_range_urls_are_refused(self):
        _, file_hash = self.uploaded(3 * MIB, 73)
        for version in ("v1", "v2"):
            doc = self.reconstruction(file_hash, version)
            if version == "v1":
                xorb, entries = next(iter(doc["fetch_info"].items()))
                url, rng = entries[0]["url"], entries[0]["url_range"]
            else:
                xorb, entries = next(iter(doc["xorbs"].items()))
                url, rng = entries[0]["url"], entries[0]["ranges"][0]["bytes"]
            prefix = self.ep.cas_url + "/xet/o/%s/" % xorb
            self.assertTrue(url.startswith(prefix), url)
            uri = url[len(self.ep.cas_url):]
            good = "bytes=%d-%d" % (rng["start"], rng["end"])
            status, headers, body = self.cas_get(uri, {"Range": good})
            self.assertEqual(status, 206, body[:300])
            self.assertEqual(len(body), rng["end"] + 1 - rng["start"])
            self.assertEqual(headers["Content-Range"].split("/")[0], "bytes %d-%d" % (rng["start"], rng["end"]))
            g = uri[uri.index("&g=") + 3:]
            altered = uri.replace(g, ("0" if g[0] != "0" else "1") + g[1:])
            other_range = uri.replace("/%d-%d?" % (rng["start"], rng["end"]), "/%d-%d?" % (rng["start"], rng["end"] + 1))
            for what, u, r in (("altered signature", altered, good), ("another range in the URL", other_range,
                               "bytes=%d-%d" % (rng["start"], rng["end"] + 1)),
                               ("another Range header", uri, "bytes=%d-%d" % (rng["start"], rng["end"] - 1)),
                               ("no Range header", uri, None)):
                status, _, body = self.cas_get(u, {"Range": r} if r else {})
                self.assertEqual(status, 403, "%s %s: %s" % (version, what, body[:300]))
        # Expired: the CAS's URLs live 2 s, and so do the endpoint's.
        self.hub_call("/_standin/url-lifetime", b"2")
        doc = self.reconstruction(file_hash)
        xorb, entries = next(iter(doc["fetch_info"].items()))
        uri = entries[0]["url"][len(self.ep.cas_url):]
        rng = entries[0]["url_range"]
        time.sleep(3)
        status, _, _ = self.cas_get(uri, {"Range": "bytes=%d-%d" % (rng["start"], rng["end"])})
        self.assertEqual(status, 403)

    @harness.once("the endpoint's fail-open path; no client of its own")
    def test_with_dedupd_down_the_cas_answer_goes_out_unrewritten(self):
        _, file_hash = self.uploaded(MIB, 74)
        rewritten = self.reconstruction(file_hash)
        uri = next(iter(rewritten["fetch_info"].values()))[0]["url"][len(self.ep.cas_url):]
        self.dedupd.stop()
        doc = self.reconstruction(file_hash)
        for entries in doc["fetch_info"].values():
            for e in entries:
                self.assertTrue(e["url"].startswith("https://127.0.0.1:"), e["url"])
                self.assertIn("Signature=", e["url"])
        # A range URL handed out before: refused (a 403, not a 500), so the
        # client asks the reconstruction again and goes direct.
        status, _, _ = self.cas_get(uri, {"Range": "bytes=0-0"})
        self.assertEqual(status, 403)

    def hub_call(self, path, body):
        import ssl
        ctx = ssl.create_default_context(cafile=self.tls["ca"])
        conn = http.client.HTTPSConnection("127.0.0.1", self.hub.cas_port, timeout=30, context=ctx)
        try:
            conn.request("POST", path, body=body)
            self.assertEqual(conn.getresponse().status, 200)
        finally:
            conn.close()


if __name__ == "__main__":
    harness.main()
