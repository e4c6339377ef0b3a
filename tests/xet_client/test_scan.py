#!/usr/bin/env python3
"""`dedupctl scan` predicts the real client's upload: before each upload it
says N new bytes, and the xorbs the client then sends carry chunks whose
unpacked sizes add up to the same N. dedupd watches the client's cache, so it
knows exactly what the client's own shard cache knows."""

import json
import os
import shutil

import harness
from harness import random_bytes, write

MiB = 1024 * 1024


class ScanPredictsUpload(harness.RealClientTest):
    def scan(self, dedupd, *paths):
        r = dedupd.ctl("scan", "--json", *paths)
        return json.loads(r.stdout)

    def test_scan_says_how_many_bytes_the_client_then_uploads(self):
        cache = self.path("xet")
        dedupd = self.dedupd([cache])
        cas = self.standin()
        client = harness.Client(cache)

        base = random_bytes(6 * MiB, 7)
        edited = bytearray(base)
        edited[3 * MiB:3 * MiB + 1000] = random_bytes(1000, 8)
        steps = [
            ("new file", {"f.bin": base}),
            ("the same file again", {"f.bin": base}),
            ("edited in the middle (1,000 bytes at 3 MiB)", {"f.bin": bytes(edited)}),
            ("appended to (1 MiB)", {"f.bin": base + random_bytes(MiB, 9)}),
            ("shifted by 3 bytes", {"f.bin": b"abc" + base}),
            ("a directory: a known file, a new one, an edited one", {
                "dir/known.bin": base,
                "dir/new.bin": random_bytes(2 * MiB + 17, 10),
                "dir/sub/edited.bin": bytes(edited[:4 * MiB]) + random_bytes(4096, 12),
                "dir/.git/objects/pack": random_bytes(MiB, 13),
            }),
            # The client's own policy: files of one upload are chunked side by
            # side, so the same new chunks in two of them are sent once or
            # twice depending on timing. scan counts the second copy apart
            # (repeated_bytes), so the client sends between new_bytes and
            # new_bytes + repeated_bytes.
            ("a directory with the same new 1 MiB in two files", {
                "dir/twice-a.bin": random_bytes(MiB, 11),
                "dir/sub/twice-b.bin": random_bytes(MiB, 11),
            }),
        ]
        rows = []
        for i, (what, files) in enumerate(steps):
            work = self.path("step%d" % i)
            paths = [write(os.path.join(work, name), data) for name, data in files.items()]
            uploaded = [p for p in paths if "/.git/" not in p]  # as `hf upload REPO dir` takes it
            target = [os.path.join(work, "dir")] if any(n.startswith("dir/") for n in files) else paths
            scanned = self.scan(dedupd, *target)
            self.assertEqual(sorted(f["path"] for f in scanned["files"]), sorted(uploaded))
            self.assertEqual([s["reason"].startswith("a .git directory") for s in scanned["skipped"]],
                             [True] * (len(paths) - len(uploaded)))
            predicted = scanned["total"]["new_bytes"]
            repeated = scanned["total"]["repeated_bytes"]

            cas.reset()
            client.upload(cas.endpoint, *sorted(uploaded))
            self.wait_indexed(dedupd, client)
            state = cas.state()
            sent = state["xorb_chunk_bytes"]
            size = sum(os.path.getsize(p) for p in uploaded)
            rows.append((what, size, predicted, repeated, sent))
            if repeated == 0:
                self.assertEqual(sent, predicted, "%s: scan said %d new bytes, the client sent %d" % (what, predicted, sent))
            else:
                self.assertGreaterEqual(sent, predicted, what)
                self.assertLessEqual(sent, predicted + repeated, what)
        print("\n| upload | size | scan: new bytes | scan: repeated | client sent (chunk bytes in xorbs) |")
        print("|---|---:|---:|---:|---:|")
        for what, size, predicted, repeated, sent in rows:
            print("| %s | %s | %s | %s | %s |" % (what, format(size, ","), format(predicted, ","), format(repeated, ","),
                                                 format(sent, ",")))


if __name__ == "__main__":
    harness.main()
