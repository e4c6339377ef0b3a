#!/usr/bin/env python3
"""Draws how dedupd's costs grow with the index (docs/performance-series.svg).

Reads the JSON documents of `bench_e2e --series` and `bench_fleet --series`
and draws one log-log panel per metric: its cost per entry or per operation
against the number of entries, dedupd's next to the bare baseline measured
at the same size in the same run. On log-log axes a flat cost is a
horizontal line, a cost growing as log N bends up slowly, and one growing
as N rises with slope 1 (the dotted grey line from dedupd's first point).

Needs matplotlib (Debian: apt-get install python3-matplotlib, then run this
with Debian's python3 if another one comes first on PATH) only to redraw the
figure; the build and the tests never run this script.

  tests/bench/plot_series.py E2E.json FLEET.json [-o docs/performance-series.svg]
"""
import argparse
import json
import sys

# (document, metric, title, how to turn a value into a cost, cost unit)
PER_OP = lambda v: 1e6 / v  # a rate (per second) -> microseconds per entry or hash
SAME = lambda v: v
PANELS = [
    ("e2e", "ingest", "local: ingest", PER_OP, "us per entry"),
    ("e2e", "stream_json_lines", "local: dedupctl query - --json-lines", PER_OP, "us per hash"),
    ("e2e", "stream_short", "local: dedupctl query - --format short", PER_OP, "us per hash"),
    ("e2e", "single_get_p99", "local: single GET p99", SAME, "us per request"),
    ("e2e", "single_get_p99_ingest", "local: single GET p99 during ingest", SAME, "us per request"),
    ("e2e", "start_to_ready", "local: start -> READY, cold", SAME, "ms per start"),
    ("e2e", "bytes_per_entry", "local: data.mdb size", SAME, "bytes per entry"),
    ("e2e", "filter_bytes_per_entry", "local: chunk filters' memory", SAME, "bytes per entry"),
    ("fleet", "publish", "fleet: publish", PER_OP, "us per entry"),
    ("fleet", "lookup_misses", "fleet: Reader, misses", PER_OP, "us per hash"),
    ("fleet", "dedupd_hits_first_xorbs", "fleet: via dedupd, first xorbs", PER_OP, "us per hash"),
    ("fleet", "dedupd_hits_spread", "fleet: via dedupd, spread", PER_OP, "us per hash"),
    ("fleet", "bytes_per_entry", "fleet: PostgreSQL size", SAME, "bytes per entry"),
    ("fleet", "key_filter_bytes_per_keyed_entry", "fleet: key filters' memory", SAME, "bytes per keyed entry"),
]


def sampled(m):
    """Past 30 M bench_e2e builds its bare index in key order and times the
    bare inserts on a sample (issue 42): such a baseline is drawn hollow."""
    return "key order" in m.get("baseline_is", "")


def series(doc, name, cost):
    xs, ours, base, hollow, what = [], [], [], [], None
    for p in doc["points"]:
        m = p.get("metrics", {}).get(name)  # a failed size has none
        if not m or m.get("value") is None:
            continue
        xs.append(p["entries"])
        ours.append(cost(m["value"]))
        b = m.get("baseline")
        base.append(cost(b) if b else None)
        hollow.append(sampled(m))
        if what is None or not sampled(m):
            what = m.get("baseline_is", what)
    return xs, ours, base, hollow, what


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("e2e")
    ap.add_argument("fleet")
    ap.add_argument("-o", "--output", default="docs/performance-series.svg")
    args = ap.parse_args()
    try:
        import matplotlib

        matplotlib.use("svg")
        import matplotlib.lines
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plot_series.py: needs matplotlib (apt-get install python3-matplotlib)")
    plt.rcParams["svg.hashsalt"] = "dedupd"  # the same data draws the same file
    plt.rcParams["svg.fonttype"] = "none"
    docs = {}
    with open(args.e2e) as f:
        docs["e2e"] = json.load(f)
    with open(args.fleet) as f:
        docs["fleet"] = json.load(f)

    cols = 4
    rows = (len(PANELS) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.3 * rows))
    for ax, (src, name, title, cost, unit) in zip(axes.flat, PANELS):
        xs, ours, base, hollow, what = series(docs[src], name, cost)
        ax.set_xscale("log")
        ax.set_yscale("log")
        if what and any(hollow):
            what += ";\nhollow (past 30 M): a bare index built in key order"
        ax.set_title(title + ("\nbaseline: " + what if what else ""), fontsize=8)
        ax.set_ylabel(unit, fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(True, which="both", alpha=0.25)
        if not xs:
            ax.text(0.5, 0.5, "not measured", ha="center", transform=ax.transAxes)
            continue
        ax.plot(xs, ours, "o-", color="tab:blue")
        bx = [x for x, b in zip(xs, base) if b is not None]
        by = [b for b in base if b is not None]
        if by:
            ax.plot(bx, by, "--", color="tab:orange")
            for x, b, h in zip(xs, base, hollow):
                if b is not None:
                    ax.plot([x], [b], "s", color="tab:orange", mfc="white" if h else "tab:orange")
        ax.plot(xs, [ours[0] * x / xs[0] for x in xs], ":", color="grey")
        lo = min(ours + by)
        hi = max(ours + by)
        ax.set_ylim(lo / 2, max(hi * 2, lo * 8))
    spare = list(axes.flat)[len(PANELS):]
    for ax in spare:
        ax.axis("off")
    if spare:
        spare[0].legend(
            handles=[
                matplotlib.lines.Line2D([], [], color="tab:blue", marker="o", label="dedupd"),
                matplotlib.lines.Line2D([], [], color="tab:orange", marker="s", ls="--", label="bare baseline, same run"),
                matplotlib.lines.Line2D([], [], color="grey", ls=":", label="a cost growing as N"),
            ],
            loc="center",
            fontsize=9,
        )
    first = next((p["machine"] for p in docs["e2e"]["points"] if "machine" in p), {})
    fig.suptitle(
        "Cost per entry or per operation against chunk entries in the index (log-log); "
        f"{first.get('nproc', '?')} CPUs, {docs['e2e'].get('started', '')}",
        fontsize=10,
    )
    fig.supxlabel("chunk entries in the index", fontsize=9)
    fig.tight_layout()
    fig.savefig(args.output, metadata={"Date": None})
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
