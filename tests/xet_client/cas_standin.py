#!/usr/bin/env python3
"""A local CAS server for the real Xet client (hf_xet) in tests.

It implements what xet-core calls on upload and download, as hub-docs' Xet
protocol pages describe it (docs/xet/api.md, upload-protocol.md,
download-protocol.md), on the routes of each client release
(docs/XET-ENDPOINT.md, "Which clients": hf_xet 1.1.0-1.1.9 unversioned and
singular, 1.1.10-1.2.x unversioned plural, 1.3.0 on /v1/), and nothing more:

  POST /v1/xorbs/<prefix>/<hash>       store a xorb after checking its chunk
       /xorbs/..., /xorb/...           headers; count its chunk bytes
  POST /v1/shards, /shards,            check the shard with `dedupctl verify`,
       /shard/<prefix>/<hash>          then register its files and xorbs:
                                       {"result": 1}, or a 400 when refused
  POST /v2/shards                      the same, answered as the Hub's CAS
                                       does: NDJSON frames under HTTP 200, a
                                       refusal being a {"type": "error"} frame
                                       (so a status alone cannot tell it)
  GET  /v1/chunks/<prefix>/<hash>      global dedup: asked of a dedupd over
       /chunks/..., /chunk/...         its Unix socket, or 404 without one
  GET  /v2/reconstructions/<file>      a file's terms and fetch ranges
  GET  /v1/reconstructions/<file>      the same in the v1 shape
       /reconstructions/<file>, /reconstruction/<file>
  and on a second port, "storage" (the Hub's CAS hands out presigned URLs
  of its CDN: docs/XET-ENDPOINT.md, "Downloads"):
  GET  /xorbs/default/<hash>?X-Xet-Signed-Range=bytes%3D<s>-<e>[,...]
       &Expires=<unix s>&Signature=<hmac>
                                       xorb bytes of a signed range: 403 for
                                       a bad signature, a past expiry, or a
                                       Range header that is not the signed
                                       one (or, for a URL signed for several
                                       ranges, not one of them); else 206 and
                                       Content-Range. Bytes served are
                                       counted per xorb and range.
  HEAD /v1/xorbs/<prefix>/<hash> (and the older forms), HEAD /v1/files/<file>
  POST /v1/telemetry                   hf_xet's usage reports: kept (the
                                       bodies' sizes), answered 200
  GET  /v2/file-chunk-hashes/<file>    (hf_xet 1.6.0 on, for edits in place)
                                       not served: a 501 naming the file and
                                       the X-Range-Dirty header it was given,
                                       so a test sees what reached it

It is not a mock of dedupd: the real dedupd answers the chunk queries. The
test reads what it received at GET /_standin/state and empties the counters
with POST /_standin/reset (stored xorbs and files stay); POST
/_standin/forget-xorbs (hashes, one a line) makes it lose xorbs; POST
/_standin/forward with a socket path as the body changes which dedupd
answers chunk queries. POST /_standin/hold-queries with a count N as the
body holds the answers to the next N chunk queries (each after dedupd or its
404 was had) until POST /_standin/release: the client's file waits for its
query, so a test can act while an upload is known to be under way. POST
/_standin/url-lifetime with seconds as the body sets how long the storage
URLs of later reconstructions live (default 3600, as hub-docs' example);
POST /_standin/storage-damage with a count N flips a byte in the middle of
each of the next N storage answers (their length kept); POST
/_standin/storage-rate with bytes a second paces each storage answer at
that rate (a CDN's connection rather than loopback; 0, the default: as
fast as it can); POST /_standin/storage-hold with a count N makes each
storage answer stop after its first N bytes until POST /_standin/release
(0: none), so a test can act while a range is known to be part sent; the
storage's "sent" in the state is the bytes it has written so far (its
"bytes" count each range whole as its answer starts). POST
/_standin/synthetic-file with a count N makes a file of N terms, each the
whole of a xorb of its own (1,024 chunks of 64 KiB, as a 64 GiB file for
N = 1,000), whose bytes the storage does not have: its reconstruction's
shape and size are a real one's, for timing what handles the answer
(bench_xet_download.py). Its answers (v1, v2) are made once, at the first
ask, and served as made (their URLs living the url-lifetime from then), so
the stand-in's own time is a copy; answers {"file": its hash}.
Every request is
logged as one JSON line to --log, so a test failure shows the whole
conversation.
"""

