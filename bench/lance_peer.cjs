#!/usr/bin/env node
// lance_peer.cjs - the lancedb side of the Lance benchmark (issue 3 item 7).
//
//   node bench/lance_peer.cjs DIR [--runs N] [--scan-rows N] [--append-rows N] [--keep]
//                                 [--scan-table DIR/NAME.lance]
//
// Measures, on data storage version 2.0 tables under DIR (made fresh, removed afterwards unless
// --keep):
//   append   add() of 100k rows x 6 columns (int64, float64, utf8, bool, int32, float32) to an
//            existing table; one fresh table per run, so every run appends to the same state
//   scan4    full scan of 1M rows x 4 columns (int64, float64, utf8, int32) into Arrow
//   scan1    projected scan of one of those columns (float64)
// Each is repeated --runs times (default 5) after one untimed warm-up; the median goes to stdout
// as one JSON object (all samples too). Inputs are built before timing as Arrow columns, so no
// per-row JS object conversion is measured. Scans run warm (page cache).
//
// The data is defined by formulas (row i), so the C side can build identical tables:
//   append table: id=i (int64), f64=i*0.5, s="row-"+i, b=(i%3==0), i32=i%1000-500, f32=i%100*0.25
//   scan table:   id=i (int64), f64=i*0.25, s="s"+(i%100000), i32=i%7919
// --scan-table PATH scans a Lance table someone else wrote (e.g. our C writer) instead of making
// one; it must have the scan table's columns.
//
// lancedb and apache-arrow are the pinned copies in tests/interop/node_modules (run
// tests/interop/setup.sh first; bench/run_lance.sh does).
'use strict';
const fs = require('fs');
const path = require('path');
const { createRequire } = require('module');

const interop = path.join(__dirname, '..', 'tests', 'interop', 'package.json');
const req = createRequire(interop);
let lancedb, arrow;
try {
  lancedb = req('@lancedb/lancedb');
  arrow = req('apache-arrow');
} catch (e) {
  console.error(`lance_peer: cannot load lancedb (${e.message}); run tests/interop/setup.sh first`);
  process.exit(1);
}

function usage(msg) {
  console.error(`lance_peer: ${msg}\nusage: node bench/lance_peer.cjs DIR [--runs N] [--scan-rows N] [--append-rows N] [--keep] [--scan-table PATH]`);
  process.exit(2);
}

const argv = process.argv.slice(2);
const opt = { runs: 5, 'scan-rows': 1000000, 'append-rows': 100000, keep: false, 'scan-table': null };
const pos = [];
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  if (!a.startsWith('--')) { pos.push(a); continue; }
  const k = a.slice(2);
  if (!(k in opt)) usage(`unknown option ${a}`);
  if (k === 'keep') { opt.keep = true; continue; }
  if (i + 1 >= argv.length) usage(`${a} needs a value`);
  const v = argv[++i];
  if (k === 'scan-table') opt[k] = v;
  else if (/^[1-9][0-9]*$/.test(v)) opt[k] = parseInt(v, 10);
  else usage(`${a} needs a positive integer`);
}
if (pos.length !== 1) usage('one DIR is needed');
const dir = path.resolve(pos[0]);

const STORAGE = { new_table_data_storage_version: '2.0' };
const nowMs = () => Number(process.hrtime.bigint()) / 1e6;

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const n = s.length;
  return n % 2 ? s[n >> 1] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

function utf8Data(n, f) {
  const enc = new TextEncoder();
  const offs = new Int32Array(n + 1);
  const parts = new Array(n);
  let total = 0;
  for (let i = 0; i < n; i++) { parts[i] = enc.encode(f(i)); total += parts[i].length; offs[i + 1] = total; }
  const data = new Uint8Array(total);
  for (let i = 0; i < n; i++) data.set(parts[i], offs[i]);
  return arrow.makeData({ type: new arrow.Utf8(), length: n, nullCount: 0, valueOffsets: offs, data });
}

function prim(type, Arr, n, f) {
  const data = new Arr(n);
  for (let i = 0; i < n; i++) data[i] = f(i);
  return arrow.makeData({ type, length: n, nullCount: 0, data });
}

function boolData(n, f) {
  const data = new Uint8Array((n + 7) >> 3);
  for (let i = 0; i < n; i++) if (f(i)) data[i >> 3] |= 1 << (i & 7);
  return arrow.makeData({ type: new arrow.Bool(), length: n, nullCount: 0, data });
}

