/* Tags (create-if-absent, list, delete-if-identity-matches, checkout, races, ABA), restore
 * and cleanup of Lance tables. */
#include "refs_fixture.h"
#include "core/alloc.h"
#include "core/error.h"
#include "core/json.h"
#include "lance/txn.h"

#include <pthread.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct fixture {
    char dir[256];
    store *s;
    arrow_schema schema;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->s = test_sandbox_store(f->dir, sizeof f->dir, "refs");
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

static void file_path(char *out, size_t cap, const fixture *f, const char *rel)
{
    snprintf(out, cap, "%s/" RF_ROOT "/%s", f->dir, rel);
}

/* Write root/rel through the store (which makes the directories). */
static void put_rel(fixture *f, const char *rel, const void *data, size_t len)
{
    char key[STORE_KEY_MAX];
    assert_og_ok(lance_key(key, RF_ROOT, rel, NULL));
    assert_og_ok(store_put(f->s, key, data, len, 0));
}

static uint64_t manifest_size(fixture *f, uint64_t v)
{
    char name[LANCE_VERSION_NAME_CAP], key[STORE_KEY_MAX];
    assert_og_ok(lance_version_file_name(name, sizeof name, LANCE_NAMING_V2, v));
    assert_og_ok(lance_key(key, RF_ROOT, LANCE_VERSIONS_DIR, name));
    store_meta m;
    assert_og_ok(store_head(f->s, key, &m));
    return m.size;
}

/* ---- the refs lister shared by tags and branches --------------------------------------- */

typedef struct lref {
    char name[32];
    int64_t size;
} lref;

/* A ref file's name, less ones starting with "skip" (no ref of ours). */
static int lref_name(const char *file, size_t len, char *name, size_t cap)
{
    if (len >= cap || (len >= 4 && memcmp(file, "skip", 4) == 0)) return -1;
    memcpy(name, file, len);
    name[len] = '\0';
    return 0;
}

/* Reads the file's size; "gone" is deleted since listed, "bad" is damaged. */
static int lref_read(store *s, const char *root, const char *name, void *out)
{
    lref *r = out;
    if (strcmp(name, "gone") == 0) return core_err(OG_E_NOT_FOUND, "ref '%s' is gone", name);
    if (strcmp(name, "bad") == 0) return core_err(OG_E_CORRUPT, "ref '%s' is damaged", name);
    char file[64], key[STORE_KEY_MAX];
    snprintf(file, sizeof file, "%s.json", name);
    assert_og_ok(lance_key(key, root, "_refs/x/", file));
    store_meta m;
    int rc = store_head(s, key, &m);
    if (rc) return rc;
    snprintf(r->name, sizeof r->name, "%s", name);
    r->size = (int64_t)m.size;
    return 0;
}

static void test_refs_list(void **state)
{
    fixture *f = *state;
    void *out = NULL;
    size_t n = 7;
    /* no directory: no refs */
    assert_og_ok(
        lance_refs_list(f->s, RF_ROOT, "_refs/x/", sizeof(lref), lref_name, lref_read, &out, &n));
    assert_null(out);
    assert_int_equal(n, 0);
    put_rel(f, "_refs/x/zeta.json", "12345", 5);
    put_rel(f, "_refs/x/alpha.json", "1", 1);
    put_rel(f, "_refs/x/mid.json", "123", 3);
    put_rel(f, "_refs/x/gone.json", "", 0);
    put_rel(f, "_refs/x/skip-me.json", "", 0);
    put_rel(f, "_refs/x/.json", "", 0);         /* no name */
    put_rel(f, "_refs/x/notes.txt", "", 0);     /* not a ref file */
    put_rel(f, "_refs/x/sub/deep.json", "", 0); /* not directly under the directory */
    assert_og_ok(
        lance_refs_list(f->s, RF_ROOT, "_refs/x/", sizeof(lref), lref_name, lref_read, &out, &n));
    const lref *r = out;
    assert_int_equal(n, 3); /* sorted by name; the gone one and the others skipped */
    assert_string_equal(r[0].name, "alpha");
    assert_int_equal(r[0].size, 1);
    assert_string_equal(r[1].name, "mid");
    assert_int_equal(r[1].size, 3);
    assert_string_equal(r[2].name, "zeta");
    assert_int_equal(r[2].size, 5);
    core_free(out);
    /* a failed allocation fails the listing cleanly */
    for (uint64_t nth = 1; nth <= 8; nth++) {
        core_alloc_fail_at(nth, 0);
        int rc = lance_refs_list(f->s, RF_ROOT, "_refs/x/", sizeof(lref), lref_name, lref_read,
                                 &out, &n);
        core_alloc_fail_at(0, 0);
        if (rc == 0) {
            assert_int_equal(n, 3);
            core_free(out);
        } else {
            assert_og_error(rc, OG_E_NOMEM);
            assert_null(out);
        }
    }
    /* a damaged ref fails the listing */
    put_rel(f, "_refs/x/bad.json", "", 0);
    out = (void *)1;
    assert_og_error(
        lance_refs_list(f->s, RF_ROOT, "_refs/x/", sizeof(lref), lref_name, lref_read, &out, &n),
        OG_E_CORRUPT);
    assert_null(out);
    assert_int_equal(n, 0);
}

/* ---- tags --------------------------------------------------------------------------------- */

