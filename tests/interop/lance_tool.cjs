#!/usr/bin/env node
// lance_tool.cjs - the lancedb (node) side of the omnigraph Lance interop suite.
//
// Subcommands (every one prints JSON on stdout; errors go to stderr, exit code 2 for bad usage,
// 1 for any other failure):
//   make-table DIR NAME --kind K [--rows N] [--v1-names] [--stable-row-ids] [--format 2.0|2.1|default]
//   dump       DIR NAME [--version N] [--columns a,b] [--out FILE]    canonical JSON lines (README.md)
//   expect     --kind K [--rows N] [--version N] [--columns a,b] [--format 2.0|2.1] [--out FILE]
//              the rows a make-table of that kind must contain, computed without lancedb
//   append     DIR NAME --rows N     rows from the shared column generator, ids after max(id)
//   delete     DIR NAME --where EXPR
//   versions   DIR NAME
//   count      DIR NAME [--version N]
//   inspect    DIR NAME             files on disk: manifest naming, data format, feature flags,
//                                  fragments, deletion files, the largest row id
//   schema     DIR NAME | --kind K  fields with their Lance logical type strings
//   selftest                       checks of the canonical printer against independent oracles
//   kinds                          the table kinds with their default row counts
//
// A table NAME lives at DIR/NAME.lance (lancedb's layout). apache-arrow and lancedb (loaded on
// first use) come from the interop preamble, tests/support/lancedb_tool.cjs.
'use strict';
const fs = require('fs');
const path = require('path');
const tool = require('../support/lancedb_tool.cjs');
const { arrow, lancedb, UsageError } = tool;

// ---------------------------------------------------------------------------------------------
// Arrow types used by the tables. Field names are the contract with the C side.

const T = {
  i32: () => new arrow.Int32(),
  u32: () => new arrow.Uint32(),
  i64: () => new arrow.Int64(),
  u64: () => new arrow.Uint64(),
  f32: () => new arrow.Float32(),
  f64: () => new arrow.Float64(),
  bool: () => new arrow.Bool(),
  utf8: () => new arrow.Utf8(),
  lutf8: () => new arrow.LargeUtf8(),
  bin: () => new arrow.Binary(),
  lbin: () => new arrow.LargeBinary(),
  d32: () => new arrow.DateDay(),
  d64: () => new arrow.DateMillisecond(),
  tsms: () => new arrow.TimestampMillisecond(null),
  tsus: () => new arrow.TimestampMicrosecond('UTC'),
  list: (t) => new arrow.List(new arrow.Field('item', t, true)),
  fsl: (t, n) => new arrow.FixedSizeList(n, new arrow.Field('item', t, true)),
  struct: (fields) => new arrow.Struct(fields),
};

// ---------------------------------------------------------------------------------------------
// The column generator: value(id) for each known column name, in the "model" representation the
// canonical printer takes (see printValue): numbers for <=32-bit ints, floats and date32 days;
// bigint for 64-bit ints, date64 ms and timestamps; string; Uint8Array; arrays; plain objects.

const I64_MAX = (1n << 63n) - 1n;
const I64_MIN = -(1n << 63n);
const U64_MAX = (1n << 64n) - 1n;
const SPECIAL_STRING = 'quote " back \\ nl \n tab \t cr \r ctl \u0001\u001f del \u007f é ü 中文 😀';

function bytesOf(id, len) {
  const b = new Uint8Array(len);
  for (let k = 0; k < len; k++) b[k] = (id * 31 + k * 17) & 255;
  return b;
}

