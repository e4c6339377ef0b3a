"""The SHA-256 of a file, read in blocks (a 200 MiB download): one for the
harness and the client scripts, which run under the clients' virtualenvs
and import nothing of the harness."""

import hashlib


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