static void test_tag_names(void **state)
{
    (void)state;
    const char *good[] = {"v1", "release-1.0", "a_b.c", "X", "a.b-c_d9"};
    const char *bad[] = {"", ".a", "a.", "a..b", "x.lock", "a/b", "a b", "ü", "a:b", "a*"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        assert_og_ok(lance_tag_name_check(good[i]));
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_og_error(lance_tag_name_check(bad[i]), OG_E_BAD_REQUEST);
    char longname[LANCE_TAG_NAME_MAX + 2];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    assert_og_error(lance_tag_name_check(longname), OG_E_BAD_REQUEST);
    assert_og_error(lance_tag_name_check(NULL), OG_E_BAD_REQUEST);
}

static void test_tag_create_list_get_delete(void **state)
{
    fixture *f = *state;
    assert_og_ok(rf_build(f->s, &f->schema, 3));
    lance_tag *tags = NULL;
    size_t n = 99;
    assert_og_ok(lance_tag_list(f->s, RF_ROOT, &tags, &n)); /* no _refs yet */
    assert_int_equal(n, 0);
    lance_tag_list_free(tags);

    lance_tag t;
    assert_og_ok(lance_tag_create(f->s, RF_ROOT, "b", 2, &t));
    assert_string_equal(t.name, "b");
    assert_int_equal(t.version, 2);
    assert_int_equal(t.manifest_size, manifest_size(f, 2));
    assert_string_equal(t.branch, "");
    assert_int_equal(strlen(t.created_at), 30); /* 2026-12-02T11:19:25.035060780Z */
    assert_int_equal(t.created_at[29], 'Z');
    assert_string_equal(t.created_at, t.updated_at);
    assert_og_ok(lance_tag_create(f->s, RF_ROOT, "a-b", 1, NULL));
    assert_og_ok(lance_tag_create(f->s, RF_ROOT, "a", 3, NULL));

    /* The stored form is lance's camelCase object with exactly these keys. */
    char path[512];
    file_path(path, sizeof path, f, "_refs/tags/b.json");
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    char text[1024];
    size_t len = fread(text, 1, sizeof text, fp);
    fclose(fp);
    json_t *j = NULL;
    assert_og_ok(core_json_parse(&j, text, len, path));
    assert_int_equal(json_object_size(j), 6);
    assert_true(json_is_null(json_object_get(j, "branch")));
    assert_int_equal(json_integer_value(json_object_get(j, "version")), 2);
    assert_int_equal(json_integer_value(json_object_get(j, "manifestSize")), manifest_size(f, 2));
    assert_true(json_is_string(json_object_get(j, "createdAt")));
    assert_true(json_is_string(json_object_get(j, "updatedAt")));
    assert_true(json_is_object(json_object_get(j, "metadata")));
    json_decref(j);

    /* Sorted by name (byte order of names, not of file names: "a" < "a-b" though
     * "a-b.json" < "a.json"). A file that is not a tag is ignored. */
    file_path(path, sizeof path, f, "_refs/tags/notes.txt");
    test_write_file(path, "x", 1);
    assert_og_ok(lance_tag_list(f->s, RF_ROOT, &tags, &n));
    assert_int_equal(n, 3);
    assert_string_equal(tags[0].name, "a");
    assert_string_equal(tags[1].name, "a-b");
    assert_string_equal(tags[2].name, "b");
    assert_int_equal(tags[0].version, 3);
    assert_int_equal(tags[1].version, 1);
    assert_string_equal(tags[2].identity, t.identity);
    lance_tag_list_free(tags);

    /* Refusals. */
    assert_og_error(lance_tag_create(f->s, RF_ROOT, "b", 3, NULL), OG_E_EXISTS);
    assert_og_error(lance_tag_create(f->s, RF_ROOT, "nover", 4, NULL), OG_E_NOT_FOUND);
    assert_og_error(lance_tag_create(f->s, RF_ROOT, "zero", 0, NULL), OG_E_BAD_REQUEST);
    assert_og_error(lance_tag_create(f->s, RF_ROOT, "bad..name", 1, NULL), OG_E_BAD_REQUEST);
    assert_og_error(lance_tag_get(f->s, RF_ROOT, "missing", &t), OG_E_NOT_FOUND);
    lance_tag g;
    assert_og_ok(lance_tag_get(f->s, RF_ROOT, "b", &g));
    assert_int_equal(g.version, 2); /* the failed create changed nothing */

    /* Checkout reads the tagged version. */
    lance_dataset *ds = NULL;
    assert_og_ok(lance_tag_checkout(&ds, f->s, RF_ROOT, "b", LANCE_ACCESS_READ));
    assert_int_equal(lance_dataset_version(ds), 2);
    arrow_batch *want = NULL, *got = NULL;
    assert_og_ok(rf_scan(f->s, 2, &want));
    lance_scan_options so = LANCE_SCAN_OPTIONS_INIT;
    so.with_row_id = true;
    assert_og_ok(lance_dataset_scan_all(&got, ds, &so));
    assert_true(arrow_batch_equal(got, want));
    assert_int_equal(got->num_rows, 10);
    arrow_batch_free(got);
    arrow_batch_free(want);
    lance_dataset_free(ds);

    /* Delete if identity matches. */
    assert_og_error(lance_tag_delete(f->s, RF_ROOT, "b", "0000000000000000"),
                    OG_E_PRECONDITION_FAILED);
    assert_string_equal(og_error_last()->expected, "0000000000000000");
    assert_string_equal(og_error_last()->actual, g.identity);
    assert_og_ok(lance_tag_get(f->s, RF_ROOT, "b", &t));
    assert_og_ok(lance_tag_delete(f->s, RF_ROOT, "b", g.identity));
    assert_og_error(lance_tag_get(f->s, RF_ROOT, "b", &t), OG_E_NOT_FOUND);
    assert_og_error(lance_tag_delete(f->s, RF_ROOT, "b", g.identity), OG_E_NOT_FOUND);
    assert_og_error(lance_tag_checkout(&ds, f->s, RF_ROOT, "b", LANCE_ACCESS_READ), OG_E_NOT_FOUND);
    assert_og_ok(lance_tag_delete(f->s, RF_ROOT, "a", NULL)); /* unconditional */
    assert_og_ok(lance_tag_list(f->s, RF_ROOT, &tags, &n));
    assert_int_equal(n, 1);
    assert_string_equal(tags[0].name, "a-b");
    lance_tag_list_free(tags);
}

static void test_tag_foreign_and_damaged(void **state)
{
    fixture *f = *state;
    assert_og_ok(rf_build(f->s, &f->schema, 3));
    char path[512], body[256];
    /* lance's minimal accepted form, and lance's own pretty-printed form, read fine. */
    int n = snprintf(body, sizeof body, "{\"branch\":null,\"version\":2,\"manifestSize\":%llu}",
                     (unsigned long long)manifest_size(f, 2));
    put_rel(f, "_refs/tags/min.json", body, (size_t)n);
    n = snprintf(
        body, sizeof body,
        "{\n  \"branch\": null,\n  \"version\": 3,\n  \"createdAt\": "
        "\"2026-12-02T11:19:25.035060780Z\",\n  \"updatedAt\": "
        "\"2026-12-02T11:19:25.035060780Z\",\n  \"manifestSize\": 367,\n  \"metadata\": {}\n}");
    put_rel(f, "_refs/tags/lancedb.json", body, (size_t)n);
    lance_tag t;
    assert_og_ok(lance_tag_get(f->s, RF_ROOT, "min", &t));
    assert_int_equal(t.version, 2);
    assert_string_equal(t.created_at, "");
    assert_og_ok(lance_tag_get(f->s, RF_ROOT, "lancedb", &t));
    assert_int_equal(t.version, 3);
    assert_string_equal(t.created_at, "2026-12-02T11:19:25.035060780Z");
    lance_dataset *ds = NULL;
    assert_og_ok(lance_tag_checkout(&ds, f->s, RF_ROOT, "lancedb", LANCE_ACCESS_READ));
    assert_int_equal(lance_dataset_version(ds), 3);
    lance_dataset_free(ds);

    /* A tag on a branch: read, but checkout is not supported yet. */
    n = snprintf(body, sizeof body, "{\"branch\":\"feat/x\",\"version\":2,\"manifestSize\":1}");
    put_rel(f, "_refs/tags/onbranch.json", body, (size_t)n);
    assert_og_ok(lance_tag_get(f->s, RF_ROOT, "onbranch", &t));
    assert_string_equal(t.branch, "feat/x");
    assert_og_error(lance_tag_checkout(&ds, f->s, RF_ROOT, "onbranch", LANCE_ACCESS_READ),
                    OG_E_UNSUPPORTED);
    assert_null(ds);

    /* A dangling tag (version gone): checkout says so. */
    n = snprintf(body, sizeof body, "{\"branch\":null,\"version\":9,\"manifestSize\":1}");
    put_rel(f, "_refs/tags/dangling.json", body, (size_t)n);
    assert_og_error(lance_tag_checkout(&ds, f->s, RF_ROOT, "dangling", LANCE_ACCESS_READ),
                    OG_E_NOT_FOUND);

    /* Damaged tag files: typed corruption, for the tag and for the listing. */
    const char *damaged[] = {"{\"branch\":null,\"version\":2", /* truncated */
                             "{\"branch\":null,\"version\":2,\"manifest_size\":5}",
                             "{\"branch\":null,\"version\":-1,\"manifestSize\":5}",
                             "{\"branch\":7,\"version\":2,\"manifestSize\":5}",
                             "{\"branch\":null,\"version\":0,\"manifestSize\":5}",
                             "[1,2]",
                             ""};
    file_path(path, sizeof path, f, "_refs/tags/broken.json");
    for (size_t i = 0; i < sizeof damaged / sizeof *damaged; i++) {
        test_write_file(path, damaged[i], strlen(damaged[i]));
        assert_og_error(lance_tag_get(f->s, RF_ROOT, "broken", &t), OG_E_CORRUPT);
        lance_tag *tags = NULL;
        size_t cnt = 0;
        assert_og_error(lance_tag_list(f->s, RF_ROOT, &tags, &cnt), OG_E_CORRUPT);
        assert_null(tags);
    }
    /* A damaged tag can still be deleted unconditionally, and then the listing works. */
    assert_og_error(lance_tag_delete(f->s, RF_ROOT, "broken", NULL), OG_E_CORRUPT);
    unlink(path);
    lance_tag *tags = NULL;
    size_t cnt = 0;
    assert_og_ok(lance_tag_list(f->s, RF_ROOT, &tags, &cnt));
    assert_int_equal(cnt, 4);
    lance_tag_list_free(tags);
}

/* Delete and recreate the same name at the same version: the old identity no longer deletes. */
static void test_tag_aba(void **state)
{
    fixture *f = *state;
    assert_og_ok(rf_build(f->s, &f->schema, 2));
    lance_tag t1, t2, now;
    assert_og_ok(lance_tag_create(f->s, RF_ROOT, "rel", 2, &t1));
    assert_og_ok(lance_tag_delete(f->s, RF_ROOT, "rel", t1.identity));
    assert_og_ok(lance_tag_create(f->s, RF_ROOT, "rel", 2, &t2));
    assert_int_equal(t2.version, t1.version);
    assert_string_not_equal(t2.identity, t1.identity);
    assert_og_error(lance_tag_delete(f->s, RF_ROOT, "rel", t1.identity), OG_E_PRECONDITION_FAILED);
    assert_og_ok(lance_tag_get(f->s, RF_ROOT, "rel", &now));
    assert_string_equal(now.identity, t2.identity);
    assert_og_ok(lance_tag_delete(f->s, RF_ROOT, "rel", t2.identity));
    assert_og_error(lance_tag_get(f->s, RF_ROOT, "rel", &now), OG_E_NOT_FOUND);
}

/* Threads racing to create one name (each with its own store handle): exactly one wins. */
typedef struct racer {
    const char *dir;
    const char *name;
    uint64_t version;
    pthread_barrier_t *go;
    int rc;
} racer;

static void *race_create(void *p)
{
    racer *r = p;
    store *s = NULL;
    r->rc = store_local_open(&s, r->dir);
    pthread_barrier_wait(r->go);
    if (r->rc == 0) r->rc = lance_tag_create(s, RF_ROOT, r->name, r->version, NULL);
    store_close(s);
    return NULL;
}

static void test_tag_race_threads(void **state)
{
    fixture *f = *state;
    assert_og_ok(rf_build(f->s, &f->schema, 3));
    enum { THREADS = 8, ROUNDS = 10 };
    for (int round = 0; round < ROUNDS; round++) {
        char name[32];
        snprintf(name, sizeof name, "race%d", round);
        pthread_barrier_t go;
        pthread_barrier_init(&go, NULL, THREADS);
        pthread_t th[THREADS];
        racer r[THREADS];
        for (int i = 0; i < THREADS; i++) {
            r[i] = (racer){f->dir, name, 1 + (uint64_t)(i % 3), &go, -99};
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
        lance_tag t;
        assert_og_ok(lance_tag_get(f->s, RF_ROOT, name, &t));
        assert_int_equal(t.version, r[winner].version);
    }
}

/* Processes racing to create one name, then racing to delete it with its identity. */
static void test_tag_race_processes(void **state)
{
    fixture *f = *state;
    assert_og_ok(rf_build(f->s, &f->schema, 2));
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
            if (read(pipefd[0], &c, 1) != 1) _exit(1); /* start together */
            store *s = NULL;
            if (store_local_open(&s, f->dir) != 0) _exit(1);
            int rc = lance_tag_create(s, RF_ROOT, "proc", 1 + (uint64_t)(i % 2), NULL);
            store_close(s);
            _exit(rc == 0 ? 0 : rc == OG_E_EXISTS ? 3 : 1);
        }
    }
    close(pipefd[0]);
    char go[PROCS] = {0};
    assert_int_equal(write(pipefd[1], go, PROCS), PROCS);
    close(pipefd[1]);
    int wins = 0;
    for (int i = 0; i < PROCS; i++) {
        int st;
        assert_int_equal(waitpid(pids[i], &st, 0), pids[i]);
        assert_true(WIFEXITED(st));
        int code = WEXITSTATUS(st);
        assert_true(code == 0 || code == 3);
        wins += code == 0;
    }
    assert_int_equal(wins, 1);

    lance_tag t;
    assert_og_ok(lance_tag_get(f->s, RF_ROOT, "proc", &t));
    assert_int_equal(pipe(pipefd), 0);
    for (int i = 0; i < PROCS; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) {
            close(pipefd[1]);
            char c;
            if (read(pipefd[0], &c, 1) != 1) _exit(1);
            store *s = NULL;
            if (store_local_open(&s, f->dir) != 0) _exit(1);
            int rc = lance_tag_delete(s, RF_ROOT, "proc", t.identity);
            store_close(s);
            _exit(rc == 0 ? 0 : rc == OG_E_NOT_FOUND ? 3 : 1);
        }
    }
    close(pipefd[0]);
    assert_int_equal(write(pipefd[1], go, PROCS), PROCS);
    close(pipefd[1]);
    wins = 0;
    for (int i = 0; i < PROCS; i++) {
        int st;
        assert_int_equal(waitpid(pids[i], &st, 0), pids[i]);
        assert_true(WIFEXITED(st));
        int code = WEXITSTATUS(st);
        assert_true(code == 0 || code == 3);
        wins += code == 0;
    }
    assert_int_equal(wins, 1);
    assert_og_error(lance_tag_get(f->s, RF_ROOT, "proc", &t), OG_E_NOT_FOUND);
}

