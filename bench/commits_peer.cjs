#!/usr/bin/env node
// commits_peer.cjs - the lancedb side of the single-row commit benchmark (issue 4 item 8).
//
//   node bench/commits_peer.cjs DIR [--commits N] [--depth D] [--window W] [--stable-row-ids 0|1] [--keep]
//
// On a fresh data storage version 2.0 table under DIR (created empty, like ours), N (default
// 1,000) sequential table.add() calls of one row each (id int64, name utf8, age int32 - the row
// of bench/bench_commits.c). Each add is one Lance commit; lancedb does not fsync on local disk,
// so its commits are not durable. The one-row Arrow tables are built before timing.
// With --depth D (default 0: off) two more tables are grown to version 10 and to version D (one
// fragment per add, as our "frags" table), then W (default 100) adds alternate between them.
// Prints ONE JSON line: p50/p99/mean in microseconds, and the samples' count.
// lancedb and apache-arrow are the pinned copies in tests/interop/node_modules (run
// tests/interop/setup.sh first; bench/run_commits.sh does).
'use strict';
const fs = require('fs');
const path = require('path');
const { createRequire } = require('module');

const req = createRequire(path.join(__dirname, '..', 'tests', 'interop', 'package.json'));
let lancedb, arrow;
try {
  lancedb = req('@lancedb/lancedb');
  arrow = req('apache-arrow');
} catch (e) {
  console.error(`commits_peer: cannot load lancedb (${e.message}); run tests/interop/setup.sh first`);
  process.exit(1);
}

function usage(msg) {
  console.error(`commits_peer: ${msg}\nusage: node bench/commits_peer.cjs DIR [--commits N] [--depth D] [--window W] [--stable-row-ids 0|1] [--keep]`);
  process.exit(2);
}

// --stable-row-ids (default 1, as bench_commits and our tables): lancedb's tables track stable
// row ids too, so both sides write the same per-fragment metadata.
const opt = { commits: 1000, depth: 0, window: 100, 'stable-row-ids': 1, keep: false };
const pos = [];
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  if (!a.startsWith('--')) { pos.push(a); continue; }
  const k = a.slice(2);
  if (!(k in opt)) usage(`unknown option ${a}`);
  if (k === 'keep') { opt.keep = true; continue; }
  if (i + 1 >= argv.length) usage(`${a} needs a value`);
  const v = argv[++i];
  if (!/^[0-9]+$/.test(v)) usage(`${a} needs a non-negative integer`);
  opt[k] = parseInt(v, 10);
}
if (pos.length !== 1) usage('one DIR is needed');
if (opt.commits < 1 || opt.window < 1) usage('--commits and --window must be positive');
const dir = path.resolve(pos[0]);
const STORAGE = { new_table_data_storage_version: '2.0' };
if (opt['stable-row-ids']) STORAGE.new_table_enable_stable_row_ids = 'true';
const nowUs = () => Number(process.hrtime.bigint()) / 1e3;

const fields = [new arrow.Field('id', new arrow.Int64(), false),
  new arrow.Field('name', new arrow.Utf8(), false),
  new arrow.Field('age', new arrow.Int32(), false)];
const schema = new arrow.Schema(fields);

// A one-row Arrow table (built from typed buffers, no schema inference).
function oneRow(id) {
  const name = new TextEncoder().encode('n' + id);
  const cols = [
    arrow.makeData({ type: new arrow.Int64(), length: 1, nullCount: 0, data: BigInt64Array.of(BigInt(id)) }),
    arrow.makeData({ type: new arrow.Utf8(), length: 1, nullCount: 0, valueOffsets: Int32Array.of(0, name.length), data: name }),
    arrow.makeData({ type: new arrow.Int32(), length: 1, nullCount: 0, data: Int32Array.of(30) }),
  ];
  const st = arrow.makeData({ type: new arrow.Struct(fields), length: 1, nullCount: 0, children: cols });
  return new arrow.Table(new arrow.RecordBatch(schema, st));
}

function pct(v, q) {
  const s = [...v].sort((a, b) => a - b);
  const k = Math.min(s.length, Math.max(1, Math.ceil(q * s.length)));
  return s[k - 1];
}

async function timedAdds(t, first, n) {
  const rows = [];
  for (let i = 0; i < n; i++) rows.push(oneRow(first + i));
  const v = [];
  for (let i = 0; i < n; i++) {
    const t0 = nowUs();
    await t.add(rows[i]);
    v.push(nowUs() - t0);
  }
  return v;
}

async function main() {
  fs.mkdirSync(dir, { recursive: true });
  const work = fs.mkdtempSync(path.join(dir, 'lancedb-'));
  const out = {};
  try {
    const db = await lancedb.connect(work);
    const t = await db.createEmptyTable('commits', schema, { mode: 'create', storageOptions: STORAGE });
    const v = await timedAdds(t, 0, opt.commits);
    const rows = await t.countRows();
    if (rows !== opt.commits) throw new Error(`expected ${opt.commits} rows, found ${rows}`);
    out.commits = opt.commits;
    out.lancedb_p50_us = pct(v, 0.5);
    out.lancedb_p99_us = pct(v, 0.99);
    out.lancedb_mean_us = v.reduce((a, b) => a + b, 0) / v.length;
    out.version = await t.version();
    if (opt.depth > 0) {
      // Two tables, grown to version 10 and to version D, then W adds alternating between them.
      const hiV = Math.max(opt.depth, 11);
      const lo = await db.createEmptyTable('depth_lo', schema, { mode: 'create', storageOptions: STORAGE });
      const hi = await db.createEmptyTable('depth_hi', schema, { mode: 'create', storageOptions: STORAGE });
      let id = 1000000;
      const grow = async (t, target) => {
        for (let v = await t.version(); v < target; v++) await t.add(oneRow(id++));
      };
      await grow(lo, 10);
      const t0 = nowUs();
      await grow(hi, hiV);
      out.depth_build_s = (nowUs() - t0) / 1e6;
      const rows = [];
      for (let i = 0; i < 2 * opt.window; i++) rows.push(oneRow(id++));
      const vlo = [], vhi = [];
      for (let i = 0; i < opt.window; i++) {
        let t1 = nowUs();
        await lo.add(rows[2 * i]);
        vlo.push(nowUs() - t1);
        t1 = nowUs();
        await hi.add(rows[2 * i + 1]);
        vhi.push(nowUs() - t1);
      }
      out.depth_lo = 10;
      out.depth_hi = hiV;
      out.depth_window = opt.window;
      out.depth_p50_lo_us = pct(vlo, 0.5);
      out.depth_p50_hi_us = pct(vhi, 0.5);
      out.depth_p99_lo_us = pct(vlo, 0.99);
      out.depth_p99_hi_us = pct(vhi, 0.99);
    }
  } finally {
    if (!opt.keep) fs.rmSync(work, { recursive: true, force: true });
  }
  console.log(JSON.stringify(out));
}

main().catch((e) => { console.error(`commits_peer: ${e.stack || e}`); process.exit(1); });
