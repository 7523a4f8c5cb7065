/* Races on create-if-absent: separate processes and threads hit the same keys; every round
 * has exactly one winner, and the object holds the winner's bytes. And a reclaimer of dead
 * writers' temporaries running beside a live writer never takes the writer's, nor the one a
 * store open probes its root's hard links with. */
#include "testutil.h"

#include "core/failpoint.h"
#include "store/store.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define ROUNDS 400
#define PROCS 2

static void child(const char *dir, int id, int go_fd, int out_fd)
{
    store *s;
    if (store_local_open(&s, dir) != 0) _exit(2);
    char c;
    if (read(go_fd, &c, 1) != 1) _exit(3);
    unsigned char won[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        char key[64], val[32];
        snprintf(key, sizeof key, "race/%04d", r);
        int n = snprintf(val, sizeof val, "writer-%d", id);
        int rc = store_put_if_absent(s, key, val, (size_t)n, 0);
        if (rc != 0 && rc != OG_E_EXISTS) _exit(4);
        won[r] = rc == 0;
    }
    store_close(s);
    if (write(out_fd, won, sizeof won) != (ssize_t)sizeof won) _exit(5);
    _exit(0);
}

static void test_two_processes(void **state)
{
    (void)state;
    char dir[256];
    test_sandbox_new(dir, sizeof dir, "race");
    int go[2], out[PROCS][2];
    assert_int_equal(pipe(go), 0);
    pid_t pids[PROCS];
    for (int i = 0; i < PROCS; i++) {
        assert_int_equal(pipe(out[i]), 0);
        pids[i] = fork();
        if (pids[i] == 0) child(dir, i, go[0], out[i][1]);
    }
    /* Release both at once. */
    assert_int_equal(write(go[1], "gg", PROCS), PROCS);
    unsigned char won[PROCS][ROUNDS];
    for (int i = 0; i < PROCS; i++) {
        size_t got = 0;
        while (got < ROUNDS) {
            ssize_t r = read(out[i][0], won[i] + got, ROUNDS - got);
            assert_true(r > 0);
            got += (size_t)r;
        }
        int st;
        waitpid(pids[i], &st, 0);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    store *s;
    assert_og_ok(store_local_open(&s, dir));
    int wins[PROCS] = {0};
    core_buf b = CORE_BUF_INIT;
    for (int r = 0; r < ROUNDS; r++) {
        int winners = 0, who = -1;
        for (int i = 0; i < PROCS; i++)
            if (won[i][r]) {
                winners++;
                who = i;
            }
        assert_int_equal(winners, 1);
        wins[who]++;
        char key[64], want[32];
        snprintf(key, sizeof key, "race/%04d", r);
        snprintf(want, sizeof want, "writer-%d", who);
        assert_og_ok(store_get(s, key, 0, STORE_ALL, &b));
        assert_int_equal(b.len, strlen(want));
        assert_memory_equal(b.data, want, b.len);
    }
    print_message("put_if_absent race: %d rounds, wins %d / %d\n", ROUNDS, wins[0], wins[1]);
    core_buf_free(&b);
    test_sandbox_store_done(dir, s);
}

typedef struct thread_arg {
    store *s;
    int id;
    pthread_barrier_t *bar;
    unsigned char won[ROUNDS];
} thread_arg;

static void *thread_main(void *p)
{
    thread_arg *a = p;
    pthread_barrier_wait(a->bar);
    for (int r = 0; r < ROUNDS; r++) {
        char key[64], val[32];
        snprintf(key, sizeof key, "t/%04d", r);
        int n = snprintf(val, sizeof val, "thread-%d", a->id);
        int rc = store_put_if_absent(a->s, key, val, (size_t)n, 0);
        a->won[r] = rc == 0 ? 1 : rc == OG_E_EXISTS ? 0 : 2;
    }
    return NULL;
}

typedef struct reclaim_loop {
    store *s;
    _Atomic int stop;
    uint64_t removed;
} reclaim_loop;

static void *reclaim_main(void *p)
{
    reclaim_loop *r = p;
    while (!atomic_load(&r->stop)) {
        uint64_t n = 0;
        if (store_local_reclaim_temps(r->s, &n) == 0) r->removed += n;
    }
    return NULL;
}

/* Unsynced puts that replace an object, in a directory with pooled temporaries (unnamed ones
 * where the filesystem allows: the replace then names it first), while another handle reclaims
 * temporaries in a loop: no put may lose its temporary to the reclaimer. */
static void test_reclaim_beside_writer(void **state)
{
    (void)state;
    char dir[256];
    test_sandbox_new(dir, sizeof dir, "reclaim");
    store *s, *s2;
    assert_og_ok(store_local_open(&s, dir));
    assert_og_ok(store_local_open(&s2, dir));
    assert_og_ok(store_put(s, "d/y", "old", 3, STORE_F_NOSYNC));
    reclaim_loop r = {s2, 0, 0};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, reclaim_main, &r), 0);
    int failed = 0;
    char first[512] = "";
    for (int i = 0; i < 3000; i++) {
        if (i % 64 == 0) { /* keeps d/ a directory the pool feeds */
            char key[32];
            snprintf(key, sizeof key, "v/%d", i);
            const char *keys[] = {"d/y"};
            assert_og_ok(store_sync_put_if_absent(s, keys, 1, key, "m", 1, 0));
        }
        char val[32];
        int n = snprintf(val, sizeof val, "new %d", i);
        if (store_put(s, "d/y", val, (size_t)n, STORE_F_NOSYNC) != 0 && !failed++)
            snprintf(first, sizeof first, "%s", og_error_last()->message);
    }
    atomic_store(&r.stop, 1);
    pthread_join(th, NULL);
    if (failed) fail_msg("%d puts failed beside the reclaimer; the first: %s", failed, first);
    core_buf b = CORE_BUF_INIT;
    assert_og_ok(store_get(s, "d/y", 0, STORE_ALL, &b));
    assert_int_equal(b.len, strlen("new 2999"));
    assert_memory_equal(b.data, "new 2999", b.len);
    core_buf_free(&b);
    store_close(s2);
    test_sandbox_store_done(dir, s);
}

