/* Dataset operations: create, append, scan (projection, filter, limit, row addresses and
 * ids), time travel, delete, update, merge-insert, overwrite, conflicts, file bounds, and the
 * store operations one commit costs. */
#include "dataset_fixture.h"

#include "lance/deletion.h"
#include "lance/txn.h"

#include <string.h>

typedef struct fixture {
    char dir[256];
    store *s;
    arrow_schema schema;
    lance_dataset *ds;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->s = test_sandbox_store(f->dir, sizeof f->dir, "ds");
    fx_schema(&f->schema);
    const char *pk[] = {"id"};
    lance_create_options co = LANCE_CREATE_OPTIONS_INIT;
    co.primary_key = pk;
    co.n_primary_key = 1;
    assert_og_ok(lance_dataset_create(&f->ds, f->s, "t.lance", &f->schema, &co));
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    lance_dataset_free(f->ds);
    arrow_schema_clear(&f->schema);
    test_sandbox_store_done(f->dir, f->s);
    free(f);
    return 0;
}

/* Replace f->ds with a new snapshot. */
static void swap(fixture *f, lance_dataset *n)
{
    assert_non_null(n);
    lance_dataset_free(f->ds);
    f->ds = n;
}

static void append_rows(fixture *f, int64_t start, int64_t n)
{
    arrow_batch *b = fx_batch(&f->schema, start, n);
    lance_dataset *nd = NULL;
    assert_og_ok(lance_dataset_append(&nd, f->ds, &b, 1));
    arrow_batch_free(b);
    swap(f, nd);
}

static void test_create_and_reopen(void **state)
{
    fixture *f = *state;
    assert_int_equal(lance_dataset_version(f->ds), 1);
    uint64_t n = 99;
    assert_og_ok(lance_dataset_count_rows(f->ds, &n));
    assert_int_equal(n, 0);
    assert_true(arrow_schema_equal(&f->ds->schema, &f->schema));
    assert_true(lance_dataset_stable_row_ids(f->ds));
    assert_true(f->ds->m->pb->fields[0]->unenforced_primary_key);
    assert_false(f->ds->m->pb->fields[1]->unenforced_primary_key);
    lance_dataset *again = NULL;
    assert_og_error(lance_dataset_create(&again, f->s, "t.lance", &f->schema, NULL), OG_E_EXISTS);
    assert_og_ok(lance_dataset_open(&again, f->s, "t.lance", 0, LANCE_ACCESS_READ));
    assert_int_equal(lance_dataset_version(again), 1);
    lance_dataset_free(again);
    assert_og_error(lance_dataset_open(&again, f->s, "nope.lance", 0, LANCE_ACCESS_READ),
                    OG_E_NOT_FOUND);
    assert_og_error(lance_dataset_open(&again, f->s, "t.lance", 5, LANCE_ACCESS_READ),
                    OG_E_NOT_FOUND);
    /* An empty table scans to an empty batch with the right schema. */
    arrow_batch *b = NULL;
    assert_og_ok(lance_dataset_scan_all(&b, f->ds, NULL));
    assert_int_equal(b->num_rows, 0);
    assert_int_equal(b->n_columns, 3);
    arrow_batch_free(b);
}

