#!/usr/bin/env bash
# Single-node durable graph writes of issue 13 item 7(a, b), all systems on this machine:
#   bench/run_history.sh [BUILD_DIR]      env: WRITES=1000 WINDOW=200
# bench_history makes WRITES keyed one-node writes through the public API (one commit each)
# and alternates each with a SQLite INSERT (WAL, synchronous=FULL); then writes_peer_kuzu.cjs
# makes the same writes in Kuzu 0.11.3 (one auto-committed CREATE each, installed as
# run_graph.sh does). Prints both outputs and the p50 ratios ours/sqlite and ours/kuzu at
# the last window (goal of the issue: ours/sqlite <= 5).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
writes=${WRITES:-1000}
window=${WINDOW:-200}
bin="$build/bench/bench_history"
[ -x "$bin" ] || { echo "run_history: no $bin (build first)" >&2; exit 1; }
. "$root/bench/kuzu_peer.sh"

dir=$(mktemp -d "${TMPDIR:-/var/tmp}/og-bench-history-XXXXXX")
trap 'rm -rf "$dir"' EXIT
echo "== machine: $(nproc) cpus, loadavg $(cut -d' ' -f1-3 /proc/loadavg) =="
echo "== ours + sqlite ($writes writes) =="
OG_BENCH_NO_CLEANUP=1 "$bin" "$dir/g" "$writes" "$window" | tee "$dir/ours.txt"
echo "== kuzu =="
kz=$(NODE_PATH="$peer/node_modules" node "$root/bench/writes_peer_kuzu.cjs" "$dir/kuzu" "$writes" "$window")
last=$(tail -n 1 "$dir/ours.txt")
ours=$(echo "$last" | awk '{print $2}')
sqlite=$(echo "$last" | awk '{print $9}')
kuzu=$(echo "$kz" | sed 's/.*"p50_ms":\([0-9.e-]*\)[^}]*}]}$/\1/')
echo "== p50 at depth $writes: ours $ours ms, sqlite $sqlite ms, kuzu $kuzu ms =="
awk -v o="$ours" -v s="$sqlite" -v k="$kuzu" \
    'BEGIN { printf "ours/sqlite %.1f (goal <= 5), ours/kuzu %.2f\n", o / s, o / k }'