import argparse
import hashlib
import hmac
import http.client
import http.server
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

HASH = r"[0-9a-f]{64}"
# Each route in every form a client release asks it (module docstring).
XORB_ROUTE = r"/(?:v1/xorbs|xorbs|xorb)/([^/]+)/(%s)" % HASH
SHARD_ROUTE = r"/(?:v1/shards|shards|shard/[^/]+/%s)" % HASH
CHUNK_ROUTE = r"/(?:v1/chunks|chunks|chunk)/([^/]+)/([0-9A-Fa-f]{64})"
RECONSTRUCTION_ROUTE = r"/(v2/reconstructions|v1/reconstructions|reconstructions|reconstruction)/(%s)" % HASH
CHUNK_HEADER = 8
XORB_FOOTER_MAGIC = b"XETBLOB"


class XorbError(ValueError):
    pass


def parse_xorb(body):
    """Chunk headers of a serialized xorb: a list of (offset, compressed,
    uncompressed) and the length the chunks take. A xorb may end in a footer
    (xet-core's CasObjectInfo, starting "XETBLOB"); anything else after the
    chunks is an error."""
    chunks = []
    pos = 0
    while pos < len(body):
        if body[pos:pos + len(XORB_FOOTER_MAGIC)] == XORB_FOOTER_MAGIC:
            break
        if pos + CHUNK_HEADER > len(body):
            raise XorbError("chunk header at %d runs past the end (%d bytes)" % (pos, len(body)))
        version = body[pos]
        compressed = int.from_bytes(body[pos + 1:pos + 4], "little")
        scheme = body[pos + 4]
        uncompressed = int.from_bytes(body[pos + 5:pos + 8], "little")
        if version != 0:
            raise XorbError("chunk %d at %d: version %d, expected 0" % (len(chunks), pos, version))
        if scheme not in (0, 1, 2):
            raise XorbError("chunk %d at %d: compression %d unknown" % (len(chunks), pos, scheme))
        if uncompressed == 0 or uncompressed > 128 * 1024:
            raise XorbError("chunk %d at %d: %d bytes unpacked" % (len(chunks), pos, uncompressed))
        end = pos + CHUNK_HEADER + compressed
        if end > len(body):
            raise XorbError("chunk %d at %d: %d bytes run past the end" % (len(chunks), pos, compressed))
        chunks.append((pos, compressed, uncompressed))
        pos = end
    if not chunks:
        raise XorbError("no chunks")
    return chunks, pos


