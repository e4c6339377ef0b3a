#!/usr/bin/env python3
"""The endpoint learns what its CAS accepted, and answers only with what the
asking CAS holds (issue 41; docs/XET-ENDPOINT.md, "Scopes" and "Learning").
The real clients (huggingface_hub and hf_xet) upload through the endpoint's
nginx to Hub and CAS stand-ins over HTTPS; dedupd watches nothing but an
empty drop directory, as with `./dev run`: all it knows it learned through
the endpoint."""

import json
import os
import socket
import subprocess

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

    def endpoint(self, hub, name="endpoint", write_settings=True):
        ep = self.xet_endpoint(hub, self.dedupd.socket, self.tls["ca"], name=name)
        if write_settings:
            harness.write(self.settings, ("hub_upstream = %s\ncas_upstream = %s\nhub_port = %d\ncas_port = %d\n"
                                          % (hub.endpoint, hub.cas_url, ep.hub_port, ep.cas_port)).encode())
        return ep

    def user(self, host, ep):
        return harness.HubClient(self.path(host), ep.endpoint, TOKEN, self.tls["ca"])

    def learning(self):
        return self.dedupd.json("/v1/status")["xet_endpoint"]["learning"]

    def shards_of(self, cas):
        return [s for s in self.dedupd.shards() if cas in (s.get("cas") or "").split()]

    def wait_learned(self, n):
        harness.wait_for("%d shard(s) learned" % n, lambda: self.learning()["learned"] >= n, timeout=20)

    def test_an_upload_through_the_endpoint_answers_the_next_host_from_an_empty_cache(self):
        self.start()
        hub = self.hub_standin(self.tls, TOKEN, ACCESS_TOKEN)
        ep = self.endpoint(hub)
        a = self.user("host-a", ep)
        a.run("create-repo", REPO)
        data = harness.random_bytes(6 * MIB, 61)
        src = harness.write(self.path("src", "model.bin"), data)
        a.run("upload-file", REPO, "model.bin", src)
        self.wait_learned(1)
        learned = self.shards_of(hub.cas_url)
        self.assertEqual(len(learned), 1, self.dedupd.shards())
        self.assertEqual(learned[0]["paths"], [])  # from the endpoint, not a file
        # `dedupctl scan` now finds all of it: known to dedupd, not only to A.
        self.assertEqual(json.loads(self.dedupd.ctl("scan", "--json", src).stdout)["total"]["new_bytes"], 0)

        # Host B, empty cache: the same file sends nothing, and its queries
        # never reach the upstream.
        hub.reset()
        b = self.user("host-b", ep)
        b.run("upload-file", REPO, "copy.bin", src)
        state = hub.state()
        self.assertEqual(state["xorb_chunk_bytes"], 0)
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
        self.assertEqual(state["xorb_chunk_bytes"], predicted)
        self.assertLess(predicted, 400 * 1024)
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

    def test_a_xorb_the_cas_lost_costs_one_failed_upload_then_heals(self):
        self.start()
        hub = self.hub_standin(self.tls, TOKEN, ACCESS_TOKEN)
        ep = self.endpoint(hub)
        data = harness.random_bytes(3 * MIB, 81)
        src = harness.write(self.path("src", "lost.bin"), data)
        a = self.user("host-a", ep)
        a.run("create-repo", REPO)
        a.run("upload-file", REPO, "lost.bin", src)
        self.wait_learned(1)
        learned = self.shards_of(hub.cas_url)[0]["hash"]
        hub.forget_xorbs(list(hub.state()["xorbs"]))
        shards_before = len(self.dedupd.shards())
        # Host B is answered from the learned shard, skips the xorbs, and the
        # CAS refuses its shard: that upload fails.
        b = self.user("host-b", ep)
        failed = b.run("upload-file", REPO, "lost.bin", src, check=False)
        self.assertFalse(isinstance(failed, dict), "the upload against a lost xorb succeeded")
        harness.wait_for("the refusal", lambda: self.learning()["refused"] >= 1, timeout=20)
        self.assertEqual(self.learning()["set_aside"], 1)
        info = self.dedupd.json("/v1/shard/" + learned)
        self.assertIsNotNone(info["set_aside"])
        self.assertIn("refused shard", info["set_aside"]["reason"])
        self.assertIn("set aside", self.dedupd.ctl("shards").stdout)
        # The refused shard was not learned.
        self.assertEqual(len(self.dedupd.shards()), shards_before)
        # The next attempt, from a new host and from B again, uploads the
        # bytes and succeeds.
        hub.reset()
        self.user("host-c", ep).run("upload-file", REPO, "lost.bin", src)
        self.assertEqual(hub.state()["xorb_chunk_bytes"], len(data))
        self.assertEqual(hub.state()["rejected"], [])
        again = b.run("upload-file", REPO, "lost-again.bin", src, check=False)
        self.assertTrue(isinstance(again, dict), "B's retry failed too: %s" % getattr(again, "stderr", "")[-2000:])
        self.assertEqual(self.learning()["refused"], 1, "more than one failed upload")
        # An admin may bring the set-aside shard back.
        out = self.dedupd.ctl("restore", learned).stdout
        self.assertIn("answers global-dedup queries again", out)
        self.assertIsNone(self.dedupd.json("/v1/shard/" + learned)["set_aside"])

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
        self.assertEqual(json.loads(self.dedupd.ctl("scan", "--json", first).stdout)["total"]["new_bytes"], 0)

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
