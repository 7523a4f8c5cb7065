/* Native Lance branches: fork, commit on a branch, parent unaffected, reads at every version,
 * forks of forks, list/delete, create races (threads and processes), ABA detection, zombie
 * directories, refs written by lance (no identity), base path resolution. */
#include "branch_fixture.h"
#include "lance/txn.h"
#include "core/json.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct fixture {
    char dir[256];
    store *s;
    arrow_schema schema;
    rf_snaps main;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->s = test_sandbox_store(f->dir, sizeof f->dir, "branch");
    fx_schema(&f->schema);
    /* Main: 1 create, 2-3 appends, 4 delete (deletion files), 5 update, 6 delete. */
    assert_og_ok(rf_build(f->s, &f->schema, 6));
    rf_snaps_take(&f->main, f->s, 6);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    rf_snaps_free(&f->main);
    store_close(f->s);
    arrow_schema_clear(&f->schema);
    test_sandbox_done(f->dir);
    free(f);
    return 0;
}

/* One commit on a branch (see bf_commit). */
static uint64_t bcommit(fixture *f, const char *branch, int step)
{
    return bf_commit(f->s, &f->schema, branch, step);
}

static size_t count_under(store *s, const char *prefix, unsigned flags)
{
    store_list l = {0};
    int rc = store_list_prefix(s, prefix, flags, &l);
    size_t n = 0;
    for (size_t i = 0; rc == 0 && i < l.count; i++)
        n += !l.items[i].is_prefix;
    store_list_free(&l);
    if (rc) og_error_clear();
    return n;
}

/* ---- names and base paths ------------------------------------------------------------------ */

