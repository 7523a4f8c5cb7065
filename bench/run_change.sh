#!/usr/bin/env bash
# Costs that follow the change, not the graph (issue 14 item 7), in one run:
#   bench/run_change.sh [BUILD_DIR]
#   env: SMALL=1000 BIG=100000 (people; 5 Knows edges each), RUNS=15
# For a small and a big graph (same generator): the load; the share of index bytes; a
# one-edge insert and a one-node upsert through the CLI (a fresh process each, CPU from wait4);
# a cold key lookup and a cold two-hop count through the CLI against the sqlite3 CLI on the
# same data with indexes (nodes(name) unique, edges(src,dst), edges(dst)); and, on one warm
# handle, the two-hop query right after a one-edge insert against the same query warm.
# Prints the ratios of the issue's goals: big/small insert CPU <= 1.5; cold two-hop
# ours/sqlite3 <= 3; after-write/warm <= 2; index bytes <= 50% of the graph. The load against
# Kuzu is bench/run_graph.sh's.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
small=${SMALL:-1000}
big=${BIG:-100000}
runs=${RUNS:-15}
og="$build/omnigraph"
spawn="$build/bench/bench_spawn"
warm="$build/bench/bench_warm"
for b in "$og" "$spawn" "$warm"; do
    [ -x "$b" ] || { echo "run_change: no $b (build first: make)" >&2; exit 1; }
done
have_sqlite=1
command -v sqlite3 >/dev/null || { have_sqlite=0; echo "run_change: no sqlite3 CLI (apt-get install sqlite3): peer columns skipped" >&2; }

dir=$(mktemp -d "${TMPDIR:-/var/tmp}/og-bench-change-XXXXXX")
trap 'rm -rf "$dir"' EXIT
cat > "$dir/s.pg" <<'PG'
node Person {
  name: String @key
  age: I32
  city: String?
}
edge Knows: Person -> Person
PG
cat > "$dir/q.gq" <<'GQ'
query add_edge($a: String, $b: String) {
  insert Knows { from: $a, to: $b }
}
query add_person($n: String) {
  insert Person { name: $n, age: 30 }
}
query get($n: String) {
  match { $p: Person { name: $n } }
  return { $p.name, $p.age }
}
query hop2($n: String) {
  match { $p: Person { name: $n }  $p knows{2,2} $c }
  return { count($c) }
}
GQ

# n people p0..p(n-1), 5n edges with endpoints from a 32-bit LCG: JSONL for us, CSV for sqlite.
gen() {
    awk -v n="$1" -v out="$2" 'BEGIN {
        split("Paris Oslo Lima Rome Kyiv Quito", c, " ");
        j = out ".jsonl"; nc = out "_nodes.csv"; ec = out "_edges.csv";
        for (i = 0; i < n; i++) {
            city = (i % 7 == 0) ? "null" : "\"" c[i % 6 + 1] "\"";
            printf "{\"type\":\"Person\",\"data\":{\"name\":\"p%d\",\"age\":%d,\"city\":%s}}\n", i, 18 + i % 80, city > j;
            printf "%d,p%d,%d,%s\n", i, i, 18 + i % 80, (i % 7 == 0) ? "" : c[i % 6 + 1] > nc;
        }
        x = 12345;
        for (k = 0; k < 5 * n; k++) {
            x = (x * 1103515245 + 12345) % 2147483648; s = x % n;
            x = (x * 1103515245 + 12345) % 2147483648; d = x % n;
            printf "{\"edge\":\"Knows\",\"from\":\"p%d\",\"to\":\"p%d\"}\n", s, d > j;
            printf "%d,%d\n", s, d > ec;
        }
    }'
}

field() { sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p" <<<"$2"; }

declare -A R
for size in small big; do
    n=${!size}
    g="$dir/$size"
    gen "$n" "$g"
    "$og" init --schema "$dir/s.pg" "$g.og" >/dev/null
    R[$size.load]=$("$spawn" 1 "$og" load --data "$g.jsonl" --mode overwrite "$g.og")
    idx=$(du -sb "$g.og"/*/*/_ogkix 2>/dev/null | awk '{s+=$1} END {print s+0}')
    all=$(du -sb "$g.og" | awk '{print $1}')
    R[$size.index_share]=$(awk -v i="$idx" -v a="$all" 'BEGIN {printf "%.3f", i / (a - i)}')
    mid=$((n / 2))
    R[$size.edge]=$("$spawn" "$runs" "$og" mutate --store "$g.og" --file "$dir/q.gq" --name add_edge \
        --params "{\"a\":\"p1\",\"b\":\"p$mid\"}")
    R[$size.node]=$("$spawn" "$runs" "$og" mutate --store "$g.og" --file "$dir/q.gq" --name add_person \
        --params "{\"n\":\"p$((n / 3))\"}")
    R[$size.get]=$("$spawn" "$runs" "$og" query --store "$g.og" --file "$dir/q.gq" --name get \
        --params "{\"n\":\"p$mid\"}")
    R[$size.hop2]=$("$spawn" "$runs" "$og" query --store "$g.og" --file "$dir/q.gq" --name hop2 \
        --params "{\"n\":\"p$mid\"}")
    R[$size.warm]=$("$warm" "$g.og" "$dir/q.gq" hop2 "{\"n\":\"p$mid\"}" add_edge \
        "{\"a\":\"p2\",\"b\":\"p3\"}" 20)
    if [ $have_sqlite = 1 ]; then
        sqlite3 "$g.db" >/dev/null <<SQL
PRAGMA journal_mode=WAL;
CREATE TABLE nodes(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, age INT, city TEXT);
CREATE TABLE edges(src INT NOT NULL, dst INT NOT NULL);
.mode csv
.import ${g}_nodes.csv nodes
.import ${g}_edges.csv edges
CREATE INDEX edges_sd ON edges(src, dst);
CREATE INDEX edges_d ON edges(dst);
SQL
        R[$size.sq_get]=$("$spawn" "$runs" sqlite3 "$g.db" "SELECT name, age FROM nodes WHERE name = 'p$mid';")
        R[$size.sq_hop2]=$("$spawn" "$runs" sqlite3 "$g.db" "SELECT count(DISTINCT e2.dst) FROM nodes n JOIN edges e1 ON e1.src = n.id JOIN edges e2 ON e2.src = e1.dst WHERE n.name = 'p$mid';")
        R[$size.sq_edge]=$("$spawn" "$runs" sqlite3 "$g.db" "PRAGMA synchronous=FULL; INSERT INTO edges VALUES(1, $mid);")
    fi
done

printf '\n== issue 14: costs that follow the change (%s vs %s people, 5 edges each; medians of %s runs) ==\n' "$small" "$big" "$runs"
printf '%-44s %12s %12s %8s\n' "" "small" "big" "big/small"
row() { # label key field
    local a b
    a=$(field "$3" "${R[small.$2]:-}"); b=$(field "$3" "${R[big.$2]:-}")
    printf '%-44s %12s %12s %8s\n' "$1" "${a:--}" "${b:--}" \
        "$(awk -v a="${a:-0}" -v b="${b:-0}" 'BEGIN {if (a > 0) printf "%.2fx", b / a; else print "-"}')"
}
row "load (CLI, wall ms)" load wall_ms_p50
row "one-edge insert, CLI (CPU ms)" edge cpu_ms_p50
row "one-node upsert, CLI (CPU ms)" node cpu_ms_p50
row "cold key lookup, CLI (CPU ms)" get cpu_ms_p50
row "cold two-hop count, CLI (CPU ms)" hop2 cpu_ms_p50
row "sqlite3 CLI key lookup (CPU ms)" sq_get cpu_ms_p50
row "sqlite3 CLI two-hop count (CPU ms)" sq_hop2 cpu_ms_p50
row "sqlite3 CLI one-edge insert (CPU ms)" sq_edge cpu_ms_p50
row "warm two-hop (us)" warm warm_us_p50
row "two-hop right after a one-edge write (us)" warm after_write_us_p50
row "two-hop after idling as long (no write; us)" warm after_idle_us_p50
row "one-edge write on the warm handle (us)" warm write_us_p50
printf '%-44s %12s %12s\n' "index bytes / table bytes" "${R[small.index_share]}" "${R[big.index_share]}"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.2fx", a / b; else print "-"}'; }
e_s=$(field cpu_ms_p50 "${R[small.edge]}"); e_b=$(field cpu_ms_p50 "${R[big.edge]}")
h_b=$(field cpu_ms_p50 "${R[big.hop2]}"); s_b=$(field cpu_ms_p50 "${R[big.sq_hop2]:-}")
w_b=$(field warm_us_p50 "${R[big.warm]}"); a_b=$(field after_write_us_p50 "${R[big.warm]}")
i_b=$(field after_idle_us_p50 "${R[big.warm]}")
echo
echo "goal: one-edge insert CPU big/small <= 1.5: $(ratio "$e_b" "$e_s")"
echo "goal: cold CLI two-hop ours/sqlite3 <= 3 (big): $(ratio "$h_b" "${s_b:-0}")"
echo "goal: two-hop after a write / warm <= 2 (big): $(ratio "$a_b" "$w_b")"
echo "      the same after an idle pause as long as the write (the machine's floor): $(ratio "$i_b" "$w_b"); after a write / after idle: $(ratio "$a_b" "$i_b")"
echo "goal: index bytes <= 50% of the table bytes (big): ${R[big.index_share]}"
