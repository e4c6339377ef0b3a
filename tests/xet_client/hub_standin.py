#!/usr/bin/env python3
"""A Hub and its CAS for the real clients (huggingface_hub and hf_xet) in
tests, over HTTPS: the upstream the local Xet endpoint forwards to
(docs/XET-ENDPOINT.md).

Two servers in one process, on two ports of 127.0.0.1, as the Hub and its
CAS are two hosts:

  the CAS   cas_standin.py's handler and store, unchanged: xorbs, shards,
            global dedup (asked of a dedupd, or 404), reconstructions
  the Hub   the routes huggingface_hub 2.4.0 calls for HfApi.upload_file,
            upload_folder, `hf upload` and hf_hub_download with hf_xet
            installed (docs/XET-ENDPOINT.md, "What the client asks"), which
            cover 1.18.0's and 0.36.2's too (0.36.2 asks the LFS batch
            first, and takes its "xet" for the Xet upload):
    POST /api/repos/create                                  (`hf upload`)
    POST /api/validate-yaml                   (upload_folder, with README.md)
    POST /api/{type}s/{repo}/preupload/{rev}                upload modes
    GET  /api/{type}s/{repo}/xet-{read,write}-token/{rev}   CAS URL + token
    POST /api/{type}s/{repo}/commit/{rev}                   ndjson commit
    HEAD/GET /[{type}s/]{repo}/resolve/{rev}/{path}         file metadata
    POST /[{type}s/]{repo}.git/info/lfs/objects/batch       answers "xet", with
                                        each object's upload action (CAS URL
                                        and token in its headers)
    GET  /api/{type}s/{repo}[/revision/{rev}]               repo info

Every Hub route but repo creation wants `Authorization: Bearer <--token>`;
the CAS wants the access token the Hub gave (`--access-token`). A file
committed as an LFS file must have arrived at the CAS in a shard whose
metadata gives its sha256, as the Hub links them. GET /_standin/hub (on the
Hub) says what the Hub received; the CAS keeps its /_standin/state. Each
server logs one JSON line per request (hub.jsonl, requests.jsonl).
"""

import argparse
import base64
import hashlib
import json
import os
import re
import ssl
import sys
import tempfile
import threading
import time
import http.server

import cas_standin

REPO = r"(?:(?P<type>datasets|spaces|models)/)?(?P<repo>[\w.-]+/[\w.-]+)"
API_REPO = r"/api/(?P<type>models|datasets|spaces)/(?P<repo>[\w.-]+/[\w.-]+)"


class Hub:
    """Repositories: revision name -> commit, commit -> {path: entry}."""

    def __init__(self, store, token, access_token, cas_url):
        self.store = store
        self.token = token
        self.access_token = access_token
        self.cas_url = cas_url
        self.lock = threading.Lock()
        self.repos = {}  # (type, repo) -> {"refs": {name: sha}, "commits": {sha: {path: entry}}}
        self.routes = {}  # route name -> count
        self.unauthorized = 0

    def count(self, route):
        with self.lock:
            self.routes[route] = self.routes.get(route, 0) + 1

    def repo(self, kind, name, create=False):
        with self.lock:
            key = (kind, name)
            if key not in self.repos and create:
                self.repos[key] = {"refs": {"main": None}, "commits": {None: {}}}
            return self.repos.get(key)

    def resolve(self, repo, rev):
        """(commit sha, files) of a branch name or a commit sha, or None."""
        with self.lock:
            sha = repo["refs"].get(rev, rev)
            if sha not in repo["commits"]:
                return None
            return sha, repo["commits"][sha]

    def commit(self, repo, rev, lines):
        """Applies an ndjson commit; the new sha, or an error text."""
        with self.lock:
            parent = repo["refs"].get(rev)
            if rev not in repo["refs"]:
                return None, "revision %s not found" % rev
            files = dict(repo["commits"][parent])
            for line in lines:
                key, value = line["key"], line["value"]
                if key == "header":
                    continue
                if key == "file":
                    data = base64.b64decode(value["content"])
                    files[value["path"]] = {"size": len(data), "content": data,
                                            "sha256": hashlib.sha256(data).hexdigest()}
                elif key == "lfsFile":
                    file_hash = self.store.sha256.get(value["oid"])
                    if file_hash is None:
                        return None, "LFS file %s (sha256 %s) was never uploaded" % (value["path"], value["oid"])
                    files[value["path"]] = {"size": value["size"], "sha256": value["oid"], "xet": file_hash}
                elif key == "deletedFile":
                    files.pop(value["path"], None)
                else:
                    return None, "commit key %r not handled by the stand-in" % key
            sha = hashlib.sha1(json.dumps([parent, sorted(files), time.time()], default=str).encode()).hexdigest()
            repo["commits"][sha] = files
            repo["refs"][rev] = sha
            return sha, None

    def state(self):
        with self.lock:
            return {"routes": dict(self.routes), "unauthorized": self.unauthorized,
                    "repos": {"%s/%s" % k: {"refs": v["refs"],
                                            "files": {p: {kk: vv for kk, vv in e.items() if kk != "content"}
                                                      for p, e in v["commits"][v["refs"]["main"]].items()}}
                              for k, v in self.repos.items()}}