static void test_names(void **state)
{
    (void)state;
    const char *good[] = {"feat", "feat/x", "a/b/c", "release-1.0", "a_b.c/d-9"};
    const char *bad[] = {"",    "/a",  "a/", "a//b", "a..b", "x.lock",
                         "a b", "a:b", ".a", "a/.b", "ü",    "a\\b"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        assert_og_ok(lance_branch_name_check(good[i]));
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_og_error(lance_branch_name_check(bad[i]), OG_E_BAD_REQUEST);
    char longname[LANCE_BRANCH_NAME_MAX + 2];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    assert_og_error(lance_branch_name_check(longname), OG_E_BAD_REQUEST);
    char key[STORE_KEY_MAX];
    assert_og_ok(lance_branch_root(key, RF_ROOT, "feat/x"));
    assert_string_equal(key, RF_ROOT "/tree/feat/x");
    assert_og_ok(lance_branch_root(key, RF_ROOT, NULL));
    assert_string_equal(key, RF_ROOT);
}

static void test_base_paths(void **state)
{
    fixture *f = *state;
    char key[STORE_KEY_MAX], path[PATH_MAX + 64], real[PATH_MAX];
    assert_non_null(realpath(f->dir, real));
    snprintf(path, sizeof path, "%s/" RF_ROOT, real);
    assert_og_ok(lance_base_path_key(f->s, path, key));
    assert_string_equal(key, RF_ROOT);
    snprintf(path, sizeof path, "file://%s/" RF_ROOT "/tree/a/", real);
    assert_og_ok(lance_base_path_key(f->s, path, key));
    assert_string_equal(key, RF_ROOT "/tree/a");
    snprintf(path, sizeof path, "%s/", f->dir);
    assert_og_ok(lance_base_path_key(f->s, path, key));
    assert_string_equal(key, "");
    assert_og_ok(lance_base_path_key(f->s, "x/t.lance", key));
    assert_string_equal(key, "x/t.lance");
    /* Outside the store, or a sibling whose name merely starts like the root. */
    assert_og_error(lance_base_path_key(f->s, "/nonexistent-og/t.lance", key), OG_E_UNSUPPORTED);
    snprintf(path, sizeof path, "%sX/t.lance", real);
    assert_og_error(lance_base_path_key(f->s, path, key), OG_E_UNSUPPORTED);
    assert_og_error(lance_base_path_key(f->s, "a/../b", key), OG_E_UNSUPPORTED);
}

/* ---- fork, commit, read ---------------------------------------------------------------------- */

static void test_fork_layout(void **state)
{
    fixture *f = *state;
    lance_branch b;
    assert_og_ok(lance_branch_create(f->s, RF_ROOT, "feat/x", NULL, 5, &b));
    assert_string_equal(b.name, "feat/x");
    assert_string_equal(b.parent, "");
    assert_int_equal(b.parent_version, 5);
    assert_int_equal(b.foreign, 0);
    assert_int_equal(strlen(b.identity), LANCE_UUID_LEN);
    assert_true(b.create_at > 0);
    /* The ref, with lance's fields. */
    core_buf raw = CORE_BUF_INIT;
    assert_og_ok(store_get(f->s, RF_ROOT "/_refs/branches/feat%2Fx.json", 0, STORE_ALL, &raw));
    json_t *j = NULL;
    assert_og_ok(core_json_parse(&j, (const char *)raw.data, raw.len, "ref"));
    assert_true(json_is_null(json_object_get(j, "parentBranch")));
    assert_int_equal(json_integer_value(json_object_get(j, "parentVersion")), 5);
    lance_manifest *m5 = NULL;
    assert_og_ok(
        lance_version_load(f->s, RF_ROOT, 5, LANCE_NAMING_UNKNOWN, LANCE_ACCESS_INSPECT, &m5));
    assert_int_equal(json_integer_value(json_object_get(j, "manifestSize")), m5->file_size);
    json_t *lin = json_object_get(j, "ogLineage");
    assert_int_equal(json_array_size(lin), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(lin, 0), "identity")),
                        b.identity);
    json_decref(j);
    core_buf_free(&raw);

    /* The first manifest: version 5 under tree/feat/x, a shallow clone of main's. */
    lance_version_list l;
    assert_og_ok(lance_versions_list(f->s, RF_ROOT "/tree/feat/x", &l));
    assert_int_equal(l.n, 1);
    assert_int_equal(l.v[0], 5);
    lance_version_list_free(&l);
    lance_manifest *m = NULL;
    assert_og_ok(lance_version_load(f->s, RF_ROOT "/tree/feat/x", 5, LANCE_NAMING_UNKNOWN,
                                    LANCE_ACCESS_READ, &m));
    const Lance__Table__Manifest *pb = m->pb;
    assert_string_equal(pb->branch, "feat/x");
    assert_int_equal(pb->n_base_paths, 1);
    assert_int_equal(pb->base_paths[0]->id, 0);
    assert_true(pb->base_paths[0]->is_dataset_root);
    assert_null(pb->base_paths[0]->name);
    char real[PATH_MAX], want[PATH_MAX + 32];
    assert_non_null(realpath(f->dir, real));
    snprintf(want, sizeof want, "%s/" RF_ROOT, real);
    assert_string_equal(pb->base_paths[0]->path, want);
    assert_int_equal(pb->reader_feature_flags & (LANCE_FLAG_BASE_PATHS | LANCE_FLAG_DELETION_FILES),
                     LANCE_FLAG_BASE_PATHS | LANCE_FLAG_DELETION_FILES);
    assert_int_equal(pb->n_fragments, m5->pb->n_fragments);
    int dels = 0;
    for (size_t i = 0; i < pb->n_fragments; i++) {
        for (size_t k = 0; k < pb->fragments[i]->n_files; k++) {
            assert_true(pb->fragments[i]->files[k]->has_base_id);
            assert_int_equal(pb->fragments[i]->files[k]->base_id, 0);
            assert_string_equal(pb->fragments[i]->files[k]->path,
                                m5->pb->fragments[i]->files[k]->path);
        }
        if (pb->fragments[i]->deletion_file) {
            dels++;
            assert_true(pb->fragments[i]->deletion_file->has_base_id);
        }
    }
    assert_true(dels > 0);
    assert_int_equal(pb->max_fragment_id, m5->pb->max_fragment_id);
    assert_int_equal(pb->next_row_id, m5->pb->next_row_id);
    Lance__Table__Transaction *t = NULL;
    assert_og_ok(lance_txn_load(f->s, RF_ROOT "/tree/feat/x", m, &t));
    assert_int_equal(t->operation_case, LANCE__TABLE__TRANSACTION__OPERATION_CLONE);
    assert_string_equal(t->uuid, b.identity);
    assert_int_equal(t->read_version, 5);
    assert_true(t->clone->is_shallow);
    assert_int_equal(t->clone->ref_version, 5);
    assert_string_equal(t->clone->ref_path, want);
    assert_string_equal(t->clone->branch_name, "feat/x");
    assert_null(t->clone->ref_name);
    lance_pb_free(t);
    lance_manifest_free(m);
    lance_manifest_free(m5);
    /* Nothing was written into main's own directories. */
    assert_int_equal(lance_version_latest(f->s, RF_ROOT, &(uint64_t){0}, &(lance_naming){0}), 0);
    assert_true(rf_same(f->s, 6, f->main.b[6]));
}

