/* Contract tests for the object-store interface, run against the local backend and against
 * the fault backend wrapping it with nothing armed; plus local-only behaviour: durability
 * (fsync counts), temporaries, crash points inside one put. */
#include "testutil.h"

#include "core/failpoint.h"
#include "store/store.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct fixture {
    char dir[256];
    store *s;
    int wrapped;
} fixture;

static int setup_local(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->s = test_sandbox_store(f->dir, sizeof f->dir, "store");
    *state = f;
    return 0;
}

static int setup_fault(void **state)
{
    setup_local(state);
    fixture *f = *state;
    store *fs;
    assert_og_ok(store_fault_open(&fs, f->s, 1));
    f->s = fs;
    f->wrapped = 1;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    test_sandbox_store_done(f->dir, f->s);
    free(f);
    core_fp_clear_all();
    return 0;
}

static void get_eq(store *s, const char *key, const char *want)
{
    core_buf b = CORE_BUF_INIT;
    assert_og_ok(store_get(s, key, 0, STORE_ALL, &b));
    assert_int_equal(b.len, strlen(want));
    assert_memory_equal(b.data, want, b.len);
    core_buf_free(&b);
}

static void test_put_get(void **state)
{
    fixture *f = *state;
    assert_og_ok(store_put(f->s, "a/b/c.txt", "hello world", 11, 0));
    get_eq(f->s, "a/b/c.txt", "hello world");
    assert_og_ok(store_put(f->s, "a/b/c.txt", "bye", 3, 0));
    get_eq(f->s, "a/b/c.txt", "bye");
    assert_og_ok(store_put(f->s, "empty", "", 0, 0));
    get_eq(f->s, "empty", "");
    core_buf b = CORE_BUF_INIT;
    assert_og_error(store_get(f->s, "a/b/missing", 0, STORE_ALL, &b), OG_E_NOT_FOUND);
    assert_string_equal(og_error_last()->object, "a/b/missing");
    assert_og_error(store_get(f->s, "a/b", 0, STORE_ALL, &b), OG_E_NOT_FOUND);
    assert_og_error(store_get(f->s, "a/b/c.txt/x", 0, STORE_ALL, &b), OG_E_NOT_FOUND);
    core_buf_free(&b);
}

static void test_range(void **state)
{
    fixture *f = *state;
    assert_og_ok(store_put(f->s, "r", "0123456789", 10, 0));
    core_buf b = CORE_BUF_INIT;
    assert_og_ok(store_get(f->s, "r", 2, 3, &b));
    assert_int_equal(b.len, 3);
    assert_memory_equal(b.data, "234", 3);
    assert_og_ok(store_get(f->s, "r", 8, 100, &b));
    assert_int_equal(b.len, 2);
    assert_memory_equal(b.data, "89", 2);
    assert_og_ok(store_get(f->s, "r", 10, 5, &b));
    assert_int_equal(b.len, 0);
    assert_og_error(store_get(f->s, "r", 11, 1, &b), OG_E_BAD_REQUEST);
    core_buf_free(&b);
}

static void test_head(void **state)
{
    fixture *f = *state;
    store_meta h1, h2;
    assert_og_ok(store_put(f->s, "h", "abc", 3, 0));
    assert_og_ok(store_head(f->s, "h", &h1));
    assert_int_equal(h1.size, 3);
    /* Timestamps are the write time (the clock may be coarse: allow a minute either way). */
    uint64_t now = (uint64_t)time(NULL) * 1000u;
    assert_true(h1.mtime_ms + 60000 > now && h1.mtime_ms < now + 60000);
    assert_og_ok(store_put(f->s, "h", "abcd", 4, 0));
    assert_og_ok(store_head(f->s, "h", &h2));
    assert_int_equal(h2.size, 4);
    assert_string_not_equal(h1.token, h2.token);
    assert_og_error(store_head(f->s, "nope", &h1), OG_E_NOT_FOUND);
}

static void test_put_if_absent(void **state)
{
    fixture *f = *state;
    assert_og_ok(store_put_if_absent(f->s, "x/once", "first", 5, 0));
    assert_og_error(store_put_if_absent(f->s, "x/once", "second", 6, 0), OG_E_EXISTS);
    assert_string_equal(og_error_last()->object, "x/once");
    get_eq(f->s, "x/once", "first");
    /* put may replace what put_if_absent created. */
    assert_og_ok(store_put(f->s, "x/once", "third", 5, 0));
    get_eq(f->s, "x/once", "third");
}

/* sync + put_if_absent in one call: the unsynced keys become durable and the new object is
 * created once; a second create of the same key loses with EXISTS and changes nothing.
 * Counted as one sync and one put_if_absent on every backend. */