const COLUMNS = {
  id: { type: () => T.i64(), nullable: false, value: (i) => BigInt(i) },
  i32: {
    type: () => T.i32(), nullable: true,
    value: (i) => (i === 1 ? -2147483648 : i === 2 ? 2147483647 : i % 11 === 5 ? null : ((i * 7919) % 200001) - 100000),
  },
  u32: {
    type: () => T.u32(), nullable: true,
    value: (i) => (i === 3 ? 4294967295 : i % 17 === 9 ? null : Math.imul(i, 2654435761 | 0) >>> 0),
  },
  i64: {
    type: () => T.i64(), nullable: true,
    value: (i) => {
      if (i === 4) return I64_MAX;
      if (i === 5) return I64_MIN;
      if (i === 7) return (1n << 53n) + 1n;
      if (i % 13 === 6) return null;
      return BigInt(i) * 1000000007n * (i % 2 ? -1n : 1n);
    },
  },
  u64: {
    type: () => T.u64(), nullable: true,
    value: (i) => (i === 8 ? U64_MAX : i % 19 === 10 ? null : BigInt(i) * 6700417n + (1n << 40n)),
  },
  f32: {
    type: () => T.f32(), nullable: true,
    value: (i) => (i % 29 === 13 ? null : i % 17 === 0 ? Math.fround(i / 3) : (i % 1000) * 0.25 - 100),
  },
  f64: {
    type: () => T.f64(), nullable: true,
    value: (i) => {
      const special = { 8: 1e300, 9: 5e-324, 10: -0, 11: 1e21, 12: 1.5e-7, 13: 123456789012345680000, 14: -1.7976931348623157e308 };
      if (i in special) return special[i];
      if (i % 31 === 20) return null;
      return i % 19 === 0 ? i / 7 : i * 1.5 - 1000.125;
    },
  },
  b: { type: () => T.bool(), nullable: true, value: (i) => (i % 7 === 3 ? null : i % 2 === 0) },
  s: {
    type: () => T.utf8(), nullable: true,
    value: (i) => (i === 14 ? SPECIAL_STRING : i === 15 ? '' : i % 3 === 2 ? null : 's' + i),
  },
  ls: {
    type: () => T.lutf8(), nullable: true,
    value: (i) => (i % 10 === 9 ? null : ('L' + i + '-').repeat(100).slice(0, 260 + (i % 50))),
  },
  bin: { type: () => T.bin(), nullable: true, value: (i) => (i % 5 === 1 ? null : bytesOf(i, i % 6)) },
  lbin: { type: () => T.lbin(), nullable: true, value: (i) => (i % 4 === 2 ? null : bytesOf(i + 1, i % 9)) },
  d32: { type: () => T.d32(), nullable: true, value: (i) => (i % 12 === 11 ? null : ((i * 37) % 40000) - 10000) },
  d64: {
    type: () => T.d64(), nullable: true,
    value: (i) => (i % 14 === 13 ? null : BigInt(((i * 53) % 50000) - 20000) * 86400000n),
  },
  ts_ms: {
    type: () => T.tsms(), nullable: true,
    value: (i) => (i % 15 === 14 ? null : i % 10 === 9 ? -BigInt(i) * 100000007n : 1700000000000n + BigInt(i) * 1234567n),
  },
  ts_us: {
    type: () => T.tsus(), nullable: true,
    value: (i) => (i % 9 === 4 ? null : i % 10 === 3 ? -BigInt(i) * 1000003n : 1700000000000000n + BigInt(i) * 1000001n),
  },
  li: {
    type: () => T.list(T.i32()), nullable: true,
    value: (i) => {
      if (i % 5 === 4) return null;
      const n = i % 4; // 0 gives an empty list
      const out = [];
      for (let k = 0; k < n; k++) out.push((i + k) % 10 === 7 ? null : i * 10 + k);
      return out;
    },
  },
  v4: {
    type: () => T.fsl(T.f32(), 4), nullable: true,
    value: (i) => (i % 23 === 22 ? null : [i, i + 0.25, i + 0.5, -i - 0.75].map(Math.fround)),
  },
  st: {
    type: () => T.struct([new arrow.Field('a', T.i32(), true), new arrow.Field('b', T.utf8(), true)]), nullable: true,
    value: (i) => (i % 8 === 7 ? null : { a: i % 6 === 1 ? null : i * 3, b: i % 9 === 2 ? null : 'b' + i }),
  },
  // columns of the "big" kind: data that leads lance to different encodings
  run: { type: () => T.i64(), nullable: false, value: (i) => BigInt(Math.floor(i / 1000)) },
  cat: { type: () => T.utf8(), nullable: true, value: (i) => 'category-' + ((i * 7) % 50) },
  small: { type: () => T.i32(), nullable: true, value: (i) => i % 8 },
  allnull: { type: () => T.utf8(), nullable: true, value: () => null },
  long: {
    type: () => T.utf8(), nullable: true,
    value: (i) => (i % 100 === 0 ? ('long' + i + ' ').repeat(60) : 'x' + (i % 1000)),
  },
  // 128-d vectors
  vec: {
    type: () => T.fsl(T.f32(), 128), nullable: true,
    value: (i) => {
      const v = new Array(128);
      for (let k = 0; k < 128; k++) v[k] = Math.fround(((i * 131 + k * 7) % 1000) / 8 - 50);
      return v;
    },
  },
};

const SETS = {
  all: ['id', 'i32', 'u32', 'i64', 'u64', 'f32', 'f64', 'b', 's', 'ls', 'bin', 'lbin', 'd32', 'd64', 'ts_ms', 'ts_us', 'li', 'v4', 'st'],
  basic: ['id', 'i32', 'i64', 'f64', 'b', 's', 'li', 'v4', 'st'],
  big: ['id', 'run', 'cat', 'small', 'allnull', 'long', 'f64'],
  vec: ['id', 'vec'],
};

// Each kind: a column set, a default row count, and steps. Step 0 creates the table with ids
// [0, rows); later steps append or delete. Version v of the table is the state after step v-1.
const KINDS = {
  types: { set: 'all', rows: 1500, steps: [] },
  big: { set: 'big', rows: 20000, steps: [] },
  vectors: { set: 'vec', rows: 2000, steps: [] },
  appended: { set: 'basic', rows: 1500, steps: [{ append: 1 }] }, // append as many rows again
  deleted_few: { set: 'basic', rows: 3000, steps: [{ del: 'id % 7 = 3', pred: (i) => i % 7 === 3 }] },
  deleted_many: { set: 'basic', rows: 12000, steps: [{ del: 'id % 2 = 0', pred: (i) => i % 2 === 0 }] },
  mixed: {
    set: 'basic', rows: 2000,
    steps: [{ append: 1 }, { del: 'id % 10 = 0 OR (id >= 1990 AND id < 2010)', pred: (i) => i % 10 === 0 || (i >= 1990 && i < 2010) }],
  },
};

function fieldFor(name) {
  const c = COLUMNS[name];
  if (!c) throw new UsageError(`no generator for column "${name}"`);
  return new arrow.Field(name, c.type(), c.nullable);
}

function schemaFor(names) {
  return new arrow.Schema(names.map(fieldFor));
}

// ---------------------------------------------------------------------------------------------
// Building Arrow data from model values, for any supported type (not only the generator's).

