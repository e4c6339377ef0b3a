#!/usr/bin/env python3
"""huggingface_hub's own calls, as a user makes them, in one process each
(HF_ENDPOINT, HF_TOKEN and the rest come from the environment the test
sets: harness.HubClient).

  hub_client.py create-repo REPO                -> {"url"}
  hub_client.py upload-file REPO PATH_IN_REPO FILE   (HfApi.upload_file)
  hub_client.py upload-folder REPO FOLDER            (HfApi.upload_folder)
      -> {"commit": oid} (upload-file also "seconds": the call's duration,
         and "t_start", "t_end": its wall-clock ends, to line up with the
         stand-in's request log)
  hub_client.py download REPO FILENAME DIR      (hf_hub_download)
      -> {"path", "sha256", "size", "seconds": the call's duration}
"""

import hashlib
import json
import sys
import time

from huggingface_hub import HfApi, hf_hub_download

from digests import sha256_of


def main(argv):
    verb, repo = argv[1], argv[2]
    api = HfApi()
    if verb == "create-repo":
        out = {"url": str(api.create_repo(repo, exist_ok=True, private=True))}
    elif verb == "upload-file":
        # The call alone is timed (bench_xet_endpoint.py): not the
        # interpreter's start or the imports.
        t_start, t0 = time.time(), time.monotonic()
        info = api.upload_file(repo_id=repo, path_in_repo=argv[3], path_or_fileobj=argv[4])
        out = {"commit": info.oid, "seconds": time.monotonic() - t0, "t_start": t_start, "t_end": time.time()}
    elif verb == "upload-folder":
        info = api.upload_folder(repo_id=repo, folder_path=argv[3])
        out = {"commit": info.oid}
    elif verb == "download":
        # The call alone is timed (bench_xet_download.py), as upload-file.
        t0 = time.monotonic()
        path = hf_hub_download(repo_id=repo, filename=argv[3], local_dir=argv[4])
        seconds = time.monotonic() - t0
        with open(path, "rb") as f:
            size = len(f.read())
        out = {"path": path, "sha256": sha256_of(path), "size": size, "seconds": seconds}
    else:
        raise SystemExit("unknown verb " + verb)
    # On a line of its own, the last: what the client may print before it
    # (hf_xet 1.1.9 once did, under load) is not read.
    sys.stdout.write("\n" + json.dumps(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
