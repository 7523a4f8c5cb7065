/* Ordered gates: total order, exclusion across handles and processes, no deadlock under
 * threads taking overlapping sets in arbitrary order; shared mode (shared holders coexist,
 * exclusive waits for shared and shared for exclusive, in a process and across processes,
 * covers, a backend without shared locks falls back to exclusive); the test-only switch that
 * turns the gates off. */
#include "testutil.h"

#include "write/gates.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct fixture {
    char dir[256];
    store *s;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->s = test_sandbox_store(f->dir, sizeof f->dir, "gates");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    test_sandbox_store_done(f->dir, f->s);
    free(f);
    return 0;
}

static void test_total_order(void **state)
{
    fixture *f = *state;
    write_gates *g;
    assert_og_ok(write_gates_open(&g, f->s, f->dir));
    write_gate_key keys[] = {
        {WRITE_GATE_TABLE, "main", "nodes/Person", false},
        {WRITE_GATE_BRANCH, "main", NULL, false},
        {WRITE_GATE_TABLE, "feat", "nodes/Zed", false},
        {WRITE_GATE_SCHEMA, "schema", NULL, false},
        {WRITE_GATE_CLAIM, "retention", NULL, false},
        {WRITE_GATE_TABLE, "main", "edges/Knows", false},
        {WRITE_GATE_TABLE, "main", "nodes/Person", false}, /* duplicate */
    };
    write_gate_set *set;
    assert_og_ok(write_gates_acquire(g, keys, 7, 0, &set));
    const char *want[] = {"0:retention",      "1:schema",           "2:main",
                          "3:feat/nodes/Zed", "3:main/edges/Knows", "3:main/nodes/Person"};
    assert_int_equal(write_gate_set_count(set), 6);
    for (size_t i = 0; i < 6; i++)
        assert_string_equal(write_gate_set_name(set, i), want[i]);
    write_gate_set_release(set);
    write_gate_set_release(NULL);
    write_gate_stats st;
    write_gates_stats(g, &st);
    assert_int_equal(st.acquisitions, 1);
    write_gates_close(g);
}

static void test_exclusion_between_handles(void **state)
{
    fixture *f = *state;
    write_gates *a, *b;
    assert_og_ok(write_gates_open(&a, f->s, f->dir));
    assert_og_ok(write_gates_open(&b, f->s, f->dir));
    write_gate_key k = {WRITE_GATE_TABLE, "main", "nodes/Person", false};
    write_gate_key other = {WRITE_GATE_TABLE, "main", "nodes/Company", false};
    write_gate_set *sa, *sb;
    assert_og_ok(write_gates_acquire(a, &k, 1, 0, &sa));
    assert_og_error(write_gates_acquire(b, &k, 1, 20, &sb), OG_E_RESOURCE_LIMIT);
    assert_non_null(strstr(og_error_last()->object, "nodes/Person"));
    assert_og_ok(write_gates_acquire(b, &other, 1, 0, &sb)); /* a different table is free */
    write_gate_set_release(sb);
    write_gate_set_release(sa);
    assert_og_ok(write_gates_acquire(b, &k, 1, 0, &sb));
    write_gate_set_release(sb);
    write_gate_stats st;
    write_gates_stats(b, &st);
    assert_int_equal(st.timeouts, 1);
    write_gates_close(a);
    write_gates_close(b);
}

#define NKEYS 6
#define NTHREADS 4
#define ITERS 300

typedef struct worker {
    write_gates *g;
    unsigned seed;
    _Atomic int *inside;
    int violations;
} worker;

static const write_gate_key ALL[NKEYS] = {
    {WRITE_GATE_SCHEMA, "schema", NULL, false}, {WRITE_GATE_BRANCH, "main", NULL, false},
    {WRITE_GATE_BRANCH, "feat", NULL, false},   {WRITE_GATE_TABLE, "main", "a", false},
    {WRITE_GATE_TABLE, "main", "b", false},     {WRITE_GATE_TABLE, "feat", "a", false},
};