static void test_commit_on_branch(void **state)
{
    fixture *f = *state;
    size_t main_data = count_under(f->s, RF_ROOT "/data/", STORE_LIST_DELIMITED);
    assert_og_ok(lance_branch_create(f->s, RF_ROOT, "feat/x", NULL, 5, NULL));
    /* Reading: at the fork and below it, the branch is main. */
    for (uint64_t v = 1; v <= 5; v++)
        assert_true(bsame(f->s, "feat/x", v, f->main.b[v]));
    lance_dataset *ds = NULL;
    assert_og_error(lance_branch_open(&ds, f->s, RF_ROOT, "feat/x", 3, NULL, LANCE_ACCESS_WRITE),
                    OG_E_BAD_REQUEST);
    assert_og_error(lance_branch_open(&ds, f->s, RF_ROOT, "feat/x", 9, NULL, LANCE_ACCESS_READ),
                    OG_E_NOT_FOUND);

    uint64_t rows5 = brows(f->s, "feat/x", 5);
    assert_int_equal(bcommit(f, "feat/x", 1), 6); /* versions continue from the fork */
    assert_int_equal(bcommit(f, "feat/x", 2), 7); /* deletes in an inherited fragment */
    assert_int_equal(bcommit(f, "feat/x", 3), 8); /* update: rewrites a row */
    assert_int_equal(brows(f->s, "feat/x", 6), rows5 + 5);
    assert_int_equal(brows(f->s, "feat/x", 7), rows5 + 4);
    assert_int_equal(brows(f->s, "feat/x", 8), rows5 + 4);
    assert_true(bhas_id(f->s, "feat/x", 200));
    assert_false(bhas_id(f->s, "feat/x", 11));
    assert_true(bhas_id(f->s, "feat/x", 13));
    /* New files went under tree/feat/x/, main's directories are untouched. */
    assert_true(count_under(f->s, RF_ROOT "/tree/feat/x/data/", STORE_LIST_DELIMITED) >= 2);
    assert_true(count_under(f->s, RF_ROOT "/tree/feat/x/_deletions/", STORE_LIST_DELIMITED) >= 1);
    assert_int_equal(count_under(f->s, RF_ROOT "/data/", STORE_LIST_DELIMITED), main_data);
    uint64_t latest;
    lance_naming nm;
    assert_og_ok(lance_version_latest(f->s, RF_ROOT, &latest, &nm));
    assert_int_equal(latest, 6);
    for (uint64_t v = 1; v <= 6; v++)
        assert_true(rf_same(f->s, v, f->main.b[v]));
    /* Main at 6 deleted ids 15..17; the branch forked at 5 still has them. */
    assert_true(bhas_id(f->s, "feat/x", 16));

    /* Both move on independently: main overwrites everything; the branch reads the same. */
    arrow_batch *snap[9] = {0};
    for (uint64_t v = 1; v <= 8; v++)
        assert_og_ok(bscan(f->s, "feat/x", v, &snap[v]));
    assert_og_ok(rf_step(f->s, &f->schema, 7));
    for (uint64_t v = 1; v <= 8; v++)
        assert_true(bsame(f->s, "feat/x", v, snap[v]));
    for (uint64_t v = 1; v <= 6; v++)
        assert_true(rf_same(f->s, v, f->main.b[v]));
    /* Main as a branch name (NULL / ""): the table itself. */
    assert_true(bsame(f->s, NULL, 6, f->main.b[6]));
    assert_true(bsame(f->s, "", 3, f->main.b[3]));

    /* A fork of the fork: two base paths; reads through both. */
    lance_branch c;
    assert_og_ok(lance_branch_create(f->s, RF_ROOT, "feat/x/y", "feat/x", 7, &c));
    assert_string_equal(c.parent, "feat/x");
    assert_int_equal(c.parent_version, 7);
    lance_branch px;
    assert_og_ok(lance_branch_get(f->s, RF_ROOT, "feat/x", &px));
    assert_string_equal(c.parent_identity, px.identity);
    lance_manifest *m = NULL;
    assert_og_ok(lance_version_load(f->s, RF_ROOT "/tree/feat/x/y", 7, LANCE_NAMING_UNKNOWN,
                                    LANCE_ACCESS_INSPECT, &m));
    assert_int_equal(m->pb->n_base_paths, 2);
    assert_int_equal(m->pb->base_paths[1]->id, 1);
    assert_string_equal(m->pb->base_paths[1]->name, "feat/x");
    lance_manifest_free(m);
    for (uint64_t v = 1; v <= 7; v++)
        assert_true(bsame(f->s, "feat/x/y", v, snap[v]));
    assert_int_equal(bcommit(f, "feat/x/y", 3), 8);
    assert_true(bsame(f->s, "feat/x", 8, snap[8]));
    /* The fork of a fork at version 3 (below feat/x's fork point) reads main's version 3. */
    assert_og_ok(lance_branch_create(f->s, RF_ROOT, "old", "feat/x", 3, NULL));
    assert_true(bsame(f->s, "old", 3, f->main.b[3]));
    /* A branch that others were forked from cannot be deleted. */
    assert_og_error(lance_branch_delete(f->s, RF_ROOT, "feat/x", NULL), OG_E_PRECONDITION_FAILED);
    assert_og_ok(lance_branch_delete(f->s, RF_ROOT, "feat/x/y", NULL));
    assert_og_ok(lance_branch_delete(f->s, RF_ROOT, "old", NULL));
    assert_og_ok(lance_branch_delete(f->s, RF_ROOT, "feat/x", NULL));
    for (uint64_t v = 1; v <= 8; v++)
        arrow_batch_free(snap[v]);
}

