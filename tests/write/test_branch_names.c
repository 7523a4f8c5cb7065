/* Prefix-disjoint graph branch names (issue 33 F9, item 8): no branch name is a '/' prefix of
 * another, in either direction and at any depth, `main` always counting as taken; the refusal
 * is `exists` naming the other branch; files without a ref (a crashed create or delete) do not
 * block a name; racing creators of a name and of its extension (threads, handles, processes):
 * exactly one wins. And the cost of a create against the number of branches: the same store
 * operations, by kind, and the same listed entries at 10 and at 1,000 branches; a listing's
 * operations per branch bounded by a ref read and one version discovery. */
#include "testutil.h"
#include "write_fixture.h"

#include "core/alloc.h"
#include "lance/branch.h"
#include "lance/version.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *SCHEMA = "node Person {\n"
                            "    name: String @key\n"
                            "}\n";

/* A graph with one commit of data in a fresh sandbox, opened on a fault store (which counts
 * and logs operations) when `counted`. */
static write_graph *new_graph_on(char *dir, size_t cap, const char *tag, bool counted)
{
    test_sandbox_new(dir, cap, tag);
    store *s = wf_store(dir);
    write_init_result ir;
    assert_og_ok(write_init(s, SCHEMA, strlen(SCHEMA), "s.pg", &ir));
    if (counted) {
        store *f = NULL;
        assert_og_ok(store_fault_open(&f, s, 1));
        s = f;
    }
    write_graph *g = NULL;
    assert_og_ok(write_graph_open(&g, s, dir, NULL));
    assert_og_ok(
        wf_load(g, "{\"type\":\"Person\",\"data\":{\"name\":\"ann\"}}\n", EXEC_LOAD_APPEND, NULL));
    return g;
}

/* The create of `name` is refused as `exists`, naming branch `other`. */
static void refused_beside(write_graph *g, const char *name, const char *other)
{
    int rc = write_branch_create(g, name, NULL, NULL, NULL);
    if (rc != OG_E_EXISTS) fail_msg("'%s' beside '%s': rc %d, not exists", name, other, rc);
    const og_error *e = og_error_last();
    if (!e->key || strcmp(e->key, other) != 0)
        fail_msg("'%s' refused naming '%s', not '%s' (%s)", name, e->key ? e->key : "(none)", other,
                 e->message);
    assert_non_null(strstr(e->message, other));
}

static void assert_disjoint_list(write_graph *g)
{
    write_branch_info *b = NULL;
    size_t n = 0;
    assert_og_ok(write_branch_list(g->h->s, &b, &n));
    for (size_t i = 0; i < n; i++) {
        size_t li = strlen(b[i].name);
        assert_false(strncmp(b[i].name, "main/", 5) == 0);
        for (size_t j = 0; j < n; j++)
            if (i != j && strncmp(b[i].name, b[j].name, li) == 0 && b[j].name[li] == '/')
                fail_msg("branches '%s' and '%s' both exist", b[i].name, b[j].name);
    }
    core_free(b);
}

static void test_prefix_both_ways(void **state)
{
    (void)state;
    char dir[256];
    write_graph *g = new_graph_on(dir, sizeof dir, "branch-prefix", false);
    /* main is always there */
    refused_beside(g, "main/x", "main");
    refused_beside(g, "main/x/y", "main");
    /* a branch below an existing one, at any depth */
    assert_og_ok(write_branch_create(g, "a", NULL, NULL, NULL));
    refused_beside(g, "a/b", "a");
    refused_beside(g, "a/b/c", "a");
    /* a branch above an existing one, at any depth */
    assert_og_ok(write_branch_create(g, "x/y/z", NULL, NULL, NULL));
    refused_beside(g, "x", "x/y/z");
    refused_beside(g, "x/y", "x/y/z");
    refused_beside(g, "x/y/z/w", "x/y/z");
    /* siblings and names that only share characters are free */
    assert_og_ok(write_branch_create(g, "x/y/q", NULL, NULL, NULL));
    assert_og_ok(write_branch_create(g, "x/yz", NULL, NULL, NULL));
    assert_og_ok(write_branch_create(g, "ab", NULL, NULL, NULL));
    assert_og_ok(write_branch_create(g, "mainly", NULL, NULL, NULL));
    /* the name itself: exists, naming it */
    refused_beside(g, "a", "a");
    /* once the nested branches are gone, the prefix is free */
    assert_og_ok(write_branch_delete(g, "x/y/z", NULL, NULL));
    refused_beside(g, "x/y", "x/y/q");
    assert_og_ok(write_branch_delete(g, "x/y/q", NULL, NULL));
    refused_beside(g, "x", "x/yz");
    assert_og_ok(write_branch_delete(g, "x/yz", NULL, NULL));
    assert_og_ok(write_branch_create(g, "x", NULL, NULL, NULL));
    refused_beside(g, "x/y", "x");
    /* a nested branch whose ref is gone (a crash after the ref delete leaves its files) does
     * not hold its prefix */
    assert_og_ok(write_branch_create(g, "l/m", NULL, NULL, NULL));
    char key[512];
    snprintf(key, sizeof key, "%s/_refs/branches/l%%2Fm.json", GRAPH_MANIFEST_DIR);
    assert_og_ok(store_delete(g->h->s, key, 0));
    assert_og_ok(write_branch_create(g, "l", NULL, NULL, NULL));
    /* from another branch, too */
    assert_og_ok(write_branch_create(g, "f/g", "ab", NULL, NULL));
    refused_beside(g, "f", "f/g");
    assert_disjoint_list(g);
    write_graph_close(g);
    test_sandbox_done(dir);
}