static void test_sync_put_if_absent(void **state)
{
    fixture *f = *state;
    assert_og_ok(store_put(f->s, "a/1", "one", 3, STORE_F_NOSYNC));
    assert_og_ok(store_put(f->s, "b/2", "two", 3, STORE_F_NOSYNC));
    const char *keys[] = {"a/1", "b/2"};
    store_counts c0, c1, d;
    store_counts_get(f->s, &c0);
    assert_og_ok(store_sync_put_if_absent(f->s, keys, 2, "v/1.manifest", "m1", 2, 0));
    store_counts_get(f->s, &c1);
    store_counts_diff(&c1, &c0, &d);
    assert_int_equal(d.ops[STORE_OP_SYNC], 1);
    assert_int_equal(d.ops[STORE_OP_PUT_IF_ABSENT], 1);
    assert_int_equal(d.total_ops, 2);
    assert_int_equal(d.durable_ops, 2);
    assert_int_equal(d.bytes_written, 2);
    get_eq(f->s, "v/1.manifest", "m1");
    get_eq(f->s, "a/1", "one");
    get_eq(f->s, "b/2", "two");
    assert_og_error(store_sync_put_if_absent(f->s, keys, 2, "v/1.manifest", "m2!", 3, 0),
                    OG_E_EXISTS);
    assert_string_equal(og_error_last()->object, "v/1.manifest");
    get_eq(f->s, "v/1.manifest", "m1");
    /* No keys to sync: a plain create-if-absent. */
    assert_og_ok(store_sync_put_if_absent(f->s, NULL, 0, "v/2.manifest", "m2", 2, 0));
    get_eq(f->s, "v/2.manifest", "m2");
    /* Keys are checked before anything happens. */
    const char *bad[] = {"a/../x"};
    assert_og_error(store_sync_put_if_absent(f->s, bad, 1, "v/3.manifest", "m3", 2, 0),
                    OG_E_BAD_REQUEST);
    assert_og_error(store_sync_put_if_absent(f->s, keys, 2, ".og-tmp-x", "m3", 2, 0),
                    OG_E_BAD_REQUEST);
    assert_og_error(store_get(f->s, "v/3.manifest", 0, STORE_ALL, &(core_buf)CORE_BUF_INIT),
                    OG_E_NOT_FOUND);
    store_list l;
    assert_og_ok(store_list_prefix(f->s, "v/", 0, &l));
    assert_int_equal(l.count, 2);
    store_list_free(&l);
}

static void test_delete(void **state)
{
    fixture *f = *state;
    assert_og_ok(store_put(f->s, "d/1", "x", 1, 0));
    assert_og_ok(store_delete(f->s, "d/1", 0));
    core_buf b = CORE_BUF_INIT;
    assert_og_error(store_get(f->s, "d/1", 0, STORE_ALL, &b), OG_E_NOT_FOUND);
    assert_og_ok(store_delete(f->s, "d/1", 0));
    assert_og_ok(store_delete(f->s, "never/was", 0));
    /* A deleted name can be created again. */
    assert_og_ok(store_put_if_absent(f->s, "d/1", "y", 1, 0));
    core_buf_free(&b);
}

static void test_list(void **state)
{
    fixture *f = *state;
    const char *keys[] = {"t/b", "t/a/2", "t/a/1", "t/c/x/y", "t/ab", "u/z", "top"};
    for (size_t i = 0; i < 7; i++)
        assert_og_ok(store_put(f->s, keys[i], "v", 1, 0));
    store_list l;
    assert_og_ok(store_list_prefix(f->s, "t/", 0, &l));
    const char *want[] = {"t/a/1", "t/a/2", "t/ab", "t/b", "t/c/x/y"};
    assert_int_equal(l.count, 5);
    for (size_t i = 0; i < 5; i++) {
        assert_string_equal(l.items[i].key, want[i]);
        assert_int_equal(l.items[i].size, 1);
        assert_true(l.items[i].mtime_ms > 0);
        assert_false(l.items[i].is_prefix);
    }
    store_list_free(&l);
    assert_og_ok(store_list_prefix(f->s, "t/a", 0, &l));
    assert_int_equal(l.count, 3); /* t/a/1, t/a/2, t/ab */
    store_list_free(&l);
    assert_og_ok(store_list_prefix(f->s, "t/", STORE_LIST_DELIMITED, &l));
    const char *dwant[] = {"t/a/", "t/ab", "t/b", "t/c/"};
    assert_int_equal(l.count, 4);
    for (size_t i = 0; i < 4; i++)
        assert_string_equal(l.items[i].key, dwant[i]);
    assert_true(l.items[0].is_prefix);
    assert_false(l.items[1].is_prefix);
    store_list_free(&l);
    assert_og_ok(store_list_prefix(f->s, "", 0, &l));
    assert_int_equal(l.count, 7);
    assert_string_equal(l.items[6].key, "u/z");
    store_list_free(&l);
    assert_og_ok(store_list_prefix(f->s, "nothing/here/", 0, &l));
    assert_int_equal(l.count, 0);
    store_list_free(&l);
    /* A directory emptied by deletes is not a common prefix. */
    assert_og_ok(store_delete(f->s, "u/z", 0));
    assert_og_ok(store_list_prefix(f->s, "", STORE_LIST_DELIMITED, &l));
    assert_int_equal(l.count, 2); /* t/, top */
    store_list_free(&l);
}

