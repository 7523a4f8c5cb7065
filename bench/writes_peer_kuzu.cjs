// Kuzu side of bench/run_history.sh (issue 13 item 7a): N single-node writes, one auto-committed
// CREATE each, keyed like ours (name is the primary key), reporting p50/p99 per window of W.
//   node writes_peer_kuzu.cjs DIR [N (1000)] [W (200)]   (kuzu from NODE_PATH)
// Prints one JSON object on stdout: {"windows":[{"depth","p50_ms","p99_ms"}...]}.
'use strict';
const fs = require('fs');
const path = require('path');
const kuzu = require('kuzu');

const dir = process.argv[2];
const n = Number(process.argv[3] || 1000), w = Number(process.argv[4] || 200);
if (!dir || !(n > 0) || !(w > 1)) {
  console.error('usage: node writes_peer_kuzu.cjs DIR [N] [W]');
  process.exit(2);
}
const nowMs = () => Number(process.hrtime.bigint()) / 1e6;
// Nearest-rank percentile, as bench_history.c takes it (sorted, index q*W).
const at = (s, q) => s[Math.min(s.length - 1, Math.floor(q * s.length))];

fs.rmSync(dir, { recursive: true, force: true });
fs.mkdirSync(dir, { recursive: true });
const db = new kuzu.Database(path.join(dir, 'graph.kz'));
const conn = new kuzu.Connection(db);
conn.querySync('CREATE NODE TABLE Person(name STRING, age INT32, PRIMARY KEY(name))').close();
const ins = conn.prepareSync('CREATE (:Person {name: $n, age: $a})');
const out = { peer: 'kuzu', windows: [] };
let lat = [];
for (let i = 1; i <= n; i++) {
  const t = nowMs();
  conn.executeSync(ins, { n: `person-${i}`, a: i % 90 }).close();
  lat.push(nowMs() - t);
  if (i % w === 0) {
    lat.sort((a, b) => a - b);
    out.windows.push({ depth: i, p50_ms: at(lat, 0.5), p99_ms: at(lat, 0.99) });
    console.error(`kuzu ${String(i).padStart(8)} p50 ${at(lat, 0.5).toFixed(2)} ms p99 ${at(lat, 0.99).toFixed(2)} ms`);
    lat = [];
  }
}
const r = conn.querySync('MATCH (p:Person) RETURN count(*) AS c');
const c = Number(r.getAllSync()[0].c);
r.close();
if (c !== n) { console.error(`kuzu: ${c} rows, expected ${n}`); process.exit(1); }
console.log(JSON.stringify(out));
