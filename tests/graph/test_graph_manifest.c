/* The graph manifest: rows built with graph_rows_* round-trip through a real manifest dataset
 * (created with lance_dataset_create_rows, grown by Lance appends), reconstructed at the
 * latest and older versions and on a graph branch; format refusal, corruption detection,
 * lineage order, ref resolution, the accepted-schema files and store-op counts. */
#include "testutil.h"
#include "crashsim.h"

#include "core/alloc.h"
#include "core/ulid.h"
#include "graph/graph.h"
#include "lance/branch.h"
#include "lance/compact.h"

#include <ctype.h>
#include <inttypes.h>
#include <string.h>

typedef struct fx {
    char dir[256];
    store *s;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    f->s = test_sandbox_store(f->dir, sizeof f->dir, "graph-manifest");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    test_sandbox_store_done(f->dir, f->s);
    free(f);
    return 0;
}

/* A ULID minted at a fixed millisecond (the order of ids follows ms). */
/* A ULID with this millisecond and a per-process counter as its "randomness" (the core
 * generator is monotonic per process, so it cannot mint an earlier time after a later one). */
static void mkid(char out[GRAPH_ID_LEN + 1], uint64_t ms)
{
    static uint64_t counter = 0x5eed;
    core_ulid u;
    for (int i = 0; i < 6; i++)
        u.b[i] = (uint8_t)(ms >> (8 * (5 - i)));
    uint64_t r = ++counter * 0x9e3779b97f4a7c15ULL;
    u.b[6] = u.b[7] = 0x42;
    for (int i = 0; i < 8; i++)
        u.b[8 + i] = (uint8_t)(r >> (8 * (7 - i)));
    core_ulid_format(&u, out);
}

static void manifest_opts(lance_create_options *o)
{
    static const char *const pk[] = {"object_id"};
    lance_create_options d = LANCE_CREATE_OPTIONS_INIT;
    *o = d;
    o->primary_key = pk;
    o->n_primary_key = 1;
}

/* Create the manifest (version 1) holding these rows. */
static lance_dataset *create_manifest(store *s, graph_rows *r, const char *uuid)
{
    arrow_schema schema;
    arrow_batch *b = NULL;
    lance_create_options o;
    manifest_opts(&o);
    assert_og_ok(graph_manifest_schema(&schema));
    assert_og_ok(graph_rows_to_batch(r, &b));
    lance_dataset *ds = NULL;
    assert_og_ok(lance_dataset_create_rows(&ds, s, GRAPH_MANIFEST_DIR, &schema, &b, 1, &o, uuid));
    arrow_batch_free(b);
    arrow_schema_clear(&schema);
    graph_rows_free(r);
    return ds;
}

/* Append rows as the next manifest version; returns the new snapshot (old one freed). */
static lance_dataset *append_rows(lance_dataset *ds, graph_rows *r)
{
    arrow_batch *b = NULL;
    assert_og_ok(graph_rows_to_batch(r, &b));
    lance_staged *st = NULL;
    lance_dataset *next = NULL;
    assert_og_ok(lance_stage_append(&st, ds, &b, 1, NULL));
    assert_og_ok(lance_staged_commit(st, &next, NULL));
    lance_staged_free(st);
    arrow_batch_free(b);
    graph_rows_free(r);
    lance_dataset_free(ds);
    return next;
}

static graph_rows *rows_new(void)
{
    graph_rows *r = NULL;
    assert_og_ok(graph_rows_new(&r));
    return r;
}

static void add_commit(graph_rows *r, const char *id, const char *parent, const char *branch,
                       uint64_t mv, int64_t created)
{
    graph_commit c;
    memset(&c, 0, sizeof c);
    snprintf(c.id, sizeof c.id, "%s", id);
    snprintf(c.parent, sizeof c.parent, "%s", parent ? parent : "");
    c.branch = (char *)branch;
    c.actor = "tester";
    c.created_at_us = created;
    c.manifest_version = mv;
    assert_og_ok(graph_rows_add_commit(r, &c));
    assert_og_ok(graph_rows_add_head(r, branch, id, NULL, mv));
}

static const char SCHEMA_ID[] = "0123456789abcdef0123456789abcdef";

/* The three-commit history most tests use:
 *  v1 genesis: format, schema, Person (1,1) v1 rows 0, Knows (2,1) v1 rows 0, C1
 *  v2: Person v3 rows 10, C2
 *  v3: Knows tombstoned at 2, Company (3,1) registered + v1 rows 4, C3 */
typedef struct history {
    char c[4][GRAPH_ID_LEN + 1];
} history;

static lance_dataset *build_history(store *s, history *h)
{
    mkid(h->c[1], 1000000000000ULL);
    mkid(h->c[2], 2000000000000ULL);
    mkid(h->c[3], 3000000000000ULL);
    graph_rows *r = rows_new();
    assert_og_ok(graph_rows_add_format(r, GRAPH_FORMAT_VERSION));
    assert_og_ok(graph_rows_add_schema(r, SCHEMA_ID, 1));
    assert_og_ok(graph_rows_add_table(r, LANG_NODE, 1, 1, "node:Person"));
    assert_og_ok(graph_rows_add_table(r, LANG_EDGE, 2, 1, "edge:Knows"));
    assert_og_ok(graph_rows_add_version(r, 1, 1, "node:Person", 1, NULL, 0));
    assert_og_ok(graph_rows_add_version(r, 2, 1, "edge:Knows", 1, NULL, 0));
    add_commit(r, h->c[1], NULL, NULL, 1, 100);
    lance_dataset *ds = create_manifest(s, r, NULL);
    assert_int_equal(lance_dataset_version(ds), 1);

    r = rows_new();
    assert_og_ok(graph_rows_add_version(r, 1, 1, "node:Person", 3, NULL, 10));
    add_commit(r, h->c[2], h->c[1], NULL, 2, 200);
    ds = append_rows(ds, r);

    r = rows_new();
    assert_og_ok(graph_rows_add_tombstone(r, 2, 1, "edge:Knows", 2));
    assert_og_ok(graph_rows_add_table(r, LANG_NODE, 3, 1, "node:Company"));
    assert_og_ok(graph_rows_add_version(r, 3, 1, "node:Company", 1, NULL, 4));
    add_commit(r, h->c[3], h->c[2], NULL, 3, 300);
    ds = append_rows(ds, r);
    assert_int_equal(lance_dataset_version(ds), 3);
    return ds;
}

/* ---- rows -------------------------------------------------------------------------------- */

static void test_kind_names(void **state)
{
    (void)state;
    for (int k = GRAPH_ROW_FORMAT; k <= GRAPH_ROW_HEAD; k++) {
        assert_non_null(graph_row_kind_name(k));
        assert_int_equal(graph_row_kind_parse(graph_row_kind_name(k)), k);
    }
    assert_string_equal(graph_row_kind_name(GRAPH_ROW_TOMBSTONE), "table_tombstone");
    assert_string_equal(graph_row_kind_name(GRAPH_ROW_COMMIT), "graph_commit");
    assert_null(graph_row_kind_name(0));
    assert_null(graph_row_kind_name(99));
    assert_int_equal(graph_row_kind_parse("table_index"), 0);
    assert_int_equal(graph_row_kind_parse(NULL), 0);
}

static const char *cell(const arrow_batch *b, size_t col, int64_t row, char *buf, size_t cap)
{
    if (!arrow_array_is_valid(b->columns[col], row)) return NULL;
    size_t n = 0;
    const uint8_t *p = arrow_array_get_bytes(b->columns[col], row, &n);
    snprintf(buf, cap, "%.*s", (int)n, (const char *)p);
    return buf;
}

