#!/usr/bin/env python3
"""One session of the real Xet client (hf_xet), run by the tests in its own
process as `hf upload` or `hf download` would: each run is a new session that
loads the shard cache under HF_XET_CACHE.

  xet_client.py upload ENDPOINT FILE...   -> JSON {"files": [{path, hash,
      size, sha256}], "t_start", "t_end", "max_rss_kib"}
  xet_client.py download ENDPOINT HASH SIZE DEST...  (HASH SIZE DEST repeated)
  xet_client.py hash FILE...              -> JSON [{path, hash, size}]
  xet_client.py held-upload ENDPOINT FILE -> streams the first half of FILE
      in one session, prints "HALF" and waits for a line on stdin, then
      streams the rest: a session held open across what the test does
  xet_client.py held-upload-files ENDPOINT FIRST REST... -> the same with
      whole files: FIRST before the wait, the REST after it
"""

import json
import os
import resource
import sys
import time

import hf_xet

# cas_standin checks no token; hub_standin's CAS wants the one its Hub
# handed out, which a test passes in XET_CLIENT_TOKEN.
TOKEN = os.environ.get("XET_CLIENT_TOKEN", "dedupd-test-token")


def token_args():
    return {"token": TOKEN, "token_expiry_unix_secs": int(time.time()) + 3600}


def upload(endpoint, paths):
    t_start = time.time()
    session = hf_xet.XetSession()
    commit = session.new_upload_commit(endpoint=endpoint, **token_args())
    handles = [(p, commit.start_upload_file(p, sha256=hf_xet.COMPUTE_SHA256)) for p in paths]
    commit.wait_to_finish()
    files = []
    for p, h in handles:
        info = h.result().xet_info
        files.append({"path": p, "hash": info.hash, "size": info.file_size, "sha256": info.sha256})
    t_end = time.time()
    # The session's peak memory, its shard index included (this process is
    # Python plus the client, as for `hf upload`).
    max_rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"files": files, "t_start": t_start, "t_end": t_end, "max_rss_kib": max_rss_kib}


def held_upload(endpoint, path):
    with open(path, "rb") as f:
        data = f.read()
    session = hf_xet.XetSession()
    commit = session.new_upload_commit(endpoint=endpoint, **token_args())
    stream = commit.start_upload_stream(sha256=hf_xet.SKIP_SHA256)
    stream.write(data[:len(data) // 2])
    print("HALF", flush=True)
    sys.stdin.readline()
    stream.write(data[len(data) // 2:])
    info = stream.finish().xet_info
    commit.wait_to_finish()
    return {"files": [{"path": path, "hash": info.hash, "size": info.file_size}]}


def held_upload_files(endpoint, first, rest):
    """One session: starts FIRST, prints "HALF" and waits for a line on
    stdin, then starts the REST and finishes them all."""
    session = hf_xet.XetSession()
    commit = session.new_upload_commit(endpoint=endpoint, **token_args())
    handles = [(first, commit.start_upload_file(first, sha256=hf_xet.SKIP_SHA256))]
    print("HALF", flush=True)
    sys.stdin.readline()
    handles += [(p, commit.start_upload_file(p, sha256=hf_xet.SKIP_SHA256)) for p in rest]
    commit.wait_to_finish()
    return {"files": [{"path": p, "hash": h.result().xet_info.hash, "size": h.result().xet_info.file_size}
                      for p, h in handles]}


def download(endpoint, triples):
    session = hf_xet.XetSession()
    group = session.new_file_download_group(endpoint=endpoint, **token_args())
    for file_hash, size, dest in triples:
        group.start_download_file(hf_xet.XetFileInfo(file_hash, int(size)), dest)
    group.wait_to_finish()
    return {"downloaded": [dest for _, _, dest in triples]}


def main(argv):
    verb = argv[1]
    if verb == "upload":
        out = upload(argv[2], argv[3:])
    elif verb == "download":
        rest = argv[3:]
        out = download(argv[2], [rest[i:i + 3] for i in range(0, len(rest), 3)])
    elif verb == "held-upload":
        out = held_upload(argv[2], argv[3])
    elif verb == "held-upload-files":
        out = held_upload_files(argv[2], argv[3], argv[4:])
    elif verb == "hash":
        out = [{"path": p, "hash": i.hash, "size": i.file_size} for p, i in zip(argv[2:], hf_xet.hash_files(argv[2:]))]
    elif verb == "version":
        from importlib.metadata import version
        out = {"hf_xet": version("hf_xet")}
    else:
        raise SystemExit("unknown verb " + verb)
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