static void *work(void *p)
{
    worker *w = p;
    for (int it = 0; it < ITERS; it++) {
        write_gate_key ks[NKEYS];
        int idx[NKEYS], n = 0;
        for (int i = 0; i < NKEYS; i++)
            if (rand_r(&w->seed) % 2) idx[n++] = i;
        /* Hand them over in a random order: the manager must sort. */
        for (int i = n - 1; i > 0; i--) {
            int j = (int)(rand_r(&w->seed) % (unsigned)(i + 1));
            int t = idx[i];
            idx[i] = idx[j];
            idx[j] = t;
        }
        for (int i = 0; i < n; i++)
            ks[i] = ALL[idx[i]];
        write_gate_set *set;
        if (write_gates_acquire(w->g, ks, (size_t)n, STORE_LOCK_WAIT_FOREVER, &set) != 0) {
            w->violations++;
            continue;
        }
        for (int i = 0; i < n; i++)
            if (atomic_fetch_add(&w->inside[idx[i]], 1) != 0) w->violations++;
        for (int i = 0; i < n; i++)
            atomic_fetch_sub(&w->inside[idx[i]], 1);
        write_gate_set_release(set);
    }
    return NULL;
}

static void test_no_deadlock_mutual_exclusion(void **state)
{
    fixture *f = *state;
    _Atomic int inside[NKEYS] = {0};
    worker ws[NTHREADS];
    pthread_t th[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        /* Separate handles on one root share the in-process gates. */
        assert_og_ok(write_gates_open(&ws[i].g, f->s, f->dir));
        ws[i].seed = 1234u + (unsigned)i;
        ws[i].inside = inside;
        ws[i].violations = 0;
        pthread_create(&th[i], NULL, work, &ws[i]);
    }
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL); /* all, before any assert */
    for (int i = 0; i < NTHREADS; i++) {
        assert_int_equal(ws[i].violations, 0);
        write_gates_close(ws[i].g);
    }
}

static void test_exclusion_across_processes(void **state)
{
    fixture *f = *state;
    int ready[2], go[2];
    assert_int_equal(pipe(ready), 0);
    assert_int_equal(pipe(go), 0);
    write_gate_key k = {WRITE_GATE_BRANCH, "main", NULL, false};
    pid_t pid = fork();
    if (pid == 0) {
        store *s;
        write_gates *g;
        write_gate_set *set;
        if (store_local_open(&s, f->dir) || write_gates_open(&g, s, f->dir) ||
            write_gates_acquire(g, &k, 1, 0, &set))
            _exit(1);
        if (write(ready[1], "r", 1) != 1) _exit(2);
        char c;
        if (read(go[0], &c, 1) != 1) _exit(3);
        write_gate_set_release(set);
        _exit(0);
    }
    char c;
    assert_int_equal(read(ready[0], &c, 1), 1);
    write_gates *g;
    write_gate_set *set;
    assert_og_ok(write_gates_open(&g, f->s, f->dir));
    assert_og_error(write_gates_acquire(g, &k, 1, 30, &set), OG_E_RESOURCE_LIMIT);
    assert_non_null(strstr(og_error_last()->message, "process"));
    assert_int_equal(write(go[1], "g", 1), 1);
    int st;
    waitpid(pid, &st, 0);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_og_ok(write_gates_acquire(g, &k, 1, STORE_LOCK_WAIT_FOREVER, &set));
    write_gate_set_release(set);
    write_gates_close(g);
}

/* ---- shared mode ----------------------------------------------------------------------- */

static const write_gate_key SCHEMA_SH = {WRITE_GATE_SCHEMA, "schema", NULL, true};
static const write_gate_key SCHEMA_EX = {WRITE_GATE_SCHEMA, "schema", NULL, false};

/* Two shared holders coexist; an exclusive taker times out against them (typed), and a shared
 * taker against an exclusive holder; once free, each mode gets it. */
