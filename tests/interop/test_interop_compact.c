/* Interop of compaction with lancedb (tests/interop/compact_tool.cjs):
 *  - lancedb reads a table we compacted: the same rows, values and stable row ids as our
 *    reader, at the compacted version and, by time travel, at the version before;
 *  - lancedb appends on top of our compacted table and we read its commit;
 *  - lancedb compacts (optimize) a table we wrote and compacted, and we read the result. */
#include "../lance/compact_fixture.h"
#include "interop.h"
#include "core/alloc.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* `node compact_tool.cjs ARGS`, its one-line JSON answer (the test fails otherwise). */
#define tool(...) test_interop_tool("compact_tool.cjs", __VA_ARGS__)

typedef struct fixture {
    char dir[256];
    store *s;
    arrow_schema schema;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->s = test_sandbox_store(f->dir, sizeof f->dir, "interop-compact");
    fx_schema(&f->schema);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    store_close(f->s);
    arrow_schema_clear(&f->schema);
    test_sandbox_done(f->dir);
    free(f);
    return 0;
}

/* lancedb's rows of version v (0: latest) equal our sorted scan `want` (id, name, score,
 * _rowid), value by value. */
static void expect_lancedb_reads(fixture *f, uint64_t v, const arrow_batch *want)
{
    json_t *j =
        v ? tool("read '%s' c %llu", f->dir, (unsigned long long)v) : tool("read '%s' c", f->dir);
    if (v) assert_int_equal(test_json_int(j, "version"), v);
    json_t *rows = json_object_get(j, "rows");
    assert_true(json_is_array(rows));
    assert_int_equal(json_array_size(rows), want->num_rows);
    for (int64_t i = 0; i < want->num_rows; i++) {
        json_t *r = json_array_get(rows, (size_t)i);
        assert_int_equal(json_integer_value(json_array_get(r, 0)),
                         arrow_array_get_int(want->columns[0], i));
        json_t *nm = json_array_get(r, 1);
        if (arrow_array_is_valid(want->columns[1], i)) {
            size_t len = 0;
            const uint8_t *p = arrow_array_get_bytes(want->columns[1], i, &len);
            assert_true(json_is_string(nm));
            assert_int_equal(json_string_length(nm), len);
            assert_memory_equal(json_string_value(nm), p, len);
        } else {
            assert_true(json_is_null(nm));
        }
        /* score: compared with our value exactly */
        json_t *sc = json_array_get(r, 2);
        double ours = arrow_array_get_double(want->columns[2], i);
        assert_true(json_number_value(sc) == ours);
        assert_int_equal((uint64_t)json_integer_value(json_array_get(r, 3)),
                         arrow_array_get_uint(want->columns[3], i));
    }
    json_decref(j);
}

static void test_lancedb_reads_compacted(void **state)
{
    fixture *f = *state;
    assert_og_ok(cf_build(f->s, &f->schema, true));
    arrow_batch *before = NULL;
    assert_og_ok(cf_scan(f->s, 0, &before));
    lance_dataset *ds = NULL, *nd = NULL;
    assert_og_ok(lance_dataset_open(&ds, f->s, CF_ROOT, 0, LANCE_ACCESS_WRITE));
    lance_compact_options o = LANCE_COMPACT_OPTIONS_INIT;
    o.target_rows_per_fragment = 40;
    lance_compact_report r;
    assert_og_ok(lance_compact(&nd, ds, &o, &r));
    assert_int_equal(r.n_commits, 1);
    assert_true(r.fragments_after < r.fragments_before);
    /* lancedb: the compacted version (latest), and the one before by time travel. */
    expect_lancedb_reads(f, 0, before);
    expect_lancedb_reads(f, r.versions[0], before);
    expect_lancedb_reads(f, CF_VERSIONS, before);
    json_t *j = tool("versions '%s' c", f->dir);
    assert_int_equal(json_array_size(json_object_get(j, "versions")), CF_VERSIONS + 1);
    json_decref(j);

    /* lancedb appends on top of our Rewrite; we read its commit. */
    j = tool("append '%s' c 1000 1004", f->dir);
    assert_int_equal(test_json_int(j, "version"), CF_VERSIONS + 2);
    json_decref(j);
    arrow_batch *after = NULL;
    assert_og_ok(cf_scan(f->s, 0, &after));
    assert_int_equal(after->num_rows, before->num_rows + 4);
    for (int64_t i = 0; i < before->num_rows; i++)
        assert_int_equal(arrow_array_get_int(after->columns[0], i),
                         arrow_array_get_int(before->columns[0], i));
    for (int64_t i = before->num_rows; i < after->num_rows; i++)
        assert_int_equal(arrow_array_get_int(after->columns[0], i), 1000 + (i - before->num_rows));
    /* The row ids lancedb gave its rows do not collide with the ones we kept. */
    for (int64_t i = before->num_rows; i < after->num_rows; i++)
        for (int64_t k = 0; k < before->num_rows; k++)
            assert_true(arrow_array_get_uint(after->columns[3], i) !=
                        arrow_array_get_uint(before->columns[3], k));
    expect_lancedb_reads(f, 0, after);

    /* We compact lancedb's small fragment in with ours; lancedb reads the result. */
    lance_dataset *ds2 = NULL, *nd2 = NULL;
    assert_og_ok(lance_dataset_open(&ds2, f->s, CF_ROOT, 0, LANCE_ACCESS_WRITE));
    o.target_rows_per_fragment = 0; /* default: everything into one fragment */
    assert_og_ok(lance_compact(&nd2, ds2, &o, &r));
    assert_int_equal(r.n_commits, 1);
    assert_int_equal(r.fragments_after, 1);
    assert_true(cf_same(f->s, 0, after));
    expect_lancedb_reads(f, 0, after);

    /* lancedb compacts the table itself (nothing left to merge: the content stays). */
    j = tool("optimize '%s' c", f->dir);
    json_decref(j);
    assert_true(cf_same(f->s, 0, after));
    arrow_batch_free(after);
    arrow_batch_free(before);
    lance_dataset_free(nd2);
    lance_dataset_free(ds2);
    lance_dataset_free(nd);
    lance_dataset_free(ds);
}