static void test_append_scan(void **state)
{
    fixture *f = *state;
    arrow_batch *in[2] = {fx_batch(&f->schema, 0, 100), fx_batch(&f->schema, 100, 50)};
    lance_dataset *nd = NULL;
    assert_og_ok(lance_dataset_append(&nd, f->ds, in, 2));
    swap(f, nd);
    assert_int_equal(lance_dataset_version(f->ds), 2);
    uint64_t n;
    assert_og_ok(lance_dataset_count_rows(f->ds, &n));
    assert_int_equal(n, 150);
    arrow_batch *all = NULL;
    assert_og_ok(lance_dataset_scan_all(&all, f->ds, NULL));
    arrow_batch *want = fx_batch(&f->schema, 0, 150);
    assert_true(arrow_batch_equal(all, want));
    arrow_batch_free(want);
    arrow_batch_free(all);

    /* Projection, filter, limit, row addresses and ids. */
    const char *cols[] = {"score", "id"};
    lance_term t[2] = {
        {"id", ARROW_CMP_GE, {.kind = ARROW_INT64, .i = 10}},
        {"name", ARROW_CMP_NE, {.kind = ARROW_BINARY, .bytes = "n12", .n_bytes = 3}}};
    lance_filter filt = {t, 2};
    lance_scan_options so = LANCE_SCAN_OPTIONS_INIT;
    so.columns = cols;
    so.n_columns = 2;
    so.filter = &filt;
    so.limit = 5;
    so.with_row_addr = true;
    so.with_row_id = true;
    arrow_batch *b = NULL;
    assert_og_ok(lance_dataset_scan_all(&b, f->ds, &so));
    assert_int_equal(b->n_columns, 4);
    assert_string_equal(b->schema.fields[0].name, "score");
    assert_string_equal(b->schema.fields[2].name, "_rowaddr");
    assert_string_equal(b->schema.fields[3].name, "_rowid");
    /* ids >= 10, name != n12 (and null names never match): 10, 11, 13?, no: 10 % 7 == 3 is
     * null, so 11, 13, 14, 15, 16 */
    int64_t want_ids[] = {11, 13, 14, 15, 16};
    assert_int_equal(b->num_rows, 5);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(arrow_array_get_int(b->columns[1], i), want_ids[i]);
        assert_true(arrow_array_get_double(b->columns[0], i) == want_ids[i] * 0.5);
        /* One fragment: address = offset = id; row ids were assigned 0.. */
        assert_int_equal(arrow_array_get_uint(b->columns[2], i), (uint64_t)want_ids[i]);
        assert_int_equal(arrow_array_get_uint(b->columns[3], i), (uint64_t)want_ids[i]);
    }
    arrow_batch_free(b);
    for (int i = 0; i < 2; i++)
        arrow_batch_free(in[i]);
    /* Bad column names are typed errors. */
    const char *bad[] = {"nope"};
    so.columns = bad;
    so.n_columns = 1;
    assert_og_error(lance_dataset_scan_all(&b, f->ds, &so), OG_E_BAD_REQUEST);
}

static void test_time_travel_and_delete(void **state)
{
    fixture *f = *state;
    append_rows(f, 0, 20);  /* v2 */
    append_rows(f, 20, 20); /* v3: a second fragment */
    lance_term t = {"id", ARROW_CMP_LT, {.kind = ARROW_INT64, .i = 5}};
    lance_filter filt = {&t, 1};
    lance_dataset *nd = NULL;
    assert_og_ok(lance_dataset_delete(&nd, f->ds, &filt)); /* v4 */
    swap(f, nd);
    int64_t sum, rows;
    fx_ids(f->ds, &sum, &rows);
    assert_int_equal(rows, 35);
    assert_int_equal(sum, (39 * 40) / 2 - 10);
    assert_true(f->ds->m->pb->reader_feature_flags & LANCE_FLAG_DELETION_FILES);
    /* Delete every row of the first fragment: the fragment goes, and the flag with it. */
    lance_term t2 = {"id", ARROW_CMP_LT, {.kind = ARROW_INT64, .i = 20}};
    lance_filter f2 = {&t2, 1};
    assert_og_ok(lance_dataset_delete(&nd, f->ds, &f2)); /* v5 */
    swap(f, nd);
    assert_int_equal(f->ds->m->pb->n_fragments, 1);
    assert_false(f->ds->m->pb->reader_feature_flags & LANCE_FLAG_DELETION_FILES);
    fx_ids(f->ds, &sum, &rows);
    assert_int_equal(rows, 20);
    /* A delete that matches nothing commits nothing. */
    lance_staged *st = NULL;
    assert_og_ok(lance_stage_delete(&st, f->ds, &f2, NULL));
    lance_staged_info info;
    lance_staged_get_info(st, &info);
    assert_true(info.noop);
    uint64_t v;
    assert_og_ok(lance_staged_commit(st, NULL, &v));
    assert_int_equal(v, 5);
    lance_staged_free(st);
    /* Time travel: every older version still reads as it was. */
    int64_t want_rows[] = {0, 0, 20, 40, 35, 20};
    for (uint64_t ver = 1; ver <= 5; ver++) {
        lance_dataset *old = NULL;
        assert_og_ok(lance_dataset_open(&old, f->s, "t.lance", ver, LANCE_ACCESS_READ));
        fx_ids(old, &sum, &rows);
        assert_int_equal(rows, want_rows[ver]);
        lance_dataset_free(old);
    }
    /* Delete by row address. */
    uint64_t addrs[] = {LANCE_ROW_ADDR(1, 0), LANCE_ROW_ADDR(1, 19), LANCE_ROW_ADDR(1, 19)};
    assert_og_ok(lance_stage_delete_rows(&st, f->ds, addrs, 3, NULL));
    assert_og_ok(lance_staged_commit(st, &nd, NULL));
    lance_staged_free(st);
    swap(f, nd);
    fx_ids(f->ds, &sum, &rows);
    assert_int_equal(rows, 18);
    uint64_t bad[] = {LANCE_ROW_ADDR(7, 0)};
    assert_og_error(lance_stage_delete_rows(&st, f->ds, bad, 1, NULL), OG_E_BAD_REQUEST);
    uint64_t beyond[] = {LANCE_ROW_ADDR(1, 20)};
    assert_og_error(lance_stage_delete_rows(&st, f->ds, beyond, 1, NULL), OG_E_BAD_REQUEST);
}

