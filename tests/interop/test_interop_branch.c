/* Interop of native branches with lancedb (tests/interop/branch_tool.cjs):
 *  - lancedb lists and checks out the branches we create (our extra ref fields are ignored),
 *    at the fork point and after our commits on them, and commits on our branch itself;
 *  - we list and read the branches lancedb creates (base paths it wrote as absolute paths,
 *    its deletion files), commit on them, and delete them. */
#include "../lance/branch_fixture.h"
#include "interop.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* `node branch_tool.cjs ARGS`, its one-line JSON answer (the test fails otherwise). */
#define branch_tool(...) test_interop_tool("branch_tool.cjs", __VA_ARGS__)

typedef struct fixture {
    char dir[256];
    store *s;
    arrow_schema schema;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->s = test_sandbox_store(f->dir, sizeof f->dir, "interop-branch");
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

/* Our sorted ids of a branch at a version (0: latest), and its version. */
static size_t our_ids(fixture *f, const char *branch, uint64_t v, int64_t **out, uint64_t *ver)
{
    lance_dataset *ds = NULL;
    assert_og_ok(lance_branch_open(&ds, f->s, RF_ROOT, branch, v, NULL, LANCE_ACCESS_READ));
    *ver = lance_dataset_version(ds);
    const char *cols[1] = {"id"};
    lance_scan_options so = LANCE_SCAN_OPTIONS_INIT;
    so.columns = cols;
    so.n_columns = 1;
    arrow_batch *b = NULL;
    assert_og_ok(lance_dataset_scan_all(&b, ds, &so));
    size_t n = (size_t)b->num_rows;
    int64_t *ids = calloc(n ? n : 1, sizeof *ids);
    for (size_t i = 0; i < n; i++)
        ids[i] = arrow_array_get_int(b->columns[0], (int64_t)i);
    for (size_t i = 1; i < n; i++) /* insertion sort: small tables */
        for (size_t k = i; k > 0 && ids[k - 1] > ids[k]; k--) {
            int64_t t = ids[k];
            ids[k] = ids[k - 1];
            ids[k - 1] = t;
        }
    arrow_batch_free(b);
    lance_dataset_free(ds);
    *out = ids;
    return n;
}

/* lancedb's view of the branch at a version (0: latest) equals ours. */
static void expect_same(fixture *f, const char *branch, uint64_t v)
{
    json_t *j = v ? branch_tool("checkout '%s' t '%s' %llu", f->dir, branch, (unsigned long long)v)
                  : branch_tool("checkout '%s' t '%s'", f->dir, branch);
    int64_t *ids = NULL;
    uint64_t ver = 0;
    size_t n = our_ids(f, branch, v, &ids, &ver);
    assert_int_equal(test_json_int(j, "version"), ver);
    assert_int_equal(test_json_int(j, "count"), n);
    json_t *lids = json_object_get(j, "ids");
    assert_int_equal(json_array_size(lids), n);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(json_integer_value(json_array_get(lids, i)), ids[i]);
    free(ids);
    json_decref(j);
}

static void test_our_branch_in_lancedb(void **state)
{
    fixture *f = *state;
    assert_og_ok(rf_build(f->s, &f->schema, 6));
    lance_branch b;
    assert_og_ok(lance_branch_create(f->s, RF_ROOT, "feat/x", NULL, 5, &b));
    assert_og_ok(lance_branch_create(f->s, RF_ROOT, "side", NULL, 3, NULL));

    json_t *j = branch_tool("list '%s' t", f->dir);
    json_t *list = json_object_get(j, "branches");
    assert_int_equal(json_array_size(list), 2);
    json_t *e = json_array_get(list, 0);
    assert_string_equal(json_string_value(json_object_get(e, "name")), "feat/x");
    assert_true(json_is_null(json_object_get(e, "parentBranch")));
    assert_int_equal(test_json_int(e, "parentVersion"), 5);
    assert_int_equal(test_json_int(e, "manifestSize"), b.manifest_size);
    assert_string_equal(json_string_value(json_object_get(json_array_get(list, 1), "name")),
                        "side");
    json_decref(j);

    /* At the fork point, then after our commits (append; delete and update in fragments
     * inherited with deletion files). */
    expect_same(f, "feat/x", 0);
    assert_int_equal(bf_commit(f->s, &f->schema, "feat/x", 1), 6);
    assert_int_equal(bf_commit(f->s, &f->schema, "feat/x", 2), 7);
    assert_int_equal(bf_commit(f->s, &f->schema, "feat/x", 3), 8);
    for (uint64_t v = 5; v <= 8; v++)
        expect_same(f, "feat/x", v);
    expect_same(f, "feat/x", 0);

    /* lancedb commits on our branch; we read its version. */
    j = branch_tool("add '%s' t feat/x 300 303", f->dir);
    assert_int_equal(test_json_int(j, "version"), 9);
    json_decref(j);
    assert_true(bhas_id(f->s, "feat/x", 301));
    expect_same(f, "feat/x", 0);
    expect_same(f, "side", 0);

    /* Our delete; lancedb no longer lists it. */
    assert_og_ok(lance_branch_delete(f->s, RF_ROOT, "feat/x", b.identity));
    j = branch_tool("list '%s' t", f->dir);
    assert_int_equal(json_array_size(json_object_get(j, "branches")), 1);
    json_decref(j);
    /* lancedb deletes our other branch; we see it gone and can create the name afresh. */
    json_decref(branch_tool("delete '%s' t side", f->dir));
    lance_branch *all = NULL;
    size_t n = 9;
    assert_og_ok(lance_branch_list(f->s, RF_ROOT, &all, &n));
    assert_int_equal(n, 0);
    lance_branch_list_free(all);
    assert_og_ok(lance_branch_create(f->s, RF_ROOT, "side", NULL, 6, NULL));
    expect_same(f, "side", 0);
    for (uint64_t v = 1; v <= 6; v++) {
        lance_dataset *ds = NULL;
        assert_og_ok(lance_branch_open(&ds, f->s, RF_ROOT, NULL, v, NULL, LANCE_ACCESS_READ));
        lance_dataset_free(ds);
    }
}

static void test_lancedb_branch_in_c(void **state)
{
    fixture *f = *state;
    json_t *j = branch_tool("make '%s' t", f->dir);
    json_decref(j);
    lance_branch *all = NULL;
    size_t n = 0;
    assert_og_ok(lance_branch_list(f->s, RF_ROOT, &all, &n));
    assert_int_equal(n, 1);
    assert_string_equal(all[0].name, "lx/a");
    assert_string_equal(all[0].parent, "");
    assert_int_equal(all[0].parent_version, 2);
    assert_int_equal(all[0].foreign, 1);
    char identity[LANCE_BRANCH_IDENTITY_CAP];
    snprintf(identity, sizeof identity, "%s", all[0].identity);
    lance_branch_list_free(all);

    /* Every version of lancedb's branch (2 = the fork, 3 add, 4 delete), and below it. */
    for (uint64_t v = 2; v <= 4; v++)
        expect_same(f, "lx/a", v);
    assert_false(bhas_id(f->s, "lx/a", 5));
    assert_true(bhas_id(f->s, "lx/a", 0)); /* main deleted id < 3 at 3, after the fork */
    lance_dataset *ds = NULL;
    assert_og_ok(lance_branch_open(&ds, f->s, RF_ROOT, "lx/a", 1, NULL, LANCE_ACCESS_READ));
    uint64_t rows = 0;
    assert_og_ok(lance_dataset_count_rows(ds, &rows));
    assert_int_equal(rows, 10);
    lance_dataset_free(ds);

    /* We commit on lancedb's branch (its id-only schema), lancedb reads it. */
    assert_og_ok(lance_branch_open(&ds, f->s, RF_ROOT, "lx/a", 0, NULL, LANCE_ACCESS_WRITE));
    lance_term t[1] = {{"id", ARROW_CMP_EQ, {.kind = ARROW_INT64, .i = 7}}};
    lance_filter fl = {t, 1};
    lance_dataset *nd = NULL;
    assert_og_ok(lance_dataset_delete(&nd, ds, &fl));
    assert_int_equal(lance_dataset_version(nd), 5);
    lance_dataset_free(nd);
    lance_dataset_free(ds);
    expect_same(f, "lx/a", 0);
    j = branch_tool("checkout '%s' t lx/a", f->dir);
    assert_int_equal(test_json_int(j, "count"), 23); /* 24 lancedb left, minus id 7 */
    json_decref(j);

    /* We fork from lancedb's branch; lancedb reads our fork of its fork. */
    assert_og_ok(lance_branch_create(f->s, RF_ROOT, "ours", "lx/a", 4, NULL));
    expect_same(f, "ours", 0);

    /* Delete by identity: ours first (it was forked from lx/a), then lancedb's. */
    assert_og_error(lance_branch_delete(f->s, RF_ROOT, "lx/a", identity), OG_E_PRECONDITION_FAILED);
    assert_og_ok(lance_branch_delete(f->s, RF_ROOT, "ours", NULL));
    assert_og_ok(lance_branch_delete(f->s, RF_ROOT, "lx/a", identity));
    j = branch_tool("list '%s' t", f->dir);
    assert_int_equal(json_array_size(json_object_get(j, "branches")), 0);
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_our_branch_in_lancedb, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lancedb_branch_in_c, setup, teardown),
    };
    return cmocka_run_group_tests(tests, test_interop_group_setup, NULL);
}
