// The lancedb interop preamble, node side (the C side is tests/support/interop.h): what every
// tool in tests/interop/ starts with. The pinned packages live in tests/interop/node_modules
// (tests/interop/setup.sh installs them), so they are required from there; a tool that also
// requires them itself gets the same copies (an Arrow table made with another copy of
// apache-arrow would not be one to lancedb).
//
// A tool is a table of subcommands: run(name, commands) calls commands[argv[2]] with the rest
// of the arguments and prints what it returns as one JSON line on stdout (a subcommand that
// writes its own output returns nothing). Errors go to stderr with exit code 2 for bad usage
// (a UsageError) and 1 for anything else.
'use strict';
const path = require('path');
const { createRequire } = require('module');

const fromInterop = createRequire(path.join(__dirname, '..', 'interop', 'package.json'));
const arrow = fromInterop('apache-arrow');
let lancedbModule = null;

// @lancedb/lancedb, loaded on first use (commands that never open a table do not pay for it).
function lancedb() {
  if (!lancedbModule) lancedbModule = fromInterop('@lancedb/lancedb');
  return lancedbModule;
}

class UsageError extends Error {}

// args, when lo <= args.length <= hi; a UsageError naming `usage` otherwise.
function need(tool, args, lo, hi, usage) {
  if (args.length < lo || args.length > hi) throw new UsageError(`usage: ${tool} ${usage}`);
  return args;
}

// The table NAME of the database DIR (at DIR/NAME.lance: lancedb's layout).
async function openTable(dir, name) {
  const db = await lancedb().connect(dir);
  return db.openTable(name);
}

// The ids of a table (or branch, or checked-out version), as sorted numbers.
async function sortedIds(t) {
  const rows = await t.query().select(['id']).toArray();
  return rows.map((r) => Number(r.id)).sort((a, b) => a - b);
}

// A table with one int64 column "id" holding lo..hi-1.
function idTable(lo, hi) {
  const id = new BigInt64Array(hi - lo);
  for (let i = lo; i < hi; i++) id[i - lo] = BigInt(i);
  return arrow.tableFromArrays({ id });
}

function run(tool, commands) {
  (async () => {
    const [cmd, ...rest] = process.argv.slice(2);
    const f = Object.prototype.hasOwnProperty.call(commands, cmd) ? commands[cmd] : null;
    if (!f) {
      throw new UsageError(`unknown subcommand '${cmd || ''}'; one of ${Object.keys(commands).join(', ')}`);
    }
    const out = await f(rest);
    if (out !== undefined) process.stdout.write(JSON.stringify(out) + '\n');
  })().catch((e) => {
    const usage = e instanceof UsageError;
    process.stderr.write(`${tool}: ${usage ? '' : 'error: '}${e && e.message ? e.message : e}\n`);
    process.exit(usage ? 2 : 1);
  });
}

module.exports = { arrow, lancedb, UsageError, need, openTable, sortedIds, idTable, run };