function table(fields, cols, n) {
  const schema = new arrow.Schema(fields);
  const st = arrow.makeData({ type: new arrow.Struct(fields), length: n, nullCount: 0, children: cols });
  return new arrow.Table(new arrow.RecordBatch(schema, st));
}

function appendTable(first, n) {
  const F = (name, t) => new arrow.Field(name, t, false);
  const fields = [F('id', new arrow.Int64()), F('f64', new arrow.Float64()), F('s', new arrow.Utf8()),
    F('b', new arrow.Bool()), F('i32', new arrow.Int32()), F('f32', new arrow.Float32())];
  const g = (i) => first + i;
  return table(fields, [
    prim(fields[0].type, BigInt64Array, n, (i) => BigInt(g(i))),
    prim(fields[1].type, Float64Array, n, (i) => g(i) * 0.5),
    utf8Data(n, (i) => 'row-' + g(i)),
    boolData(n, (i) => g(i) % 3 === 0),
    prim(fields[4].type, Int32Array, n, (i) => (g(i) % 1000) - 500),
    prim(fields[5].type, Float32Array, n, (i) => (g(i) % 100) * 0.25),
  ], n);
}

function scanTable(n) {
  const F = (name, t) => new arrow.Field(name, t, false);
  const fields = [F('id', new arrow.Int64()), F('f64', new arrow.Float64()), F('s', new arrow.Utf8()), F('i32', new arrow.Int32())];
  return table(fields, [
    prim(fields[0].type, BigInt64Array, n, (i) => BigInt(i)),
    prim(fields[1].type, Float64Array, n, (i) => i * 0.25),
    utf8Data(n, (i) => 's' + (i % 100000)),
    prim(fields[3].type, Int32Array, n, (i) => i % 7919),
  ], n);
}

async function main() {
  fs.mkdirSync(dir, { recursive: true });
  const work = fs.mkdtempSync(path.join(dir, 'lance-peer-'));
  const db = await lancedb.connect(work);
  const R = opt.runs;
  const out = { engine: 'lancedb', lancedb: '0.31.0', data_storage_version: '2.0', durable_commit: false, runs: R };

  // append: a fresh 1-row table per run (untimed), then add() of append-rows rows (timed)
  const N = opt['append-rows'];
  const batch = appendTable(1, N);
  const appendMs = [];
  for (let r = 0; r <= R; r++) {
    const t = await db.createTable(`append${r}`, appendTable(0, 1), { mode: 'create', storageOptions: STORAGE });
    const t0 = nowMs();
    await t.add(batch);
    const dt = nowMs() - t0;
    if ((await t.countRows()) !== N + 1) throw new Error('append: wrong row count');
    if (r > 0) appendMs.push(dt); // run 0 is the warm-up
  }

  // scans
  let scanT;
  const M = opt['scan-rows'];
  if (opt['scan-table']) {
    const p = path.resolve(opt['scan-table']);
    const sdb = await lancedb.connect(path.dirname(p));
    scanT = await sdb.openTable(path.basename(p).replace(/\.lance$/, ''));
  } else {
    scanT = await db.createTable('scan', scanTable(M), { mode: 'create', storageOptions: STORAGE });
  }
  const rows = await scanT.countRows();
  const scan4 = [], scan1 = [];
  for (let r = 0; r <= R; r++) {
    let t0 = nowMs();
    const all = await scanT.query().select(['id', 'f64', 's', 'i32']).toArrow();
    const d4 = nowMs() - t0;
    if (all.numRows !== rows || all.numCols !== 4) throw new Error('scan4: wrong shape');
    t0 = nowMs();
    const one = await scanT.query().select(['f64']).toArrow();
    const d1 = nowMs() - t0;
    if (one.numRows !== rows || one.numCols !== 1) throw new Error('scan1: wrong shape');
    if (r > 0) { scan4.push(d4); scan1.push(d1); }
  }

  const round = (x) => Math.round(x * 100) / 100;
  out.append_rows = N;
  out.scan_rows = rows;
  out.append_100k_6col_ms = round(median(appendMs));
  out.scan_1m_4col_ms = round(median(scan4));
  out.scan_1m_1col_ms = round(median(scan1));
  out.samples = { append: appendMs.map(round), scan4: scan4.map(round), scan1: scan1.map(round) };
  if (opt.keep) out.kept = work;
  else fs.rmSync(work, { recursive: true, force: true });
  process.stdout.write(JSON.stringify(out) + '\n');
}

main().catch((e) => { console.error(`lance_peer: ${e && e.message ? e.message : e}`); process.exit(1); });
