#!/usr/bin/env node
// The lancedb side of the tag / restore / cleanup interop checks (test_interop_refs.c).
// Every subcommand prints one JSON object on stdout; errors go to stderr with exit code 1
// (2 for bad usage). A table NAME in DIR is DIR/NAME.lance (lancedb's layout).
//
//   make     DIR NAME                 lancedb creates a 2.0 table: v1 ids 0..9, v2 adds 10..19,
//                                     then tags "first"@1 and "second"@2
//   tags     DIR NAME                 {"tags":[{"name","version","manifestSize"}]} sorted by name
//   checkout DIR NAME TAG|VERSION     {"version":v,"count":rows,"ids":[sorted ids]}
//   create   DIR NAME TAG VERSION     lancedb creates a tag
//   delete   DIR NAME TAG             lancedb deletes a tag
//   versions DIR NAME                 {"versions":[1,2,...],"latest":{"version":v,"count":n}}
'use strict';
const tool = require('../support/lancedb_tool.cjs');
const { lancedb, idTable, openTable: open, sortedIds: ids } = tool;

const need = (args, n, usage) => tool.need('refs_tool.cjs', args, n, n, usage);

const commands = {
  async make(args) {
    const [dir, name] = need(args, 2, 'make DIR NAME');
    const db = await lancedb().connect(dir);
    const t = await db.createTable(name, idTable(0, 10), {
      storageOptions: { new_table_data_storage_version: '2.0' },
    });
    await t.add(idTable(10, 20));
    const tags = await t.tags();
    await tags.create('first', 1);
    await tags.create('second', 2);
    return {};
  },
  async tags(args) {
    const [dir, name] = need(args, 2, 'tags DIR NAME');
    const t = await open(dir, name);
    const list = await (await t.tags()).list();
    const out = Object.entries(list).map(([tag, c]) => ({
      name: tag,
      version: Number(c.version),
      manifestSize: Number(c.manifestSize),
    }));
    out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return { tags: out };
  },
  async checkout(args) {
    const [dir, name, ref] = need(args, 3, 'checkout DIR NAME TAG|VERSION');
    const t = await open(dir, name);
    await t.checkout(/^[0-9]+$/.test(ref) ? Number(ref) : ref);
    const got = await ids(t);
    return { version: await t.version(), count: await t.countRows(), ids: got };
  },
  async create(args) {
    const [dir, name, tag, version] = need(args, 4, 'create DIR NAME TAG VERSION');
    const t = await open(dir, name);
    await (await t.tags()).create(tag, Number(version));
    return {};
  },
  async delete(args) {
    const [dir, name, tag] = need(args, 3, 'delete DIR NAME TAG');
    const t = await open(dir, name);
    await (await t.tags()).delete(tag);
    return {};
  },
  async versions(args) {
    const [dir, name] = need(args, 2, 'versions DIR NAME');
    const t = await open(dir, name);
    const vs = (await t.listVersions()).map((v) => Number(v.version));
    return { versions: vs, latest: { version: await t.version(), count: await t.countRows() } };
  },
};

tool.run('refs_tool', commands);
