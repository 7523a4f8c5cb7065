/* Commits under contention: exact-version commits, rebase under Lance's conflict rules,
 * identity lookup of a transaction's version, and threads and processes appending to one
 * table without losing a commit or duplicating a version or row id. */
#include "dataset_fixture.h"

#include <pthread.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct fixture {
    char dir[256];
    store *s;
    arrow_schema schema;
    lance_dataset *ds; /* version 2: ids 0..19 in one fragment, 20..39 in another (v3) */
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->s = test_sandbox_store(f->dir, sizeof f->dir, "commit");
    fx_schema(&f->schema);
    lance_dataset *d1 = NULL, *d2 = NULL;
    assert_og_ok(lance_dataset_create(&d1, f->s, "t.lance", &f->schema, NULL));
    arrow_batch *b = fx_batch(&f->schema, 0, 20);
    assert_og_ok(lance_dataset_append(&d2, d1, &b, 1));
    arrow_batch_free(b);
    b = fx_batch(&f->schema, 20, 20);
    assert_og_ok(lance_dataset_append(&f->ds, d2, &b, 1));
    arrow_batch_free(b);
    lance_dataset_free(d1);
    lance_dataset_free(d2);
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

static lance_staged *stage_append(fixture *f, const lance_dataset *ds, int64_t start, int64_t n)
{
    arrow_batch *b = fx_batch(&f->schema, start, n);
    lance_staged *st = NULL;
    assert_og_ok(lance_stage_append(&st, ds, &b, 1, NULL));
    arrow_batch_free(b);
    return st;
}

static lance_staged *stage_delete_lt(const lance_dataset *ds, int64_t lo, int64_t hi)
{
    lance_term t[2] = {{"id", ARROW_CMP_GE, {.kind = ARROW_INT64, .i = lo}},
                       {"id", ARROW_CMP_LT, {.kind = ARROW_INT64, .i = hi}}};
    lance_filter fl = {t, 2};
    lance_staged *st = NULL;
    assert_og_ok(lance_stage_delete(&st, ds, &fl, NULL));
    return st;
}

static const lance_commit_options REBASE = {1, LANCE_COMMIT_REBASE, 0};

static void latest(fixture *f, int64_t *sum, int64_t *rows, uint64_t *v)
{
    lance_dataset *d = NULL;
    assert_og_ok(lance_dataset_open(&d, f->s, "t.lance", 0, LANCE_ACCESS_READ));
    fx_ids(d, sum, rows);
    *v = lance_dataset_version(d);
    lance_dataset_free(d);
}

static void test_append_rebases_over_append(void **state)
{
    fixture *f = *state;
    lance_staged *a = stage_append(f, f->ds, 100, 5);
    lance_staged *b = stage_append(f, f->ds, 200, 5);
    assert_og_ok(lance_staged_commit(a, NULL, NULL));
    /* Exact mode refuses; rebase mode lands on top. */
    assert_og_error(lance_staged_commit(b, NULL, NULL), OG_E_CONFLICT);
    lance_commit_result r;
    lance_dataset *nd = NULL;
    assert_og_ok(lance_staged_commit_ex(b, &REBASE, &nd, &r));
    assert_int_equal(r.version, 5);
    assert_int_equal(r.attempts, 2);
    assert_int_equal(r.rebased_over, 1);
    int64_t sum, rows;
    fx_ids(nd, &sum, &rows);
    assert_int_equal(rows, 50);
    /* Fragment ids and row ids stay unique after the rebase. */
    const Lance__Table__Manifest *m = nd->m->pb;
    for (size_t i = 0; i < m->n_fragments; i++)
        for (size_t j = i + 1; j < m->n_fragments; j++)
            assert_true(m->fragments[i]->id != m->fragments[j]->id);
    lance_scan_options so = LANCE_SCAN_OPTIONS_INIT;
    so.with_row_id = true;
    arrow_batch *all = NULL;
    assert_og_ok(lance_dataset_scan_all(&all, nd, &so));
    for (int64_t i = 0; i < all->num_rows; i++)
        for (int64_t j = i + 1; j < all->num_rows; j++)
            assert_true(arrow_array_get_uint(all->columns[3], i) !=
                        arrow_array_get_uint(all->columns[3], j));
    arrow_batch_free(all);
    /* Identity: each transaction's version is found by its uuid. */
    lance_staged_info ia, ib;
    lance_staged_get_info(a, &ia);
    lance_staged_get_info(b, &ib);
    uint64_t va, vb;
    assert_og_ok(lance_find_txn_version(f->s, "t.lance", ia.uuid, 0, &va));
    assert_og_ok(lance_find_txn_version(f->s, "t.lance", ib.uuid, 0, &vb));
    assert_int_equal(va, 4);
    assert_int_equal(vb, 5);
    assert_og_error(
        lance_find_txn_version(f->s, "t.lance", "00000000-0000-4000-8000-000000000000", 0, &va),
        OG_E_NOT_FOUND);
    lance_dataset_free(nd);
    lance_staged_free(a);
    lance_staged_free(b);
}