static void test_rows_batch(void **state)
{
    (void)state;
    char c1[GRAPH_ID_LEN + 1], c2[GRAPH_ID_LEN + 1];
    mkid(c1, 1000);
    mkid(c2, 2000);
    graph_rows *r = rows_new();
    assert_og_ok(graph_rows_add_format(r, 1));
    assert_og_ok(graph_rows_add_table(r, LANG_EDGE, 0xab, 0x2, "edge:Knows"));
    assert_og_ok(graph_rows_add_version(r, 0xab, 0x2, "edge:Knows", 7, "feat", 42));
    graph_commit c;
    memset(&c, 0, sizeof c);
    memcpy(c.id, c2, sizeof c.id);
    memcpy(c.parent, c1, sizeof c.parent);
    c.actor = "alice";
    c.branch = "feat";
    c.created_at_us = 12345;
    c.manifest_version = 9;
    assert_og_ok(graph_rows_add_commit(r, &c));
    assert_og_ok(graph_rows_add_head(r, "feat", c2, NULL, 9));
    /* Bad input is refused, nothing added. */
    assert_og_error(graph_rows_add_table(r, LANG_NODE, 0, 1, "node:X"), OG_E_BAD_REQUEST);
    assert_og_error(graph_rows_add_schema(r, "abc", 1), OG_E_BAD_REQUEST);
    assert_og_error(graph_rows_add_head(r, NULL, "not-a-ulid", NULL, 1), OG_E_BAD_REQUEST);
    assert_int_equal(graph_rows_count(r), 5);

    arrow_batch *b = NULL;
    assert_og_ok(graph_rows_to_batch(r, &b));
    graph_rows_free(r);
    arrow_schema want;
    assert_og_ok(graph_manifest_schema(&want));
    assert_true(arrow_schema_equal(&b->schema, &want));
    assert_int_equal(want.n_fields, 10);
    assert_false(want.fields[0].nullable);
    assert_true(want.fields[5].nullable);
    arrow_schema_clear(&want);
    assert_int_equal(b->num_rows, 5);
    char buf[512], exp[512];
    assert_string_equal(cell(b, 0, 0, buf, sizeof buf), "format");
    assert_string_equal(cell(b, 3, 0, buf, sizeof buf), "{\"format_version\":1}");
    assert_string_equal(cell(b, 0, 1, buf, sizeof buf), "table:00000000000000ab:0000000000000002");
    assert_string_equal(cell(b, 1, 1, buf, sizeof buf), "table");
    assert_string_equal(cell(b, 2, 1, buf, sizeof buf),
                        "edges/00000000000000ab-0000000000000002.lance");
    assert_string_equal(cell(b, 4, 1, buf, sizeof buf), "edge:Knows");
    assert_string_equal(cell(b, 0, 2, buf, sizeof buf),
                        "table_version:00000000000000ab:0000000000000002:00000000000000000007");
    assert_string_equal(cell(b, 8, 2, buf, sizeof buf), "feat");
    assert_int_equal(arrow_array_get_uint(b->columns[9], 2), 42);
    assert_int_equal(arrow_array_get_uint(b->columns[7], 2), 7);
    assert_string_equal(cell(b, 0, 3, buf, sizeof buf), c2);
    assert_string_equal(cell(b, 4, 3, buf, sizeof buf), "");
    assert_false(arrow_array_is_valid(b->columns[5], 3));
    snprintf(exp, sizeof exp,
             "{\"actor_id\":\"alice\",\"created_at\":12345,\"parent_commit_id\":\"%s\"}", c1);
    assert_string_equal(cell(b, 3, 3, buf, sizeof buf), exp);
    assert_int_equal(arrow_array_get_uint(b->columns[7], 3), 9);
    snprintf(exp, sizeof exp, "graph_head:feat:%020d", 9);
    assert_string_equal(cell(b, 0, 4, buf, sizeof buf), exp);
    snprintf(exp, sizeof exp, "{\"head_commit_id\":\"%s\"}", c2);
    assert_string_equal(cell(b, 3, 4, buf, sizeof buf), exp);
    arrow_batch_free(b);
}

/* ---- snapshots --------------------------------------------------------------------------- */

static void test_roundtrip(void **state)
{
    fx *f = *state;
    history h;
    lance_dataset *ds = build_history(f->s, &h);

    graph_snapshot *snap = NULL;
    assert_og_ok(graph_snapshot_load(&snap, f->s, NULL, 0, 0));
    assert_int_equal(snap->manifest_version, 3);
    assert_int_equal(snap->format_version, 1);
    assert_string_equal(snap->schema_identity, SCHEMA_ID);
    assert_string_equal(snap->head, h.c[3]);
    assert_string_equal(snap->branch_identity, "");
    assert_null(snap->branch);
    assert_int_equal(snap->n_tables, 2); /* Knows is tombstoned */
    assert_string_equal(snap->tables[0].alias, "node:Company");
    assert_string_equal(snap->tables[1].alias, "node:Person");
    const graph_table *p = graph_snapshot_table(snap, "node:Person");
    assert_non_null(p);
    assert_int_equal(p->version, 3);
    assert_int_equal(p->row_count, 10);
    assert_int_equal(p->kind, LANG_NODE);
    assert_string_equal(p->type_name, "Person");
    assert_string_equal(p->path, "nodes/0000000000000001-0000000000000001.lance");
    assert_null(p->table_branch);
    assert_null(graph_snapshot_table(snap, "edge:Knows"));
    assert_null(graph_snapshot_table(snap, "node:Zebra"));
    assert_int_equal(snap->n_commits, 0); /* no lineage asked for */
    graph_snapshot_free(snap);

    /* From the dataset handle (the publisher's view) the same. */
    assert_og_ok(graph_snapshot_from_dataset(&snap, ds, NULL, GRAPH_SNAP_LINEAGE));
    assert_int_equal(snap->n_tables, 2);
    assert_int_equal(snap->n_commits, 3);
    assert_string_equal(snap->commits[0].id, h.c[3]);
    assert_string_equal(snap->commits[1].id, h.c[2]);
    assert_string_equal(snap->commits[2].id, h.c[1]);
    assert_string_equal(snap->commits[0].parent, h.c[2]);
    assert_string_equal(snap->commits[2].parent, "");
    assert_int_equal(snap->commits[1].manifest_version, 2);
    assert_int_equal(snap->commits[1].created_at_us, 200);
    assert_string_equal(snap->commits[1].actor, "tester");
    assert_null(snap->commits[1].branch);
    graph_snapshot_free(snap);
    lance_dataset_free(ds);

    /* Older versions. */
    assert_og_ok(graph_snapshot_load(&snap, f->s, NULL, 2, 0));
    assert_int_equal(snap->manifest_version, 2);
    assert_string_equal(snap->head, h.c[2]);
    assert_int_equal(snap->n_tables, 2);
    assert_string_equal(snap->tables[0].alias, "edge:Knows");
    assert_int_equal(snap->tables[0].kind, LANG_EDGE);
    assert_string_equal(snap->tables[0].path, "edges/0000000000000002-0000000000000001.lance");
    assert_int_equal(graph_snapshot_table(snap, "node:Person")->version, 3);
    graph_snapshot_free(snap);
    assert_og_ok(graph_snapshot_load(&snap, f->s, NULL, 1, GRAPH_SNAP_LINEAGE));
    assert_string_equal(snap->head, h.c[1]);
    assert_int_equal(graph_snapshot_table(snap, "node:Person")->version, 1);
    assert_int_equal(snap->n_commits, 1);
    graph_snapshot_free(snap);
    assert_og_error(graph_snapshot_load(&snap, f->s, NULL, 4, 0), OG_E_NOT_FOUND);
    assert_null(snap);
}

static void test_no_graph(void **state)
{
    fx *f = *state;
    graph_snapshot *snap = NULL;
    assert_og_error(graph_snapshot_load(&snap, f->s, NULL, 0, 0), OG_E_NOT_FOUND);
    assert_og_error(graph_snapshot_load(&snap, f->s, "feat", 0, 0), OG_E_NOT_FOUND);
    uint64_t v;
    assert_og_error(graph_resolve_ref(f->s, NULL, "1", &v), OG_E_NOT_FOUND);
}

/* A re-registration of the same identity with the same alias and path is harmless; one that
 * says something else, a version without a registration, or two live tables sharing an alias
 * are refused. Tombstones at or above the last version hide the table; a later version
 * (re-publish after a tombstone below it) shows it again. */
