/* Crash enumeration over branch create, branch delete and a commit on a branch, in both crash
 * modes: after any crash main's versions read exactly as before, the branch is either wholly
 * there (reading as it should at every version) or invisible, and the interrupted operation
 * can be done (again). */
#include "branch_fixture.h"
#include "crashsim.h"

typedef struct ctx {
    arrow_schema schema;
    rf_snaps sn;     /* main versions 1..6 */
    arrow_batch *b6; /* the branch at 6 (delete case) */
    uint64_t rows5;
} ctx;

static int main_intact(store *s, ctx *c)
{
    uint64_t latest;
    lance_naming nm;
    if (lance_version_latest(s, RF_ROOT, &latest, &nm) != 0 || latest != 6) return 0;
    for (uint64_t v = 1; v <= 6; v++)
        if (!rf_same(s, v, c->sn.b[v])) return 0;
    return rf_refs_present(s);
}

static size_t n_branches(store *s)
{
    lance_branch *all = NULL;
    size_t n = 0;
    if (lance_branch_list(s, RF_ROOT, &all, &n) != 0) return (size_t)-1;
    lance_branch_list_free(all);
    return n;
}

static int setup_main(store *s, ctx *c)
{
    rf_snaps_free(&c->sn);
    int rc = rf_build(s, &c->schema, 6);
    if (rc == 0) rf_snaps_take(&c->sn, s, 6);
    if (rc == 0) c->rows5 = brows(s, NULL, 5);
    return rc;
}

/* An append of ids 200..204 on the branch, returning the error instead of asserting. */
static int append_on(store *s, const arrow_schema *schema, const char *branch)
{
    lance_dataset *ds = NULL;
    int rc = lance_branch_open(&ds, s, RF_ROOT, branch, 0, NULL, LANCE_ACCESS_WRITE);
    if (rc) return rc;
    arrow_batch *b = fx_batch(schema, 200, 5);
    lance_staged *st = NULL;
    rc = lance_stage_append(&st, ds, &b, 1, NULL);
    if (rc == 0) rc = lance_staged_commit(st, NULL, NULL);
    lance_staged_free(st);
    arrow_batch_free(b);
    lance_dataset_free(ds);
    return rc;
}

/* ---- create -----------------------------------------------------------------------------------
 */

static int setup_create(store *s, void *vctx)
{
    return setup_main(s, vctx);
}

static int op_create(store *s, void *vctx)
{
    (void)vctx;
    return lance_branch_create(s, RF_ROOT, "feat/x", NULL, 5, NULL);
}

static int check_create(store *s, void *vctx, const crashsim_point *pt)
{
    ctx *c = vctx;
    if (!main_intact(s, c)) return 1;
    lance_branch b;
    int rc = lance_branch_get(s, RF_ROOT, "feat/x", &b);
    if (rc != 0 && rc != OG_E_NOT_FOUND) return 1;
    int present = rc == 0;
    if (pt->k == 0 && (!present || pt->op_rc != 0)) return 1;
    if (n_branches(s) != (size_t)present) return 1;
    if (present && (b.parent_version != 5 || !bsame(s, "feat/x", 0, c->sn.b[5]))) return 1;
    /* Follow-up: the name is taken exactly when the branch is visible. */
    rc = lance_branch_create(s, RF_ROOT, "feat/x", NULL, 5, NULL);
    if (rc != (present ? OG_E_EXISTS : 0)) return 1;
    if (!bsame(s, "feat/x", 5, c->sn.b[5])) return 1;
    if (append_on(s, &c->schema, "feat/x") != 0 || brows(s, "feat/x", 6) != c->rows5 + 5) return 1;
    if (lance_branch_delete(s, RF_ROOT, "feat/x", NULL) != 0 || n_branches(s) != 0) return 1;
    return !main_intact(s, c);
}

/* ---- delete -----------------------------------------------------------------------------------
 */

static int setup_delete(store *s, void *vctx)
{
    ctx *c = vctx;
    int rc = setup_main(s, c);
    if (rc == 0) rc = lance_branch_create(s, RF_ROOT, "feat/x", NULL, 5, NULL);
    if (rc == 0) rc = append_on(s, &c->schema, "feat/x");
    arrow_batch_free(c->b6);
    c->b6 = NULL;
    if (rc == 0) rc = bscan(s, "feat/x", 6, &c->b6);
    return rc;
}

static int op_delete(store *s, void *vctx)
{
    (void)vctx;
    return lance_branch_delete(s, RF_ROOT, "feat/x", NULL);
}

