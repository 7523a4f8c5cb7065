/* write_verify beside a running writer (issue 33 F4): verify reads one consistent state, so a
 * healthy graph that is being written verifies clean every time. A writer (a thread of this
 * process, or a forked process that shares nothing but the files) commits one-row loads in a
 * loop, on main and on a graph branch (each: sidecar, table commit ahead of the pin,
 * graph-manifest commit, sidecar deleted),
 * while this thread runs verify again and again on its own read-only store. Every problem
 * verify reports here is a false report. OG_VERIFY_RACE_RUNS sets the verify runs per case
 * (default 100). */
#include "write_fixture.h"

#include "write/verify.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *SCHEMA = "node Person {\n"
                            "    name: String @key\n"
                            "    age: I32?\n"
                            "}\n";

#define PACE 3  /* commits per verify run, at most */
#define VPACE 2 /* verify runs per commit, at most */

static unsigned runs(void)
{
    const char *e = getenv("OG_VERIFY_RACE_RUNS");
    unsigned n = e ? (unsigned)strtoul(e, NULL, 10) : 0;
    return n ? n : 100;
}

static void make_graph(char *dir, size_t cap, const char *tag)
{
    test_sandbox_new(dir, cap, tag);
    store *s = wf_store(dir);
    write_init_result ir;
    assert_og_ok(write_init(s, SCHEMA, strlen(SCHEMA), "s.pg", &ir));
    store_close(s);
    /* a graph branch the writer also writes (its first write forks the table) */
    write_graph *g = NULL;
    assert_og_ok(wf_open(&g, dir));
    assert_og_ok(write_branch_create(g, "feat", NULL, NULL, NULL));
    write_graph_close(g);
}

typedef struct writer_arg {
    const char *dir;
    atomic_int stop;
    atomic_uint commits;
    atomic_uint verifies; /* verify runs begun: the writer keeps at most PACE commits ahead */
    atomic_int rc;
} writer_arg;

/* One-row loads until told to stop (the first failure ends the loop and is kept). */
static void write_loop(writer_arg *w)
{
    write_graph *g = NULL;
    int rc = wf_open(&g, w->dir);
    for (unsigned i = 0; rc == 0 && !atomic_load(&w->stop); i++) {
        /* paced, so the history verify reads stays short while every run overlaps writes */
        while (!atomic_load(&w->stop) &&
               atomic_load(&w->commits) >= PACE * (atomic_load(&w->verifies) + 1))
            usleep(200);
        char row[128];
        snprintf(row, sizeof row, "{\"type\":\"Person\",\"data\":{\"name\":\"p%u\",\"age\":%u}}\n",
                 i, i % 90);
        /* every third write on the branch: its fork's HEAD moves ahead of its pin too */
        write_options o = WRITE_OPTIONS_INIT;
        o.branch = i % 3 == 2 ? "feat" : NULL;
        write_result res;
        rc = wf_load_opt(g, row, EXEC_LOAD_APPEND, &o, &res);
        if (rc == 0) atomic_fetch_add(&w->commits, 1);
    }
    if (rc) fprintf(stderr, "writer: %s\n", og_error_last()->message);
    write_graph_close(g);
    atomic_store(&w->rc, rc);
}

static void *writer_thread(void *arg)
{
    write_loop(arg);
    return NULL;
}

/* Verify n times while the writer runs; returns the runs that reported a problem (each
 * printed). Waits for the writer's first commit first, so every run overlaps writes. */
static unsigned verify_loop(const char *dir, unsigned n, writer_arg *w, unsigned *problems)
{
    while (w && atomic_load(&w->commits) == 0)
        usleep(1000);
    unsigned bad = 0;
    *problems = 0;
    for (unsigned i = 0; i < n; i++) {
        /* and verify at most VPACE times per commit, so that the runs keep meeting writes
         * even when the writer's syncs are slow */
        while (w && !atomic_load(&w->rc) && atomic_load(&w->commits) * VPACE < i)
            usleep(200);
        if (w) atomic_fetch_add(&w->verifies, 1);
        store *s = NULL;
        assert_og_ok(store_local_open_readonly(&s, dir));
        write_verify_report r;
        assert_og_ok(write_verify(s, NULL, &r));
        if (r.n_problems) {
            bad++;
            *problems += (unsigned)r.n_problems;
            for (size_t k = 0; k < r.n_problems; k++)
                fprintf(stderr, "run %u: false report %s: %s: %s (remedy: %s)\n", i,
                        r.problems[k].kind, r.problems[k].object, r.problems[k].message,
                        r.problems[k].remedy);
        }
        write_verify_report_clear(&r);
        store_close(s);
    }
    return bad;
}

static void test_verify_beside_writer_thread(void **state)
{
    (void)state;
    char dir[512];
    make_graph(dir, sizeof dir, "verify_race_thread");
    writer_arg w = {.dir = dir};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, writer_thread, &w), 0);
    unsigned problems = 0, n = runs();
    unsigned bad = verify_loop(dir, n, &w, &problems);
    atomic_store(&w.stop, 1);
    pthread_join(t, NULL);
    printf("verify beside a writer thread: %u runs, %u commits meanwhile, %u false reports "
           "(%u problems)\n",
           n, atomic_load(&w.commits), bad, problems);
    assert_og_ok(w.rc);
    assert_int_equal(bad, 0);
    assert_true(atomic_load(&w.commits) > 0);
    /* and the graph it left verifies clean at rest */
    assert_int_equal(verify_loop(dir, 1, NULL, &problems), 0);
    test_sandbox_done(dir);
}

static void test_verify_beside_writer_process(void **state)
{
    (void)state;
    char dir[512];
    make_graph(dir, sizeof dir, "verify_race_proc");
    writer_arg *w =
        mmap(NULL, sizeof *w, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(w != MAP_FAILED);
    memset(w, 0, sizeof *w);
    w->dir = dir;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        write_loop(w);
        _exit(w->rc ? 1 : 0);
    }
    unsigned problems = 0, n = runs();
    unsigned bad = verify_loop(dir, n, w, &problems);
    atomic_store(&w->stop, 1);
    int st = 0;
    waitpid(pid, &st, 0);
    printf("verify beside a writer process: %u runs, %u commits meanwhile, %u false reports "
           "(%u problems)\n",
           n, atomic_load(&w->commits), bad, problems);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_int_equal(bad, 0);
    assert_true(atomic_load(&w->commits) > 0);
    assert_int_equal(verify_loop(dir, 1, NULL, &problems), 0);
    munmap(w, sizeof *w);
    test_sandbox_done(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_verify_beside_writer_thread),
        cmocka_unit_test(test_verify_beside_writer_process),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