/* ---- restore ------------------------------------------------------------------------------ */

static void test_restore(void **state)
{
    fixture *f = *state;
    assert_og_ok(rf_build(f->s, &f->schema, RF_VERSIONS));
    rf_snaps sn;
    rf_snaps_take(&sn, f->s, RF_VERSIONS);
    lance_dataset *head = NULL, *nd = NULL;
    assert_og_ok(lance_dataset_open(&head, f->s, RF_ROOT, 0, LANCE_ACCESS_WRITE));
    const Lance__Table__Manifest *h = head->m->pb;
    assert_og_error(lance_restore(&nd, head, 0, NULL), OG_E_BAD_REQUEST);
    assert_og_error(lance_restore(&nd, head, RF_VERSIONS + 1, NULL), OG_E_BAD_REQUEST);

    const char *uuid = "0b3c1f0e-1111-4222-8333-444455556666";
    assert_og_ok(lance_restore(&nd, head, 3, uuid));
    assert_int_equal(lance_dataset_version(nd), RF_VERSIONS + 1);
    assert_true(rf_same(f->s, RF_VERSIONS + 1, sn.b[3]));
    const Lance__Table__Manifest *r = nd->m->pb;
    /* ids never go backwards: v7 used fragment ids and row ids beyond v3's */
    assert_true(r->has_max_fragment_id);
    assert_int_equal(r->max_fragment_id, h->max_fragment_id);
    assert_int_equal(r->next_row_id, h->next_row_id);
    assert_true(r->next_row_id > 20);
    assert_int_equal(r->n_fields, h->n_fields);
    /* The transaction says what happened and who did it. */
    Lance__Table__Transaction *txn = NULL;
    assert_og_ok(lance_txn_load(f->s, RF_ROOT, nd->m, &txn));
    assert_int_equal(txn->operation_case, LANCE__TABLE__TRANSACTION__OPERATION_RESTORE);
    assert_int_equal(txn->restore->version, 3);
    assert_int_equal(txn->read_version, RF_VERSIONS);
    assert_string_equal(txn->uuid, uuid);
    lance_pb_free(txn);

    /* A stale snapshot cannot restore: its version + 1 is taken. */
    lance_dataset *again = NULL;
    assert_og_error(lance_restore(&again, head, 2, NULL), OG_E_CONFLICT);
    assert_null(again);
    for (uint64_t v = 1; v <= RF_VERSIONS; v++)
        assert_true(rf_same(f->s, v, sn.b[v]));

    /* Writing on top of the restored version hands out fresh fragment and row ids. */
    arrow_batch *b = fx_batch(&f->schema, 500, 3);
    lance_dataset *after = NULL;
    assert_og_ok(lance_dataset_append(&after, nd, &b, 1));
    arrow_batch_free(b);
    const Lance__Table__Manifest *a = after->m->pb;
    assert_int_equal(a->fragments[a->n_fragments - 1]->id, (uint64_t)h->max_fragment_id + 1);
    arrow_batch *all = NULL;
    lance_scan_options so = LANCE_SCAN_OPTIONS_INIT;
    so.with_row_id = true;
    assert_og_ok(lance_dataset_scan_all(&all, after, &so));
    assert_int_equal(all->num_rows, sn.b[3]->num_rows + 3);
    for (int64_t i = 0; i < all->num_rows; i++) {
        if (i < sn.b[3]->num_rows) continue;
        assert_true(arrow_array_get_uint(all->columns[3], i) >= h->next_row_id);
    }
    arrow_batch_free(all);

    /* Restoring the restored version's own content again (restore of the latest) also works. */
    lance_dataset *r2 = NULL;
    assert_og_ok(lance_restore(&r2, after, RF_VERSIONS + 2, NULL));
    assert_int_equal(lance_dataset_version(r2), RF_VERSIONS + 3);
    arrow_batch *x = NULL;
    assert_og_ok(rf_scan(f->s, RF_VERSIONS + 2, &x));
    assert_true(rf_same(f->s, RF_VERSIONS + 3, x));
    arrow_batch_free(x);
    lance_dataset_free(r2);
    lance_dataset_free(after);
    lance_dataset_free(nd);
    lance_dataset_free(head);
    rf_snaps_free(&sn);
}

