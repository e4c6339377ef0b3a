#!/usr/bin/env python3
"""dedupctl against a real dedupd, end to end.

    e2e.py DEDUPD DEDUPCTL FIXTURE

Starts `dedupd --state-dir DIR` on a fresh temporary DIR with the clock at
2025-08-02 12:00:00 (libfaketime, advancing from there; the fixture expires
2025-08-08), drops the fixture into DIR/incoming the way a Xet client does
(written under a dot-name, renamed into place), waits until it is indexed,
then runs every dedupctl verb in both output modes and checks the exit codes
the man page promises. The acceptance check is the first assertion:
`dedupctl --json query <raw chunk>` -> locations[0] is xorb #1, chunk 0.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

RAW_CHUNK = "9502eec19d4b0c9f7b389228fa801f68ecdf15d69ccd1da2f9ddbd0219898335"
XORB1 = "213031765f0b4d7bc826ccd5bdda3261f624187e2997a2de61111652d31b081c"
UNKNOWN = "00" * 32
FAKE_NOW = "2025-08-02 12:00:00"

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


class Ctl:
    def __init__(self, dedupctl, socket):
        self.dedupctl, self.socket = dedupctl, socket

    def run(self, *args, stdin=None, socket=None, preexec=None):
        cmd = [self.dedupctl, "--socket", socket or self.socket, *args]
        env = dict(os.environ, NO_COLOR="1")
        p = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=60, env=env,
                           preexec_fn=preexec)
        return p.returncode, p.stdout, p.stderr

    def json(self, *args, **kw):
        code, out, err = self.run("--json", *args, **kw)
        try:
            return code, json.loads(out) if out.strip() else None, err
        except json.JSONDecodeError as e:
            return code, {"_unparsable": str(e), "_out": out[:500]}, err


def wait_for(pred, seconds=20.0):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.1)
    return False


def faketime_env():
    # Preload libfaketime directly (not the `faketime` wrapper) so signals
    # reach dedupd itself; "@" makes the clock advance from the fake start.
    for lib in ("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
                "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
                "/usr/lib/faketime/libfaketime.so.1"):
        if os.path.exists(lib):
            return {"LD_PRELOAD": lib, "FAKETIME": "@" + FAKE_NOW, "FAKETIME_NO_CACHE": "1", "TZ": "UTC"}
    return None


def main():
    dedupd, dedupctl, fixture = sys.argv[1:4]
    ft = faketime_env()
    if ft is None:
        print("libfaketime is not installed: skipping")
        return 77  # ctest SKIP_RETURN_CODE
    state = tempfile.mkdtemp(prefix="dedupctl-e2e.")
    os.chmod(state, 0o755)  # the non-admin check runs as nobody
    sock = os.path.join(state, "dedupd.sock")
    log = open(os.path.join(state, "dedupd.log"), "w")
    daemon = subprocess.Popen([dedupd, "--state-dir", state], stdout=log, stderr=subprocess.STDOUT,
                              env=dict(os.environ, **ft), start_new_session=True)
    ctl = Ctl(dedupctl, sock)
    try:
        run_checks(ctl, daemon, state, fixture)
    except RuntimeError as e:
        print(f"stopped early: {e}", file=sys.stderr)
    finally:
        try:
            os.killpg(daemon.pid, signal.SIGTERM)
            daemon.wait(timeout=15)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(daemon.pid, signal.SIGKILL)
            daemon.wait()
        log.close()
    code, _, _ = ctl.run("status")
    check(code == 69, "after dedupd stops, status exits 69")

    if failures:
        print(f"\n{len(failures)} failed; dedupd log: {state}/dedupd.log", file=sys.stderr)
        with open(os.path.join(state, "dedupd.log")) as f:
            sys.stderr.write(f.read()[-4000:])
        return 1
    shutil.rmtree(state, ignore_errors=True)
    return 0


def run_checks(ctl, daemon, state, fixture):
    up = wait_for(lambda: ctl.run("status")[0] == 0 or daemon.poll() is not None)
    check(up and daemon.poll() is None, "dedupd comes up and `status` exits 0")
    if failures:
        raise RuntimeError("dedupd did not come up")
    code, doc, _ = ctl.json("status")
    check(code == 0 and doc and doc.get("version"), "status --json has a version")

    # Drop the fixture like a Xet client: temp dot-name, then rename.
    _, info, _ = ctl.json("inspect", fixture)
    shard_hash = info["shard_hash"]
    incoming = os.path.join(state, "incoming")
    os.makedirs(incoming, exist_ok=True)
    tmp = os.path.join(incoming, ".fixture.mdb_temp")
    shutil.copyfile(fixture, tmp)
    os.rename(tmp, os.path.join(incoming, shard_hash + ".mdb"))
    check(wait_for(lambda: ctl.run("-q", "query", RAW_CHUNK)[0] == 0), "the fixture gets indexed")
    if failures:
        raise RuntimeError("the fixture was not indexed")

    # The acceptance check.
    code, doc, err = ctl.json("query", RAW_CHUNK)
    loc = (doc or {}).get("locations", [{}])[0] if (doc or {}).get("locations") else {}
    check(code == 0 and loc.get("xorb") == XORB1 and loc.get("chunk_index") == 0,
          f"query --json: locations[0] is xorb #1 chunk 0 (exit {code}, {json.dumps(loc)[:200]} {err})")

    code, out, _ = ctl.run("query", RAW_CHUNK)
    check(code == 0 and XORB1 in out and "found" in out, "query (human) shows the xorb")
    check(ctl.run("query", UNKNOWN)[0] == 1, "query of an unknown chunk exits 1")
    code, _, err = ctl.run("query", "xyz")
    check(code == 65 and "malformed" in err, "query of a malformed hash exits 65")
    code, doc, _ = ctl.json("query", "-", stdin=f"{RAW_CHUNK}\n{UNKNOWN}\n")
    check(code == 1 and doc and doc.get("found") == 1 and doc.get("missing") == 1,
          "query - (stdin batch): 1 found, 1 missing, exit 1")

    code, doc, _ = ctl.json("xorb", XORB1)
    check(code == 0 and doc and doc.get("num_chunks") == 1062, "xorb --json: 1062 chunks")
    check(ctl.run("xorb", XORB1)[0] == 0, "xorb (human)")
    check(ctl.run("file", UNKNOWN)[0] == 1, "file of an unknown hash exits 1")
    check(ctl.run("sha256", UNKNOWN)[0] == 1, "sha256 with no file exits 1")

    code, doc, _ = ctl.json("shards")
    hashes = [s.get("hash") for s in (doc or {}).get("shards", [])]
    check(code == 0 and shard_hash in hashes, "shards --json lists the fixture's shard")
    code, out, _ = ctl.run("shards", "--live")
    check(code == 0 and shard_hash in out, "shards --live (human)")
    code, doc, _ = ctl.json("shard", shard_hash)
    check(code == 0 and doc and doc.get("state") == "live" and doc.get("chunks") == 2117,
          "shard --json: live, 2117 chunks")
    code, doc, _ = ctl.json("stats")
    check(code == 0 and doc and doc.get("chunks", 0) >= 2117, "stats --json counts the chunks")
    check(ctl.run("stats")[0] == 0, "stats (human)")

    reply = os.path.join(state, "reply.mdb")
    code, out, err = ctl.run("dedup-shard", RAW_CHUNK, "-o", reply)
    check(code == 0 and os.path.exists(reply), f"dedup-shard writes a shard ({err.strip()})")
    if os.path.exists(reply):
        check(ctl.run("verify", reply)[0] == 0, "the global-dedup reply verifies clean")
    check(ctl.run("dedup-shard", UNKNOWN, "-o", reply + ".2")[0] == 1, "dedup-shard of an unknown chunk exits 1")

    # Admin verbs, as root (the test runs as root in CI).
    if os.geteuid() == 0:
        check(ctl.run("rescan")[0] == 0, "rescan")
        check(ctl.run("purge", "--dry-run")[0] == 0, "purge --dry-run")
        code, doc, _ = ctl.json("ingest", fixture)
        check(code == 0 and doc and doc["shards"] and doc["shards"][0].get("added") is False,
              "ingest of an indexed shard: added false")

        def as_nobody():
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
        code, _, err = ctl.run("rescan", preexec=as_nobody)
        check(code == 77, f"rescan as nobody exits 77 ({err.strip()})")

        code, _, _ = ctl.run("remove", shard_hash)
        check(code == 0, "remove the shard")
        check(ctl.run("query", RAW_CHUNK)[0] == 1, "after remove, the chunk is not found")
        check(ctl.run("remove", shard_hash)[0] == 1, "remove again exits 1")

    code, _, err = ctl.run("status", socket=os.path.join(state, "none.sock"))
    check(code == 69 and "no socket at " + os.path.join(state, "none.sock") in err and "DEDUPD_SOCKET" in err,
          "a missing socket exits 69, names it and says how to point at another")


if __name__ == "__main__":
    sys.exit(main())
