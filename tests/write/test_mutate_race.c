/* Read-set races of .gq mutations (the write-path race suite extended to the mutation
 * adapter), each with threads (separate handles on one root, sharing the process's gates) and
 * with separate processes (only OS locks and the manifest CAS are shared):
 *   - updates and deletes of the same node: the committed writes are serializable in commit
 *     order (no update resurrects or rewrites a deleted node, exactly one delete commits, the
 *     final age is the last committed update's), and a losing delete or a late update is a
 *     no-op or a typed conflict, never an internal error;
 *   - edge inserts against a cascade delete of their endpoint: no edge survives its endpoint,
 *     every committed insert precedes the delete, a late insert fails typed.
 * Afterwards every edge's endpoints exist, every pin equals its Lance HEAD, and no sidecar is
 * left. */
#include "write_fixture.h"

#include "core/alloc.h"
#include "exec/load.h"
#include "exec/mutate.h"
#include "lance/version.h"
#include "write/internal.h"

#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *SCHEMA = "node Person {\n"
                            "    name: String @key\n"
                            "    age: I32?\n"
                            "}\n"
                            "node Company {\n"
                            "    name: String @key\n"
                            "}\n"
                            "edge WorksAt: Person -> Company { role: String? }\n";

#define NWRITERS 6

static int run_mutation(write_graph *g, const char *gq, exec_mutate_result *res)
{
    core_arena a;
    core_arena_init(&a, 0);
    lang_diags d;
    lang_diags_init(&d, &a);
    lang_query_set *qs = NULL;
    int rc = lang_query_set_build(&qs, g->h->catalog, gq, strlen(gq), "m.gq", &d);
    if (rc == 0) rc = exec_mutate_run(res, g, &qs->queries[0], NULL, NULL);
    lang_query_set_free(qs);
    core_arena_free(&a);
    return rc;
}

/* A graph with ann (age 1) working at acme. */
static void make_graph(char *dir, size_t cap, const char *tag)
{
    test_sandbox_new(dir, cap, tag);
    store *s = wf_store(dir);
    write_init_result ir;
    assert_og_ok(write_init(s, SCHEMA, strlen(SCHEMA), "s.pg", &ir));
    store_close(s);
    write_graph *g = NULL;
    assert_og_ok(wf_open(&g, dir));
    exec_mutate_result r;
    assert_og_ok(run_mutation(g,
                              "query s() { insert Person { name: \"ann\", age: 1 } "
                              "insert Company { name: \"acme\" } "
                              "insert WorksAt { from: \"ann\", to: \"acme\", role: \"seed\" } }",
                              &r));
    assert_true(r.write.committed);
    write_graph_close(g);
}

/* What one writer did (in shared memory, so forked children can report it). */
typedef struct outcome {
    int rc;
    int committed;
    uint64_t mver;
    uint64_t deleted_nodes, deleted_edges, updated;
    unsigned reprepares;
} outcome;

typedef struct writer_arg {
    const char *dir;
    int idx;
    const char *(*text)(int idx, char *buf, size_t cap);
    outcome *out;
} writer_arg;

static void *writer(void *p)
{
    writer_arg *a = p;
    write_graph *g = NULL;
    outcome *o = a->out;
    o->rc = wf_open(&g, a->dir);
    if (o->rc == 0) {
        char buf[300];
        exec_mutate_result r;
        o->rc = run_mutation(g, a->text(a->idx, buf, sizeof buf), &r);
        if (o->rc == 0) {
            o->committed = r.write.committed;
            o->mver = r.write.manifest_version;
            o->deleted_nodes = r.nodes_deleted;
            o->deleted_edges = r.edges_deleted;
            o->updated = r.nodes_updated;
            o->reprepares = r.write.reprepares;
        }
    }
    write_graph_close(g);
    return NULL;
}

