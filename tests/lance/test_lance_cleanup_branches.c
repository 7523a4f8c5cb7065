/* Cleanup with branches: the versions branches forked from (and their files) survive a
 * cleanup of the parent, so every branch still reads every one of its versions; cleaning a
 * branch directory keeps what its own child branches forked from. */
#include "dataset_fixture.h"

#include "lance/branch.h"
#include "lance/cleanup.h"

#include <string.h>

static void append(store *s, const char *branch, arrow_schema *schema, int64_t start)
{
    lance_dataset *ds = NULL, *nd = NULL;
    assert_og_ok(lance_branch_open(&ds, s, "t.lance", branch, 0, NULL, LANCE_ACCESS_WRITE));
    arrow_batch *b = fx_batch(schema, start, 10);
    assert_og_ok(lance_dataset_append(&nd, ds, &b, 1));
    arrow_batch_free(b);
    lance_dataset_free(ds);
    lance_dataset_free(nd);
}

/* Sum and count of ids of a branch at a version. */
static void read_at(store *s, const char *branch, uint64_t v, int64_t *sum, int64_t *rows)
{
    lance_dataset *ds = NULL;
    assert_og_ok(lance_branch_open(&ds, s, "t.lance", branch, v, NULL, LANCE_ACCESS_READ));
    fx_ids(ds, sum, rows);
    lance_dataset_free(ds);
}

static void test_cleanup_keeps_fork_points(void **state)
{
    (void)state;
    char dir[256];
    test_sandbox_new(dir, sizeof dir, "clbr");
    store *s = NULL;
    assert_og_ok(store_local_open(&s, dir));
    arrow_schema schema;
    fx_schema(&schema);
    lance_dataset *d = NULL;
    assert_og_ok(lance_dataset_create(&d, s, "t.lance", &schema, NULL));
    lance_dataset_free(d);
    append(s, NULL, &schema, 0);                                         /* main v2 */
    append(s, NULL, &schema, 10);                                        /* main v3 */
    assert_og_ok(lance_branch_create(s, "t.lance", "b", NULL, 2, NULL)); /* b forks at v2 */
    append(s, "b", &schema, 100);                                        /* b v3 */
    assert_og_ok(lance_branch_create(s, "t.lance", "c", "b", 3, NULL));  /* c forks b at v3 */
    append(s, "c", &schema, 200);                                        /* c v4 */
    append(s, NULL, &schema, 20);                                        /* main v4 */
    append(s, "b", &schema, 110);                                        /* b v4 */

    /* What every branch reads at every version, before cleanup. */
    struct {
        const char *br;
        uint64_t v;
        int64_t sum, rows;
    } seen[] = {{"b", 2, 0, 0}, {"b", 3, 0, 0}, {"b", 4, 0, 0},
                {"c", 3, 0, 0}, {"c", 4, 0, 0}, {NULL, 4, 0, 0}};
    size_t ns = sizeof seen / sizeof seen[0];
    for (size_t i = 0; i < ns; i++)
        read_at(s, seen[i].br, seen[i].v, &seen[i].sum, &seen[i].rows);

    /* Clean main as hard as possible: only the latest and the fork point (v2) may stay. */
    lance_cleanup_options co = LANCE_CLEANUP_OPTIONS_INIT;
    co.safety_window_ms = 0;
    co.older_than_ms = -1; /* no age criterion */
    lance_cleanup_report r;
    assert_og_ok(lance_cleanup(s, "t.lance", &co, &r));
    assert_int_equal(r.versions_deleted, 2); /* v1 and v3 */
    for (size_t i = 0; i < ns; i++) {
        int64_t sum, rows;
        read_at(s, seen[i].br, seen[i].v, &sum, &rows);
        assert_int_equal(sum, seen[i].sum);
        assert_int_equal(rows, seen[i].rows);
    }
    /* Clean branch b: c forked from b's v3, so v3 stays with b's latest, and b's first
     * version (the fork, which carries b's identity) stays too: nothing to delete. */
    append(s, "b", &schema, 120); /* b v5, so b v4 can go */
    assert_og_ok(lance_cleanup(s, "t.lance/tree/b", &co, &r));
    assert_int_equal(r.versions_deleted, 1); /* b's v4 */
    for (size_t i = 0; i < ns; i++) {
        if (seen[i].br && !strcmp(seen[i].br, "b") && seen[i].v == 4) continue;
        int64_t sum, rows;
        read_at(s, seen[i].br, seen[i].v, &sum, &rows);
        assert_int_equal(sum, seen[i].sum);
        assert_int_equal(rows, seen[i].rows);
    }
    /* Main's v3 is gone (not a fork point); the branches' and main's latest still write. */
    lance_dataset *gone = NULL;
    assert_og_error(lance_branch_open(&gone, s, "t.lance", NULL, 3, NULL, LANCE_ACCESS_READ),
                    OG_E_NOT_FOUND);
    append(s, "c", &schema, 300);
    append(s, NULL, &schema, 30);
    arrow_schema_clear(&schema);
    test_sandbox_store_done(dir, s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cleanup_keeps_fork_points),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