static void test_list_delete(void **state)
{
    fixture *f = *state;
    lance_branch *all = NULL;
    size_t n = 99;
    assert_og_ok(lance_branch_list(f->s, RF_ROOT, &all, &n));
    assert_int_equal(n, 0);
    lance_branch_list_free(all);
    assert_og_ok(lance_branch_create(f->s, RF_ROOT, "b/c", NULL, 2, NULL));
    assert_og_ok(lance_branch_create(f->s, RF_ROOT, "a", NULL, 0, NULL)); /* 0: latest */
    assert_og_ok(lance_branch_create(f->s, RF_ROOT, "b", "b/c", 2, NULL));
    assert_og_ok(lance_branch_list(f->s, RF_ROOT, &all, &n));
    assert_int_equal(n, 3);
    assert_string_equal(all[0].name, "a");
    assert_int_equal(all[0].parent_version, 6);
    assert_string_equal(all[1].name, "b");
    assert_string_equal(all[1].parent, "b/c");
    assert_string_equal(all[2].name, "b/c");
    lance_branch_list_free(all);
    assert_true(bsame(f->s, "a", 6, f->main.b[6]));
    assert_true(bsame(f->s, "b", 2, f->main.b[2]));

    /* Delete: the ref, then the branch's own files, but not the nested branch's. */
    bcommit(f, "b", 1);
    assert_og_error(lance_branch_delete(f->s, RF_ROOT, "b/c", NULL), OG_E_PRECONDITION_FAILED);
    assert_og_ok(lance_branch_delete(f->s, RF_ROOT, "b", NULL));
    assert_int_equal(count_under(f->s, RF_ROOT "/tree/b/_versions/", STORE_LIST_DELIMITED), 0);
    assert_int_equal(count_under(f->s, RF_ROOT "/tree/b/data/", STORE_LIST_DELIMITED), 0);
    lance_version_list vl;
    assert_og_ok(lance_versions_list(f->s, RF_ROOT "/tree/b/c", &vl));
    assert_int_equal(vl.n, 1); /* the nested branch keeps its manifest */
    lance_version_list_free(&vl);
    assert_true(bsame(f->s, "b/c", 2, f->main.b[2]));
    assert_og_ok(lance_branch_list(f->s, RF_ROOT, &all, &n));
    assert_int_equal(n, 2);
    lance_branch_list_free(all);
    lance_dataset *ds = NULL;
    assert_og_error(lance_branch_open(&ds, f->s, RF_ROOT, "b", 0, NULL, LANCE_ACCESS_READ),
                    OG_E_NOT_FOUND);
    assert_og_error(lance_branch_delete(f->s, RF_ROOT, "b", NULL), OG_E_NOT_FOUND);
    assert_og_error(lance_branch_get(f->s, RF_ROOT, "b", &(lance_branch){0}), OG_E_NOT_FOUND);
    assert_og_ok(lance_branch_delete(f->s, RF_ROOT, "b/c", NULL));
    assert_og_ok(lance_branch_delete(f->s, RF_ROOT, "a", NULL));
    assert_og_ok(lance_branch_list(f->s, RF_ROOT, &all, &n));
    assert_int_equal(n, 0);
    lance_branch_list_free(all);
    for (uint64_t v = 1; v <= 6; v++)
        assert_true(rf_same(f->s, v, f->main.b[v]));
}

