#!/usr/bin/env python3
"""Downloads through the local Xet endpoint (docs/XET-ENDPOINT.md,
"Downloads"; issue 72): the real `hf download` through the real nginx, whose
reconstruction answers dedupd rewrites so every range comes through the
endpoint. An object (the bytes of one range the CAS signed) is fetched from
the storage by dedupd, checked, and cached by nginx as a 200 keyed by
(xorb, range); a later range inside it, on its chunk boundaries, is served
out of it. The stand-in's storage (cas_standin.py, a port of its own,
presigned-style URLs it checks) counts the bytes it serves: what each host
cost the internet."""

import http.client
import json
import os
import signal
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

    def download(self, host, name):
        """`hf download` of the repository's file on `host` (a directory of
        its own): (bytes it cost the storage, sha256 of what it got,
        seconds it took)."""
        before, t0 = self.storage_bytes(), time.monotonic()
        out = self.path(host, "download")
        self.user(host).hf("download", REPO, name, "--local-dir", out)
        return self.storage_bytes() - before, harness.sha256_of(os.path.join(out, name)), time.monotonic() - t0

    def range_lines(self):
        """The access log's lines of range URLs."""
        return [l for l in self.ep.access_log() if l[3].startswith("/xet/o/")]

    def cache_files(self):
        """nginx's cache files of the download cache, by path: size."""
        return harness.download_cache_files(self.ep.cache_dir)

    def storage_call(self, path, body):
        self.hub_call(path, body)

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
        harness.assert_each_range_once(self, served)
        ranges = self.range_lines()
        self.assertTrue(ranges, "no range came through the endpoint")
        self.assertEqual({l[4] for l in ranges}, {"206"}, ranges)
        # Misses were filled by dedupd (nginx's upstream is its socket, never
        # the storage); host B's ranges were all hits (no upstream).
        upstreams = {l[8] for l in ranges}
        self.assertTrue(all(u == "upstream=-" or u.startswith("upstream=unix:") for u in upstreams), upstreams)
        self.assertIn("upstream=-", upstreams)
        # No presigned URL in any file of the endpoint or of dedupd.
        for root in (self.ep.root, self.dedupd.root):
            for d, _, names in os.walk(root):
                for n in names:
                    p = os.path.join(d, n)
                    if os.path.isfile(p) and not os.path.islink(p):
                        with open(p, "rb") as f:
                            self.assertNotIn(b"Signature=", f.read(), p)

    def test_two_hosts_downloading_at_once_fetch_each_range_from_storage_once(self):
        import threading
        src, _ = self.uploaded(SIZE, 76)
        name = os.path.basename(src)
        self.hub.reset()
        results, errors = {}, []

        def download(host):
            try:
                out = self.path(host, "download")
                self.user(host).hf("download", REPO, name, "--local-dir", out)
                results[host] = harness.sha256_of(os.path.join(out, name))
            except Exception as e:  # reported below, on the test's thread
                errors.append(e)
        threads = [threading.Thread(target=download, args=(h,)) for h in ("host-a", "host-b")]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertFalse(errors, errors)
        want = harness.sha256_of(src)
        self.assertEqual(results, {"host-a": want, "host-b": want})
        # nginx's cache lock held the second client of each object until
        # the first one's fill was in: every range once from storage.
        total = harness.assert_each_range_once(self, self.hub.state()["storage"]["xorbs"])
        print("two hosts at once, file %d bytes: %d bytes from storage" % (SIZE, total))
        self.assertLess(total, SIZE + SIZE // 50)

    def test_a_scribbled_cache_file_is_never_served_and_is_fetched_again(self):
        src, _ = self.uploaded(8 * MIB, 77)
        name = os.path.basename(src)
        self.hub.reset()
        a_bytes, a_sha, _ = self.download("host-a", name)
        self.assertEqual(a_sha, harness.sha256_of(src))
        files = self.cache_files()
        self.assertTrue(files, "nothing in the download cache")
        # The largest object: bytes in its middle overwritten, its size kept.
        victim = max(files, key=files.get)
        with open(victim, "r+b") as f:
            f.seek(files[victim] // 2)
            f.write(b"\0scribbled by a test\0")
        self.assertEqual(os.path.getsize(victim), files[victim])
        b_bytes, b_sha, _ = self.download("host-b", name)
        print("scribbled object of %d bytes (file); from storage: host A %d, host B %d" % (files[victim], a_bytes,
                                                                                        b_bytes))
        self.assertEqual(b_sha, harness.sha256_of(src))
        # Host B fetched from storage that object again, and nothing else.
        self.assertGreater(b_bytes, 0)
        self.assertLess(b_bytes, files[victim])
        self.assertGreater(b_bytes, files[victim] - 4096)  # the file's header is nginx's, not the storage's
        self.assertTrue(os.path.exists(victim), "the object was not cached again")
        with open(victim, "rb") as f:
            self.assertNotIn(b"scribbled by a test", f.read())
        self.assertIn("fails its check", self.dedupd.proc.tail(400))
        self.assertEqual(self.downloads()["cache_damaged"], 1)

    @harness.once("a restart of dedupd under a full cache; the clients only download, as in the test above")
    def test_a_cache_file_damaged_while_dedupd_was_down_is_found_against_the_index(self):
        """dedupd restarted knows no check of the cache's files: the first
        grant of each checks its bytes again, chunk by chunk against the
        index (which learned the file's xorbs at its upload), so one bit
        flipped in the data of an uncompressed chunk, which the structure
        alone passes, is found; the file is removed and fetched again."""
        self.damaged_while_down(*self.uploaded(8 * MIB, 85))

    @harness.once("a restart of dedupd under a full cache; the clients only download, as in the test above")
    def test_a_cache_file_of_a_xorb_the_index_lacks_damaged_while_dedupd_was_down_is_found_by_its_kept_digest(self):
        """The same, the file uploaded straight to the CAS (this host's index
        never learned its xorbs): the digest the fill's check kept in the
        state dir tells."""
        src = harness.write(self.path("src", "model-86.bin"), harness.random_bytes(8 * MIB, 86))
        up = harness.HubClient(self.path("direct-uploader"), self.hub.endpoint, TOKEN, self.tls["ca"])
        up.run("create-repo", REPO)
        up.run("upload-file", REPO, os.path.basename(src), src)
        self.assertEqual(self.dedupd.shards(), [], "the upload went by the endpoint")
        self.damaged_while_down(src, None)
        self.assertIn("checked objects' digests read back", self.dedupd.proc.tail(400))

    def damaged_while_down(self, src, _file_hash):
        """Host A downloads `src`; dedupd stops; a bit of the largest cached
        object flips; dedupd starts again; host B's download must be right,
        and fetch that object again from storage."""
        name = os.path.basename(src)
        self.hub.reset()
        _, a_sha, _ = self.download("host-a", name)
        self.assertEqual(a_sha, harness.sha256_of(src))
        files = self.cache_files()
        victim = max(files, key=files.get)
        self.dedupd.stop()
        harness.flip_middle_bit(victim)
        self.dedupd = harness.Dedupd(self.dedupd.root, [self.path("host-" + h, "xet") for h in "ab"],
                                     harness.endpoint_yaml(self.settings))
        self.procs.append(self.dedupd)
        self.ep.grant(self.dedupd.socket)  # (the new socket, for nginx's user)
        b_bytes, b_sha, _ = self.download("host-b", name)
        print("object of %d bytes (file) damaged while dedupd was down; host B fetched %d bytes from storage"
              % (files[victim], b_bytes))
        self.assertEqual(b_sha, harness.sha256_of(src))
        self.assertGreater(b_bytes, files[victim] - 4096)  # that object again (its file has nginx's header)
        self.assertLess(b_bytes, files[victim])  # and nothing else
        self.assertIn("removed", self.dedupd.proc.tail(400))
        self.assertEqual(self.downloads()["cache_damaged"], 1)

    def test_bytes_that_fail_the_check_are_neither_cached_nor_served(self):
        src, _ = self.uploaded(4 * MIB, 78)
        name = os.path.basename(src)
        self.hub.reset()
        self.storage_call("/_standin/storage-damage", b"1")
        a_bytes, a_sha, _ = self.download("host-a", name)
        self.assertEqual(a_sha, harness.sha256_of(src))
        # The damaged answer was cut short (relayed chunk by chunk up to the
        # damaged one, then the connection closed before its Content-Length:
        # a failed request in dedupd's counts) and the client retried, so
        # the range was fetched twice; then cached, and host B fetches
        # nothing.
        harness.wait_for("the answer cut short counted", lambda: self.downloads()["requests"]["failed"] >= 1)
        served = self.hub.state()["storage"]["xorbs"]
        twice = [(x, r) for x, rs in served.items() for r, n in rs.items()
                 if n == 2 * (int(r.split("-")[1]) + 1 - int(r.split("-")[0]))]
        self.assertEqual(len(twice), 1, served)
        # dedupd counted the failed fill apart from the bytes served: the
        # check, and what it had fetched of the range when the damage (in
        # the range's middle) stopped it.
        d = self.downloads()
        length = int(twice[0][1].split("-")[1]) + 1 - int(twice[0][1].split("-")[0])
        self.assertEqual(d["fill_failed"], {"check": 1, "storage": 0, "local": 0})
        self.assertGreaterEqual(d["fill_failed_bytes"], length // 2)
        self.assertLessEqual(d["fill_failed_bytes"], length)
        self.assertEqual(sum(d["refused"].values()), 0)
        b_bytes, b_sha, _ = self.download("host-b", name)
        self.assertEqual(b_sha, harness.sha256_of(src))
        self.assertEqual(b_bytes, 0)

    def largest_range_url(self, file_hash):
        """The range URL of the file's largest range (v1), and the Range
        header its client sends: (uri, range header, length)."""
        doc = self.reconstruction(file_hash)
        entries = [e for es in doc["fetch_info"].values() for e in es]
        e = max(entries, key=lambda e: e["url_range"]["end"] - e["url_range"]["start"])
        rng = e["url_range"]
        return (e["url"][len(self.ep.cas_url):], "bytes=%d-%d" % (rng["start"], rng["end"]),
                rng["end"] + 1 - rng["start"])

    def range_request(self, uri, rng):
        """A GET of a range URL by hand, its answer's headers in: (the
        connection, the response)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.ep.cas_port, timeout=60)
        conn.request("GET", uri, headers={"Range": rng})
        return conn, conn.getresponse()

    @harness.once("the fill as nginx relays it, asked by hand; no client of its own")
    def test_a_miss_reaches_its_client_while_the_storage_still_sends_it(self):
        """The fill is streamed: its first bytes reach the client before the
        storage has sent the object (the storage stopped half way until the
        test lets it go on), not once it is all fetched and checked."""
        _, file_hash = self.uploaded(8 * MIB, 83)
        uri, rng, length = self.largest_range_url(file_hash)
        self.assertGreater(length, 4 * MIB)
        self.hub.reset()
        hold = length // 2
        self.storage_call("/_standin/storage-hold", str(hold).encode())
        try:
            conn, r = self.range_request(uri, rng)
            self.assertEqual(r.status, 206)
            self.assertEqual(int(r.headers["Content-Length"]), length)
            first = r.read(64 * 1024)
            sent = self.hub.state()["storage"]["sent"]
        finally:
            self.storage_call("/_standin/release", b"")
        print("first %d bytes at the client with %d of the object's %d sent by the storage" % (len(first), sent,
                                                                                                length))
        self.assertEqual(len(first), 64 * 1024)
        self.assertLess(sent, length)
        self.assertLessEqual(sent, hold)
        rest = r.read()
        conn.close()
        self.assertEqual(len(first) + len(rest), length)
        # Whole and cached: the same range again is a hit of the same bytes,
        # and the storage served the range once.
        again = self.cas_get(uri, {"Range": rng})
        self.assertEqual((again[0], again[1]["X-Xet-Cache"]), (206, "HIT"))
        self.assertEqual(again[2], first + rest)
        harness.assert_each_range_once(self, self.hub.state()["storage"]["xorbs"])

    @harness.once("the fill as nginx relays it, asked by hand; no client of its own")
    def test_bytes_that_fail_the_check_end_the_answer_short_and_nothing_is_cached(self):
        """A byte flipped in the middle of the storage's answer: the chunks
        before it reached the client, then the connection closed short of
        the Content-Length; nginx kept nothing, so the next request fills
        the object again, whole."""
        _, file_hash = self.uploaded(8 * MIB, 84)
        uri, rng, length = self.largest_range_url(file_hash)
        self.hub.reset()
        before = self.downloads()["fill_failed"]
        self.storage_call("/_standin/storage-damage", b"1")
        conn, r = self.range_request(uri, rng)
        self.assertEqual(r.status, 206)
        self.assertEqual(int(r.headers["Content-Length"]), length)
        try:
            got = r.read()
        except http.client.IncompleteRead as e:
            got = e.partial
        conn.close()
        print("damaged fill: %d of %d bytes reached the client" % (len(got), length))
        self.assertGreater(len(got), 0)
        self.assertLess(len(got), length // 2 + 1)  # the damage is in the middle
        self.assertEqual(self.cache_files(), {})
        after = self.downloads()["fill_failed"]
        self.assertEqual({k: after[k] - before[k] for k in after}, {"check": 1, "storage": 0, "local": 0})
        # Not cached: the next request is a miss, filled again, whole; the
        # bytes before the damage were the right ones.
        status, headers, body = self.cas_get(uri, {"Range": rng})
        self.assertEqual((status, headers["X-Xet-Cache"]), (206, "MISS"))
        self.assertEqual(len(body), length)
        self.assertEqual(body[:len(got)], got)
        served = self.hub.state()["storage"]["xorbs"]
        self.assertEqual([n for rs in served.values() for n in rs.values()], [2 * length])

    @harness.once("the fill as nginx relays it, asked by hand; no client of its own")
    def test_dedupd_stopping_in_the_middle_of_a_fill_ends_its_answer_short_and_exits(self):
        """A fill under way (the storage holding the rest of the object)
        does not hold dedupd's stop up: the fill gives up, its answer ends
        short of its length, dedupd exits cleanly, and nothing is cached."""
        _, file_hash = self.uploaded(8 * MIB, 85)
        uri, rng, length = self.largest_range_url(file_hash)
        self.hub.reset()
        self.storage_call("/_standin/storage-hold", str(length // 2).encode())
        try:
            conn, r = self.range_request(uri, rng)
            self.assertEqual(r.status, 206)
            first = r.read(64 * 1024)
            os.killpg(self.dedupd.proc.p.pid, signal.SIGTERM)
            self.assertEqual(self.dedupd.proc.p.wait(60), 0, self.dedupd.proc.tail())
            try:
                rest = r.read()
            except http.client.IncompleteRead as e:
                rest = e.partial
            conn.close()
        finally:
            self.storage_call("/_standin/release", b"")
        print("dedupd stopped in a fill: %d of %d bytes reached the client" % (len(first) + len(rest), length))
        self.assertLess(len(first) + len(rest), length)
        self.assertEqual(self.cache_files(), {})

    def revision_test(self, what, edit):
        """Host A downloads a file; its owner uploads a revision with about
        5 % of it changed (`edit` makes it); host B, on the same endpoint,
        downloads the revision: the bytes it costs the storage beside the
        ideal (the revision's new xorbs)."""
        src, _ = self.uploaded(SIZE, 79)
        name = os.path.basename(src)
        self.hub.reset()
        a_bytes, a_sha, a_s = self.download("host-a", name)
        self.assertEqual(a_sha, harness.sha256_of(src))
        with open(src, "rb") as f:
            data = bytearray(f.read())
        changed = edit(data)
        rev = harness.write(self.path("src-rev", name), bytes(data))
        self.hub.reset()
        self.user("uploader").run("upload-file", REPO, name, rev)
        new = self.hub.state()["xorbs"]
        # Random bytes do not compress: each new chunk is its bytes and an
        # 8-byte header in the storage.
        ideal = sum(x["bytes"] + 8 * x["chunks"] for x in new.values())
        self.hub.reset()
        b_bytes, b_sha, b_s = self.download("host-b", name)
        self.assertEqual(b_sha, harness.sha256_of(rev))
        served = self.hub.state()["storage"]["xorbs"]
        old = sum(sum(r.values()) for x, r in served.items() if x not in new)
        print("revision, %s: %d of %d bytes changed; from storage: host A %d (%.1f s), host B %d (%.1f s) "
              "of which %d of old xorbs; ideal (the new xorbs) %d, B/ideal %.3f"
              % (what, changed, len(data), a_bytes, a_s, b_bytes, b_s, old, ideal, b_bytes / max(ideal, 1)))
        self.assertTrue(new, "the revision uploaded no new xorb")
        # B fetched the new xorbs' bytes, and of the old xorbs nothing: each
        # old range the revision names lies inside an object A cached.
        self.assertGreaterEqual(b_bytes, ideal * 0.95)
        self.assertEqual(old, 0, served)
        self.assertLess(b_bytes, len(data) // 5)

    def test_a_revision_with_a_contiguous_5_percent_fetches_its_new_xorbs_only(self):
        def edit(data):
            n, at = len(data) // 20, len(data) * 2 // 5
            data[at:at + n] = harness.random_bytes(n, 80)
            return n
        self.revision_test("contiguous", edit)

    def test_a_revision_with_5_percent_scattered_fetches_its_new_xorbs_only(self):
        def edit(data):
            pieces = 16
            n = len(data) // 20 // pieces
            for i in range(pieces):
                at = (2 * i + 1) * len(data) // (2 * pieces)
                data[at:at + n] = harness.random_bytes(n, 81 + i)
            return n * pieces
        self.revision_test("scattered", edit)

    @harness.ends_only("the endpoint's rewrite decides it; the clients fetch what it names, as in the tests above")
    def test_a_range_across_two_cached_objects_is_fetched_again_as_one(self):
        """The cost of not splitting a term at the boundary between two
        cached objects (docs/XET-ENDPOINT.md, "A range across two
        objects"): files of chunks [0, k) and [k, 2k) of one xorb, then one
        of [k/2, 3k/2). Its range lies in no single cached object, so it is
        an object of its own, fetched whole from storage once; the ideal
        (its bytes read from the two objects) is 0."""
        src, _ = self.uploaded(8 * MIB, 82)
        shard = self.hub.state()["shards"][-1]
        self.assertEqual(len(shard["xorbs"]), 1, shard["xorbs"])
        xorb = shard["xorbs"][0]["hash"]
        at = [0]  # where each chunk starts in the file
        for c in shard["xorbs"][0]["chunks"]:
            at.append(at[-1] + c["unpacked_bytes"])
        k = (len(at) - 1) // 3
        with open(src, "rb") as f:
            data = f.read()
        pieces = {"first.bin": (0, k), "second.bin": (k, 2 * k), "across.bin": (k // 2, k // 2 + k)}
        for name, (a, b) in pieces.items():
            p = harness.write(self.path("src", name), data[at[a]:at[b]])
            self.hub.reset()
            self.user("uploader").run("upload-file", REPO, name, p)
            state = self.hub.state()
            # The uploader's shard cache knows the xorb: no new bytes, and
            # the file is that one term.
            self.assertEqual(state["xorbs"], {}, name)
            terms = state["shards"][-1]["files"][0]["terms"]
            self.assertEqual([(t["xorb"], t["chunk_start"], t["chunk_end"]) for t in terms], [(xorb, a, b)], name)
        self.hub.reset()
        for name in ("first.bin", "second.bin"):
            got, sha, _ = self.download("host-a", name)
            self.assertEqual(sha, harness.sha256_of(self.path("src", name)))
        cached = self.hub.state()["storage"]["xorbs"][xorb]
        self.assertEqual(len(cached), 2, cached)
        self.hub.reset()
        b_bytes, b_sha, _ = self.download("host-b", "across.bin")
        self.assertEqual(b_sha, harness.sha256_of(self.path("src", "across.bin")))
        served = self.hub.state()["storage"]["xorbs"]
        print("range across two cached objects (chunks %d-%d of %d, objects %s): host B %d bytes from storage, "
              "ideal 0" % (k // 2, k // 2 + k, len(at) - 1, sorted(cached), b_bytes))
        # The range, as one new object, once: its chunks' bytes (random
        # bytes: each stored as it is, behind an 8-byte header).
        self.assertEqual(list(served), [xorb])
        self.assertEqual(len(served[xorb]), 1, served)
        self.assertEqual(b_bytes, at[k // 2 + k] - at[k // 2] + 8 * k)
        # Then cached: a third host fetches nothing.
        c_bytes, c_sha, _ = self.download("host-c", "across.bin")
        self.assertEqual((c_bytes, c_sha), (0, b_sha))

    @harness.once("range URLs are the endpoint's; no client of its own")
    def test_altered_expired_and_other_range_urls_are_refused(self):
        _, file_hash = self.uploaded(3 * MIB, 73)
        before = self.downloads()["refused"]
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
            # A range of its own: the object is those bytes, the client's
            # range all of it.
            obj = uri[len("/xet/o/%s/" % xorb):uri.index("?")]
            first, last = (int(x) for x in obj.split("-"))
            self.assertIn("r=%s&" % obj, uri)
            # No fleet tier: no digest of the CAS's URL (no tier host fills it).
            self.assertNotIn("&d=", uri)
            self.assertEqual((rng["start"], rng["end"]), (0, last - first))
            good = "bytes=%d-%d" % (rng["start"], rng["end"])
            status, headers, body = self.cas_get(uri, {"Range": good})
            self.assertEqual(status, 206, body[:300])
            self.assertEqual(len(body), rng["end"] + 1 - rng["start"])
            self.assertEqual(headers["Content-Range"].split("/")[0], "bytes %d-%d" % (rng["start"], rng["end"]))
            g = uri[uri.index("&g=") + 3:]
            altered = uri.replace(g, ("0" if g[0] != "0" else "1") + g[1:])
            wider = "%d-%d" % (first, last + 1)
            other_object = uri.replace("/%s?" % obj, "/%s?" % wider)
            other_grant = uri.replace("r=%s&" % obj, "r=%s&" % wider)
            for what, u, r in (("altered signature", altered, good),
                               ("another object in the URL", other_object, "bytes=0-%d" % (last + 1 - first)),
                               ("another granted range in the URL", other_grant, good),
                               ("another Range header", uri, "bytes=%d-%d" % (rng["start"], rng["end"] - 1)),
                               ("a Range past the grant", uri, "bytes=%d-%d" % (rng["start"], rng["end"] + 1)),
                               ("two ranges", uri, "bytes=0-0,1-%d" % rng["end"]),
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
        # dedupd counted each refusal by its reason: per shape, two URLs
        # whose signature no longer holds, one granting bytes past its
        # object (malformed), four Range headers not the grant; then one
        # expired.
        after = self.downloads()["refused"]
        got = {why: n - before[why] for why, n in after.items() if n != before[why]}
        self.assertEqual(got, {"bad_signature": 4, "malformed": 2, "wrong_range": 8, "expired": 1})

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


    def downloads(self):
        """dedupd's counts of the endpoint's downloads (/v1/status)."""
        return self.dedupd.json("/v1/status")["xet_downloads"]

    def test_downloads_are_counted_by_where_their_bytes_came_from(self):
        src, _ = self.uploaded(SIZE, 75)
        self.hub.reset()
        # dedupd walks the endpoint's cache where the endpoint's settings
        # say it is (a reload walks it at once).
        os.makedirs(os.path.dirname(self.settings), exist_ok=True)
        with open(self.settings, "w") as f:
            f.write("cas_port = %d\ncache_dir = %s\n" % (self.ep.cas_port, self.ep.cache_dir))
        self.dedupd.proc.p.send_signal(signal.SIGHUP)
        name = os.path.basename(src)
        before = self.downloads()
        self.assertTrue(before["enabled"])
        counted = {}
        for host, source in (("host-a", "internet"), ("host-b", "local_cache")):
            storage = self.storage_bytes()
            self.user(host).hf("download", REPO, name, "--local-dir", self.path(host, "download"))
            storage = self.storage_bytes() - storage
            # nginx reports each range as its request ends: a moment after
            # the client has it.
            last = counted.get("host-a", before)["bytes"]
            now = harness.wait_for(
                "%s's ranges counted" % host,
                lambda: (lambda d: d if d["bytes"][source] - last[source] >= SIZE else None)(self.downloads()))
            counted[host] = now
            got = {k: now["bytes"][k] - last[k] for k in ("local_cache", "tier", "internet")}
            print("%s: %d bytes from storage; counted %s" % (host, storage, got))
            # What came from the internet is what the storage served.
            self.assertEqual(got["internet"], storage)
            self.assertEqual(got["tier"], 0)
            self.assertLess(got[source], SIZE + SIZE // 50)
        self.assertEqual(counted["host-b"]["bytes"]["internet"], counted["host-a"]["bytes"]["internet"])
        self.assertEqual(counted["host-b"]["requests"]["refused"], before["requests"]["refused"])
        self.assertGreaterEqual(counted["host-b"]["hit_ratio"], 0.45)
        # The cache holds the file (a reload walks it again).
        self.dedupd.proc.p.send_signal(signal.SIGHUP)
        cache = harness.wait_for("a walk of the cache that finds the file",
                                 lambda: (lambda c: c if c and c.get("known") and c["bytes"] >= SIZE else None)(
                                     self.downloads()["cache"]), timeout=30)
        self.assertEqual(cache["dir"], self.ep.cache_dir)
        self.assertGreater(cache["files"], 0)
        # The same in dedupctl status and /metrics.
        doc = json.loads(self.dedupd.ctl("--json", "status").stdout)
        self.assertGreaterEqual(doc["xet_downloads"]["bytes"]["local_cache"],
                                counted["host-b"]["bytes"]["local_cache"])
        text = self.dedupd.ctl("status").stdout
        self.assertRegex(text, r"Downloads +\S+ \S+ from the local cache, 0 B from the tier, \S+ \S+ from the internet")
        self.assertIn("Download cache", text)
        _, metrics = self.dedupd.get("/metrics")
        line = [l for l in metrics.decode().splitlines()
                if l.startswith('dedupd_xet_download_bytes_total{source="local_cache"} ')]
        self.assertEqual(len(line), 1, metrics[:2000])
        self.assertGreaterEqual(int(line[0].split()[1]), SIZE)

    @harness.once("a reload of dedupd's settings; no client of its own")
    def test_downloads_turned_off_by_a_reload_go_direct(self):
        _, file_hash = self.uploaded(MIB, 76)
        rewritten = self.reconstruction(file_hash)
        entry = next(iter(rewritten["fetch_info"].values()))[0]
        uri = entry["url"][len(self.ep.cas_url):]
        rng = "bytes=%d-%d" % (entry["url_range"]["start"], entry["url_range"]["end"])
        self.assertEqual(self.cas_get(uri, {"Range": rng})[0], 206)
        # xet_endpoint is the file's last section (harness.endpoint_yaml).
        with open(self.dedupd.config, "a") as f:
            f.write("  downloads:\n    enabled: false\n")
        self.dedupd.proc.p.send_signal(signal.SIGHUP)
        harness.wait_for("the reload", lambda: not self.downloads()["enabled"])
        # The CAS's own URLs, and the range URL handed out before refused.
        for entries in self.reconstruction(file_hash)["fetch_info"].values():
            for e in entries:
                self.assertIn("Signature=", e["url"])
        self.assertEqual(self.cas_get(uri, {"Range": rng})[0], 403)
        self.assertIn("off (xet_endpoint.downloads.enabled)", self.dedupd.ctl("status").stdout)

if __name__ == "__main__":
    harness.main()
