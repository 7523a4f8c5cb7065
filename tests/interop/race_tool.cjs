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
const fs = require('fs');
const tool = require('../support/lancedb_tool.cjs');
const { arrow, openTable } = tool;

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

const need = (args, n, usage) => tool.need('race_tool.cjs', args, n, n, usage);

const commands = {
  async add(args) {
    const [dir, name, from, count] = need(args, 4, 'add DIR NAME FROM COUNT');
    const t = await openTable(dir, name);
    process.stdout.write('ready\n');
    let retries = 0;
    for (let i = 0; i < Number(count); i++) {
      // lance rebases an add over concurrent commits by itself; a commit that still loses
      // (too many concurrent versions) is retried here so the race always completes.
      for (;;) {
        try {
          await t.add(rows(Number(from) + 2 * i, 2));
          break;
        } catch (e) {
          if (++retries > 50) throw e;
        }
      }
    }
    return { added: Number(count) * 2, retries };
  },
  async 'stale-add'(args) {
    const [dir, name, from, gate] = need(args, 4, 'stale-add DIR NAME FROM GATE');
    const t = await openTable(dir, name);
    const opened = await t.version();
    process.stdout.write('ready\n');
    while (!fs.existsSync(gate)) await new Promise((r) => setTimeout(r, 10));
    await t.add(rows(Number(from), 2));
    return { opened, version: await t.version() };
  },
  async count(args) {
    const [dir, name] = need(args, 2, 'count DIR NAME');
    const t = await openTable(dir, name);
    const all = await t.query().select(['id']).toArray();
    let idsum = 0n;
    for (const r of all) idsum += BigInt(r.id);
    return { count: all.length, idsum: idsum.toString(), version: await t.version() };
  },
};

tool.run('race_tool', commands);