static void test_reduction_rules(void **state)
{
    fx *f = *state;
    char c1[GRAPH_ID_LEN + 1];
    mkid(c1, 5000);
    graph_rows *r = rows_new();
    assert_og_ok(graph_rows_add_format(r, 1));
    assert_og_ok(graph_rows_add_table(r, LANG_NODE, 1, 1, "node:A"));
    assert_og_ok(graph_rows_add_table(r, LANG_NODE, 1, 1, "node:A"));
    assert_og_ok(graph_rows_add_version(r, 1, 1, "node:A", 2, NULL, 1));
    assert_og_ok(graph_rows_add_tombstone(r, 1, 1, "node:A", 1));     /* below: no effect */
    assert_og_ok(graph_rows_add_table(r, LANG_NODE, 5, 1, "node:B")); /* never published */
    /* An unknown object type from a newer writer is skipped. */
    add_commit(r, c1, NULL, NULL, 1, 1);
    lance_dataset *ds = create_manifest(f->s, r, NULL);
    graph_snapshot *snap = NULL;
    assert_og_ok(graph_snapshot_from_dataset(&snap, ds, NULL, 0));
    assert_int_equal(snap->n_tables, 1);
    assert_string_equal(snap->tables[0].alias, "node:A");
    assert_int_equal(snap->tables[0].version, 2);
    assert_string_equal(snap->schema_identity, ""); /* no schema row yet */
    graph_snapshot_free(snap);

    /* Two live identities named node:A. */
    r = rows_new();
    assert_og_ok(graph_rows_add_table(r, LANG_NODE, 2, 1, "node:A"));
    assert_og_ok(graph_rows_add_version(r, 2, 1, "node:A", 1, NULL, 0));
    lance_dataset *bad = append_rows(ds, r);
    assert_og_error(graph_snapshot_from_dataset(&snap, bad, NULL, 0), OG_E_CORRUPT);
    assert_non_null(strstr(og_error_last()->message, "node:A"));
    assert_null(snap);
    lance_dataset_free(bad);

    /* Tombstoning the older one resolves it (at its version: tombstone >= latest). */
    assert_og_ok(graph_manifest_open(&ds, f->s, NULL, 0, LANCE_ACCESS_WRITE));
    r = rows_new();
    assert_og_ok(graph_rows_add_tombstone(r, 1, 1, "node:A", 2));
    ds = append_rows(ds, r);
    assert_og_ok(graph_snapshot_from_dataset(&snap, ds, NULL, 0));
    assert_int_equal(snap->n_tables, 1);
    assert_int_equal(snap->tables[0].sid, 2);
    graph_snapshot_free(snap);

    /* A version row whose identity was never registered. */
    r = rows_new();
    assert_og_ok(graph_rows_add_version(r, 9, 9, "node:Ghost", 1, NULL, 0));
    ds = append_rows(ds, r);
    assert_og_error(graph_snapshot_from_dataset(&snap, ds, NULL, 0), OG_E_CORRUPT);
    assert_non_null(strstr(og_error_last()->message, "registration"));
    lance_dataset_free(ds);

    /* The older manifest versions still reconstruct. */
    assert_og_ok(graph_snapshot_load(&snap, f->s, NULL, 3, 0));
    assert_int_equal(snap->n_tables, 1);
    graph_snapshot_free(snap);
}

/* Rows of each kind in a snapshot of the manifest. */
static void count_kinds(const lance_dataset *ds, size_t counts[8])
{
    memset(counts, 0, 8 * sizeof counts[0]);
    const char *cols[] = {"object_type"};
    lance_scan_options so = LANCE_SCAN_OPTIONS_INIT;
    so.columns = cols;
    so.n_columns = 1;
    arrow_batch *b = NULL;
    assert_og_ok(lance_dataset_scan_all(&b, ds, &so));
    for (int64_t i = 0; i < b->num_rows; i++) {
        size_t n = 0;
        const uint8_t *p = arrow_array_get_bytes(b->columns[0], i, &n);
        char t[32];
        assert_true(n < sizeof t);
        memcpy(t, p, n);
        t[n] = 0;
        counts[graph_row_kind_parse(t)]++;
    }
    arrow_batch_free(b);
}

static void expect_same_state(const graph_snapshot *a, const graph_snapshot *b)
{
    assert_string_equal(a->head, b->head);
    assert_string_equal(a->content_head, b->content_head);
    assert_string_equal(a->schema_identity, b->schema_identity);
    assert_int_equal(a->format_version, b->format_version);
    assert_int_equal(a->n_tables, b->n_tables);
    for (size_t i = 0; i < a->n_tables; i++) {
        assert_string_equal(a->tables[i].alias, b->tables[i].alias);
        assert_int_equal(a->tables[i].version, b->tables[i].version);
        assert_int_equal(a->tables[i].row_count, b->tables[i].row_count);
    }
    assert_int_equal(a->n_commits, b->n_commits);
    for (size_t i = 0; i < a->n_commits; i++)
        assert_string_equal(a->commits[i].id, b->commits[i].id);
}

/* Manifest compaction with the graph's rules (graph.h): the snapshot, lineage included, is the
 * same after as before; only the greatest table_version / tombstone / head / schema row of
 * each key is left, commit rows all stay and lead the merged fragments; every earlier version
 * reconstructs as before; another branch's head row keeps its own greatest. */
