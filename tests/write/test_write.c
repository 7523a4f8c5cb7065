/* The coordinator end to end on a local store: init, loads through the mutation/load adapter,
 * typed failures with zero effect, in-process recovery after injected failures (roll back,
 * roll forward, stale sidecar finalized), pins equal Lance HEADs, one audit row per recovery,
 * and exactly one graph-manifest commit per write. */
#include "write_fixture.h"

#include "core/alloc.h"
#include "core/failpoint.h"
#include "exec/load.h"
#include "lance/keyindex.h"
#include "lance/txn.h"
#include "lance/version.h"
#include "write/internal.h"

#include <dirent.h>
#include <string.h>

static const char *SCHEMA = "node Person {\n"
                            "    name: String @key\n"
                            "    age: I32?\n"
                            "    email: String? @unique\n"
                            "}\n"
                            "node Company {\n"
                            "    name: String @key\n"
                            "}\n"
                            "edge WorksAt: Person -> Company @card(0..1) { role: String? }\n";

typedef struct fixture {
    char dir[256];
    write_graph *g;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    test_sandbox_new(f->dir, sizeof f->dir, "write");
    store *s = wf_store(f->dir);
    write_init_result ir;
    assert_og_ok(write_init(s, SCHEMA, strlen(SCHEMA), "test.pg", &ir));
    assert_int_equal(ir.node_types, 2);
    assert_int_equal(ir.edge_types, 1);
    assert_false(ir.took_over);
    store_close(s);
    write_open_options oo = WRITE_OPEN_OPTIONS_INIT;
    oo.actor = "tester";
    assert_og_ok(write_graph_open(&f->g, wf_store(f->dir), f->dir, &oo));
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    core_fp_clear_all();
    write_graph_close(f->g);
    test_sandbox_done(f->dir);
    free(f);
    return 0;
}

static graph_snapshot *snap_of(write_graph *g)
{
    graph_snapshot *s = NULL;
    assert_og_ok(graph_snapshot_load(&s, g->h->s, NULL, 0, GRAPH_SNAP_LINEAGE));
    return s;
}

static uint64_t rows_of(const graph_snapshot *s, const char *alias)
{
    const graph_table *t = graph_snapshot_table(s, alias);
    assert_non_null(t);
    return t->row_count;
}

/* Every table's pin equals its Lance HEAD and no sidecar is left. */
static void assert_consistent(write_graph *g)
{
    graph_snapshot *s = snap_of(g);
    for (size_t i = 0; i < s->n_tables; i++) {
        char root[STORE_KEY_MAX];
        uint64_t head = 0;
        lance_naming nm;
        assert_og_ok(lance_branch_root(root, s->tables[i].path, s->tables[i].table_branch));
        assert_og_ok(lance_version_latest(g->h->s, root, &head, &nm));
        if (head != s->tables[i].version)
            fail_msg("%s: pin %llu != HEAD %llu", s->tables[i].alias,
                     (unsigned long long)s->tables[i].version, (unsigned long long)head);
    }
    graph_snapshot_free(s);
    char(*ids)[GRAPH_ID_LEN + 1] = NULL;
    size_t n = 9;
    assert_og_ok(write_sidecar_list(g->h->s, &ids, &n));
    free(ids);
    assert_int_equal(n, 0);
}

static size_t audit_count(write_graph *g, const char *kind)
{
    write_audit_row *rows = NULL;
    size_t n = 0, k = 0;
    assert_og_ok(write_audit_list(g->h->s, &rows, &n));
    for (size_t i = 0; i < n; i++)
        k += !kind || strcmp(rows[i].kind, kind) == 0;
    free(rows);
    return k;
}

static void test_init_genesis(void **state)
{
    fixture *f = *state;
    graph_snapshot *s = snap_of(f->g);
    assert_int_equal(s->manifest_version, 1);
    assert_int_equal(s->n_tables, 3);
    assert_int_equal(s->n_commits, 1);
    assert_string_equal(s->head, s->commits[0].id);
    assert_string_equal(s->commits[0].parent, "");
    assert_int_equal(rows_of(s, "node:Person"), 0);
    graph_snapshot_free(s);
    /* A second init is refused and changes nothing. */
    write_init_result ir;
    store *st = wf_store(f->dir);
    assert_og_error(write_init(st, SCHEMA, strlen(SCHEMA), "test.pg", &ir), OG_E_EXISTS);
    store_close(st);
    assert_consistent(f->g);
}

static void test_load_append_merge_overwrite(void **state)
{
    fixture *f = *state;
    write_result r;
    assert_og_ok(wf_load(f->g,
                         "{\"type\":\"Person\",\"data\":{\"name\":\"ann\",\"age\":30}}\n"
                         "{\"type\":\"Person\",\"data\":{\"name\":\"bob\",\"age\":40}}\n"
                         "{\"type\":\"Company\",\"data\":{\"name\":\"acme\"}}\n"
                         "{\"edge\":\"WorksAt\",\"from\":\"ann\",\"to\":\"acme\"}\n",
                         EXEC_LOAD_APPEND, &r));
    assert_true(r.committed);
    assert_int_equal(r.manifest_version, 2);
    assert_int_equal(r.n_tables, 3);
    graph_snapshot *s = snap_of(f->g);
    assert_int_equal(rows_of(s, "node:Person"), 2);
    assert_int_equal(rows_of(s, "node:Company"), 1);
    assert_int_equal(rows_of(s, "edge:WorksAt"), 1);
    assert_int_equal(s->n_commits, 2);
    assert_string_equal(s->head, r.commit_id);
    assert_string_equal(s->commits[0].id, r.commit_id);
    assert_string_equal(s->commits[0].parent, s->commits[1].id);
    assert_string_equal(s->commits[0].actor, "tester");
    graph_snapshot_free(s);

    /* Strict append of an existing key: typed, nothing written. */
    assert_og_error(
        wf_load(f->g, "{\"type\":\"Person\",\"data\":{\"name\":\"ann\"}}\n", EXEC_LOAD_APPEND, &r),
        OG_E_KEY_CONFLICT);
    s = snap_of(f->g);
    assert_int_equal(s->manifest_version, 2);
    graph_snapshot_free(s);

    /* Merge upserts: ann changes, cid is new. */
    assert_og_ok(wf_load(f->g,
                         "{\"type\":\"Person\",\"data\":{\"name\":\"ann\",\"age\":31}}\n"
                         "{\"type\":\"Person\",\"data\":{\"name\":\"cid\"}}\n",
                         EXEC_LOAD_MERGE, &r));
    assert_int_equal(r.manifest_version, 3);
    assert_int_equal(r.n_tables, 1);
    s = snap_of(f->g);
    assert_int_equal(rows_of(s, "node:Person"), 3);
    graph_snapshot_free(s);

    /* Overwrite replaces only the types present in the file. */
    assert_og_ok(wf_load(f->g,
                         "{\"type\":\"Company\",\"data\":{\"name\":\"acme\"}}\n"
                         "{\"type\":\"Company\",\"data\":{\"name\":\"bolt\"}}\n",
                         EXEC_LOAD_OVERWRITE, &r));
    s = snap_of(f->g);
    assert_int_equal(rows_of(s, "node:Company"), 2);
    assert_int_equal(rows_of(s, "node:Person"), 3);
    assert_int_equal(s->n_commits, 4);
    graph_snapshot_free(s);
    assert_consistent(f->g);
    assert_int_equal(audit_count(f->g, NULL), 0);
}

