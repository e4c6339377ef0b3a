#!/usr/bin/env python3
"""The local Xet endpoint (docs/XET-ENDPOINT.md): the real clients with
HF_ENDPOINT set to nginx, configured from packaging/xet-endpoint/nginx.conf.in,
in front of the Hub and CAS stand-in over HTTPS (hub_standin.py), with the
real dedupd answering the global-dedup queries it can. The stand-in's CAS
has no dedupd of its own: every query it counts is one that went upstream.

Run once per client (XET_PAIR, harness.py): each pair of hf_xet releases,
and @huggingface/hub; the tests marked `once` (no request of the client's
own) run with the newest pair only."""

import hashlib
import json
import os
import signal
import socket
import subprocess
import threading
import time

import harness

TOKEN = "hf_endpointHubToken0123456789abcdef"
ACCESS_TOKEN = "xet_endpointCasToken0123456789abcdef"
REPO = "dedupd/endpoint"
MIB = 1024 * 1024


def sha256_of(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def files_containing(root, needles):
    """Paths of the regular files under root whose bytes contain any needle."""
    found = []
    for d, _, names in os.walk(root):
        for n in names:
            p = os.path.join(d, n)
            if os.path.isfile(p) and not os.path.islink(p):
                with open(p, "rb") as f:
                    data = f.read()
                if any(x in data for x in needles):
                    found.append(p)
    return found


class ThroughTheEndpoint(harness.EndpointTest):
    def setUp(self):
        super().setUp()
        self.cache_a, self.cache_b = self.path("host-a", "xet"), self.path("host-b", "xet")
        # Each host's Xet cache (HF_HOME/xet) is one dedupd watches. dedupd
        # reads the endpoint's settings file (written by the test that
        # wants it) at each status, for the upstreams it shows.
        self.endpoint_settings = self.path("endpoint-settings", "xet-endpoint.conf")
        self.dedupd = self.dedupd([self.path("host-" + h, "xet") for h in "abcdefgh"],
                                  harness.endpoint_yaml(self.endpoint_settings))
        self.hub = self.hub_standin(self.tls, TOKEN, ACCESS_TOKEN)

    def user(self, host, endpoint):
        """A user on `host` (its HF_HOME; its Xet cache host/xet, which
        dedupd watches) with HF_ENDPOINT = endpoint."""
        return harness.HubClient(self.path(host), endpoint.endpoint, TOKEN, self.tls["ca"])

    def upload(self, user, name, path):
        r = user.run("upload-file", REPO, name, path)
        return r["commit"]

    def test_known_chunks_are_answered_locally_unknown_go_upstream_and_downloads_are_identical(self):
        ep = self.xet_endpoint(self.hub, self.dedupd.socket, self.tls["ca"])
        # The endpoint's settings, so dedupd knows which CAS a cache of its
        # CAS port holds (the scope of what it finds in host A's cache).
        harness.write(self.endpoint_settings, ("hub_upstream = %s\ncas_upstream = %s\nhub_port = %d\ncas_port = %d\n"
                                               % (self.hub.endpoint, self.hub.cas_url, ep.hub_port, ep.cas_port)
                                               ).encode())
        a = self.user("host-a", ep)
        a.run("create-repo", REPO)
        old_bytes = harness.random_bytes(4 * MIB, 51)
        old = harness.write(self.path("src", "old.bin"), old_bytes)
        self.upload(a, "old.bin", old)
        first = self.hub.state()
        # Nobody knew these chunks: every query went upstream, and missed.
        self.assertTrue(first["chunk_queries"], "the client asked nothing")
        self.assertEqual({q["status"] for q in first["chunk_queries"]}, {404})
        self.assertEqual(first["xorb_chunk_bytes"], 4 * MIB)
        # ...through the endpoint: the token reply named it as the CAS.
        ep.wait_logged(lambda l: l[1] == str(ep.cas_port) and harness.is_xorb_upload(l[3]), 1)
        if harness.has_shard_cache():
            indexed = self.wait_indexed(self.dedupd, harness.Client(self.cache_a))
            # The client named its cache directory after the CAS URL the
            # token reply gave it (the endpoint's CAS port), as every release
            # does, so dedupd scopes what it finds there to the endpoint's
            # upstream CAS (docs/XET-ENDPOINT.md, "Scopes").
            dirs = [os.path.basename(d) for d in harness.Client(self.cache_a).endpoint_dirs()]
            self.assertEqual(len(dirs), 1, dirs)
            self.assertTrue(dirs[0].startswith(harness.cache_dir_prefix(ep.cas_url)), dirs)
            self.assertEqual(len(dirs[0]), 33, dirs)
            self.assertEqual({s.get("cas") for s in indexed.values()}, {self.hub.cas_url}, indexed)
        else:  # @huggingface/hub keeps no cache on disk: nothing for dedupd to find there
            self.assertEqual(os.listdir(self.cache_a), [])
        # The endpoint taught dedupd the shard its CAS accepted, scoped to it.
        harness.wait_for("the learned shard", lambda: any(
            s.get("cas") == self.hub.cas_url for s in self.dedupd.shards()), timeout=10)

        # Host B, whose cache knows nothing, uploads the same bytes and a
        # new megabyte: dedupd answers its queries, the upstream hears none.
        new = harness.write(self.path("src", "new.bin"), old_bytes + harness.random_bytes(MIB, 52))
        predicted = json.loads(self.dedupd.ctl("scan", "--json", new).stdout)["total"]["new_bytes"]
        self.hub.reset()
        b = self.user("host-b", ep)
        self.upload(b, "new.bin", new)
        state = self.hub.state()
        self.assertEqual(state["chunk_queries"], [], "queries dedupd could answer went upstream")
        if harness.chunks_like_xet_core():
            self.assertEqual(state["xorb_chunk_bytes"], predicted)
        self.assertLess(state["xorb_chunk_bytes"], MIB + 140 * 1024)
        self.assertEqual(state["rejected"], [])
        ep.wait_logged(lambda l: harness.is_chunk_query(l[3]) and l[4] == "200", 1)  # answered by dedupd

        # Downloads through the endpoint, by a third user, are identical.
        c = self.user("host-c", ep)
        for name, src in (("old.bin", old), ("new.bin", new)):
            got = c.run("download", REPO, name, self.path("download"))
            self.assertEqual(got["sha256"], sha256_of(src), name)
        # ...through the endpoint too (the read token's header named it).
        # (hf_xet before 1.3 asks in segments, until a 416 says the file ended.)
        asked = [l[3] for l in ep.access_log() if l[1] == str(ep.cas_port) and harness.is_reconstruction(l[3])]
        if harness.is_js():
            # @huggingface/hub asks the reconstruction where the Hub's Link
            # header (rel="xet-reconstruction-info") says: the CAS itself.
            self.assertEqual(asked, [])
            self.assertEqual(len({e["path"] for e in self.hub.requests() if harness.is_reconstruction(e["path"])}), 2)
        else:
            harness.wait_for("both files' reconstructions in the access log", lambda: len({
                l[3] for l in ep.access_log() if l[1] == str(ep.cas_port) and harness.is_reconstruction(l[3])}) == 2,
                timeout=10)
        self.assertEqual(self.hub.hub()["unauthorized"], 0)

        # No token in any log or file of the endpoint, dedupd or the caches.
        needles = [TOKEN.encode(), ACCESS_TOKEN.encode()]
        for root in (ep.root, self.dedupd.root, self.cache_a, self.cache_b, self.path("host-c", "xet")):
            self.assertEqual(files_containing(root, needles), [], root)

    def test_each_upload_of_a_series_from_a_new_host_sends_what_scan_predicts(self):
        # Every upload comes from a host whose cache is empty, so all it
        # can learn of earlier uploads is what dedupd answers through the
        # endpoint; what goes upstream is what `dedupctl scan` predicted.
        ep = self.xet_endpoint(self.hub, self.dedupd.socket, self.tls["ca"])
        base = harness.random_bytes(3 * MIB, 71)
        # (name, bytes, whether dedupd knows its first chunk, at most what
        # should go up)
        series = [
            ("random.bin", base, False, 3 * MIB),
            ("edited.bin", base[:MIB] + b"edit" + base[MIB + 4:], True, 200 * 1024),
            ("duplicate.bin", base, True, 0),
            ("appended.bin", base + harness.random_bytes(MIB // 2, 72), True, MIB // 2 + 140 * 1024),
            ("small.bin", harness.random_bytes(1000, 73), False, 1000),
            ("empty.bin", b"", False, 0),
        ]
        self.user("host-a", ep).run("create-repo", REPO)
        hosts = iter("bcdefgh")
        upstream_queries = 0  # what the stand-in counted, over the series
        uploaded = 0  # the shards the CAS accepted, over the series
        for name, data, known, most in series:
            src = harness.write(self.path("src", name), data)
            predicted = json.loads(self.dedupd.ctl("scan", "--json", src).stdout)["total"]["new_bytes"]
            self.hub.reset()
            host = next(hosts)
            self.upload(self.user("host-" + host, ep), name, src)
            state = self.hub.state()
            upstream_queries += len(state["chunk_queries"])
            if harness.chunks_like_xet_core():
                self.assertEqual(state["xorb_chunk_bytes"], predicted, name)
                self.assertLessEqual(predicted, most, name)
            self.assertLessEqual(state["xorb_chunk_bytes"], most, name)
            self.assertEqual(state["rejected"], [], name)
            if known:  # every query dedupd could answer, it did
                self.assertEqual(state["chunk_queries"], [], name)
            elif data:  # a new first chunk: asked upstream
                self.assertTrue(state["chunk_queries"], name)
            if data and harness.has_shard_cache():
                self.wait_indexed(self.dedupd, harness.Client(self.path("host-" + host, "xet")))
            elif data:  # learned through the endpoint, the only way dedupd hears of it
                uploaded += len(state["shards"])  # (none for a file the Hub has)
                harness.wait_for("%s learned" % name, lambda: self.dedupd.json("/v1/status")[
                    "xet_endpoint"]["learning"]["accepted"] >= uploaded, timeout=20)
        # Known content came from dedupd: the edited, duplicated and
        # appended files sent almost nothing.
        # (@huggingface/hub sends nothing for the duplicate, which the Hub
        # knows by its sha256: no query.)
        ep.wait_logged(lambda l: harness.is_chunk_query(l[3]) and l[4] == "200", 2 if harness.is_js() else 3)

        # What dedupd reports of the endpoint (issue 31) is what happened:
        # forwarded = the queries the upstream counted, local = the client's
        # queries (nginx's access log) it never saw.
        asked = [l for l in ep.access_log() if harness.is_chunk_query(l[3])]
        self.assertTrue(upstream_queries)
        doc = self.dedupd.json("/v1/status")["xet_endpoint"]
        self.assertEqual(doc["forwarded"], upstream_queries, asked)
        self.assertEqual(doc["local"], len(asked) - upstream_queries, asked)
        self.assertGreater(doc["local"], 0)
        # No settings file yet: the defaults, as the endpoint's script reads it.
        self.assertEqual(doc["upstreams"]["hub"], "https://huggingface.co")
        self.assertEqual(doc["config"], {"path": self.endpoint_settings, "present": False, "problem": ""})
        metrics = self.dedupd.get("/metrics")[1].decode()
        self.assertIn('dedupd_xet_endpoint_queries_total{answered="forwarded"} %d' % upstream_queries, metrics)
        # The upstreams come from the endpoint's settings, read as they are
        # now; dedupctl renders all of it.
        harness.write(self.endpoint_settings, ("hub_upstream = %s\ncas_upstream = %s\nhub_port = %d\ncas_port = %d\n"
                                               % (self.hub.endpoint, self.hub.cas_url, ep.hub_port, ep.cas_port)
                                               ).encode())
        doc = self.dedupd.json("/v1/status")["xet_endpoint"]
        self.assertEqual(doc["upstreams"], {"hub": self.hub.endpoint, "cas": self.hub.cas_url})
        self.assertEqual(doc["ports"], {"hub": ep.hub_port, "cas": ep.cas_port})
        text = self.dedupd.ctl("status").stdout
        self.assertIn("CAS " + self.hub.cas_url, text)
        self.assertIn("%d answered here, %d sent upstream" % (doc["local"], upstream_queries), text)

    @harness.once("plain requests to the token routes")
    def test_token_replies_name_the_endpoint_as_cas_only_for_the_configured_cas(self):
        ep = self.xet_endpoint(self.hub, self.dedupd.socket, self.tls["ca"])
        a = self.user("host-a", ep)
        a.run("create-repo", REPO)
        for kind in ("read", "write"):
            status, headers, body = ep.get("/api/models/%s/xet-%s-token/main" % (REPO, kind), TOKEN)
            self.assertEqual(status, 200, body)
            self.assertEqual(headers["X-Xet-Cas-Url"], ep.cas_url)
            self.assertEqual(json.loads(body)["casUrl"], ep.cas_url)
            self.assertEqual(json.loads(body)["accessToken"], ACCESS_TOKEN)
        # Configured for another CAS, the endpoint leaves this one alone:
        # the client then talks to it itself.
        other = self.xet_endpoint(self.hub, self.dedupd.socket, self.tls["ca"], name="endpoint-other",
                                  cas_upstream="https://127.0.0.1:%d" % harness.free_port())
        status, headers, body = other.get("/api/models/%s/xet-write-token/main" % REPO, TOKEN)
        self.assertEqual(status, 200, body)
        self.assertEqual(headers["X-Xet-Cas-Url"], self.hub.cas_url)
        self.assertEqual(json.loads(body)["casUrl"], self.hub.cas_url)
        # ...and says so in its foreign-cas.log, which the first endpoint,
        # whose CAS was the configured one, never wrote.
        def noted():
            with open(os.path.join(other.logs, "foreign-cas.log")) as f:
                return f.read()
        harness.wait_for("the other CAS noted", lambda: "names another CAS: " + self.hub.cas_url in noted(),
                         timeout=10)
        self.assertNotIn(ACCESS_TOKEN, noted())
        self.assertEqual(os.path.getsize(os.path.join(ep.logs, "foreign-cas.log")), 0)

    def test_xorbs_stream_through_in_bounded_memory(self):
        # Three 64 MiB files of one upload: three full xorbs in flight at
        # once. nginx holds none of them whole.
        ep = self.xet_endpoint(self.hub, self.dedupd.socket, self.tls["ca"])
        # Nor on disk: nginx may not write its temp dirs, so a body it
        # tried to spool would fail the upload.
        for d in ("client_body", "proxy_temp"):
            os.chmod(os.path.join(ep.root, d), 0o500)
        a = self.user("host-a", ep)
        a.run("create-repo", REPO)
        folder = self.path("three")
        for i in range(3):
            harness.write(os.path.join(folder, "part%d.bin" % i), harness.random_bytes(64 * MIB, 60 + i))
        a.run("upload-folder", REPO, folder)
        self.assertEqual(self.hub.state()["xorb_chunk_bytes"], 3 * 64 * MIB)
        self.assertLess(ep.worker_peak_rss_kib(), 32 * 1024)

    def hub_post(self, ep, path, doc, token=TOKEN):
        """(status, JSON answer) of a git-lfs batch request on the Hub port."""
        import http.client
        conn = http.client.HTTPConnection("127.0.0.1", ep.hub_port, timeout=30)
        try:
            conn.request("POST", path, body=json.dumps(doc).encode(),
                         headers={"Authorization": "Bearer " + token, "Accept": "application/vnd.git-lfs+json",
                                  "Content-Type": "application/vnd.git-lfs+json"})
            r = conn.getresponse()
            return r.status, json.loads(r.read())
        finally:
            conn.close()

    def cas_call(self, port, method, path, body=None, headers=None):
        """(status, headers, body) of a request with the CAS token on `port`."""
        import http.client
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            conn.request(method, path, body=body, headers=dict({"Authorization": "Bearer " + ACCESS_TOKEN},
                                                               **(headers or {})))
            r = conn.getresponse()
            return r.status, r.headers, r.read()
        finally:
            conn.close()

    def endpoint_with_a_file(self, name, size, seed):
        """An endpoint through which host A uploaded `name` (`size` random
        bytes from `seed`): (the endpoint, the file's path)."""
        ep = self.xet_endpoint(self.hub, self.dedupd.socket, self.tls["ca"])
        a = self.user("host-a", ep)
        a.run("create-repo", REPO)
        src = harness.write(self.path("src", name), harness.random_bytes(size, seed))
        a.run("upload-file", REPO, name, src)
        return ep, src

    @harness.once("requests written by hand, as git-lfs asks for git-xet (in no registry these machines reach)")
    def test_the_lfs_batch_answer_names_the_endpoint_as_cas_as_git_xet_reads_it(self):
        # git-xet is git-lfs's custom transfer agent "xet": git-lfs asks the
        # batch API, and git-xet uploads to the X-Xet-Cas-Url of each
        # object's upload action (git_xet/src/app/xet_agent.rs), with the
        # X-Xet-Access-Token beside it, and asks the action's href (the
        # write-token route) only for a fresh token.
        ep, known = self.endpoint_with_a_file("known.bin", 2 * MIB, 57)
        new = harness.random_bytes(MIB, 58)
        batch = "/%s.git/info/lfs/objects/batch" % REPO
        request = {"operation": "upload", "transfers": ["basic", "lfs-standalone-file", "xet"],
                   "ref": {"name": "refs/heads/main"}, "hash_algo": "sha256",
                   "objects": [{"oid": hashlib.sha256(new).hexdigest(), "size": len(new)},
                               {"oid": sha256_of(known), "size": 2 * MIB}]}
        status, answer = self.hub_post(ep, batch, request)
        self.assertEqual(status, 200, answer)
        self.assertEqual(answer["transfer"], "xet")
        upload, present = answer["objects"]
        self.assertNotIn("actions", present)  # the Hub has it: nothing to send
        action = upload["actions"]["upload"]
        self.assertEqual(action["header"]["X-Xet-Cas-Url"], ep.cas_url)
        self.assertEqual(action["header"]["X-Xet-Access-Token"], ACCESS_TOKEN)
        # The href is the Hub's, as it wrote it: only a token comes from it.
        self.assertEqual(action["href"], "https://huggingface.co/api/models/%s/xet-write-token/main" % REPO)
        # What git-xet then asks at that CAS URL reaches dedupd: the known
        # file's first chunk is answered here, with no query upstream.
        body_path = os.path.join(self.hub.root, "shards", "0001.mdb")
        chunk = json.loads(self.dedupd.ctl("inspect", "--json", body_path).stdout)["xorbs"][0]["chunk_hashes"][0]
        harness.wait_for("the known file learned", lambda: self.dedupd.shards(), timeout=20)
        self.hub.reset()
        status, _, body = self.cas_call(ep.cas_port, "GET", "/v1/chunks/default/" + chunk)
        self.assertEqual((status, body[:14]), (200, b"HFRepoMetaData"))
        self.assertEqual(self.hub.state()["chunk_queries"], [])
        # An endpoint configured for another CAS leaves this one's URL alone.
        other = self.xet_endpoint(self.hub, self.dedupd.socket, self.tls["ca"], name="endpoint-other",
                                  cas_upstream="https://127.0.0.1:%d" % harness.free_port())
        status, answer = self.hub_post(other, batch, request)
        self.assertEqual(answer["objects"][0]["actions"]["upload"]["header"]["X-Xet-Cas-Url"], self.hub.cas_url)
        # No token in the endpoint's logs.
        self.assertEqual(files_containing(ep.root, [TOKEN.encode(), ACCESS_TOKEN.encode()]), [])

    @harness.once("requests written by hand on the CAS port")
    def test_telemetry_and_file_chunk_hashes_pass_through_untouched_v2_reconstructions_are_rewritten(self):
        # What the newer clients ask that the endpoint does not read: each
        # goes to the upstream CAS as it came (path, query, headers, body),
        # its answer comes back as the CAS gave it, and dedupd hears of none.
        # The v2 reconstruction is the CAS's but for its fetch URLs, renamed
        # to the endpoint's (docs/XET-ENDPOINT.md, "Downloads").
        ep = self.endpoint_with_a_file("file.bin", 3 * MIB, 59)[0]
        file_hash = self.hub.state()["files"][0]
        harness.wait_for("the file learned", lambda: self.dedupd.shards(), timeout=20)
        before = self.dedupd.json("/v1/status")["xet_endpoint"]
        self.hub.reset()
        # POST /v1/telemetry (hf_xet's usage reports): the body reaches the CAS.
        report = json.dumps({"events": [{"name": "upload", "bytes": 3 * MIB}]}).encode()
        status, _, body = self.cas_call(ep.cas_port, "POST", "/v1/telemetry", report,
                                        {"Content-Type": "application/json"})
        self.assertEqual((status, json.loads(body)), (200, {}))
        self.assertEqual(self.hub.state()["telemetry"], [{"bytes": len(report), "content_type": "application/json"}])
        # GET /v2/reconstructions/<file>: the CAS's answer, each range with
        # a URL of the endpoint's of its own (test_downloads.py fetches them).
        via = self.cas_call(ep.cas_port, "GET", "/v2/reconstructions/" + file_hash)
        import http.client
        import ssl
        conn = http.client.HTTPSConnection("127.0.0.1", self.hub.cas_port, timeout=30,
                                           context=ssl.create_default_context(cafile=self.tls["ca"]))
        conn.request("GET", "/v2/reconstructions/" + file_hash, headers={"Authorization": "Bearer " + ACCESS_TOKEN})
        direct = conn.getresponse()
        direct_body = direct.read()
        conn.close()
        self.assertEqual(via[0], 200, via[2])
        got, cas = json.loads(via[2]), json.loads(direct_body)
        self.assertEqual((got["terms"], got["offset_into_first_range"]), (cas["terms"], cas["offset_into_first_range"]))
        self.assertEqual({x: [r for e in es for r in e["ranges"]] for x, es in got["xorbs"].items()},
                         {x: [r for e in es for r in e["ranges"]] for x, es in cas["xorbs"].items()})
        self.assertTrue(all(e["url"].startswith(ep.cas_url + "/xet/o/") for es in got["xorbs"].values()
                            for e in es), via[2])
        # GET /v2/file-chunk-hashes/<file> (hf_xet 1.6.0 on, editing a file in
        # place): its query and X-Range-Dirty header arrive unchanged, and
        # the CAS's answer (the stand-in's 501) comes back unchanged.
        status, _, body = self.cas_call(ep.cas_port, "GET", "/v2/file-chunk-hashes/%s?x=1" % file_hash,
                                        headers={"X-Range-Dirty": "bytes=0-99,4096-8191"})
        self.assertEqual(status, 501)
        self.assertEqual(json.loads(body), {"error": "not served by the stand-in", "file": file_hash,
                                            "x_range_dirty": "bytes=0-99,4096-8191", "query": "?x=1"})
        # All three went upstream (the reconstruction by dedupd's way to it),
        # and dedupd's global-dedup counts are unchanged.
        # (The reconstruction is logged twice: the client's, answered by
        # dedupd, and dedupd's through its way out, logged with the
        # client's path and "way-out" for a port.)
        logged = ep.wait_logged(lambda l: l[1] in (str(ep.cas_port), "way-out") and l[3].strip('"').startswith(
            ("/v1/telemetry", "/v2/reconstructions/", "/v2/file-chunk-hashes/")), 4)
        upstream = [l for l in logged if "upstream=127.0.0.1:%d" % self.hub.cas_port in " ".join(l)]
        self.assertEqual(sorted(l[3].strip('"').split("/")[2] for l in upstream),
                         ["file-chunk-hashes", "reconstructions", "telemetry"], logged)
        after = self.dedupd.json("/v1/status")["xet_endpoint"]
        self.assertEqual((after["local"], after["forwarded"], after["learning"]["accepted"]),
                         (before["local"], before["forwarded"], before["learning"]["accepted"]))

    @harness.once("no request at all")
    def test_it_listens_on_loopback_only(self):
        ep = self.xet_endpoint(self.hub, self.dedupd.socket, self.tls["ca"])
        listening = {}  # port -> local addresses in LISTEN (state 0A)
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            with open(table) as f:
                for line in f.readlines()[1:]:
                    fields = line.split()
                    address, port = fields[1].split(":")
                    if fields[3] == "0A":
                        listening.setdefault(int(port, 16), set()).add(address)
        for port in (ep.hub_port, ep.cas_port):
            self.assertEqual(listening.get(port), {"0100007F"}, port)  # 127.0.0.1, nothing else

    @harness.once("no request at all")
    def test_the_search_for_tokens_finds_one(self):
        # files_containing is what proves the endpoint writes no token; it
        # must find one where there is one.
        harness.write(self.path("leak", "deep", "log"), b"header: Bearer " + TOKEN.encode() + b"\n")
        self.assertEqual(files_containing(self.path("leak"), [TOKEN.encode()]),
                         [self.path("leak", "deep", "log")])

    def held_upload(self, ep, first, second):
        """Two files in one upload through the endpoint, held once the first
        file's global-dedup query has passed dedupd: (the process, the
        hashes of the queries made before the hold ends, how to let it go
        on). hf_xet ingests one file at a time here, and a file waits for its
        queries' answers, which the CAS holds; @huggingface/hub's second
        query waits in the client (its `fetch` hook)."""
        if harness.is_js():
            user = self.user("host-a", ep)
            user.run("create-repo", REPO)
            p = user.held_upload(REPO, first, second)
            logged = ep.wait_logged(lambda l: harness.is_chunk_query(l[3]), 1)
            return p, {l[3].strip('"').rsplit("/", 1)[1].lower() for l in logged}, lambda: p.stdin.write("go\n")
        self.hub.hold_queries(1)
        session = harness.Client(self.cache_a, {"XET_CLIENT_TOKEN": ACCESS_TOKEN, "SSL_CERT_FILE": self.tls["ca"],
                                                "HF_XET_MAX_CONCURRENT_FILE_INGESTION": "1"})
        p = subprocess.Popen([harness.XET_PYTHON, os.path.join(harness.HERE, "xet_client.py"), "upload", ep.cas_url,
                              first, second], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=session.env)
        held = harness.wait_for("the first file's query held by the CAS", lambda: self.hub.state()["held"],
                                timeout=120)
        return p, set(held), self.hub.release

    def test_dedupd_killed_during_an_upload_and_one_that_never_answers_fail_open(self):
        ep = self.xet_endpoint(self.hub, self.dedupd.socket, self.tls["ca"], dedupd_timeout="1s")
        # One upload through the endpoint's CAS port of two files: the first
        # file's query reaches dedupd, which does not know it, then goes
        # upstream; dedupd is killed; the upload goes on with the second
        # file (its query meets a dead socket, a 502, and goes upstream),
        # and completes.
        first = harness.write(self.path("src", "first.bin"), harness.random_bytes(8 * MIB, 53))
        second = harness.write(self.path("src", "second.bin"), harness.random_bytes(8 * MIB, 54))
        p, before, go_on = self.held_upload(ep, first, second)
        os.killpg(self.dedupd.proc.p.pid, signal.SIGKILL)
        self.dedupd.proc.p.wait()
        go_on()
        out, err = p.communicate(timeout=600)
        self.assertEqual(p.returncode, 0, err[-3000:])
        self.assertEqual([f["size"] for f in json.loads(out.strip().splitlines()[-1])["files"]], [8 * MIB, 8 * MIB])

        def queries():
            return [" ".join(l) for l in ep.access_log() if harness.is_chunk_query(l[3])]
        # Every query the upstream counted is logged here too.
        harness.wait_for("the queries' log lines",
                         lambda: len(queries()) == len(self.hub.state()["chunk_queries"]), timeout=10)
        made_before = [l for l in queries() if any(h in l.lower() for h in before)]
        after = [l for l in queries() if l not in made_before]
        # "<dedupd's status> : <upstream's>" in the log.
        self.assertTrue(made_before and all("upstream_status=404 : 404" in l for l in made_before), made_before)
        self.assertTrue(after and all("upstream_status=502 : 404" in l for l in after), after)
        state = self.hub.state()
        self.assertEqual(len(state["chunk_queries"]), len(made_before) + len(after))
        self.assertEqual(state["xorb_chunk_bytes"], 16 * MIB)
        self.assertEqual(state["rejected"], [])

        # A "dedupd" that accepts and never answers: each query waits the
        # bound (1 s), then goes upstream.
        os.unlink(self.dedupd.socket)
        hang = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        hang.bind(self.dedupd.socket)
        hang.listen(64)
        ep.grant(self.dedupd.socket)
        held = []
        stop = threading.Event()

        def accept():
            hang.settimeout(0.2)
            while not stop.is_set():
                try:
                    held.append(hang.accept()[0])
                except OSError:
                    pass
        t = threading.Thread(target=accept, daemon=True)
        t.start()
        try:
            self.hub.reset()
            other = harness.write(self.path("src", "other.bin"), harness.random_bytes(2 * MIB, 54))
            b = self.user("host-b", ep)
            b.run("create-repo", REPO)
            t0 = time.monotonic()
            self.upload(b, "other.bin", other)
            took = time.monotonic() - t0
        finally:
            stop.set()
            t.join()
            for c in held:
                c.close()
            hang.close()
        state = self.hub.state()
        self.assertTrue(held, "the hanging socket was never asked")
        timed_out = ep.wait_logged(lambda l: harness.is_chunk_query(l[3]) and "upstream_status=504 : 404" in " ".join(l),
                                   len(state["chunk_queries"]))
        self.assertEqual(len(timed_out), len(state["chunk_queries"]))
        self.assertTrue(state["chunk_queries"], "the query did not go upstream after the timeout")
        self.assertEqual(state["xorb_chunk_bytes"], 2 * MIB)
        self.assertLess(took, 60)

    def test_a_bad_upstream_certificate_is_a_clean_failure(self):
        # nginx trusts another CA than the one that signed the stand-in.
        other = harness.make_test_ca(self.path("other-tls"))
        ep = self.xet_endpoint(self.hub, self.dedupd.socket, other["ca"])
        a = self.user("host-a", ep)
        r = a.run("create-repo", REPO, check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("502", r.stderr)
        self.assertEqual(self.hub.hub()["routes"], {}, "a request reached the upstream")
        with open(os.path.join(ep.logs, "error.log")) as f:
            self.assertIn("upstream SSL certificate verify error", f.read())


if __name__ == "__main__":
    harness.main()