/* Row ids by id value, from a full scan. */
static void ids_by_key(const lance_dataset *ds, uint64_t *out, int64_t n)
{
    lance_scan_options so = LANCE_SCAN_OPTIONS_INIT;
    so.with_row_id = true;
    arrow_batch *b = NULL;
    assert_og_ok(lance_dataset_scan_all(&b, ds, &so));
    for (int64_t i = 0; i < n; i++)
        out[i] = UINT64_MAX;
    for (int64_t i = 0; i < b->num_rows; i++) {
        int64_t id = arrow_array_get_int(b->columns[0], i);
        assert_true(id >= 0 && id < n);
        out[id] = arrow_array_get_uint(b->columns[3], i);
    }
    arrow_batch_free(b);
}

static void test_update_keeps_row_ids(void **state)
{
    fixture *f = *state;
    append_rows(f, 0, 30);
    uint64_t before[30], after[30];
    ids_by_key(f->ds, before, 30);
    lance_term t = {"id", ARROW_CMP_GE, {.kind = ARROW_INT64, .i = 25}};
    lance_filter filt = {&t, 1};
    const char *set[] = {"name", "score"};
    arrow_scalar vals[2] = {{.kind = ARROW_BINARY, .bytes = "updated", .n_bytes = 7},
                            {.is_null = true}};
    lance_staged *st = NULL;
    assert_og_ok(lance_stage_update(&st, f->ds, &filt, set, vals, 2, NULL));
    lance_staged_info info;
    lance_staged_get_info(st, &info);
    assert_int_equal(info.rows_added, 5);
    assert_int_equal(info.rows_deleted, 5);
    lance_dataset *nd = NULL;
    assert_og_ok(lance_staged_commit(st, &nd, NULL));
    lance_staged_free(st);
    swap(f, nd);
    ids_by_key(f->ds, after, 30);
    for (int i = 0; i < 30; i++)
        assert_int_equal(before[i], after[i]);
    lance_scan_options so = LANCE_SCAN_OPTIONS_INIT;
    so.filter = &filt;
    arrow_batch *b = NULL;
    assert_og_ok(lance_dataset_scan_all(&b, f->ds, &so));
    assert_int_equal(b->num_rows, 5);
    for (int64_t i = 0; i < 5; i++) {
        size_t len;
        const uint8_t *p = arrow_array_get_bytes(b->columns[1], i, &len);
        assert_int_equal(len, 7);
        assert_memory_equal(p, "updated", 7);
        assert_false(arrow_array_is_valid(b->columns[2], i));
    }
    arrow_batch_free(b);
    assert_og_error(lance_stage_update(&st, f->ds, &filt, (const char *[]){"id"},
                                       (arrow_scalar[]){{.is_null = true}}, 1, NULL),
                    OG_E_BAD_REQUEST);
}