/* A DELTA change set (a merge's delta): the JSONL rows as each type's upserts, then `dels`
 * ("Type:id" strings, NULL-terminated) as deletions of those types. */
static void delta_set(write_graph *g, graph_change_set *cs, const char *jsonl, const char **dels)
{
    memset(cs, 0, sizeof *cs);
    assert_og_ok(exec_load_parse(cs, g->h->catalog, jsonl, strlen(jsonl), "d.jsonl",
                                 EXEC_LOAD_MERGE, NULL, NULL, NULL));
    for (size_t i = 0; i < cs->n; i++)
        cs->changes[i].mode = GRAPH_CHANGE_DELTA;
    for (; dels && *dels; dels++) {
        const char *colon = strchr(*dels, ':');
        char type[64];
        snprintf(type, sizeof type, "%.*s", (int)(colon - *dels), *dels);
        int ti = lang_catalog_find(g->h->catalog, type, LANG_NODE);
        if (ti < 0) ti = lang_catalog_find(g->h->catalog, type, LANG_EDGE);
        assert_true(ti >= 0);
        size_t at = 0;
        while (at < cs->n && cs->changes[at].type_index < ti)
            at++;
        if (at == cs->n || cs->changes[at].type_index != ti) {
            graph_change *c = core_realloc(cs->changes, (cs->n + 1) * sizeof *c);
            assert_non_null(c);
            memmove(c + at + 1, c + at, (cs->n - at) * sizeof *c);
            memset(&c[at], 0, sizeof *c);
            c[at].type_index = ti;
            c[at].mode = GRAPH_CHANGE_DELTA;
            cs->changes = c;
            cs->n++;
        }
        graph_change *c = &cs->changes[at];
        c->delete_ids = core_realloc(c->delete_ids, (c->n_delete_ids + 1) * sizeof *c->delete_ids);
        assert_non_null(c->delete_ids);
        c->delete_ids[c->n_delete_ids++] = core_strdup(colon + 1);
    }
}

/* "id=value" of every row of a table at its pin, sorted by id, ';'-separated (value: the
 * column `col`, or src>dst for an edge table when col is NULL). */
static void table_rows(write_graph *g, const graph_table *t, const char *col, char *out, size_t cap)
{
    lance_dataset *ds = NULL;
    arrow_batch *b = NULL;
    const char *cols[3] = {GRAPH_COL_ID, col ? col : GRAPH_COL_SRC, GRAPH_COL_DST};
    lance_scan_options so = LANCE_SCAN_OPTIONS_INIT;
    so.columns = cols;
    so.n_columns = col ? 2 : 3;
    assert_og_ok(graph_table_open(&ds, g->h->s, t, LANCE_ACCESS_READ));
    assert_og_ok(lance_dataset_scan_all(&b, ds, &so));
    lance_dataset_free(ds);
    char rows[32][96];
    size_t n = 0;
    for (int64_t r = 0; r < b->num_rows && n < 32; r++, n++) {
        size_t l1, l2 = 0, l3 = 0;
        const char *id = (const char *)arrow_array_get_bytes(b->columns[0], r, &l1);
        if (!col) {
            const char *s = (const char *)arrow_array_get_bytes(b->columns[1], r, &l2);
            const char *d = (const char *)arrow_array_get_bytes(b->columns[2], r, &l3);
            snprintf(rows[n], sizeof rows[n], "%.*s=%.*s>%.*s", (int)l1, id, (int)l2, s, (int)l3,
                     d);
        } else if (!arrow_array_is_valid(b->columns[1], r)) {
            snprintf(rows[n], sizeof rows[n], "%.*s=null", (int)l1, id);
        } else {
            snprintf(rows[n], sizeof rows[n], "%.*s=%lld", (int)l1, id,
                     (long long)arrow_array_get_int(b->columns[1], r));
        }
    }
    arrow_batch_free(b);
    qsort(rows, n, sizeof rows[0], (int (*)(const void *, const void *))strcmp);
    size_t o = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n && o < cap; i++)
        o += (size_t)snprintf(out + o, cap - o, "%s%s", i ? ";" : "", rows[i]);
}

/* A DELTA per table commits as one Lance Update each: exactly its upserts applied and its
 * deletions gone, one new version per table, one graph commit; the key indexes follow (a
 * deleted id can be inserted again, an upserted one cannot); a DELTA the validator refuses
 * writes nothing. */
