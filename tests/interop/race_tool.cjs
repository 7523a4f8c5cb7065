#!/usr/bin/env node
// The lancedb side of the commit race (test_interop_race.c): lancedb `add`s rows to a table
// while our C writer appends to it. Prints "ready" once the table is open, then one JSON line.
//
//   add   DIR NAME FROM COUNT     COUNT adds of 2 rows each, ids FROM, FROM+1, ...
//   stale-add DIR NAME FROM GATE  open the table, print "ready", wait until the file GATE
//                                 exists, then add 2 rows (ids FROM, FROM+1) through the
//                                 handle opened before: lance must rebase over whatever was
//                                 committed in between. Prints {"version":v}
//   count DIR NAME                {"count":n,"idsum":s,"version":v}
'use strict';
const lancedb = require('@lancedb/lancedb');
const arrow = require('apache-arrow');
const fs = require('fs');

function rows(lo, n) {
  const id = new BigInt64Array(n);
  const score = new Float64Array(n);
  const name = [];
  for (let i = 0; i < n; i++) {
    id[i] = BigInt(lo + i);
    score[i] = (lo + i) * 0.5;
    name.push((lo + i) % 7 === 3 ? null : `n${lo + i}`);
  }
  return arrow.tableFromArrays({ id, name, score });
}

async function main() {
  const [cmd, dir, name, ...rest] = process.argv.slice(2);
  const db = await lancedb.connect(dir);
  const t = await db.openTable(name);
  if (cmd === 'add') {
    const from = Number(rest[0]);
    const count = Number(rest[1]);
    process.stdout.write('ready\n');
    let retries = 0;
    for (let i = 0; i < count; i++) {
      // lance rebases an add over concurrent commits by itself; a commit that still loses
      // (too many concurrent versions) is retried here so the race always completes.
      for (;;) {
        try {
          await t.add(rows(from + 2 * i, 2));
          break;
        } catch (e) {
          if (++retries > 50) throw e;
        }
      }
    }
    process.stdout.write(JSON.stringify({ added: count * 2, retries }) + '\n');
  } else if (cmd === 'stale-add') {
    const from = Number(rest[0]);
    const gate = rest[1];
    const opened = await t.version();
    process.stdout.write('ready\n');
    while (!fs.existsSync(gate)) await new Promise((r) => setTimeout(r, 10));
    await t.add(rows(from, 2));
    process.stdout.write(JSON.stringify({ opened, version: await t.version() }) + '\n');
  } else if (cmd === 'count') {
    const all = await t.query().select(['id']).toArray();
    let idsum = 0n;
    for (const r of all) idsum += BigInt(r.id);
    process.stdout.write(JSON.stringify({ count: all.length, idsum: idsum.toString(),
                                          version: await t.version() }) + '\n');
  } else {
    process.stderr.write('usage: race_tool.cjs add DIR NAME FROM COUNT | stale-add DIR NAME FROM GATE | count DIR NAME\n');
    process.exit(2);
  }
}

main().catch((e) => {
  process.stderr.write(`race_tool: ${e && e.message ? e.message : e}\n`);
  process.exit(1);
});
