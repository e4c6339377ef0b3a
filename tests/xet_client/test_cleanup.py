#!/usr/bin/env python3
"""Cleanup is safe for the client: after dedupd expired and deleted shards in
the real client's cache, the client's next sessions, upload and download,
still work, and no file dedupd did not index was touched."""

import filecmp
import os

import harness

REPLY_EXPIRY_S = 5


class CleanupIsSafeForTheClient(harness.RealClientTest):
    def test_the_client_keeps_working_after_dedupd_deletes_expired_shards(self):
        hosts = harness.TwoHosts(self, REPLY_EXPIRY_S)
        # Files in B's cache that are not shards dedupd indexed: its own
        # logs, a note, a corrupt shard, a half-written one. They must come
        # out of all this byte for byte, with the same mtime.
        _, _, info = hosts.upload_on_b()
        endpoint_dir = hosts.b.endpoint_dirs()[0]
        shard_cache = os.path.join(endpoint_dir, "shard-cache")
        harness.write(os.path.join(shard_cache, "NOTES.txt"), b"kept by a person\n")
        harness.write(os.path.join(shard_cache, "f" * 64 + ".mdb"), b"not a shard at all")
        harness.write(os.path.join(shard_cache, ".0f0e-uuid.mdb_temp"), b"half written")
        replies = hosts.replies_in_b()
        self.assertEqual(len(replies), 1)
        indexed = self.wait_indexed(hosts.dedupd, hosts.b, rejected_name="f" * 64 + ".mdb")
        before = {p: v for p, v in harness.digest_tree(hosts.cache_b).items()
                  if os.path.realpath(os.path.join(hosts.cache_b, p)) not in indexed}
        self.assertIn(os.path.relpath(os.path.join(shard_cache, "NOTES.txt"), hosts.cache_b), before)

        harness.wait_for("dedupd to delete the expired reply", lambda: not os.path.exists(replies[0]),
                         timeout=REPLY_EXPIRY_S + 20)

        # The next sessions on B: the same file again (all known from its
        # own exported shard: nothing sent), a new file, and downloads of
        # both hosts' files, rebuilt from what the CAS holds.
        hosts.cas.reset()
        again = hosts.b.upload(hosts.cas.endpoint, hosts.new)["files"][0]
        self.assertEqual(again["hash"], info["hash"])
        self.assertEqual(hosts.cas.state()["xorb_chunk_bytes"], 0)
        other = harness.write(self.path("host-b", "other.bin"), harness.random_bytes(300_000, 41))
        hosts.b.upload(hosts.cas.endpoint, other)
        for path, up in ((hosts.new, info), (hosts.old, hosts.old_info)):
            dest = self.path("host-b", "downloaded-" + os.path.basename(os.path.dirname(path)))
            hosts.b.download(hosts.cas.endpoint, up["hash"], up["size"], dest)
            self.assertTrue(filecmp.cmp(path, dest, shallow=False), "download of %s differs" % path)

        after = harness.digest_tree(hosts.cache_b)
        for rel, (digest, mtime) in before.items():
            if rel.startswith("logs/"):
                continue  # the client's own logs: it may append to them
            self.assertIn(rel, after, "%s disappeared" % rel)
            self.assertEqual(after[rel], (digest, mtime), "%s was changed" % rel)
        # The corrupt shard was rejected, not deleted or moved (no
        # quarantine_dir configured).
        rejected = [os.path.basename(p) for s in hosts.dedupd.shards("rejected") for p in s["paths"]]
        self.assertIn("f" * 64 + ".mdb", rejected)


if __name__ == "__main__":
    harness.main()