static void test_delta_commit(void **state)
{
    fixture *f = *state;
    write_result r;
    assert_og_ok(wf_load(f->g,
                         "{\"type\":\"Person\",\"data\":{\"name\":\"alice\",\"age\":30}}\n"
                         "{\"type\":\"Person\",\"data\":{\"name\":\"bob\",\"age\":40}}\n"
                         "{\"type\":\"Person\",\"data\":{\"name\":\"carol\",\"age\":50}}\n"
                         "{\"type\":\"Company\",\"data\":{\"name\":\"acme\"}}\n"
                         "{\"type\":\"Company\",\"data\":{\"name\":\"globex\"}}\n"
                         "{\"edge\":\"WorksAt\",\"from\":\"alice\",\"to\":\"acme\","
                         "\"data\":{\"id\":\"w1\"}}\n"
                         "{\"edge\":\"WorksAt\",\"from\":\"carol\",\"to\":\"acme\","
                         "\"data\":{\"id\":\"w2\"}}\n",
                         EXEC_LOAD_APPEND, &r));
    graph_snapshot *before = snap_of(f->g);
    graph_change_set cs;
    const char *dels[] = {"Person:carol", "WorksAt:w2", NULL};
    delta_set(f->g, &cs,
              "{\"type\":\"Person\",\"data\":{\"name\":\"alice\",\"age\":31}}\n"
              "{\"type\":\"Person\",\"data\":{\"name\":\"dave\",\"age\":20}}\n"
              "{\"edge\":\"WorksAt\",\"from\":\"alice\",\"to\":\"globex\","
              "\"data\":{\"id\":\"w1\"}}\n",
              dels);
    assert_int_equal(cs.n, 2);
    assert_og_ok(write_changes(f->g, WRITE_KIND_LOAD, &cs, NULL, &r));
    graph_change_set_clear(&cs);
    assert_true(r.committed);
    assert_int_equal(r.n_tables, 2);
    graph_snapshot *after = snap_of(f->g);
    assert_int_equal(after->manifest_version, before->manifest_version + 1);
    const graph_table *p0 = graph_snapshot_table(before, "node:Person");
    const graph_table *p1 = graph_snapshot_table(after, "node:Person");
    const graph_table *w0 = graph_snapshot_table(before, "edge:WorksAt");
    const graph_table *w1 = graph_snapshot_table(after, "edge:WorksAt");
    assert_int_equal(p1->version, p0->version + 1);
    assert_int_equal(w1->version, w0->version + 1);
    assert_int_equal(graph_snapshot_table(after, "node:Company")->version,
                     graph_snapshot_table(before, "node:Company")->version);
    assert_int_equal(p1->row_count, 3);
    assert_int_equal(w1->row_count, 1);
    char got[1024];
    table_rows(f->g, p1, "age", got, sizeof got);
    assert_string_equal(got, "alice=31;bob=40;dave=20");
    table_rows(f->g, w1, NULL, got, sizeof got);
    assert_string_equal(got, "w1=alice>globex");
    /* one Update per table, as lance's merge-insert writes */
    lance_dataset *ds = NULL;
    Lance__Table__Transaction *t = NULL;
    assert_og_ok(graph_table_open(&ds, f->g->h->s, p1, LANCE_ACCESS_READ));
    assert_og_ok(lance_txn_load(f->g->h->s, ds->root, ds->m, &t));
    assert_int_equal(t->operation_case, LANCE__TABLE__TRANSACTION__OPERATION_UPDATE);
    lance_pb_free(t);
    /* the id index: carol gone, dave there */
    char *probe[] = {"carol", "dave", "alice"};
    lance_kix_addrs found;
    assert_og_ok(lance_kix_lookup_strs(&found, ds, GRAPH_COL_ID, probe, 1));
    assert_int_equal(found.n, 0);
    lance_kix_addrs_clear(&found);
    assert_og_ok(lance_kix_lookup_strs(&found, ds, GRAPH_COL_ID, probe + 1, 2));
    assert_int_equal(found.n, 2);
    lance_kix_addrs_clear(&found);
    lance_dataset_free(ds);
    graph_snapshot_free(before);
    graph_snapshot_free(after);
    assert_consistent(f->g);
    /* strict inserts against the new version: carol again is fine, dave is not */
    assert_og_error(
        wf_load(f->g, "{\"type\":\"Person\",\"data\":{\"name\":\"dave\"}}\n", EXEC_LOAD_APPEND, &r),
        OG_E_KEY_CONFLICT);
    assert_og_ok(wf_load(f->g, "{\"type\":\"Person\",\"data\":{\"name\":\"carol\"}}\n",
                         EXEC_LOAD_APPEND, &r));
    /* deleting alice leaves w1 dangling: refused, nothing written */
    before = snap_of(f->g);
    const char *dels2[] = {"Person:alice", NULL};
    delta_set(f->g, &cs, "", dels2);
    assert_og_error(write_changes(f->g, WRITE_KIND_LOAD, &cs, NULL, &r), OG_E_BAD_REQUEST);
    assert_non_null(strstr(og_error_last()->message, "would leave WorksAt edge w1 dangling"));
    graph_change_set_clear(&cs);
    after = snap_of(f->g);
    assert_int_equal(after->manifest_version, before->manifest_version);
    graph_snapshot_free(after);
    /* deletions only, of both: one commit; ids nobody holds: no table moves */
    const char *dels3[] = {"Person:alice", "WorksAt:w1", NULL};
    delta_set(f->g, &cs, "", dels3);
    assert_og_ok(write_changes(f->g, WRITE_KIND_LOAD, &cs, NULL, &r));
    graph_change_set_clear(&cs);
    assert_int_equal(r.n_tables, 2);
    after = snap_of(f->g);
    assert_int_equal(rows_of(after, "node:Person"), 3);
    assert_int_equal(rows_of(after, "edge:WorksAt"), 0);
    graph_snapshot_free(after);
    graph_snapshot_free(before);
    const char *dels4[] = {"Person:nobody", "Company:nothing", NULL};
    delta_set(f->g, &cs, "", dels4);
    assert_og_ok(write_changes(f->g, WRITE_KIND_LOAD, &cs, NULL, &r));
    graph_change_set_clear(&cs);
    assert_int_equal(r.n_tables, 0);
    assert_consistent(f->g);
    /* on a branch (the first touch forks the table, then stages the DELTA there); main stays */
    assert_og_ok(write_branch_create(f->g, "dev", NULL, NULL, NULL));
    write_options wo = WRITE_OPTIONS_INIT;
    wo.branch = "dev";
    delta_set(f->g, &cs, "{\"type\":\"Person\",\"data\":{\"name\":\"bob\",\"age\":41}}\n",
              (const char *[]){"Person:dave", "Company:nothing", NULL});
    assert_og_ok(write_changes(f->g, WRITE_KIND_LOAD, &cs, &wo, &r));
    graph_change_set_clear(&cs);
    graph_snapshot *dev = NULL;
    assert_og_ok(graph_snapshot_load(&dev, f->g->h->s, "dev", 0, 0));
    after = snap_of(f->g);
    /* Person forked and moved one version; the Company fork staged nothing: its pin stays */
    const graph_table *dp = graph_snapshot_table(dev, "node:Person");
    const graph_table *dc = graph_snapshot_table(dev, "node:Company");
    assert_string_equal(dp->table_branch, "dev");
    assert_int_equal(dp->version, graph_snapshot_table(after, "node:Person")->version + 1);
    assert_null(dc->table_branch);
    assert_int_equal(dc->version, graph_snapshot_table(after, "node:Company")->version);
    graph_snapshot_free(after);
    table_rows(f->g, graph_snapshot_table(dev, "node:Person"), "age", got, sizeof got);
    assert_string_equal(got, "bob=41;carol=null");
    graph_snapshot_free(dev);
    after = snap_of(f->g);
    table_rows(f->g, graph_snapshot_table(after, "node:Person"), "age", got, sizeof got);
    assert_string_equal(got, "bob=40;carol=null;dave=20");
    graph_snapshot_free(after);
}