/* ---- races ----------------------------------------------------------------------------------- */

typedef struct racer {
    write_graph *g;
    char name[64];
    pthread_barrier_t *go;
    int rc;
} racer;

static void *race_create(void *arg)
{
    racer *r = arg;
    pthread_barrier_wait(r->go);
    r->rc = write_branch_create(r->g, r->name, NULL, NULL, NULL);
    return NULL;
}

/* Creators of a name and of names below and above it race: exactly one wins each round, on
 * one handle, on a handle each, and in processes of their own (the refs gate is also a store
 * lock, so processes on one host are serialized like threads). */
static void test_prefix_race(void **state)
{
    (void)state;
    char dir[256];
    write_graph *g = new_graph_on(dir, sizeof dir, "branch-prefix-race", false);
    enum { T = 3, ROUNDS = 20 };
    for (int round = 0; round < ROUNDS; round++) {
        write_graph *own[T] = {0};
        pthread_barrier_t go;
        pthread_barrier_init(&go, NULL, T);
        racer r[T];
        pthread_t th[T];
        for (int i = 0; i < T; i++) {
            if (round % 2) assert_og_ok(wf_open(&own[i], dir));
            r[i] = (racer){own[i] ? own[i] : g, "", &go, -1};
            /* r<round>, r<round>/x and r<round>/x/y */
            snprintf(r[i].name, sizeof r[i].name, "r%d%s", round,
                     i == 0   ? ""
                     : i == 1 ? "/x"
                              : "/x/y");
            assert_int_equal(pthread_create(&th[i], NULL, race_create, &r[i]), 0);
        }
        int wins = 0;
        for (int i = 0; i < T; i++) {
            pthread_join(th[i], NULL);
            if (r[i].rc == 0)
                wins++;
            else if (r[i].rc != OG_E_EXISTS)
                fail_msg("round %d: '%s' failed with %d", round, r[i].name, r[i].rc);
            write_graph_close(own[i]);
        }
        pthread_barrier_destroy(&go);
        if (wins != 1) fail_msg("round %d: %d of the prefix-related creates won", round, wins);
    }
    enum { P = 3, PROUNDS = 5 };
    for (int round = 0; round < PROUNDS; round++) {
        pid_t pids[P];
        for (int i = 0; i < P; i++) {
            pids[i] = fork();
            assert_true(pids[i] >= 0);
            if (pids[i] == 0) {
                char name[64];
                snprintf(name, sizeof name, "p%d%s", round, i == 0 ? "/x" : i == 1 ? "" : "/x/y");
                write_graph *c = NULL;
                int rc = wf_open(&c, dir);
                if (rc == 0) rc = write_branch_create(c, name, NULL, NULL, NULL);
                write_graph_close(c);
                _exit(rc == 0 ? 0 : rc == OG_E_EXISTS ? 1 : 2);
            }
        }
        int wins = 0;
        for (int i = 0; i < P; i++) {
            int st = 0;
            waitpid(pids[i], &st, 0);
            assert_true(WIFEXITED(st));
            assert_true(WEXITSTATUS(st) <= 1);
            wins += WEXITSTATUS(st) == 0;
        }
        if (wins != 1)
            fail_msg("process round %d: %d of the prefix-related creates won", round, wins);
    }
    assert_disjoint_list(g);
    write_graph_close(g);
    test_sandbox_done(dir);
}

/* ---- costs ----------------------------------------------------------------------------------- */

typedef struct create_cost {
    uint64_t ops[STORE_OP_KIND_COUNT], total;
    size_t listed; /* entries under the prefixes the create listed (re-listed in full after) */
} create_cost;

static void create_measured(write_graph *g, store *f, const char *name, create_cost *c)
{
    memset(c, 0, sizeof *c);
    size_t n0 = 0, n1 = 0;
    store_fault_log(f, &n0);
    assert_og_ok(write_branch_create(g, name, NULL, NULL, NULL));
    const store_oplog_entry *l = store_fault_log(f, &n1);
    for (size_t i = n0; i < n1; i++) {
        c->ops[l[i].kind]++;
        c->total++;
        if (l[i].kind != STORE_OP_LIST || !l[i].key) continue;
        /* an upper bound of what that listing returned: everything under its prefix now */
        store_list all = {0};
        int rc = store_list_prefix(store_fault_inner(f), l[i].key, 0, &all);
        if (rc == OG_E_NOT_FOUND) og_error_clear();
        c->listed += all.count;
        store_list_free(&all);
    }
}