/* ---- cleanup ------------------------------------------------------------------------------ */

static uint64_t hint_version(fixture *f)
{
    char path[512];
    file_path(path, sizeof path, f, "_versions/latest_version_hint.json");
    FILE *fp = fopen(path, "rb");
    if (!fp) return 0;
    char text[128];
    size_t n = fread(text, 1, sizeof text - 1, fp);
    fclose(fp);
    text[n] = '\0';
    unsigned long long v = 0;
    if (sscanf(text, "{\"version\":%llu}", &v) != 1) return 0;
    return v;
}

/* An append staged and abandoned: its data file is referenced by nothing. */
static void abandon_append(fixture *f)
{
    lance_dataset *ds = NULL;
    assert_og_ok(lance_dataset_open(&ds, f->s, RF_ROOT, 0, LANCE_ACCESS_WRITE));
    arrow_batch *b = fx_batch(&f->schema, 900, 2);
    lance_staged *st = NULL;
    assert_og_ok(lance_stage_append(&st, ds, &b, 1, NULL));
    lance_staged_free(st);
    arrow_batch_free(b);
    lance_dataset_free(ds);
}

static void test_cleanup_keeps_what_is_retained(void **state)
{
    fixture *f = *state;
    assert_og_ok(rf_build(f->s, &f->schema, RF_VERSIONS));
    rf_snaps sn;
    rf_snaps_take(&sn, f->s, RF_VERSIONS);
    assert_og_ok(lance_tag_create(f->s, RF_ROOT, "keep3", 3, NULL));
    abandon_append(f);
    size_t data0 = rf_count(f->s, "data/"), del0 = rf_count(f->s, "_deletions/"),
           txn0 = rf_count(f->s, "_transactions/");
    assert_int_equal(data0, 5); /* frags of v2, v3, v5's update, v7's overwrite, abandoned */
    assert_int_equal(del0, 3);  /* v4, v5, v6 */
    assert_int_equal(txn0, 6);  /* v2..v7 (the create has only its inline transaction) */
    /* A stale hint is repaired. */
    char path[512];
    file_path(path, sizeof path, f, "_versions/latest_version_hint.json");
    test_write_file(path, "{\"version\":2}", 13);

    /* Dry run: counts, deletes nothing. */
    lance_cleanup_options o = LANCE_CLEANUP_OPTIONS_INIT;
    o.before_version = RF_VERSIONS;
    o.older_than_ms = -1;
    o.dry_run = true;
    lance_cleanup_report r;
    assert_og_ok(lance_cleanup(f->s, RF_ROOT, &o, &r));
    assert_int_equal(r.versions_deleted, 5);
    assert_int_equal(rf_count(f->s, "_versions/"), RF_VERSIONS + 1);
    /* Contiguous (the graph engine's): nothing above the tagged version 3 goes, only 1 and 2. */
    o.contiguous = true;
    assert_og_ok(lance_cleanup(f->s, RF_ROOT, &o, &r));
    assert_int_equal(r.versions_deleted, 2);
    o.contiguous = false;
    assert_int_equal(rf_count(f->s, "data/"), data0);
    assert_int_equal(hint_version(f), 2);

    o.dry_run = false;
    assert_og_ok(lance_cleanup(f->s, RF_ROOT, &o, &r));
    assert_int_equal(r.latest_version, RF_VERSIONS);
    assert_int_equal(r.versions_deleted, 5);   /* 1, 2, 4, 5, 6 */
    assert_int_equal(r.versions_retained, 2);  /* 3 (tagged) and 7 (latest) */
    assert_int_equal(r.data_files_deleted, 1); /* v5's rewritten row; v2/v3 data is v3's */
    assert_int_equal(r.deletion_files_deleted, 3);
    assert_int_equal(r.txn_files_deleted, 4);   /* v2, v4, v5, v6 */
    assert_int_equal(r.files_spared_recent, 1); /* the abandoned append: too young */
    assert_true(r.bytes_deleted > 0);
    assert_true(r.hint_rewritten);
    assert_int_equal(hint_version(f), RF_VERSIONS);
    for (uint64_t v = 1; v <= RF_VERSIONS; v++) {
        int kept = v == 3 || v == RF_VERSIONS;
        assert_int_equal(rf_has_version(f->s, v), kept);
        if (kept) assert_true(rf_same(f->s, v, sn.b[v]));
    }
    assert_true(rf_refs_present(f->s));
    assert_int_equal(rf_count(f->s, "data/"), 4);
    assert_int_equal(rf_count(f->s, "_deletions/"), 0);
    assert_int_equal(rf_count(f->s, "_transactions/"), 2);
    lance_dataset *ds = NULL;
    assert_og_ok(lance_tag_checkout(&ds, f->s, RF_ROOT, "keep3", LANCE_ACCESS_READ));
    lance_dataset_free(ds);

    /* Idempotent. */
    assert_og_ok(lance_cleanup(f->s, RF_ROOT, &o, &r));
    assert_int_equal(r.versions_deleted + r.data_files_deleted + r.deletion_files_deleted +
                         r.txn_files_deleted + r.bytes_deleted,
                     0);
    assert_false(r.hint_rewritten);

    /* Once the window has passed, the abandoned file goes; nothing else does. */
    o.now_ms = core_wall_ms() + 2 * LANCE_CLEANUP_DEFAULT_WINDOW_MS;
    assert_og_ok(lance_cleanup(f->s, RF_ROOT, &o, &r));
    assert_int_equal(r.data_files_deleted, 1);
    assert_int_equal(r.versions_deleted + r.deletion_files_deleted + r.txn_files_deleted, 0);
    assert_int_equal(r.files_spared_recent, 0);
    assert_int_equal(rf_count(f->s, "data/"), 3);
    assert_true(rf_same(f->s, 3, sn.b[3]));
    assert_true(rf_same(f->s, RF_VERSIONS, sn.b[RF_VERSIONS]));
    assert_og_ok(lance_cleanup(f->s, RF_ROOT, &o, &r));
    assert_int_equal(r.data_files_deleted + r.versions_deleted, 0);

    /* Untag: version 3 and the data only it needed go. A follow-up write works. */
    assert_og_ok(lance_tag_delete(f->s, RF_ROOT, "keep3", NULL));
    o.before_version = 0;
    assert_og_ok(lance_cleanup(f->s, RF_ROOT, &o, &r));
    assert_int_equal(r.versions_deleted, 1);
    assert_int_equal(r.data_files_deleted, 2);
    assert_int_equal(r.txn_files_deleted, 1);
    assert_int_equal(r.versions_retained, 1);
    assert_true(rf_same(f->s, RF_VERSIONS, sn.b[RF_VERSIONS]));
    assert_og_ok(rf_step(f->s, &f->schema, 2));
    assert_true(rf_has_version(f->s, RF_VERSIONS + 1));
    assert_true(rf_refs_present(f->s));
    rf_snaps_free(&sn);
}

