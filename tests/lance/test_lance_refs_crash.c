/* Crash enumeration over tag create, restore and cleanup, in both crash modes: after any
 * crash every remaining version opens and scans exactly as before, no file a remaining
 * version references is missing, and the interrupted operation can be done (again). */
#include "refs_fixture.h"
#include "crashsim.h"
#include "core/clock.h"

typedef struct ctx {
    arrow_schema schema;
    rf_snaps sn;
    char identity[LANCE_TAG_IDENTITY_LEN + 1]; /* of the tag setup_tagged made */
} ctx;

static int setup_history(store *s, void *vctx)
{
    ctx *c = vctx;
    rf_snaps_free(&c->sn);
    int rc = rf_build(s, &c->schema, RF_VERSIONS);
    if (rc == 0) rf_snaps_take(&c->sn, s, RF_VERSIONS);
    return rc;
}

/* Every version up to RF_VERSIONS that exists reads as it did. */
static int old_versions_intact(store *s, ctx *c)
{
    for (uint64_t v = 1; v <= RF_VERSIONS; v++)
        if (rf_has_version(s, v) && !rf_same(s, v, c->sn.b[v])) return 0;
    return rf_refs_present(s);
}

/* ---- tag create --------------------------------------------------------------------------- */

static int op_tag(store *s, void *vctx)
{
    (void)vctx;
    return lance_tag_create(s, RF_ROOT, "c", 2, NULL);
}

static int check_tag(store *s, void *vctx, const crashsim_point *pt)
{
    ctx *c = vctx;
    if (!old_versions_intact(s, c)) return 1;
    for (uint64_t v = 1; v <= RF_VERSIONS; v++)
        if (!rf_has_version(s, v)) return 1;
    lance_tag t;
    int rc = lance_tag_get(s, RF_ROOT, "c", &t);
    if (rc != 0 && rc != OG_E_NOT_FOUND) return 1;
    int present = rc == 0;
    if (pt->k == 0 && (!present || pt->op_rc != 0)) return 1;
    lance_tag *all = NULL;
    size_t n = 0;
    if (lance_tag_list(s, RF_ROOT, &all, &n) != 0 || n != (size_t)present) return 1;
    lance_tag_list_free(all);
    if (present) {
        lance_dataset *ds = NULL;
        if (t.version != 2 || lance_tag_checkout(&ds, s, RF_ROOT, "c", LANCE_ACCESS_READ) != 0)
            return 1;
        lance_dataset_free(ds);
    }
    /* Follow-up: the name is taken exactly when the tag is visible; delete works. */
    rc = lance_tag_create(s, RF_ROOT, "c", 3, NULL);
    if (rc != (present ? OG_E_EXISTS : 0)) return 1;
    if (lance_tag_get(s, RF_ROOT, "c", &t) != 0) return 1;
    return lance_tag_delete(s, RF_ROOT, "c", t.identity) != 0;
}

/* ---- tag delete --------------------------------------------------------------------------- */

static int setup_tagged(store *s, void *vctx)
{
    ctx *c = vctx;
    int rc = setup_history(s, vctx);
    lance_tag t;
    if (rc == 0) rc = lance_tag_create(s, RF_ROOT, "d", 4, &t);
    if (rc == 0) memcpy(c->identity, t.identity, sizeof c->identity);
    return rc;
}

static int op_tag_delete(store *s, void *vctx)
{
    ctx *c = vctx;
    return lance_tag_delete(s, RF_ROOT, "d", c->identity);
}

static int check_tag_delete(store *s, void *vctx, const crashsim_point *pt)
{
    ctx *c = vctx;
    if (!old_versions_intact(s, c)) return 1;
    lance_tag t;
    int rc = lance_tag_get(s, RF_ROOT, "d", &t);
    if (rc != 0 && rc != OG_E_NOT_FOUND) return 1;
    if (pt->k == 0 && (rc == 0 || pt->op_rc != 0)) return 1;
    if (rc == 0) { /* not deleted yet: unchanged, and deleting it again works */
        if (t.version != 4 || strcmp(t.identity, c->identity) != 0) return 1;
        if (lance_tag_delete(s, RF_ROOT, "d", c->identity) != 0) return 1;
    }
    /* The name is free again, and the old identity cannot delete the new tag. */
    if (lance_tag_create(s, RF_ROOT, "d", 4, &t) != 0) return 1;
    return lance_tag_delete(s, RF_ROOT, "d", c->identity) != OG_E_PRECONDITION_FAILED;
}

/* ---- restore ------------------------------------------------------------------------------ */

static int op_restore(store *s, void *vctx)
{
    (void)vctx;
    lance_dataset *ds = NULL, *nd = NULL;
    int rc = lance_dataset_open(&ds, s, RF_ROOT, 0, LANCE_ACCESS_WRITE);
    if (rc == 0) rc = lance_restore(&nd, ds, 3, NULL);
    lance_dataset_free(nd);
    lance_dataset_free(ds);
    return rc;
}

