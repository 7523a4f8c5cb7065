// Kuzu side of bench/run_graph.sh (issue 7 item 8): bulk load of the graph bench_graph
// generated (DIR/nodes.csv, DIR/edges.csv) and the two-hop queries from DIR/sources.txt.
//   node graph_peer_kuzu.cjs DIR      (kuzu from NODE_PATH; run_graph.sh installs it)
// Prints a human line per measurement on stderr and one JSON object on stdout.
'use strict';
const fs = require('fs');
const path = require('path');
const kuzu = require('kuzu');

const WARMUP = 20;
const dir = process.argv[2];
if (!dir) {
  console.error('usage: node graph_peer_kuzu.cjs DIR');
  process.exit(2);
}
const nowUs = () => Number(process.hrtime.bigint()) / 1e3;
const cpuMs = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e3; };
// Nearest-rank percentile, as bench_graph.c computes it.
function pct(v, q) {
  const s = [...v].sort((a, b) => a - b);
  let k = Math.ceil(q * s.length);
  if (k < 1) k = 1;
  return s[Math.min(k, s.length) - 1];
}
function run(conn, text) {
  const r = conn.querySync(text);
  const rows = r.getAllSync();
  r.close();
  return rows;
}

const sources = fs.readFileSync(path.join(dir, 'sources.txt'), 'utf8').trim().split('\n').map(Number);
const dbdir = path.join(dir, 'kuzu');
fs.rmSync(dbdir, { recursive: true, force: true });
fs.mkdirSync(dbdir, { recursive: true });
const db = new kuzu.Database(path.join(dbdir, 'graph.kz'));
const conn = new kuzu.Connection(db);
// Same columns as ours and SQLite's; the integer id is the primary key (Kuzu's point lookup),
// as SQLite's rowid is; ours looks nodes up by the @key name.
run(conn, 'CREATE NODE TABLE Person(id INT64, name STRING, age INT32, city STRING, PRIMARY KEY(id))');
run(conn, 'CREATE REL TABLE Knows(FROM Person TO Person)');

const out = { kuzu_version: kuzu.VERSION };
const c0 = cpuMs();
const t0 = nowUs();
run(conn, `COPY Person FROM '${path.join(dir, 'nodes.csv')}' (HEADER=false)`);
const t1 = nowUs();
run(conn, `COPY Knows FROM '${path.join(dir, 'edges.csv')}' (HEADER=false)`);
const t2 = nowUs();
run(conn, 'CHECKPOINT');
const t3 = nowUs();
out.kuzu_load_ms = (t3 - t0) / 1e3;
out.kuzu_load_cpu_ms = cpuMs() - c0;
console.error(`load kuzu   (COPY nodes ${((t1 - t0) / 1e3).toFixed(0)}, COPY edges ${((t2 - t1) / 1e3).toFixed(0)}, ` +
  `checkpoint ${((t3 - t2) / 1e3).toFixed(0)} ms) TOTAL ${out.kuzu_load_ms.toFixed(0)} ms, cpu ${out.kuzu_load_cpu_ms.toFixed(0)} ms`);
const counts = run(conn, 'MATCH (p:Person) WITH count(p) AS n MATCH ()-[k:Knows]->() RETURN n, count(k) AS e')[0];
out.kuzu_nodes = Number(counts.n);
out.kuzu_edges = Number(counts.e);

const QUERIES = {
  reach: 'MATCH (a:Person {id: $id})-[:Knows*1..2]->(c:Person) RETURN count(DISTINCT c.id) AS n',
  exact: 'MATCH (a:Person {id: $id})-[:Knows]->(:Person)-[:Knows]->(c:Person) RETURN count(DISTINCT c.id) AS n',
};
for (const [name, text] of Object.entries(QUERIES)) {
  const ps = conn.prepareSync(text);
  const one = (id) => {
    const r = conn.executeSync(ps, { id });
    const n = Number(r.getAllSync()[0].n);
    r.close();
    return n;
  };
  for (let i = 0; i < WARMUP; i++) one(sources[i % sources.length]);
  const v = [];
  let total = 0;
  for (const id of sources) {
    const q0 = nowUs();
    total += one(id);
    v.push(nowUs() - q0);
  }
  out[`kuzu_${name}_p50_us`] = pct(v, 0.5);
  out[`kuzu_${name}_p99_us`] = pct(v, 0.99);
  out[`kuzu_${name}_avg`] = total / sources.length;
  console.error(`kuzu ${name.padEnd(6)} p50 ${pct(v, 0.5).toFixed(1)} us, p99 ${pct(v, 0.99).toFixed(1)} us, ` +
    `avg count ${(total / sources.length).toFixed(1)}`);
}
console.log(JSON.stringify(out));
// The addon's finalizers have been seen to crash at exit (perf-anchors perfprobe): skip them.
process.exit(0);