static void set_mtime(fixture *f, uint64_t v, uint64_t ms)
{
    char name[LANCE_VERSION_NAME_CAP], rel[128], path[512];
    assert_og_ok(lance_version_file_name(name, sizeof name, LANCE_NAMING_V2, v));
    snprintf(rel, sizeof rel, "_versions/%s", name);
    file_path(path, sizeof path, f, rel);
    struct timeval tv[2];
    tv[0].tv_sec = tv[1].tv_sec = (time_t)(ms / 1000);
    tv[0].tv_usec = tv[1].tv_usec = 0;
    assert_int_equal(utimes(path, tv), 0);
}

static void test_cleanup_by_age(void **state)
{
    fixture *f = *state;
    assert_og_ok(rf_build(f->s, &f->schema, 4));
    rf_snaps sn;
    rf_snaps_take(&sn, f->s, 4);
    uint64_t now = core_wall_ms();
    uint64_t day = 24ull * 3600 * 1000;
    set_mtime(f, 1, now - 30 * day);
    set_mtime(f, 2, now - 20 * day);
    set_mtime(f, 3, now - 1 * day);
    set_mtime(f, 4, now - 40 * day);                      /* the latest is kept whatever its age */
    lance_cleanup_options o = LANCE_CLEANUP_OPTIONS_INIT; /* 14 days */
    lance_cleanup_report r;
    assert_og_ok(lance_cleanup(f->s, RF_ROOT, &o, &r));
    assert_int_equal(r.versions_deleted, 2);
    assert_false(rf_has_version(f->s, 1));
    assert_false(rf_has_version(f->s, 2));
    assert_true(rf_same(f->s, 3, sn.b[3]));
    assert_true(rf_same(f->s, 4, sn.b[4]));
    /* Both criteria given: a version must meet both. v3 is new enough to stay. */
    o.before_version = 4;
    assert_og_ok(lance_cleanup(f->s, RF_ROOT, &o, &r));
    assert_int_equal(r.versions_deleted, 0);
    o.older_than_ms = (int64_t)(day / 2);
    assert_og_ok(lance_cleanup(f->s, RF_ROOT, &o, &r));
    assert_int_equal(r.versions_deleted, 1);
    assert_true(rf_same(f->s, 4, sn.b[4]));
    assert_true(rf_refs_present(f->s));
    rf_snaps_free(&sn);
}

