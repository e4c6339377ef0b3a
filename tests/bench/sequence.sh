#!/usr/bin/env bash
# The measurement sequence behind docs/PERFORMANCE.md's current table, on a
# fresh clone of HEAD: the benches built as ./dev test builds them (plain
# RelWithDebInfo, -O2 -g1, warnings as errors), then each step below in turn,
# nothing else running. Each step's JSON is written to OUT as soon as that
# step ends, so a sequence cut short (a session ending) keeps what it has,
# and a later run of the same commit can do only the steps still missing.
#
#   tests/bench/sequence.sh OUT [STEP...]
#     STEP: e2e      bench_e2e --series 1M,10M,100M,268M --keys 4  (70 min in O)
#           e2e:SIZES  the same for SIZES only (e2e:268M), its points merged
#                      into OUT/e2e.json in place of those of the same size
#           fleet    bench_fleet --series 1M,3M,10M,30M,100M --keys 4  (50 min in O)
#           nokeys   bench_fleet --entries 1000000 --keys 0, three times
#     default: all three
#
# Scratch: BENCH_DIR (default /tmp/dedupd-sequence), about 50 GB at 268 M.
# Then: tests/bench/series_table.py OUT/e2e.json OUT/fleet.json for the
# tables, tests/bench/plot_series.py for the plot.
set -euo pipefail
out=$(realpath -m "${1:?usage: tests/bench/sequence.sh OUT [e2e|e2e:SIZES|fleet|nokeys]...}")
shift
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(e2e fleet nokeys)
scratch=${BENCH_DIR:-/tmp/dedupd-sequence}
here=$(cd "$(dirname "$0")/../.." && pwd)

mkdir -p "$out" "$scratch"
clone="$scratch/clone"
rm -rf "$clone"
git clone -q "$here" "$clone"
commit=$(git -C "$clone" rev-parse --short HEAD)
echo "sequence: fresh clone of $commit in $clone; JSON to $out" >&2
"$clone/packaging/install-deps"
cmake -S "$clone" -B "$clone/build" -G Ninja -DDEDUPD_TESTS=ON -DDEDUPD_BENCH=ON -DDEDUPD_WERROR=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" >/dev/null
cmake --build "$clone/build" -j "$(nproc)" --target bench_e2e bench_fleet
bench="$clone/build/tests/bench"

for step in "${steps[@]}"; do
  echo "sequence: $step of $commit from $(date -u '+%F %H:%M') UTC, load $(cut -d' ' -f1 /proc/loadavg)" >&2
  case "$step" in
    e2e)
      (cd "$scratch" && "$bench/bench_e2e" --series 1M,10M,100M,268M --keys 4 --dir "$scratch" --json "$out/e2e.json")
      ;;
    e2e:*)
      # A sequence cut short at its largest size can finish it in a later
      # session, on the same commit, without running the rest again.
      part="$out/e2e-${step#e2e:}.json"
      (cd "$scratch" && "$bench/bench_e2e" --series "${step#e2e:}" --keys 4 --dir "$scratch" --json "$part")
      python3 - "$out/e2e.json" "$part" <<'MERGE'
import json, os, sys
whole, part = sys.argv[1], sys.argv[2]
new = json.load(open(part))
doc = json.load(open(whole)) if os.path.exists(whole) else dict(new, points=[])
sizes = {p["entries"] for p in new["points"]}
doc["points"] = sorted([p for p in doc["points"] if p["entries"] not in sizes] + new["points"],
                       key=lambda p: p["entries"])
json.dump(doc, open(whole, "w"), indent=2)
MERGE
      ;;
    fleet)
      (cd "$scratch" && "$bench/bench_fleet" --series 1M,3M,10M,30M,100M --keys 4 --json "$out/fleet.json")
      ;;
    nokeys)
      for run in 1 2 3; do
        (cd "$scratch" && "$bench/bench_fleet" --entries 1000000 --keys 0 --json "$out/nokeys$run.json")
      done
      ;;
    *)
      echo "sequence: no step $step (e2e, e2e:SIZES, fleet, nokeys)" >&2
      exit 2
      ;;
  esac
done
echo "sequence: done, $commit, $(date -u '+%F %H:%M') UTC" >&2