static void test_refusals(void **state)
{
    fixture *f = *state;
    assert_og_ok(lance_branch_create(f->s, RF_ROOT, "x", NULL, 3, NULL));
    assert_og_error(lance_branch_create(f->s, RF_ROOT, "x", NULL, 4, NULL), OG_E_EXISTS);
    assert_og_error(lance_branch_create(f->s, RF_ROOT, "y", "nope", 1, NULL), OG_E_NOT_FOUND);
    assert_og_error(lance_branch_create(f->s, RF_ROOT, "y", NULL, 99, NULL), OG_E_NOT_FOUND);
    assert_og_error(lance_branch_create(f->s, RF_ROOT, "y", "x", 99, NULL), OG_E_NOT_FOUND);
    assert_og_error(lance_branch_create(f->s, RF_ROOT, "a b", NULL, 1, NULL), OG_E_BAD_REQUEST);
    assert_og_error(lance_branch_create(f->s, RF_ROOT, "x", "x", 1, NULL), OG_E_BAD_REQUEST);
    assert_og_error(lance_branch_create(f->s, "nosuch.lance", "y", NULL, 1, NULL), OG_E_NOT_FOUND);
    lance_branch *all = NULL;
    size_t n = 0;
    assert_og_ok(lance_branch_list(f->s, RF_ROOT, &all, &n));
    assert_int_equal(n, 1); /* no failed create left a ref */
    lance_branch_list_free(all);
    /* A damaged ref is reported, typed. */
    assert_og_ok(store_put(f->s, RF_ROOT "/_refs/branches/bad.json", "{\"parentVersion\":", 17, 0));
    assert_og_error(lance_branch_get(f->s, RF_ROOT, "bad", &(lance_branch){0}), OG_E_CORRUPT);
    assert_og_error(lance_branch_list(f->s, RF_ROOT, &all, &n), OG_E_CORRUPT);
    assert_og_ok(
        store_put(f->s, RF_ROOT "/_refs/branches/bad.json", "{\"parentVersion\":2}", 19, 0));
    assert_og_error(lance_branch_get(f->s, RF_ROOT, "bad", &(lance_branch){0}), OG_E_CORRUPT);
}

/* ---- identity ---------------------------------------------------------------------------------
 */

static void test_aba(void **state)
{
    fixture *f = *state;
    lance_branch b1, b2;
    assert_og_ok(lance_branch_create(f->s, RF_ROOT, "x", NULL, 3, &b1));
    bcommit(f, "x", 1);
    assert_og_ok(lance_branch_delete(f->s, RF_ROOT, "x", b1.identity));
    /* Same name, same version: a new incarnation with a new identity and no old versions. */
    assert_og_ok(lance_branch_create(f->s, RF_ROOT, "x", NULL, 3, &b2));
    assert_int_equal(b2.parent_version, b1.parent_version);
    assert_string_not_equal(b1.identity, b2.identity);
    lance_dataset *ds = NULL;
    assert_og_error(lance_branch_open(&ds, f->s, RF_ROOT, "x", 4, NULL, LANCE_ACCESS_READ),
                    OG_E_NOT_FOUND);
    assert_true(bsame(f->s, "x", 0, f->main.b[3]));
    /* A holder of the old identity cannot delete or open the new branch. */
    assert_og_error(lance_branch_delete(f->s, RF_ROOT, "x", b1.identity), OG_E_PRECONDITION_FAILED);
    const og_error *e = og_error_last();
    assert_string_equal(e->expected, b1.identity);
    assert_string_equal(e->actual, b2.identity);
    assert_og_error(lance_branch_open(&ds, f->s, RF_ROOT, "x", 0, b1.identity, LANCE_ACCESS_READ),
                    OG_E_PRECONDITION_FAILED);
    assert_og_ok(lance_branch_open(&ds, f->s, RF_ROOT, "x", 0, b2.identity, LANCE_ACCESS_READ));
    lance_dataset_free(ds);
    assert_og_ok(lance_branch_get(f->s, RF_ROOT, "x", &b1));
    assert_string_equal(b1.identity, b2.identity);
    assert_og_ok(lance_branch_delete(f->s, RF_ROOT, "x", b2.identity));
}

