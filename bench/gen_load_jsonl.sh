#!/usr/bin/env bash
# The input of the load memory figure (docs/cli.md, "Memory"): a JSONL file shaped as
# bench/bench_graph writes graph.jsonl (Person nodes with name as @key, age, a city or null
# every 7th; then Knows edges between random nodes, without data.id), and its schema.
#   bench/gen_load_jsonl.sh OUT_DIR [NODES] [EDGES] [SEED]
# Defaults 3,000,000 nodes and 17,000,000 edges (1.06 GB). Writes OUT_DIR/graph.jsonl and
# OUT_DIR/schema.pg. Then, e.g.:
#   omnigraph init --schema OUT_DIR/schema.pg OUT_DIR/g.omni
#   /usr/bin/time -v omnigraph load --data OUT_DIR/graph.jsonl --mode overwrite OUT_DIR/g.omni
set -euo pipefail
out=${1:?usage: gen_load_jsonl.sh OUT_DIR [NODES] [EDGES] [SEED]}
nodes=${2:-3000000}
edges=${3:-17000000}
seed=${4:-42}
mkdir -p "$out"
cat >"$out/schema.pg" <<'PG'
node Person {
  name: String @key
  age: I32
  city: String?
}
edge Knows: Person -> Person
PG
awk -v n="$nodes" -v e="$edges" -v seed="$seed" 'BEGIN {
    split("berlin lisbon osaka lima oslo quito", city, " ")
    for (i = 0; i < n; i++) {
        age = 18 + i % 80
        if (i % 7 == 6)
            printf "{\"type\":\"Person\",\"data\":{\"name\":\"p%d\",\"age\":%d,\"city\":null}}\n", i, age
        else
            printf "{\"type\":\"Person\",\"data\":{\"name\":\"p%d\",\"age\":%d,\"city\":\"%s\"}}\n", i, age, city[1 + i % 6]
    }
    srand(seed)
    for (i = 0; i < e; i++)
        printf "{\"edge\":\"Knows\",\"from\":\"p%d\",\"to\":\"p%d\"}\n", int(rand() * n), int(rand() * n)
}' >"$out/graph.jsonl"
