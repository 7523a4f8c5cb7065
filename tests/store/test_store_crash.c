/* Crash enumeration over store-level commit sequences, in both crash modes. The invariants
 * are the ones every later layer relies on: a published object is whole, the "manifest" is
 * published only over complete data, nothing partial is ever visible, and a follow-up write
 * succeeds. A deliberately broken protocol must be caught, proving the enumeration can fail. */
#include "testutil.h"
#include "crashsim.h"

#include <stdio.h>
#include <string.h>

#define D1 "data/0001-aaaa.lance-file-contents-that-are-longer-than-a-few-bytes"
#define D2 "data/0002-bbbb.lance-file-contents-different-and-also-fairly-long"

typedef struct commit_ctx {
    unsigned data_flags; /* flags for the data puts */
    int sync_before_manifest;
    int fused; /* sync and manifest in one store_sync_put_if_absent */
} commit_ctx;

static int setup_v1(store *s, void *ctx)
{
    (void)ctx;
    return store_put_if_absent(s, "_versions/1.manifest", "v1", 2, 0);
}

/* Data files, then the manifest as create-if-absent: the shape of a Lance commit. */
static int op_commit(store *s, void *vctx)
{
    commit_ctx *c = vctx;
    int rc = store_put(s, "data/1.lance", D1, strlen(D1), c->data_flags);
    if (rc == 0) rc = store_put(s, "data/2.lance", D2, strlen(D2), c->data_flags);
    if (rc == 0 && c->fused) {
        const char *keys[] = {"data/1.lance", "data/2.lance"};
        return store_sync_put_if_absent(s, keys, 2, "_versions/2.manifest", "v2", 2, 0);
    }
    if (rc == 0 && c->sync_before_manifest) {
        const char *keys[] = {"data/1.lance", "data/2.lance"};
        rc = store_sync(s, keys, 2);
    }
    if (rc == 0) rc = store_put_if_absent(s, "_versions/2.manifest", "v2", 2, 0);
    return rc;
}

static int whole_or_absent(store *s, const char *key, const char *want, int *present)
{
    core_buf b = CORE_BUF_INIT;
    int rc = store_get(s, key, 0, STORE_ALL, &b);
    int ok;
    if (rc == OG_E_NOT_FOUND) {
        *present = 0;
        ok = 1;
    } else {
        *present = 1;
        ok = rc == 0 && b.len == strlen(want) && memcmp(b.data, want, b.len) == 0;
    }
    core_buf_free(&b);
    return ok;
}

static int no_temporaries_listed(store *s)
{
    store_list l;
    if (store_list_prefix(s, "", 0, &l) != 0) return 0;
    int ok = 1;
    for (size_t i = 0; i < l.count; i++)
        ok &= strstr(l.items[i].key, ".og-tmp-") == NULL;
    store_list_free(&l);
    return ok;
}

static int check_commit(store *s, void *vctx, const crashsim_point *pt)
{
    const commit_ctx *c = vctx;
    int v1, v2, d1, d2;
    if (!whole_or_absent(s, "_versions/1.manifest", "v1", &v1) || !v1) return 1;
    if (!whole_or_absent(s, "_versions/2.manifest", "v2", &v2)) return 1;
    int d1ok = whole_or_absent(s, "data/1.lance", D1, &d1);
    int d2ok = whole_or_absent(s, "data/2.lance", D2, &d2);
    /* The visibility point: a published manifest references only whole data. */
    if (v2 && !(d1 && d1ok && d2 && d2ok)) return 1;
    /* Fused publish: once its flush step (durable op 3) is done the data survives any crash;
     * a crash right there, before the link, leaves no manifest. */
    if (c->fused && pt->k >= 3 && !(d1 && d2)) return 1;
    if (c->fused && pt->k == 3 && v2) return 1;
    /* Without a crash the commit completes. */
    if (pt->k == 0 && (pt->op_rc != 0 || !v2)) return 1;
    if (!no_temporaries_listed(s)) return 1;
    /* A follow-up writer can always go on: the next version, or this one if it never landed. */
    const char *next = v2 ? "_versions/3.manifest" : "_versions/2.manifest";
    if (store_put_if_absent(s, next, "next", 4, 0) != 0) return 1;
    uint64_t removed;
    return store_local_reclaim_temps(s, &removed) != 0;
}

