/* lancedb opens every table of a loaded graph: each node and edge dataset and the graph
 * manifest, reading the row counts the manifest publishes (and the manifest's own rows). */
#include "testutil.h"
#include "interop.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "exec/load.h"
#include "lance/keyindex.h"
#include "write/internal.h"
#include "write/verify.h"

#include <dirent.h>
#include <string.h>

static uint64_t lancedb_count(const char *dir, const char *name)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "node '%s/lance_tool.cjs' count '%s' '%s'", test_interop_dir(), dir,
             name);
    int st = 0;
    char *out = test_capture(cmd, &st);
    if (st != 0) fail_msg("lancedb could not count %s/%s: %s", dir, name, out);
    const char *c = strstr(out, "\"count\":");
    if (!c) fail_msg("unexpected lance_tool output: %s", out);
    uint64_t n = strtoull(c + 8, NULL, 10);
    free(out);
    return n;
}

static void test_lancedb_reads_loaded_graph(void **state)
{
    (void)state;
    char dir[256];
    test_sandbox_new(dir, sizeof dir, "write-interop");
    const char *schema = "node Person { name: String @key  age: I32?  tags: [String]? }\n"
                         "node Company { name: String @key  founded: Date? }\n"
                         "edge WorksAt: Person -> Company { since: DateTime? }\n"
                         "edge Knows: Person -> Person\n";
    store *s = NULL;
    assert_og_ok(store_local_open(&s, dir));
    write_init_result ir;
    assert_og_ok(write_init(s, schema, strlen(schema), "s.pg", &ir));
    write_graph *g = NULL;
    assert_og_ok(write_graph_open(&g, s, dir, NULL));
    const char *data =
        "{\"type\":\"Person\",\"data\":{\"name\":\"ann\",\"age\":31,\"tags\":[\"a\",\"b\"]}}\n"
        "{\"type\":\"Person\",\"data\":{\"name\":\"bob\"}}\n"
        "{\"type\":\"Company\",\"data\":{\"name\":\"acme\",\"founded\":\"1999-01-02\"}}\n"
        "{\"edge\":\"WorksAt\",\"from\":\"ann\",\"to\":\"acme\",\"data\":{\"since\":"
        "\"2020-01-01T10:00:00Z\"}}\n"
        "{\"edge\":\"Knows\",\"from\":\"ann\",\"to\":\"bob\"}\n"
        "{\"edge\":\"Knows\",\"from\":\"bob\",\"to\":\"ann\"}\n";
    graph_change_set cs;
    memset(&cs, 0, sizeof cs);
    exec_load_stats st;
    assert_og_ok(exec_load_parse(&cs, g->h->catalog, data, strlen(data), "d.jsonl",
                                 EXEC_LOAD_APPEND, &st, NULL, NULL));
    write_result r;
    assert_og_ok(write_changes(g, WRITE_KIND_LOAD, &cs, NULL, &r));
    graph_change_set_clear(&cs);
    graph_snapshot *snap = NULL;
    assert_og_ok(graph_snapshot_load(&snap, g->h->s, NULL, 0, 0));
    assert_int_equal(snap->n_tables, 4);
    for (size_t i = 0; i < snap->n_tables; i++) {
        const graph_table *t = &snap->tables[i];
        char parent[600], name[256];
        const char *slash = strrchr(t->path, '/');
        snprintf(parent, sizeof parent, "%s/%.*s", dir, (int)(slash - t->path), t->path);
        snprintf(name, sizeof name, "%.*s", (int)(strlen(slash + 1) - strlen(".lance")), slash + 1);
        assert_int_equal(lancedb_count(parent, name), t->row_count);
    }
    /* the manifest: genesis rows + this commit's rows, all readable */
    uint64_t rows = lancedb_count(dir, "__manifest");
    assert_true(rows >= 4 * 2 + 2 + 2 + 4);
    graph_snapshot_free(snap);
    write_graph_close(g);
    test_sandbox_done(dir);
}