static void test_validation_failures_write_nothing(void **state)
{
    fixture *f = *state;
    write_result r;
    /* An edge to a node that does not exist. */
    assert_og_error(wf_load(f->g,
                            "{\"type\":\"Person\",\"data\":{\"name\":\"ann\"}}\n"
                            "{\"edge\":\"WorksAt\",\"from\":\"ann\",\"to\":\"nowhere\"}\n",
                            EXEC_LOAD_APPEND, &r),
                    OG_E_BAD_REQUEST);
    graph_snapshot *s = snap_of(f->g);
    assert_int_equal(s->manifest_version, 1);
    assert_int_equal(rows_of(s, "node:Person"), 0);
    graph_snapshot_free(s);
    assert_consistent(f->g);
}

/* Overwriting a node table so that a committed edge would dangle is refused, unless the same
 * load replaces the edges too. */
static void test_overwrite_cannot_orphan_edges(void **state)
{
    fixture *f = *state;
    write_result r;
    assert_og_ok(wf_load(f->g,
                         "{\"type\":\"Person\",\"data\":{\"name\":\"ann\"}}\n"
                         "{\"type\":\"Company\",\"data\":{\"name\":\"acme\"}}\n"
                         "{\"edge\":\"WorksAt\",\"from\":\"ann\",\"to\":\"acme\"}\n",
                         EXEC_LOAD_APPEND, &r));
    assert_og_error(wf_load(f->g, "{\"type\":\"Company\",\"data\":{\"name\":\"bolt\"}}\n",
                            EXEC_LOAD_OVERWRITE, &r),
                    OG_E_BAD_REQUEST);
    assert_non_null(strstr(og_error_last()->message, "dangling"));
    graph_snapshot *s = snap_of(f->g);
    assert_int_equal(s->manifest_version, 2);
    graph_snapshot_free(s);
    /* Replacing the edges in the same load is fine. */
    assert_og_ok(wf_load(f->g,
                         "{\"type\":\"Company\",\"data\":{\"name\":\"bolt\"}}\n"
                         "{\"edge\":\"WorksAt\",\"from\":\"ann\",\"to\":\"bolt\"}\n",
                         EXEC_LOAD_OVERWRITE, &r));
    s = snap_of(f->g);
    assert_int_equal(rows_of(s, "edge:WorksAt"), 1);
    assert_int_equal(rows_of(s, "node:Company"), 1);
    graph_snapshot_free(s);
    assert_consistent(f->g);
}

static void test_empty_load_is_no_commit(void **state)
{
    fixture *f = *state;
    write_result r;
    assert_og_ok(wf_load(f->g, "\n\n", EXEC_LOAD_APPEND, &r));
    assert_false(r.committed);
    graph_snapshot *s = snap_of(f->g);
    assert_int_equal(s->manifest_version, 1);
    graph_snapshot_free(s);
}

/* A failure between the two table effects: the first table moved by its own transaction, the
 * second did not. In-process recovery rolls the first back with Restore and publishes a
 * rollback commit; the caller gets the original error; pins equal HEADs; one audit row. */
static void test_partial_effects_roll_back(void **state)
{
    fixture *f = *state;
    write_result r;
    assert_og_ok(core_fp_set("write.post_table_effect", CORE_FP_ERROR, OG_E_STORAGE, 1));
    int rc = wf_load(f->g,
                     "{\"type\":\"Person\",\"data\":{\"name\":\"ann\"}}\n"
                     "{\"type\":\"Company\",\"data\":{\"name\":\"acme\"}}\n",
                     EXEC_LOAD_APPEND, &r);
    core_fp_clear_all();
    assert_og_error(rc, OG_E_STORAGE);
    assert_non_null(strstr(og_error_last()->message, "undone by recovery"));
    graph_snapshot *s = snap_of(f->g);
    assert_int_equal(rows_of(s, "node:Person"), 0);
    assert_int_equal(rows_of(s, "node:Company"), 0);
    /* genesis + the rollback commit by the recovery actor */
    assert_int_equal(s->n_commits, 2);
    assert_string_equal(s->commits[0].actor, WRITE_ACTOR_RECOVERY);
    graph_snapshot_free(s);
    assert_consistent(f->g);
    assert_int_equal(audit_count(f->g, "rolled_back"), 1);
    /* A follow-up write succeeds. */
    assert_og_ok(
        wf_load(f->g, "{\"type\":\"Person\",\"data\":{\"name\":\"ann\"}}\n", EXEC_LOAD_APPEND, &r));
    assert_true(r.committed);
    assert_consistent(f->g);
}

