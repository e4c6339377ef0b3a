#!/usr/bin/env python3
"""Ingest fidelity: every shard the real client writes into its cache is
indexed by dedupd and verifies, and dedupd's answer for every chunk the client
uploaded matches what the CAS received."""

import json
import os
import subprocess

import harness
from harness import random_bytes, write


class IngestFidelity(harness.RealClientTest):
    def test_every_shard_the_client_writes_is_indexed_and_answers_what_was_uploaded(self):
        cache = self.path("xet")
        dedupd = self.dedupd([cache])
        cas = self.standin()
        client = harness.Client(cache)

        # Shapes the client writes: a file of several xorbs' worth of chunks,
        # a file under one chunk, an empty file, and a second session that
        # re-uploads one of them beside a new one (its shard names a xorb it
        # does not carry).
        a = write(self.path("in", "a.bin"), random_bytes(9 * 1024 * 1024 + 123, 1))
        small = write(self.path("in", "small.bin"), random_bytes(5000, 2))
        empty = write(self.path("in", "empty.bin"), b"")
        first = client.upload(cas.endpoint, a, small, empty)
        b = write(self.path("in", "b.bin"), random_bytes(300_000, 3))
        second = client.upload(cas.endpoint, a, b)

        indexed = self.wait_indexed(dedupd, client)
        shard_files = client.shard_files()
        self.assertGreaterEqual(len(shard_files), 2, "one exported shard per upload session")
        for f in shard_files:
            r = subprocess.run([harness.DEDUPCTL, "verify", f], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            s = indexed[os.path.realpath(f)]
            self.assertEqual(s["state"], "live", json.dumps(s))
            self.assertEqual(s["hash"] + ".mdb", os.path.basename(f), "the client names a shard by its hash")

        # The CAS saw every xorb once; each of its chunks is answered by
        # dedupd at the same xorb and index, with the same size.
        state = cas.state()
        self.assertEqual(state["rejected"], [])
        expected = {}
        for doc in state["shards"]:
            for x in doc["xorbs"]:
                for i, (h, c) in enumerate(zip(x["chunk_hashes"], x["chunks"])):
                    expected.setdefault(h, set()).add((x["hash"], i, c["unpacked_bytes"]))
        self.assertGreater(len(expected), 140, "9 MiB of random bytes make over 140 chunks")
        r = dedupd.ctl("query", "-", "--json-lines", stdin="\n".join(expected) + "\n")
        answered = 0
        for line in r.stdout.splitlines():
            doc = json.loads(line)
            self.assertTrue(doc["found"], "chunk %s uploaded but not found" % doc["hash"])
            got = {(loc["xorb"], loc["chunk_index"], loc["unpacked_bytes"]) for loc in doc["locations"]}
            self.assertTrue(expected[doc["hash"]] <= got, "%s: %s vs %s" % (doc["hash"], expected[doc["hash"]], got))
            answered += 1
        self.assertEqual(answered, len(expected))

        # Every file the client reported is known by its file hash, with the
        # size and sha256 the client computed.
        for up in first["files"] + second["files"]:
            status, body = dedupd.get("/v1/file/" + up["hash"])
            self.assertEqual(status, 200, "file %s (%s): %s" % (up["hash"], up["path"], body[:200]))
            doc = json.loads(body)
            self.assertEqual(doc["size"], up["size"])
            if up["size"]:
                self.assertEqual(doc["sha256"], up["sha256"])

        # Nothing half-written was ever read: no temp name among what dedupd
        # took or rejected, and its log names none.
        for s in dedupd.shards() + dedupd.shards("rejected"):
            for p in s["paths"]:
                self.assertNotIn("mdb_temp", p)
        with open(dedupd.proc.log_path) as f:
            log = f.read()
        self.assertNotIn("mdb_temp: ", log.replace("ignor", ""), "a temp file was opened")

    def test_staging_directory_shards_are_taken_or_ignored_without_errors(self):
        # dedupd watches the whole cache root, staging/ included: whatever the
        # client leaves there during or after a session is never rejected.
        cache = self.path("xet")
        dedupd = self.dedupd([cache])
        cas = self.standin()
        client = harness.Client(cache)
        for i in range(3):
            client.upload(cas.endpoint, write(self.path("in", "f%d.bin" % i), random_bytes(200_000, 10 + i)))
        self.wait_indexed(dedupd, client)
        self.assertEqual(dedupd.shards("rejected"), [])
        staging = [os.path.join(d, n) for e in client.endpoint_dirs() for d, _, ns in os.walk(os.path.join(e, "staging"))
                   for n in ns]
        for p in staging:
            if p.endswith(".mdb"):
                r = subprocess.run([harness.DEDUPCTL, "verify", p], capture_output=True, text=True)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


if __name__ == "__main__":
    harness.main()