static void test_bad_keys(void **state)
{
    fixture *f = *state;
    const char *bad[] = {"",      "/etc/passwd", "a//b", "a/../b",    "..",          "../x",
                         "a/.",   "./a",         "a/",   ".og-tmp-1", "d/.og-tmp-x", ".og-locks/x",
                         "a\x01b"};
    core_buf b = CORE_BUF_INIT;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_og_error(store_put(f->s, bad[i], "x", 1, 0), OG_E_BAD_REQUEST);
        assert_og_error(store_put_if_absent(f->s, bad[i], "x", 1, 0), OG_E_BAD_REQUEST);
        assert_og_error(store_get(f->s, bad[i], 0, STORE_ALL, &b), OG_E_BAD_REQUEST);
        assert_og_error(store_delete(f->s, bad[i], 0), OG_E_BAD_REQUEST);
    }
    char longkey[1100];
    memset(longkey, 'k', sizeof longkey - 1);
    longkey[sizeof longkey - 1] = '\0';
    assert_og_error(store_put(f->s, longkey, "x", 1, 0), OG_E_BAD_REQUEST);
    assert_og_error(store_put(f->s, NULL, "x", 1, 0), OG_E_BAD_REQUEST);
    store_list l;
    assert_og_error(store_list_prefix(f->s, "../", 0, &l), OG_E_BAD_REQUEST);
    assert_og_error(store_list_prefix(f->s, "/", 0, &l), OG_E_BAD_REQUEST);
    assert_og_ok(store_list_prefix(f->s, "a/b", 0, &l));
    store_list_free(&l);
    /* Odd but valid names are fine. */
    assert_og_ok(store_put(f->s, "with space/..x/.hidden", "x", 1, 0));
    get_eq(f->s, "with space/..x/.hidden", "x");
    core_buf_free(&b);
}

static void test_counts(void **state)
{
    fixture *f = *state;
    store_counts a, b, d;
    store_counts_get(f->s, &a);
    assert_og_ok(store_put(f->s, "k", "x", 1, 0));
    assert_og_ok(store_put_if_absent(f->s, "k2", "x", 1, 0));
    core_buf buf = CORE_BUF_INIT;
    assert_og_ok(store_get(f->s, "k", 0, STORE_ALL, &buf));
    core_buf_free(&buf);
    store_counts_get(f->s, &b);
    store_counts_diff(&b, &a, &d);
    assert_int_equal(d.ops[STORE_OP_PUT], 1);
    assert_int_equal(d.ops[STORE_OP_PUT_IF_ABSENT], 1);
    assert_int_equal(d.ops[STORE_OP_GET], 1);
    assert_int_equal(d.total_ops, 3);
    assert_int_equal(d.durable_ops, 2);
    assert_int_equal(d.fsyncs, 4); /* file + directory for each write */
    assert_int_equal(d.bytes_written, 2);
    assert_int_equal(d.bytes_read, 1);
}

/* ---- local only ------------------------------------------------------------------------ */

static void test_fsync_counts(void **state)
{
    fixture *f = *state;
    store_counts a, b, d;
    assert_og_ok(store_put(f->s, "dir/seed", "x", 1, 0));
    store_counts_get(f->s, &a);
    assert_og_ok(store_put(f->s, "dir/p", "x", 1, 0));
    store_counts_get(f->s, &b);
    store_counts_diff(&b, &a, &d);
    assert_int_equal(d.fsyncs, 2);
    a = b;
    assert_og_ok(store_delete(f->s, "dir/p", 0));
    store_counts_get(f->s, &b);
    store_counts_diff(&b, &a, &d);
    assert_int_equal(d.fsyncs, 1);
    /* Losing a create costs no fsync. */
    a = b;
    assert_og_error(store_put_if_absent(f->s, "dir/seed", "y", 1, 0), OG_E_EXISTS);
    store_counts_get(f->s, &b);
    store_counts_diff(&b, &a, &d);
    assert_int_equal(d.fsyncs, 0);
    /* New directories: each new directory's parent is synced too. */
    a = b;
    assert_og_ok(store_put(f->s, "n1/n2/n3/obj", "x", 1, 0));
    store_counts_get(f->s, &b);
    store_counts_diff(&b, &a, &d);
    assert_int_equal(d.fsyncs, 2 + 3);
    /* Unsynced writes, then one sync: files once each, the shared directory once. */
    a = b;
    assert_og_ok(store_put(f->s, "dir/u1", "x", 1, STORE_F_NOSYNC));
    assert_og_ok(store_put(f->s, "dir/u2", "x", 1, STORE_F_NOSYNC));
    assert_og_ok(store_put_if_absent(f->s, "dir/u3", "x", 1, STORE_F_NOSYNC));
    store_counts_get(f->s, &b);
    store_counts_diff(&b, &a, &d);
    assert_int_equal(d.fsyncs, 0);
    const char *keys[] = {"dir/u1", "dir/u2", "dir/u3"};
    assert_og_ok(store_sync(f->s, keys, 3));
    store_counts_get(f->s, &a);
    store_counts_diff(&a, &b, &d);
    assert_int_equal(d.fsyncs, 4);
}

/* The fused publish flushes the keys, their directories and the new object's temporary in
 * one round, then links and syncs the new object's directory: the same fsyncs as sync +
 * put_if_absent (each file once, each directory once), in two rounds instead of four. */
