#!/usr/bin/env python3
"""Run `dedupctl inspect --json` on a shard and compare it with the expected
JSON beside the shard (<shard>.json): the key, every xorb hash and every
stored chunk hash, in order, exactly. Also checks the human output runs."""
import json
import subprocess
import sys


def main() -> int:
    dedupctl, shard = sys.argv[1], sys.argv[2]
    with open(shard + ".json", encoding="utf-8") as f:
        expected = json.load(f)

    run = subprocess.run([dedupctl, "inspect", "--json", shard], capture_output=True, timeout=60)
    if run.returncode != 0:
        print(f"exit {run.returncode}: {run.stderr.decode()}", file=sys.stderr)
        return 1
    got = json.loads(run.stdout)

    failures = []
    if got.get("hmac_key") != expected["hmac_key"]:
        failures.append(f"hmac_key {got.get('hmac_key')!r} != {expected['hmac_key']!r}")
    got_xorbs = [{"hash": x["hash"], "chunk_hashes": x["chunk_hashes"]} for x in got.get("xorbs", [])]
    if len(got_xorbs) != len(expected["xorbs"]):
        failures.append(f"{len(got_xorbs)} xorbs, expected {len(expected['xorbs'])}")
    for i, (g, e) in enumerate(zip(got_xorbs, expected["xorbs"])):
        if g["hash"] != e["hash"]:
            failures.append(f"xorb {i}: hash {g['hash']} != {e['hash']}")
        if g["chunk_hashes"] != e["chunk_hashes"]:
            n = next((j for j, (a, b) in enumerate(zip(g["chunk_hashes"], e["chunk_hashes"])) if a != b),
                     min(len(g["chunk_hashes"]), len(e["chunk_hashes"])))
            failures.append(f"xorb {i}: chunk hashes differ from index {n} "
                            f"({len(g['chunk_hashes'])} vs {len(e['chunk_hashes'])})")
    # Documented per-xorb fields agree with the hash lists.
    for i, x in enumerate(got.get("xorbs", [])):
        if x["num_chunks"] != len(x["chunk_hashes"]) or len(x["chunks"]) != len(x["chunk_hashes"]):
            failures.append(f"xorb {i}: num_chunks/chunks disagree with chunk_hashes")
    if got.get("counts", {}).get("chunks") != sum(len(x["chunk_hashes"]) for x in expected["xorbs"]):
        failures.append("counts.chunks disagrees with the expected chunk total")

    human = subprocess.run([dedupctl, "inspect", shard], capture_output=True, timeout=60)
    if human.returncode != 0 or expected["xorbs"][0]["hash"].encode() not in human.stdout:
        failures.append("human inspect output lacks the first xorb hash")

    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    if not failures:
        print(f"ok: {len(expected['xorbs'])} xorbs, "
              f"{sum(len(x['chunk_hashes']) for x in expected['xorbs'])} chunk hashes match")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