/* Size-tiered compaction of 72 one-row appends leaves a 64-row fragment merged from more
 * writes than LANCE_VERSION_RUNS_MAX, which carries no version sequences. lancedb reads it,
 * deletes from it and compacts it; we read what lancedb wrote. */
static void test_lancedb_tiered_without_versions(void **state)
{
    fixture *f = *state;
    assert_og_ok(cf_create_stable(f->s, &f->schema));
    lance_compact_options o = LANCE_COMPACT_OPTIONS_INIT;
    o.tier_factor = 8;
    o.version_runs_max = LANCE_VERSION_RUNS_MAX;
    for (int i = 0; i < 72; i++) {
        assert_og_ok(cf_append(f->s, &f->schema, i, 1));
        assert_og_ok(cf_compact_while_due(f->s, &o, NULL, NULL));
    }
    lance_dataset *ds = NULL;
    assert_og_ok(lance_dataset_open(&ds, f->s, CF_ROOT, 0, LANCE_ACCESS_READ));
    size_t without = 0;
    for (size_t i = 0; i < ds->m->pb->n_fragments; i++)
        without += ds->m->pb->fragments[i]->created_at_version_sequence_case ==
                   LANCE__TABLE__DATA_FRAGMENT__CREATED_AT_VERSION_SEQUENCE__NOT_SET;
    assert_int_equal(without, 1);
    lance_dataset_free(ds);
    arrow_batch *before = NULL, *after = NULL;
    assert_og_ok(cf_scan(f->s, 0, &before));
    assert_int_equal(before->num_rows, 72);
    expect_lancedb_reads(f, 0, before);
    json_t *j = tool("delete '%s' c 'id = 3 OR id = 40'", f->dir);
    json_decref(j);
    j = tool("optimize '%s' c", f->dir);
    json_decref(j);
    assert_og_ok(cf_scan(f->s, 0, &after));
    assert_int_equal(after->num_rows, 70);
    expect_lancedb_reads(f, 0, after);
    arrow_batch_free(after);
    arrow_batch_free(before);
}

static int drop_and_set_apart(void *arg, const arrow_batch *b, uint8_t *cls)
{
    (void)arg;
    for (int64_t i = 0; i < b->num_rows; i++) {
        int64_t id = arrow_array_get_int(b->columns[0], i);
        if (id % 4 == 0) cls[i] = LANCE_COMPACT_DROP;
        if (id % 4 == 1) cls[i] = LANCE_COMPACT_APART;
    }
    return 0;
}

/* A compaction whose classifier drops rows (committed as an Update) and sets rows apart:
 * lancedb reads the result (and the version before), appends on top, and we read that. */
