#!/usr/bin/env python3
"""Runs clang-tidy over units, skipping those it found clean before.

./dev lint checks each target's sources as one batch (a unit). A unit is
clean again when nothing clang-tidy reads for it changed: its own files and
every project header they include (the compiler's -MM list, so system
headers, which only a package upgrade changes, are left out of it, and the
clang-tidy version stands for them), the compile command, the checks and
the header filter. A clean unit's key is kept under the cache directory
(DEDUPD_TIDY_CACHE, default ~/.cache/dedupd/tidy); findings are never
cached, so they show again on every run. The clone's path is left out of
the keys: the next CI run on the same
machine, another clean clone, then checks only what the change touched.

usage: tidy_cached.py JOBS UNITS_FILE -- CLANG_TIDY_ARGS...
Prints clang-tidy's findings; exits 1 when there are any.
"""
import concurrent.futures
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys

NOISE = re.compile(r"^[0-9]+ (warning|error)s? (and [0-9]+ errors? )?generated\.$")


def main():
    sep = sys.argv.index("--")
    jobs, units_file = int(sys.argv[1]), sys.argv[2]
    tidy = sys.argv[sep + 1:]
    build = tidy[tidy.index("-p") + 1]
    units = [u.strip() for u in open(units_file) if u.strip()]
    commands = {}
    for e in json.load(open(os.path.join(build, "compile_commands.json"))):
        commands[os.path.normpath(os.path.join(e["directory"], e["file"]))] = e
    cache = os.environ.get("DEDUPD_TIDY_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "dedupd", "tidy")
    os.makedirs(cache, exist_ok=True)
    version = subprocess.run([tidy[0], "--version"], capture_output=True, text=True).stdout
    config = [a for a in tidy if a.startswith("--config-file=")]
    config_text = open(config[0].split("=", 1)[1]).read() if config else ""

    # The clone's own path is left out of every key (the compile commands,
    # the batches' #include lines and -MM's list name files by absolute
    # path): another clean clone of the same tree, elsewhere, has the same
    # keys. With the path in them, no CI run ever found a unit clean.
    root = os.getcwd()

    def unrooted(text):
        return text.replace(root, "@ROOT@")

    def key_of(unit):
        e = commands.get(os.path.normpath(unit))
        if e is None:
            return None
        argv = shlex.split(e["command"])
        # The dependencies only: -MM lists the project's headers, not the
        # system's; the object file is neither written nor needed.
        out = [a for i, a in enumerate(argv) if a != "-o" and (i == 0 or argv[i - 1] != "-o")]
        out = [a for a in out if a not in ("-c",) and not a.startswith(("-MD", "-MF", "-MT", "-MQ"))]
        deps = subprocess.run(out + ["-MM", "-MG"], cwd=e["directory"], capture_output=True, text=True)
        if deps.returncode != 0:
            return None
        files = deps.stdout.replace("\\\n", " ").split(":", 1)[-1].split()
        h = hashlib.sha256()
        for part in (version, config_text, " ".join(tidy[1:]), e["command"]):
            h.update(unrooted(part).encode() + b"\0")
        for f in sorted(set(files)):
            path = os.path.join(e["directory"], f)
            h.update(unrooted(os.path.normpath(path)).encode() + b"\0")
            try:
                h.update(open(path, "rb").read().replace(root.encode(), b"@ROOT@"))
            except OSError:
                h.update(b"missing")
        return h.hexdigest()

    def check(unit):
        key = key_of(unit)
        if key and os.path.exists(os.path.join(cache, key)):
            return unit, "", True, True
        r = subprocess.run(tidy + [unit], capture_output=True, text=True)
        text = "\n".join(l for l in (r.stdout + r.stderr).splitlines() if not NOISE.match(l))
        # .clang-tidy makes every finding an error: the exit status says it.
        # Only a unit that printed nothing is kept as clean.
        clean = r.returncode == 0
        if clean and key and not text.strip():
            open(os.path.join(cache, key), "w").close()
        return unit, text, clean, False

    found = False
    skipped = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        for unit, text, clean, hit in pool.map(check, units):
            if text.strip():
                print(text, flush=True)
            found |= not clean
            skipped += hit
    print("== tidy_cached.py: %d of %d units unchanged since a clean check" % (skipped, len(units)),
          file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