static int count_tmp_files(const char *dir);

static void test_sync_put_if_absent_fsyncs(void **state)
{
    fixture *f = *state;
    for (int i = 0; i < 2; i++) {
        assert_og_ok(store_put(f->s, "data/seed", "x", 1, 0)); /* directories exist */
        assert_og_ok(store_put(f->s, "txn/seed", "x", 1, 0));
        assert_og_ok(store_put(f->s, "ver/seed", "x", 1, 0));
    }
    assert_og_ok(store_put(f->s, "data/d1", "d1", 2, STORE_F_NOSYNC));
    assert_og_ok(store_put(f->s, "data/d2", "d2", 2, STORE_F_NOSYNC));
    assert_og_ok(store_put(f->s, "txn/t", "t", 1, STORE_F_NOSYNC));
    const char *keys[] = {"data/d1", "data/d2", "txn/t"};
    store_counts a, b, d;
    store_counts_get(f->s, &a);
    assert_og_ok(store_sync_put_if_absent(f->s, keys, 3, "ver/1", "m", 1, 0));
    store_counts_get(f->s, &b);
    store_counts_diff(&b, &a, &d);
    /* 3 files + data/ + txn/ + the manifest's temporary, then ver/ */
    assert_int_equal(d.fsyncs, 7);
    /* The same through the composed path costs the same fsyncs. */
    assert_og_ok(store_put(f->s, "data/d3", "d3", 2, STORE_F_NOSYNC));
    const char *k3[] = {"data/d3"};
    a = b;
    assert_og_ok(store_sync(f->s, k3, 1));
    assert_og_ok(store_put_if_absent(f->s, "ver/2", "m", 1, 0));
    store_counts_get(f->s, &b);
    store_counts_diff(&b, &a, &d);
    assert_int_equal(d.fsyncs, 2 + 2);
    /* Losing the create: the keys are still synced, nothing is written for the loser. */
    assert_og_ok(store_put(f->s, "data/d4", "d4", 2, STORE_F_NOSYNC));
    const char *k4[] = {"data/d4"};
    a = b;
    assert_og_error(store_sync_put_if_absent(f->s, k4, 1, "ver/1", "m", 1, 0), OG_E_EXISTS);
    store_counts_get(f->s, &b);
    store_counts_diff(&b, &a, &d);
    assert_int_equal(d.fsyncs, 2);
    /* A key deleted since its write is skipped (its directory is still synced). */
    assert_og_ok(store_put(f->s, "data/gone", "g", 1, STORE_F_NOSYNC));
    assert_og_ok(store_delete(f->s, "data/gone", STORE_F_NOSYNC));
    const char *kg[] = {"data/gone"};
    a = b;
    assert_og_ok(store_sync_put_if_absent(f->s, kg, 1, "ver/3", "m", 1, 0));
    store_counts_get(f->s, &b);
    store_counts_diff(&b, &a, &d);
    assert_int_equal(d.fsyncs, 1 + 1 + 1);
    /* Many keys in many directories: more flushes than sync workers, all done once. */
    char names[20][32];
    const char *many[20];
    for (int i = 0; i < 20; i++) {
        snprintf(names[i], sizeof names[i], "m%d/k%d", i % 5, i);
        assert_og_ok(store_put(f->s, names[i], "z", 1, STORE_F_NOSYNC));
        many[i] = names[i];
    }
    store_counts_get(f->s, &a);
    assert_og_ok(store_sync_put_if_absent(f->s, many, 20, "ver/4", "m", 1, 0));
    store_counts_get(f->s, &b);
    store_counts_diff(&b, &a, &d);
    assert_int_equal(d.fsyncs, 20 + 5 + 1 + 1);
    /* Temporaries are kept ready in the directories it published into (ver/ at least);
     * closing the store removes them. */
    int pooled = count_tmp_files(f->dir);
    assert_true(pooled >= 0 && pooled <= 4 * 2);
    store_close(f->s);
    assert_int_equal(count_tmp_files(f->dir), 0);
    assert_og_ok(store_local_open(&f->s, f->dir));
    /* Read-only handles refuse it. */
    store *ro;
    assert_og_ok(store_local_open_readonly(&ro, f->dir));
    assert_og_error(store_sync_put_if_absent(ro, keys, 3, "ver/9", "m", 1, 0), OG_E_STORAGE);
    store_close(ro);
}

static int count_tmp_files(const char *dir)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "find '%s' -name '.og-tmp-*' | wc -l", dir);
    FILE *p = popen(cmd, "r");
    int n = -1;
    if (fscanf(p, "%d", &n) != 1) n = -1;
    pclose(p);
    return n;
}