static void test_commit_durable_puts(void **state)
{
    (void)state;
    commit_ctx ctx = {0, 0, 0};
    crashsim_case c = {"commit(durable puts)", &ctx, setup_v1, op_commit, check_commit};
    crashsim_report r;
    crashsim_run(&c, &r);
    assert_int_equal(r.n, 3);
    assert_int_equal(r.runs, 9); /* a process crash and two power losses per op */
    if (r.violations) fail_msg("%s", r.first);
}

static void test_commit_batched_sync(void **state)
{
    (void)state;
    commit_ctx ctx = {STORE_F_NOSYNC, 1, 0};
    crashsim_case c = {"commit(unsynced puts + sync)", &ctx, setup_v1, op_commit, check_commit};
    crashsim_report r;
    crashsim_run(&c, &r);
    assert_int_equal(r.n, 4);
    if (r.violations) fail_msg("%s", r.first);
}

/* The fused publish: a crash between its flush and its link (durable op 3) must lose the
 * manifest and keep the data; after it, both stay. */
static void test_commit_fused_publish(void **state)
{
    (void)state;
    commit_ctx ctx = {STORE_F_NOSYNC, 0, 1};
    crashsim_case c = {"commit(unsynced puts + sync_put_if_absent)", &ctx, setup_v1, op_commit,
                       check_commit};
    crashsim_report r;
    crashsim_run(&c, &r);
    assert_int_equal(r.n, 4); /* put, put, sync, put_if_absent */
    assert_int_equal(r.runs, 12);
    if (r.violations) fail_msg("%s", r.first);
}

/* Publishing the manifest over unsynced data is wrong; power loss must expose it. */
static void test_enumeration_catches_missing_sync(void **state)
{
    (void)state;
    commit_ctx ctx = {STORE_F_NOSYNC, 0, 0};
    crashsim_case c = {"commit(no sync: broken)", &ctx, setup_v1, op_commit, check_commit};
    crashsim_report r;
    crashsim_run(&c, &r);
    assert_int_equal(r.n, 3);
    assert_true(r.violations > 0);
    assert_non_null(strstr(r.first, "power loss"));
}

/* Replacing an object: after any crash it is the old or the new, whole. */
static int setup_obj(store *s, void *ctx)
{
    (void)ctx;
    return store_put(s, "obj", "old-old-old", 11, 0);
}

static int op_replace(store *s, void *ctx)
{
    (void)ctx;
    int rc = store_put(s, "obj", "new-new-new-new", 15, 0);
    if (rc == 0) rc = store_delete(s, "other", 0);
    if (rc == 0) rc = store_put(s, "obj", "newest", 6, 0);
    return rc;
}

static int check_replace(store *s, void *ctx, const crashsim_point *pt)
{
    (void)ctx;
    core_buf b = CORE_BUF_INIT;
    int rc = store_get(s, "obj", 0, STORE_ALL, &b);
    int ok = rc == 0;
    if (ok) {
        const char *c = (const char *)b.data;
        ok = (b.len == 11 && !memcmp(c, "old-old-old", 11)) ||
             (b.len == 15 && !memcmp(c, "new-new-new-new", 15)) ||
             (b.len == 6 && !memcmp(c, "newest", 6));
        if (pt->k == 0) ok = ok && b.len == 6;
        /* Acknowledged writes survive: after op k, the k-th write is visible. */
        if (pt->k >= 3)
            ok = ok && b.len == 6;
        else if (pt->k >= 1)
            ok = ok && b.len == 15;
    }
    core_buf_free(&b);
    return !ok;
}

static void test_replace(void **state)
{
    (void)state;
    crashsim_case c = {"replace", NULL, setup_obj, op_replace, check_replace};
    crashsim_report r;
    crashsim_run(&c, &r);
    assert_int_equal(r.n, 3);
    if (r.violations) fail_msg("%s", r.first);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_commit_durable_puts),
        cmocka_unit_test(test_commit_batched_sync),
        cmocka_unit_test(test_commit_fused_publish),
        cmocka_unit_test(test_enumeration_catches_missing_sync),
        cmocka_unit_test(test_replace),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
