#!/usr/bin/env bash
# Single-row commit benchmark of issue 4 item 8, all systems in one run, one directory:
#   bench/run_commits.sh [BUILD_DIR]
#   env: COMMITS=1000  sequential single-row commits per system
#        DEPTH=10000   history depth compared with depth 10 (0: skip the depth part)
#        FRAGS_DEPTH=3000  depth of the table with one fragment per version (its manifest
#                      grows with depth, so building it is quadratic: 10,000 took 13 min here)
#        WINDOW=100    commits measured at each depth
#        PEER_DEPTH=1  also measure lancedb's add at depth 10 and DEPTH (default 0)
#        STABLE=1      tables with stable row ids on both sides (0: off on both sides)
# Order: ours (durable) + SQLite WAL/FULL (bench_commits), then lancedb add (commits_peer.cjs),
# then the depth part. Prints each side's output, then the ratios: ours/lancedb (goal < 1.0,
# ours durable, lancedb's commits not) and ours/sqlite (goal <= 3.0).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
commits=${COMMITS:-1000}
depth=${DEPTH:-10000}
frags_depth=${FRAGS_DEPTH:-3000}
window=${WINDOW:-100}
stable=${STABLE:-1}
bin="$build/bench/bench_commits"
if [ ! -x "$bin" ]; then
    echo "run_commits: no $bin (it is built only when pkg-config finds sqlite3:" \
         "apt-get install libsqlite3-dev, then re-run cmake)" >&2
    exit 1
fi
dir=$(mktemp -d "${TMPDIR:-/var/tmp}/og-bench-commits-XXXXXX")
trap 'rm -rf "$dir"' EXIT

"$root/tests/interop/setup.sh" >/dev/null

echo "== ours + sqlite ($commits commits; stable row ids: $stable on both Lance sides) =="
"$bin" "$dir/c" --commits "$commits" --stable-row-ids "$stable" --no-depth --json "$dir/ours.json"
echo "== lancedb 0.31.0 add ($commits commits) =="
peer=$(node "$root/bench/commits_peer.cjs" "$dir/peer" --commits "$commits" --stable-row-ids "$stable")
echo "lancedb: $peer"
deep="{}"
peer_deep="{}"
if [ "$depth" -gt 0 ]; then
    echo "== history depth 10 vs $depth (one-fragment table: $frags_depth; window $window) =="
    "$bin" "$dir/d" --depth "$depth" --frags-depth "$frags_depth" --window "$window" --no-commits \
        --stable-row-ids "$stable" \
        --json "$dir/depth.json"
    deep=$(cat "$dir/depth.json")
    if [ "${PEER_DEPTH:-0}" = 1 ]; then
        peer_deep=$(node "$root/bench/commits_peer.cjs" "$dir/peerd" --commits 1 --depth "$frags_depth" --window "$window" --stable-row-ids "$stable")
        echo "lancedb depth: $peer_deep"
    fi
fi

node -e '
const [ours, peer, deep, pdeep] = process.argv.slice(1).map((s) => JSON.parse(s));
const f = (x) => (typeof x === "number" ? x.toFixed(0) : "-");
const r = (a, b) => (typeof a === "number" && typeof b === "number" && b > 0 ? (a / b).toFixed(2) + "x" : "-");
console.log("\n== summary (one run; microseconds) ==");
console.log("system".padEnd(40) + "p50".padStart(9) + "p99".padStart(9) + "  fsync/commit");
console.log("omnigraph stage+commit (durable)".padEnd(40) + f(ours.ours_p50_us).padStart(9) + f(ours.ours_p99_us).padStart(9) + "  " + ours.ours_per_commit.fsync.toFixed(2));
console.log("lancedb 0.31.0 add (not durable)".padEnd(40) + f(peer.lancedb_p50_us).padStart(9) + f(peer.lancedb_p99_us).padStart(9) + "  0 (no fsync on local disk)");
console.log("sqlite WAL synchronous=FULL".padEnd(40) + f(ours.sqlite_p50_us).padStart(9) + f(ours.sqlite_p99_us).padStart(9) + "  ~1 (fdatasync of the WAL)");
console.log("fdatasync floor F (4 KiB in place)".padEnd(40) + f(ours.floor_us).padStart(9));
console.log(`ours/lancedb  p50 ${r(ours.ours_p50_us, peer.lancedb_p50_us)}  p99 ${r(ours.ours_p99_us, peer.lancedb_p99_us)}   (goal < 1)`);
console.log(`ours/sqlite   p50 ${r(ours.ours_p50_us, ours.sqlite_p50_us)}  p99 ${r(ours.ours_p99_us, ours.sqlite_p99_us)}   (goal <= 3)`);
console.log(`ours/F p50 ${r(ours.ours_p50_us, ours.floor_us)}, sqlite/F p50 ${r(ours.sqlite_p50_us, ours.floor_us)}`);
const o = ours.ours_per_commit;
console.log(`ours store ops/commit: put ${o.put}, put_if_absent ${o.put_if_absent}, sync ${o.sync}, get ${o.get}, head ${o.head}, list ${o.list}, delete ${o.delete}; ${o.bytes_written} B written`);
for (const t of ["hist", "frags"]) {
  if (!deep[t]) continue;
  const d = deep[t];
  console.log(`depth ${t.padEnd(5)}: p50 @${deep.depth_lo} ${f(d.p50_lo_us)}, @${d.depth_hi} ${f(d.p50_hi_us)} -> ${r(d.p50_hi_us, d.p50_lo_us)}; p99 ${f(d.p99_lo_us)} -> ${f(d.p99_hi_us)}; fragments ${d.frags_lo} -> ${d.frags_hi}; store ops ${d.ops_flat ? "identical (flat)" : "DIFFER"}; B written/commit ${d.ops_lo.bytes_written} -> ${d.ops_hi.bytes_written}; deep history built in ${d.build_s.toFixed(1)} s`);
}
if (pdeep.depth_p50_lo_us !== undefined)
  console.log(`depth lancedb: p50 @${pdeep.depth_lo} ${f(pdeep.depth_p50_lo_us)}, @${pdeep.depth_hi} ${f(pdeep.depth_p50_hi_us)} -> ${r(pdeep.depth_p50_hi_us, pdeep.depth_p50_lo_us)}; p99 ${f(pdeep.depth_p99_lo_us)} -> ${f(pdeep.depth_p99_hi_us)}; deep history built in ${pdeep.depth_build_s.toFixed(1)} s`);
' "$(cat "$dir/ours.json")" "$peer" "$deep" "$peer_deep"