static size_t count_files(const char *dir)
{
    DIR *d = opendir(dir);
    size_t n = 0;
    if (!d) return 0;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static int count_hit(void *arg, size_t key, uint64_t addr, const uint8_t *pay, size_t plen)
{
    (void)key;
    (void)addr;
    (void)pay;
    (void)plen;
    ++*(uint64_t *)arg;
    return 0;
}

/* Rows whose column equals value, through lance_kix_lookup and by a scan. */
static void lookup_vs_scan(const lance_dataset *ds, const char *column, const char *value,
                           uint64_t *by_index, uint64_t *by_scan)
{
    const uint8_t *k = (const uint8_t *)value;
    size_t l = strlen(value);
    *by_index = 0;
    assert_og_ok(lance_kix_lookup(ds, column, NULL, &k, &l, 1, count_hit, by_index, NULL));
    arrow_batch *b = NULL;
    const char *cols[] = {column};
    lance_scan_options so = LANCE_SCAN_OPTIONS_INIT;
    so.columns = cols;
    so.n_columns = 1;
    assert_og_ok(lance_dataset_scan_all(&b, ds, &so));
    *by_scan = 0;
    for (int64_t r = 0; r < b->num_rows; r++) {
        size_t n;
        const uint8_t *v = arrow_array_get_bytes(b->columns[0], r, &n);
        *by_scan += n == l && memcmp(v, value, l) == 0;
    }
    arrow_batch_free(b);
}

/* A graph large enough for key index segments: lancedb still reads every table, compacts the
 * edge table itself without touching our _ogkix/ files, and our lookups on the version it
 * made still equal a scan (its fragments have no segment: they are scanned). */
static void test_lancedb_and_key_indexes(void **state)
{
    (void)state;
    char dir[256];
    test_sandbox_new(dir, sizeof dir, "write-interop-kix");
    const char *schema = "node Person { name: String @key }\nedge Knows: Person -> Person\n";
    store *s = NULL;
    assert_og_ok(store_local_open(&s, dir));
    write_init_result ir;
    assert_og_ok(write_init(s, schema, strlen(schema), "s.pg", &ir));
    write_graph *g = NULL;
    assert_og_ok(write_graph_open(&g, s, dir, NULL));
    /* two loads: two edge fragments of 300 and 100 rows, each with a segment */
    for (int round = 0; round < 2; round++) {
        core_buf data = CORE_BUF_INIT;
        for (int i = 0; round == 0 && i < 100; i++)
            assert_og_ok(
                core_buf_printf(&data, "{\"type\":\"Person\",\"data\":{\"name\":\"p%d\"}}\n", i));
        for (int i = 0; i < (round ? 100 : 300); i++)
            assert_og_ok(core_buf_printf(&data,
                                         "{\"edge\":\"Knows\",\"from\":\"p%d\",\"to\":\"p%d\"}\n",
                                         i % 100, i * 7 % 100));
        graph_change_set cs;
        memset(&cs, 0, sizeof cs);
        exec_load_stats st;
        assert_og_ok(exec_load_parse(&cs, g->h->catalog, (const char *)data.data, data.len,
                                     "d.jsonl", EXEC_LOAD_APPEND, &st, NULL, NULL));
        core_buf_free(&data);
        write_result r;
        assert_og_ok(write_changes(g, WRITE_KIND_LOAD, &cs, NULL, &r));
        graph_change_set_clear(&cs);
    }
    graph_snapshot *snap = NULL;
    assert_og_ok(graph_snapshot_load(&snap, g->h->s, NULL, 0, 0));
    const graph_table *kt = graph_snapshot_table(snap, "edge:Knows");
    assert_non_null(kt);
    char parent[600], name[256], kix[700];
    const char *slash = strrchr(kt->path, '/');
    snprintf(parent, sizeof parent, "%s/%.*s", dir, (int)(slash - kt->path), kt->path);
    snprintf(name, sizeof name, "%.*s", (int)(strlen(slash + 1) - strlen(".lance")), slash + 1);
    snprintf(kix, sizeof kix, "%s/%s/" LANCE_KIX_DIR, dir, kt->path);
    size_t segs = count_files(kix);
    assert_int_equal(segs, 2);
    assert_int_equal(lancedb_count(parent, name), 400);
    /* lancedb compacts the table on its own: its merged fragment has no segment */
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "node '%s/compact_tool.cjs' optimize '%s' '%s'", test_interop_dir(),
             parent, name);
    int rc_cmd = 0;
    char *out = test_capture(cmd, &rc_cmd);
    assert_int_equal(rc_cmd, 0);
    free(out);
    assert_int_equal(lancedb_count(parent, name), 400);
    assert_int_equal(count_files(kix), segs); /* lancedb left our files alone */
    lance_dataset *ds = NULL;
    assert_og_ok(lance_dataset_open(&ds, g->h->s, kt->path, 0, LANCE_ACCESS_READ));
    for (int i = 0; i < 100; i += 7) {
        char v[32];
        uint64_t a, b;
        snprintf(v, sizeof v, "p%d", i);
        lookup_vs_scan(ds, "src", v, &a, &b);
        assert_int_equal(a, b);
        assert_int_equal(a, 4);
        lookup_vs_scan(ds, "dst", v, &a, &b);
        assert_int_equal(a, b);
    }
    lance_dataset_free(ds);
    graph_snapshot_free(snap);
    write_graph_close(g);
    test_sandbox_done(dir);
}

