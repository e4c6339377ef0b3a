#!/usr/bin/env python3
"""What xet_endpoint.reply_expiry costs (issue 58; docs/XET-ENDPOINT.md,
"When the CAS refuses").

  bench_xet_reply_expiry.py [--files N] [--mib M] [--rounds R]
                            [--expiry 0s --expiry 7d ...] [--json FILE] [--keep]

For each expiry given (by default 0s, dedupd's default, and 7d, the Hub's
own lifetime for its answers): a fresh dedupd (learning on, the expiry as
xet_endpoint.reply_expiry), the Hub and CAS stand-in over HTTPS
(tests/xet_client/hub_standin.py) and nginx from
packaging/xet-endpoint/nginx.conf.in. A seeding host uploads N files of M
MiB of random bytes through the endpoint, and dedupd learns them. Then one
host, one cache, uploads the same N files R times, each upload a new
process (huggingface_hub's HfApi.upload_file with hf_xet, as `hf upload`
and its retries run): every byte is known, so nothing should go up, and
what differs between the expiries is how often the client asks global
dedup again instead of trusting its cached answer. Counted: the
global-dedup queries of those uploads as dedupd counted them (answered
here / sent upstream), the ones the CAS stand-in saw, the bytes it
received, and each upload_file call's duration (median, and the median
of the first round apart: a cache holds nothing then either way).

Nothing is asserted but that every upload succeeded and sent nothing.
Programs from the environment: DEDUPD, DEDUPCTL, XET_PYTHON (and XET_PAIR,
as the tests: tests/xet_client/harness.py). Exit 77 without the client or
nginx.
"""

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "xet_client"))
import harness  # noqa: E402

TOKEN = "hf_benchExpiryHubToken0123456789abcdef"
ACCESS_TOKEN = "xet_benchExpiryCasToken0123456789abcdef"
REPO = "dedupd/bench-expiry"
MIB = 1 << 20


def one(expiry, root, n_files, mib, rounds):
    procs = []
    try:
        os.makedirs(os.path.join(root, "dedupd"))
        os.makedirs(os.path.join(root, "incoming"))
        settings = os.path.join(root, "endpoint-settings", "xet-endpoint.conf")
        dedupd = harness.Dedupd(os.path.join(root, "dedupd"), [os.path.join(root, "incoming")],
                                harness.endpoint_yaml(settings, reply_expiry=expiry))
        procs.append(dedupd)
        tls = harness.make_test_ca(os.path.join(root, "tls"))
        hub = harness.HubStandin(os.path.join(root, "hub"), tls, TOKEN, ACCESS_TOKEN)
        procs.append(hub)
        ep = harness.XetEndpoint(os.path.join(root, "endpoint"), hub, dedupd.socket, tls["ca"])
        procs.append(ep)
        harness.write(settings, ("hub_upstream = %s\ncas_upstream = %s\nhub_port = %d\ncas_port = %d\n"
                                 % (hub.endpoint, hub.cas_url, ep.hub_port, ep.cas_port)).encode())
        files = [harness.write(os.path.join(root, "src", "f%d.bin" % i), harness.random_bytes(mib * MIB, 580 + i))
                 for i in range(n_files)]
        seed = harness.HubClient(os.path.join(root, "seed"), ep.endpoint, TOKEN, tls["ca"])
        seed.run("create-repo", REPO)
        for i, f in enumerate(files):
            seed.run("upload-file", REPO, "seed/%d.bin" % i, f)

        def status():
            return dedupd.json("/v1/status")["xet_endpoint"]
        harness.wait_for("the seed learned", lambda: status()["learning"]["learned"] >= n_files, timeout=60)
        before = status()
        hub.reset()
        user = harness.HubClient(os.path.join(root, "host"), ep.endpoint, TOKEN, tls["ca"])
        seconds = []
        for r in range(rounds):
            for i, f in enumerate(files):
                seconds.append(user.run("upload-file", REPO, "r%d/%d.bin" % (r, i), f)["seconds"])
        after = status()
        state = hub.state()
        if state["xorb_chunk_bytes"] != 0 or state["rejected"]:
            raise AssertionError("known bytes went up (%d) or were refused: %s" % (state["xorb_chunk_bytes"],
                                                                                  state["rejected"]))
        uploads = n_files * rounds
        local = after["local"] - before["local"]
        forwarded = after["forwarded"] - before["forwarded"]
        later = seconds[n_files:]
        return {
            "reply_expiry": expiry, "uploads": uploads, "file_mib": mib,
            "queries_answered_here": local, "queries_sent_upstream": forwarded,
            "queries_at_the_cas": len(state["chunk_queries"]),
            "queries_per_upload": (local + forwarded) / uploads,
            "bytes_sent": state["xorb_chunk_bytes"],
            "median_s": statistics.median(seconds),
            "median_s_first_round": statistics.median(seconds[:n_files]),
            "median_s_later_rounds": statistics.median(later) if later else None,
            "mib_per_s_later_rounds": mib / statistics.median(later) if later else None,
        }
    finally:
        for p in reversed(procs):
            p.stop()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--files", type=int, default=4)
    p.add_argument("--mib", type=int, default=8)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--expiry", action="append", help="xet_endpoint.reply_expiry values (default 0s and 7d)")
    p.add_argument("--json", help="write the results here too")
    p.add_argument("--keep", action="store_true", help="keep the work directory")
    args = p.parse_args()
    harness.require_client()
    harness.find_nginx()
    work = tempfile.mkdtemp(prefix="bench-expiry-")
    os.chmod(work, 0o711)  # nginx, as nobody when root runs this, passes through (harness.XetEndpoint)
    results = []
    try:
        for expiry in args.expiry or ["0s", "7d"]:
            r = one(expiry, os.path.join(work, expiry), args.files, args.mib, args.rounds)
            results.append(r)
            print(json.dumps(r), flush=True)
    finally:
        if args.keep:
            print("kept " + work, file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    print("%-8s %8s %10s %10s %9s %12s %12s" % ("expiry", "uploads", "queries", "/upload", "upstream",
                                                "median s", "later MiB/s"))
    for r in results:
        print("%-8s %8d %10d %10.2f %9d %12.3f %12.1f" % (
            r["reply_expiry"], r["uploads"], r["queries_answered_here"] + r["queries_sent_upstream"],
            r["queries_per_upload"], r["queries_sent_upstream"], r["median_s"], r["mib_per_s_later_rounds"] or 0))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