static void test_compaction_rules(void **state)
{
    fx *f = *state;
    history h;
    lance_dataset *ds = build_history(f->s, &h);
    char prev[GRAPH_ID_LEN + 1];
    memcpy(prev, h.c[3], sizeof prev);
    enum { MORE = 20 };
    for (uint64_t k = 0; k < MORE; k++) {
        char id[GRAPH_ID_LEN + 1];
        mkid(id, 4000000000000ULL + k);
        graph_rows *r = rows_new();
        assert_og_ok(graph_rows_add_version(r, 1, 1, "node:Person", 4 + k, NULL, 11 + k));
        if (k % 5 == 0) assert_og_ok(graph_rows_add_schema(r, SCHEMA_ID, 4 + k));
        if (k % 7 == 3) /* a stale copy of another branch's head */
            assert_og_ok(graph_rows_add_head(r, "dev", id, NULL, 4 + k));
        add_commit(r, id, prev, NULL, 4 + k, 1000 + (int64_t)k);
        memcpy(prev, id, sizeof prev);
        ds = append_rows(ds, r);
    }
    uint64_t last = lance_dataset_version(ds);
    graph_snapshot *before[64] = {0}, *lin = NULL, *after = NULL;
    for (uint64_t v = 1; v <= last; v++)
        assert_og_ok(graph_snapshot_load(&before[v], f->s, NULL, v, GRAPH_SNAP_LINEAGE));
    size_t k0[8];
    count_kinds(ds, k0);
    assert_int_equal(k0[GRAPH_ROW_COMMIT], 3 + MORE);

    graph_compact_rules *rules = NULL;
    assert_og_ok(graph_compact_rules_new(&rules, ds));
    lance_compact_options o = LANCE_COMPACT_OPTIONS_INIT;
    o.classify = graph_compact_classify;
    o.classify_arg = rules;
    o.apart_key = GRAPH_COMMIT_FRAGMENTS_KEY;
    lance_dataset *nd = NULL;
    lance_compact_report rep;
    assert_og_ok(lance_compact(&nd, ds, &o, &rep));
    graph_compact_rules_free(rules);
    assert_int_equal(rep.n_commits, 1);
    assert_true(rep.rows_dropped > 0);

    size_t k1[8];
    count_kinds(nd, k1);
    assert_int_equal(k1[GRAPH_ROW_COMMIT], 3 + MORE);
    assert_int_equal(k1[GRAPH_ROW_TABLE_VERSION], 3); /* Person, Knows, Company */
    assert_int_equal(k1[GRAPH_ROW_TOMBSTONE], 1);
    assert_int_equal(k1[GRAPH_ROW_SCHEMA], 1);
    assert_int_equal(k1[GRAPH_ROW_HEAD], 2); /* main and dev */
    assert_int_equal(k1[GRAPH_ROW_TABLE], k0[GRAPH_ROW_TABLE]);
    assert_int_equal(k1[GRAPH_ROW_FORMAT], k0[GRAPH_ROW_FORMAT]);
    assert_int_equal(rep.rows_dropped, (k0[GRAPH_ROW_TABLE_VERSION] - 3) +
                                           (k0[GRAPH_ROW_SCHEMA] - 1) + (k0[GRAPH_ROW_HEAD] - 2));
    /* the commits lead, in a fragment of their own, which the manifest lists */
    assert_int_equal(nd->m->pb->n_fragments, 2);
    assert_int_equal(nd->m->pb->fragments[0]->physical_rows, 3 + MORE);
    uint64_t *apart = NULL;
    size_t n_apart = 0;
    assert_og_ok(lance_apart_fragments(nd, GRAPH_COMMIT_FRAGMENTS_KEY, &apart, &n_apart));
    assert_int_equal(n_apart, 1);
    assert_int_equal(apart[0], nd->m->pb->fragments[0]->id);
    core_free(apart);
    assert_og_ok(lance_apart_fragments(ds, GRAPH_COMMIT_FRAGMENTS_KEY, &apart, &n_apart));
    assert_int_equal(n_apart, 0); /* the version before has none */

    assert_og_ok(graph_snapshot_from_dataset(&after, nd, NULL, GRAPH_SNAP_LINEAGE));
    expect_same_state(before[last], after);
    graph_snapshot_free(after);
    assert_og_ok(graph_snapshot_from_dataset(&after, nd, NULL, 0));
    assert_og_ok(graph_snapshot_from_dataset(&lin, ds, NULL, 0));
    expect_same_state(lin, after);
    graph_snapshot_free(lin);
    graph_snapshot_free(after);
    for (uint64_t v = 1; v <= last; v++) {
        assert_og_ok(graph_snapshot_load(&after, f->s, NULL, v, GRAPH_SNAP_LINEAGE));
        expect_same_state(before[v], after);
        graph_snapshot_free(after);
        graph_snapshot_free(before[v]);
    }
    /* the next append and a second merge keep the rules' result */
    graph_rows *r = rows_new();
    char id[GRAPH_ID_LEN + 1];
    mkid(id, 5000000000000ULL);
    assert_og_ok(graph_rows_add_version(r, 3, 1, "node:Company", 2, NULL, 5));
    add_commit(r, id, prev, NULL, lance_dataset_version(nd) + 1, 5000);
    nd = append_rows(nd, r);
    graph_snapshot *mid = NULL;
    assert_og_ok(graph_snapshot_from_dataset(&mid, nd, NULL, GRAPH_SNAP_LINEAGE));
    /* an append keeps the list */
    assert_og_ok(lance_apart_fragments(nd, GRAPH_COMMIT_FRAGMENTS_KEY, &apart, &n_apart));
    assert_int_equal(n_apart, 1);
    core_free(apart);
    assert_og_ok(graph_compact_rules_new(&rules, nd));
    o.classify_arg = rules;
    lance_dataset *nd2 = NULL;
    assert_og_ok(lance_compact(&nd2, nd, &o, &rep));
    graph_compact_rules_free(rules);
    count_kinds(nd2, k1);
    assert_int_equal(k1[GRAPH_ROW_TABLE_VERSION], 3);
    assert_int_equal(k1[GRAPH_ROW_COMMIT], 4 + MORE);
    /* the merged fragments of commits replace the old one in the list */
    assert_og_ok(lance_apart_fragments(nd2, GRAPH_COMMIT_FRAGMENTS_KEY, &apart, &n_apart));
    assert_true(n_apart >= 1);
    uint64_t listed_rows = 0;
    for (size_t i = 0; i < nd2->m->pb->n_fragments; i++)
        for (size_t k = 0; k < n_apart; k++)
            if (nd2->m->pb->fragments[i]->id == apart[k])
                listed_rows += nd2->m->pb->fragments[i]->physical_rows;
    assert_int_equal(listed_rows, 4 + MORE);
    core_free(apart);
    graph_snapshot *nol = NULL;
    assert_og_ok(graph_snapshot_from_dataset(&nol, nd2, NULL, 0));
    assert_og_ok(graph_snapshot_from_dataset(&after, nd, NULL, 0));
    expect_same_state(after, nol);
    graph_snapshot_free(nol);
    graph_snapshot_free(after);
    assert_og_ok(graph_snapshot_from_dataset(&after, nd2, NULL, GRAPH_SNAP_LINEAGE));
    expect_same_state(mid, after);
    graph_snapshot_free(after);
    graph_snapshot_free(mid);
    lance_dataset_free(nd2);
    lance_dataset_free(nd);
    lance_dataset_free(ds);
}

static void test_conflicting_registration(void **state)
{
    fx *f = *state;
    graph_rows *r = rows_new();
    assert_og_ok(graph_rows_add_format(r, 1));
    assert_og_ok(graph_rows_add_table(r, LANG_NODE, 1, 1, "node:A"));
    assert_og_ok(graph_rows_add_table(r, LANG_NODE, 1, 1, "node:B"));
    assert_og_ok(graph_rows_add_version(r, 1, 1, "node:A", 1, NULL, 0));
    lance_dataset *ds = create_manifest(f->s, r, NULL);
    graph_snapshot *snap = NULL;
    assert_og_error(graph_snapshot_from_dataset(&snap, ds, NULL, 0), OG_E_CORRUPT);
    assert_non_null(strstr(og_error_last()->message, "two different registrations"));
    lance_dataset_free(ds);
}

/* A batch of one raw row (object_id, object_type, metadata; other columns null). */
static arrow_batch *raw_row(const char *id, const char *type, const char *meta)
{
    arrow_schema schema;
    assert_og_ok(graph_manifest_schema(&schema));
    arrow_array *cols[10] = {0};
    for (size_t c = 0; c < schema.n_fields; c++) {
        arrow_builder *b = NULL;
        assert_og_ok(arrow_builder_new(&b, &schema.fields[c].type));
        const char *v = c == 0 ? id : c == 1 ? type : c == 3 ? meta : c == 4 ? "" : NULL;
        if (v)
            assert_og_ok(arrow_builder_append_str(b, v));
        else
            assert_og_ok(arrow_builder_append_null(b));
        assert_og_ok(arrow_builder_finish(b, &cols[c]));
        arrow_builder_free(b);
    }
    arrow_batch *out = NULL;
    assert_og_ok(arrow_batch_new(&out, &schema, cols, schema.n_fields));
    for (size_t c = 0; c < schema.n_fields; c++)
        arrow_array_free(cols[c]);
    arrow_schema_clear(&schema);
    return out;
}

static void format_case(store *s, const char *meta, const char *want1, const char *want2)
{
    arrow_schema schema;
    assert_og_ok(graph_manifest_schema(&schema));
    lance_create_options o;
    manifest_opts(&o);
    arrow_batch *b[2];
    b[0] = raw_row("x-future", "table_index", "{}"); /* unknown type: skipped */
    b[1] = meta ? raw_row("format", "format", meta) : raw_row("y-future", "table_index", "{}");
    lance_dataset *ds = NULL;
    assert_og_ok(lance_dataset_create_rows(&ds, s, GRAPH_MANIFEST_DIR, &schema, b, 2, &o, NULL));
    graph_snapshot *snap = NULL;
    int rc = graph_snapshot_load(&snap, s, NULL, 0, 0);
    if (!want1) {
        assert_og_ok(rc);
        assert_int_equal(snap->n_tables, 0);
        assert_int_equal(snap->format_version, 1);
        assert_string_equal(snap->head, "");
        graph_snapshot_free(snap);
    } else {
        assert_og_error(rc, OG_E_UNSUPPORTED);
        if (!strstr(og_error_last()->message, want1) || !strstr(og_error_last()->message, want2))
            fail_msg("unexpected message: %s", og_error_last()->message);
    }
    lance_dataset_free(ds);
    arrow_batch_free(b[0]);
    arrow_batch_free(b[1]);
    arrow_schema_clear(&schema);
}

