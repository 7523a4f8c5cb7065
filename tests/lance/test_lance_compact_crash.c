/* Crash enumeration over compaction, in both crash modes: after any crash the table opens,
 * every earlier version reads as it did, the latest reads exactly the pre-compaction content
 * (either the old version or the compacted one, never anything else), every file a version
 * references is present, and a follow-up compaction and append work. */
#include "compact_fixture.h"
#include "crashsim.h"

typedef struct ctx {
    arrow_schema schema;
    cf_snaps sn;
    size_t max_groups; /* lance_compact_options.max_groups_per_commit */
} ctx;

static int setup(store *s, void *vctx)
{
    ctx *c = vctx;
    cf_snaps_free(&c->sn);
    int rc = cf_build(s, &c->schema, true);
    if (rc == 0) rc = cf_snaps_take(&c->sn, s, CF_VERSIONS);
    return rc;
}

static lance_compact_options opts(const ctx *c)
{
    lance_compact_options o = LANCE_COMPACT_OPTIONS_INIT;
    o.target_rows_per_fragment = 40;
    o.max_groups_per_commit = c->max_groups;
    return o;
}

static int op(store *s, void *vctx)
{
    ctx *c = vctx;
    lance_dataset *ds = NULL;
    int rc = lance_dataset_open(&ds, s, CF_ROOT, 0, LANCE_ACCESS_WRITE);
    lance_compact_options o = opts(c);
    if (rc == 0) rc = lance_compact(NULL, ds, &o, NULL);
    lance_dataset_free(ds);
    return rc;
}

/* Every data and transaction file every version references is present. */
static int refs_present(store *s)
{
    lance_version_list l;
    if (lance_versions_list(s, CF_ROOT, &l) != 0) return 0;
    int ok = 1;
    for (size_t i = 0; ok && i < l.n; i++) {
        lance_manifest *m = NULL;
        if (lance_version_load(s, CF_ROOT, l.v[i], l.naming, LANCE_ACCESS_INSPECT, &m) != 0)
            return 0;
        char key[STORE_KEY_MAX];
        store_meta meta;
        const Lance__Table__Manifest *pb = m->pb;
        for (size_t f = 0; ok && f < pb->n_fragments; f++)
            for (size_t j = 0; ok && j < pb->fragments[f]->n_files; j++)
                ok = lance_key(key, CF_ROOT, "data/", pb->fragments[f]->files[j]->path) == 0 &&
                     store_head(s, key, &meta) == 0;
        if (ok && pb->transaction_file && pb->transaction_file[0])
            ok = lance_key(key, CF_ROOT, "_transactions/", pb->transaction_file) == 0 &&
                 store_head(s, key, &meta) == 0;
        lance_manifest_free(m);
    }
    lance_version_list_free(&l);
    return ok;
}

static int check(store *s, void *vctx, const crashsim_point *pt)
{
    ctx *c = vctx;
    const arrow_batch *content = c->sn.b[CF_VERSIONS];
    /* Earlier versions read as they did. */
    for (uint64_t v = 1; v <= CF_VERSIONS; v++)
        if (!cf_same(s, v, c->sn.b[v])) return 1;
    lance_version_list vl;
    if (lance_versions_list(s, CF_ROOT, &vl) != 0) return 1;
    uint64_t latest = vl.n ? vl.v[vl.n - 1] : 0;
    size_t nv = vl.n;
    lance_version_list_free(&vl);
    if (nv != latest || latest < CF_VERSIONS) return 1; /* no gap, nothing lost */
    /* Every version after CF_VERSIONS is a compaction step reading the same content. */
    for (uint64_t v = CF_VERSIONS + 1; v <= latest; v++) {
        if (!cf_same(s, v, content)) return 1;
        Lance__Table__Transaction *t = NULL;
        if (cf_txn(s, v, &t) != 0) return 1;
        int rw = t->operation_case == LANCE__TABLE__TRANSACTION__OPERATION_REWRITE;
        lance_pb_free(t);
        if (!rw) return 1;
    }
    if (!refs_present(s)) return 1;
    lance_dataset *ds = NULL;
    if (lance_dataset_open(&ds, s, CF_ROOT, 0, LANCE_ACCESS_WRITE) != 0) return 1;
    size_t frags = ds->m->pb->n_fragments;
    if (pt->k == 0 && (pt->op_rc != 0 || latest == CF_VERSIONS || frags > 4)) {
        lance_dataset_free(ds);
        return 1;
    }
    /* Follow-up: compaction runs again on whatever is latest, keeping the content ... */
    lance_compact_options o = opts(c);
    lance_compact_report r;
    lance_dataset *nd = NULL;
    int ok = lance_compact(&nd, ds, &o, &r) == 0 && cf_same(s, 0, content) &&
             lance_dataset_version(nd) == latest + r.n_commits;
    lance_dataset_free(ds);
    /* ... and an append lands on top and reads back. */
    ok = ok && cf_append(s, &c->schema, 500, 4) == 0;
    arrow_batch *b = NULL;
    ok = ok && cf_scan(s, 0, &b) == 0 && b->num_rows == content->num_rows + 4;
    arrow_batch_free(b);
    lance_dataset_free(nd);
    return !ok;
}

static void run(const char *name, size_t max_groups, uint64_t min_ops)
{
    ctx c;
    memset(&c, 0, sizeof c);
    fx_schema(&c.schema);
    c.max_groups = max_groups;
    crashsim_case cs = {name, &c, setup, op, check};
    crashsim_report r;
    crashsim_run(&cs, &r);
    print_message("%s: %llu durable store ops, %llu crash runs\n", name, (unsigned long long)r.n,
                  (unsigned long long)r.runs);
    cf_snaps_free(&c.sn);
    arrow_schema_clear(&c.schema);
    assert_true(r.n >= min_ops);
    if (r.violations) fail_msg("%s", r.first);
}

static void test_compact_crash_one_commit(void **state)
{
    (void)state;
    /* 2 data files + the transaction file synced together, then the manifest */
    run("compact (one commit)", 0, 2);
}

static void test_compact_crash_two_commits(void **state)
{
    (void)state;
    run("compact (one commit per group)", 1, 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compact_crash_one_commit),
        cmocka_unit_test(test_compact_crash_two_commits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