/* Adopt version `v` (with `rows` rows) of table `t` as the graph's pin: one graph commit. */
typedef struct adopt {
    const graph_table *t;
    uint64_t v, rows;
} adopt;

static int adopt_rows(void *arg, const graph_snapshot *cur, uint64_t mver, graph_rows *rows)
{
    const adopt *a = arg;
    core_ulid u;
    graph_commit c;
    memset(&c, 0, sizeof c);
    int rc = core_ulid_new(&u);
    core_ulid_format(&u, c.id);
    snprintf(c.parent, sizeof c.parent, "%s", cur->head);
    c.manifest_version = mver;
    c.maintenance = true;
    if (rc == 0)
        rc = graph_rows_add_version(rows, a->t->sid, a->t->inc, a->t->alias, a->v, NULL, a->rows);
    if (rc == 0) rc = graph_rows_add_commit(rows, &c);
    if (rc == 0) rc = graph_rows_add_head(rows, NULL, c.id, cur->head, mver);
    return rc;
}

/* A table lancedb wrote: its compaction moves the table past the graph's pin, which verify
 * reports (table_ahead, naming the table version); once the graph pins lancedb's version,
 * the graph verifies clean, deep included, and lancedb's data file (no og_xxh3) is counted
 * unchecked, never damaged. */