function validity(vals) {
  let nulls = 0;
  const bm = new Uint8Array((vals.length + 7) >> 3);
  vals.forEach((v, i) => {
    if (v === null || v === undefined) nulls++;
    else bm[i >> 3] |= 1 << (i & 7);
  });
  return { nullCount: nulls, nullBitmap: nulls ? bm : undefined };
}

const utf8enc = new TextEncoder();

function buildData(type, vals) {
  const n = vals.length;
  const { nullCount, nullBitmap } = validity(vals);
  const base = { type, length: n, nullCount, nullBitmap };
  const id = type.typeId;
  const T_ = arrow.Type;
  if (arrow.DataType.isInt(type) || arrow.DataType.isFloat(type) || arrow.DataType.isDate(type) || arrow.DataType.isTimestamp(type)) {
    const Arr = type.ArrayType;
    const data = new Arr(n);
    const big = Arr === BigInt64Array || Arr === BigUint64Array;
    vals.forEach((v, i) => {
      if (v === null || v === undefined) return;
      data[i] = big ? BigInt(v) : Number(v);
    });
    return arrow.makeData({ ...base, data });
  }
  if (id === T_.Bool) {
    const data = new Uint8Array((n + 7) >> 3);
    vals.forEach((v, i) => { if (v) data[i >> 3] |= 1 << (i & 7); });
    return arrow.makeData({ ...base, data });
  }
  if (arrow.DataType.isUtf8(type) || arrow.DataType.isLargeUtf8(type) || arrow.DataType.isBinary(type) || arrow.DataType.isLargeBinary(type)) {
    const large = arrow.DataType.isLargeUtf8(type) || arrow.DataType.isLargeBinary(type);
    const parts = vals.map((v) => (v === null || v === undefined ? new Uint8Array(0) : typeof v === 'string' ? utf8enc.encode(v) : v));
    const total = parts.reduce((a, p) => a + p.length, 0);
    const data = new Uint8Array(total);
    const offs = large ? new BigInt64Array(n + 1) : new Int32Array(n + 1);
    let o = 0;
    parts.forEach((p, i) => { data.set(p, o); o += p.length; offs[i + 1] = large ? BigInt(o) : o; });
    return arrow.makeData({ ...base, valueOffsets: offs, data });
  }
  if (id === T_.List) {
    const items = [];
    const offs = new Int32Array(n + 1);
    vals.forEach((v, i) => { if (v) items.push(...v); offs[i + 1] = items.length; });
    return arrow.makeData({ ...base, valueOffsets: offs, child: buildData(type.children[0].type, items) });
  }
  if (id === T_.FixedSizeList) {
    const size = type.listSize;
    const items = [];
    vals.forEach((v) => {
      if (v && v.length !== size) throw new UsageError(`fixed_size_list value of length ${v.length}, want ${size}`);
      for (let k = 0; k < size; k++) items.push(v ? v[k] : 0);
    });
    return arrow.makeData({ ...base, child: buildData(type.children[0].type, items) });
  }
  if (id === T_.Struct) {
    const children = type.children.map((f) => buildData(f.type, vals.map((v) => (v ? v[f.name] ?? null : null))));
    return arrow.makeData({ ...base, children });
  }
  throw new UsageError(`cannot build values of type ${type}`);
}

function tableOf(schema, ids) {
  const cols = schema.fields.map((f) => {
    const gen = COLUMNS[f.name];
    if (!gen) throw new UsageError(`no generator for column "${f.name}"`);
    return buildData(f.type, ids.map(gen.value));
  });
  const st = arrow.makeData({ type: new arrow.Struct(schema.fields), length: ids.length, nullCount: 0, children: cols });
  return new arrow.Table(new arrow.RecordBatch(schema, st));
}

function range(a, b) {
  const out = new Array(b - a);
  for (let i = a; i < b; i++) out[i - a] = i;
  return out;
}

// ---------------------------------------------------------------------------------------------
// Reading Arrow data into model values (independent of the builder above).

function isBigArray(a) {
  return a instanceof BigInt64Array || a instanceof BigUint64Array;
}

function readValue(d, j) {
  if (!d.getValid(j)) return null;
  const type = d.type;
  const T_ = arrow.Type;
  switch (type.typeId) {
    case T_.Bool: {
      const bit = d.offset + j;
      return (d.values[bit >> 3] & (1 << (bit & 7))) !== 0;
    }
    case T_.Int: case T_.Float: case T_.Date: case T_.Timestamp: {
      if (d.stride !== 1) throw new Error(`unexpected stride ${d.stride} for ${type}`);
      const v = d.values[j];
      if (arrow.DataType.isInt(type) && type.bitWidth === 64) return BigInt(v);
      if (arrow.DataType.isDate(type) && type.unit === arrow.DateUnit.MILLISECOND) return BigInt(v);
      if (arrow.DataType.isTimestamp(type)) return BigInt(v);
      if (arrow.DataType.isFloat(type) && type.precision === arrow.Precision.HALF) throw new Error('float16 not supported');
      return isBigArray(d.values) ? BigInt(v) : v;
    }
    case T_.Utf8: case T_.LargeUtf8: case T_.Binary: case T_.LargeBinary: {
      const a = Number(d.valueOffsets[j]);
      const b = Number(d.valueOffsets[j + 1]);
      const bytes = d.values.subarray(a, b);
      return type.typeId === T_.Utf8 || type.typeId === T_.LargeUtf8 ? new TextDecoder('utf-8').decode(bytes) : bytes;
    }
    case T_.List: case T_.LargeList: {
      const a = Number(d.valueOffsets[j]);
      const b = Number(d.valueOffsets[j + 1]);
      const out = [];
      for (let k = a; k < b; k++) out.push(readValue(d.children[0], k));
      return out;
    }
    case T_.FixedSizeList: {
      const n = type.listSize;
      const out = [];
      for (let k = 0; k < n; k++) out.push(readValue(d.children[0], j * n + k));
      return out;
    }
    case T_.Struct: {
      const out = {};
      type.children.forEach((f, c) => { out[f.name] = readValue(d.children[c], j); });
      return out;
    }
    case T_.Dictionary: {
      const idx = Number(d.values[j]);
      return readVectorValue(d.dictionary, idx);
    }
    default:
      throw new Error(`dump: unsupported Arrow type ${type}`);
  }
}