static size_t list_ops(write_graph *g, store *f, size_t *n_out)
{
    store_counts a, b, d;
    write_branch_info *items = NULL;
    store_counts_get(f, &a);
    assert_og_ok(write_branch_list(g->h->s, &items, n_out));
    store_counts_get(f, &b);
    core_free(items);
    store_counts_diff(&b, &a, &d);
    return (size_t)d.total_ops;
}

static void grow_to(write_graph *g, unsigned *have, unsigned n)
{
    for (; *have < n; (*have)++) {
        char name[32];
        snprintf(name, sizeof name, "b%05u", *have);
        assert_og_ok(write_branch_create(g, name, NULL, NULL, NULL));
    }
}

static void test_create_cost_flat_in_branches(void **state)
{
    (void)state;
    /* The counts do not depend on the filesystem; a tmpfs only keeps the fsyncs of 1,000
     * creates out of the run time. */
    struct stat st;
    const char *old = getenv("TMPDIR");
    char *saved = old ? strdup(old) : NULL;
    if (stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && access("/dev/shm", W_OK) == 0)
        setenv("TMPDIR", "/dev/shm", 1);
    char dir[256];
    write_graph *g = new_graph_on(dir, sizeof dir, "branch-cost-n", true);
    if (saved) {
        setenv("TMPDIR", saved, 1);
        free(saved);
    } else {
        unsetenv("TMPDIR");
    }
    store *f = g->h->s;
    static const char *const probes[] = {"flat", "n/e/s/ted"};
    enum { NP = 2 };
    create_cost at[2][NP];
    size_t list_at[2], listed_n[2];
    unsigned sizes[2] = {10, 1000}, have = 0;
    for (int k = 0; k < 2; k++) {
        grow_to(g, &have, sizes[k]);
        for (int p = 0; p < NP; p++) {
            char name[64];
            snprintf(name, sizeof name, "%s%u", probes[p], sizes[k]);
            create_measured(g, f, name, &at[k][p]);
            print_message("branch create '%s' at %u branches: %llu ops (get %llu, head %llu, list "
                          "%llu, put_if_absent %llu), %zu entries under the prefixes listed\n",
                          name, sizes[k], (unsigned long long)at[k][p].total,
                          (unsigned long long)at[k][p].ops[STORE_OP_GET],
                          (unsigned long long)at[k][p].ops[STORE_OP_HEAD],
                          (unsigned long long)at[k][p].ops[STORE_OP_LIST],
                          (unsigned long long)at[k][p].ops[STORE_OP_PUT_IF_ABSENT],
                          at[k][p].listed);
        }
        list_at[k] = list_ops(g, f, &listed_n[k]);
        print_message("branch list at %u branches: %zu ops for %zu branches\n", sizes[k],
                      list_at[k], listed_n[k]);
    }
    for (int p = 0; p < NP; p++) {
        assert_int_equal(at[1][p].total, at[0][p].total);
        for (int o = 0; o < STORE_OP_KIND_COUNT; o++)
            assert_int_equal(at[1][p].ops[o], at[0][p].ops[o]);
        assert_int_equal(at[1][p].listed, at[0][p].listed);
    }
    /* a branch that never wrote costs the listing its ref and one discovery of its latest
     * manifest version, whatever that discovery takes on this build */
    char bdir[STORE_KEY_MAX];
    uint64_t v = 0;
    lance_naming nm = LANCE_NAMING_UNKNOWN;
    lance_branch ref;
    assert_og_ok(lance_branch_get(f, GRAPH_MANIFEST_DIR, "b00000", &ref));
    assert_og_ok(lance_branch_root(bdir, GRAPH_MANIFEST_DIR, "b00000"));
    store_counts a, b, d;
    store_counts_get(f, &a);
    assert_og_ok(lance_version_latest_above(f, bdir, ref.parent_version, &v, &nm));
    store_counts_get(f, &b);
    store_counts_diff(&b, &a, &d);
    size_t per_branch = 1 + (size_t)d.total_ops;
    size_t more = listed_n[1] - listed_n[0];
    print_message("branch list: %zu more ops for %zu more branches (bound %zu a branch)\n",
                  list_at[1] - list_at[0], more, per_branch);
    assert_true(list_at[1] - list_at[0] <= more * per_branch);
    write_graph_close(g);
    test_sandbox_done(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prefix_both_ways),
        cmocka_unit_test(test_prefix_race),
        cmocka_unit_test(test_create_cost_flat_in_branches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