static void test_merge_insert(void **state)
{
    fixture *f = *state;
    append_rows(f, 0, 10);
    uint64_t before[10];
    ids_by_key(f->ds, before, 10);
    /* Upsert rows 5..14: 5..9 replace, 10..14 are new. */
    arrow_batch *in = fx_batch(&f->schema, 5, 10);
    lance_staged *st = NULL;
    assert_og_ok(lance_stage_merge_insert(&st, f->ds, "id", &in, 1, LANCE_MERGE_UPSERT, NULL));
    lance_staged_info info;
    lance_staged_get_info(st, &info);
    assert_int_equal(info.rows_added, 10);
    assert_int_equal(info.rows_deleted, 5);
    lance_dataset *nd = NULL;
    assert_og_ok(lance_staged_commit(st, &nd, NULL));
    lance_staged_free(st);
    swap(f, nd);
    int64_t sum, rows;
    fx_ids(f->ds, &sum, &rows);
    assert_int_equal(rows, 15);
    assert_int_equal(sum, 14 * 15 / 2);
    uint64_t after[15];
    ids_by_key(f->ds, after, 15);
    for (int i = 0; i < 10; i++)
        assert_int_equal(before[i], after[i]);
    for (int i = 10; i < 15; i++)
        assert_true(after[i] >= 10);
    arrow_batch_free(in);
    /* Strict insert: a match fails with the key named, and nothing is written. */
    in = fx_batch(&f->schema, 14, 2);
    assert_og_error(
        lance_stage_merge_insert(&st, f->ds, "id", &in, 1, LANCE_MERGE_INSERT_ONLY, NULL),
        OG_E_KEY_CONFLICT);
    assert_string_equal(og_error_last()->key, "14");
    arrow_batch_free(in);
    in = fx_batch(&f->schema, 100, 3);
    assert_og_ok(lance_stage_merge_insert(&st, f->ds, "id", &in, 1, LANCE_MERGE_INSERT_ONLY, NULL));
    assert_og_ok(lance_staged_commit(st, &nd, NULL));
    lance_staged_free(st);
    swap(f, nd);
    fx_ids(f->ds, &sum, &rows);
    assert_int_equal(rows, 18);
    /* Duplicate keys in the input are refused. */
    arrow_batch *dup[2] = {in, in};
    assert_og_error(lance_stage_merge_insert(&st, f->ds, "id", dup, 2, LANCE_MERGE_UPSERT, NULL),
                    OG_E_BAD_REQUEST);
    arrow_batch_free(in);
    assert_og_error(lance_stage_merge_insert(&st, f->ds, "nope", &in, 0, LANCE_MERGE_UPSERT, NULL),
                    OG_E_BAD_REQUEST);
}

/* The transaction that made the dataset's version. */
static Lance__Table__Transaction *txn_of(fixture *f)
{
    Lance__Table__Transaction *t = NULL;
    assert_og_ok(lance_txn_load(f->s, "t.lance", f->ds->m, &t));
    return t;
}

/* Merge-insert that also deletes by key (a graph merge's delta): upserts, inserts and
 * deletions across two fragments in one Update, one version; deletions only; nothing to do. */