static void test_cleanup_refusals(void **state)
{
    fixture *f = *state;
    lance_cleanup_report r;
    assert_og_error(lance_cleanup(f->s, RF_ROOT, NULL, &r), OG_E_NOT_FOUND);
    assert_og_ok(rf_build(f->s, &f->schema, 4));
    lance_cleanup_options o = LANCE_CLEANUP_OPTIONS_INIT;
    o.older_than_ms = -1;
    o.version = 2;
    assert_og_error(lance_cleanup(f->s, RF_ROOT, &o, &r), OG_E_BAD_REQUEST);
    o.version = 1;

    /* A damaged retained manifest (tagged v2) stops cleanup before anything is deleted. */
    assert_og_ok(lance_tag_create(f->s, RF_ROOT, "t2", 2, NULL));
    char name[LANCE_VERSION_NAME_CAP], rel[128], path[512];
    assert_og_ok(lance_version_file_name(name, sizeof name, LANCE_NAMING_V2, 2));
    snprintf(rel, sizeof rel, "_versions/%s", name);
    file_path(path, sizeof path, f, rel);
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    unsigned char keep[4096];
    size_t len = fread(keep, 1, sizeof keep, fp);
    fclose(fp);
    test_write_file(path, "garbage", 7);
    assert_og_error(lance_cleanup(f->s, RF_ROOT, &o, &r), OG_E_CORRUPT);
    assert_int_equal(rf_count(f->s, "_versions/"), 5);
    assert_int_equal(rf_count(f->s, "_transactions/"), 3);
    test_write_file(path, keep, len);

    /* A damaged tag stops it too (it might protect any version). */
    char tpath[512];
    file_path(tpath, sizeof tpath, f, "_refs/tags/bad.json");
    put_rel(f, "_refs/tags/bad.json", "{", 1);
    assert_og_error(lance_cleanup(f->s, RF_ROOT, &o, &r), OG_E_CORRUPT);
    assert_int_equal(rf_count(f->s, "_versions/"), 5);
    unlink(tpath);

    /* A damaged branch ref stops it too (it might pin a fork point). Branch-aware retention
     * itself is tested in test_lance_cleanup_branches.c. */
    char bpath[512];
    file_path(bpath, sizeof bpath, f, "_refs/branches/feat%2Fx.json");
    put_rel(f, "_refs/branches/feat%2Fx.json", "{}", 2);
    assert_og_error(lance_cleanup(f->s, RF_ROOT, &o, &r), OG_E_CORRUPT);
    assert_int_equal(rf_count(f->s, "_versions/"), 5);
    unlink(bpath);
    assert_og_ok(lance_cleanup(f->s, RF_ROOT, &o, &r));
    assert_int_equal(r.versions_deleted, 2); /* 1 and 3; 2 is tagged, 4 the latest */
    assert_true(rf_refs_present(f->s));
}

/* Commits keep landing while cleanup runs over and over: every version that exists at the
 * end opens and scans, and nothing any of them references is missing. */
typedef struct committer {
    const char *dir;
    const arrow_schema *schema;
    int commits;
    int rc;
} committer;

static void *commit_loop(void *p)
{
    committer *c = p;
    store *s = NULL;
    c->rc = store_local_open(&s, c->dir);
    for (int i = 0; c->rc == 0 && i < c->commits; i++) {
        lance_dataset *ds = NULL, *nd = NULL;
        c->rc = lance_dataset_open(&ds, s, RF_ROOT, 0, LANCE_ACCESS_WRITE);
        if (c->rc) break;
        arrow_batch *b = fx_batch(c->schema, 1000 + i, 1);
        c->rc = lance_dataset_append(&nd, ds, &b, 1);
        if (c->rc == 0 && i % 3 == 2) {
            lance_term t = {"id", ARROW_CMP_EQ, {.kind = ARROW_INT64, .i = 1000 + i - 1}};
            lance_filter fl = {&t, 1};
            lance_dataset *d2 = NULL;
            c->rc = lance_dataset_delete(&d2, nd, &fl);
            lance_dataset_free(d2);
        }
        arrow_batch_free(b);
        lance_dataset_free(nd);
        lance_dataset_free(ds);
    }
    store_close(s);
    return NULL;
}