def make_hub_handler(hub, store, args, log):
    base = cas_standin.make_handler(store, args, log)  # its reply, body and note

    class HubHandler(base):
        def authorized(self, want):
            if self.headers.get("Authorization") == "Bearer " + want:
                return True
            with hub.lock:
                hub.unauthorized += 1
            self.reply(401, {"error": "Invalid credentials in Authorization header"})
            return False

        def authorized_repo(self, m):
            """The repository route `m` names, for a caller with the Hub
            token; None once the refusal (401, or 404 as the Hub) is sent."""
            if not self.authorized(hub.token):
                return None
            repo = hub.repo(m["type"], m["repo"])
            if repo is None:
                self.reply(404, {"error": "Repository not found"}, headers={"X-Error-Code": "RepoNotFound"})
            return repo

        def hub_url(self):
            # The Hub writes its public URL into Link headers and commit
            # URLs; the client puts its HF_ENDPOINT in place of that prefix.
            return args.public_url

        def do_POST(self):
            path = self.path.split("?", 1)[0]
            data = self.body()
            if path == "/api/repos/create":
                hub.count("create")
                if not self.authorized(hub.token):
                    return
                doc = json.loads(data)
                kind = (doc.get("type") or "model") + "s"
                name = "%s/%s" % (doc["organization"], doc["name"]) if doc.get("organization") else doc["name"]
                existed = hub.repo(kind, name) is not None
                hub.repo(kind, name, create=True)
                url = "%s/%s%s" % (self.hub_url(), "" if kind == "models" else kind + "/", name)
                if existed:
                    return self.reply(409, {"error": "You already created this model repo", "url": url})
                return self.reply(200, {"url": url, "name": name})
            if path == "/api/validate-yaml":
                # upload_folder asks before hashing when README.md is in it.
                hub.count("validate-yaml")
                return self.reply(200, {"errors": [], "warnings": []})
            m = re.fullmatch(API_REPO + r"/preupload/(?P<rev>[^/]+)", path)
            if m:
                hub.count("preupload")
                repo = self.authorized_repo(m)
                if repo is None:
                    return
                # As the Hub: LFS for binary or large files, regular for
                # small text (here: empty files and those under 64 bytes
                # with no NUL byte in their sample).
                files = []
                for f in json.loads(data)["files"]:
                    sample = base64.b64decode(f.get("sample", ""))
                    regular = f["size"] < 64 and b"\0" not in sample
                    files.append({"path": f["path"], "uploadMode": "regular" if regular else "lfs",
                                  "shouldIgnore": False, "oid": None})
                return self.reply(200, {"files": files, "commitOid": hub.resolve(repo, m["rev"])[0]})
            m = re.fullmatch(API_REPO + r"/commit/(?P<rev>[^/]+)", path)
            if m:
                hub.count("commit")
                repo = self.authorized_repo(m)
                if repo is None:
                    return
                lines = [json.loads(l) for l in data.splitlines() if l.strip()]
                sha, err = hub.commit(repo, m["rev"], lines)
                if err:
                    return self.reply(422, {"error": err})
                prefix = "" if m["type"] == "models" else m["type"] + "/"
                return self.reply(200, {"success": True, "commitOid": sha,
                                        "commitUrl": "%s/%s%s/commit/%s" % (self.hub_url(), prefix, m["repo"], sha),
                                        "pullRequestUrl": None})
            m = re.fullmatch("/" + REPO + r"\.git/info/lfs/objects/batch", path)
            if m:
                # huggingface_hub 0.x asks here first, offering "xet" among
                # its transfers when hf_xet is installed, and uploads through
                # hf_xet on this answer (without hf_xet it cannot use it);
                # @huggingface/hub and git-xet (a git-lfs transfer agent)
                # take the CAS URL and token from each object's upload
                # action. 1.x and 2.x never ask: counted, so a test sees
                # which did.
                hub.count("lfs-batch")
                repo = self.authorized_repo({"type": m["type"] or "models", "repo": m["repo"]})
                if repo is None:
                    return
                doc = json.loads(data)
                if "xet" not in doc.get("transfers", []):
                    return self.reply(422, {"message": "the stand-in speaks only the xet transfer"})
                return self.reply(200, {"transfer": "xet", "hash_algo": "sha256",
                                        "objects": [self.lfs_object(m, o, doc) for o in doc["objects"]]},
                                  "application/vnd.git-lfs+json")
            return self.reply(404, {"error": "no route"})

        def lfs_object(self, m, obj, doc):
            """One object of an LFS batch answer, as the Hub writes it for
            the xet transfer: nothing to do for a file the CAS has; else an
            upload action whose href is the write-token route (to refresh
            the token) and whose headers carry the CAS URL and a token."""
            out = {"oid": obj["oid"], "size": obj["size"], "authenticated": True}
            with store.lock:
                known = obj["oid"] in store.sha256
            if known:
                return out
            rev = (doc.get("ref") or {}).get("name", "main").replace("refs/heads/", "")
            exp = int(time.time()) + 3600
            out["actions"] = {"upload": {
                "href": "%s/api/%s/%s/xet-write-token/%s" % (self.hub_url(), m["type"] or "models", m["repo"], rev),
                "header": {"X-Xet-Cas-Url": hub.cas_url, "X-Xet-Access-Token": hub.access_token,
                           "X-Xet-Token-Expiration": str(exp), "X-Xet-Session-Id": "standin-%d" % exp}}}
            return out

        def do_HEAD(self):
            self.resolve_file()

        def do_GET(self):
            path = self.path.split("?", 1)[0]
            m = re.fullmatch(API_REPO + r"/xet-(?P<kind>read|write)-token/(?P<rev>[^/]+)", path)
            if m:
                hub.count("xet-%s-token" % m["kind"])
                if not self.authorized(hub.token):
                    return
                exp = int(time.time()) + 3600
                return self.reply(200, {"accessToken": hub.access_token, "exp": exp, "casUrl": hub.cas_url},
                                  headers={"X-Xet-Cas-Url": hub.cas_url, "X-Xet-Access-Token": hub.access_token,
                                           "X-Xet-Token-Expiration": str(exp)})
            m = re.fullmatch(API_REPO + r"(?:/revision/(?P<rev>[^/]+))?", path)
            if m:
                hub.count("repo-info")
                if not self.authorized(hub.token):
                    return
                repo = hub.repo(m["type"], m["repo"])
                found = repo and hub.resolve(repo, m["rev"] or "main")
                if not found:
                    return self.reply(404, {"error": "Repository not found"}, headers={"X-Error-Code": "RepoNotFound"})
                sha, files = found
                return self.reply(200, {"id": m["repo"], "sha": sha, "private": True,
                                        "siblings": [{"rfilename": p} for p in sorted(files)]})
            if path == "/_standin/hub":
                return self.reply(200, hub.state())
            if re.fullmatch("/" + REPO + "/resolve/.*", path):
                return self.resolve_file()
            return self.reply(404, {"error": "no route"})

        def resolve_file(self):
            path = self.path.split("?", 1)[0]
            m = re.fullmatch("/" + REPO + r"/resolve/(?P<rev>[^/]+)/(?P<file>.+)", path)
            if not m:
                return self.reply(404, {"error": "no route"})
            hub.count("resolve")
            if not self.authorized(hub.token):
                return
            repo = hub.repo(m["type"] or "models", m["repo"])
            found = repo and hub.resolve(repo, m["rev"])
            entry = found and found[1].get(m["file"])
            if not entry:
                return self.reply(404, {"error": "Entry not found"}, headers={"X-Error-Code": "EntryNotFound"})
            sha = found[0]
            headers = {"X-Repo-Commit": sha, "ETag": '"%s"' % entry["sha256"]}
            if "xet" not in entry:
                return self.reply(200, entry["content"], "application/octet-stream", headers)
            # An LFS file: the Hub names its Xet hash and where to get a
            # read token, and redirects to another host (as the Hub to its
            # CDN: the client does not follow, the metadata is here), a
            # place this stand-in does not serve (hf_xet never goes there).
            headers.update({"X-Linked-Etag": '"%s"' % entry["sha256"], "X-Linked-Size": str(entry["size"]),
                            "X-Xet-Hash": entry["xet"],
                            "Link": '<%s/api/%s/%s/xet-read-token/%s>; rel="xet-auth"' % (
                                self.hub_url(), m["type"] or "models", m["repo"], sha)})
            if "application/vnd.xet-fileinfo+json" in self.headers.get("Accept", ""):
                # @huggingface/hub asks for the Xet file info instead of the
                # redirect: the same headers, and the CAS's reconstruction
                # route in the Link header (the CAS itself, not the client's
                # endpoint: this download does not pass through it).
                headers["Link"] += ', <%s/v1/reconstructions/%s>; rel="xet-reconstruction-info"' % (
                    hub.cas_url, entry["xet"])
                return self.reply(200, {"hash": entry["xet"], "size": entry["size"]},
                                  "application/vnd.xet-fileinfo+json", headers)
            headers["Location"] = "https://localhost:%d/_standin/not-served/%s" % (args.cas_port, entry["xet"])
            return self.reply(302, b"", "text/plain", headers)

    return HubHandler