typedef struct seen_table {
    char alias[64];
    uint64_t from, to, rows;
    int calls;
} seen_table;

static void on_table_seen(void *arg, const char *alias, uint64_t from, uint64_t to, uint64_t rows)
{
    seen_table *t = arg;
    snprintf(t->alias, sizeof t->alias, "%s", alias);
    t->from = from;
    t->to = to;
    t->rows = rows;
    t->calls++;
}

/* Every effect landed, the publish failed: recovery completes the write with its own id. */
static void test_confirmed_effects_roll_forward(void **state)
{
    fixture *f = *state;
    write_result r;
    seen_table seen = {{0}, 0, 0, 0, 0};
    write_options wo = WRITE_OPTIONS_INIT;
    wo.on_table = on_table_seen;
    wo.on_table_arg = &seen;
    assert_og_ok(core_fp_set("write.pre_publish", CORE_FP_ERROR, OG_E_STORAGE, 1));
    int rc = wf_load_opt(f->g, "{\"type\":\"Person\",\"data\":{\"name\":\"ann\"}}\n",
                         EXEC_LOAD_APPEND, &wo, &r);
    core_fp_clear_all();
    assert_og_ok(rc);
    assert_true(r.committed);
    graph_snapshot *s = snap_of(f->g);
    assert_int_equal(rows_of(s, "node:Person"), 1);
    assert_string_equal(s->head, r.commit_id);
    assert_string_equal(s->commits[0].actor, "tester"); /* original lineage kept */
    /* The result says what the commit recovery made holds, as a write that published itself
     * does (it said manifest version 0 and no tables). */
    assert_int_equal(r.manifest_version, s->manifest_version);
    assert_int_equal(r.n_tables, 1);
    const graph_table *pt = graph_snapshot_table(s, "node:Person");
    assert_non_null(pt);
    assert_int_equal(seen.calls, 1);
    assert_string_equal(seen.alias, "node:Person");
    assert_int_equal(seen.to, pt->version);
    assert_int_equal(seen.from, pt->version - 1);
    assert_int_equal(seen.rows, 1);
    graph_snapshot_free(s);
    assert_consistent(f->g);
    assert_int_equal(audit_count(f->g, "rolled_forward"), 1);
}

/* Load ann, whose write publishes and then fails before it removes its sidecar. */
static void load_leaving_sidecar(fixture *f, write_result *r)
{
    assert_og_ok(core_fp_set("write.post_publish", CORE_FP_ERROR, OG_E_STORAGE, 1));
    assert_og_ok(
        wf_load(f->g, "{\"type\":\"Person\",\"data\":{\"name\":\"ann\"}}\n", EXEC_LOAD_APPEND, r));
    core_fp_clear_all();
}

/* The commit is visible but the sidecar delete did not happen: the next write's barrier proves
 * the intent published, audits it once and removes it. */
static void test_stale_sidecar_finalized(void **state)
{
    fixture *f = *state;
    write_result r;
    load_leaving_sidecar(f, &r);
    char(*ids)[GRAPH_ID_LEN + 1] = NULL;
    size_t n = 0;
    assert_og_ok(write_sidecar_list(f->g->h->s, &ids, &n));
    assert_int_equal(n, 1);
    assert_string_equal(ids[0], r.operation_id);
    free(ids);
    write_result r2;
    assert_og_ok(wf_load(f->g, "{\"type\":\"Person\",\"data\":{\"name\":\"bob\"}}\n",
                         EXEC_LOAD_APPEND, &r2));
    assert_consistent(f->g);
    assert_int_equal(audit_count(f->g, "rolled_forward"), 1);
    graph_snapshot *s = snap_of(f->g);
    assert_int_equal(s->n_commits, 3);
    assert_int_equal(rows_of(s, "node:Person"), 2);
    graph_snapshot_free(s);
}

/* A sidecar of an intent recovery already discarded (the audit log says so) that comes back
 * after later writes moved its tables (a delete that did not last, a restored backup) is a
 * stale copy: the barrier retires it (deletes it, audits the retirement) instead of blocking
 * every write with recovery_required. */
static void test_stale_discarded_sidecar_retired(void **state)
{
    fixture *f = *state;
    /* A write that fails after arming, with in-process recovery kept from finishing. */
    assert_og_ok(core_fp_set("write.post_sidecar", CORE_FP_ERROR, OG_E_STORAGE, 1));
    assert_og_ok(core_fp_set("recovery.pre_audit", CORE_FP_ERROR, OG_E_STORAGE, 0));
    write_result r;
    assert_og_error(
        wf_load(f->g, "{\"type\":\"Person\",\"data\":{\"name\":\"ann\"}}\n", EXEC_LOAD_APPEND, &r),
        OG_E_RECOVERY_REQUIRED);
    core_fp_clear_all();
    char(*ids)[GRAPH_ID_LEN + 1] = NULL;
    size_t n = 0;
    assert_og_ok(write_sidecar_list(f->g->h->s, &ids, &n));
    assert_int_equal(n, 1);
    char id[GRAPH_ID_LEN + 1], key[STORE_KEY_MAX];
    memcpy(id, ids[0], sizeof id);
    free(ids);
    write_sidecar_key(key, id);
    core_buf copy = CORE_BUF_INIT;
    assert_og_ok(store_get(f->g->h->s, key, 0, STORE_ALL, &copy));
    /* The next write discards it (no effect had happened) and moves the table on. */
    assert_og_ok(
        wf_load(f->g, "{\"type\":\"Person\",\"data\":{\"name\":\"bob\"}}\n", EXEC_LOAD_APPEND, &r));
    assert_int_equal(audit_count(f->g, "discarded"), 1);
    /* The copy comes back. */
    assert_og_ok(store_put(f->g->h->s, key, copy.data, copy.len, 0));
    core_buf_free(&copy);
    assert_og_ok(
        wf_load(f->g, "{\"type\":\"Person\",\"data\":{\"name\":\"cy\"}}\n", EXEC_LOAD_APPEND, &r));
    assert_true(r.committed);
    store_meta m;
    assert_og_error(store_head(f->g->h->s, key, &m), OG_E_NOT_FOUND);
    assert_int_equal(audit_count(f->g, "discarded"), 1);
    assert_int_equal(audit_count(f->g, "retired"), 1);
    bool found = false;
    char kind[24];
    assert_og_ok(write_audit_find(f->g->h->s, id, &found, kind, NULL));
    assert_true(found);
    assert_string_equal(kind, "discarded");
    assert_consistent(f->g);
}