function readVectorValue(vec, idx) {
  for (const d of vec.data) {
    if (idx < d.length) return readValue(d, idx);
    idx -= d.length;
  }
  throw new Error('dictionary index out of range');
}

// ---------------------------------------------------------------------------------------------
// The canonical printer (documented in README.md; `omnigraph lance cat --json` follows it).

function fmtFloat(x) {
  if (Number.isNaN(x)) return '"NaN"';
  if (x === Infinity) return '"Infinity"';
  if (x === -Infinity) return '"-Infinity"';
  return String(x); // ECMAScript Number::toString: shortest round-trip digits; -0 prints as 0
}

function pad(n, w) {
  return String(n).padStart(w, '0');
}

// Proleptic Gregorian date of a day count since 1970-01-01 (days may be negative).
function civilFromDays(days) {
  let z = BigInt(days) + 719468n;
  const era = (z >= 0n ? z : z - 146096n) / 146097n;
  const doe = z - era * 146097n; // [0, 146096]
  const yoe = (doe - doe / 1460n + doe / 36524n - doe / 146096n) / 365n; // [0, 399]
  const doy = doe - (365n * yoe + yoe / 4n - yoe / 100n); // [0, 365]
  const mp = (5n * doy + 2n) / 153n; // [0, 11]
  const d = doy - (153n * mp + 2n) / 5n + 1n;
  const m = mp < 10n ? mp + 3n : mp - 9n;
  let y = yoe + era * 400n;
  if (m <= 2n) y += 1n;
  return { y, m: Number(m), d: Number(d) };
}

function fmtYear(y) {
  if (y >= 0n && y <= 9999n) return pad(y, 4);
  return (y < 0n ? '-' : '+') + pad(y < 0n ? -y : y, 6);
}

function fmtDate(days) {
  const { y, m, d } = civilFromDays(days);
  return `${fmtYear(y)}-${pad(m, 2)}-${pad(d, 2)}`;
}

function floorDiv(a, b) {
  const q = a / b;
  return a % b !== 0n && (a < 0n) !== (b < 0n) ? q - 1n : q;
}

// ticks of 10^-digits seconds since the epoch -> YYYY-MM-DDTHH:MM:SS[.fff...]Z
function fmtInstant(ticks, digits) {
  const perSec = 10n ** BigInt(digits);
  const perDay = 86400n * perSec;
  const days = floorDiv(ticks, perDay);
  const rem = ticks - days * perDay; // [0, perDay)
  const secs = rem / perSec;
  const frac = rem % perSec;
  const hh = secs / 3600n;
  const mm = (secs / 60n) % 60n;
  const ss = secs % 60n;
  let s = `${fmtDate(days)}T${pad(hh, 2)}:${pad(mm, 2)}:${pad(ss, 2)}`;
  if (digits > 0) s += '.' + pad(frac, digits);
  return s + 'Z';
}

const UNIT_DIGITS = { [arrow.TimeUnit.SECOND]: 0, [arrow.TimeUnit.MILLISECOND]: 3, [arrow.TimeUnit.MICROSECOND]: 6, [arrow.TimeUnit.NANOSECOND]: 9 };

function hex(bytes) {
  let s = '';
  for (const b of bytes) s += (b < 16 ? '0' : '') + b.toString(16);
  return s;
}

function printValue(type, v) {
  if (v === null || v === undefined) return 'null';
  const T_ = arrow.Type;
  switch (type.typeId) {
    case T_.Bool: return v ? 'true' : 'false';
    case T_.Int: return typeof v === 'bigint' ? v.toString() : String(v);
    case T_.Float: return fmtFloat(Number(v));
    case T_.Date:
      return type.unit === arrow.DateUnit.DAY ? `"${fmtDate(v)}"` : `"${fmtInstant(BigInt(v), 3)}"`;
    case T_.Timestamp: return `"${fmtInstant(BigInt(v), UNIT_DIGITS[type.unit])}"`;
    case T_.Utf8: case T_.LargeUtf8: return JSON.stringify(v);
    case T_.Binary: case T_.LargeBinary: return `"${hex(v)}"`;
    case T_.List: case T_.LargeList: case T_.FixedSizeList: {
      const child = type.children[0].type;
      return '[' + v.map((x) => printValue(child, x)).join(',') + ']';
    }
    case T_.Struct:
      return '{' + type.children.map((f) => JSON.stringify(f.name) + ':' + printValue(f.type, v[f.name])).join(',') + '}';
    case T_.Dictionary: return printValue(type.dictionary, v);
    default: throw new Error(`print: unsupported Arrow type ${type}`);
  }
}

function printRow(fields, row) {
  return '{' + fields.map((f, c) => JSON.stringify(f.name) + ':' + printValue(f.type, row[c])).join(',') + '}';
}