static int check_delete(store *s, void *vctx, const crashsim_point *pt)
{
    ctx *c = vctx;
    if (!main_intact(s, c)) return 1;
    lance_branch b;
    int rc = lance_branch_get(s, RF_ROOT, "feat/x", &b);
    if (rc != 0 && rc != OG_E_NOT_FOUND) return 1;
    int present = rc == 0;
    if (pt->k == 0 && (present || pt->op_rc != 0)) return 1;
    if (n_branches(s) != (size_t)present) return 1;
    if (present) {
        /* Still wholly there. */
        if (!bsame(s, "feat/x", 5, c->sn.b[5]) || !bsame(s, "feat/x", 6, c->b6)) return 1;
        if (lance_branch_delete(s, RF_ROOT, "feat/x", b.identity) != 0) return 1;
    } else {
        lance_dataset *ds = NULL;
        if (lance_branch_open(&ds, s, RF_ROOT, "feat/x", 0, NULL, LANCE_ACCESS_READ) !=
            OG_E_NOT_FOUND)
            return 1;
        if (lance_branch_delete(s, RF_ROOT, "feat/x", NULL) != OG_E_NOT_FOUND) return 1;
    }
    /* Follow-up: the name can be created again, fresh (leftover files are cleared). */
    if (lance_branch_create(s, RF_ROOT, "feat/x", NULL, 5, NULL) != 0) return 1;
    lance_dataset *ds = NULL;
    if (lance_branch_open(&ds, s, RF_ROOT, "feat/x", 0, NULL, LANCE_ACCESS_READ) != 0) return 1;
    uint64_t v = lance_dataset_version(ds);
    lance_dataset_free(ds);
    if (v != 5 || !bsame(s, "feat/x", 5, c->sn.b[5])) return 1;
    return !main_intact(s, c);
}

/* ---- commit on a branch ------------------------------------------------------------------------
 */

static int setup_commit(store *s, void *vctx)
{
    ctx *c = vctx;
    int rc = setup_main(s, c);
    if (rc == 0) rc = lance_branch_create(s, RF_ROOT, "feat/x", NULL, 5, NULL);
    return rc;
}

static int op_commit(store *s, void *vctx)
{
    ctx *c = vctx;
    return append_on(s, &c->schema, "feat/x");
}

static int check_commit(store *s, void *vctx, const crashsim_point *pt)
{
    ctx *c = vctx;
    if (!main_intact(s, c)) return 1;
    lance_dataset *ds = NULL;
    if (lance_branch_open(&ds, s, RF_ROOT, "feat/x", 0, NULL, LANCE_ACCESS_READ) != 0) return 1;
    uint64_t v = lance_dataset_version(ds);
    lance_dataset_free(ds);
    if (v != 5 && v != 6) return 1;
    if (pt->k == 0 && (v != 6 || pt->op_rc != 0)) return 1;
    for (uint64_t u = 1; u <= 5; u++)
        if (!bsame(s, "feat/x", u, c->sn.b[u])) return 1;
    if (v == 6 && (brows(s, "feat/x", 6) != c->rows5 + 5 || !bhas_id(s, "feat/x", 204))) return 1;
    /* Follow-up: the next commit lands right after. */
    if (append_on(s, &c->schema, "feat/x") != 0) return 1;
    if (lance_branch_open(&ds, s, RF_ROOT, "feat/x", 0, NULL, LANCE_ACCESS_READ) != 0) return 1;
    uint64_t w = lance_dataset_version(ds);
    lance_dataset_free(ds);
    if (w != v + 1) return 1;
    return !main_intact(s, c);
}

static void run_case(const char *name, int (*setup)(store *, void *), int (*op)(store *, void *),
                     int (*check)(store *, void *, const crashsim_point *))
{
    ctx c;
    memset(&c, 0, sizeof c);
    fx_schema(&c.schema);
    crashsim_case cc = {name, &c, setup, op, check};
    crashsim_report rep;
    crashsim_run(&cc, &rep);
    print_message("%s: %llu durable ops, %llu crash runs, %llu violations %s\n", name,
                  (unsigned long long)rep.n, (unsigned long long)rep.runs,
                  (unsigned long long)rep.violations, rep.first);
    assert_true(rep.n >= 3);
    assert_int_equal(rep.runs, 3 * rep.n);
    assert_int_equal(rep.violations, 0);
    rf_snaps_free(&c.sn);
    arrow_batch_free(c.b6);
    arrow_schema_clear(&c.schema);
}

static void test_crash_create(void **state)
{
    (void)state;
    run_case("branch create", setup_create, op_create, check_create);
}

static void test_crash_delete(void **state)
{
    (void)state;
    run_case("branch delete", setup_delete, op_delete, check_delete);
}

static void test_crash_commit(void **state)
{
    (void)state;
    run_case("commit on branch", setup_commit, op_commit, check_commit);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crash_create),
        cmocka_unit_test(test_crash_delete),
        cmocka_unit_test(test_crash_commit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