static void test_cleanup_concurrent_commits(void **state)
{
    fixture *f = *state;
    assert_og_ok(rf_build(f->s, &f->schema, 3));
    committer c = {f->dir, &f->schema, 40, 0};
    pthread_t th;
    pthread_create(&th, NULL, commit_loop, &c);
    lance_cleanup_options o = LANCE_CLEANUP_OPTIONS_INIT;
    o.older_than_ms = -1;
    o.safety_window_ms = 60 * 1000; /* shorter than default; staged files are younger */
    uint64_t deleted = 0;
    for (int i = 0; i < 30; i++) {
        lance_cleanup_report r;
        assert_og_ok(lance_cleanup(f->s, RF_ROOT, &o, &r));
        deleted += r.versions_deleted;
    }
    pthread_join(th, NULL);
    assert_og_ok(c.rc);
    lance_cleanup_report r;
    assert_og_ok(lance_cleanup(f->s, RF_ROOT, &o, &r));
    deleted += r.versions_deleted;
    assert_true(deleted > 0);
    assert_true(rf_refs_present(f->s));
    lance_version_list l;
    assert_og_ok(lance_versions_list(f->s, RF_ROOT, &l));
    assert_int_equal(l.n, 1);
    arrow_batch *b = NULL;
    assert_og_ok(rf_scan(f->s, l.v[0], &b));
    /* ids 0..19, plus 1000..1039 minus every third one deleted right after */
    int64_t sum = 0;
    for (int64_t i = 0; i < b->num_rows; i++)
        sum += arrow_array_get_int(b->columns[0], i);
    int64_t want_rows = 20, want_sum = 190;
    for (int i = 0; i < 40; i++) {
        int deleted_row = (i + 1) % 3 == 2 && i + 1 < 40; /* row 1000+i deleted by commit i+1 */
        if (!deleted_row) want_rows++, want_sum += 1000 + i;
    }
    assert_int_equal(b->num_rows, want_rows);
    assert_int_equal(sum, want_sum);
    arrow_batch_free(b);
    lance_version_list_free(&l);
}

/* Tags being created on the version just before the latest while commits and cleanups run:
 * a tag either lands on a version that cleanup then keeps, or its create fails with
 * OG_E_NOT_FOUND; never a dangling tag. */
typedef struct tagger {
    const char *dir;
    int created, refused, rc;
} tagger;

#define TAG_ROUNDS 60

static void *tag_loop(void *p)
{
    tagger *t = p;
    store *s = NULL;
    t->rc = store_local_open(&s, t->dir);
    for (int round = 0; t->rc == 0 && round < TAG_ROUNDS; round++) {
        uint64_t latest;
        lance_naming nm;
        t->rc = lance_version_latest(s, RF_ROOT, &latest, &nm);
        if (t->rc) break;
        char name[32];
        snprintf(name, sizeof name, "r%d", round);
        int rc = lance_tag_create(s, RF_ROOT, name, latest - 1, NULL);
        if (rc == 0)
            t->created++;
        else if (rc == OG_E_NOT_FOUND)
            t->refused++;
        else
            t->rc = rc;
    }
    store_close(s);
    return NULL;
}

static void test_cleanup_vs_tag_create(void **state)
{
    fixture *f = *state;
    assert_og_ok(rf_build(f->s, &f->schema, 3));
    tagger t = {f->dir, 0, 0, 0};
    pthread_t th;
    pthread_create(&th, NULL, tag_loop, &t);
    lance_cleanup_options o = LANCE_CLEANUP_OPTIONS_INIT;
    o.older_than_ms = -1;
    for (int i = 0; i < TAG_ROUNDS; i++) {
        lance_dataset *ds = NULL, *nd = NULL;
        assert_og_ok(lance_dataset_open(&ds, f->s, RF_ROOT, 0, LANCE_ACCESS_WRITE));
        arrow_batch *b = fx_batch(&f->schema, 100 + i, 1);
        assert_og_ok(lance_dataset_append(&nd, ds, &b, 1));
        arrow_batch_free(b);
        lance_dataset_free(nd);
        lance_dataset_free(ds);
        assert_og_ok(lance_cleanup(f->s, RF_ROOT, &o, NULL));
    }
    pthread_join(th, NULL);
    assert_og_ok(t.rc);
    print_message("tags created %d, refused (version cleaned up) %d\n", t.created, t.refused);
    assert_int_equal(t.created + t.refused, TAG_ROUNDS);
    assert_og_ok(lance_cleanup(f->s, RF_ROOT, &o, NULL));
    lance_tag *tags = NULL;
    size_t n = 0;
    assert_og_ok(lance_tag_list(f->s, RF_ROOT, &tags, &n));
    assert_int_equal(n, (size_t)t.created);
    for (size_t i = 0; i < n; i++) {
        lance_dataset *ds = NULL;
        arrow_batch *b = NULL;
        assert_og_ok(lance_tag_checkout(&ds, f->s, RF_ROOT, tags[i].name, LANCE_ACCESS_READ));
        assert_og_ok(lance_dataset_scan_all(&b, ds, NULL));
        /* version 2 of this history holds 10 rows, version v >= 3 holds 20 + (v - 3) */
        int64_t v = (int64_t)tags[i].version;
        assert_int_equal(b->num_rows, v == 2 ? 10 : 20 + v - 3);
        arrow_batch_free(b);
        lance_dataset_free(ds);
    }
    lance_tag_list_free(tags);
    assert_true(rf_refs_present(f->s));
}

/* Every allocation failure and every failing delete gives a typed error and leaves every
 * remaining version intact; the operation then succeeds when retried. */
static int versions_intact(store *s, const rf_snaps *sn)
{
    for (uint64_t v = 1; v <= sn->n; v++)
        if (rf_has_version(s, v) && !rf_same(s, v, sn->b[v])) return 0;
    return rf_refs_present(s);
}