static void test_shared_holders_coexist(void **state)
{
    fixture *f = *state;
    write_gates *a, *b, *c;
    assert_og_ok(write_gates_open(&a, f->s, f->dir));
    assert_og_ok(write_gates_open(&b, f->s, f->dir));
    assert_og_ok(write_gates_open(&c, f->s, f->dir));
    write_gate_set *sa, *sb, *sc;
    assert_og_ok(write_gates_acquire(a, &SCHEMA_SH, 1, 0, &sa));
    assert_og_ok(write_gates_acquire(b, &SCHEMA_SH, 1, 0, &sb)); /* no wait */
    assert_true(write_gate_set_shared(sa, 0) && write_gate_set_shared(sb, 0));
    assert_og_error(write_gates_acquire(c, &SCHEMA_EX, 1, 20, &sc), OG_E_RESOURCE_LIMIT);
    assert_non_null(strstr(og_error_last()->object, "schema"));
    write_gate_set_release(sa);
    assert_og_error(write_gates_acquire(c, &SCHEMA_EX, 1, 0, &sc), OG_E_RESOURCE_LIMIT);
    write_gate_set_release(sb);
    assert_og_ok(write_gates_acquire(c, &SCHEMA_EX, 1, 0, &sc));
    assert_false(write_gate_set_shared(sc, 0));
    assert_og_error(write_gates_acquire(a, &SCHEMA_SH, 1, 20, &sa), OG_E_RESOURCE_LIMIT);
    write_gate_set_release(sc);
    assert_og_ok(write_gates_acquire(a, &SCHEMA_SH, 1, 0, &sa));
    write_gate_set_release(sa);
    write_gate_stats st;
    write_gates_stats(a, &st);
    assert_int_equal(st.acquisitions, 2);
    assert_int_equal(st.timeouts, 1);
    assert_int_equal(st.contended, 0); /* its takes found the gate free */
    write_gates_stats(b, &st);
    assert_int_equal(st.acquisitions, 1);
    assert_int_equal(st.contended, 0); /* a shared take beside a shared holder: no wait */
    write_gates_stats(c, &st);
    assert_int_equal(st.acquisitions, 1);
    assert_int_equal(st.timeouts, 2);
    write_gates_close(a);
    write_gates_close(b);
    write_gates_close(c);
}

typedef struct taker {
    write_gates *g;
    const write_gate_key *key;
    _Atomic int got;
    int rc;
} taker;

static void *take_forever(void *p)
{
    taker *t = p;
    write_gate_set *set = NULL;
    t->rc = write_gates_acquire(t->g, t->key, 1, STORE_LOCK_WAIT_FOREVER, &set);
    atomic_store(&t->got, 1);
    write_gate_set_release(set);
    return NULL;
}

/* Until `probe` (timeout 0) fails on `key`: the waiter has queued. Bounded. */
static bool wait_until_blocked(write_gates *probe, const write_gate_key *key)
{
    for (int i = 0; i < 20000; i++) {
        write_gate_set *set = NULL;
        if (write_gates_acquire(probe, key, 1, 0, &set) != 0) {
            og_error_clear();
            return true;
        }
        write_gate_set_release(set);
        usleep(500);
    }
    return false;
}

/* An exclusive taker waits for the shared holder (and, while it waits, holds back new shared
 * takers); a shared taker waits for the exclusive holder. Both waits are counted contended. */
static void test_exclusive_and_shared_wait_for_each_other(void **state)
{
    fixture *f = *state;
    write_gates *holder, *probe;
    assert_og_ok(write_gates_open(&holder, f->s, f->dir));
    assert_og_ok(write_gates_open(&probe, f->s, f->dir));
    write_gate_set *held = NULL;

    /* exclusive waits for shared */
    taker t = {NULL, &SCHEMA_EX, 0, -1};
    assert_og_ok(write_gates_open(&t.g, f->s, f->dir));
    assert_og_ok(write_gates_acquire(holder, &SCHEMA_SH, 1, 0, &held));
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, take_forever, &t), 0);
    /* a new shared taker is held back once the exclusive one queues */
    assert_true(wait_until_blocked(probe, &SCHEMA_SH));
    assert_int_equal(atomic_load(&t.got), 0); /* still waiting: the shared hold stands */
    write_gate_set_release(held);
    pthread_join(th, NULL);
    assert_og_ok(t.rc);
    write_gate_stats st;
    write_gates_stats(t.g, &st);
    assert_int_equal(st.acquisitions, 1);
    assert_int_equal(st.contended, 1);
    write_gates_close(t.g);

    /* shared waits for exclusive */
    taker u = {NULL, &SCHEMA_SH, 0, -1};
    assert_og_ok(write_gates_open(&u.g, f->s, f->dir));
    assert_og_ok(write_gates_acquire(holder, &SCHEMA_EX, 1, 0, &held));
    assert_int_equal(pthread_create(&th, NULL, take_forever, &u), 0);
    assert_true(wait_until_blocked(probe, &SCHEMA_SH)); /* the exclusive hold refuses it */
    assert_int_equal(atomic_load(&u.got), 0);
    write_gate_set_release(held);
    pthread_join(th, NULL);
    assert_og_ok(u.rc);
    write_gates_stats(u.g, &st);
    assert_int_equal(st.acquisitions, 1);
    write_gates_close(u.g);
    write_gates_close(holder);
    write_gates_close(probe);
}