static void test_lancedb_reads_classified(void **state)
{
    fixture *f = *state;
    assert_og_ok(cf_build(f->s, &f->schema, true));
    arrow_batch *before = NULL, *after = NULL, *more = NULL;
    assert_og_ok(cf_scan(f->s, 0, &before));
    lance_dataset *ds = NULL, *nd = NULL;
    assert_og_ok(lance_dataset_open(&ds, f->s, CF_ROOT, 0, LANCE_ACCESS_WRITE));
    lance_compact_options o = LANCE_COMPACT_OPTIONS_INIT;
    o.classify = drop_and_set_apart;
    o.apart_key = "test.apart";
    lance_compact_report r;
    assert_og_ok(lance_compact(&nd, ds, &o, &r));
    assert_int_equal(r.n_commits, 1);
    assert_true(r.rows_dropped > 0);
    assert_og_ok(cf_scan(f->s, 0, &after));
    assert_int_equal(after->num_rows, before->num_rows - (int64_t)r.rows_dropped);
    expect_lancedb_reads(f, 0, after);
    expect_lancedb_reads(f, CF_VERSIONS, before);
    uint64_t *apart = NULL;
    size_t n_apart = 0;
    assert_og_ok(lance_apart_fragments(nd, "test.apart", &apart, &n_apart));
    assert_int_equal(n_apart, 1);
    core_free(apart);
    json_t *j = tool("append '%s' c 1000 1003", f->dir);
    assert_int_equal(test_json_int(j, "version"), CF_VERSIONS + 2);
    json_decref(j);
    /* lancedb's append carries the list (table metadata) forward */
    lance_dataset *la = NULL;
    assert_og_ok(lance_dataset_open(&la, f->s, CF_ROOT, 0, LANCE_ACCESS_READ));
    assert_og_ok(lance_apart_fragments(la, "test.apart", &apart, &n_apart));
    assert_int_equal(n_apart, 1);
    core_free(apart);
    lance_dataset_free(la);
    assert_og_ok(cf_scan(f->s, 0, &more));
    assert_int_equal(more->num_rows, after->num_rows + 3);
    expect_lancedb_reads(f, 0, more);
    arrow_batch_free(more);
    arrow_batch_free(after);
    arrow_batch_free(before);
    lance_dataset_free(nd);
    lance_dataset_free(ds);
}

/* lancedb compacts a table we wrote (small fragments with deletions), then we read its
 * Rewrite and compact nothing more. */
static void test_we_read_lancedb_compaction(void **state)
{
    fixture *f = *state;
    assert_og_ok(cf_build(f->s, &f->schema, true));
    arrow_batch *before = NULL;
    assert_og_ok(cf_scan(f->s, 0, &before));
    json_t *j = tool("optimize '%s' c", f->dir);
    uint64_t v = (uint64_t)test_json_int(j, "version");
    json_decref(j);
    assert_true(v > CF_VERSIONS);
    lance_dataset *ds = NULL;
    assert_og_ok(lance_dataset_open(&ds, f->s, CF_ROOT, 0, LANCE_ACCESS_READ));
    assert_true(ds->m->pb->n_fragments < 10);
    lance_dataset_free(ds);
    assert_true(cf_same(f->s, 0, before));
    for (uint64_t k = CF_VERSIONS + 1; k <= v; k++) {
        Lance__Table__Transaction *t = NULL;
        assert_og_ok(cf_txn(f->s, k, &t));
        lance_pb_free(t);
    }
    arrow_batch_free(before);
}

/* lancedb deletes rows of our table (its own deletion files); we compact them away and both
 * sides read the same rows, with the same row ids, as before the compaction. */
static void test_compact_lancedb_deletions(void **state)
{
    fixture *f = *state;
    assert_og_ok(cf_build(f->s, &f->schema, true));
    json_t *j = tool("delete '%s' c 'id >= 70 AND id < 75'", f->dir);
    assert_int_equal(test_json_int(j, "version"), CF_VERSIONS + 1);
    json_decref(j);
    j = tool("delete '%s' c 'id = 5 OR id = 33'", f->dir);
    assert_int_equal(test_json_int(j, "version"), CF_VERSIONS + 2);
    json_decref(j);
    arrow_batch *before = NULL;
    assert_og_ok(cf_scan(f->s, 0, &before));
    expect_lancedb_reads(f, 0, before);
    lance_dataset *ds = NULL, *nd = NULL;
    assert_og_ok(lance_dataset_open(&ds, f->s, CF_ROOT, 0, LANCE_ACCESS_WRITE));
    lance_compact_report r;
    assert_og_ok(lance_compact(&nd, ds, NULL, &r));
    assert_int_equal(r.n_commits, 1);
    assert_int_equal(r.versions[0], CF_VERSIONS + 3);
    assert_int_equal(r.fragments_after, 1);
    assert_int_equal(r.rows_after, (uint64_t)before->num_rows);
    assert_null(nd->m->pb->fragments[0]->deletion_file);
    assert_true(cf_same(f->s, 0, before));
    expect_lancedb_reads(f, 0, before);
    expect_lancedb_reads(f, CF_VERSIONS + 2, before);
    arrow_batch_free(before);
    lance_dataset_free(nd);
    lance_dataset_free(ds);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_lancedb_reads_compacted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lancedb_tiered_without_versions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lancedb_reads_classified, setup, teardown),
        cmocka_unit_test_setup_teardown(test_we_read_lancedb_compaction, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compact_lancedb_deletions, setup, teardown),
    };
    return cmocka_run_group_tests(tests, test_interop_group_setup, NULL);
}