static void test_failures(void **state)
{
    fixture *f = *state;
    assert_og_ok(rf_build(f->s, &f->schema, RF_VERSIONS));
    rf_snaps sn;
    rf_snaps_take(&sn, f->s, RF_VERSIONS);
    assert_og_ok(lance_tag_create(f->s, RF_ROOT, "keep3", 3, NULL));

    int failed = 0;
    for (uint64_t n = 1;; n++) { /* tag create, list, delete */
        core_alloc_fail_at(n, 0);
        lance_tag t;
        int rc = lance_tag_create(f->s, RF_ROOT, "x", 2, &t);
        lance_tag *all = NULL;
        size_t cnt = 0;
        if (rc == 0) rc = lance_tag_list(f->s, RF_ROOT, &all, &cnt);
        lance_tag_list_free(all);
        uint64_t injected = core_alloc_injected();
        core_alloc_fail_at(0, 0);
        if (rc != 0) {
            assert_og_error(rc, OG_E_NOMEM);
            failed++;
        }
        rc = lance_tag_get(f->s, RF_ROOT, "x", &t);
        if (rc == 0)
            assert_og_ok(lance_tag_delete(f->s, RF_ROOT, "x", t.identity));
        else
            assert_og_error(rc, OG_E_NOT_FOUND);
        if (!injected) break;
    }
    assert_true(failed > 0);

    failed = 0;
    uint64_t latest = RF_VERSIONS;
    for (uint64_t n = 1;; n++) { /* restore */
        lance_dataset *head = NULL, *nd = NULL;
        assert_og_ok(lance_dataset_open(&head, f->s, RF_ROOT, 0, LANCE_ACCESS_WRITE));
        core_alloc_fail_at(n, 0);
        /* Without a snapshot out: its open lists every version, which grows each round. */
        int rc = lance_restore(NULL, head, 3, NULL);
        uint64_t injected = core_alloc_injected();
        core_alloc_fail_at(0, 0);
        if (rc != 0) {
            assert_og_error(rc, OG_E_NOMEM);
            failed++;
        }
        lance_dataset_free(nd);
        lance_dataset_free(head);
        uint64_t now;
        lance_naming nm;
        assert_og_ok(lance_version_latest(f->s, RF_ROOT, &now, &nm));
        if (now != latest) { /* published (perhaps before a later allocation failed) */
            assert_int_equal(now, latest + 1);
            assert_true(rf_same(f->s, now, sn.b[3]));
            latest = now;
        }
        if (!injected) break;
    }
    assert_true(failed > 0);
    assert_true(versions_intact(f->s, &sn));

    lance_cleanup_options o = LANCE_CLEANUP_OPTIONS_INIT;
    o.before_version = RF_VERSIONS;
    o.older_than_ms = -1;
    /* Deletes fail one by one (I/O errors) through the fault store. */
    failed = 0;
    for (uint64_t k = 1;; k++) {
        store *fs = NULL;
        assert_og_ok(store_fault_open(&fs, f->s, 0));
        store_fault_fail_nth(fs, k, STORE_OP_BIT(STORE_OP_DELETE), STORE_FAULT_EIO);
        lance_cleanup_report r;
        int rc = lance_cleanup(fs, RF_ROOT, &o, &r);
        store_close(fs);
        assert_true(versions_intact(f->s, &sn));
        if (rc == 0) break;
        assert_og_error(rc, OG_E_STORAGE);
        failed++;
    }
    assert_true(failed > 0);
    /* Allocation failures at every point of a cleanup with work to do. */
    rf_step(f->s, &f->schema, 2);
    rf_step(f->s, &f->schema, 4);
    o.before_version = 0;
    failed = 0;
    for (uint64_t n = 1;; n++) {
        core_alloc_fail_at(n, 0);
        lance_cleanup_report r;
        int rc = lance_cleanup(f->s, RF_ROOT, &o, &r);
        uint64_t injected = core_alloc_injected();
        core_alloc_fail_at(0, 0);
        if (rc != 0) {
            assert_og_error(rc, OG_E_NOMEM);
            failed++;
        }
        assert_true(versions_intact(f->s, &sn));
        if (!injected) break;
    }
    assert_true(failed > 0);
    assert_true(rf_has_version(f->s, 3)); /* tagged */
    lance_version_list l;
    assert_og_ok(lance_versions_list(f->s, RF_ROOT, &l));
    assert_int_equal(l.n, 2);
    lance_version_list_free(&l);
    rf_snaps_free(&sn);
}

/* A table with V1 manifest names: restore and cleanup keep its scheme. */
static void test_v1_names(void **state)
{
    fixture *f = *state;
    lance_create_options co = LANCE_CREATE_OPTIONS_INIT;
    co.v1_names = true;
    lance_dataset *ds = NULL;
    assert_og_ok(lance_dataset_create(&ds, f->s, RF_ROOT, &f->schema, &co));
    lance_dataset_free(ds);
    for (int step = 2; step <= RF_VERSIONS; step++)
        assert_og_ok(rf_step(f->s, &f->schema, step));
    rf_snaps sn;
    rf_snaps_take(&sn, f->s, RF_VERSIONS);
    assert_og_ok(lance_tag_create(f->s, RF_ROOT, "two", 2, NULL));
    lance_dataset *head = NULL, *nd = NULL;
    assert_og_ok(lance_dataset_open(&head, f->s, RF_ROOT, 0, LANCE_ACCESS_WRITE));
    assert_og_ok(lance_restore(&nd, head, 4, NULL));
    lance_dataset_free(head);
    lance_dataset_free(nd);
    char path[512];
    file_path(path, sizeof path, f, "_versions/8.manifest");
    assert_int_equal(access(path, F_OK), 0);
    lance_cleanup_options o = LANCE_CLEANUP_OPTIONS_INIT;
    o.older_than_ms = -1;
    lance_cleanup_report r;
    assert_og_ok(lance_cleanup(f->s, RF_ROOT, &o, &r));
    assert_int_equal(r.versions_deleted, 6);
    assert_true(rf_same(f->s, 2, sn.b[2]));
    assert_true(rf_same(f->s, 8, sn.b[4]));
    assert_true(rf_refs_present(f->s));
    rf_snaps_free(&sn);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tag_names),
        cmocka_unit_test_setup_teardown(test_tag_create_list_get_delete, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tag_foreign_and_damaged, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tag_aba, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tag_race_threads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tag_race_processes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restore, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cleanup_keeps_what_is_retained, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cleanup_by_age, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cleanup_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cleanup_concurrent_commits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cleanup_vs_tag_create, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failures, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v1_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refs_list, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