static void test_temporaries(void **state)
{
    fixture *f = *state;
    assert_og_ok(store_put(f->s, "d/real", "x", 1, 0));
    /* An abandoned temporary (no writer holds its lock) and one a live writer holds. */
    char p1[512], p2[512];
    snprintf(p1, sizeof p1, "%s/d/.og-tmp-dead", f->dir);
    snprintf(p2, sizeof p2, "%s/d/.og-tmp-live", f->dir);
    test_write_file(p1, "partial", 7);
    test_write_file(p2, "partial", 7);
    int live = open(p2, O_RDONLY);
    assert_true(live >= 0);
    assert_int_equal(flock(live, LOCK_EX), 0);
    store_list l;
    assert_og_ok(store_list_prefix(f->s, "d/", 0, &l));
    assert_int_equal(l.count, 1);
    assert_string_equal(l.items[0].key, "d/real");
    store_list_free(&l);
    /* The lock is per open file description, so a second open in this process conflicts. */
    uint64_t removed = 0;
    assert_og_ok(store_local_reclaim_temps(f->s, &removed));
    assert_int_equal(removed, 1);
    assert_int_equal(access(p1, F_OK), -1);
    assert_int_equal(access(p2, F_OK), 0);
    close(live);
    assert_og_ok(store_local_reclaim_temps(f->s, &removed));
    assert_int_equal(removed, 1);
    assert_int_equal(count_tmp_files(f->dir), 0);
    /* A newborn (created by name, not yet locked by its creator) is spared while it is young;
     * one a minute old is a creator's that died before its lock. */
    char p3[512];
    snprintf(p3, sizeof p3, "%s/d/" STORE_LOCAL_TMP_PREFIX "new-1-2-3", f->dir);
    test_write_file(p3, "", 0);
    assert_og_ok(store_local_reclaim_temps(f->s, &removed));
    assert_int_equal(removed, 0);
    assert_int_equal(access(p3, F_OK), 0);
    struct timespec old[2] = {{.tv_sec = time(NULL) - 61}, {.tv_sec = time(NULL) - 61}};
    assert_int_equal(utimensat(AT_FDCWD, p3, old, 0), 0);
    assert_og_ok(store_local_reclaim_temps(f->s, &removed));
    assert_int_equal(removed, 1);
    assert_int_equal(count_tmp_files(f->dir), 0);
}

/* Writes into directories with pooled temporaries: where the filesystem has O_TMPFILE and
 * /proc/self/fd (probed here independently of the store), the data files of a commit (unsynced
 * puts, linked before they are flushed) go through unnamed files linked straight under their
 * key, so no named temporary ever appears in their directory; the directory of the published
 * objects (flushed before they are linked) keeps named ones. Either way put still replaces an
 * existing object atomically and put_if_absent still refuses one. */
static void test_pooled_temporaries(void **state)
{
    fixture *f = *state;
    int expect = 0;
    int fd = open(f->dir, O_TMPFILE | O_WRONLY, 0644);
    if (fd >= 0) {
        char proc[64], name[512];
        snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
        snprintf(name, sizeof name, "%s/probe", f->dir);
        expect = linkat(AT_FDCWD, proc, AT_FDCWD, name, AT_SYMLINK_FOLLOW) == 0;
        unlink(name);
        close(fd);
    }
    assert_int_equal(store_local_unnamed_temps(f->s), expect);
    assert_og_ok(store_put(f->s, "d/x", "x", 1, STORE_F_NOSYNC));
    const char *k0[] = {"d/x"};
    assert_og_ok(store_sync_put_if_absent(f->s, k0, 1, "v/0", "m0", 2, 0)); /* wants v/, d/ */
    for (int i = 1; i <= 20; i++) {
        struct timespec ts = {0, 5 * 1000 * 1000}; /* time for the pool to refill */
        nanosleep(&ts, NULL);
        char val[32], key[32], data[32];
        snprintf(val, sizeof val, "hint %d", i);
        assert_og_ok(store_put(f->s, "v/hint", val, strlen(val), 0)); /* replaces from i = 2 */
        get_eq(f->s, "v/hint", val);
        snprintf(data, sizeof data, "d/x%d", i);
        assert_og_ok(store_put(f->s, data, val, strlen(val), STORE_F_NOSYNC));
        const char *k[] = {data};
        snprintf(key, sizeof key, "v/%d", i);
        assert_og_ok(store_sync_put_if_absent(f->s, k, 1, key, val, strlen(val), 0));
        assert_og_error(store_put_if_absent(f->s, key, "other", 5, 0), OG_E_EXISTS);
        assert_og_error(store_sync_put_if_absent(f->s, k, 1, key, "other", 5, 0), OG_E_EXISTS);
        get_eq(f->s, key, val);
        get_eq(f->s, data, val);
        char d[512], v[512];
        snprintf(d, sizeof d, "%s/d", f->dir);
        snprintf(v, sizeof v, "%s/v", f->dir);
        if (expect) assert_int_equal(count_tmp_files(d), 0);
        assert_true(count_tmp_files(v) <= 2); /* the pool's named ones, at most */
    }
    store_list l;
    assert_og_ok(store_list_prefix(f->s, "v/", 0, &l));
    assert_int_equal(l.count, 22); /* v/0 .. v/20 and v/hint */
    store_list_free(&l);
}

static ino_t inode_of(const fixture *f, const char *key)
{
    char p[512];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", f->dir, key);
    assert_int_equal(stat(p, &st), 0);
    return st.st_ino;
}