static void test_delete_rules(void **state)
{
    fixture *f = *state;
    /* Deletes in different fragments rebase; in the same fragment they must be re-staged. */
    lance_staged *d1 = stage_delete_lt(f->ds, 0, 5);   /* fragment 0 */
    lance_staged *d2 = stage_delete_lt(f->ds, 20, 25); /* fragment 1 */
    lance_staged *d3 = stage_delete_lt(f->ds, 10, 12); /* fragment 0 again */
    lance_staged *ap = stage_append(f, f->ds, 300, 3);
    assert_og_ok(lance_staged_commit(d1, NULL, NULL));
    assert_og_ok(lance_staged_commit_ex(d2, &REBASE, NULL, NULL));
    assert_og_error(lance_staged_commit_ex(d3, &REBASE, NULL, NULL), OG_E_CONFLICT);
    assert_non_null(strstr(og_error_last()->message, "re-stage"));
    assert_string_equal(og_error_last()->expected, "3");
    assert_og_ok(lance_staged_commit_ex(ap, &REBASE, NULL, NULL));
    int64_t sum, rows;
    uint64_t v;
    latest(f, &sum, &rows, &v);
    assert_int_equal(v, 6);
    assert_int_equal(rows, 40 - 5 - 5 + 3);
    assert_int_equal(sum, (39 * 40) / 2 - (0 + 1 + 2 + 3 + 4) - (20 + 21 + 22 + 23 + 24) + 903);
    lance_staged_free(d1);
    lance_staged_free(d2);
    lance_staged_free(d3);
    lance_staged_free(ap);
}

static void test_overwrite_is_incompatible(void **state)
{
    fixture *f = *state;
    lance_staged *ap = stage_append(f, f->ds, 100, 1);
    arrow_batch *b = fx_batch(&f->schema, 500, 2);
    lance_staged *ow = NULL;
    assert_og_ok(lance_stage_overwrite(&ow, f->ds, NULL, &b, 1, NULL));
    arrow_batch_free(b);
    assert_og_ok(lance_staged_commit(ow, NULL, NULL));
    assert_og_error(lance_staged_commit_ex(ap, &REBASE, NULL, NULL), OG_E_CONFLICT);
    assert_non_null(strstr(og_error_last()->message, "incompatible"));
    int64_t sum, rows;
    uint64_t v;
    latest(f, &sum, &rows, &v);
    assert_int_equal(rows, 2);
    assert_int_equal(sum, 1001);
    lance_staged_free(ap);
    lance_staged_free(ow);
}

/* ---- many writers ----------------------------------------------------------------------- */

#define WRITERS 4
#define COMMITS 8

typedef struct writer {
    const char *dir;
    int id;
    int failures;
} writer;