static int check_restore(store *s, void *vctx, const crashsim_point *pt)
{
    ctx *c = vctx;
    if (!old_versions_intact(s, c)) return 1;
    uint64_t latest;
    lance_naming nm;
    if (lance_version_latest(s, RF_ROOT, &latest, &nm) != 0) return 1;
    if (latest != RF_VERSIONS && latest != RF_VERSIONS + 1) return 1;
    if (latest == RF_VERSIONS + 1 && !rf_same(s, latest, c->sn.b[3])) return 1;
    if (pt->k == 0 && (pt->op_rc != 0 || latest != RF_VERSIONS + 1)) return 1;
    /* Follow-up: restore again on top of whatever is latest. */
    lance_dataset *ds = NULL, *nd = NULL;
    int ok = lance_dataset_open(&ds, s, RF_ROOT, 0, LANCE_ACCESS_WRITE) == 0 &&
             lance_restore(&nd, ds, 2, NULL) == 0 && lance_dataset_version(nd) == latest + 1 &&
             rf_same(s, latest + 1, c->sn.b[2]) && rf_refs_present(s);
    lance_dataset_free(nd);
    lance_dataset_free(ds);
    return !ok;
}

/* ---- cleanup ------------------------------------------------------------------------------ */

static int setup_cleanup(store *s, void *vctx)
{
    ctx *c = vctx;
    int rc = setup_history(s, vctx);
    if (rc == 0) rc = lance_tag_create(s, RF_ROOT, "keep3", 3, NULL);
    lance_dataset *ds = NULL;
    if (rc == 0) rc = lance_dataset_open(&ds, s, RF_ROOT, 0, LANCE_ACCESS_WRITE);
    if (rc == 0) { /* an abandoned attempt: its data file is referenced by nothing */
        arrow_batch *b = fx_batch(&c->schema, 900, 2);
        lance_staged *st = NULL;
        rc = lance_stage_append(&st, ds, &b, 1, NULL);
        lance_staged_free(st);
        arrow_batch_free(b);
    }
    lance_dataset_free(ds);
    return rc;
}

static lance_cleanup_options cleanup_opts(void)
{
    lance_cleanup_options o = LANCE_CLEANUP_OPTIONS_INIT;
    o.before_version = RF_VERSIONS;
    o.older_than_ms = -1;
    o.now_ms = core_wall_ms() + 2 * LANCE_CLEANUP_DEFAULT_WINDOW_MS; /* every file is old */
    return o;
}

static int op_cleanup(store *s, void *vctx)
{
    (void)vctx;
    lance_cleanup_options o = cleanup_opts();
    return lance_cleanup(s, RF_ROOT, &o, NULL);
}

static int final_state(store *s, ctx *c)
{
    for (uint64_t v = 1; v <= RF_VERSIONS; v++)
        if (rf_has_version(s, v) != (v == 3 || v == RF_VERSIONS)) return 0;
    return rf_same(s, 3, c->sn.b[3]) && rf_same(s, RF_VERSIONS, c->sn.b[RF_VERSIONS]) &&
           rf_count(s, "data/") == 3 && rf_count(s, "_deletions/") == 0 &&
           rf_count(s, "_transactions/") == 2;
}

static int check_cleanup(store *s, void *vctx, const crashsim_point *pt)
{
    ctx *c = vctx;
    if (!old_versions_intact(s, c)) return 1;
    if (!rf_has_version(s, 3) || !rf_has_version(s, RF_VERSIONS)) return 1;
    if (pt->k == 0 && (pt->op_rc != 0 || !final_state(s, c))) return 1;
    /* Running cleanup again finishes the job, and a third run deletes nothing. */
    lance_cleanup_options o = cleanup_opts();
    lance_cleanup_report r;
    if (lance_cleanup(s, RF_ROOT, &o, &r) != 0 || !final_state(s, c)) return 1;
    if (!rf_refs_present(s)) return 1;
    if (lance_cleanup(s, RF_ROOT, &o, &r) != 0) return 1;
    if (r.versions_deleted || r.data_files_deleted || r.deletion_files_deleted ||
        r.txn_files_deleted)
        return 1;
    /* And the table takes a new commit. */
    return rf_step(s, &c->schema, 3) != 0 || !rf_has_version(s, RF_VERSIONS + 1);
}

static void run(const char *name, int (*setup)(store *, void *), int (*op)(store *, void *),
                int (*check)(store *, void *, const crashsim_point *), uint64_t min_ops)
{
    ctx c;
    memset(&c, 0, sizeof c);
    fx_schema(&c.schema);
    crashsim_case cs = {name, &c, setup, op, check};
    crashsim_report r;
    crashsim_run(&cs, &r);
    print_message("%s: %llu durable store ops, %llu crash runs\n", name, (unsigned long long)r.n,
                  (unsigned long long)r.runs);
    rf_snaps_free(&c.sn);
    arrow_schema_clear(&c.schema);
    assert_true(r.n >= min_ops);
    if (r.violations) fail_msg("%s", r.first);
}

static void test_tag_create_crash(void **state)
{
    (void)state;
    run("tag create", setup_history, op_tag, check_tag, 1);
}

static void test_tag_delete_crash(void **state)
{
    (void)state;
    run("tag delete", setup_tagged, op_tag_delete, check_tag_delete, 1);
}

static void test_restore_crash(void **state)
{
    (void)state;
    run("restore", setup_history, op_restore, check_restore, 2);
}

static void test_cleanup_crash(void **state)
{
    (void)state;
    /* 5 manifests + 2 data files + 3 deletion files + 4 transaction files (v2, v4, v5, v6;
     * the create has none) at least */
    run("cleanup", setup_cleanup, op_cleanup, check_cleanup, 14);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tag_create_crash),
        cmocka_unit_test(test_tag_delete_crash),
        cmocka_unit_test(test_restore_crash),
        cmocka_unit_test(test_cleanup_crash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
