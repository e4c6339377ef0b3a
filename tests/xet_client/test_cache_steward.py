#!/usr/bin/env python3
"""dedupd as the steward of the real client's shard cache (`manage:
xet-cache`): it merges many small shards into few without changing what the
client uploads, never takes a shard from under a running client process,
and keeps the cache under its caps, least useful first."""

import json
import os
import subprocess
import time

import harness
from harness import random_bytes, write

SMALL_UPLOADS = 34  # over the 32 small shards consolidation waits for


class CacheSteward(harness.RealClientTest):
    def start_managed(self, cache, extra="", **xet_cache):
        settings = {"interval": "1s", "replaced_grace": "0s"}
        settings.update(xet_cache)
        yaml = "xet_cache:\n" + "".join("  %s: %s\n" % kv for kv in settings.items())
        return self.dedupd([{"path": cache, "manage": "xet-cache"}], yaml + extra, name="steward")

    def caches(self, dedupd):
        return dedupd.json("/v1/status")["xet_caches"]

    def small_cache(self, cas, client, n=SMALL_UPLOADS):
        """n upload sessions of one small file each: n exported shards."""
        files = [write(self.path("in", "f%02d.bin" % i), random_bytes(40_000 + 977 * i, 100 + i)) for i in range(n)]
        for f in files:
            client.upload(cas.endpoint, f)
        self.assertEqual(len(client.shard_files()), n)
        return files

    def test_many_small_shards_become_few_and_the_client_uploads_the_same(self):
        cache = self.path("xet")
        cas = self.standin()
        client = harness.Client(cache)
        files = self.small_cache(cas, client)
        before = {os.path.basename(p) for p in client.shard_files()}

        dedupd = self.start_managed(cache)
        # The files themselves too: once (CI of 7736cc1, under load) the
        # status said a merge and nothing pending while the directory still
        # held the 34 originals and not yet the merged file.
        harness.wait_for("dedupd to merge the cache", lambda: all(
            c["merges"] >= 1 and c["pending_deletions"] == 0 for c in self.caches(dedupd)) and self.caches(dedupd)
            and len(client.shard_files()) < 3, timeout=60)
        after = client.shard_files()
        self.assertLess(len(after), 3, after)
        self.assertTrue(set(map(os.path.basename, after)).isdisjoint(before), "the originals are gone")
        for f in after:
            r = subprocess.run([harness.DEDUPCTL, "verify", f], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.wait_indexed(dedupd, client)
        status = self.caches(dedupd)[0]
        self.assertEqual(status["files"], len(after))
        self.assertEqual(status["max_chunk_entries"], 64 * 1024 * 1024)

        # The client loads the merged shard as its own: everything it
        # uploaded before is still known, and new bytes are what scan says.
        cas.reset()
        client.upload(cas.endpoint, *files)
        self.assertEqual(cas.state()["xorb_chunk_bytes"], 0)
        edited = write(self.path("in", "edited.bin"), random_bytes(40_000, 100) + random_bytes(20_000, 999))
        predicted = json.loads(dedupd.ctl("scan", "--json", edited).stdout)["total"]["new_bytes"]
        cas.reset()
        client.upload(cas.endpoint, edited)
        self.assertEqual(cas.state()["xorb_chunk_bytes"], predicted)

        # dedupctl shards and /metrics show the cache against its caps.
        shown = dedupd.ctl("shards").stdout
        self.assertIn("MANAGED XET CACHE", shown)
        self.assertIn(status["endpoint"], shown)
        status_code, metrics = dedupd.get("/metrics")
        self.assertEqual(status_code, 200)
        self.assertIn(b"dedupd_xet_cache_files{endpoint=", metrics)
        self.assertIn(b"dedupd_xet_cache_max_chunk_entries{endpoint=", metrics)

    def test_a_running_client_keeps_the_shards_it_loaded_until_it_ends(self):
        cache = self.path("xet")
        cas = self.standin()
        client = harness.Client(cache)
        files = self.small_cache(cas, client)
        big = write(self.path("in", "big.bin"), random_bytes(4 * 1024 * 1024, 7))
        client.upload(cas.endpoint, big)

        # A session loads the cache, streams half of a file it knows, and
        # waits; meanwhile dedupd merges every shard it loaded.
        cas.reset()
        held = client.held_upload(cas.endpoint, big)
        try:
            dedupd = self.start_managed(cache, replaced_grace="1h")
            harness.wait_for("a merge", lambda: self.caches(dedupd) and self.caches(dedupd)[0]["merges"] >= 1,
                             timeout=60)
            time.sleep(2)  # passes that must not delete what the session holds
            status = self.caches(dedupd)[0]
            self.assertGreater(status["pending_deletions"], 0, status)
            self.assertGreaterEqual(status["live_clients"], 1, status)
            held.stdin.write("go\n")
            held.stdin.flush()
            out, err = held.communicate(timeout=300)
            self.assertEqual(held.returncode, 0, err[-2000:])
        finally:
            if held.poll() is None:
                held.kill()
        # It found the rest of its file in the shards it had loaded.
        self.assertEqual(cas.state()["xorb_chunk_bytes"], 0)
        # Once it is gone, so are the originals.
        harness.wait_for("the originals to go", lambda: self.caches(dedupd)[0]["pending_deletions"] == 0, timeout=30)
        self.assertLess(len(client.shard_files()), 4)
        self.assertTrue(files)

    def test_without_the_wait_a_running_session_re_uploads_but_never_fails(self):
        # What the rule above prevents, shown with the real client: shards
        # deleted under a running session cost bytes, not an error.
        cache = self.path("xet")
        cas = self.standin()
        client = harness.Client(cache)
        big = write(self.path("in", "big.bin"), random_bytes(4 * 1024 * 1024, 8))
        client.upload(cas.endpoint, big)
        cas.reset()
        held = client.held_upload(cas.endpoint, big)
        for f in client.shard_files():
            os.remove(f)
        held.stdin.write("go\n")
        held.stdin.flush()
        _, err = held.communicate(timeout=300)
        self.assertEqual(held.returncode, 0, err[-2000:])
        self.assertGreater(cas.state()["xorb_chunk_bytes"], 1024 * 1024)

    def test_caps_hold_and_evict_expired_then_least_recently_used(self):
        # Host B's cache: three exported shards of its own uploads and a
        # global-dedup reply that expires in 3 s; dedupd's own expiry keeps
        # files (delete_after: never), so the caps decide.
        hosts = harness.TwoHosts(self, 3, delete_after="never")  # answers B's global-dedup query
        _, _, _ = hosts.upload_on_b()
        reply = hosts.replies_in_b()
        self.assertEqual(len(reply), 1)
        sizes = [300_000, 310_000, 320_000]
        own = []
        for i, n in enumerate(sizes):
            own.append(hosts.b.upload(hosts.cas.endpoint, write(self.path("host-b", "own%d.bin" % i),
                                                                 random_bytes(n, 200 + i)))["files"][0])
            time.sleep(1.1)  # distinct mtimes: least recently used is well defined
        exported = sorted((p for p in hosts.b.shard_files() if p not in reply), key=os.path.getmtime)
        self.assertEqual(len(exported), 4)  # model.bin's session, then own0..own2
        time.sleep(3)  # the reply has expired for the client
        hosts.stop_dedupd()

        entries = [json.loads(subprocess.run([harness.DEDUPCTL, "inspect", "--json", p], capture_output=True,
                                             text=True).stdout)["counts"]["chunks"] for p in exported]
        cap = sum(entries[-2:])  # room for the two newest exported shards only
        dedupd = self.start_managed(hosts.cache_b, extra="expiry:\n  delete_after: never\n",
                                    max_chunk_entries=str(cap))
        harness.wait_for("the caps to hold", lambda: self.caches(dedupd) and
                         self.caches(dedupd)[0]["chunk_entries"] <= cap and self.caches(dedupd)[0]["evicted"] >= 3,
                         timeout=60)
        left = set(hosts.b.shard_files())
        self.assertEqual(left, set(exported[-2:]), "expired reply first, then the least recently used")
        status = self.caches(dedupd)[0]
        self.assertEqual(status["evicted"], 3)
        self.assertEqual(status["max_chunk_entries"], cap)
        self.assertEqual(status["max_chunk_entries_why"], "configured")
        # Evicted from the client's cache is not gone from the index: the
        # local Xet endpoint answers for those shards (issue 31). Only the
        # reply, expired, has left it.
        self.assertEqual(dedupd.json("/v1/stats")["shards"]["live"], len(exported))


    def test_past_the_clients_entry_cap_it_still_dedups_the_newest_content(self):
        # The client indexes at most HF_XET_SHARD_CHUNK_INDEX_TABLE_MAX_SIZE
        # chunk entries and silently ignores the shards after; here 100
        # (the default is 64 Mi) so that three 3 MiB files pass it.
        cap = 100
        env = {"HF_XET_SHARD_CHUNK_INDEX_TABLE_MAX_SIZE": str(cap)}
        cas = self.standin()
        files = [write(self.path("in", "f%d.bin" % i), random_bytes(3 * 1024 * 1024, 300 + i)) for i in range(3)]

        def resend(client, f):
            cas.reset()
            client.upload(cas.endpoint, f)
            return cas.state()["xorb_chunk_bytes"]

        alone = harness.Client(self.path("alone", "xet"), env)
        for f in files:
            alone.upload(cas.endpoint, f)
            time.sleep(1.1)
        # Without dedupd, whatever the client loads past the cap is lost, in
        # its own load order: some file's bytes go up again, silently.
        self.assertGreaterEqual(sum(resend(alone, f) for f in files), os.path.getsize(files[0]))

        cache = self.path("xet")
        managed = harness.Client(cache, env)
        dedupd = self.start_managed(cache, max_chunk_entries=str(cap))
        for f in files:
            managed.upload(cas.endpoint, f)
            time.sleep(1.1)
        harness.wait_for("the entry cap to hold", lambda: self.caches(dedupd) and
                         self.caches(dedupd)[0]["chunk_entries"] <= cap, timeout=30)
        self.assertEqual(resend(managed, files[-1]), 0, "with dedupd the newest content is deduplicated")
        self.assertEqual(resend(managed, files[-2]), 0)

    def test_keyed_replies_merge_only_with_their_own_key(self):
        # Two dedupds with their own global-dedup keys answer host B in turn:
        # its cache holds replies under two keys beside its exported shards.
        cas = self.standin()
        a_cache = self.path("host-a", "xet")
        a = harness.Client(a_cache)
        keyed_sources = [write(self.path("host-a", "k%d.bin" % i), random_bytes(200_000, 400 + i)) for i in range(4)]
        for f in keyed_sources:  # a shard and a xorb each: each reply carries one
            a.upload(cas.endpoint, f)
        first = self.dedupd([a_cache], name="answers-1")
        self.wait_indexed(first, a)
        second = self.dedupd([a_cache], name="answers-2")
        self.wait_indexed(second, a)
        b_cache = self.path("host-b", "xet")
        b = harness.Client(b_cache)
        for i, f in enumerate(keyed_sources):
            cas.forward_to(first if i < 2 else second)
            b.upload(cas.endpoint, f)
        cas.forward_to(None)
        for i in range(SMALL_UPLOADS - 6):
            b.upload(cas.endpoint, write(self.path("host-b", "s%02d.bin" % i), random_bytes(30_000 + i, 500 + i)))

        def keys():
            out = []
            for p in b.shard_files():
                doc = json.loads(subprocess.run([harness.DEDUPCTL, "inspect", "--json", p], capture_output=True,
                                                text=True).stdout)
                if doc["keyed"]:
                    out.append((doc["hmac_key"], doc["counts"]["xorbs"]))
            return sorted(out)

        before = keys()
        self.assertEqual(len(before), 4, before)
        self.assertEqual(len({k for k, _ in before}), 2, before)
        steward = self.start_managed(b_cache)
        harness.wait_for("the merges", lambda: self.caches(steward) and self.caches(steward)[0]["merges"] >= 3 and
                         self.caches(steward)[0]["pending_deletions"] == 0, timeout=90)
        after = keys()
        # One merged reply per key, each with both replies' xorbs.
        self.assertEqual([k for k, _ in after], sorted({k for k, _ in before}), after)
        for key, xorbs in after:
            self.assertEqual(xorbs, sum(x for k, x in before if k == key))


if __name__ == "__main__":
    harness.main()