/* A write staged on an old incarnation cannot publish into a re-created branch. */
static void test_aba_commit(void **state)
{
    fixture *f = *state;
    lance_branch b1, b2;
    assert_og_ok(lance_branch_create(f->s, RF_ROOT, "x", NULL, 3, &b1));
    assert_int_equal(bcommit(f, "x", 1), 4);
    lance_dataset *ds = NULL;
    assert_og_ok(lance_branch_open(&ds, f->s, RF_ROOT, "x", 0, b1.identity, LANCE_ACCESS_WRITE));
    arrow_batch *b = fx_batch(&f->schema, 500, 3);
    lance_staged *st = NULL, *st2 = NULL;
    assert_og_ok(lance_stage_append(&st, ds, &b, 1, NULL));
    assert_og_ok(lance_stage_append(&st2, ds, &b, 1, NULL));
    assert_og_ok(lance_branch_delete(f->s, RF_ROOT, "x", b1.identity));
    /* Re-created at the old write's read version (the worst case: version 4 exists again). */
    assert_og_ok(lance_branch_create(f->s, RF_ROOT, "x", NULL, 4, &b2));
    assert_og_error(lance_staged_commit(st, NULL, NULL), OG_E_CONFLICT);
    lance_commit_options co = LANCE_COMMIT_OPTIONS_INIT;
    co.mode = LANCE_COMMIT_REBASE;
    assert_og_error(lance_staged_commit_ex(st2, &co, NULL, NULL), OG_E_CONFLICT);
    lance_staged_free(st);
    lance_staged_free(st2);
    arrow_batch_free(b);
    lance_dataset_free(ds);
    /* Nothing was published: the new incarnation is main's version 4, untouched. */
    assert_og_ok(lance_branch_open(&ds, f->s, RF_ROOT, "x", 0, b2.identity, LANCE_ACCESS_READ));
    assert_int_equal(lance_dataset_version(ds), 4);
    lance_dataset_free(ds);
    assert_true(bsame(f->s, "x", 0, f->main.b[4]));
    /* A fresh handle commits normally. */
    assert_int_equal(bcommit(f, "x", 1), 5);
}

/* The directory belongs to another incarnation than the ref: a reader notices. */
static void test_incarnation_mismatch(void **state)
{
    fixture *f = *state;
    lance_branch b;
    assert_og_ok(lance_branch_create(f->s, RF_ROOT, "x", NULL, 3, &b));
    const char *key = RF_ROOT "/_refs/branches/x.json";
    core_buf raw = CORE_BUF_INIT;
    assert_og_ok(store_get(f->s, key, 0, STORE_ALL, &raw));
    json_t *j = NULL;
    assert_og_ok(core_json_parse(&j, (const char *)raw.data, raw.len, "ref"));
    json_object_set_new(j, "ogIdentity", json_string("00000000-0000-4000-8000-000000000000"));
    core_buf_clear(&raw);
    assert_og_ok(core_json_dump(j, &raw));
    json_decref(j);
    assert_og_ok(store_put(f->s, key, raw.data, raw.len, 0));
    core_buf_free(&raw);
    lance_dataset *ds = NULL;
    assert_og_error(lance_branch_open(&ds, f->s, RF_ROOT, "x", 0, NULL, LANCE_ACCESS_READ),
                    OG_E_CONFLICT);
    /* Below the fork the parent is read, which is not in question. */
    assert_true(bsame(f->s, "x", 2, f->main.b[2]));
}

/* A ref as lance writes it (no identity): listed, opened, deleted by hash identity. */
static void test_foreign_ref(void **state)
{
    fixture *f = *state;
    assert_og_ok(lance_branch_create(f->s, RF_ROOT, "lx", NULL, 4, NULL));
    const char *key = RF_ROOT "/_refs/branches/lx.json";
    const char *minimal = "{\"parentBranch\":null,\"parentVersion\":4,\"createAt\":1700000000,"
                          "\"manifestSize\":851}";
    assert_og_ok(store_put(f->s, key, minimal, strlen(minimal), 0));
    lance_branch b;
    assert_og_ok(lance_branch_get(f->s, RF_ROOT, "lx", &b));
    assert_int_equal(b.foreign, 1);
    assert_int_equal(b.identity[0], 'h');
    assert_int_equal(b.create_at, 1700000000);
    assert_true(bsame(f->s, "lx", 4, f->main.b[4]));
    assert_og_error(lance_branch_delete(f->s, RF_ROOT, "lx", "h0000000000000000"),
                    OG_E_PRECONDITION_FAILED);
    assert_og_ok(lance_branch_delete(f->s, RF_ROOT, "lx", b.identity));
}