/* An exclusive hold covers a shared request of the key, a shared hold does not cover an
 * exclusive one; one key asked twice in mixed modes is taken once, exclusive. */
static void test_covers_modes(void **state)
{
    fixture *f = *state;
    write_gates *g;
    assert_og_ok(write_gates_open(&g, f->s, f->dir));
    write_gate_key branch = {WRITE_GATE_BRANCH, "main", NULL, false};
    write_gate_key sh_set[] = {SCHEMA_SH, branch};
    write_gate_key ex_set[] = {SCHEMA_EX, branch};
    write_gate_set *set;
    assert_og_ok(write_gates_acquire(g, sh_set, 2, 0, &set));
    assert_true(write_gate_set_covers(set, sh_set, 2));
    assert_false(write_gate_set_covers(set, ex_set, 2));
    assert_true(write_gate_set_covers(set, &branch, 1));
    write_gate_set_release(set);
    assert_og_ok(write_gates_acquire(g, ex_set, 2, 0, &set));
    assert_true(write_gate_set_covers(set, ex_set, 2));
    assert_true(write_gate_set_covers(set, sh_set, 2));
    write_gate_set_release(set);
    write_gate_key mixed[] = {SCHEMA_SH, SCHEMA_EX, SCHEMA_SH};
    assert_og_ok(write_gates_acquire(g, mixed, 3, 0, &set));
    assert_int_equal(write_gate_set_count(set), 1);
    assert_false(write_gate_set_shared(set, 0));
    assert_true(write_gate_set_covers(set, ex_set, 1));
    write_gate_set_release(set);
    write_gates_close(g);
}

/* Across processes: a child's shared hold admits the parent's shared take and refuses its
 * exclusive one; the child's exclusive hold refuses the parent's shared take (flock modes). */
