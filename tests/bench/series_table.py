#!/usr/bin/env python3
"""Prints the series tables of docs/PERFORMANCE.md from the series' JSON.

Reads the documents `bench_e2e --series` and `bench_fleet --series` write
(docs/performance-series-e2e.json and -fleet.json) and prints, as Markdown,
one table for each: a row a metric, a column a size, each cell dedupd's
figure over the bare baseline of the same run (with the ratio for rates).
The docs' tables are this script's output, so a new series is one command
away from the page, with no figure copied by hand.

  tests/bench/series_table.py E2E.json FLEET.json
"""
import argparse
import json

# (metric, row title, how a value is written; "us/bare": in us, with the
# ratio to a baseline that is the same thing done barely, not a part of it)
E2E_ROWS = [
    ("ingest", "ingest", "rate"),
    ("stream_json_lines", "`query - --json-lines`", "rate"),
    ("stream_short", "`query - --format short`", "rate"),
    ("single_get_p99", "single GET p99", "us/bare"),
    ("single_get_p99_ingest", "single GET p99 during ingest", "us"),
    ("start_to_ready", "start -> READY, cold", "ms"),
    ("start_to_ready_unloaded", "start -> READY, program files cold", "ms"),
    ("bytes_per_entry", "bytes per entry (file)", "B"),
    ("filter_bytes_per_entry", "chunk filters, B an entry", "B"),
]
FLEET_ROWS = [
    ("publish", "fleet publish", "rate"),
    ("lookup_misses", "fleet misses, Reader", "rate"),
    ("dedupd_hits_first_xorbs", "hits through dedupd, first xorbs", "rate"),
    ("dedupd_hits_spread", "hits through dedupd, spread", "rate"),
    ("bytes_per_entry", "PostgreSQL bytes per entry", "B"),
    ("key_filter_bytes_per_keyed_entry", "key filters, B a keyed entry", "filter"),
    ("raw_filter_bytes_per_raw_entry", "raw filter, B a raw entry", "filter"),
]


def size_label(n):
    """1000000 and 1048576 are both "1 M": the benches round the sizes they are
    asked for to whole shards."""
    m = n / 1e6
    return f"{m:.0f} M" if m >= 1 else f"{n / 1e3:.0f} k"


def one(value, kind):
    if kind == "rate":
        return f"{value:,.0f}/s"
    if kind in ("us", "us/bare"):
        return f"{value:,.0f} us"
    if kind == "ms":
        return f"{value:.1f} ms"
    return f"{value:.1f} B"


def cell(m, kind):
    if not m or m.get("value") is None:
        return "-"
    v = m["value"]
    if kind == "filter":
        if not m.get("bytes", 1):
            return "none: over its share of the budget"
        text = f"{v:.2f} B"
        if "bits" in m or "thinnest_bits" in m:
            text += f", {m.get('bits', m.get('thinnest_bits'))} bits"
        if "bytes" in m:
            text += f" ({m['bytes'] / 2**20:.1f} MiB)"
        return text
    b = m.get("baseline")
    if b is None:
        return one(v, kind)
    text = f"{one(v, kind)} / {one(b, kind)}"
    # Series before issue 73 put the GET beside mdb_get in process, a part of
    # it: no ratio then.
    whole = kind == "rate" or (kind == "us/bare" and "bare_http_get" in m.get("baseline_is", ""))
    if whole and b:
        text += f" ({v / b:.2f}x)"
    return text


def table(doc, rows, title):
    points = doc["points"]
    out = [
        "| " + title + " | " + " | ".join(size_label(p["entries"]) for p in points) + " |",
        "|---|" + "---:|" * len(points),
    ]
    for name, label, kind in rows:
        cells = [cell(p.get("metrics", {}).get(name), kind) for p in points]
        if all(c == "-" for c in cells):
            continue
        out.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("e2e")
    ap.add_argument("fleet", nargs="?")
    args = ap.parse_args()
    with open(args.e2e) as f:
        print(table(json.load(f), E2E_ROWS, "metric: dedupd / bare"))
    if args.fleet:
        print()
        with open(args.fleet) as f:
            print(table(json.load(f), FLEET_ROWS, "fleet metric: dedupd / bare"))


if __name__ == "__main__":
    main()