/* Lock files in .og-locks whose names start with prefix. */
static size_t count_locks(const char *dir, const char *prefix)
{
    char path[512];
    snprintf(path, sizeof path, "%s/.og-locks", dir);
    DIR *d = opendir(path);
    size_t n = 0;
    for (struct dirent *e; d && (e = readdir(d)) != NULL;)
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    if (d) closedir(d);
    return n;
}

/* A handle reuses the owner lock of a write that finished for its next writes, and removes it
 * when it closes: no lock file per write, and none left behind. */
static void test_owner_locks_reused(void **state)
{
    fixture *f = *state;
    for (int i = 0; i < 10; i++) {
        char line[96];
        snprintf(line, sizeof line, "{\"type\":\"Person\",\"data\":{\"name\":\"p%d\"}}\n", i);
        assert_og_ok(wf_load(f->g, line, EXEC_LOAD_APPEND, NULL));
    }
    assert_int_equal(count_locks(f->dir, "owner-"), 1);
    assert_int_equal(count_locks(f->dir, "sidecar-"), 0);
    write_graph_close(f->g);
    f->g = NULL;
    assert_int_equal(count_locks(f->dir, "owner-"), 0);
}

/* A sidecar whose owner is alive (its lock is held) is never acted on: the barrier fails typed
 * with the operation id and nothing moves. */
static void test_live_owner_blocks_barrier(void **state)
{
    fixture *f = *state;
    write_result r;
    load_leaving_sidecar(f, &r);
    /* Pretend its owner is still running: hold the owner lock from another store handle. */
    store *other = wf_store(f->dir);
    char lock_name[STORE_KEY_MAX], key[STORE_KEY_MAX];
    write_sidecar_key(key, r.operation_id);
    core_buf body = CORE_BUF_INIT;
    assert_og_ok(store_get(other, key, 0, STORE_ALL, &body));
    write_intent in;
    assert_og_ok(write_intent_from_json(&in, (const char *)body.data, body.len, key));
    write_intent_owner_lock(&in, lock_name); /* the lock the sidecar names */
    assert_non_null(strstr(lock_name, "owner-"));
    write_intent_clear(&in);
    /* a sidecar naming a lock outside the lock namespace is refused as damaged */
    char *text = strndup((const char *)body.data, body.len);
    char *at = strstr(text, lock_name);
    assert_non_null(at);
    at[5] = '/'; /* "owner/..." */
    assert_og_error(write_intent_from_json(&in, text, strlen(text), key), OG_E_CORRUPT);
    free(text);
    core_buf_free(&body);
    store_lock *l = NULL;
    assert_og_ok(store_lock_acquire(other, lock_name, 0, &l));
    if (!store_lock_is_real(l)) {
        store_lock_release(l);
        store_close(other);
        skip();
    }
    write_result r2;
    int rc =
        wf_load(f->g, "{\"type\":\"Person\",\"data\":{\"name\":\"bob\"}}\n", EXEC_LOAD_APPEND, &r2);
    assert_og_error(rc, OG_E_RECOVERY_REQUIRED);
    assert_string_equal(og_error_last()->operation_id, r.operation_id);
    store_lock_release(l);
    store_close(other);
    assert_og_ok(wf_load(f->g, "{\"type\":\"Person\",\"data\":{\"name\":\"bob\"}}\n",
                         EXEC_LOAD_APPEND, &r2));
    assert_consistent(f->g);
}

/* What a power loss leaves of an unsynced sidecar (empty, zeros, a document cut short, maybe
 * followed by zeros) never reached an effect, and is discarded by the barrier; so is a sidecar
 * that holds another operation (a recycled file brought back by a power loss). Other damage is
 * not a tear (test_bad_sidecars). */
static void test_torn_sidecars_discarded(void **state)
{
    fixture *f = *state;
    write_result r;
    load_leaving_sidecar(f, &r);
    char key[STORE_KEY_MAX];
    write_sidecar_key(key, r.operation_id);
    core_buf body = CORE_BUF_INIT;
    assert_og_ok(store_get(f->g->h->s, key, 0, STORE_ALL, &body));
    assert_true(body.len > 40);
    const char *doc = (const char *)body.data;
    /* the classifier */
    assert_true(write_sidecar_torn("", 0));
    char zeros[64] = {0};
    assert_true(write_sidecar_torn(zeros, sizeof zeros));
    for (size_t cut = 1; cut < body.len; cut += body.len / 7)
        assert_true(write_sidecar_torn(doc, cut));
    char *padded = calloc(1, body.len + 32);
    memcpy(padded, doc, body.len / 2);
    assert_true(write_sidecar_torn(padded, body.len + 32)); /* a cut, then zeros */
    free(padded);
    assert_false(write_sidecar_torn(doc, body.len));   /* whole */
    assert_false(write_sidecar_torn("{not json", 9));  /* damaged, not cut */
    assert_false(write_sidecar_torn("{\"a\":1}x", 8)); /* trailing garbage */
    /* the barrier: each kind of tear under a fresh operation id is discarded, writes go on */
    const struct {
        const char *data;
        size_t len;
    } torn[] = {{"", 0}, {zeros, sizeof zeros}, {doc, body.len / 3}, {doc, body.len}};
    for (size_t i = 0; i < sizeof torn / sizeof torn[0]; i++) {
        core_ulid u;
        char id[GRAPH_ID_LEN + 1], other[STORE_KEY_MAX];
        assert_og_ok(core_ulid_new(&u));
        core_ulid_format(&u, id);
        write_sidecar_key(other, id);
        /* the last one is whole, but it is another operation's (r's) */
        assert_og_ok(store_put(f->g->h->s, other, torn[i].data, torn[i].len, 0));
        write_result r2;
        char line[96];
        snprintf(line, sizeof line, "{\"type\":\"Person\",\"data\":{\"name\":\"t%zu\"}}\n", i);
        assert_og_ok(wf_load(f->g, line, EXEC_LOAD_APPEND, &r2));
        store_meta m;
        assert_og_error(store_head(f->g->h->s, other, &m), OG_E_NOT_FOUND);
    }
    core_buf_free(&body);
    assert_consistent(f->g);
    graph_snapshot *s = snap_of(f->g);
    assert_int_equal(rows_of(s, "node:Person"), 5);
    graph_snapshot_free(s);
}