/* delete with STORE_F_RECYCLE: the key is gone at once (get, head, list), the storage is kept
 * as a locked temporary and the next write into that directory gets it (same inode) with none
 * of the old bytes; other directories do not; a forked child neither recycles nor reuses the
 * parent's; close removes what is left. */
static void test_recycle(void **state)
{
    fixture *f = *state;
    assert_og_ok(store_put(f->s, "r/a", "first object", 12, 0));
    ino_t ino = inode_of(f, "r/a");
    assert_og_ok(store_delete(f->s, "r/a", STORE_F_RECYCLE | STORE_F_NOSYNC));
    store_meta m;
    assert_og_error(store_head(f->s, "r/a", &m), OG_E_NOT_FOUND);
    store_list l;
    assert_og_ok(store_list_prefix(f->s, "r/", 0, &l));
    assert_int_equal(l.count, 0);
    store_list_free(&l);
    char rdir[512];
    snprintf(rdir, sizeof rdir, "%s/r", f->dir);
    assert_int_equal(count_tmp_files(rdir), 1);
    uint64_t removed = 0;
    assert_og_ok(store_local_reclaim_temps(f->s, &removed)); /* locked: ours, kept */
    assert_int_equal(removed, 0);
    /* another directory does not take it */
    assert_og_ok(store_put(f->s, "q/b", "b", 1, 0));
    assert_true(inode_of(f, "q/b") != ino);
    /* the next write into r/ does, shorter than the old bytes */
    assert_og_ok(store_put(f->s, "r/b", "new", 3, STORE_F_NOSYNC));
    assert_int_equal(inode_of(f, "r/b"), ino);
    get_eq(f->s, "r/b", "new");
    assert_int_equal(count_tmp_files(rdir), 0);
    /* a delete of nothing recycles nothing and succeeds */
    assert_og_ok(store_delete(f->s, "r/none", STORE_F_RECYCLE));
    /* a forked child unlinks instead, and does not take the parent's */
    assert_og_ok(store_delete(f->s, "r/b", STORE_F_RECYCLE));
    pid_t pid = fork();
    if (pid == 0) {
        int bad = store_put(f->s, "r/c", "c", 1, 0) != 0 || inode_of(f, "r/c") == ino ||
                  store_delete(f->s, "r/c", STORE_F_RECYCLE) != 0;
        _exit(bad);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_equal(count_tmp_files(rdir), 1); /* the parent's recycled r/b only */
    store_close(f->s);
    f->s = NULL;
    assert_int_equal(count_tmp_files(rdir), 0);
    assert_og_ok(store_local_open(&f->s, f->dir));
}

/* A child process dies at each step inside put and put_if_absent; the object is always the
 * old one or the whole new one, never partial, and no temporary is ever listed. */
static void test_crash_inside_put(void **state)
{
    fixture *f = *state;
    const char *points[] = {"store.local.after_tmp_write", "store.local.after_tmp_sync",
                            "store.local.after_publish"};
    for (int use_pia = 0; use_pia < 2; use_pia++) {
        for (size_t i = 0; i < 3; i++) {
            char key[64];
            snprintf(key, sizeof key, "c/%d-%zu", use_pia, i);
            if (!use_pia) assert_og_ok(store_put(f->s, key, "old-contents", 12, 0));
            pid_t pid = fork();
            if (pid == 0) {
                core_fp_set(points[i], CORE_FP_EXIT, 9, 0);
                store *s;
                if (store_local_open(&s, f->dir) != 0) _exit(1);
                if (use_pia)
                    store_put_if_absent(s, key, "NEW-CONTENTS-LONGER", 19, 0);
                else
                    store_put(s, key, "NEW-CONTENTS-LONGER", 19, 0);
                _exit(0);
            }
            int st;
            waitpid(pid, &st, 0);
            assert_true(WIFEXITED(st));
            assert_int_equal(WEXITSTATUS(st), 9);
            core_buf b = CORE_BUF_INIT;
            int rc = store_get(f->s, key, 0, STORE_ALL, &b);
            if (i < 2) {
                /* Not yet published: the old state. */
                if (use_pia)
                    assert_og_error(rc, OG_E_NOT_FOUND);
                else
                    get_eq(f->s, key, "old-contents");
            } else {
                get_eq(f->s, key, "NEW-CONTENTS-LONGER");
            }
            core_buf_free(&b);
            store_list l;
            assert_og_ok(store_list_prefix(f->s, "c/", 0, &l));
            for (size_t j = 0; j < l.count; j++)
                assert_null(strstr(l.items[j].key, ".og-tmp-"));
            store_list_free(&l);
        }
    }
    uint64_t removed = 0;
    assert_og_ok(store_local_reclaim_temps(f->s, &removed));
    assert_true(removed >= 4); /* the writers that died before publishing or before cleanup */
    assert_int_equal(count_tmp_files(f->dir), 0);
}

/* A child dies at each step inside the fused publish: before the link the new object is
 * absent (and the synced keys are whole), after it present; no temporary is ever listed and
 * the reclaimer removes what the dead writers left. */
static void test_crash_inside_sync_put_if_absent(void **state)
{
    fixture *f = *state;
    const char *points[] = {"store.local.after_tmp_write", "store.local.after_batch_sync",
                            "store.local.after_publish"};
    for (size_t i = 0; i < 3; i++) {
        char key[64], dkey[64];
        snprintf(key, sizeof key, "v/%zu.manifest", i);
        snprintf(dkey, sizeof dkey, "d/%zu.lance", i);
        pid_t pid = fork();
        if (pid == 0) {
            store *s;
            if (store_local_open(&s, f->dir) != 0) _exit(1);
            if (store_put(s, dkey, "DATA", 4, STORE_F_NOSYNC) != 0) _exit(2);
            core_fp_set(points[i], CORE_FP_EXIT, 9, 0); /* armed after the data's own put */
            const char *keys[] = {dkey};
            store_sync_put_if_absent(s, keys, 1, key, "MANIFEST", 8, 0);
            _exit(0);
        }
        int st;
        waitpid(pid, &st, 0);
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), 9);
        get_eq(f->s, dkey, "DATA");
        core_buf b = CORE_BUF_INIT;
        int rc = store_get(f->s, key, 0, STORE_ALL, &b);
        core_buf_free(&b);
        if (i < 2)
            assert_og_error(rc, OG_E_NOT_FOUND);
        else
            get_eq(f->s, key, "MANIFEST");
        store_list l;
        assert_og_ok(store_list_prefix(f->s, "", 0, &l));
        for (size_t j = 0; j < l.count; j++)
            assert_null(strstr(l.items[j].key, ".og-tmp-"));
        store_list_free(&l);
        /* The name is still free for the next writer when the dead one did not publish. */
        if (i < 2) assert_og_ok(store_put_if_absent(f->s, key, "NEXT", 4, 0));
    }
    /* Each dead writer left its unpublished or not yet unlinked temporary, and maybe
     * temporaries its pool had made ready: all unlocked now, all reclaimed. */
    uint64_t removed = 0;
    assert_og_ok(store_local_reclaim_temps(f->s, &removed));
    assert_true(removed >= 3);
    assert_int_equal(count_tmp_files(f->dir), 0);
}