/* Opening a store probes its root for hard links with a temporary of its own; a reclaimer of
 * dead writers' temporaries running meanwhile (another handle's cleanup) must not take it:
 * the open would fail, saying the filesystem has no hard links. Where the filesystem has no
 * unnamed temporaries (armed here by a failpoint) the probe's is made by name, unlocked until
 * its lock: young, under a newborn's name, the reclaimer spares it. */
static void reclaim_beside_open(bool by_name)
{
    char dir[256];
    test_sandbox_new(dir, sizeof dir, "reclaim-open");
    store *s2;
    assert_og_ok(store_local_open(&s2, dir));
    reclaim_loop r = {s2, 0, 0};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, reclaim_main, &r), 0);
    if (by_name) assert_og_ok(core_fp_set("store.local.no_unnamed_temps", CORE_FP_ERROR, 0, 0));
    int failed = 0;
    char first[512] = "";
    for (int i = 0; i < 3000; i++) {
        store *s = NULL;
        if (store_local_open(&s, dir) != 0) {
            if (!failed++) snprintf(first, sizeof first, "%s", og_error_last()->message);
            continue;
        }
        store_close(s);
    }
    uint64_t hits = by_name ? core_fp_hits("store.local.no_unnamed_temps") : 0;
    core_fp_clear_all();
    atomic_store(&r.stop, 1);
    pthread_join(th, NULL);
    if (failed) print_message("%d of 3000 opens failed; the first: %s\n", failed, first);
    assert_int_equal(failed, 0);
    if (by_name) assert_true(hits >= 3000);
    test_sandbox_store_done(dir, s2);
}

static void test_reclaim_beside_open(void **state)
{
    (void)state;
    reclaim_beside_open(false);
}

static void test_reclaim_beside_open_by_name(void **state)
{
    (void)state;
    reclaim_beside_open(true);
}

static void test_threads(void **state)
{
    (void)state;
    char dir[256];
    test_sandbox_new(dir, sizeof dir, "trace");
    store *s;
    assert_og_ok(store_local_open(&s, dir));
    enum { T = 4 };
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, T);
    thread_arg args[T];
    pthread_t th[T];
    for (int i = 0; i < T; i++) {
        args[i] = (thread_arg){.s = s, .id = i, .bar = &bar};
        pthread_create(&th[i], NULL, thread_main, &args[i]);
    }
    for (int i = 0; i < T; i++)
        pthread_join(th[i], NULL);
    for (int r = 0; r < ROUNDS; r++) {
        int winners = 0;
        for (int i = 0; i < T; i++) {
            assert_true(args[i].won[r] != 2);
            winners += args[i].won[r];
        }
        assert_int_equal(winners, 1);
    }
    pthread_barrier_destroy(&bar);
    test_sandbox_store_done(dir, s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_processes),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_reclaim_beside_writer),
        cmocka_unit_test(test_reclaim_beside_open),
        cmocka_unit_test(test_reclaim_beside_open_by_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