/* Files left by a crashed create (manifest, no ref) or delete (ref gone, files not): invisible,
 * and a new create of the name clears them. */
static void test_zombie(void **state)
{
    fixture *f = *state;
    assert_og_ok(lance_branch_create(f->s, RF_ROOT, "z", NULL, 5, NULL));
    bcommit(f, "z", 1);
    bcommit(f, "z", 2);
    assert_og_ok(store_delete(f->s, RF_ROOT "/_refs/branches/z.json", 0)); /* crash mid-delete */
    lance_branch *all = NULL;
    size_t n = 9;
    assert_og_ok(lance_branch_list(f->s, RF_ROOT, &all, &n));
    assert_int_equal(n, 0);
    lance_branch_list_free(all);
    lance_dataset *ds = NULL;
    assert_og_error(lance_branch_open(&ds, f->s, RF_ROOT, "z", 0, NULL, LANCE_ACCESS_READ),
                    OG_E_NOT_FOUND);
    assert_og_ok(lance_branch_create(f->s, RF_ROOT, "z", NULL, 5, NULL));
    assert_og_ok(lance_branch_open(&ds, f->s, RF_ROOT, "z", 0, NULL, LANCE_ACCESS_READ));
    assert_int_equal(lance_dataset_version(ds), 5); /* the zombie's 6 and 7 are gone */
    lance_dataset_free(ds);
    assert_true(bsame(f->s, "z", 5, f->main.b[5]));
    assert_int_equal(count_under(f->s, RF_ROOT "/tree/z/data/", STORE_LIST_DELIMITED), 0);
}

/* Store failures: typed errors, nothing half-visible, and the operation can be redone. */
static void test_failures(void **state)
{
    fixture *f = *state;
    store *fs = NULL;
    assert_og_ok(store_fault_open(&fs, f->s, 0));
    unsigned writes = STORE_OP_BIT(STORE_OP_PUT) | STORE_OP_BIT(STORE_OP_PUT_IF_ABSENT);
    /* Create: each of its writes failing (manifest, hint is best effort, ref). */
    int failed = 0;
    for (uint64_t nth = 1; nth <= 3; nth++) {
        store_fault_fail_nth(fs, nth, writes, STORE_FAULT_EIO);
        int rc = lance_branch_create(fs, RF_ROOT, "x", NULL, 4, NULL);
        store_fault_fail_nth(fs, 0, 0, STORE_FAULT_NONE);
        lance_branch b;
        int got = lance_branch_get(f->s, RF_ROOT, "x", &b);
        if (rc == 0) {
            assert_og_ok(got);
        } else {
            assert_int_equal(rc, OG_E_STORAGE);
            assert_int_equal(got, OG_E_NOT_FOUND);
            failed++;
            assert_og_ok(lance_branch_create(f->s, RF_ROOT, "x", NULL, 4, NULL));
        }
        assert_true(bsame(f->s, "x", 0, f->main.b[4]));
        assert_og_ok(lance_branch_delete(f->s, RF_ROOT, "x", NULL));
    }
    assert_int_equal(failed, 2); /* all but the best-effort hint */
    /* Delete: the ref's removal failing keeps the branch; a file's removal failing does not
     * fail the delete, and the leftovers do not hurt the next create. */
    assert_og_ok(lance_branch_create(f->s, RF_ROOT, "x", NULL, 4, NULL));
    bcommit(f, "x", 1);
    store_fault_fail_nth(fs, 1, STORE_OP_BIT(STORE_OP_DELETE), STORE_FAULT_EIO);
    assert_og_error(lance_branch_delete(fs, RF_ROOT, "x", NULL), OG_E_STORAGE);
    assert_int_equal(brows(f->s, "x", 5), brows(f->s, NULL, 4) + 5);
    store_fault_fail_nth(fs, 2, STORE_OP_BIT(STORE_OP_DELETE), STORE_FAULT_EIO);
    assert_og_ok(lance_branch_delete(fs, RF_ROOT, "x", NULL));
    store_fault_fail_nth(fs, 0, 0, STORE_FAULT_NONE);
    assert_og_error(lance_branch_get(f->s, RF_ROOT, "x", &(lance_branch){0}), OG_E_NOT_FOUND);
    assert_og_ok(lance_branch_create(f->s, RF_ROOT, "x", NULL, 4, NULL));
    assert_true(bsame(f->s, "x", 0, f->main.b[4]));
    lance_dataset *ds = NULL;
    assert_og_error(lance_branch_open(&ds, f->s, RF_ROOT, "x", 5, NULL, LANCE_ACCESS_READ),
                    OG_E_NOT_FOUND);
    store_close(fs);
}