static void test_locks(void **state)
{
    fixture *f = *state;
    store_lock *a = NULL, *b = NULL, *c = NULL;
    assert_og_ok(store_lock_acquire(f->s, "graph/branch/main", 0, &a));
    assert_true(store_lock_is_real(a));
    assert_og_error(store_lock_acquire(f->s, "graph/branch/main", 0, &b), OG_E_CONFLICT);
    assert_string_equal(og_error_last()->object, "graph/branch/main");
    assert_null(b);
    /* Escaping keeps distinct names distinct. */
    assert_og_ok(store_lock_acquire(f->s, "graph/branch%2Fmain", 0, &c));
    store_lock_release(c);
    assert_og_error(store_lock_acquire(f->s, "bad//name", 0, &b), OG_E_BAD_REQUEST);
    store_lock_release(a);
    assert_og_ok(store_lock_acquire(f->s, "graph/branch/main", 0, &b));
    store_lock_release(b);
    store_lock_release(NULL);
    /* Lock files are never listed. */
    store_list l;
    assert_og_ok(store_list_prefix(f->s, "", 0, &l));
    for (size_t i = 0; i < l.count; i++)
        assert_null(strstr(l.items[i].key, ".og-"));
    store_list_free(&l);
}

/* A lock released with removal (one per operation, so lock files do not pile up) is never
 * split: a process waiting on the removed file retries on the current one, and holds it
 * exclusively. */
static void test_lock_remove(void **state)
{
    fixture *f = *state;
    int up[2], down[2];
    assert_int_equal(pipe(up), 0);
    assert_int_equal(pipe(down), 0);
    /* Forked before the lock exists, so the child shares no descriptor of it. */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        store *s = NULL;
        store_lock *l = NULL;
        char c = 'x';
        close(up[0]);
        close(down[1]);
        if (read(down[0], &c, 1) != 1) _exit(2); /* go */
        if (store_local_open(&s, f->dir) != 0 ||
            store_lock_acquire(s, "sidecar-1", STORE_LOCK_WAIT_FOREVER, &l) != 0)
            _exit(1);
        if (write(up[1], &c, 1) != 1 || read(down[0], &c, 1) != 1) _exit(2);
        store_lock_release_remove(l);
        store_close(s);
        _exit(0);
    }
    close(up[1]);
    close(down[0]);
    store_lock *a = NULL;
    assert_og_ok(store_lock_acquire(f->s, "sidecar-1", 0, &a));
    char c = 'g';
    assert_int_equal(write(down[1], &c, 1), 1);
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL); /* let the child block on the file we are about to remove */
    store_lock_release_remove(a);
    assert_int_equal(read(up[0], &c, 1), 1); /* the child holds it now */
    store_lock *b = NULL;
    assert_og_error(store_lock_acquire(f->s, "sidecar-1", 0, &b), OG_E_CONFLICT);
    assert_int_equal(write(down[1], &c, 1), 1);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_og_ok(store_lock_acquire(f->s, "sidecar-1", 0, &b));
    store_lock_release_remove(b);
    char path[512];
    struct stat st;
    snprintf(path, sizeof path, "%s/.og-locks/sidecar-1", f->dir);
    assert_int_equal(stat(path, &st), -1); /* removed by its last holder */
    close(up[0]);
    close(down[1]);
}