static void test_verify_lancedb_files(void **state)
{
    (void)state;
    char dir[256];
    test_sandbox_new(dir, sizeof dir, "write-interop-verify");
    const char *schema = "node Person { name: String @key  age: I32? }\n";
    store *s = NULL;
    assert_og_ok(store_local_open(&s, dir));
    write_init_result ir;
    assert_og_ok(write_init(s, schema, strlen(schema), "s.pg", &ir));
    write_graph *g = NULL;
    assert_og_ok(write_graph_open(&g, s, dir, NULL));
    for (int round = 0; round < 2; round++) { /* two fragments, for lancedb to merge */
        core_buf data = CORE_BUF_INIT;
        for (int i = 0; i < 20; i++)
            assert_og_ok(core_buf_printf(&data,
                                         "{\"type\":\"Person\",\"data\":{\"name\":\"p%d-%d\","
                                         "\"age\":%d}}\n",
                                         round, i, i));
        graph_change_set cs;
        memset(&cs, 0, sizeof cs);
        exec_load_stats st;
        assert_og_ok(exec_load_parse(&cs, g->h->catalog, (const char *)data.data, data.len,
                                     "d.jsonl", EXEC_LOAD_APPEND, &st, NULL, NULL));
        core_buf_free(&data);
        write_result r;
        assert_og_ok(write_changes(g, WRITE_KIND_LOAD, &cs, NULL, &r));
        graph_change_set_clear(&cs);
    }
    write_verify_options vo = {.deep = true};
    write_verify_report rep;
    assert_og_ok(write_verify(s, &vo, &rep));
    assert_int_equal(rep.n_problems, 0);
    assert_int_equal(rep.unchecked, 0);
    assert_true(rep.checksummed >= 2);
    write_verify_report_clear(&rep);

    graph_snapshot *snap = NULL;
    assert_og_ok(graph_snapshot_load(&snap, s, NULL, 0, 0));
    const graph_table *pt = graph_snapshot_table(snap, "node:Person");
    assert_non_null(pt);
    char parent[600], name[256], cmd[2048];
    const char *slash = strrchr(pt->path, '/');
    snprintf(parent, sizeof parent, "%s/%.*s", dir, (int)(slash - pt->path), pt->path);
    snprintf(name, sizeof name, "%.*s", (int)(strlen(slash + 1) - strlen(".lance")), slash + 1);
    snprintf(cmd, sizeof cmd, "node '%s/compact_tool.cjs' optimize '%s' '%s'", test_interop_dir(),
             parent, name);
    int rc_cmd = 0;
    char *out = test_capture(cmd, &rc_cmd);
    assert_int_equal(rc_cmd, 0);
    free(out);
    uint64_t latest = 0;
    lance_naming nm;
    assert_og_ok(lance_version_latest(s, pt->path, &latest, &nm));
    assert_true(latest > pt->version);

    assert_og_ok(write_verify(s, NULL, &rep));
    assert_int_equal(rep.n_problems, 1);
    assert_string_equal(rep.problems[0].kind, "table_ahead");
    char obj[700];
    snprintf(obj, sizeof obj, "%s@%llu", pt->path, (unsigned long long)pt->version);
    assert_string_equal(rep.problems[0].object, obj);
    write_verify_report_clear(&rep);

    /* the graph pins lancedb's version */
    lance_dataset *ds = NULL;
    uint64_t n = 0;
    assert_og_ok(lance_dataset_open(&ds, s, pt->path, latest, LANCE_ACCESS_READ));
    assert_og_ok(lance_dataset_count_rows(ds, &n));
    assert_int_equal(n, 40);
    int foreign = 0;
    for (size_t i = 0; i < ds->m->pb->n_fragments; i++)
        for (size_t j = 0; j < ds->m->pb->fragments[i]->n_files; j++)
            foreign += !ds->m->pb->fragments[i]->files[j]->has_og_xxh3;
    assert_true(foreign >= 1);
    lance_dataset_free(ds);
    adopt a = {pt, latest, n};
    uint64_t mver = 0;
    assert_og_ok(write_publish(g, NULL, NULL, NULL, adopt_rows, &a, &mver, NULL));
    assert_og_ok(write_verify(s, &vo, &rep));
    if (rep.n_problems)
        fail_msg("%s: %s: %s", rep.problems[0].kind, rep.problems[0].object,
                 rep.problems[0].message);
    /* lancedb's data files, and its version's manifest (the graph recorded no checksum) */
    assert_int_equal(rep.unchecked, (uint64_t)foreign + 1);
    assert_true(rep.checksummed >= 2); /* the older retained versions' files */
    assert_true(rep.rows >= 80);       /* deep: both table versions and the manifest decoded */
    write_verify_report_clear(&rep);
    graph_snapshot_free(snap);
    write_graph_close(g);
    test_sandbox_done(dir);
}

/* A merge's delta (GRAPH_CHANGE_DELTA: upserts and deletions of a table in one Lance Update)
 * is a version lancedb reads: exactly the upserted rows changed or added, the deleted ones
 * gone, across two fragments. */