// rows: arrays of model values in field order. Sorted by "id" when it is an output column (null
// first), ties and tables without "id" by the bytes of the printed line.
function canonicalLines(fields, rows) {
  const idc = fields.findIndex((f) => f.name === 'id');
  const keyed = rows.map((r) => ({ id: idc >= 0 ? r[idc] : null, line: printRow(fields, r) }));
  const byBytes = (a, b) => Buffer.compare(Buffer.from(a.line), Buffer.from(b.line));
  keyed.sort((a, b) => {
    const x = a.id, y = b.id;
    if (x === y) return byBytes(a, b);
    if (x === null) return -1;
    if (y === null) return 1;
    return x < y ? -1 : 1;
  });
  return keyed.map((k) => k.line);
}

function pickColumns(fields, cols) {
  if (!cols) return fields;
  return cols.map((name) => {
    const f = fields.find((x) => x.name === name);
    if (!f) throw new UsageError(`no column "${name}"`);
    return f;
  });
}

// ---------------------------------------------------------------------------------------------
// Command-line handling

function parseArgs(argv, spec) {
  const pos = [];
  const opt = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('--')) { pos.push(a); continue; }
    const key = a.slice(2);
    if (!(key in spec)) throw new UsageError(`unknown option ${a}`);
    if (spec[key] === 'flag') opt[key] = true;
    else {
      if (i + 1 >= argv.length) throw new UsageError(`option ${a} needs a value`);
      opt[key] = argv[++i];
    }
  }
  return { pos, opt };
}

function intOpt(v, what) {
  if (v === undefined) return undefined;
  if (!/^[0-9]+$/.test(v)) throw new UsageError(`${what} must be a non-negative integer, got "${v}"`);
  return parseInt(v, 10);
}

function kindOf(name) {
  const k = KINDS[name];
  if (!k) throw new UsageError(`unknown kind "${name}" (kinds: ${Object.keys(KINDS).join(', ')})`);
  return k;
}

function needDirName(pos, cmd) {
  if (pos.length !== 2) throw new UsageError(`usage: ${cmd} DIR NAME ...`);
  return { dir: pos[0], name: pos[1] };
}

