#!/usr/bin/env python3
"""Global dedup through dedupd: the real client on another host (another
cache) asks the CAS about its first chunk, the CAS asks dedupd, and the
client then uploads only the bytes no host had. It saves dedupd's reply in
its cache byte for byte, and dedupd indexes that reply and expires it on
time."""

import hashlib
import json
import os
import time

import harness

REPLY_EXPIRY_S = 8


def sha256_of(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class GlobalDedupThroughDedupd(harness.RealClientTest):
    def test_another_host_uploads_only_new_bytes_and_the_saved_reply_expires_on_time(self):
        hosts = harness.TwoHosts(self, REPLY_EXPIRY_S)
        predicted, state, info = hosts.upload_on_b()
        t_reply = time.time()

        # The client asked for its file's first chunk and dedupd answered it.
        answered = [q for q in state["chunk_queries"] if q["status"] == 200]
        self.assertTrue(answered, "no chunk query answered: %s" % state["chunk_queries"])
        # Only the new megabyte (and the chunk it changed at the seam) went up,
        # exactly what scan said before the upload (a bound for a client that
        # chunks otherwise: harness.chunks_like_xet_core).
        if harness.chunks_like_xet_core():
            self.assertEqual(state["xorb_chunk_bytes"], predicted)
        self.assertLess(state["xorb_chunk_bytes"], 1024 * 1024 + 140 * 1024)
        self.assertEqual(state["rejected"], [])

        # The reply is in B's cache byte for byte, under its hash.
        replies = hosts.replies_in_b()
        self.assertEqual(len(replies), 1, hosts.b.shard_files())
        self.assertEqual(sha256_of(replies[0]), sha256_of(answered[0]["saved"]))

        # dedupd indexes it as keyed, with the expiry it wrote, then expires
        # it on time and deletes the file (delete_after: 0s).
        indexed = self.wait_indexed(hosts.dedupd, hosts.b)
        summary = indexed[os.path.realpath(replies[0])]
        self.assertTrue(summary["keyed"])
        self.assertEqual(summary["state"], "live")
        self.assertLessEqual(abs(summary["expiry"] - (t_reply + REPLY_EXPIRY_S)), 3)
        harness.wait_for("the reply to expire and its file to go",
                         lambda: not os.path.exists(replies[0]), timeout=REPLY_EXPIRY_S + 20)
        self.assertGreaterEqual(time.time(), summary["expiry"] - 0.5, "deleted before it expired")
        status, body = hosts.dedupd.get("/v1/shard/" + summary["hash"])
        self.assertEqual(status, 200)
        self.assertIn(json.loads(body)["state"], ("expired", "removed"))

        # The file B uploaded is the same file as far as dedupd can tell.
        status, body = hosts.dedupd.get("/v1/file/" + info["hash"])
        self.assertEqual(status, 200, body)

    def test_a_miss_is_a_404_and_the_client_uploads_everything(self):
        cache = self.path("xet")
        dedupd = self.dedupd([cache])
        cas = self.standin(dedupd)
        f = harness.write(self.path("new.bin"), harness.random_bytes(2 * 1024 * 1024, 31))
        harness.Client(cache).upload(cas.endpoint, f)
        state = cas.state()
        self.assertTrue(state["chunk_queries"])
        self.assertEqual({q["status"] for q in state["chunk_queries"]}, {404})
        self.assertEqual(state["xorb_chunk_bytes"], 2 * 1024 * 1024)


if __name__ == "__main__":
    harness.main()
