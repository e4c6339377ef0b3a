#!/usr/bin/env python3
"""Writes tests/fixtures/hf_xet/: shards the real Xet client wrote, so unit
tests keep each shape without Python. Run from a build with the virtualenv
./dev test makes:

  DEDUPD=build/daemon/dedupd DEDUPCTL=build/cli/dedupctl \\
  XET_PYTHON=build-asan/xet-venv/bin/python tests/xet_client/make_fixtures.py

The file contents are fixed (seeded), so only the timestamps, and with them
the hashes, change from one run to the next.
"""

import json
import os
import shutil
import tempfile

import harness
from harness import random_bytes, write

OUT = os.path.join(os.path.dirname(harness.HERE), "fixtures", "hf_xet")


def main():
    harness.require_client()
    work = tempfile.mkdtemp(prefix="dedupd-xet-fixtures-")
    procs = []
    try:
        shutil.rmtree(OUT, ignore_errors=True)
        os.makedirs(OUT)
        cache_a, cache_b = os.path.join(work, "a"), os.path.join(work, "b")
        for sub in ("dedupd", "a"):
            os.makedirs(os.path.join(work, sub))
        d = harness.Dedupd(os.path.join(work, "dedupd"), [cache_a], "global_dedup:\n  reply_expiry: 7d\n")
        procs.append(d)
        cas = harness.CasStandin(os.path.join(work, "cas"), d.socket)
        procs.append(cas)
        a, b = harness.Client(cache_a), harness.Client(cache_b)
        # Session 1: an empty file beside two small ones, three chunks in all.
        files = [write(os.path.join(work, "in", n), data) for n, data in
                 (("empty.bin", b""), ("one-chunk.bin", random_bytes(3000, 1)),
                  ("two-chunks.bin", random_bytes(70_000, 2)))]
        a.upload(cas.endpoint, *files)
        # Session 2 on another host: the two-chunk file again plus one byte,
        # deduplicated through dedupd's reply, which the client saves.
        more = write(os.path.join(work, "in", "two-chunks-plus.bin"), random_bytes(70_000, 2) + b"!")
        harness.wait_for("dedupd to index host a", lambda: len(d.shards()) >= 1)
        b.upload(cas.endpoint, more)
        notes = {"hf_xet": harness.hf_xet_version(), "files": {}}
        for client, host in ((a, "a"), (b, "b")):
            for f in client.shard_files():
                doc = json.loads(harness.subprocess.run([harness.DEDUPCTL, "inspect", "--json", f],
                                                        capture_output=True, text=True).stdout)
                kind = "global-dedup reply" if doc["keyed"] else "exported session shard"
                # Under the client's own name (the hash of the bytes), which
                # verify checks.
                shutil.copyfile(f, os.path.join(OUT, os.path.basename(f)))
                notes["files"][os.path.basename(f)] = "host %s shard-cache: %s" % (host, kind)
        for i, body in enumerate(sorted(os.listdir(os.path.join(cas.root, "shards")))):
            name = "upload-body-%d.shard" % (i + 1)
            shutil.copyfile(os.path.join(cas.root, "shards", body), os.path.join(OUT, name))
            notes["files"][name] = "POST /v2/shards body"
        with open(os.path.join(OUT, "sources.json"), "w") as f:
            json.dump(notes, f, indent=1, sort_keys=True)
            f.write("\n")
        print(json.dumps(notes, indent=1))
    finally:
        for p in reversed(procs):
            p.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