static outcome *shared_outcomes(void)
{
    void *m = mmap(NULL, NWRITERS * sizeof(outcome), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(m != MAP_FAILED);
    memset(m, 0, NWRITERS * sizeof(outcome));
    return m;
}

static void run_writers(const char *dir, const char *(*text)(int, char *, size_t), outcome *o,
                        bool processes)
{
    writer_arg args[NWRITERS];
    for (int i = 0; i < NWRITERS; i++)
        args[i] = (writer_arg){dir, i, text, &o[i]};
    if (processes) {
        pid_t pids[NWRITERS];
        for (int i = 0; i < NWRITERS; i++) {
            pid_t pid = fork();
            if (pid == 0) {
                writer(&args[i]);
                _exit(0);
            }
            assert_true(pid > 0);
            pids[i] = pid;
        }
        for (int i = 0; i < NWRITERS; i++) {
            int st = 0;
            waitpid(pids[i], &st, 0);
            assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        }
    } else {
        pthread_t th[NWRITERS];
        for (int i = 0; i < NWRITERS; i++)
            pthread_create(&th[i], NULL, writer, &args[i]);
        for (int i = 0; i < NWRITERS; i++)
            pthread_join(th[i], NULL);
    }
}

/* Person ann's age (-1 when ann is gone) and the WorksAt row count. */
static void final_state(const char *dir, int64_t *age, uint64_t *edges, uint64_t *companies)
{
    store *s = wf_store(dir);
    graph_snapshot *snap = NULL;
    assert_og_ok(graph_snapshot_load(&snap, s, NULL, 0, 0));
    *edges = graph_snapshot_table(snap, "edge:WorksAt")->row_count;
    *companies = graph_snapshot_table(snap, "node:Company")->row_count;
    lance_dataset *ds = NULL;
    assert_og_ok(
        graph_table_open(&ds, s, graph_snapshot_table(snap, "node:Person"), LANCE_ACCESS_READ));
    arrow_batch *b = NULL;
    assert_og_ok(lance_dataset_scan_all(&b, ds, NULL));
    *age = -1;
    int ai = arrow_schema_find(&b->schema, "age");
    for (int64_t r = 0; r < b->num_rows; r++) {
        size_t l;
        const uint8_t *v = arrow_array_get_bytes(b->columns[0], r, &l);
        if (l == 3 && memcmp(v, "ann", 3) == 0) *age = arrow_array_get_int(b->columns[ai], r);
    }
    arrow_batch_free(b);
    lance_dataset_free(ds);
    graph_snapshot_free(snap);
    store_close(s);
}

/* ---- cell 1: update vs delete of one node --------------------------------------------------- */

static const char *update_or_delete(int idx, char *buf, size_t cap)
{
    if (idx % 2 == 0)
        snprintf(buf, cap, "query u() { update Person set { age: %d } where name = \"ann\" }",
                 100 + idx);
    else
        snprintf(buf, cap, "query d() { delete Person where name = \"ann\" }");
    return buf;
}

static void summarize(const char *what, const outcome *o)
{
    unsigned ok = 0, noop = 0, failed = 0, re = 0;
    for (int i = 0; i < NWRITERS; i++) {
        ok += o[i].rc == 0 && o[i].committed;
        noop += o[i].rc == 0 && !o[i].committed;
        failed += o[i].rc != 0;
        re += o[i].reprepares;
    }
    print_message("%s: %u committed, %u no-op, %u failed typed, %u re-prepares\n", what, ok, noop,
                  failed, re);
}

static void check_update_vs_delete(const char *dir, const outcome *o)
{
    summarize("update vs delete", o);
    /* Replay the committed writes in commit order against the model. */
    int64_t age = 1;
    uint64_t edges = 1;
    unsigned deletes = 0, committed = 0;
    for (int i = 0; i < NWRITERS; i++) {
        if (o[i].rc != 0) {
            /* a typed conflict is allowed, an internal error is not */
            assert_int_not_equal(o[i].rc, OG_E_INTERNAL);
            assert_true(o[i].rc == OG_E_READ_SET_CONFLICT || o[i].rc == OG_E_CONFLICT);
        }
    }
    int order[NWRITERS];
    for (int i = 0; i < NWRITERS; i++)
        if (o[i].rc == 0 && o[i].committed) order[committed++] = i;
    /* commit order = manifest version order (distinct versions) */
    for (unsigned a = 1; a < committed; a++)
        for (unsigned b = a; b > 0 && o[order[b - 1]].mver > o[order[b]].mver; b--) {
            int t = order[b];
            order[b] = order[b - 1];
            order[b - 1] = t;
        }
    for (unsigned k = 0; k < committed; k++) {
        int w = order[k];
        if (k) assert_true(o[order[k - 1]].mver < o[w].mver);
        /* every committed write found ann alive: nothing acts on a deleted node */
        assert_true(age >= 0);
        if (w % 2 == 0) {
            assert_int_equal(o[w].updated, 1);
            age = 100 + w;
        } else {
            assert_int_equal(o[w].deleted_nodes, 1);
            assert_int_equal(o[w].deleted_edges, edges);
            age = -1;
            edges = 0;
            deletes++;
        }
    }
    assert_int_equal(deletes, 1); /* the first delete to commit finds ann; later ones no-op */
    for (int i = 1; i < NWRITERS; i += 2)
        if (o[i].rc == 0 && !o[i].committed)
            assert_int_equal(o[i].deleted_nodes + o[i].deleted_edges, 0);
    int64_t got_age;
    uint64_t got_edges, companies;
    final_state(dir, &got_age, &got_edges, &companies);
    assert_int_equal(got_age, age);
    assert_int_equal(got_edges, edges);
    assert_true(committed >= 1);
    wf_assert_sound(dir);
}

static void test_update_vs_delete_threads(void **state)
{
    (void)state;
    char dir[256];
    make_graph(dir, sizeof dir, "mrace-ud");
    outcome *o = shared_outcomes();
    run_writers(dir, update_or_delete, o, false);
    check_update_vs_delete(dir, o);
    munmap(o, NWRITERS * sizeof(outcome));
    test_sandbox_done(dir);
}

static void test_update_vs_delete_processes(void **state)
{
    (void)state;
    char dir[256];
    make_graph(dir, sizeof dir, "mrace-ud-p");
    outcome *o = shared_outcomes();
    run_writers(dir, update_or_delete, o, true);
    check_update_vs_delete(dir, o);
    munmap(o, NWRITERS * sizeof(outcome));
    test_sandbox_done(dir);
}

/* ---- cell 2: edge insert vs cascade delete of its endpoint ---------------------------------- */

static const char *edge_or_cascade(int idx, char *buf, size_t cap)
{
    if (idx % 2 == 0)
        snprintf(buf, cap,
                 "query i() { insert WorksAt { from: \"ann\", to: \"acme\", role: \"r%d\" } }",
                 idx);
    else
        snprintf(buf, cap, "query d() { delete Company where name = \"acme\" }");
    return buf;
}

static void check_edge_vs_cascade(const char *dir, const outcome *o)
{
    summarize("edge vs cascade", o);
    int del = -1;
    for (int i = 1; i < NWRITERS; i += 2) {
        if (o[i].rc != 0) {
            assert_int_not_equal(o[i].rc, OG_E_INTERNAL);
            assert_true(o[i].rc == OG_E_READ_SET_CONFLICT || o[i].rc == OG_E_CONFLICT);
        } else if (o[i].committed) {
            assert_int_equal(del, -1); /* exactly one delete finds acme */
            del = i;
        }
    }
    assert_true(del >= 0);
    uint64_t before = 1; /* the seed edge */
    for (int i = 0; i < NWRITERS; i += 2) {
        if (o[i].rc == 0) {
            /* a committed edge insert precedes the delete, which took its edge along */
            assert_true(o[i].committed);
            assert_true(o[i].mver < o[del].mver);
            before++;
        } else {
            /* late: the endpoint is gone (validation) or the race was lost (typed) */
            assert_int_not_equal(o[i].rc, OG_E_INTERNAL);
            assert_true(o[i].rc == OG_E_BAD_REQUEST || o[i].rc == OG_E_READ_SET_CONFLICT ||
                        o[i].rc == OG_E_CONFLICT);
        }
    }
    assert_int_equal(o[del].deleted_nodes, 1);
    assert_int_equal(o[del].deleted_edges, before);
    int64_t age;
    uint64_t edges, companies;
    final_state(dir, &age, &edges, &companies);
    assert_int_equal(edges, 0);
    assert_int_equal(companies, 0);
    assert_int_equal(age, 1);
    wf_assert_sound(dir);
}

static void test_edge_vs_cascade_threads(void **state)
{
    (void)state;
    char dir[256];
    make_graph(dir, sizeof dir, "mrace-ec");
    outcome *o = shared_outcomes();
    run_writers(dir, edge_or_cascade, o, false);
    check_edge_vs_cascade(dir, o);
    munmap(o, NWRITERS * sizeof(outcome));
    test_sandbox_done(dir);
}

static void test_edge_vs_cascade_processes(void **state)
{
    (void)state;
    char dir[256];
    make_graph(dir, sizeof dir, "mrace-ec-p");
    outcome *o = shared_outcomes();
    run_writers(dir, edge_or_cascade, o, true);
    check_edge_vs_cascade(dir, o);
    munmap(o, NWRITERS * sizeof(outcome));
    test_sandbox_done(dir);
}

/* ---- cell 3: deterministic interleaving of the cascade's read set --------------------------- */

typedef struct interleave {
    const char *dir;
    int fired;
} interleave;

/* Between the delete's prepare and its gates, another writer adds an edge to acme. */
static void insert_edge_now(void *p)
{
    interleave *il = p;
    if (il->fired++) return;
    write_graph *g2 = NULL;
    assert_og_ok(wf_open(&g2, il->dir));
    exec_mutate_result r;
    assert_og_ok(run_mutation(g2,
                              "query i() { insert WorksAt { from: \"ann\", to: \"acme\", role: "
                              "\"late\" } }",
                              &r));
    assert_true(r.write.committed);
    write_graph_close(g2);
}

static void test_cascade_sees_interleaved_edge(void **state)
{
    (void)state;
    char dir[256];
    make_graph(dir, sizeof dir, "mrace-il");
    write_graph *g = NULL;
    assert_og_ok(wf_open(&g, dir));
    interleave il = {dir, 0};
    g->test_after_prepare = insert_edge_now;
    g->test_arg = &il;
    exec_mutate_result r;
    assert_og_ok(run_mutation(g, "query d() { delete Company where name = \"acme\" }", &r));
    assert_true(r.write.committed);
    assert_int_equal(r.write.reprepares, 1);
    assert_int_equal(il.fired, 2);
    /* the recomputed cascade took the edge that landed in the window */
    assert_int_equal(r.edges_deleted, 2);
    write_graph_close(g);
    int64_t age;
    uint64_t edges, companies;
    final_state(dir, &age, &edges, &companies);
    assert_int_equal(edges, 0);
    wf_assert_sound(dir);
    test_sandbox_done(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_update_vs_delete_threads),
        cmocka_unit_test(test_update_vs_delete_processes),
        cmocka_unit_test(test_edge_vs_cascade_threads),
        cmocka_unit_test(test_edge_vs_cascade_processes),
        cmocka_unit_test(test_cascade_sees_interleaved_edge),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