static void test_merge_insert_delete(void **state)
{
    fixture *f = *state;
    append_rows(f, 0, 10); /* fragment 0: names n0..n9 (n3 null) */
    append_rows(f, 11, 4); /* fragment 1: n11..n14 */
    uint64_t v0 = lance_dataset_version(f->ds);
    /* n4, n5 replaced, n20, n21 new; n0, n8 (fragment 0) and n11 (fragment 1) deleted; n99 is
     * nowhere, n0 is named twice */
    arrow_batch *in[2] = {fx_batch(&f->schema, 4, 2), fx_batch(&f->schema, 20, 2)};
    const char *dels[] = {"n0", "n8", "n11", "n99", "n0"};
    lance_staged *st = NULL;
    assert_og_ok(
        lance_stage_merge_insert_ex(&st, f->ds, "name", in, 2, LANCE_MERGE_UPSERT, dels, 5, NULL));
    lance_staged_info info;
    lance_staged_get_info(st, &info);
    assert_false(info.noop);
    assert_int_equal(info.rows_added, 4);
    assert_int_equal(info.rows_deleted, 2 + 3);
    lance_dataset *nd = NULL;
    assert_og_ok(lance_staged_commit(st, &nd, NULL));
    lance_staged_free(st);
    swap(f, nd);
    assert_int_equal(lance_dataset_version(f->ds), v0 + 1);
    int64_t sum, rows;
    fx_ids(f->ds, &sum, &rows);
    assert_int_equal(rows, 14 - 3 + 2);
    assert_int_equal(sum, 45 + 50 - 0 - 8 - 11 + 20 + 21);
    Lance__Table__Transaction *t = txn_of(f);
    assert_int_equal(t->operation_case, LANCE__TABLE__TRANSACTION__OPERATION_UPDATE);
    assert_int_equal(t->update->n_updated_fragments, 2); /* one deletion file each */
    assert_int_equal(t->update->n_removed_fragment_ids, 0);
    assert_true(t->update->n_new_fragments >= 1);
    lance_pb_free(t);
    /* deletions only: n1, and the rest of fragment 1, which goes */
    const char *dels2[] = {"n1", "n12", "n13", "n14"};
    assert_og_ok(lance_stage_merge_insert_ex(&st, f->ds, "name", NULL, 0, LANCE_MERGE_UPSERT, dels2,
                                             4, NULL));
    lance_staged_get_info(st, &info);
    assert_int_equal(info.rows_added, 0);
    assert_int_equal(info.rows_deleted, 4);
    assert_og_ok(lance_staged_commit(st, &nd, NULL));
    lance_staged_free(st);
    swap(f, nd);
    fx_ids(f->ds, &sum, &rows);
    assert_int_equal(rows, 13 - 4);
    t = txn_of(f);
    assert_int_equal(t->operation_case, LANCE__TABLE__TRANSACTION__OPERATION_UPDATE);
    assert_int_equal(t->update->n_removed_fragment_ids, 1);
    assert_int_equal(t->update->n_updated_fragments, 1);
    assert_int_equal(t->update->n_new_fragments, 0);
    lance_pb_free(t);
    /* nothing to delete, nothing to write: a no-op */
    const char *dels3[] = {"n1", "zzz"};
    assert_og_ok(lance_stage_merge_insert_ex(&st, f->ds, "name", NULL, 0, LANCE_MERGE_UPSERT, dels3,
                                             2, NULL));
    lance_staged_get_info(st, &info);
    assert_true(info.noop);
    lance_staged_free(st);
    /* rows and no deletions: a plain merge-insert */
    assert_og_ok(lance_stage_merge_insert_ex(&st, f->ds, "name", &in[1], 1, LANCE_MERGE_UPSERT,
                                             NULL, 0, NULL));
    lance_staged_get_info(st, &info);
    assert_int_equal(info.rows_added, 2);
    assert_int_equal(info.rows_deleted, 2);
    lance_staged_discard(st);
    /* a key both upserted and deleted; keys to delete on a key that is not text */
    const char *both[] = {"n20"};
    assert_og_error(lance_stage_merge_insert_ex(&st, f->ds, "name", &in[1], 1, LANCE_MERGE_UPSERT,
                                                both, 1, NULL),
                    OG_E_BAD_REQUEST);
    assert_null(st);
    assert_og_error(
        lance_stage_merge_insert_ex(&st, f->ds, "id", &in[1], 1, LANCE_MERGE_UPSERT, both, 1, NULL),
        OG_E_BAD_REQUEST);
    arrow_batch_free(in[0]);
    arrow_batch_free(in[1]);
}

static void test_overwrite(void **state)
{
    fixture *f = *state;
    append_rows(f, 0, 10);
    arrow_batch *in = fx_batch(&f->schema, 50, 4);
    lance_staged *st = NULL;
    assert_og_ok(lance_stage_overwrite(&st, f->ds, NULL, &in, 1, NULL));
    lance_dataset *nd = NULL;
    assert_og_ok(lance_staged_commit(st, &nd, NULL));
    lance_staged_free(st);
    arrow_batch_free(in);
    swap(f, nd);
    int64_t sum, rows;
    fx_ids(f->ds, &sum, &rows);
    assert_int_equal(rows, 4);
    assert_int_equal(sum, 50 + 51 + 52 + 53);
    /* Row ids keep growing across an overwrite. */
    uint64_t ids[60];
    lance_scan_options so = LANCE_SCAN_OPTIONS_INIT;
    so.with_row_id = true;
    arrow_batch *b = NULL;
    assert_og_ok(lance_dataset_scan_all(&b, f->ds, &so));
    for (int64_t i = 0; i < b->num_rows; i++) {
        ids[i] = arrow_array_get_uint(b->columns[3], i);
        assert_true(ids[i] >= 10);
    }
    arrow_batch_free(b);
}