static void test_lancedb_reads_delta(void **state)
{
    (void)state;
    char dir[256];
    test_sandbox_new(dir, sizeof dir, "write-interop-delta");
    const char *schema = "node Person { name: String @key  age: I32? }\n";
    store *s = NULL;
    assert_og_ok(store_local_open(&s, dir));
    write_init_result ir;
    assert_og_ok(write_init(s, schema, strlen(schema), "s.pg", &ir));
    write_graph *g = NULL;
    assert_og_ok(write_graph_open(&g, s, dir, NULL));
    const char *loads[] = {"{\"type\":\"Person\",\"data\":{\"name\":\"ann\",\"age\":1}}\n"
                           "{\"type\":\"Person\",\"data\":{\"name\":\"bob\",\"age\":2}}\n",
                           "{\"type\":\"Person\",\"data\":{\"name\":\"cid\",\"age\":3}}\n"
                           "{\"type\":\"Person\",\"data\":{\"name\":\"dee\",\"age\":4}}\n"};
    graph_change_set cs;
    exec_load_stats st;
    write_result r;
    for (int i = 0; i < 2; i++) { /* two fragments */
        memset(&cs, 0, sizeof cs);
        assert_og_ok(exec_load_parse(&cs, g->h->catalog, loads[i], strlen(loads[i]), "d.jsonl",
                                     EXEC_LOAD_APPEND, &st, NULL, NULL));
        assert_og_ok(write_changes(g, WRITE_KIND_LOAD, &cs, NULL, &r));
        graph_change_set_clear(&cs);
    }
    /* bob changes, eve is new; ann (fragment 0) and dee (fragment 1) go */
    const char *up = "{\"type\":\"Person\",\"data\":{\"name\":\"bob\",\"age\":20}}\n"
                     "{\"type\":\"Person\",\"data\":{\"name\":\"eve\",\"age\":5}}\n";
    memset(&cs, 0, sizeof cs);
    assert_og_ok(exec_load_parse(&cs, g->h->catalog, up, strlen(up), "d.jsonl", EXEC_LOAD_MERGE,
                                 &st, NULL, NULL));
    assert_int_equal(cs.n, 1);
    graph_change *c = &cs.changes[0];
    c->mode = GRAPH_CHANGE_DELTA;
    c->delete_ids = core_malloc(2 * sizeof *c->delete_ids);
    c->delete_ids[0] = core_strdup("ann");
    c->delete_ids[1] = core_strdup("dee");
    c->n_delete_ids = 2;
    assert_og_ok(write_changes(g, WRITE_KIND_LOAD, &cs, NULL, &r));
    graph_change_set_clear(&cs);
    graph_snapshot *snap = NULL;
    assert_og_ok(graph_snapshot_load(&snap, g->h->s, NULL, 0, 0));
    const graph_table *pt = graph_snapshot_table(snap, "node:Person");
    assert_non_null(pt);
    assert_int_equal(pt->row_count, 3);
    char parent[600], name[256], cmd[2048];
    const char *slash = strrchr(pt->path, '/');
    snprintf(parent, sizeof parent, "%s/%.*s", dir, (int)(slash - pt->path), pt->path);
    snprintf(name, sizeof name, "%.*s", (int)(strlen(slash + 1) - strlen(".lance")), slash + 1);
    assert_int_equal(lancedb_count(parent, name), 3);
    snprintf(cmd, sizeof cmd, "node '%s/lance_tool.cjs' dump '%s' '%s' --columns id,age",
             test_interop_dir(), parent, name);
    int rc_cmd = 0;
    char *out = test_capture(cmd, &rc_cmd);
    if (rc_cmd != 0) fail_msg("lancedb could not dump %s/%s: %s", parent, name, out);
    assert_string_equal(out, "{\"id\":\"bob\",\"age\":20}\n"
                             "{\"id\":\"cid\",\"age\":3}\n"
                             "{\"id\":\"eve\",\"age\":5}\n");
    free(out);
    graph_snapshot_free(snap);
    write_graph_close(g);
    test_sandbox_done(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lancedb_reads_loaded_graph),
        cmocka_unit_test(test_lancedb_and_key_indexes),
        cmocka_unit_test(test_verify_lancedb_files),
        cmocka_unit_test(test_lancedb_reads_delta),
    };
    return cmocka_run_group_tests(tests, test_interop_group_setup, NULL);
}