def make_cas_handler(store, args, log, access_token):
    """cas_standin's handler, wanting the Hub's access token."""
    base = cas_standin.make_handler(store, args, log)

    class CasHandler(base):
        def checked(self):
            if self.path.startswith("/_standin/"):
                return True  # the test's own routes
            if self.headers.get("Authorization") == "Bearer " + access_token:
                return True
            with store.lock:
                store.rejected.append({"what": "%s %s" % (self.command, self.path), "why": "no access token"})
            self.body() if self.command == "POST" else None
            self.reply(401, {"error": "no access token"})
            return False

        def do_GET(self):
            if self.checked():
                super().do_GET()

        def do_POST(self):
            if self.checked():
                super().do_POST()

        def do_HEAD(self):
            if self.checked():
                super().do_HEAD()

    return CasHandler


def serve_tls(handler, cert, key):
    """A threading server on 127.0.0.1 speaking TLS with cert/key; the
    handshake happens in the request's thread, so a client that rejects the
    certificate holds up no one."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    server.scheme = "https"
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--store", required=True, help="directory for xorbs, shards and the logs")
    p.add_argument("--dedupctl", required=True, help="the dedupctl that verifies and inspects shards")
    p.add_argument("--dedupd-socket", help="dedupd's socket, asked for global dedup (else 404)")
    p.add_argument("--cert", required=True, help="PEM certificate for 127.0.0.1 (both servers)")
    p.add_argument("--key", required=True, help="its PEM private key")
    p.add_argument("--token", required=True, help="the Hub token clients must send")
    p.add_argument("--access-token", required=True, help="the CAS token the Hub hands out")
    p.add_argument("--public-url", default="https://huggingface.co",
                   help="the URL the Hub names itself by in Link headers (a name only: never connected to); "
                        "'self': its own https://127.0.0.1:<port>, for a client that takes it as it is")
    p.add_argument("--port-file", required=True, help='where {"hub": port, "cas": port} is written')
    args = p.parse_args()
    store = cas_standin.Store(args.store, args.dedupctl)
    cas_log = open(os.path.join(args.store, "requests.jsonl"), "a")
    hub_log = open(os.path.join(args.store, "hub.jsonl"), "a")
    cas = serve_tls(make_cas_handler(store, args, cas_log, args.access_token), args.cert, args.key)
    args.cas_port = cas.server_address[1]
    # Storage, where reconstructions point (presigned-style URLs): TLS as
    # the Hub's CDN, a port of its own.
    storage = serve_tls(cas_standin.make_storage_handler(store, cas_log), args.cert, args.key)
    store.storage_url = "https://127.0.0.1:%d" % storage.server_address[1]
    hub = Hub(store, args.token, args.access_token, "https://127.0.0.1:%d" % args.cas_port)
    hub_server = serve_tls(make_hub_handler(hub, store, args, hub_log), args.cert, args.key)
    if args.public_url == "self":
        args.public_url = "https://127.0.0.1:%d" % hub_server.server_address[1]
    with tempfile.NamedTemporaryFile("w", dir=os.path.dirname(os.path.abspath(args.port_file)),
                                     delete=False) as f:
        json.dump({"hub": hub_server.server_address[1], "cas": cas.server_address[1]}, f)
    os.replace(f.name, args.port_file)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