/* ---- races ----------------------------------------------------------------------------------- */

typedef struct racer {
    const char *dir;
    uint64_t version;
    pthread_barrier_t *go;
    int rc;
} racer;

static void *race_create(void *arg)
{
    racer *r = arg;
    store *s = NULL;
    r->rc = store_local_open(&s, r->dir);
    pthread_barrier_wait(r->go);
    if (r->rc == 0) r->rc = lance_branch_create(s, RF_ROOT, "race", NULL, r->version, NULL);
    store_close(s);
    return NULL;
}

static void test_race_threads(void **state)
{
    fixture *f = *state;
    enum { THREADS = 6 };
    for (int round = 0; round < 3; round++) {
        pthread_barrier_t go;
        pthread_barrier_init(&go, NULL, THREADS);
        pthread_t th[THREADS];
        racer r[THREADS];
        for (int i = 0; i < THREADS; i++) {
            r[i] = (racer){f->dir, 1 + (uint64_t)(i % 6), &go, -99};
            pthread_create(&th[i], NULL, race_create, &r[i]);
        }
        int wins = 0, winner = -1;
        for (int i = 0; i < THREADS; i++) {
            pthread_join(th[i], NULL);
            if (r[i].rc == 0)
                wins++, winner = i;
            else
                assert_int_equal(r[i].rc, OG_E_EXISTS);
        }
        pthread_barrier_destroy(&go);
        assert_int_equal(wins, 1);
        lance_branch b;
        assert_og_ok(lance_branch_get(f->s, RF_ROOT, "race", &b));
        assert_int_equal(b.parent_version, r[winner].version);
        assert_true(bsame(f->s, "race", 0, f->main.b[r[winner].version]));
        assert_og_ok(lance_branch_delete(f->s, RF_ROOT, "race", b.identity));
    }
}

static void test_race_processes(void **state)
{
    fixture *f = *state;
    enum { PROCS = 4 };
    int pipefd[2];
    assert_int_equal(pipe(pipefd), 0);
    pid_t pids[PROCS];
    for (int i = 0; i < PROCS; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) {
            close(pipefd[1]);
            char c;
            if (read(pipefd[0], &c, 1) != 1) _exit(1);
            store *s = NULL;
            if (store_local_open(&s, f->dir) != 0) _exit(1);
            int rc = lance_branch_create(s, RF_ROOT, "proc", NULL, 2 + (uint64_t)i, NULL);
            store_close(s);
            _exit(rc == 0 ? 10 + i : rc == OG_E_EXISTS ? 3 : 1);
        }
    }
    close(pipefd[0]);
    char go[PROCS] = {0};
    assert_int_equal(write(pipefd[1], go, PROCS), PROCS);
    close(pipefd[1]);
    int wins = 0, winner = -1;
    for (int i = 0; i < PROCS; i++) {
        int st;
        assert_int_equal(waitpid(pids[i], &st, 0), pids[i]);
        assert_true(WIFEXITED(st));
        int code = WEXITSTATUS(st);
        assert_true(code == 3 || code == 10 + i);
        if (code >= 10) wins++, winner = i;
    }
    assert_int_equal(wins, 1);
    lance_branch b;
    assert_og_ok(lance_branch_get(f->s, RF_ROOT, "proc", &b));
    assert_int_equal(b.parent_version, 2 + (uint64_t)winner);
    assert_true(bsame(f->s, "proc", 0, f->main.b[2 + winner]));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test_setup_teardown(test_base_paths, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fork_layout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_commit_on_branch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list_delete, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_aba, setup, teardown),
        cmocka_unit_test_setup_teardown(test_aba_commit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_incarnation_mismatch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_foreign_ref, setup, teardown),
        cmocka_unit_test_setup_teardown(test_zombie, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failures, setup, teardown),
        cmocka_unit_test_setup_teardown(test_race_threads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_race_processes, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