/* Another process holds a lock; we time out; it dies; the kernel released the lock. */
static void test_lock_across_processes(void **state)
{
    fixture *f = *state;
    int ready[2], go[2];
    assert_int_equal(pipe(ready), 0);
    assert_int_equal(pipe(go), 0);
    pid_t pid = fork();
    if (pid == 0) {
        store *s;
        store_lock *l;
        if (store_local_open(&s, f->dir) != 0 || store_lock_acquire(s, "sidecar/x", 0, &l) != 0)
            _exit(1);
        if (write(ready[1], "r", 1) != 1) _exit(2);
        char c;
        if (read(go[0], &c, 1) != 1) _exit(3);
        _exit(0); /* dies holding the lock */
    }
    char c;
    assert_int_equal(read(ready[0], &c, 1), 1);
    store_lock *l = NULL;
    assert_og_error(store_lock_acquire(f->s, "sidecar/x", 30, &l), OG_E_CONFLICT);
    assert_int_equal(write(go[1], "g", 1), 1);
    int st;
    waitpid(pid, &st, 0);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_og_ok(store_lock_acquire(f->s, "sidecar/x", STORE_LOCK_WAIT_FOREVER, &l));
    store_lock_release(l);
}

/* Read-only opens write nothing: no probe, no root, every write refused. */
static void test_readonly(void **state)
{
    fixture *f = *state;
    assert_og_ok(store_put(f->s, "r/x", "1", 1, 0));
    store *ro = NULL;
    assert_og_ok(store_local_open_readonly(&ro, f->dir));
    get_eq(ro, "r/x", "1");
    store_list l;
    assert_og_ok(store_list_prefix(ro, "", 0, &l));
    assert_int_equal(l.count, 1);
    store_list_free(&l);
    assert_og_error(store_put(ro, "r/y", "2", 1, 0), OG_E_STORAGE);
    assert_int_equal(og_error_last()->storage_kind, OG_STORAGE_PERMISSION);
    assert_og_error(store_put_if_absent(ro, "r/y", "2", 1, 0), OG_E_STORAGE);
    assert_og_error(store_delete(ro, "r/x", 0), OG_E_STORAGE);
    store_lock *lk = NULL;
    assert_og_error(store_lock_acquire(ro, "l", 0, &lk), OG_E_STORAGE);
    store_close(ro);
    char missing[512];
    snprintf(missing, sizeof missing, "%s/not-there", f->dir);
    assert_og_error(store_local_open_readonly(&ro, missing), OG_E_STORAGE);
    assert_int_equal(access(missing, F_OK), -1); /* not created */
}

static void test_nested_root(void **state)
{
    (void)state;
    char dir[256], root[400];
    test_sandbox_new(dir, sizeof dir, "root");
    snprintf(root, sizeof root, "%s/x/y/z", dir);
    store *s;
    assert_og_ok(store_local_open(&s, root));
    assert_string_equal(store_local_root(s), root);
    assert_og_ok(store_put(s, "k", "v", 1, 0));
    store_close(s);
    char path[512];
    snprintf(path, sizeof path, "%s/k", root);
    assert_int_equal(access(path, F_OK), 0);
    test_sandbox_done(dir);
    /* A root that cannot be created is a storage error naming it. */
    assert_og_error(store_local_open(&s, "/proc/no/such/root"), OG_E_STORAGE);
}

#define CONTRACT(fn)                                                                               \
    cmocka_unit_test_setup_teardown(fn, setup_local, teardown),                                    \
        cmocka_unit_test_setup_teardown(fn, setup_fault, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        CONTRACT(test_put_get),
        CONTRACT(test_range),
        CONTRACT(test_head),
        CONTRACT(test_put_if_absent),
        CONTRACT(test_sync_put_if_absent),
        CONTRACT(test_delete),
        CONTRACT(test_list),
        CONTRACT(test_bad_keys),
        CONTRACT(test_counts),
        cmocka_unit_test_setup_teardown(test_fsync_counts, setup_local, teardown),
        cmocka_unit_test_setup_teardown(test_temporaries, setup_local, teardown),
        cmocka_unit_test_setup_teardown(test_pooled_temporaries, setup_local, teardown),
        cmocka_unit_test_setup_teardown(test_recycle, setup_local, teardown),
        cmocka_unit_test_setup_teardown(test_crash_inside_put, setup_local, teardown),
        cmocka_unit_test_setup_teardown(test_sync_put_if_absent_fsyncs, setup_local, teardown),
        cmocka_unit_test_setup_teardown(test_crash_inside_sync_put_if_absent, setup_local,
                                        teardown),
        CONTRACT(test_locks),
        cmocka_unit_test_setup_teardown(test_lock_across_processes, setup_local, teardown),
        cmocka_unit_test_setup_teardown(test_lock_remove, setup_local, teardown),
        cmocka_unit_test_setup_teardown(test_readonly, setup_local, teardown),
        cmocka_unit_test(test_nested_root),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