static void *append_loop(void *p)
{
    writer *w = p;
    store *s = NULL;
    if (store_local_open(&s, w->dir) != 0) {
        w->failures++;
        print_message("writer %d: opening the store: %s\n", w->id, og_error_last()->message);
        return NULL;
    }
    arrow_schema schema;
    fx_schema(&schema);
    for (int i = 0; i < COMMITS; i++) {
        lance_dataset *ds = NULL;
        lance_staged *st = NULL;
        arrow_batch *b = fx_batch(&schema, 1000 + w->id * 100 + i * 2, 2);
        int rc = lance_dataset_open(&ds, s, "t.lance", 0, LANCE_ACCESS_WRITE);
        if (rc == 0) rc = lance_stage_append(&st, ds, &b, 1, NULL);
        lance_commit_options o = {1, LANCE_COMMIT_REBASE, 100};
        if (rc == 0) rc = lance_staged_commit_ex(st, &o, NULL, NULL);
        if (rc) {
            w->failures++;
            print_message("writer %d commit %d: %s\n", w->id, i, og_error_last()->message);
        }
        lance_staged_free(st);
        lance_dataset_free(ds);
        arrow_batch_free(b);
    }
    arrow_schema_clear(&schema);
    store_close(s);
    return NULL;
}

static void check_all_landed(fixture *f, int writers)
{
    int64_t sum, rows;
    uint64_t v;
    latest(f, &sum, &rows, &v);
    assert_int_equal(v, 3 + (uint64_t)writers * COMMITS);
    assert_int_equal(rows, 40 + writers * COMMITS * 2);
    int64_t want = (39 * 40) / 2;
    for (int w = 0; w < writers; w++)
        for (int i = 0; i < COMMITS; i++)
            want += 2 * (1000 + w * 100 + i * 2) + 1;
    assert_int_equal(sum, want);
    /* Every version exists exactly once and every row id is unique. */
    lance_dataset *d = NULL;
    assert_og_ok(lance_dataset_open(&d, f->s, "t.lance", 0, LANCE_ACCESS_READ));
    lance_scan_options so = LANCE_SCAN_OPTIONS_INIT;
    so.with_row_id = true;
    arrow_batch *all = NULL;
    assert_og_ok(lance_dataset_scan_all(&all, d, &so));
    uint8_t *seen = calloc(1000, 1);
    for (int64_t i = 0; i < all->num_rows; i++) {
        uint64_t id = arrow_array_get_uint(all->columns[3], i);
        assert_true(id < 1000);
        assert_false(seen[id]);
        seen[id] = 1;
    }
    free(seen);
    arrow_batch_free(all);
    lance_dataset_free(d);
}

static void test_threads_never_lose_a_commit(void **state)
{
    fixture *f = *state;
    pthread_t th[WRITERS];
    writer w[WRITERS];
    for (int i = 0; i < WRITERS; i++) {
        w[i] = (writer){f->dir, i, 0};
        pthread_create(&th[i], NULL, append_loop, &w[i]);
    }
    /* Join every thread before any assert: a failing assert must not tear the fixture down
     * under threads that still run. */
    for (int i = 0; i < WRITERS; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < WRITERS; i++)
        assert_int_equal(w[i].failures, 0);
    check_all_landed(f, WRITERS);
}

static void test_processes_never_lose_a_commit(void **state)
{
    fixture *f = *state;
    pid_t pids[WRITERS];
    for (int i = 0; i < WRITERS; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            writer w = {f->dir, i, 0};
            append_loop(&w);
            _exit(w.failures ? 1 : 0);
        }
    }
    for (int i = 0; i < WRITERS; i++) {
        int st;
        waitpid(pids[i], &st, 0);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    check_all_landed(f, WRITERS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_append_rebases_over_append, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete_rules, setup, teardown),
        cmocka_unit_test_setup_teardown(test_overwrite_is_incompatible, setup, teardown),
        cmocka_unit_test_setup_teardown(test_threads_never_lose_a_commit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_processes_never_lose_a_commit, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