/* Damaged, foreign-named and newer-format sidecars never brick silently and are never applied. */
static void test_bad_sidecars(void **state)
{
    fixture *f = *state;
    write_result r;
    char key[STORE_KEY_MAX];
    core_ulid u;
    char id[GRAPH_ID_LEN + 1];
    assert_og_ok(core_ulid_new(&u));
    core_ulid_format(&u, id);
    write_sidecar_key(key, id);
    /* Damage that is not a tear (not JSON, or JSON of the wrong shape) blocks writes typed
     * recovery_required, naming the file and the command that resolves it. */
    const char *damage[] = {"{not json", "{\"format\":1}", "[1,2,3]"};
    for (size_t i = 0; i < sizeof damage / sizeof damage[0]; i++) {
        assert_og_ok(store_put(f->g->h->s, key, damage[i], strlen(damage[i]), 0));
        assert_og_error(wf_load(f->g, "{\"type\":\"Person\",\"data\":{\"name\":\"ann\"}}\n",
                                EXEC_LOAD_APPEND, &r),
                        OG_E_RECOVERY_REQUIRED);
        assert_non_null(strstr(og_error_last()->message, key));
        assert_non_null(strstr(og_error_last()->message, "omnigraph recover"));
        assert_string_equal(og_error_last()->operation_id, id);
        assert_string_equal(og_error_last()->object, key);
    }
    /* Nothing proves anything about a damaged intent: discarding it takes --force, and is
     * audited. */
    write_resolve_options ro = {true, false};
    int kind = 0;
    char commit[GRAPH_ID_LEN + 1];
    assert_og_error(write_recover_resolve(f->g, id, &ro, &kind, commit), OG_E_RECOVERY_REQUIRED);
    ro.force = true;
    assert_og_ok(write_recover_resolve(f->g, id, &ro, &kind, commit));
    assert_int_equal(kind, WRITE_RECOVERY_DISCARDED_FORCED);
    assert_int_equal(audit_count(f->g, "discarded_forced"), 1);
    store_meta gone;
    assert_og_error(store_head(f->g->h->s, key, &gone), OG_E_NOT_FOUND);
    assert_og_ok(store_put(f->g->h->s, key, "{\"format\":99}", 13, 0));
    assert_og_error(
        wf_load(f->g, "{\"type\":\"Person\",\"data\":{\"name\":\"ann\"}}\n", EXEC_LOAD_APPEND, &r),
        OG_E_UNSUPPORTED);
    assert_non_null(strstr(og_error_last()->message, "upgrade"));
    assert_og_ok(store_delete(f->g->h->s, key, 0));
    /* A file that is not <ULID>.json is not ours: ignored. */
    assert_og_ok(store_put(f->g->h->s, GRAPH_RECOVERY_DIR "/notes.json", "x", 1, 0));
    assert_og_ok(
        wf_load(f->g, "{\"type\":\"Person\",\"data\":{\"name\":\"ann\"}}\n", EXEC_LOAD_APPEND, &r));
    assert_true(r.committed);
}

/* A schema apply's sidecar carries its target identity and registry changes through JSON
 * exactly; a damaged record, or a schema apply without one, is refused as corrupt. */
static void test_schema_sidecar_roundtrip(void **state)
{
    (void)state;
    write_intent in;
    memset(&in, 0, sizeof in);
    in.format = WRITE_SIDECAR_FORMAT;
    in.kind = WRITE_KIND_SCHEMA;
    snprintf(in.operation_id, sizeof in.operation_id, "01ARZ3NDEKTSV4RRFFQ69G5FAV");
    snprintf(in.commit_id, sizeof in.commit_id, "01ARZ3NDEKTSV4RRFFQ69G5FAW");
    snprintf(in.rollback_commit_id, sizeof in.rollback_commit_id, "01ARZ3NDEKTSV4RRFFQ69G5FAY");
    snprintf(in.schema_target, sizeof in.schema_target, "fedcba9876543210fedcba9876543210");
    write_schema_table t[3] = {{WRITE_SCHEMA_CREATE, LANG_NODE, 0xbb, 2, 1, "node:Pet"},
                               {WRITE_SCHEMA_RENAME, LANG_NODE, 0xaa, 1, 0, "node:Human"},
                               {WRITE_SCHEMA_DROP, LANG_EDGE, 0xcc, 1, 4, "edge:Knows"}};
    in.schema_tables = t;
    in.n_schema_tables = 3;
    char key[STORE_KEY_MAX];
    write_sidecar_key(key, in.operation_id);
    core_buf b = CORE_BUF_INIT;
    assert_og_ok(write_intent_to_json(&in, &b));
    write_intent out;
    char *text = strndup((const char *)b.data, b.len);
    assert_og_ok(write_intent_from_json(&out, text, strlen(text), key));
    assert_int_equal(out.kind, WRITE_KIND_SCHEMA);
    assert_string_equal(out.schema_target, in.schema_target);
    assert_int_equal(out.n_schema_tables, 3);
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(out.schema_tables[i].op, t[i].op);
        assert_int_equal(out.schema_tables[i].kind, t[i].kind);
        assert_int_equal(out.schema_tables[i].sid, t[i].sid);
        assert_int_equal(out.schema_tables[i].inc, t[i].inc);
        assert_int_equal(out.schema_tables[i].version, t[i].version);
        assert_string_equal(out.schema_tables[i].alias, t[i].alias);
    }
    write_intent_clear(&out);
    /* damage: an unknown op, a bad identity, a zero incarnation, no record at all */
    const char *bad[][2] = {{"\"rename\"", "\"explode\""},
                            {"fedcba9876543210fedcba9876543210", "fedcba98765432"},
                            {"\"0000000000000002\"", "\"0000000000000000\""},
                            {"\"schema\"", "\"schemata\""}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *at = strstr(text, bad[i][0]);
        assert_non_null(at);
        char *broken = NULL;
        assert_true(asprintf(&broken, "%.*s%s%s", (int)(at - text), text, bad[i][1],
                             at + strlen(bad[i][0])) > 0);
        assert_og_error(write_intent_from_json(&out, broken, strlen(broken), key), OG_E_CORRUPT);
        free(broken);
    }
    free(text);
    core_buf_free(&b);
}

