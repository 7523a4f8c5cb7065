#!/usr/bin/env node
// The lancedb side of the compaction interop checks (test_interop_compact.c). Every subcommand
// prints one JSON object on stdout; errors go to stderr with exit code 1 (2 for bad usage).
// A table NAME in DIR is DIR/NAME.lance (lancedb's layout); its columns are id (int64),
// name (utf8, nullable), score (float64, nullable).
//
//   read     DIR NAME [VERSION]   {"version","count","rows":[[id,name,score,rowid],...]} sorted
//                                 by id; rowid is lancedb's _rowid (the stable row id)
//   versions DIR NAME             {"versions":[1,2,...]}
//   append   DIR NAME LO HI       lancedb appends ids LO..HI-1 (name "l<id>", score id/4)
//   optimize DIR NAME             lancedb compacts the table itself: {"version"}
//   delete   DIR NAME WHERE       lancedb deletes the rows matching the SQL predicate: {"version"}
'use strict';
const tool = require('../support/lancedb_tool.cjs');
const { openTable: open } = tool;

const need = (args, lo, hi, usage) => tool.need('compact_tool.cjs', args, lo, hi, usage);

function num(v) {
  return v === null || v === undefined ? null : Number(v);
}

const commands = {
  async read(args) {
    const [dir, name, version] = need(args, 2, 3, 'read DIR NAME [VERSION]');
    const t = await open(dir, name);
    if (version !== undefined) await t.checkout(Number(version));
    const rows = await t.query().withRowId().toArray();
    const out = rows.map((r) => [num(r.id), r.name === undefined ? null : r.name, num(r.score),
                                 num(r._rowid)]);
    out.sort((a, b) => a[0] - b[0]);
    return { version: await t.version(), count: out.length, rows: out };
  },
  async versions(args) {
    const [dir, name] = need(args, 2, 2, 'versions DIR NAME');
    const t = await open(dir, name);
    const vs = await t.listVersions();
    return { versions: vs.map((v) => Number(v.version)).sort((a, b) => a - b) };
  },
  async append(args) {
    const [dir, name, lo, hi] = need(args, 4, 4, 'append DIR NAME LO HI');
    const t = await open(dir, name);
    const rows = [];
    for (let v = Number(lo); v < Number(hi); v++) rows.push({ id: BigInt(v), name: `l${v}`, score: v / 4 });
    await t.add(rows);
    return { version: await t.version() };
  },
  async delete(args) {
    const [dir, name, where] = need(args, 3, 3, 'delete DIR NAME WHERE');
    const t = await open(dir, name);
    await t.delete(where);
    return { version: await t.version() };
  },
  async optimize(args) {
    const [dir, name] = need(args, 2, 2, 'optimize DIR NAME');
    const t = await open(dir, name);
    await t.optimize();
    return { version: await t.version() };
  },
};

tool.run('compact_tool', commands);
