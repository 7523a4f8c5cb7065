/* Ordered gates: total order, exclusion across handles and processes, no deadlock under
 * threads taking overlapping sets in arbitrary order. */
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
        {WRITE_GATE_TABLE, "main", "nodes/Person"}, {WRITE_GATE_BRANCH, "main", NULL},
        {WRITE_GATE_TABLE, "feat", "nodes/Zed"},    {WRITE_GATE_SCHEMA, "schema", NULL},
        {WRITE_GATE_CLAIM, "retention", NULL},      {WRITE_GATE_TABLE, "main", "edges/Knows"},
        {WRITE_GATE_TABLE, "main", "nodes/Person"}, /* duplicate */
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
    write_gate_key k = {WRITE_GATE_TABLE, "main", "nodes/Person"};
    write_gate_key other = {WRITE_GATE_TABLE, "main", "nodes/Company"};
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
    {WRITE_GATE_SCHEMA, "schema", NULL}, {WRITE_GATE_BRANCH, "main", NULL},
    {WRITE_GATE_BRANCH, "feat", NULL},   {WRITE_GATE_TABLE, "main", "a"},
    {WRITE_GATE_TABLE, "main", "b"},     {WRITE_GATE_TABLE, "feat", "a"},
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
    write_gate_key k = {WRITE_GATE_BRANCH, "main", NULL};
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_total_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exclusion_between_handles, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_deadlock_mutual_exclusion, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exclusion_across_processes, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