class Store:
    """What the stand-in keeps: xorbs on disk, files from shards, counters."""

    def __init__(self, root, dedupctl):
        self.root = root
        self.dedupctl = dedupctl
        self.lock = threading.Lock()
        os.makedirs(os.path.join(root, "xorbs"), exist_ok=True)
        os.makedirs(os.path.join(root, "shards"), exist_ok=True)
        os.makedirs(os.path.join(root, "replies"), exist_ok=True)
        self.stored = {"shards": 0, "replies": 0}  # bodies kept so far, by folder
        self.xorb_chunks = {}  # hash -> [(offset, compressed, uncompressed)]
        self.files = {}  # file hash -> [{"xorb", "start", "end", "unpacked"}]
        self.sha256 = {}  # sha256 hex -> file hash, from the shards' file metadata (what a Hub links)
        # Storage (the second port): its URL, set once it listens, the key
        # its URLs are signed with, and how long they live.
        self.storage_url = None
        self.storage_secret = os.urandom(32)
        self.url_lifetime = 3600
        self.storage_damage = 0  # storage answers still to serve with a byte flipped
        self.storage_rate = 0  # bytes a second each storage answer is sent at (0: as fast as it can)
        self.storage_hold = 0  # bytes after which each storage answer waits for release (0: none)
        self.storage_released = threading.Event()
        self.synthetic = {}  # file hash -> {route's version: answer bytes}, made once
        self.reset()

    def reset(self):
        with self.lock:
            self.received_xorbs = {}  # hash -> {"chunks", "bytes", "serialized"}
            self.received_shards = []  # inspect documents
            self.chunk_queries = []  # {"hash", "status"}
            self.rejected = []  # {"what", "why"}
            self.telemetry = []  # {"bytes", "content_type"}
            self.requests = 0
            self.storage_served = {}  # xorb -> {"s-e": bytes served}
            self.storage_refused = []  # {"xorb", "why"}
            self.storage_sent = 0  # bytes the storage's answers have written
            self.release_held()

    def hold_queries(self, n):
        with self.lock:
            self.release_held()
            self.to_hold = n
            self.held = []  # the held queries' hashes
            self.released = threading.Event()

    def release_held(self):
        """Lets every held query and storage answer go on; later ones are
        not held."""
        released = getattr(self, "released", None)
        self.to_hold, self.held = 0, getattr(self, "held", [])
        if released is not None:
            released.set()
        self.storage_hold = 0
        self.storage_released.set()

    def maybe_hold(self, chunk_hash):
        """Blocks a query while holding is on (hold_queries) and its count
        lasts."""
        with self.lock:
            if self.to_hold <= 0:
                return
            self.to_hold -= 1
            self.held.append(chunk_hash)
            released = self.released
        released.wait(300)

    def state(self):
        with self.lock:
            return {
                "xorbs": self.received_xorbs,
                "xorb_chunk_bytes": sum(x["bytes"] for x in self.received_xorbs.values()),
                "xorb_chunks": sum(x["chunks"] for x in self.received_xorbs.values()),
                "shards": self.received_shards,
                "chunk_queries": self.chunk_queries,
                "rejected": self.rejected,
                "telemetry": self.telemetry,
                "held": list(self.held),
                "files": sorted(self.files),
                "requests": self.requests,
                "storage": {"bytes": sum(sum(r.values()) for r in self.storage_served.values()),
                            "xorbs": self.storage_served, "refused": self.storage_refused,
                            "sent": self.storage_sent},
            }

    def put_xorb(self, xorb_hash, body):
        chunks, _ = parse_xorb(body)
        path = os.path.join(self.root, "xorbs", xorb_hash)
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(body)
        os.replace(tmp, path)
        with self.lock:
            inserted = xorb_hash not in self.xorb_chunks
            self.xorb_chunks[xorb_hash] = chunks
            self.received_xorbs[xorb_hash] = {
                "chunks": len(chunks),
                "bytes": sum(c[2] for c in chunks),
                "serialized": len(body),
            }
        return inserted

    def put_shard(self, body):
        """Checks the shard with dedupd's own verifier, then registers it.
        Returns an error text or None."""
        path = self.keep("shards", body)
        verify = subprocess.run([self.dedupctl, "verify", path], capture_output=True, text=True)
        if verify.returncode != 0:
            return "dedupctl verify: " + (verify.stdout + verify.stderr).strip()
        inspect = subprocess.run([self.dedupctl, "inspect", "--json", path], capture_output=True, text=True)
        if inspect.returncode != 0:
            return "dedupctl inspect: " + inspect.stderr.strip()
        doc = json.loads(inspect.stdout)
        with self.lock:
            # Every xorb the shard lists must have arrived whole: its chunk
            # count and unpacked sizes agree with the chunk headers.
            for x in doc["xorbs"]:
                have = self.xorb_chunks.get(x["hash"])
                if have is None:
                    return "shard lists xorb %s, which was never uploaded" % x["hash"]
                sizes = [c["unpacked_bytes"] for c in x["chunks"]]
                if sizes != [c[2] for c in have]:
                    return "xorb %s: the shard's chunk sizes differ from the xorb's headers" % x["hash"]
            for f in doc["files"]:
                terms = []
                for t in f["terms"]:
                    if t["xorb"] not in self.xorb_chunks:
                        return "file %s names xorb %s, which is not stored" % (f["hash"], t["xorb"])
                    terms.append({"xorb": t["xorb"], "start": t["chunk_start"], "end": t["chunk_end"],
                                  "unpacked": t["unpacked_bytes"]})
                self.files[f["hash"]] = terms
                if f.get("sha256"):
                    self.sha256[f["sha256"]] = f["hash"]
            doc["path"] = path
            self.received_shards.append(doc)
        return None

    def save_reply(self, body):
        """Keeps a global-dedup reply as sent, so a test can compare it with
        what the client saved in its cache."""
        return self.keep("replies", body)

    def keep(self, folder, body):
        """Writes a body as the next numbered file of `folder`; its path."""
        with self.lock:
            self.stored[folder] += 1
            n = self.stored[folder]
        path = os.path.join(self.root, folder, "%04d.mdb" % n)
        with open(path, "wb") as f:
            f.write(body)
        return path

    def signature(self, path, signed_range, expires):
        msg = ("%s\n%s\n%d" % (path, signed_range, expires)).encode()
        return hmac.new(self.storage_secret, msg, hashlib.sha256).hexdigest()

    def sign(self, xorb, signed_range, expires):
        """A presigned-style storage URL, shaped as the Hub's CloudFront
        URLs (the signed range and the expiry readable in the query)."""
        path = "/xorbs/default/%s" % xorb
        return "%s%s?%s" % (self.storage_url, path, urllib.parse.urlencode(
            {"X-Xet-Signed-Range": signed_range, "Expires": expires,
             "Signature": self.signature(path, signed_range, expires)}))

    def storage_check(self, path, query, range_header):
        """None when a storage request may be served, else why not."""
        q = urllib.parse.parse_qs(query, keep_blank_values=True)
        try:
            signed, expires, sig = q["X-Xet-Signed-Range"][0], int(q["Expires"][0]), q["Signature"][0]
        except (KeyError, ValueError):
            return "no signed range, expiry or signature"
        if not hmac.compare_digest(sig, self.signature(path, signed, expires)):
            return "bad signature"
        if expires <= time.time():
            return "expired"
        allowed = {signed} | {"bytes=" + r for r in signed[len("bytes="):].split(",")}
        if range_header not in allowed:
            return "Range %r is not the signed %r" % (range_header, signed)
        return None

    def serve_storage(self, xorb_hash, start, end):
        """The bytes [start, end] of a stored xorb, counted; None when they
        are not all there."""
        try:
            with open(os.path.join(self.root, "xorbs", xorb_hash), "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return None, 0
        if end >= len(data) or end < start:
            return None, len(data)
        body = data[start:end + 1]
        with self.lock:
            served = self.storage_served.setdefault(xorb_hash, {})
            key = "%d-%d" % (start, end)
            served[key] = served.get(key, 0) + end + 1 - start
            if self.storage_damage > 0:
                # A storage (or a network) that damages bytes: one flipped
                # in the middle, the length kept.
                self.storage_damage -= 1
                middle = len(body) // 2
                body = body[:middle] + bytes([body[middle] ^ 0x40]) + body[middle + 1:]
        return body, len(data)

    def synthetic_file(self, terms):
        """A file of `terms` whole xorbs of 1,024 chunks each (chunk lists
        only: nothing to serve); its hash."""
        chunk = (CHUNK_HEADER + 65536, 65536)
        file_hash = hashlib.sha256(b"synthetic file %d" % terms).hexdigest()
        with self.lock:
            entries = []
            for i in range(terms):
                xorb = hashlib.sha256(b"synthetic xorb %d of %d" % (i, terms)).hexdigest()
                self.xorb_chunks[xorb] = [(k * chunk[0], chunk[0] - CHUNK_HEADER, chunk[1]) for k in range(1024)]
                entries.append({"xorb": xorb, "start": 0, "end": 1024, "unpacked": 1024 * chunk[1]})
            self.files[file_hash] = entries
            self.synthetic[file_hash] = {}
        return file_hash

    def answer(self, file_hash, v2, byte_range=None):
        """The reconstruction answer's bytes (JSON), None or "unsatisfiable"
        as reconstruction() says; a synthetic file's whole answer as first
        made."""
        made = self.synthetic.get(file_hash)
        if made is not None and byte_range is None:
            if v2 not in made:
                made[v2] = json.dumps(self.reconstruction(file_hash, v2)).encode()
            return made[v2]
        doc = self.reconstruction(file_hash, v2, byte_range)
        return doc if doc is None or isinstance(doc, str) else json.dumps(doc).encode()

    def reconstruction(self, file_hash, v2, byte_range=None):
        """The reconstruction of a file, or of the terms that cover
        byte_range (first, last inclusive, as a Range header says) with the
        offset of its first byte in the first of them; None for an unknown
        file, "unsatisfiable" for a range starting past its end (416, which
        ends the segment queries of hf_xet before 1.3)."""
        with self.lock:
            terms = self.files.get(file_hash)
            if terms is None:
                return None
            offset_into_first = 0
            if byte_range is not None:
                first, last = byte_range
                if first >= sum(t["unpacked"] for t in terms):
                    return "unsatisfiable"
                picked, at = [], 0
                for t in terms:
                    if at + t["unpacked"] > first and at <= last:
                        if not picked:
                            offset_into_first = first - at
                        picked.append(t)
                    at += t["unpacked"]
                terms = picked
            out_terms, fetch, ranges = [], {}, {}
            for t in terms:
                chunks = self.xorb_chunks[t["xorb"]]
                first = chunks[t["start"]]
                last = chunks[t["end"] - 1]
                byte_start = first[0]
                byte_end = last[0] + CHUNK_HEADER + last[1] - 1  # inclusive
                out_terms.append({"hash": t["xorb"], "unpacked_length": t["unpacked"],
                                  "range": {"start": t["start"], "end": t["end"]}})
                r = ((t["start"], t["end"]), (byte_start, byte_end))
                if r not in ranges.setdefault(t["xorb"], []):
                    ranges[t["xorb"]].append(r)
            expires = int(time.time()) + self.url_lifetime
            for xorb, rs in ranges.items():
                rs = merged_ranges(rs)
                if v2:
                    # As the Hub's CAS: one URL per xorb, signed for all its
                    # ranges (xet-core's XorbMultiRangeFetch).
                    signed = "bytes=" + ",".join("%d-%d" % b for _, b in rs)
                    fetch[xorb] = [{"url": self.sign(xorb, signed, expires),
                                    "ranges": [{"chunks": {"start": c[0], "end": c[1]},
                                                "bytes": {"start": b[0], "end": b[1]}} for c, b in rs]}]
                else:
                    fetch[xorb] = [{"range": {"start": c[0], "end": c[1]},
                                    "url": self.sign(xorb, "bytes=%d-%d" % b, expires),
                                    "url_range": {"start": b[0], "end": b[1]}} for c, b in rs]
            doc = {"offset_into_first_range": offset_into_first, "terms": out_terms}
            doc["xorbs" if v2 else "fetch_info"] = fetch
            return doc


def merged_ranges(ranges):
    """A xorb's ((chunk start, chunk end), (byte start, byte end)) ranges,
    sorted, those that overlap or touch made one fetch entry (terms side by
    side in one xorb, as the edits of a revision leave them in its new
    xorb). hf_xet 1.3-1.4 need it, direct or through the endpoint: a term
    starting where an entry ends is matched to that entry (a `<=` on its
    exclusive end) and refused as "extending beyond" it. That the Hub's CAS
    merges so is assumed (those clients download revisions from it), not
    checked against it."""
    out = []
    for (c0, c1), (b0, b1) in sorted(ranges):
        if out and c0 <= out[-1][0][1]:
            (p0, p1), (q0, q1) = out[-1]
            out[-1] = ((p0, max(p1, c1)), (q0, max(q1, b1)))
        else:
            out.append(((c0, c1), (b0, b1)))
    return out


def ask_dedupd(sock_path, prefix, chunk_hash, timeout=5.0):
    """(status, body) of dedupd's global-dedup answer over its socket."""
    conn = http.client.HTTPConnection("localhost", timeout=timeout)
    conn.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.sock.settimeout(timeout)
    try:
        conn.sock.connect(sock_path)
        conn.request("GET", "/v1/chunks/%s/%s" % (prefix, chunk_hash))
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def make_handler(store, args, log):
    log_lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # The headers and the body are two writes: with Nagle's algorithm
        # the body waited for the ACK of the headers, which the peer delays
        # (40 ms on Linux) now and then, a stall that was the p99 of every
        # answer measured through it (bench_xet_download.py).
        disable_nagle_algorithm = True

        def log_message(self, fmt, *a):  # the JSON log below says it all
            pass

        def note(self, status, **extra):
            entry = {"t": round(time.time(), 6), "method": self.command, "path": self.path, "status": status}
            entry.update(extra)
            with log_lock:
                log.write(json.dumps(entry) + "\n")
                log.flush()

        def reply(self, status, body=b"", ctype="application/json", headers=None, write=None, **extra):
            if isinstance(body, (dict, list)):
                body = json.dumps(body).encode()
            elif isinstance(body, str):
                body = body.encode()
            # Noted before the answer goes out: a test that reads the log
            # once its request is answered must find the request there.
            self.note(status, **extra)
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            if self.command == "HEAD":
                return
            (write or self.wfile.write)(body)

        def write_storage_body(self, body):
            """A storage answer's body: paced (storage-rate), stopped after
            its first bytes until released (storage-hold), each piece
            counted as sent once written."""
            with store.lock:
                rate, hold, released = store.storage_rate, store.storage_hold, store.storage_released
            # Paced as a CDN's connection: a piece at a time, each when the
            # rate says it is due.
            t0, piece, at = time.monotonic(), 256 * 1024, 0
            while at < len(body):
                if hold and at == hold:
                    released.wait(300)
                end = min(len(body), at + piece)
                if hold and at < hold:
                    end = min(end, hold)
                if rate:
                    wait = t0 + at / rate - time.monotonic()
                    if wait > 0:
                        time.sleep(wait)
                self.wfile.write(body[at:end])
                with store.lock:
                    store.storage_sent += end - at
                at = end

        def body(self):
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                parts = []
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                    if size == 0:
                        self.rfile.readline()
                        return b"".join(parts)
                    parts.append(self.rfile.read(size))
                    self.rfile.readline()
            return self.rfile.read(int(self.headers.get("Content-Length", "0")))

        def do_POST(self):
            with store.lock:
                store.requests += 1
            data = self.body()
            path = self.path.split("?", 1)[0]
            m = re.fullmatch(XORB_ROUTE, path)
            if m:
                try:
                    inserted = store.put_xorb(m.group(2), data)
                except XorbError as e:
                    with store.lock:
                        store.rejected.append({"what": "xorb " + m.group(2), "why": str(e)})
                    return self.reply(400, {"error": str(e)})
                return self.reply(200, {"was_inserted": inserted}, bytes_in=len(data))
            if re.fullmatch(SHARD_ROUTE, path) or path == "/v2/shards":
                err = store.put_shard(data)
                if err:
                    with store.lock:
                        store.rejected.append({"what": "shard", "why": err, "route": path})
                if path == "/v2/shards":
                    # As the Hub's CAS (xet-core's shard_upload_v2.rs reads
                    # it): the status is 200 whatever happens, and the last
                    # frame says whether the shard was taken.
                    frames = [{"type": "validating", "verified": 0, "total": 1}]
                    frames.append({"type": "error", "message": err, "retryable": False} if err else
                                  {"type": "result"})
                    return self.reply(200, "".join(json.dumps(f) + "\n" for f in frames), "application/x-ndjson",
                                      bytes_in=len(data), refused=bool(err))
                if err:
                    return self.reply(400, {"error": err})
                return self.reply(200, {"result": 1}, bytes_in=len(data))
            if path == "/_standin/reset":
                store.reset()
                return self.reply(200, {})
            if path == "/_standin/forget-xorbs":
                # The CAS loses xorbs (a garbage collection, a deleted
                # repository): a shard that names one is refused from now on.
                # The body lists their hashes, one a line.
                with store.lock:
                    for h in data.decode().split():
                        store.xorb_chunks.pop(h, None)
                return self.reply(200, {})
            if path == "/v1/telemetry":
                with store.lock:
                    store.telemetry.append({"bytes": len(data), "content_type": self.headers.get("Content-Type")})
                return self.reply(200, {}, bytes_in=len(data))
            if path == "/_standin/url-lifetime":
                with store.lock:
                    store.url_lifetime = int(data)
                return self.reply(200, {})
            if path == "/_standin/storage-rate":
                with store.lock:
                    store.storage_rate = int(data)
                return self.reply(200, {})
            if path == "/_standin/storage-hold":
                with store.lock:
                    store.storage_hold = int(data)
                    store.storage_released = threading.Event()
                return self.reply(200, {})
            if path == "/_standin/storage-damage":
                with store.lock:
                    store.storage_damage = int(data)
                return self.reply(200, {})
            if path == "/_standin/synthetic-file":
                return self.reply(200, {"file": store.synthetic_file(int(data))})
            if path == "/_standin/hold-queries":
                store.hold_queries(int(data))
                return self.reply(200, {})
            if path == "/_standin/release":
                with store.lock:
                    store.release_held()
                return self.reply(200, {})
            if path == "/_standin/forward":
                # Another dedupd answers chunk queries from now on (the body
                # is its socket path; empty: none, every query is a 404).
                args.dedupd_socket = data.decode() or None
                return self.reply(200, {})
            return self.reply(404, {"error": "no route"})

        def do_HEAD(self):
            m = re.fullmatch(XORB_ROUTE, self.path)
            if m:
                return self.reply(200 if m.group(2) in store.xorb_chunks else 404)
            m = re.fullmatch(r"/v1/files/(%s)" % HASH, self.path)
            if m:
                terms = store.files.get(m.group(1))
                if terms is None:
                    return self.reply(404)
                return self.reply(200, headers={"X-File-Size": str(sum(t["unpacked"] for t in terms))})
            return self.reply(404)

        def do_GET(self):
            with store.lock:
                store.requests += 1
            path = self.path.split("?", 1)[0]
            m = re.fullmatch(CHUNK_ROUTE, path)
            if m:
                prefix, chunk = m.group(1), m.group(2).lower()
                status, body = 404, b""
                if args.dedupd_socket:
                    try:
                        status, body = ask_dedupd(args.dedupd_socket, prefix, chunk)
                    except OSError as e:
                        status, body = 503, str(e).encode()
                store.maybe_hold(chunk)
                saved = store.save_reply(body) if status == 200 else None
                with store.lock:
                    store.chunk_queries.append({"hash": chunk, "prefix": prefix, "status": status,
                                                "bytes": len(body), "saved": saved})
                if status == 200:
                    return self.reply(200, body, "application/octet-stream")
                return self.reply(status, b"", "text/plain")
            m = re.fullmatch(RECONSTRUCTION_ROUTE, path)
            if m:
                rng = re.fullmatch(r"bytes=(\d+)-(\d+)", self.headers.get("Range", ""))
                doc = store.answer(m.group(2), m.group(1) == "v2/reconstructions",
                                   (int(rng.group(1)), int(rng.group(2))) if rng else None)
                if doc is None:
                    return self.reply(404, {"error": "file not found"})
                if doc == "unsatisfiable":
                    return self.reply(416, {"error": "range not satisfiable"})
                return self.reply(200, doc)
            m = re.fullmatch(r"/v2/file-chunk-hashes/(%s)" % HASH, path)
            if m:
                return self.reply(501, {"error": "not served by the stand-in", "file": m.group(1),
                                        "x_range_dirty": self.headers.get("X-Range-Dirty"),
                                        "query": self.path[len(path):]})
            if path == "/_standin/state":
                return self.reply(200, store.state())
            return self.reply(404, {"error": "no route"})

    return Handler


def make_storage_handler(store, log):
    """The storage port: presigned-style range reads, nothing else."""
    base = make_handler(store, None, log)

    class StorageHandler(base):
        def do_POST(self):
            self.body()
            return self.reply(405, {"error": "storage is read only"})

        def do_HEAD(self):
            return self.reply(405)

        def do_GET(self):
            path, _, query = self.path.partition("?")
            m = re.fullmatch(r"/xorbs/default/(%s)" % HASH, path)
            if not m:
                return self.reply(404, {"error": "no route"})
            xorb = m.group(1)
            rng = self.headers.get("Range", "")
            why = store.storage_check(path, query, rng)
            if why is None and not re.fullmatch(r"bytes=\d+-\d+", rng):
                why = "Range %r is not one range" % rng
            if why:
                with store.lock:
                    store.storage_refused.append({"xorb": xorb, "why": why})
                return self.reply(403, {"error": why}, storage=True)
            start, end = (int(x) for x in rng[len("bytes="):].split("-"))
            data, total = store.serve_storage(xorb, start, end)
            if data is None:
                return self.reply(416 if total else 404, b"", "text/plain", storage=True)
            return self.reply(206, data, "application/octet-stream",
                              {"Content-Range": "bytes %d-%d/%d" % (start, end, total)},
                              write=self.write_storage_body, storage=True)

    return StorageHandler


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--store", required=True, help="directory for xorbs, shards and the log")
    p.add_argument("--dedupctl", required=True, help="the dedupctl that verifies and inspects shards")
    p.add_argument("--dedupd-socket", help="dedupd's socket, asked for global dedup (else 404)")
    p.add_argument("--port-file", required=True, help="where the chosen port is written")
    p.add_argument("--log", help="request log (JSON lines); default STORE/requests.jsonl")
    args = p.parse_args()
    store = Store(args.store, args.dedupctl)
    log = open(args.log or os.path.join(args.store, "requests.jsonl"), "a")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), make_handler(store, args, log))
    server.daemon_threads = True
    storage = http.server.ThreadingHTTPServer(("127.0.0.1", 0), make_storage_handler(store, log))
    storage.daemon_threads = True
    store.storage_url = "http://127.0.0.1:%d" % storage.server_address[1]
    threading.Thread(target=storage.serve_forever, daemon=True).start()
    with tempfile.NamedTemporaryFile("w", dir=os.path.dirname(os.path.abspath(args.port_file)),
                                     delete=False) as f:
        f.write(str(server.server_address[1]))
    os.replace(f.name, args.port_file)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