function out(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

function writeLines(lines, file) {
  const text = lines.length ? lines.join('\n') + '\n' : '';
  if (file) fs.writeFileSync(file, text);
  else process.stdout.write(text);
}

async function openTable(dir, name) {
  if (!fs.existsSync(path.join(dir, name + '.lance'))) throw new UsageError(`no table ${path.join(dir, name + '.lance')}`);
  const db = await lancedb().connect(dir);
  return db.openTable(name);
}

async function maxId(tbl) {
  const t = await tbl.query().select(['id']).toArrow();
  let m = -1n;
  const col = t.numRows ? t.getChild('id') : null;
  for (const d of col ? col.data : []) for (let j = 0; j < d.length; j++) { const v = readValue(d, j); if (v !== null && v > m) m = v; }
  return m;
}

async function cmdMakeTable(argv) {
  const { pos, opt } = parseArgs(argv, { kind: 'val', rows: 'val', 'v1-names': 'flag', 'stable-row-ids': 'flag', format: 'val' });
  const { dir, name } = needDirName(pos, 'make-table');
  if (!opt.kind) throw new UsageError('make-table needs --kind');
  const kind = kindOf(opt.kind);
  const rows = intOpt(opt.rows, '--rows') ?? kind.rows;
  if (rows < 1) throw new UsageError('--rows must be at least 1');
  const format = opt.format ?? '2.0';
  if (!['2.0', '2.1', 'default'].includes(format)) throw new UsageError('--format must be 2.0, 2.1 or default');
  const storageOptions = {};
  if (format !== 'default') storageOptions.new_table_data_storage_version = format;
  if (opt['v1-names']) storageOptions.new_table_enable_v2_manifest_paths = 'false';
  if (opt['stable-row-ids']) storageOptions.new_table_enable_stable_row_ids = 'true';
  fs.mkdirSync(dir, { recursive: true });
  const db = await lancedb().connect(dir);
  const schema = schemaFor(SETS[kind.set]);
  const tbl = await db.createTable(name, tableOf(schema, range(0, rows)), { mode: 'create', storageOptions });
  let next = rows;
  for (const st of kind.steps) {
    if (st.append) { await tbl.add(tableOf(schema, range(next, next + rows * st.append))); next += rows * st.append; }
    if (st.del) await tbl.delete(st.del);
  }
  out({ table: path.join(dir, name + '.lance'), kind: opt.kind, format, v1_names: !!opt['v1-names'],
    stable_row_ids: !!opt['stable-row-ids'], version: await tbl.version(), rows: await tbl.countRows() });
}

// The model rows of a kind at a version (1 = after creation).
function expectedIds(kind, rows, version) {
  const nsteps = kind.steps.length;
  const v = version ?? nsteps + 1;
  if (v < 1 || v > nsteps + 1) throw new UsageError(`kind has versions 1..${nsteps + 1}`);
  let ids = range(0, rows);
  let next = rows;
  for (const st of kind.steps.slice(0, v - 1)) {
    if (st.append) { ids = ids.concat(range(next, next + rows * st.append)); next += rows * st.append; }
    if (st.del) ids = ids.filter((i) => !st.pred(i));
  }
  return ids;
}

function cmdExpect(argv) {
  const { pos, opt } = parseArgs(argv, { kind: 'val', rows: 'val', version: 'val', columns: 'val', out: 'val', format: 'val' });
  if (pos.length) throw new UsageError('usage: expect --kind K [--rows N] [--version N] [--columns a,b] [--format 2.0|2.1]');
  const format = opt.format ?? '2.0';
  if (!['2.0', '2.1', 'default'].includes(format)) throw new UsageError('--format must be 2.0, 2.1 or default');
  if (!opt.kind) throw new UsageError('expect needs --kind');
  const kind = kindOf(opt.kind);
  const rows = intOpt(opt.rows, '--rows') ?? kind.rows;
  const ids = expectedIds(kind, rows, intOpt(opt.version, '--version'));
  const fields = pickColumns(schemaFor(SETS[kind.set]).fields, opt.columns && opt.columns.split(','));
  // Data storage version 2.0 has no validity for structs: a null struct reads back as a struct
  // whose children are all null.
  const stored = format === '2.0' ? (f, v) => (v === null ? structOfNulls(f.type) : v) : (f, v) => v;
  const data = ids.map((i) => fields.map((f) => stored(f, COLUMNS[f.name].value(i))));
  writeLines(canonicalLines(fields, data), opt.out);
}

function structOfNulls(type) {
  if (type.typeId !== arrow.Type.Struct) return null;
  return Object.fromEntries(type.children.map((f) => [f.name, structOfNulls(f.type)]));
}

async function cmdDump(argv) {
  const { pos, opt } = parseArgs(argv, { version: 'val', columns: 'val', out: 'val' });
  const { dir, name } = needDirName(pos, 'dump');
  const tbl = await openTable(dir, name);
  const version = intOpt(opt.version, '--version');
  if (version !== undefined) await tbl.checkout(version);
  const cols = opt.columns && opt.columns.split(',');
  let q = tbl.query();
  if (cols) q = q.select(cols);
  const t = await q.toArrow();
  const fields = pickColumns(t.schema.fields, cols);
  const vecs = fields.map((f) => t.getChild(f.name));
  const rows = [];
  for (let i = 0; i < t.numRows; i++) rows.push(new Array(fields.length));
  vecs.forEach((vec, c) => {
    let base = 0;
    for (const d of vec.data) {
      for (let j = 0; j < d.length; j++) rows[base + j][c] = readValue(d, j);
      base += d.length;
    }
  });
  writeLines(canonicalLines(fields, rows), opt.out);
}

async function cmdAppend(argv) {
  const { pos, opt } = parseArgs(argv, { rows: 'val' });
  const { dir, name } = needDirName(pos, 'append');
  const n = intOpt(opt.rows, '--rows');
  if (!n) throw new UsageError('append needs --rows N (N >= 1)');
  const tbl = await openTable(dir, name);
  const schema = await tbl.schema();
  const start = Number((await maxId(tbl)) + 1n);
  await tbl.add(tableOf(schema, range(start, start + n)));
  out({ appended: n, first_id: start, version: await tbl.version(), rows: await tbl.countRows() });
}

async function cmdDelete(argv) {
  const { pos, opt } = parseArgs(argv, { where: 'val' });
  const { dir, name } = needDirName(pos, 'delete');
  if (!opt.where) throw new UsageError('delete needs --where EXPR');
  const tbl = await openTable(dir, name);
  const before = await tbl.countRows();
  await tbl.delete(opt.where);
  const after = await tbl.countRows();
  out({ deleted: before - after, version: await tbl.version(), rows: after });
}

async function cmdVersions(argv) {
  const { pos } = parseArgs(argv, {});
  const { dir, name } = needDirName(pos, 'versions');
  const tbl = await openTable(dir, name);
  const vs = await tbl.listVersions();
  out({ versions: vs.map((v) => ({ version: v.version, timestamp: new Date(v.timestamp).toISOString() })) });
}

async function cmdCount(argv) {
  const { pos, opt } = parseArgs(argv, { version: 'val' });
  const { dir, name } = needDirName(pos, 'count');
  const tbl = await openTable(dir, name);
  const version = intOpt(opt.version, '--version');
  if (version !== undefined) await tbl.checkout(version);
  out({ count: await tbl.countRows() });
}

// A few top-level fields of a manifest file, read with a minimal protobuf walker. The file ends
// with a 16-byte footer: i64 offset P of the manifest, u16 major, u16 minor, "LANC"; at P a u32
// length and the Manifest message (3 version, 9/10 reader/writer feature flags, 14 next_row_id,
// 15 data_format {1 file_format, 2 version}).
function readVarint(buf, pos) {
  let v = 0n, shift = 0n;
  for (;;) {
    if (pos >= buf.length) throw new Error('manifest: truncated varint');
    const b = buf[pos++];
    v |= BigInt(b & 0x7f) << shift;
    if (!(b & 0x80)) return [v, pos];
    shift += 7n;
    if (shift > 63n) throw new Error('manifest: varint too long');
  }
}

function pbFields(buf) {
  const fields = [];
  let pos = 0;
  while (pos < buf.length) {
    let key;
    [key, pos] = readVarint(buf, pos);
    const num = Number(key >> 3n), wt = Number(key & 7n);
    let val;
    if (wt === 0) [val, pos] = readVarint(buf, pos);
    else if (wt === 1) { val = buf.subarray(pos, pos + 8); pos += 8; }
    else if (wt === 5) { val = buf.subarray(pos, pos + 4); pos += 4; }
    else if (wt === 2) {
      let len;
      [len, pos] = readVarint(buf, pos);
      val = buf.subarray(pos, pos + Number(len));
      pos += Number(len);
    } else throw new Error(`manifest: wire type ${wt}`);
    if (pos > buf.length) throw new Error('manifest: field beyond the end');
    fields.push({ num, val });
  }
  return fields;
}

function readManifest(file) {
  const buf = fs.readFileSync(file);
  if (buf.length < 16 || buf.subarray(buf.length - 4).toString('latin1') !== 'LANC') throw new Error(`${file}: no LANC footer`);
  const at = Number(buf.readBigInt64LE(buf.length - 16));
  const len = buf.readUInt32LE(at);
  const fields = pbFields(buf.subarray(at + 4, at + 4 + len));
  const one = (n) => fields.find((f) => f.num === n);
  const num = (n) => (one(n) ? Number(one(n).val) : 0);
  const fmt = one(15) ? pbFields(one(15).val) : [];
  const str = (fs_, n) => { const f = fs_.find((x) => x.num === n); return f ? Buffer.from(f.val).toString('utf8') : null; };
  return { version: num(3), reader_flags: num(9), writer_flags: num(10), next_row_id: num(14),
    inline_txn: one(21) !== undefined, txn_file: str(fields, 12),
    data_format: fmt.length ? `${str(fmt, 1)}/${str(fmt, 2)}` : null, fragments: fields.filter((f) => f.num === 2).length };
}

async function cmdInspect(argv) {
  const { pos } = parseArgs(argv, {});
  const { dir, name } = needDirName(pos, 'inspect');
  const root = path.join(dir, name + '.lance');
  if (!fs.existsSync(root)) throw new UsageError(`no table ${root}`);
  const ls = (sub) => { try { return fs.readdirSync(path.join(root, sub)).sort(); } catch (e) { return []; } };
  const manifests = ls('_versions').filter((f) => f.endsWith('.manifest'));
  const v2 = manifests.filter((f) => /^[0-9]{20}\.manifest$/.test(f)).length;
  const naming = v2 === manifests.length ? 'v2' : v2 === 0 ? 'v1' : 'mixed';
  const versionOf = (f) => (naming === 'v2' ? Number(U64_MAX - BigInt(f.slice(0, 20))) : parseInt(f, 10));
  const latest = manifests.reduce((best, f) => (best === null || versionOf(f) > versionOf(best) ? f : best), null);
  const m = latest ? readManifest(path.join(root, '_versions', latest)) : null;
  const tbl = await openTable(dir, name);
  const ids = await tbl.query().withRowId().select(['id']).toArrow();
  let maxRowId = -1n;
  const rowids = ids.numRows ? ids.getChild('_rowid') : null;
  for (const d of rowids ? rowids.data : []) for (let j = 0; j < d.length; j++) { const v = BigInt(d.values[j]); if (v > maxRowId) maxRowId = v; }
  if (m && m.version !== versionOf(latest)) throw new Error(`${latest} holds version ${m.version}`);
  out({ naming, manifests, versions: manifests.map(versionOf).sort((a, b) => a - b),
    data_format: m && m.data_format && m.data_format.startsWith('lance/') ? m.data_format.slice(6) : null,
    reader_flags: m ? m.reader_flags : null, writer_flags: m ? m.writer_flags : null, fragments: m ? m.fragments : 0,
    data_files: ls('data').length, deletion_files: ls('_deletions'), transactions: ls('_transactions').length,
    inline_transactions: manifests.filter((f) => readManifest(path.join(root, '_versions', f)).inline_txn).length,
    max_rowid: maxRowId < 0n ? null : maxRowId.toString() });
}

// Checks of the printer against independent oracles (Date#toISOString, JSON.parse, Number).
function cmdSelftest() {
  const fails = [];
  const check = (what, got, want) => { if (got !== want) fails.push(`${what}: got ${got}, want ${want}`); };
  const D = arrow;
  let n = 0;
  for (let days = -800000; days <= 800000; days += 997) {
    const iso = new Date(days * 86400000).toISOString().split('T')[0];
    check(`date32 ${days}`, printValue(new D.DateDay(), days), `"${iso}"`); n++;
  }
  for (let ms = -62135596800000; ms < 253402300799999; ms += 7777777777777) {
    const iso = new Date(ms).toISOString();
    check(`ts_ms ${ms}`, printValue(new D.TimestampMillisecond(), BigInt(ms)), `"${iso}"`);
    check(`date64 ${ms}`, printValue(new D.DateMillisecond(), BigInt(ms)), `"${iso}"`);
    const us = BigInt(ms) * 1000n + 123456n % 1000n;
    check(`ts_us ${us}`, printValue(new D.TimestampMicrosecond(), us), `"${iso.slice(0, 23)}${pad(us - floorDiv(us, 1000n) * 1000n, 3)}Z"`);
    n += 3;
  }
  check('ts_s', printValue(new D.TimestampSecond(), -1n), '"1969-12-31T23:59:59Z"');
  check('ts_ns', printValue(new D.TimestampNanosecond(), 1n), '"1970-01-01T00:00:00.000000001Z"');
  check('year 10000', printValue(new D.DateDay(), 2932897), '"+010000-01-01"');
  check('year -1', printValue(new D.DateDay(), -719893), '"-000001-01-01"');
  const f64 = [0, -0, 1, -1.5, 0.1, 1 / 3, 1e21, 1e-7, 123e-9, 5e-324, 1.7976931348623157e308, 2 ** 53, 1e20];
  for (const x of f64) { check(`f64 ${x}`, printValue(new D.Float64(), x), JSON.stringify(x)); n++; }
  check('f64 -0', printValue(new D.Float64(), -0), '0');
  check('f64 1e21', printValue(new D.Float64(), 1e21), '1e+21');
  check('f64 1e-7', printValue(new D.Float64(), 1e-7), '1e-7');
  check('f64 NaN', printValue(new D.Float64(), NaN), '"NaN"');
  check('f32 0.1', printValue(new D.Float32(), Math.fround(0.1)), '0.10000000149011612');
  check('i64 max', printValue(new D.Int64(), I64_MAX), '9223372036854775807');
  check('u64 max', printValue(new D.Uint64(), U64_MAX), '18446744073709551615');
  check('bin', printValue(new D.Binary(), Uint8Array.from([0, 15, 16, 255])), '"000f10ff"');
  const sp = printValue(new D.Utf8(), SPECIAL_STRING);
  check('utf8 roundtrip', JSON.parse(sp), SPECIAL_STRING);
  check('utf8 escapes', sp.includes('\\u0001\\u001f') && sp.includes('\\n') && sp.includes('\\"') && sp.includes('\u007f') && sp.includes('😀'), true);
  const st = T.struct([new D.Field('a', T.i32(), true), new D.Field('b', T.utf8(), true)]);
  check('struct', printValue(st, { a: null, b: 'x' }), '{"a":null,"b":"x"}');
  check('list', printValue(T.list(T.i32()), [1, null, 3]), '[1,null,3]');
  check('sort', canonicalLines([new D.Field('id', T.i64())], [[3n], [-1n], [2n]]).join(' '), '{"id":-1} {"id":2} {"id":3}');
  const ids = [new D.Field('id', T.i64()), new D.Field('s', T.utf8())];
  check('sort ties', canonicalLines(ids, [[1n, 'b'], [1n, 'a'], [null, 'z']]).join(' '), '{"id":null,"s":"z"} {"id":1,"s":"a"} {"id":1,"s":"b"}');
  // UTF-8 byte order, not UTF-16 code unit order: U+FF61 (EF BD A1) sorts before U+1F600 (F0 9F 98 80)
  check('sort bytes', canonicalLines([ids[1]], [['\u{1F600}'], ['\uFF61']]).join(' '), '{"s":"\uFF61"} {"s":"\u{1F600}"}');
  n += 16;
  out({ checks: n, failures: fails });
  if (fails.length) process.exitCode = 1;
}

// Lance logical type string of an Arrow type (the strings lance stores in Field.logical_type).
function lanceType(type) {
  const T_ = arrow.Type;
  const units = { [arrow.TimeUnit.SECOND]: 's', [arrow.TimeUnit.MILLISECOND]: 'ms', [arrow.TimeUnit.MICROSECOND]: 'us', [arrow.TimeUnit.NANOSECOND]: 'ns' };
  switch (type.typeId) {
    case T_.Null: return 'null';
    case T_.Bool: return 'bool';
    case T_.Int: return (type.isSigned ? 'int' : 'uint') + type.bitWidth;
    case T_.Float: return ['halffloat', 'float', 'double'][type.precision];
    case T_.Utf8: return 'string';
    case T_.LargeUtf8: return 'large_string';
    case T_.Binary: return 'binary';
    case T_.LargeBinary: return 'large_binary';
    case T_.Date: return type.unit === arrow.DateUnit.DAY ? 'date32:day' : 'date64:ms';
    case T_.Timestamp: return `timestamp:${units[type.unit]}:${type.timezone || '-'}`;
    case T_.List: return 'list';
    case T_.LargeList: return 'large_list';
    case T_.FixedSizeList: return `fixed_size_list:${lanceType(type.children[0].type)}:${type.listSize}`;
    case T_.Struct: return 'struct';
    default: return String(type);
  }
}

function describeFields(fields) {
  return fields.map((f) => {
    const d = { name: f.name, type: lanceType(f.type), nullable: f.nullable };
    if (f.type.typeId === arrow.Type.Struct || f.type.typeId === arrow.Type.List || f.type.typeId === arrow.Type.LargeList)
      d.children = describeFields(f.type.children);
    return d;
  });
}

// schema --kind K: the schema make-table creates; schema DIR NAME: a table's schema as lancedb
// reports it. Both as [{name, type (Lance logical type), nullable, children?}].
async function cmdSchema(argv) {
  const { pos, opt } = parseArgs(argv, { kind: 'val' });
  if (opt.kind && pos.length === 0) return out({ fields: describeFields(schemaFor(SETS[kindOf(opt.kind).set]).fields) });
  const { dir, name } = needDirName(pos, 'schema');
  const tbl = await openTable(dir, name);
  out({ fields: describeFields((await tbl.schema()).fields) });
}

function cmdKinds() {
  out(Object.fromEntries(Object.entries(KINDS).map(([k, v]) => [k, { rows: v.rows, columns: SETS[v.set], versions: v.steps.length + 1 }])));
}

const COMMANDS = {
  'make-table': cmdMakeTable, dump: cmdDump, expect: cmdExpect, append: cmdAppend, delete: cmdDelete,
  versions: cmdVersions, count: cmdCount, inspect: cmdInspect, selftest: cmdSelftest, kinds: cmdKinds,
  schema: cmdSchema,
};

// A closed pipe (e.g. `| head`) ends the output quietly.
process.stdout.on('error', (e) => { if (e.code === 'EPIPE') process.exit(0); throw e; });

tool.run('lance_tool', COMMANDS);
