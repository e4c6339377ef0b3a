#!/usr/bin/env python3
"""The endpoint learns what its CAS accepted, and answers only with what the
asking CAS holds (issue 41; docs/XET-ENDPOINT.md, "Scopes" and "Learning").
The real clients (huggingface_hub and hf_xet) upload through the endpoint's
nginx to Hub and CAS stand-ins over HTTPS; dedupd watches nothing but an
empty drop directory, as with `./dev run`: all it knows it learned through
the endpoint."""

import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import harness

TOKEN = "hf_learningHubToken0123456789abcdef"
ACCESS_TOKEN = "xet_learningCasToken0123456789abcdef"
REPO = "dedupd/learning"
MIB = 1024 * 1024


class Learning(harness.EndpointTest):
    def setUp(self):
        super().setUp()
        self.settings = self.path("endpoint-settings", "xet-endpoint.conf")

    def start(self, extra_yaml=""):
        # The same state dir each time: a restart keeps what was learned.
        self.dedupd = harness.RealClientTest.dedupd(self, [self.path("incoming")],
                                                    harness.endpoint_yaml(self.settings) + extra_yaml)

    def endpoint(self, hub, name="endpoint", write_settings=True, dedupd=None, settings=None):
        """nginx in front of `dedupd` (this test's by default), its settings
        written where that dedupd reads them (`settings`, else self.settings)."""
        ep = self.xet_endpoint(hub, (dedupd or self.dedupd).socket, self.tls["ca"], name=name)
        if write_settings:
            harness.write(settings or self.settings, ("hub_upstream = %s\ncas_upstream = %s\nhub_port = %d\n"
                                                      "cas_port = %d\n"
                                                      % (hub.endpoint, hub.cas_url, ep.hub_port, ep.cas_port)).encode())
        return ep

    def learned_file(self, hub, ep, host, seed):
        """A user on `host` uploads an 8 MiB file of one xorb through `ep`,
        and this test's dedupd learns it: (bytes, path, the learned shard's
        hash, [the xorb])."""
        data = harness.random_bytes(8 * MIB, seed)
        src = harness.write(self.path("src", "lost.bin"), data)
        a = self.user(host, ep)
        a.run("create-repo", REPO)
        a.run("upload-file", REPO, "lost.bin", src)
        self.wait_learned(1)
        learned = self.shards_of(hub.cas_url)[0]["hash"]
        xorbs = list(hub.state()["xorbs"])
        self.assertEqual(len(xorbs), 1)
        return data, src, learned, xorbs

    def user(self, host, ep):
        return harness.HubClient(self.path(host), ep.endpoint, TOKEN, self.tls["ca"])

    def again(self, name, data):
        """A file of `data` for a host to upload again, and how many bytes
        that may send when dedupd answers it. huggingface_hub (with hf_xet)
        uploads a file the Hub already has: the bytes themselves, 0 to send.
        @huggingface/hub sends nothing at all for a file the Hub lists by its
        sha256 (its LFS batch says so, and the CAS hears nothing, dedupd
        neither): for it a 4 KiB tail makes the file new to the Hub, and what
        it may send is that tail and the last chunk it joins (up to 128 KiB)."""
        if not harness.is_js():
            return harness.write(self.path("src", name), data), 0
        tail = harness.random_bytes(4096, sum(name.encode()))
        return harness.write(self.path("src", name), data + tail), 128 * 1024 + len(tail)

    def learning(self):
        return self.dedupd.json("/v1/status")["xet_endpoint"]["learning"]

    def cas_log(self, hub):
        with open(os.path.join(hub.root, "requests.jsonl")) as f:
            return [json.loads(line) for line in f]

    def shards_of(self, cas):
        return [s for s in self.dedupd.shards() if cas in (s.get("cas") or "").split()]

    def wait_learned(self, n):
        harness.wait_for("%d shard(s) learned" % n, lambda: self.learning()["learned"] >= n, timeout=20)

    def shard_routes(self, ep):
        """The shard uploads nginx logged: (route as expected_shard_routes
        writes it, status, whether it went upstream)."""
        return [(harness.shard_route(l[3]), l[4], "upstream=-" not in l)
                for l in ep.access_log() if harness.is_shard_upload(l[3])]

    def test_an_upload_through_the_endpoint_answers_the_next_host_from_an_empty_cache(self):
        self.start()
        hub = self.hub_standin(self.tls, TOKEN, ACCESS_TOKEN)
        ep = self.endpoint(hub)
        a = self.user("host-a", ep)
        data = harness.random_bytes(6 * MIB, 61)
        src = harness.write(self.path("src", "model.bin"), data)
        # As a user: `hf upload` (which creates the repository).
        a.hf("upload", REPO, src, "model.bin")
        self.wait_learned(1)
        learned = self.shards_of(hub.cas_url)
        self.assertEqual(len(learned), 1, self.dedupd.shards())
        self.assertEqual(learned[0]["paths"], [])  # from the endpoint, not a file
        # On this release's shard route: /v2/shards (1.6.0 on) answered by
        # nginx with a 404, never upstream, and the fallback the CAS took.
        routes = harness.expected_shard_routes(harness.hf_xet_version())
        logged = self.shard_routes(ep)
        self.assertEqual([r for r, _, _ in logged], routes, ep.access_log())
        for route, status, upstream in logged:
            self.assertEqual((status, upstream), ("404", False) if route == "/v2/shards" else ("200", True), route)
        self.assertNotIn("/v2/shards", [e["path"] for e in self.cas_log(hub)])
        # `dedupctl scan` now finds all of it: known to dedupd, not only to A.
        if harness.chunks_like_xet_core():
            self.assertEqual(json.loads(self.dedupd.ctl("scan", "--json", src).stdout)["total"]["new_bytes"], 0)

        # Host B, empty cache: the same file sends nothing, and its queries
        # never reach the upstream.
        hub.reset()
        b = self.user("host-b", ep)
        if harness.is_js():  # (the Hub knows it by its sha256: no upload at all)
            t0 = time.time()
            b.run("upload-file", REPO, "copy.bin", src)
            self.assertEqual([e for e in self.cas_log(hub) if e["t"] >= t0 and not e["path"].startswith("/_standin/")],
                             [])
        copy, most = self.again("copy.bin", data)
        b.run("upload-file", REPO, "copy.bin", copy)
        state = hub.state()
        print("host B sent %d bytes of %d" % (state["xorb_chunk_bytes"], os.path.getsize(copy)), file=sys.stderr)
        self.assertLessEqual(state["xorb_chunk_bytes"], most)
        self.assertEqual(state["chunk_queries"], [], "queries dedupd could answer went upstream")
        self.assertEqual(state["rejected"], [])
        # An edited copy sends about the edit.
        edited = bytearray(data)
        edited[3 * MIB:3 * MIB + 4096] = harness.random_bytes(4096, 62)
        edited_src = harness.write(self.path("src", "edited.bin"), bytes(edited))
        predicted = json.loads(self.dedupd.ctl("scan", "--json", edited_src).stdout)["total"]["new_bytes"]
        hub.reset()
        self.user("host-c", ep).run("upload-file", REPO, "edited.bin", edited_src)
        state = hub.state()
        if harness.chunks_like_xet_core():
            self.assertEqual(state["xorb_chunk_bytes"], predicted)
            self.assertLess(predicted, 400 * 1024)
        self.assertLess(state["xorb_chunk_bytes"], 400 * 1024)
        self.assertEqual(state["rejected"], [])
        self.wait_learned(2)  # the edit's shard too (B's shard brought nothing new)
        doc = self.learning()
        self.assertTrue(doc["listening"])
        self.assertEqual(doc["refused"], 0)
        self.assertGreaterEqual(doc["accepted"], 3)
        self.assertIn("shards learned", self.dedupd.ctl("status").stdout)

    def test_a_file_known_only_on_another_cas_goes_up_whole_and_its_shard_is_accepted(self):
        self.start()
        hub1 = self.hub_standin(self.tls, TOKEN, ACCESS_TOKEN, name="hub1")
        hub2 = self.hub_standin(self.tls, TOKEN, ACCESS_TOKEN, name="hub2")
        ep1 = self.endpoint(hub1, name="endpoint1")
        ep2 = self.endpoint(hub2, name="endpoint2", write_settings=False)
        data = harness.random_bytes(3 * MIB, 71)
        src = harness.write(self.path("src", "shared.bin"), data)
        # Known on CAS 2 only: learned through its endpoint.
        u2 = self.user("host-2", ep2)
        u2.run("create-repo", REPO)
        u2.run("upload-file", REPO, "shared.bin", src)
        self.wait_learned(1)
        self.assertEqual(len(self.shards_of(hub2.cas_url)), 1)
        # Through CAS 1's endpoint: dedupd must not answer with CAS 2's shard.
        u1 = self.user("host-1", ep1)
        u1.run("create-repo", REPO)
        u1.run("upload-file", REPO, "shared.bin", src)
        state = hub1.state()
        self.assertEqual(state["xorb_chunk_bytes"], len(data), "CAS 1 was told it holds CAS 2's xorbs")
        self.assertEqual(state["rejected"], [])
        self.assertTrue(state["chunk_queries"], "the queries went upstream")
        # Learned for CAS 1 in turn (the same session shard: both CASes hold
        # it now): a new host of CAS 1 sends nothing.
        harness.wait_for("CAS 1 learned", lambda: len(self.shards_of(hub1.cas_url)) == 1, timeout=20)
        hub1.reset()
        self.user("host-1b", ep1).run("upload-file", REPO, "again.bin", src)
        self.assertEqual(hub1.state()["xorb_chunk_bytes"], 0)
        self.assertEqual(hub1.state()["rejected"], [])

    def lost_xorb(self, steward, own_file=True):
        """Host A uploads a file through the endpoint and dedupd learns it;
        the CAS then loses its xorb. Host G, whose cache is empty, uploads
        the same file: dedupd answers its query from the learned shard, G
        skips the xorb, and the CAS refuses G's shard (the one failed
        upload allowed). G tries again at once, a new process with the same
        cache, nobody else uploading in between: that must succeed. Its
        saved copy of the answer expired as it was made (reply_expiry 0),
        so the new process deletes it and asks again, and dedupd, which set
        the stale shard aside at the refusal, sends the query upstream.
        With `steward`, dedupd also manages G's cache (manage: xet-cache).
        Without `own_file` G uploads the lost file alone: its accepted retry
        is A's very shard, which the CAS's acceptance brings back."""
        cache_g = self.path("host-g", "xet")
        watch = [self.path("incoming")] + ([{"path": cache_g, "manage": "xet-cache"}] if steward else [])
        os.makedirs(cache_g, exist_ok=True)
        self.dedupd = harness.RealClientTest.dedupd(
            self, watch, harness.endpoint_yaml(self.settings) +
            ("xet_cache:\n  interval: 1s\n  replaced_grace: 0s\n" if steward else ""))
        hub = self.hub_standin(self.tls, TOKEN, ACCESS_TOKEN)
        ep = self.endpoint(hub)
        data, src, learned, xorbs = self.learned_file(hub, ep, "host-a", 81)
        hub.forget_xorbs(xorbs)

        # G's session: the same file and one of its own, so that the shard
        # its retry has accepted differs from A's (the one set aside).
        folder = self.path("host-g", "upload")
        os.makedirs(folder)
        shutil.copy(self.again("lost-g.bin", data)[0], folder)
        if own_file:
            harness.write(os.path.join(folder, "own.bin"), harness.random_bytes(MIB, 82))
        g = self.user("host-g", ep)
        failed = g.run("upload-folder", REPO, folder, check=False)
        failed_at = time.time()
        self.assertFalse(isinstance(failed, dict), "the upload against a lost xorb succeeded")
        harness.wait_for("the refusal", lambda: self.learning()["refused"] >= 1, timeout=20)
        self.assertEqual(self.learning()["set_aside"], 1)
        info = self.dedupd.json("/v1/shard/" + learned)
        self.assertIsNotNone(info["set_aside"])
        self.assertIn("refused shard", info["set_aside"]["reason"])
        self.assertIn("set aside", self.dedupd.ctl("shards").stdout)
        # Learned: A's shard, and no other, but for @huggingface/hub, which
        # sends a shard per file: G's own file's, when it went up before the
        # refusal ended the session (its order of files varies: seen both).
        learned_before = self.learning()["learned"]
        allowed = (1, 2) if own_file and harness.is_js() else (1,)
        self.assertIn(learned_before, allowed, "the refused shard was learned")
        # What G kept of the failed session: the answer, keyed, expired.
        # (@huggingface/hub keeps nothing: its next process asks anew.)
        saved = harness.Client(cache_g).shard_files() if harness.has_shard_cache() else []
        docs = {f: self.dedupd.ctl("inspect", "--json", f) for f in saved}
        docs = {f: json.loads(r.stdout) for f, r in docs.items() if r.returncode == 0}  # (the steward may delete)
        replies = [f for f, d in docs.items() if d["keyed"]]
        if not steward and harness.has_shard_cache():
            self.assertEqual(len(replies), 1, saved)
        for f in replies:
            self.assertTrue(docs[f]["footer"]["expired"],
                            "the endpoint's answer expires only %s" % docs[f]["footer"]["expires"])
        if steward:
            # The CAS-scope rule for the cache directory's name holds for
            # this release: dedupd knows which CAS G's cache is of.
            dirs = [os.path.basename(d) for d in harness.Client(cache_g).endpoint_dirs()]
            self.assertEqual(len(dirs), 1, dirs)
            self.assertTrue(dirs[0].startswith(harness.cache_dir_prefix(ep.cas_url)), dirs)

        # G again, at once. (The expired answer may stay on disk: the
        # client deletes one only a week past its expiry, and skips it.)
        # Expiries are whole seconds and the answer expires in the second
        # it was made: a process started within that second still loads it
        # (hf_xet 1.4 did, once in CI), so the retry waits for the next.
        time.sleep(max(0.0, int(failed_at) + 1 - time.time()))
        hub.reset()
        again = g.run("upload-folder", REPO, folder, check=False)
        self.assertTrue(isinstance(again, dict), "G's retry failed: %s" % getattr(again, "stderr", "")[-2000:])
        state = hub.state()
        self.assertGreaterEqual(state["xorb_chunk_bytes"], len(data), "G's retry did not upload the lost bytes")
        self.assertEqual(state["rejected"], [])
        self.assertTrue(state["chunk_queries"], "the retry reused the stale answer instead of asking")
        self.assertEqual(self.learning()["refused"], 1, "more than one failed upload")

        # Learned again: G's accepted shard holds the bytes the CAS has now,
        # and answers the next host, which sends nothing.
        if own_file:
            harness.wait_for("G's shard learned", lambda: self.learning()["learned"] > learned_before, timeout=20)
        else:
            harness.wait_for("A's shard answering again", lambda: self.learning()["restored"] >= 1, timeout=20)
            self.assertIsNone(self.dedupd.json("/v1/shard/" + learned)["set_aside"])
        hub.reset()
        h_file, most = self.again("lost-h.bin", data)
        self.user("host-h", ep).run("upload-file", REPO, "lost-h.bin", h_file)
        state = hub.state()
        self.assertLessEqual(state["xorb_chunk_bytes"], most)
        self.assertEqual(state["chunk_queries"], [], "a query dedupd could answer went upstream")
        self.assertEqual(state["rejected"], [])
        self.assertEqual(self.learning()["refused"], 1)
        if steward:
            # (the answer G saved, recorded expired, and G's session shard)
            files = [s for s in self.dedupd.shards() if any(p.startswith(cache_g) for p in s.get("paths", []))]
            self.assertTrue(files, "dedupd indexed nothing of G's cache")
            self.assertEqual({s.get("cas") for s in files}, {hub.cas_url}, files)
        return learned

    def test_a_lost_xorb_costs_one_failed_upload_and_the_retry_at_once_succeeds(self):
        learned = self.lost_xorb(steward=False)
        # An admin may bring the set-aside shard back.
        out = self.dedupd.ctl("restore", learned).stdout
        self.assertIn("answers global-dedup queries again", out)
        self.assertIsNone(self.dedupd.json("/v1/shard/" + learned)["set_aside"])

    @harness.cannot_take("js")
    def test_a_lost_xorb_with_the_cache_under_the_steward_costs_one_failed_upload_too(self):
        self.lost_xorb(steward=True)

    @harness.cannot_take("js")
    def test_a_set_aside_shard_the_cas_accepts_again_answers_again(self):
        # Never a loop, and never out for good: no admin step.
        self.lost_xorb(steward=False, own_file=False)

    def test_a_refusal_on_one_host_of_a_fleet_costs_no_failed_upload_on_the_others(self):
        """Three hosts on one CAS and one fleet database, each with its own
        dedupd and endpoint nginx. Host 1 learns a file and the fleet spreads
        it: hosts 2 and 3 answer with it too. The CAS loses the file's xorb,
        and a client on host 1 has its upload refused (the one failed upload
        allowed). That refusal sets the shard aside in the fleet for this
        CAS, so the first uploads of the file on hosts 2 and 3 succeed."""
        db = self.fleet_database()
        hub = self.hub_standin(self.tls, TOKEN, ACCESS_TOKEN)
        hosts = []
        for n in (1, 2, 3):
            settings = self.path("endpoint-settings-%d" % n, "xet-endpoint.conf")
            d = harness.RealClientTest.dedupd(self, [self.path("incoming-%d" % n)],
                                              harness.endpoint_yaml(settings) +
                                              db.yaml("host-%d" % n, lookup_timeout="2s"),
                                              name="dedupd-%d" % n)
            hosts.append((d, self.endpoint(hub, name="endpoint-%d" % n, dedupd=d, settings=settings)))
        (d1, ep1), (d2, ep2), (d3, ep3) = hosts
        self.dedupd = d1

        data, src, learned, xorbs = self.learned_file(hub, ep1, "host-1a", 91)
        # A chunk every client asks about (a xorb's first), as the endpoint
        # asks: for this CAS.
        chunk = d1.json("/v1/xorb/" + xorbs[0])["chunks"][0]["hash"]
        gd = ("/v1/chunks/default/" + chunk, {"X-Dedupd-Cas": hub.cas_url})

        def answers(d):
            """Whether d answers with a shard: from its index, or from the
            fleet, which must have answered."""
            status, fleet = d.get_status_and_header(*gd, "X-Dedupd-Fleet")
            if fleet not in ("ok", None):
                raise AssertionError("%s: the fleet did not answer (%s)" % (d.root, fleet))
            return status == 200

        # Hosts 2 and 3 answer from the fleet's copy: without the fleet-wide
        # set-aside each would cost its first client a failed upload.
        harness.wait_for("hosts 2 and 3 to answer with host 1's shard", lambda: answers(d2) and answers(d3),
                         timeout=30)
        # Through the endpoint too: a client on host 2 sends nothing, and
        # no query reaches the CAS (through 0.2.0 the fleet's answers to the
        # endpoint, made expired as all of its answers are, were dropped).
        hub.reset()
        known, most = self.again("known-2.bin", data)
        self.user("host-2p", ep2).run("upload-file", REPO, "known-2.bin", known)
        state = hub.state()
        self.assertEqual((state["chunk_queries"], state["rejected"]), ([], []))
        self.assertLessEqual(state["xorb_chunk_bytes"], most)

        hub.forget_xorbs(xorbs)
        folder = self.path("host-1g", "upload")
        os.makedirs(folder)
        shutil.copy(self.again("lost-1g.bin", data)[0], folder)
        harness.write(os.path.join(folder, "own.bin"), harness.random_bytes(MIB, 92))
        failed = self.user("host-1g", ep1).run("upload-folder", REPO, folder, check=False)
        self.assertFalse(isinstance(failed, dict), "the upload against a lost xorb succeeded")
        harness.wait_for("the refusal", lambda: self.learning()["refused"] >= 1, timeout=20)
        self.assertEqual(self.learning()["set_aside"], 1)
        # On the other hosts within a read of the fleet's marks (every 2 s).
        harness.wait_for("hosts 2 and 3 to set the shard aside", lambda: not answers(d2) and not answers(d3),
                         timeout=20)
        for d in (d2, d3):
            fleet = d.json("/v1/fleet/status")
            self.assertEqual(fleet["set_aside_marks"], 1, fleet)
            self.assertEqual(fleet["this_host"]["set_aside"]["marks"], 1, fleet)

        # The file on hosts 2 and 3, each a new client with an empty cache,
        # at once: both succeed the first time, each sending the lost bytes
        # itself. The CAS holds the answers to the first two queries that
        # reach it: both hosts' (their dedupds, the shard set aside, did not
        # answer), so neither host's upload could lean on the other's.
        hub.reset()
        hub.hold_queries(2)
        uploads = {}

        def upload(n, ep):
            uploads[n] = self.user("host-%da" % n, ep).run("upload-file", REPO, "lost-%d.bin" % n,
                                                          self.again("lost-%d.bin" % n, data)[0], check=False)
        threads = [threading.Thread(target=upload, args=(n, ep)) for n, ep in ((2, ep2), (3, ep3))]
        for t in threads:
            t.start()
        try:
            harness.wait_for("both hosts' queries at the CAS", lambda: len(hub.state()["held"]) == 2, timeout=120)
        finally:
            hub.release()
            for t in threads:
                t.join()
        for n in (2, 3):
            self.assertTrue(isinstance(uploads[n], dict),
                            "host %d's upload failed: %s" % (n, getattr(uploads[n], "stderr", "")[-2000:]))
        state = hub.state()
        self.assertEqual(state["rejected"], [])
        self.assertGreaterEqual(state["xorb_chunk_bytes"], len(data), "the lost bytes did not go up again")
        for n, ep in ((2, ep2), (3, ep3)):
            sent = sum(int(l[5]) for l in ep.access_log() if harness.is_xorb_upload(l[3]) and l[4] == "200")
            self.assertGreaterEqual(sent, len(data), "host %d did not send the lost file's bytes itself" % n)
        for d in (d1, d2, d3):
            self.assertEqual(d.json("/v1/status")["xet_endpoint"]["learning"]["refused"], 1 if d is d1 else 0)

        # Never a loop: host 2's client uploaded the same file alone, so the
        # shard the CAS accepted from it is host 1's very shard (a session
        # shard of one file, without a footer, is its bytes). The CAS holds
        # its xorb again: the fleet's mark goes, host 1's copy answers again,
        # and the next client on any host sends nothing.
        # (@huggingface/hub writes its shards' creation time, and uploads no
        # file the Hub has: no shard of its is ever host 1's again.)
        if not harness.is_js():
            harness.wait_for("host 2 to learn the shard again", lambda: learned in {s["hash"] for s in d2.shards()},
                             timeout=20)
            harness.wait_for("the fleet's mark to go", lambda: d1.json("/v1/fleet/status")["set_aside_marks"] == 0,
                             timeout=20)
            harness.wait_for("host 1's copy to answer again",
                             lambda: d1.json("/v1/shard/" + learned)["set_aside"] is None, timeout=20)
        for n, (d, ep) in enumerate(hosts, 1):
            harness.wait_for("host %d to answer" % n, lambda: answers(d), timeout=20)
            hub.reset()
            again, most = self.again("lost-%db.bin" % n, data)
            self.user("host-%db" % n, ep).run("upload-file", REPO, "lost-%db.bin" % n, again)
            state = hub.state()
            self.assertLessEqual(state["xorb_chunk_bytes"], most, "host %d" % n)
            self.assertEqual(state["rejected"], [], "host %d" % n)
        self.assertEqual(self.learning()["refused"], 1)

    def test_dedupd_stopped_during_an_upload_costs_only_that_learning(self):
        self.start()
        hub = self.hub_standin(self.tls, TOKEN, ACCESS_TOKEN)
        ep = self.endpoint(hub)
        a = self.user("host-a", ep)
        a.run("create-repo", REPO)
        first = harness.write(self.path("src", "first.bin"), harness.random_bytes(2 * MIB, 91))
        a.run("upload-file", REPO, "first.bin", first)
        self.wait_learned(1)
        self.dedupd.stop()
        # dedupd down: the mirror fails, the upload does not.
        second = harness.write(self.path("src", "second.bin"), harness.random_bytes(2 * MIB, 92))
        self.user("host-b", ep).run("upload-file", REPO, "second.bin", second)
        self.assertEqual(hub.state()["rejected"], [])
        self.start()
        self.assertEqual(len(self.shards_of(hub.cas_url)), 1, "what was learned before is kept")
        self.assertEqual(self.learning()["learned"], 0)
        self.assertGreater(json.loads(self.dedupd.ctl("scan", "--json", second).stdout)["total"]["new_bytes"], 0)
        known_first = json.loads(self.dedupd.ctl("scan", "--json", first).stdout)["total"]["known_bytes"]
        if harness.chunks_like_xet_core():
            self.assertEqual(known_first, 2 * MIB)
        else:  # (most of its chunks: harness.chunks_like_xet_core)
            self.assertGreater(known_first, MIB)

    def cas_request(self, ep, method, path, body=None):
        """(status, body) of a request on the endpoint's CAS port, with the
        CAS token, as a client of any release sends it."""
        conn = http.client.HTTPConnection("127.0.0.1", ep.cas_port, timeout=30)
        try:
            conn.request(method, path, body=body, headers={"Authorization": "Bearer " + ACCESS_TOKEN})
            r = conn.getresponse()
            return r.status, r.read()
        finally:
            conn.close()

    def report(self, request_id, body, cas, status):
        """What nginx sends dedupd for one shard upload: the mirrored body
        on the learning route, then the CAS's status on the learning socket."""
        conn = self.dedupd.connect()
        try:
            conn.request("POST", "/v1/xet-endpoint/shards/" + request_id, body=body, headers={"X-Dedupd-Cas": cas})
            r = conn.getresponse()
            r.read()
            self.assertEqual(r.status // 100, 2, "the learning route refused the body (%d)" % r.status)
        finally:
            conn.close()
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            s.sendto(("<190>Nov 27 10:00:00 dedupd_learn: %s %d" % (request_id, status)).encode(),
                     os.path.join(os.path.dirname(self.dedupd.socket), "dedupd-learn.sock"))
        finally:
            s.close()

    @harness.once("plain requests in each release's form")
    def test_every_releases_routes_reach_dedupd_and_v2_shards_is_answered_by_nginx(self):
        self.start()
        hub = self.hub_standin(self.tls, TOKEN, ACCESS_TOKEN)
        ep = self.endpoint(hub)
        a = self.user("host-a", ep)
        a.run("create-repo", REPO)
        src = harness.write(self.path("src", "routes.bin"), harness.random_bytes(2 * MIB, 101))
        a.run("upload-file", REPO, "routes.bin", src)
        self.wait_learned(1)
        body_path = os.path.join(hub.root, "shards", "0001.mdb")  # A's upload, as the CAS took it
        with open(body_path, "rb") as f:
            body = f.read()
        doc = json.loads(self.dedupd.ctl("inspect", "--json", body_path).stdout)
        chunk = doc["xorbs"][0]["chunk_hashes"][0]
        # Global dedup, on every release's route: dedupd answers (its 200).
        before = self.dedupd.json("/v1/status")["xet_endpoint"]["local"]
        hub.reset()
        for route in ("/chunk/default/", "/chunks/default/", "/v1/chunks/default/"):
            status, answer = self.cas_request(ep, "GET", route + chunk)
            self.assertEqual(status, 200, route)
            self.assertTrue(answer.startswith(b"HFRepoMetaData"), route)
        self.assertEqual(hub.state()["chunk_queries"], [])
        self.assertEqual(self.dedupd.json("/v1/status")["xet_endpoint"]["local"], before + 3)
        # A chunk dedupd does not know goes upstream as the client asked it.
        unknown = "0123456789abcdef" * 4
        for route in ("/chunk/default/", "/chunks/default/"):
            self.assertEqual(self.cas_request(ep, "GET", route + unknown)[0], 404)
        self.assertEqual([e["path"] for e in self.cas_log(hub) if unknown in e["path"]],
                         ["/chunk/default/" + unknown, "/chunks/default/" + unknown])
        # The shard routes before /v1/shards are mirrored too: dedupd hears
        # of both uploads (a shard it knows: already known).
        known = self.learning()["already_known"]
        for route in ("/shard/default/" + doc["shard_hash"], "/shards"):
            status, answer = self.cas_request(ep, "POST", route, body)
            self.assertEqual((status, json.loads(answer)), (200, {"result": 1}), route)
        harness.wait_for("both uploads heard", lambda: self.learning()["already_known"] >= known + 2, timeout=20)
        # /v2/shards: nginx's own 404, which the client takes for "use v1";
        # the CAS never sees it.
        status, answer = self.cas_request(ep, "POST", "/v2/shards", body)
        self.assertEqual(status, 404, answer)
        self.assertNotIn("/v2/shards", [e["path"] for e in self.cas_log(hub)])
        # Why: the CAS answers a v2 refusal with a 200 (its frames say it),
        # which nginx's status could not tell from an acceptance.
        hub.forget_xorbs([x["hash"] for x in doc["xorbs"]])
        import ssl
        conn = http.client.HTTPSConnection("127.0.0.1", hub.cas_port, timeout=30,
                                           context=ssl.create_default_context(cafile=self.tls["ca"]))
        conn.request("POST", "/v2/shards", body=body, headers={"Authorization": "Bearer " + ACCESS_TOKEN})
        r = conn.getresponse()
        frames = [json.loads(line) for line in r.read().splitlines() if line.strip()]
        conn.close()
        self.assertEqual(r.status, 200)
        self.assertEqual(frames[-1]["type"], "error", frames)

    @harness.once("the client only uploads the shards; the reports are written by hand")
    def test_refusals_that_relied_on_no_answer_name_another_cas_or_come_in_a_burst_set_nothing_wrong_aside(self):
        self.start()
        hub = self.hub_standin(self.tls, TOKEN, ACCESS_TOKEN)
        ep = self.endpoint(hub)
        src = harness.write(self.path("src", "refusals.bin"), harness.random_bytes(3 * MIB, 111))
        a = self.user("host-a", ep)
        a.run("create-repo", REPO)
        a.run("upload-file", REPO, "a.bin", src)
        self.wait_learned(1)
        learned = self.shards_of(hub.cas_url)[0]["hash"]
        # B, empty cache: answered from A's shard, its own names A's xorb
        # without carrying it (accepted: the CAS has the xorb).
        self.user("host-b", ep).run("upload-file", REPO, "b.bin", src)
        self.wait_learned(2)
        bodies = []
        for n in ("0001", "0002"):
            with open(os.path.join(hub.root, "shards", n + ".mdb"), "rb") as f:
                bodies.append(f.read())
        carries, relies = bodies  # A's carries its xorb; B's relied on dedupd's answer
        rid = iter("%032x" % (0xfeed0000 + i) for i in range(1000))
        base = self.learning()

        # A refused shard that relied on no answer (it carries what it names):
        # there is nothing to set aside.
        self.report(next(rid), carries, hub.cas_url, 400)
        # A refusal by another CAS of a shard that relied on this CAS's
        # answer: this CAS's shard stays.
        self.report(next(rid), relies, "https://other-cas.example", 400)
        # A burst of both, and statuses for requests never mirrored.
        for i in range(25):
            self.report(next(rid), carries, hub.cas_url, 400)
            self.report(next(rid), relies, "https://other-cas.example:8443", 422)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        for i in range(10):
            s.sendto(("<190>Nov 27 10:00:00 dedupd_learn: %s 400" % ("%032x" % (0xdead0000 + i))).encode(),
                     os.path.join(os.path.dirname(self.dedupd.socket), "dedupd-learn.sock"))
        s.close()
        harness.wait_for("the 52 refusals and 10 strays counted", lambda: (
            self.learning()["refused"] >= base["refused"] + 52 and
            self.learning()["unmatched"] >= base["unmatched"] + 10), timeout=30)
        doc = self.learning()
        self.assertEqual(doc["refused"], base["refused"] + 52)
        self.assertEqual(doc["set_aside"], 0, "a refusal set something aside")
        self.assertEqual(doc["learned"], base["learned"])
        self.assertTrue(self.dedupd.healthy())
        self.assertNotIn("set aside", self.dedupd.ctl("shards").stdout)
        self.assertIsNone(self.dedupd.json("/v1/shard/" + learned)["set_aside"])
        # The uploads still go as before: a new host is answered, sends nothing.
        hub.reset()
        self.user("host-c", ep).run("upload-file", REPO, "c.bin", src)
        self.assertEqual(hub.state()["xorb_chunk_bytes"], 0)

        # And the one refusal that is right sets aside exactly the stale shard.
        self.report(next(rid), relies, hub.cas_url, 400)
        harness.wait_for("the stale shard set aside", lambda: self.learning()["set_aside"] == 1, timeout=20)
        aside = [s["hash"] for s in self.dedupd.shards() if s.get("set_aside")]
        self.assertEqual(aside, [learned], self.dedupd.shards())
        self.assertIn("set aside", self.dedupd.ctl("shards").stdout)

    @harness.once("plain requests to dedupd")
    def test_bad_input_on_the_learning_path_teaches_nothing_and_dedupd_stays_up(self):
        self.start("limits:\n  max_body_bytes: 1M\n")
        hub = self.hub_standin(self.tls, TOKEN, ACCESS_TOKEN)
        self.endpoint(hub)
        rid = "0123456789abcdef0123456789abcdef"
        learn = "/v1/xet-endpoint/shards/"

        def post(path, body, headers=None):
            conn = self.dedupd.connect()
            try:
                conn.request("POST", path, body=body, headers=headers or {})
                r = conn.getresponse()
                return r.status, r.read()
            finally:
                conn.close()

        def announce(path, length, headers):
            # Only the headers: dedupd refuses the size before the body.
            conn = self.dedupd.connect()
            try:
                conn.putrequest("POST", path)
                for k, v in dict(headers, **{"Content-Length": str(length)}).items():
                    conn.putheader(k, v)
                conn.endheaders()
                return conn.getresponse().status
            finally:
                conn.close()

        cas = {"X-Dedupd-Cas": hub.cas_url}
        self.assertEqual(post(learn + rid, b"not a shard", cas)[0], 422)
        self.assertEqual(announce(learn + rid, 2 * MIB, cas), 413)
        self.assertEqual(post(learn + "nope", b"x", cas)[0], 400)
        self.assertEqual(post(learn + rid, b"x", {"X-Dedupd-Cas": "ftp://x"})[0], 400)
        self.assertEqual(post(learn + rid, b"x")[0], 400)  # no CAS named
        # Confirmations for nothing pending, twice, and from a stranger.
        learn_sock = os.path.join(os.path.dirname(self.dedupd.socket), "dedupd-learn.sock")
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        for _ in range(2):
            s.sendto(("<190>Nov 27 10:00:00 dedupd_learn: %s 200" % rid).encode(), learn_sock)
        s.sendto(b"garbage", learn_sock)
        s.close()
        if os.geteuid() == 0:
            # Another local user, not the endpoint: refused on both paths.
            stranger = ["setpriv", "--reuid=4242", "--regid=4242", "--clear-groups"]
            os.chmod(self.dedupd.socket, 0o666)
            r = subprocess.run(stranger + ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--unix-socket",
                                           self.dedupd.socket, "-H", "X-Dedupd-Cas: " + hub.cas_url,
                                           "--data-binary", "x", "http://localhost" + learn + rid],
                               capture_output=True, text=True)
            self.assertEqual(r.stdout, "403", r.stderr)
            subprocess.run(stranger + ["python3", "-c", "import socket,sys; socket.socket(socket.AF_UNIX, "
                                       "socket.SOCK_DGRAM).sendto(sys.argv[1].encode(), sys.argv[2])",
                                       "%s 200" % rid, learn_sock], check=True)
        # A chunk query naming no CAS URL, or one dedupd has no shard of.
        conn = self.dedupd.connect()
        conn.request("GET", "/v1/chunks/default/" + "ab" * 32, headers={"X-Dedupd-Cas": "not a url"})
        self.assertEqual(conn.getresponse().status, 400)
        conn = self.dedupd.connect()
        conn.request("GET", "/v1/chunks/default/" + "ab" * 32, headers={"X-Dedupd-Cas": "https://unknown.example"})
        self.assertEqual(conn.getresponse().status, 404)
        harness.wait_for("the reports counted", lambda: self.learning()["unmatched"] >= 1, timeout=10)
        doc = self.learning()
        self.assertEqual(doc["learned"], 0)
        if os.geteuid() == 0:
            harness.wait_for("the stranger's report", lambda: self.learning()["refused_senders"] >= 1, timeout=10)
        self.assertEqual(self.dedupd.shards(), [])
        self.assertTrue(self.dedupd.healthy())


if __name__ == "__main__":
    harness.main()
