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

hf_xet before 1.5.2 has no XetSession: upload and download then go through
its older functions (upload_files, download_files), as huggingface_hub 0.x
and 1.x call them; held uploads need a session and exit 3 there (LEGACY).
"""

import json
import os
import resource
import sys
import time

import hf_xet

from digests import sha256_of

# cas_standin checks no token; hub_standin's CAS wants the one its Hub
# handed out, which a test passes in XET_CLIENT_TOKEN.
TOKEN = os.environ.get("XET_CLIENT_TOKEN", "dedupd-test-token")
# hf_xet 1.1.x-1.5.1: the module-level functions only.
LEGACY = not hasattr(hf_xet, "XetSession")
NEEDS_SESSION = 3  # the exit status of a verb LEGACY cannot do


def token_args():
    return {"token": TOKEN, "token_expiry_unix_secs": int(time.time()) + 3600}


def upload(endpoint, paths):
    t_start = time.time()
    if LEGACY:
        # As huggingface_hub 0.36's _upload_xet_files: (paths, endpoint,
        # token info, token refresher, progress, repo type).
        infos = hf_xet.upload_files(list(paths), endpoint, (TOKEN, int(time.time()) + 3600), None, None, "model")
        files = [{"path": p, "hash": i.hash, "size": i.file_size, "sha256": sha256_of(p)}
                 for p, i in zip(paths, infos)]
        return {"files": files, "t_start": t_start, "t_end": time.time(),
                "max_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}
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
    if LEGACY:
        infos = [hf_xet.PyXetDownloadInfo(destination_path=dest, hash=file_hash, file_size=int(size))
                 for file_hash, size, dest in triples]
        hf_xet.download_files(infos, endpoint=endpoint, token_info=(TOKEN, int(time.time()) + 3600),
                              token_refresher=None, progress_updater=None)
        return {"downloaded": [dest for _, _, dest in triples]}
    session = hf_xet.XetSession()
    group = session.new_file_download_group(endpoint=endpoint, **token_args())
    for file_hash, size, dest in triples:
        group.start_download_file(hf_xet.XetFileInfo(file_hash, int(size)), dest)
    group.wait_to_finish()
    return {"downloaded": [dest for _, _, dest in triples]}


def version_of_hf_xet():
    from importlib.metadata import version
    return version("hf_xet")


def main(argv):
    verb = argv[1]
    if LEGACY and verb.startswith("held-"):
        print("hf_xet %s has no XetSession: no held uploads" % version_of_hf_xet(), file=sys.stderr)
        return NEEDS_SESSION
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
        out = {"hf_xet": version_of_hf_xet()}
    else:
        raise SystemExit("unknown verb " + verb)
    # On a line of its own, the last: what the client may print before it
    # (hf_xet 1.1.9 once did, under load) is not read.
    sys.stdout.write("\n" + json.dumps(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
