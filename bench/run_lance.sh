#!/usr/bin/env bash
# Lance benchmark of issue 3 item 7: our C Lance layer against lancedb 0.31.0 in one run.
#   bench/run_lance.sh [BUILD_DIR]      (env: RUNS=5 to change the repetitions)
# Prints each side's JSON line, then a table of medians and ratios (ours / lancedb; the goal is
# <= 1.0 for each, with our commit durable and lancedb's not).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
runs=${RUNS:-5}
dir=$(mktemp -d "${TMPDIR:-/var/tmp}/og-bench-lance-XXXXXX")
trap 'rm -rf "$dir"' EXIT

"$root/tests/interop/setup.sh"

peer=$(node "$root/bench/lance_peer.cjs" "$dir/peer" --runs "$runs")
echo "lancedb: $peer"

# ---- our side: bench/bench_lance.c ------------------------------------------------------------
# Makes the same tables (formulas in bench/lance_peer.cjs) as 2.0 datasets with durable commits
# through src/lance/dataset.h and prints ONE JSON line with the same keys: append_100k_6col_ms,
# scan_1m_4col_ms, scan_1m_1col_ms (medians over $runs runs, after one warm-up). Without the
# binary (not built yet), only lancedb's figures are printed.
ours=""
if [ -x "$build/bench/bench_lance" ]; then
    ours=$("$build/bench/bench_lance" "$dir/ours" --runs "$runs")
    echo "omnigraph: $ours"
else
    echo "omnigraph: (no $build/bench/bench_lance yet; lancedb side only)"
fi
# ------------------------------------------------------------------------------------------------

node -e '
const peer = JSON.parse(process.argv[1]);
const ours = process.argv[2] ? JSON.parse(process.argv[2]) : null;
const rows = [["append 100k rows x 6 cols", "append_100k_6col_ms"],
              ["full scan 1M rows x 4 cols", "scan_1m_4col_ms"],
              ["projected scan 1M rows x 1 col", "scan_1m_1col_ms"]];
console.log("benchmark".padEnd(32) + "lancedb ms".padStart(12) + "ours ms".padStart(12) + "ours/lancedb".padStart(14));
for (const [label, key] of rows) {
  const p = peer[key], o = ours ? ours[key] : undefined;
  const ratio = typeof o === "number" && p > 0 ? (o / p).toFixed(2) + "x" : "-";
  console.log(label.padEnd(32) + p.toFixed(1).padStart(12) + (typeof o === "number" ? o.toFixed(1) : "-").padStart(12) + ratio.padStart(14));
}
console.log(`(medians of ${peer.runs} runs; lancedb commits are not durable: no fsync)`);
' "$peer" "$ours"