static void test_conflict_exact_version(void **state)
{
    fixture *f = *state;
    arrow_batch *in = fx_batch(&f->schema, 0, 5);
    lance_staged *a = NULL, *b = NULL;
    assert_og_ok(lance_stage_append(&a, f->ds, &in, 1, NULL));
    assert_og_ok(lance_stage_append(&b, f->ds, &in, 1, NULL));
    uint64_t va = 0;
    assert_og_ok(lance_staged_commit(a, NULL, &va));
    assert_int_equal(va, 2);
    assert_og_error(lance_staged_commit(b, NULL, NULL), OG_E_CONFLICT);
    lance_staged_free(a);
    lance_staged_free(b);
    arrow_batch_free(in);
    lance_dataset *now = NULL;
    assert_og_ok(lance_dataset_open(&now, f->s, "t.lance", 0, LANCE_ACCESS_READ));
    int64_t sum, rows;
    fx_ids(now, &sum, &rows);
    assert_int_equal(rows, 5);
    lance_dataset_free(now);
}

static void test_rows_per_file_and_counts(void **state)
{
    fixture *f = *state;
    arrow_batch *in[2] = {fx_batch(&f->schema, 0, 130), fx_batch(&f->schema, 130, 120)};
    lance_write_options wo = LANCE_WRITE_OPTIONS_INIT;
    wo.max_rows_per_file = 100;
    store_counts c0, c1, d;
    store_counts_get(f->s, &c0);
    lance_staged *st = NULL;
    assert_og_ok(lance_stage_append(&st, f->ds, in, 2, &wo));
    lance_dataset *nd = NULL;
    assert_og_ok(lance_staged_commit(st, &nd, NULL));
    store_counts_get(f->s, &c1);
    lance_staged_free(st);
    swap(f, nd);
    assert_int_equal(f->ds->m->pb->n_fragments, 3);
    assert_int_equal(f->ds->m->pb->fragments[2]->physical_rows, 50);
    int64_t sum, rows;
    fx_ids(f->ds, &sum, &rows);
    assert_int_equal(rows, 250);
    assert_int_equal(sum, 249 * 250 / 2);
    /* Writes of one append commit: 3 data files, the manifest (with the transaction), the
     * hint. */
    store_counts_diff(&c1, &c0, &d);
    print_message("append commit of 3 files: %llu puts, %llu creates, %llu gets, %llu lists, "
                  "%llu fsyncs\n",
                  (unsigned long long)d.ops[STORE_OP_PUT],
                  (unsigned long long)d.ops[STORE_OP_PUT_IF_ABSENT],
                  (unsigned long long)d.ops[STORE_OP_GET], (unsigned long long)d.ops[STORE_OP_LIST],
                  (unsigned long long)d.fsyncs);
    assert_int_equal(d.ops[STORE_OP_PUT] + d.ops[STORE_OP_PUT_IF_ABSENT], 5);
    /* Staging reads nothing for an append, and the commit does not read its manifest back:
     * no listing of versions, no get. */
    assert_int_equal(d.ops[STORE_OP_LIST], 0);
    assert_int_equal(d.ops[STORE_OP_GET], 0);
    for (int i = 0; i < 2; i++)
        arrow_batch_free(in[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_create_and_reopen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_append_scan, setup, teardown),
        cmocka_unit_test_setup_teardown(test_time_travel_and_delete, setup, teardown),
        cmocka_unit_test_setup_teardown(test_update_keeps_row_ids, setup, teardown),
        cmocka_unit_test_setup_teardown(test_merge_insert, setup, teardown),
        cmocka_unit_test_setup_teardown(test_merge_insert_delete, setup, teardown),
        cmocka_unit_test_setup_teardown(test_overwrite, setup, teardown),
        cmocka_unit_test_setup_teardown(test_conflict_exact_version, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rows_per_file_and_counts, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