static void test_format(void **state)
{
    fx *f = *state;
    char sub[300];
    const char *metas[] = {"{\"format_version\":2}", "{\"format_version\":0}", NULL,
                           "{\"format_version\":1}"};
    const char *w1[] = {"graph format 2 is newer than this binary (1)", "graph format 0 is older",
                        "no format row", NULL};
    const char *w2[] = {"upgrade omnigraph", "rebuild the graph by export and import", "torn",
                        NULL};
    for (int i = 0; i < 4; i++) {
        snprintf(sub, sizeof sub, "%s/case%d", f->dir, i);
        store *s = NULL;
        assert_og_ok(store_local_open(&s, sub));
        format_case(s, metas[i], w1[i], w2[i]);
        store_close(s);
    }
}

/* ---- lineage ----------------------------------------------------------------------------- */

static void test_resolve_ref(void **state)
{
    fx *f = *state;
    history h;
    lance_dataset *ds = build_history(f->s, &h);
    /* A fourth commit minted in the same millisecond as C3 shares its 10-char time prefix. */
    char c4[GRAPH_ID_LEN + 1];
    mkid(c4, 3000000000000ULL);
    graph_rows *r = rows_new();
    add_commit(r, c4, h.c[3], NULL, 4, 300);
    ds = append_rows(ds, r);
    lance_dataset_free(ds);

    uint64_t v = 0;
    assert_og_ok(graph_resolve_ref(f->s, NULL, h.c[2], &v));
    assert_int_equal(v, 2);
    char pre[16];
    snprintf(pre, sizeof pre, "%.10s", h.c[1]);
    assert_og_ok(graph_resolve_ref(f->s, NULL, pre, &v));
    assert_int_equal(v, 1);
    /* Lower case works too (Crockford ids are case-insensitive). */
    for (char *p = pre; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    assert_og_ok(graph_resolve_ref(f->s, NULL, pre, &v));
    assert_int_equal(v, 1);
    assert_og_ok(graph_resolve_ref(f->s, NULL, "3", &v));
    assert_int_equal(v, 3);
    assert_og_ok(graph_resolve_ref(f->s, NULL, c4, &v));
    assert_int_equal(v, 4);
    snprintf(pre, sizeof pre, "%.10s", c4);
    assert_og_error(graph_resolve_ref(f->s, NULL, pre, &v), OG_E_BAD_REQUEST);
    assert_non_null(strstr(og_error_last()->message, "ambiguous"));
    assert_og_error(graph_resolve_ref(f->s, NULL, "5", &v), OG_E_NOT_FOUND);
    assert_og_error(graph_resolve_ref(f->s, NULL, "ZZZZZZ", &v), OG_E_NOT_FOUND);
    assert_og_error(graph_resolve_ref(f->s, NULL, "01A", &v), OG_E_BAD_REQUEST);
    assert_og_error(graph_resolve_ref(f->s, NULL, "", &v), OG_E_BAD_REQUEST);

    graph_snapshot *snap = NULL;
    assert_og_ok(graph_snapshot_load(&snap, f->s, NULL, 0, GRAPH_SNAP_LINEAGE));
    assert_int_equal(snap->n_commits, 4);
    assert_string_equal(snap->commits[0].id, c4);
    assert_non_null(graph_lineage_find(snap, h.c[1]));
    assert_null(graph_lineage_find(snap, "01ARZ3NDEKTSV4RRFFQ69G5FAV"));
    graph_snapshot_free(snap);
}

/* Commits with equal manifest version order by created_at, then id (newest first). */
static void test_lineage_order(void **state)
{
    fx *f = *state;
    char a[GRAPH_ID_LEN + 1], b[GRAPH_ID_LEN + 1], c[GRAPH_ID_LEN + 1];
    mkid(a, 1000);
    mkid(b, 2000);
    mkid(c, 3000);
    graph_rows *r = rows_new();
    assert_og_ok(graph_rows_add_format(r, 1));
    add_commit(r, c, NULL, NULL, 1, 10); /* oldest by created_at although its id is largest */
    add_commit(r, b, NULL, NULL, 1, 20);
    add_commit(r, a, NULL, NULL, 1, 20);
    lance_dataset *ds = create_manifest(f->s, r, NULL);
    graph_snapshot *snap = NULL;
    assert_og_ok(graph_snapshot_from_dataset(&snap, ds, NULL, GRAPH_SNAP_LINEAGE));
    assert_int_equal(snap->n_commits, 3);
    assert_string_equal(snap->commits[0].id, b);
    assert_string_equal(snap->commits[1].id, a);
    assert_string_equal(snap->commits[2].id, c);
    graph_snapshot_free(snap);
    lance_dataset_free(ds);
}

/* ---- graph branches ---------------------------------------------------------------------- */

static void test_branch_snapshot(void **state)
{
    fx *f = *state;
    history h;
    lance_dataset *ds = build_history(f->s, &h);
    lance_dataset_free(ds);
    lance_branch ref;
    assert_og_ok(lance_branch_create(f->s, GRAPH_MANIFEST_DIR, "feat", NULL, 2, &ref));

    graph_snapshot *snap = NULL;
    assert_og_ok(graph_snapshot_load(&snap, f->s, "feat", 0, GRAPH_SNAP_LINEAGE));
    assert_string_equal(snap->branch, "feat");
    assert_string_equal(snap->branch_identity, ref.identity);
    assert_true(snap->branch_identity[0] != 0);
    assert_int_equal(snap->manifest_version, 2);
    /* no commit on feat yet: its head is the one it was forked at */
    assert_string_equal(snap->head, h.c[2]);
    assert_int_equal(snap->n_tables, 2);
    assert_non_null(graph_snapshot_table(snap, "edge:Knows"));
    assert_int_equal(snap->n_commits, 2);
    graph_snapshot_free(snap);

    /* The first commit on feat: Person forked to a feat ref. */
    char c5[GRAPH_ID_LEN + 1];
    mkid(c5, 4000000000000ULL);
    assert_og_ok(graph_manifest_open(&ds, f->s, "feat", 0, LANCE_ACCESS_WRITE));
    graph_rows *r = rows_new();
    assert_og_ok(graph_rows_add_version(r, 1, 1, "node:Person", 4, "feat", 11));
    add_commit(r, c5, h.c[2], "feat", 3, 400);
    ds = append_rows(ds, r);
    assert_int_equal(lance_dataset_version(ds), 3);
    graph_snapshot *snap2 = NULL;
    assert_og_ok(graph_snapshot_from_dataset(&snap2, ds, "feat", GRAPH_SNAP_LINEAGE));
    lance_dataset_free(ds);
    assert_string_equal(snap2->head, c5);
    assert_string_equal(snap2->branch_identity, ref.identity);
    const graph_table *p = graph_snapshot_table(snap2, "node:Person");
    assert_int_equal(p->version, 4);
    assert_string_equal(p->table_branch, "feat");
    assert_int_equal(snap2->n_commits, 3); /* C5, C2, C1: C3 is main's only */
    assert_string_equal(snap2->commits[0].id, c5);
    assert_string_equal(snap2->commits[0].branch, "feat");
    assert_string_equal(snap2->commits[1].id, h.c[2]);
    graph_snapshot_free(snap2);

    /* Main is untouched; resolving C5 on main fails, on feat works. */
    assert_og_ok(graph_snapshot_load(&snap, f->s, NULL, 0, 0));
    assert_string_equal(snap->head, h.c[3]);
    assert_int_equal(graph_snapshot_table(snap, "node:Person")->version, 3);
    graph_snapshot_free(snap);
    uint64_t v;
    assert_og_error(graph_resolve_ref(f->s, NULL, c5, &v), OG_E_NOT_FOUND);
    assert_og_ok(graph_resolve_ref(f->s, "feat", c5, &v));
    assert_int_equal(v, 3);
    /* The branch at its fork point (version 2, read from main's files). */
    assert_og_ok(graph_snapshot_load(&snap, f->s, "feat", 2, 0));
    assert_string_equal(snap->head, h.c[2]);
    assert_int_equal(graph_snapshot_table(snap, "node:Person")->version, 3);
    graph_snapshot_free(snap);
}

/* ---- table open -------------------------------------------------------------------------- */

static void test_table_open(void **state)
{
    fx *f = *state;
    char path[STORE_KEY_MAX];
    assert_og_ok(graph_table_path(path, LANG_NODE, 1, 1));
    arrow_schema schema;
    arrow_schema_init(&schema);
    arrow_type t = arrow_type_simple(ARROW_UTF8);
    arrow_field fld;
    assert_og_ok(arrow_field_init(&fld, "id", &t, false));
    assert_og_ok(arrow_schema_add(&schema, &fld));
    arrow_field_clear(&fld);
    lance_dataset *tds = NULL, *t2 = NULL;
    assert_og_ok(lance_dataset_create(&tds, f->s, path, &schema, NULL));
    arrow_batch *b = raw_row("x", "y", "z"); /* any batch: we only need versions */
    arrow_batch *idcol = NULL;
    size_t zero = 0;
    assert_og_ok(arrow_batch_project(&idcol, b, &zero, 1));
    arrow_batch_free(b);
    arrow_schema_clear(&idcol->schema);
    assert_og_ok(arrow_schema_copy(&idcol->schema, &schema));
    assert_og_ok(lance_dataset_append(&t2, tds, &idcol, 1));
    lance_dataset_free(tds);
    lance_dataset_free(t2);
    arrow_batch_free(idcol);
    arrow_schema_clear(&schema);

    graph_table gt = {.kind = LANG_NODE,
                      .sid = 1,
                      .inc = 1,
                      .alias = "node:Person",
                      .type_name = "Person",
                      .path = path,
                      .version = 1};
    lance_dataset *ds = NULL;
    assert_og_ok(graph_table_open(&ds, f->s, &gt, LANCE_ACCESS_READ));
    assert_int_equal(lance_dataset_version(ds), 1);
    uint64_t n;
    assert_og_ok(lance_dataset_count_rows(ds, &n));
    assert_int_equal(n, 0);
    lance_dataset_free(ds);
    gt.version = 2;
    assert_og_ok(graph_table_open(&ds, f->s, &gt, LANCE_ACCESS_READ));
    assert_og_ok(lance_dataset_count_rows(ds, &n));
    assert_int_equal(n, 1);
    lance_dataset_free(ds);
    gt.version = 3;
    assert_og_error(graph_table_open(&ds, f->s, &gt, LANCE_ACCESS_READ), OG_E_NOT_FOUND);
    gt.table_branch = "nope";
    gt.version = 1;
    assert_og_error(graph_table_open(&ds, f->s, &gt, LANCE_ACCESS_READ), OG_E_NOT_FOUND);
}

/* ---- store-op counts --------------------------------------------------------------------- */

/* graph_snapshot_load of main at the latest version, manifest of 1 fragment (measured with
 * OG_GM_OPLOG=1, which prints the op log): the latest version from the hint (1 get of the
 * hint, 1 head of the version it names, 1 of the next and 1 of the one after it, found missing,
 * then the named one again: no listing), 1 head of the version after each of main's tables'
 * pins (a lost newer manifest version would leave one ahead), 1 get of
 * that manifest, and 1 get of the whole (small) data file. Nothing is written, and no table
 * dataset is opened. */
#define OPS_LOAD_TOTAL                                                                             \
    8 /* hint get; heads of the hinted version, the next two, and the hinted again; the table's    \
         next version; manifest, data */
#define OPS_LOAD_LIST 0
#define OPS_LOAD_GET 3
/* At an explicit version the manifest is read by name: no listing. */
#define OPS_LOAD_AT_TOTAL 2

static void test_load_op_counts(void **state)
{
    fx *f = *state;
    char c1[GRAPH_ID_LEN + 1];
    mkid(c1, 1000);
    graph_rows *r = rows_new();
    assert_og_ok(graph_rows_add_format(r, 1));
    assert_og_ok(graph_rows_add_table(r, LANG_NODE, 1, 1, "node:A"));
    assert_og_ok(graph_rows_add_version(r, 1, 1, "node:A", 1, NULL, 0));
    add_commit(r, c1, NULL, NULL, 1, 1);
    lance_dataset *ds = create_manifest(f->s, r, NULL);
    assert_int_equal(ds->m->pb->n_fragments, 1);
    lance_dataset_free(ds);

    store_counts a, b, d;
    graph_snapshot *snap = NULL;
    if (getenv("OG_GM_OPLOG")) {
        store *fs = NULL;
        assert_og_ok(store_fault_open(&fs, f->s, 0));
        assert_og_ok(graph_snapshot_load(&snap, fs, NULL, 0, GRAPH_SNAP_LINEAGE));
        graph_snapshot_free(snap);
        size_t nl = 0;
        const store_oplog_entry *l = store_fault_log(fs, &nl);
        for (size_t i = 0; i < nl; i++)
            print_message("%s %s\n", store_op_name(l[i].kind), l[i].key);
        store_close(fs);
    }
    store_counts_get(f->s, &a);
    assert_og_ok(graph_snapshot_load(&snap, f->s, NULL, 0, GRAPH_SNAP_LINEAGE));
    store_counts_get(f->s, &b);
    store_counts_diff(&b, &a, &d);
    assert_int_equal(snap->n_tables, 1);
    graph_snapshot_free(snap);
    print_message("snapshot_load ops: total %" PRIu64 " get %" PRIu64 " list %" PRIu64
                  " head %" PRIu64 "\n",
                  d.total_ops, d.ops[STORE_OP_GET], d.ops[STORE_OP_LIST], d.ops[STORE_OP_HEAD]);
    assert_int_equal(d.durable_ops, 0);
    assert_int_equal(d.total_ops, OPS_LOAD_TOTAL);
    assert_int_equal(d.ops[STORE_OP_LIST], OPS_LOAD_LIST);
    assert_int_equal(d.ops[STORE_OP_GET], OPS_LOAD_GET);

    /* At an explicit version: no listing (the version file is read by name). */
    store_counts_get(f->s, &a);
    assert_og_ok(graph_snapshot_load(&snap, f->s, NULL, 1, 0));
    store_counts_get(f->s, &b);
    store_counts_diff(&b, &a, &d);
    graph_snapshot_free(snap);
    assert_int_equal(d.total_ops, OPS_LOAD_AT_TOTAL);
}

/* ---- lance_dataset_create_rows ----------------------------------------------------------- */

static const char UUID1[] = "11111111-2222-4333-8444-555555555555";

static void test_create_rows(void **state)
{
    fx *f = *state;
    char c1[GRAPH_ID_LEN + 1];
    mkid(c1, 1000);
    graph_rows *r = rows_new();
    assert_og_ok(graph_rows_add_format(r, 1));
    add_commit(r, c1, NULL, NULL, 1, 1);
    lance_dataset *ds = create_manifest(f->s, r, UUID1);
    assert_int_equal(lance_dataset_version(ds), 1);
    uint64_t n = 0;
    assert_og_ok(lance_dataset_count_rows(ds, &n));
    assert_int_equal(n, 3);
    /* object_id is the unenforced primary key; stable row ids are on. */
    assert_true(ds->m->pb->fields[0]->unenforced_primary_key);
    assert_string_equal(ds->m->pb->fields[0]->name, "object_id");
    assert_false(ds->m->pb->fields[1]->unenforced_primary_key);
    assert_true(lance_dataset_stable_row_ids(ds));
    lance_dataset_free(ds);
    uint64_t v = 0;
    assert_og_ok(lance_find_txn_version(f->s, GRAPH_MANIFEST_DIR, UUID1, 0, &v));
    assert_int_equal(v, 1);
    /* Re-opened from storage: the same. */
    assert_og_ok(lance_dataset_open(&ds, f->s, GRAPH_MANIFEST_DIR, 0, LANCE_ACCESS_WRITE));
    assert_int_equal(lance_dataset_version(ds), 1);
    assert_true(ds->m->pb->fields[0]->unenforced_primary_key);
    lance_dataset_free(ds);

    /* A second create of the same root is refused and changes nothing. */
    r = rows_new();
    assert_og_ok(graph_rows_add_format(r, 1));
    arrow_schema schema;
    arrow_batch *b = NULL;
    lance_create_options o;
    manifest_opts(&o);
    assert_og_ok(graph_manifest_schema(&schema));
    assert_og_ok(graph_rows_to_batch(r, &b));
    graph_rows_free(r);
    assert_og_error(
        lance_dataset_create_rows(&ds, f->s, GRAPH_MANIFEST_DIR, &schema, &b, 1, &o, NULL),
        OG_E_EXISTS);
    assert_null(ds);
    /* Bad input. */
    static const char *const nopk[] = {"nope"};
    o.primary_key = nopk;
    assert_og_error(lance_dataset_create_rows(&ds, f->s, "other.lance", &schema, &b, 1, &o, NULL),
                    OG_E_BAD_REQUEST);
    manifest_opts(&o);
    assert_og_error(
        lance_dataset_create_rows(&ds, f->s, "other.lance", &schema, &b, 1, &o, "short"),
        OG_E_BAD_REQUEST);
    arrow_batch_free(b);
    arrow_schema_clear(&schema);
    assert_og_ok(lance_dataset_open(&ds, f->s, GRAPH_MANIFEST_DIR, 0, LANCE_ACCESS_READ));
    assert_int_equal(lance_dataset_version(ds), 1);
    lance_dataset_free(ds);
}

/* Crash enumeration: after a crash at any durable op the table either does not exist (and a
 * new create succeeds) or is version 1 with every row, made by our uuid. */
typedef struct crash_ctx {
    int rows;
} crash_ctx;

static int crash_op(store *s, void *ctx)
{
    (void)ctx;
    graph_rows *r = NULL;
    int rc = graph_rows_new(&r);
    char id[GRAPH_ID_LEN + 1];
    core_ulid u;
    core_ulid_new_at(&u, 1000);
    core_ulid_format(&u, id);
    if (rc == 0) rc = graph_rows_add_format(r, 1);
    if (rc == 0) rc = graph_rows_add_table(r, LANG_NODE, 1, 1, "node:A");
    graph_commit c;
    memset(&c, 0, sizeof c);
    memcpy(c.id, id, sizeof c.id);
    c.manifest_version = 1;
    if (rc == 0) rc = graph_rows_add_commit(r, &c);
    arrow_schema schema;
    arrow_batch *b = NULL;
    lance_create_options o;
    manifest_opts(&o);
    if (rc == 0) rc = graph_manifest_schema(&schema);
    if (rc == 0) rc = graph_rows_to_batch(r, &b);
    lance_dataset *ds = NULL;
    if (rc == 0)
        rc = lance_dataset_create_rows(&ds, s, GRAPH_MANIFEST_DIR, &schema, &b, 1, &o, UUID1);
    lance_dataset_free(ds);
    arrow_batch_free(b);
    arrow_schema_clear(&schema);
    graph_rows_free(r);
    return rc;
}

static int crash_check(store *s, void *ctx, const crashsim_point *pt)
{
    (void)ctx;
    lance_dataset *ds = NULL;
    int rc = lance_dataset_open(&ds, s, GRAPH_MANIFEST_DIR, 0, LANCE_ACCESS_READ);
    if (rc == OG_E_NOT_FOUND) {
        if (pt->k == 0 || (!pt->crashed && pt->op_rc == 0)) return 1; /* it had succeeded */
        uint64_t v;
        if (lance_find_txn_version(s, GRAPH_MANIFEST_DIR, UUID1, 0, &v) != OG_E_NOT_FOUND) return 2;
        return crash_op(s, NULL) == 0 ? 0 : 3; /* the creator can simply try again */
    }
    if (rc) return 4;
    uint64_t n = 0, v = 0;
    int bad = lance_dataset_version(ds) != 1 || lance_dataset_count_rows(ds, &n) || n != 3;
    lance_dataset_free(ds);
    if (bad) return 5;
    if (lance_find_txn_version(s, GRAPH_MANIFEST_DIR, UUID1, 0, &v) || v != 1) return 6;
    graph_snapshot *snap = NULL;
    if (graph_snapshot_load(&snap, s, NULL, 0, 0)) return 7;
    graph_snapshot_free(snap);
    return 0;
}

static void test_create_rows_crash(void **state)
{
    (void)state;
    crash_ctx ctx = {3};
    crashsim_case c = {"create_rows", &ctx, NULL, crash_op, crash_check};
    crashsim_report rep;
    crashsim_run(&c, &rep);
    print_message("create_rows: %" PRIu64 " durable ops, %" PRIu64 " crash runs\n", rep.n,
                  rep.runs);
    if (rep.violations) fail_msg("%" PRIu64 " violations; first: %s", rep.violations, rep.first);
    assert_true(rep.n >= 3); /* data file, transaction file, manifest (+ syncs) */
}

/* ---- accepted schema --------------------------------------------------------------------- */

static const char PG1[] = "node Person { name: String @key  age: I32? }\n"
                          "node Company { name: String @key }\n"
                          "edge WorksAt: Person -> Company { role: String? }\n";
static const char PG1_LAYOUT[] =
    "// the same schema, laid out differently\n"
    "node Person {\n    name: String @key\n    age: I32?\n}\n\n"
    "node Company {\n  name: String @key\n}\n"
    "edge WorksAt: Person -> Company {\n  role: String?  // a comment\n}\n";
static const char PG2[] = "node Person { name: String @key  age: I64? }\n"
                          "node Company { name: String @key }\n"
                          "edge WorksAt: Person -> Company { role: String? }\n";

static lang_catalog *build(const char *src)
{
    core_arena a;
    core_arena_init(&a, 1024);
    lang_diags d;
    lang_diags_init(&d, &a);
    lang_catalog *c = NULL;
    int rc = lang_catalog_build(&c, src, strlen(src), "test.pg", &d);
    core_arena_free(&a);
    assert_og_ok(rc);
    return c;
}

static void test_schema_identity(void **state)
{
    (void)state;
    lang_catalog *a = build(PG1), *b = build(PG1_LAYOUT), *c = build(PG2);
    char ia[GRAPH_SCHEMA_HASH_LEN + 1], ib[GRAPH_SCHEMA_HASH_LEN + 1],
        ic[GRAPH_SCHEMA_HASH_LEN + 1];
    assert_og_ok(graph_schema_identity(a, ia));
    assert_og_ok(graph_schema_identity(b, ib));
    assert_og_ok(graph_schema_identity(c, ic));
    assert_int_equal(strlen(ia), GRAPH_SCHEMA_HASH_LEN);
    assert_int_equal(strspn(ia, "0123456789abcdef"), GRAPH_SCHEMA_HASH_LEN);
    assert_string_equal(ia, ib);
    assert_string_not_equal(ia, ic);
    /* Ids are part of the identity. */
    a->types[0].id ^= 1;
    assert_og_ok(graph_schema_identity(a, ib));
    assert_string_not_equal(ia, ib);
    lang_catalog_free(a);
    lang_catalog_free(b);
    lang_catalog_free(c);
}

static void test_schema_files(void **state)
{
    fx *f = *state;
    lang_catalog *out = NULL;
    char id[GRAPH_SCHEMA_HASH_LEN + 1], want[GRAPH_SCHEMA_HASH_LEN + 1];
    assert_og_error(graph_schema_read(f->s, &out, id), OG_E_NOT_FOUND);

    lang_catalog *c = build(PG1);
    /* As if inherited through a rename: ids that deriving from names would not give. */
    c->types[0].id = 0x1234;
    c->types[0].props[1].id = 0x777;
    assert_og_ok(graph_schema_identity(c, want));
    assert_og_ok(graph_schema_write(f->s, c));
    assert_og_ok(graph_schema_read(f->s, &out, id));
    assert_string_equal(id, want);
    assert_int_equal(out->n_types, 3);
    assert_int_equal(out->types[0].id, 0x1234);
    assert_int_equal(out->types[0].props[1].id, 0x777);
    assert_int_equal(out->types[2].id, c->types[2].id);
    assert_memory_equal(out->source, PG1, strlen(PG1));
    lang_catalog_free(out);
    out = NULL;

    char path[512];
    /* _schema.pg edited: the identity no longer matches. */
    snprintf(path, sizeof path, "%s/%s", f->dir, GRAPH_SCHEMA_PG);
    test_write_file(path, PG2, strlen(PG2));
    assert_og_error(graph_schema_read(f->s, &out, id), OG_E_CORRUPT);
    assert_non_null(strstr(og_error_last()->message, GRAPH_SCHEMA_JSON));
    assert_null(out);
    /* _schema.pg not a schema at all. */
    test_write_file(path, "node {", 6);
    assert_og_error(graph_schema_read(f->s, &out, id), OG_E_CORRUPT);
    assert_non_null(strstr(og_error_last()->message, GRAPH_SCHEMA_PG));
    /* Back to good, then damage _schema.json's identity, then its JSON, then remove it. */
    assert_og_ok(graph_schema_write(f->s, c));
    assert_og_ok(graph_schema_read(f->s, &out, id));
    lang_catalog_free(out);
    out = NULL;
    core_buf js = CORE_BUF_INIT;
    assert_og_ok(store_get(f->s, GRAPH_SCHEMA_JSON, 0, STORE_ALL, &js));
    char *text = core_strndup((const char *)js.data, js.len);
    core_buf_free(&js);
    char *p = strstr(text, want);
    assert_non_null(p);
    p[0] = p[0] == '0' ? '1' : '0';
    snprintf(path, sizeof path, "%s/%s", f->dir, GRAPH_SCHEMA_JSON);
    test_write_file(path, text, strlen(text));
    core_free(text);
    assert_og_error(graph_schema_read(f->s, &out, id), OG_E_CORRUPT);
    assert_non_null(strstr(og_error_last()->message, GRAPH_SCHEMA_JSON));
    test_write_file(path, "{\"format\":1", 11);
    assert_og_error(graph_schema_read(f->s, &out, id), OG_E_CORRUPT);
    test_write_file(path, "{\"format\":7,\"identity\":\"x\",\"catalog\":{}}", 40);
    assert_og_error(graph_schema_read(f->s, &out, id), OG_E_UNSUPPORTED);
    assert_og_ok(store_delete(f->s, GRAPH_SCHEMA_JSON, 0));
    assert_og_error(graph_schema_read(f->s, &out, id), OG_E_CORRUPT);
    assert_null(out);
    lang_catalog_free(c);
}

/* ---- allocation failures ----------------------------------------------------------------- */

/* Every allocation of building rows and of a lineage snapshot fails in turn: each call
 * returns OG_E_NOMEM (or succeeds when the failed allocation was on a path that tolerates it)
 * and leaks nothing (checked in the sanitizer build). Then the same for graph_schema_read,
 * where an injected failure may also show as OG_E_CORRUPT: lang_catalog_to_json does not
 * report jansson allocation failures (it dumps a partial catalog, whose identity then
 * differs) -- a lang-layer issue; here only the absence of leaks and crashes is checked. */
static void test_alloc_failures(void **state)
{
    fx *f = *state;
    history h;
    lance_dataset *ds = build_history(f->s, &h);
    lance_dataset_free(ds);
    int done = 0;
    uint64_t n;
    for (n = 1; !done && n < 20000; n++) {
        core_alloc_fail_at(n, 0);
        graph_snapshot *snap = NULL;
        graph_rows *r = NULL;
        arrow_batch *b = NULL;
        lang_catalog *out = NULL;
        char id[GRAPH_SCHEMA_HASH_LEN + 1];
        int rc = graph_snapshot_load(&snap, f->s, NULL, 0, GRAPH_SNAP_LINEAGE);
        if (rc == 0) rc = graph_rows_new(&r);
        if (rc == 0) rc = graph_rows_add_format(r, 1);
        if (rc == 0) rc = graph_rows_add_table(r, LANG_NODE, 1, 2, "node:X");
        if (rc == 0) rc = graph_rows_add_head(r, "feat", h.c[1], NULL, 3);
        if (rc == 0) rc = graph_rows_to_batch(r, &b);
        (void)out;
        (void)id;
        uint64_t injected = core_alloc_injected();
        core_alloc_fail_at(0, 0);
        if (rc && rc != OG_E_NOMEM)
            fail_msg("allocation %" PRIu64 ": %s", n, og_error_last()->message);
        if (rc == 0) assert_int_equal(snap->n_tables, 2);
        graph_snapshot_free(snap);
        graph_rows_free(r);
        arrow_batch_free(b);
        lang_catalog_free(out);
        done = rc == 0 && injected == 0;
    }
    assert_true(done);
    print_message("allocation failures injected: %" PRIu64 "\n", n - 1);

    /* lance_dataset_create_rows, a fresh root per attempt. */
    graph_rows *r = rows_new();
    assert_og_ok(graph_rows_add_format(r, 1));
    assert_og_ok(graph_rows_add_table(r, LANG_NODE, 1, 2, "node:X"));
    arrow_schema schema;
    arrow_batch *b = NULL;
    lance_create_options o;
    manifest_opts(&o);
    assert_og_ok(graph_manifest_schema(&schema));
    assert_og_ok(graph_rows_to_batch(r, &b));
    graph_rows_free(r);
    for (done = 0, n = 1; !done && n < 20000; n++) {
        char root[64];
        snprintf(root, sizeof root, "t%" PRIu64 ".lance", n);
        core_alloc_fail_at(n, 0);
        lance_dataset *ds2 = NULL;
        int rc = lance_dataset_create_rows(&ds2, f->s, root, &schema, &b, 1, &o, UUID1);
        uint64_t injected = core_alloc_injected();
        core_alloc_fail_at(0, 0);
        if (rc && rc != OG_E_NOMEM)
            fail_msg("allocation %" PRIu64 ": %s", n, og_error_last()->message);
        if (rc == 0) assert_int_equal(lance_dataset_version(ds2), 1);
        if (rc) assert_null(ds2);
        lance_dataset_free(ds2);
        done = rc == 0 && injected == 0;
    }
    assert_true(done);
    arrow_batch_free(b);
    arrow_schema_clear(&schema);

    lang_catalog *c = build(PG1);
    assert_og_ok(graph_schema_write(f->s, c));
    lang_catalog_free(c);
    for (done = 0, n = 1; !done && n < 20000; n++) {
        core_alloc_fail_at(n, 0);
        lang_catalog *out = NULL;
        char id[GRAPH_SCHEMA_HASH_LEN + 1];
        int rc = graph_schema_read(f->s, &out, id);
        uint64_t injected = core_alloc_injected();
        core_alloc_fail_at(0, 0);
        if (rc && rc != OG_E_NOMEM && !(rc == OG_E_CORRUPT && injected))
            fail_msg("allocation %" PRIu64 ": %s", n, og_error_last()->message);
        if (rc == 0) assert_non_null(out);
        lang_catalog_free(out);
        done = rc == 0 && injected == 0;
    }
    assert_true(done);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kind_names),
        cmocka_unit_test(test_rows_batch),
        cmocka_unit_test_setup_teardown(test_roundtrip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_graph, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reduction_rules, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compaction_rules, setup, teardown),
        cmocka_unit_test_setup_teardown(test_conflicting_registration, setup, teardown),
        cmocka_unit_test_setup_teardown(test_format, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resolve_ref, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lineage_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_branch_snapshot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_table_open, setup, teardown),
        cmocka_unit_test_setup_teardown(test_load_op_counts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_rows, setup, teardown),
        cmocka_unit_test(test_create_rows_crash),
        cmocka_unit_test(test_schema_identity),
        cmocka_unit_test_setup_teardown(test_schema_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_alloc_failures, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
