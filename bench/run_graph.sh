#!/usr/bin/env bash
# Graph benchmark of issue 7 item 8, all systems in one run, one directory:
#   bench/run_graph.sh [BUILD_DIR]
#   env: NODES=100000 EDGES=500000 QUERIES=1000 SEED=42
# bench_graph generates the graph (JSONL for us, CSV for the peers, the query sources), loads
# it into our engine and SQLite and times the two-hop queries; graph_peer_kuzu.cjs loads the
# same CSVs into Kuzu 0.11.3 (pinned in bench/graph_peer/package-lock.json, installed with
# `npm ci` into the build directory, never into the source tree) and runs the same sources.
# Prints each side's output, then the ratios against the goals of the issue:
#   load ours/kuzu <= 1;  two-hop p50 ours/sqlite <= 2 and ours/kuzu <= 0.1.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
nodes=${NODES:-100000}
edges=${EDGES:-500000}
queries=${QUERIES:-1000}
seed=${SEED:-42}
bin="$build/bench/bench_graph"
if [ ! -x "$bin" ]; then
    echo "run_graph: no $bin (it is built only when pkg-config finds sqlite3:" \
         "apt-get install libsqlite3-dev, then re-run cmake)" >&2
    exit 1
fi
# Kuzu, installed once per build directory from the lock.
. "$root/bench/kuzu_peer.sh"

dir=$(mktemp -d "${TMPDIR:-/var/tmp}/og-bench-graph-XXXXXX")
trap 'rm -rf "$dir"' EXIT
echo "== machine: $(nproc) cpus, loadavg $(cut -d' ' -f1-3 /proc/loadavg) =="
echo "== ours + sqlite ($nodes nodes, $edges edges, $queries two-hop sources) =="
"$bin" "$dir/g" --nodes "$nodes" --edges "$edges" --queries "$queries" --seed "$seed" \
    --json "$dir/ours.json"
echo "== kuzu =="
kz=$(NODE_PATH="$peer/node_modules" node "$root/bench/graph_peer_kuzu.cjs" "$dir/g")
echo "== loadavg after: $(cut -d' ' -f1-3 /proc/loadavg) =="

node -e '
const [o, k] = process.argv.slice(1).map((s) => JSON.parse(s));
const f = (x, d = 0) => (typeof x === "number" ? x.toFixed(d) : "-");
const r = (a, b) => (typeof a === "number" && typeof b === "number" && b > 0 ? Number((a / b).toPrecision(3)) + "x" : "-");
if (k.kuzu_nodes !== o.nodes || k.kuzu_edges !== o.edges)
  console.log(`WARNING: kuzu loaded ${k.kuzu_nodes} nodes / ${k.kuzu_edges} edges`);
console.log("\n== summary (one run) ==");
console.log("load (ms)".padEnd(52) + "wall".padStart(9) + "cpu".padStart(9));
console.log("ours load --mode overwrite (parse+validate+commit)".padEnd(52) + f(o.ours_load_ms).padStart(9) + f(o.ours_load_cpu_ms).padStart(9));
console.log("kuzu COPY nodes + COPY edges + CHECKPOINT".padEnd(52) + f(k.kuzu_load_ms).padStart(9) + f(k.kuzu_load_cpu_ms).padStart(9));
console.log("sqlite one txn, indexes after, WAL/FULL".padEnd(52) + f(o.sqlite_load_ms).padStart(9) + f(o.sqlite_load_cpu_ms).padStart(9));
console.log(`load ours/kuzu wall ${r(o.ours_load_ms, k.kuzu_load_ms)} cpu ${r(o.ours_load_cpu_ms, k.kuzu_load_cpu_ms)} (goal <= 1);` +
            ` ours/sqlite wall ${r(o.ours_load_ms, o.sqlite_load_ms)} cpu ${r(o.ours_load_cpu_ms, o.sqlite_load_cpu_ms)}`);
console.log("\ntwo-hop from a random node, warm (us)".padEnd(52) + "p50".padStart(9) + "p99".padStart(9) + "  avg count");
const row = (name, p50, p99, avg) => console.log(name.padEnd(52) + f(p50, 1).padStart(9) + f(p99, 1).padStart(9) + "  " + f(avg, 2));
row("ours knows{1,2} (<= 2 hops)", o.ours_reach_p50_us, o.ours_reach_p99_us, o.ours_reach_avg);
row("sqlite recursive CTE <= 2", o.sqlite_cte_p50_us, o.sqlite_cte_p99_us, o.sqlite_cte_avg);
row("kuzu -[:Knows*1..2]->", k.kuzu_reach_p50_us, k.kuzu_reach_p99_us, k.kuzu_reach_avg);
row("ours knows{2,2} (exactly 2)", o.ours_exact_p50_us, o.ours_exact_p99_us, o.ours_exact_avg);
row("sqlite join COUNT(DISTINCT e2.dst)", o.sqlite_join_p50_us, o.sqlite_join_p99_us, o.sqlite_join_avg);
row("kuzu ()-[:Knows]->()-[:Knows]->() DISTINCT", k.kuzu_exact_p50_us, k.kuzu_exact_p99_us, k.kuzu_exact_avg);
console.log(`<= 2 hops:  ours/sqlite p50 ${r(o.ours_reach_p50_us, o.sqlite_cte_p50_us)} p99 ${r(o.ours_reach_p99_us, o.sqlite_cte_p99_us)} (goal <= 2);` +
            ` ours/kuzu p50 ${r(o.ours_reach_p50_us, k.kuzu_reach_p50_us)} p99 ${r(o.ours_reach_p99_us, k.kuzu_reach_p99_us)} (goal <= 0.1)`);
console.log(`exactly 2:  ours/sqlite-join p50 ${r(o.ours_exact_p50_us, o.sqlite_join_p50_us)} p99 ${r(o.ours_exact_p99_us, o.sqlite_join_p99_us)} (goal <= 2);` +
            ` ours/kuzu p50 ${r(o.ours_exact_p50_us, k.kuzu_exact_p50_us)} p99 ${r(o.ours_exact_p99_us, k.kuzu_exact_p99_us)} (goal <= 0.1)`);
console.log(`ours: first query on a cold cache ${f(o.ours_first_query_ms, 1)} ms (ids + CSR); store ops during the timed queries: ${o.ours_query_store_ops}`);
' "$(cat "$dir/ours.json")" "$kz"