/* RFC-022 §11.1: in the fault store's operation log, nothing that makes an effect durable
 * (a Lance version file or transaction file of any table, a ref, the manifest) precedes the
 * sidecar; only reclaimable staged data files may. And exactly one manifest version is
 * published per write. */
static void test_no_effect_before_sidecar(void **state)
{
    fixture *f = *state;
    write_graph_close(f->g);
    store *local = NULL, *fs = NULL;
    assert_og_ok(store_local_open(&local, f->dir));
    assert_og_ok(store_fault_open(&fs, local, 1));
    assert_og_ok(write_graph_open(&f->g, fs, f->dir, NULL));
    write_result r;
    assert_og_ok(wf_load(f->g,
                         "{\"type\":\"Person\",\"data\":{\"name\":\"ann\"}}\n"
                         "{\"type\":\"Company\",\"data\":{\"name\":\"acme\"}}\n"
                         "{\"edge\":\"WorksAt\",\"from\":\"ann\",\"to\":\"acme\"}\n",
                         EXEC_LOAD_APPEND, &r));
    size_t n = 0;
    const store_oplog_entry *log = store_fault_log(fs, &n);
    char sidecar[STORE_KEY_MAX];
    write_sidecar_key(sidecar, r.operation_id);
    size_t sidecar_at = n, manifest_versions = 0, effects_after = 0;
    for (size_t i = 0; i < n; i++) {
        const store_oplog_entry *e = &log[i];
        bool write = e->kind == STORE_OP_PUT || e->kind == STORE_OP_PUT_IF_ABSENT;
        if (!write || !e->key) continue;
        if (strcmp(e->key, sidecar) == 0 && sidecar_at == n) sidecar_at = i;
        bool effect = strstr(e->key, "/_versions/") || strstr(e->key, "/_transactions/") ||
                      strstr(e->key, "/_refs/");
        if (!effect) continue;
        if (sidecar_at == n) fail_msg("durable effect %s before the sidecar", e->key);
        effects_after++;
        if (strncmp(e->key, GRAPH_MANIFEST_DIR "/_versions/", strlen(GRAPH_MANIFEST_DIR) + 11) ==
                0 &&
            strstr(e->key, ".manifest"))
            manifest_versions++;
    }
    assert_true(sidecar_at < n);
    assert_true(effects_after >= 3 * 2); /* three tables: .txn + version file each */
    assert_int_equal(manifest_versions, 1);
}

/* The conformance table: every graph-visible entry point names a registered adapter. */
static void test_entry_points_registered(void **state)
{
    (void)state;
    size_t n = 0;
    const write_entry_point *ep = write_entry_points(&n);
    assert_true(n >= 3);
    for (size_t i = 0; i < n; i++) {
        assert_non_null(write_kind_name(ep[i].kind));
        assert_int_equal(write_kind_parse(write_kind_name(ep[i].kind)), ep[i].kind);
    }
}

/* Read-only open writes nothing, even with a stale sidecar present. */
static void test_readonly_open_writes_nothing(void **state)
{
    fixture *f = *state;
    write_result r;
    load_leaving_sidecar(f, &r);
    store *ro = NULL;
    assert_og_ok(store_local_open_readonly(&ro, f->dir));
    write_graph *g = NULL;
    write_open_options oo = WRITE_OPEN_OPTIONS_INIT;
    oo.readonly = true;
    assert_og_ok(write_graph_open(&g, ro, f->dir, &oo));
    assert_og_error(
        wf_load(g, "{\"type\":\"Person\",\"data\":{\"name\":\"x\"}}\n", EXEC_LOAD_APPEND, &r),
        OG_E_BAD_REQUEST);
    write_graph_close(g);
    char(*ids)[GRAPH_ID_LEN + 1] = NULL;
    size_t n = 0;
    assert_og_ok(write_sidecar_list(f->g->h->s, &ids, &n));
    free(ids);
    assert_int_equal(n, 1); /* still there: only a read-write open or a write resolves it */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_init_genesis, setup, teardown),
        cmocka_unit_test_setup_teardown(test_load_append_merge_overwrite, setup, teardown),
        cmocka_unit_test_setup_teardown(test_validation_failures_write_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delta_commit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_empty_load_is_no_commit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_overwrite_cannot_orphan_edges, setup, teardown),
        cmocka_unit_test_setup_teardown(test_partial_effects_roll_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_confirmed_effects_roll_forward, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_sidecar_finalized, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_discarded_sidecar_retired, setup, teardown),
        cmocka_unit_test_setup_teardown(test_live_owner_blocks_barrier, setup, teardown),
        cmocka_unit_test_setup_teardown(test_owner_locks_reused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_sidecars, setup, teardown),
        cmocka_unit_test(test_schema_sidecar_roundtrip),
        cmocka_unit_test_setup_teardown(test_torn_sidecars_discarded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_readonly_open_writes_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_effect_before_sidecar, setup, teardown),
        cmocka_unit_test(test_entry_points_registered),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
