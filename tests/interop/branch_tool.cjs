#!/usr/bin/env node
// The lancedb side of the branch interop checks (test_interop_branch.c).
// Every subcommand prints one JSON object on stdout; errors go to stderr with exit code 1
// (2 for bad usage). A table NAME in DIR is DIR/NAME.lance (lancedb's layout).
//
//   make     DIR NAME                  lancedb creates a 2.0 table: v1 ids 0..9, v2 adds 10..19,
//                                      v3 deletes id < 3; then branch "lx/a" from main@2, on
//                                      which it adds ids 100..104 and deletes id 5
//   list     DIR NAME                  {"branches":[{"name","parentBranch","parentVersion",
//                                      "manifestSize"}]} sorted by name
//   checkout DIR NAME BRANCH [VERSION] {"version":v,"count":rows,"ids":[sorted ids]}
//   add      DIR NAME BRANCH LO HI     lancedb appends ids LO..HI-1 on the branch: {"version":v}
//   delete   DIR NAME BRANCH           lancedb deletes the branch
'use strict';
const tool = require('../support/lancedb_tool.cjs');
const { arrow, lancedb, idTable, openTable: open, sortedIds: ids } = tool;

const need = (args, lo, hi, usage) => tool.need('branch_tool.cjs', args, lo, hi, usage);

// Rows shaped like the table's schema (the C fixture's id/name/score, or lancedb's id only).
async function rowsFor(t, lo, hi) {
  const schema = await t.schema();
  const names = schema.fields.map((f) => f.name);
  if (names.length === 1) return idTable(lo, hi);
  const id = [], nm = [], score = [];
  for (let i = lo; i < hi; i++) {
    id.push(BigInt(i));
    nm.push(`n${i}`);
    score.push(i * 0.5);
  }
  return new arrow.Table({
    id: arrow.vectorFromArray(id, new arrow.Int64()),
    name: arrow.vectorFromArray(nm, new arrow.Utf8()),
    score: arrow.vectorFromArray(score, new arrow.Float64()),
  });
}

const commands = {
  async make(args) {
    const [dir, name] = need(args, 2, 2, 'make DIR NAME');
    const db = await lancedb().connect(dir);
    const t = await db.createTable(name, idTable(0, 10), {
      storageOptions: { new_table_data_storage_version: '2.0' },
    });
    await t.add(idTable(10, 20));
    await t.delete('id < 3');
    const b = await (await t.branches()).create('lx/a', undefined, 2);
    await b.add(idTable(100, 105));
    await b.delete('id = 5');
    return {};
  },
  async list(args) {
    const [dir, name] = need(args, 2, 2, 'list DIR NAME');
    const t = await open(dir, name);
    const list = await (await t.branches()).list();
    const out = Object.entries(list).map(([b, c]) => ({
      name: b,
      parentBranch: c.parentBranch == null ? null : c.parentBranch,
      parentVersion: Number(c.parentVersion),
      manifestSize: Number(c.manifestSize),
    }));
    out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return { branches: out };
  },
  async checkout(args) {
    const [dir, name, branch, version] = need(args, 3, 4, 'checkout DIR NAME BRANCH [VERSION]');
    const t = await open(dir, name);
    const b = await (await t.branches()).checkout(branch, version ? Number(version) : undefined);
    return { version: await b.version(), count: await b.countRows(), ids: await ids(b) };
  },
  async add(args) {
    const [dir, name, branch, lo, hi] = need(args, 5, 5, 'add DIR NAME BRANCH LO HI');
    const t = await open(dir, name);
    const b = await (await t.branches()).checkout(branch);
    await b.add(await rowsFor(b, Number(lo), Number(hi)));
    return { version: await b.version() };
  },
  async delete(args) {
    const [dir, name, branch] = need(args, 3, 3, 'delete DIR NAME BRANCH');
    const t = await open(dir, name);
    await (await t.branches()).delete(branch);
    return {};
  },
};

tool.run('branch_tool', commands);