static void test_shared_across_processes(void **state)
{
    fixture *f = *state;
    for (int mode = 0; mode < 2; mode++) {
        const write_gate_key *child_key = mode == 0 ? &SCHEMA_SH : &SCHEMA_EX;
        int ready[2], go[2];
        assert_int_equal(pipe(ready), 0);
        assert_int_equal(pipe(go), 0);
        pid_t pid = fork();
        if (pid == 0) {
            store *s;
            write_gates *g;
            write_gate_set *set;
            if (store_local_open(&s, f->dir) || write_gates_open(&g, s, f->dir) ||
                write_gates_acquire(g, child_key, 1, 0, &set))
                _exit(1);
            if (write(ready[1], "r", 1) != 1) _exit(2);
            char c;
            if (read(go[0], &c, 1) != 1) _exit(3);
            write_gate_set_release(set);
            _exit(0);
        }
        char c;
        assert_int_equal(read(ready[0], &c, 1), 1);
        write_gates *g;
        write_gate_set *set;
        assert_og_ok(write_gates_open(&g, f->s, f->dir));
        if (mode == 0) {
            assert_og_ok(write_gates_acquire(g, &SCHEMA_SH, 1, 0, &set));
            write_gate_set_release(set);
            assert_og_error(write_gates_acquire(g, &SCHEMA_EX, 1, 30, &set), OG_E_RESOURCE_LIMIT);
        } else {
            assert_og_error(write_gates_acquire(g, &SCHEMA_SH, 1, 30, &set), OG_E_RESOURCE_LIMIT);
        }
        assert_non_null(strstr(og_error_last()->message, "process"));
        write_gate_stats st;
        write_gates_stats(g, &st);
        assert_int_equal(st.timeouts, 1);
        assert_int_equal(st.contended, 0); /* counted for sets taken after a wait only */
        assert_int_equal(write(go[1], "g", 1), 1);
        int wst;
        waitpid(pid, &wst, 0);
        assert_true(WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
        assert_og_ok(write_gates_acquire(g, &SCHEMA_EX, 1, 0, &set));
        write_gate_set_release(set);
        write_gates_close(g);
        close(ready[0]);
        close(ready[1]);
        close(go[0]);
        close(go[1]);
    }
}

/* A backend whose store_ops_ext has no lock_shared: a shared request is served exclusive
 * (it excludes more, never less). The wrapper forwards everything to a local store. */
typedef struct plain_store {
    store base;
    store *inner;
} plain_store;
#define PS(s) (((plain_store *)(s))->inner)
static int ps_get(store *s, const char *k, uint64_t o, uint64_t l, core_buf *out)
{
    return store_get(PS(s), k, o, l, out);
}
static int ps_head(store *s, const char *k, store_meta *m)
{
    return store_head(PS(s), k, m);
}
static int ps_put(store *s, const char *k, const void *d, size_t n, unsigned fl)
{
    return store_put(PS(s), k, d, n, fl);
}
static int ps_pia(store *s, const char *k, const void *d, size_t n, unsigned fl)
{
    return store_put_if_absent(PS(s), k, d, n, fl);
}
static int ps_del(store *s, const char *k, unsigned fl)
{
    return store_delete(PS(s), k, fl);
}
static int ps_list(store *s, const char *p, unsigned fl, store_list *out)
{
    return store_list_prefix(PS(s), p, fl, out);
}
static void ps_close(store *s)
{
    free(s);
}
static int ps_lock(store *s, const char *name, uint32_t timeout_ms, void **handle)
{
    store_lock *l = NULL;
    int rc = store_lock_acquire(PS(s), name, timeout_ms, &l);
    if (rc == 0) *handle = l;
    return rc;
}
static void ps_unlock(store *s, void *handle)
{
    (void)s;
    store_lock_release(handle);
}
static const store_ops PLAIN_OPS = {
    .version = STORE_OPS_VERSION,
    .name = "plain",
    .get = ps_get,
    .head = ps_head,
    .put = ps_put,
    .put_if_absent = ps_pia,
    .del = ps_del,
    .list = ps_list,
    .close = ps_close,
    .lock = ps_lock,
    .unlock = ps_unlock,
};

static void test_shared_falls_back_to_exclusive(void **state)
{
    fixture *f = *state;
    plain_store *ps = calloc(1, sizeof *ps);
    ps->base.ops = &PLAIN_OPS;
    ps->inner = f->s;
    store *s = &ps->base;
    store_lock *l1 = NULL, *l2 = NULL;
    assert_og_ok(store_lock_acquire_shared(s, "x/lock", 0, &l1));
    assert_true(store_lock_is_real(l1));
    assert_false(store_lock_is_shared(l1));
    assert_og_error(store_lock_acquire_shared(s, "x/lock", 0, &l2), OG_E_CONFLICT);
    store_lock_release(l1);
    /* the local backend itself has shared locks */
    assert_og_ok(store_lock_acquire_shared(f->s, "x/lock", 0, &l1));
    assert_og_ok(store_lock_acquire_shared(f->s, "x/lock", 0, &l2));
    assert_true(store_lock_is_shared(l1) && store_lock_is_shared(l2));
    store_lock *l3 = NULL;
    assert_og_error(store_lock_acquire(f->s, "x/lock", 0, &l3), OG_E_CONFLICT);
    store_lock_release_remove(l1); /* shared: released, the file stays for l2 */
    assert_og_error(store_lock_acquire(f->s, "x/lock", 0, &l3), OG_E_CONFLICT);
    store_lock_release(l2);
    assert_og_ok(store_lock_acquire(f->s, "x/lock", 0, &l3));
    store_lock_release(l3);
    /* gates on this backend: two "shared" holders of one key exclude each other */
    write_gates *a, *b;
    assert_og_ok(write_gates_open(&a, s, "plain-root"));
    assert_og_ok(write_gates_open(&b, f->s, "other-root")); /* its own in-process gates */
    write_gate_set *sa, *sb;
    assert_og_ok(write_gates_acquire(a, &SCHEMA_SH, 1, 0, &sa));
    assert_og_error(write_gates_acquire(b, &SCHEMA_SH, 1, 0, &sb), OG_E_RESOURCE_LIMIT);
    write_gate_set_release(sa);
    assert_og_ok(write_gates_acquire(b, &SCHEMA_SH, 1, 0, &sb));
    write_gate_set_release(sb);
    write_gates_close(a);
    write_gates_close(b);
    store_close(s);
}

/* Random sets in random modes from several threads: never an exclusive holder beside anyone,
 * and no deadlock. */
typedef struct mworker {
    write_gates *g;
    unsigned seed;
    _Atomic int *excl, *shared;
    int violations;
    unsigned shared_sets;
} mworker;

static void *mwork(void *p)
{
    mworker *w = p;
    for (int it = 0; it < ITERS; it++) {
        write_gate_key ks[NKEYS];
        int idx[NKEYS], n = 0;
        for (int i = 0; i < NKEYS; i++)
            if (rand_r(&w->seed) % 2) idx[n++] = i;
        for (int i = 0; i < n; i++) {
            ks[i] = ALL[idx[i]];
            ks[i].shared = rand_r(&w->seed) % 2;
        }
        write_gate_set *set;
        if (write_gates_acquire(w->g, ks, (size_t)n, STORE_LOCK_WAIT_FOREVER, &set) != 0) {
            w->violations++;
            continue;
        }
        for (int i = 0; i < n; i++) {
            if (ks[i].shared) {
                atomic_fetch_add(&w->shared[idx[i]], 1);
                if (atomic_load(&w->excl[idx[i]]) != 0) w->violations++;
                w->shared_sets++;
            } else {
                if (atomic_fetch_add(&w->excl[idx[i]], 1) != 0) w->violations++;
                if (atomic_load(&w->shared[idx[i]]) != 0) w->violations++;
            }
        }
        for (int i = 0; i < n; i++)
            atomic_fetch_sub(ks[i].shared ? &w->shared[idx[i]] : &w->excl[idx[i]], 1);
        write_gate_set_release(set);
    }
    return NULL;
}

static void test_no_deadlock_mixed_modes(void **state)
{
    fixture *f = *state;
    _Atomic int excl[NKEYS] = {0}, shared[NKEYS] = {0};
    mworker ws[NTHREADS];
    pthread_t th[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        assert_og_ok(write_gates_open(&ws[i].g, f->s, f->dir));
        ws[i] = (mworker){ws[i].g, 777u + (unsigned)i, excl, shared, 0, 0};
        pthread_create(&th[i], NULL, mwork, &ws[i]);
    }
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    unsigned shared_sets = 0;
    for (int i = 0; i < NTHREADS; i++) {
        assert_int_equal(ws[i].violations, 0);
        shared_sets += ws[i].shared_sets;
        write_gates_close(ws[i].g);
    }
    assert_true(shared_sets > 0);
}

/* OG_TEST_GATES_OFF=1 (test-only): sets are recorded but exclude nobody. */
static void test_gates_off_switch(void **state)
{
    fixture *f = *state;
    write_gates *a, *b;
    setenv(WRITE_GATES_OFF_ENV, "1", 1);
    assert_og_ok(write_gates_open(&a, f->s, f->dir));
    assert_og_ok(write_gates_open(&b, f->s, f->dir));
    unsetenv(WRITE_GATES_OFF_ENV);
    assert_true(write_gates_off(a));
    write_gate_set *sa, *sb;
    assert_og_ok(write_gates_acquire(a, &SCHEMA_EX, 1, 0, &sa));
    assert_og_ok(write_gates_acquire(b, &SCHEMA_EX, 1, 0, &sb));
    assert_int_equal(write_gate_set_count(sa), 1);
    assert_true(write_gate_set_covers(sa, &SCHEMA_SH, 1));
    /* an ordinary manager is not affected by them */
    write_gates *c;
    write_gate_set *sc;
    assert_og_ok(write_gates_open(&c, f->s, f->dir));
    assert_false(write_gates_off(c));
    assert_og_ok(write_gates_acquire(c, &SCHEMA_EX, 1, 0, &sc));
    write_gate_set_release(sc);
    write_gate_set_release(sa);
    write_gate_set_release(sb);
    write_gate_stats st;
    write_gates_stats(a, &st);
    assert_int_equal(st.acquisitions, 1);
    write_gates_close(a);
    write_gates_close(b);
    write_gates_close(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_total_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exclusion_between_handles, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_deadlock_mutual_exclusion, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exclusion_across_processes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shared_holders_coexist, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exclusive_and_shared_wait_for_each_other, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_covers_modes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shared_across_processes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shared_falls_back_to_exclusive, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_deadlock_mixed_modes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gates_off_switch, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
