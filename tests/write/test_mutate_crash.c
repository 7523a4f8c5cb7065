/* Crash enumeration over .gq mutations (the write-path crash suite extended to the mutation
 * adapter): update and delete of a keyed and of a generated-id type, and a node delete that
 * cascades to two edge tables, each crashing after every durable store operation in both
 * crash modes. After a read-write reopen (which recovers):
 *   - the graph reads as exactly the old or exactly the new state (rows of every table,
 *     generated ids included, compared through the read executor);
 *   - no sidecar remains; the audit log has one row per sidecar the open resolved;
 *   - every table's manifest pin equals its Lance HEAD and holds row_count rows;
 *   - an acknowledged mutation is visible; a follow-up mutation succeeds.
 * The cases are split over binaries by MUTATE_CRASH_GROUP (1 updates, 2 deletes, 3 cascade)
 * to keep each one short on a slow-fsync machine. */
#include "write_fixture.h"
#include "crashsim.h"

#include "core/alloc.h"
#include "exec/load.h"
#include "exec/mutate.h"
#include "lance/version.h"
#include "write/internal.h"

#include <string.h>

#ifndef MUTATE_CRASH_GROUP
#define MUTATE_CRASH_GROUP 1
#endif

static const char *SCHEMA = "node Person {\n"
                            "    name: String @key\n"
                            "    age: I32?\n"
                            "}\n"
                            "node Company {\n"
                            "    name: String @key\n"
                            "}\n"
                            "node Note {\n"
                            "    text: String\n"
                            "}\n"
                            "edge WorksAt: Person -> Company { role: String? }\n"
                            "edge Tagged: Person -> Note\n";

#define N_TABLES 5
static const char *const ALIASES[N_TABLES] = {"node:Person", "node:Company", "node:Note",
                                              "edge:WorksAt", "edge:Tagged"};

/* Read queries whose rows together are the graph's whole content. */
static const char *const READS =
    "query p() { match { $p: Person } return { $p.id as id, $p.age as a } order { id } }\n"
    "query c() { match { $c: Company } return { $c.id as id } order { id } }\n"
    "query n() { match { $n: Note } return { $n.id as id, $n.text as t } order { id } }\n"
    "query w() { match { $p: Person  $p worksAt $c } return { $p.id as p, $c.id as c } "
    "order { p, c } }\n"
    "query t() { match { $p: Person  $p tagged $n } return { $p.id as p, $n.id as n } "
    "order { p, n } }\n";

typedef struct crash_ctx {
    const char *name;
    const char *gq;       /* the mutation */
    char *before, *after; /* content signatures */
    unsigned saw_old, saw_new;
    wf_recovery_counts rec; /* recoveries the checks saw, by outcome */
} crash_ctx;

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

/* The content of the graph at its latest snapshot as text (NULL on failure). */
static char *signature(store *s, const lang_catalog *cat)
{
    core_arena a;
    core_arena_init(&a, 0);
    lang_diags d;
    lang_diags_init(&d, &a);
    lang_query_set *qs = NULL;
    graph_snapshot *snap = NULL;
    core_buf b = CORE_BUF_INIT;
    int rc = lang_query_set_build(&qs, cat, READS, strlen(READS), "r.gq", &d);
    if (rc == 0) rc = graph_snapshot_load(&snap, s, NULL, 0, 0);
    for (size_t q = 0; rc == 0 && q < qs->n_queries; q++) {
        exec_result *r = NULL;
        rc = exec_query_run(&r, cat, snap, s, &qs->queries[q], NULL, NULL);
        for (uint64_t i = 0; rc == 0 && i < exec_result_n_rows(r); i++) {
            rc = exec_result_row_json(r, i, &b);
            if (rc == 0) rc = core_buf_append_byte(&b, '\n');
        }
        if (rc == 0) rc = core_buf_append_str(&b, "--\n");
        exec_result_free(r);
    }
    char *out = rc == 0 ? strdup(core_buf_cstr(&b)) : NULL;
    core_buf_free(&b);
    graph_snapshot_free(snap);
    lang_query_set_free(qs);
    core_arena_free(&a);
    return out;
}

/* The starting graph is built once and copied for every crash run (a copy costs no fsyncs).
 * Notes have generated ids; the template fixes them for every copy. */
static char template_dir[256];

static int build_template(store *s)
{
    write_init_result ir;
    int rc = write_init(s, SCHEMA, strlen(SCHEMA), "s.pg", &ir);
    if (rc != 0) return rc;
    write_graph *g = NULL;
    if ((rc = write_graph_open(&g, wf_borrow(s), "", NULL)) != 0) return rc;
    rc = wf_load(g,
                 "{\"type\":\"Person\",\"data\":{\"name\":\"ann\",\"age\":1}}\n"
                 "{\"type\":\"Person\",\"data\":{\"name\":\"bob\",\"age\":2}}\n"
                 "{\"type\":\"Company\",\"data\":{\"name\":\"acme\"}}\n"
                 "{\"type\":\"Company\",\"data\":{\"name\":\"zeta\"}}\n"
                 "{\"type\":\"Note\",\"data\":{\"text\":\"n1\"}}\n"
                 "{\"type\":\"Note\",\"data\":{\"text\":\"n2\"}}\n"
                 "{\"edge\":\"WorksAt\",\"from\":\"ann\",\"to\":\"acme\"}\n"
                 "{\"edge\":\"WorksAt\",\"from\":\"bob\",\"to\":\"acme\"}\n",
                 EXEC_LOAD_APPEND, NULL);
    /* ann and bob are tagged with n1 (its generated id is read back for the edges) */
    if (rc == 0) {
        graph_snapshot *snap = NULL;
        rc = graph_snapshot_load(&snap, g->h->s, NULL, 0, 0);
        const graph_table *nt = rc == 0 ? graph_snapshot_table(snap, "node:Note") : NULL;
        lance_dataset *ds = NULL;
        arrow_batch *nb = NULL;
        if (rc == 0 && !nt) rc = OG_E_INTERNAL;
        if (rc == 0) rc = graph_table_open(&ds, g->h->s, nt, LANCE_ACCESS_READ);
        if (rc == 0) rc = lance_dataset_scan_all(&nb, ds, NULL);
        for (int64_t i = 0; rc == 0 && i < nb->num_rows; i++) {
            size_t tn, idn;
            const uint8_t *t = arrow_array_get_bytes(nb->columns[1], i, &tn);
            const uint8_t *id = arrow_array_get_bytes(nb->columns[0], i, &idn);
            if (tn != 2 || memcmp(t, "n1", 2) != 0) continue;
            char line[256];
            snprintf(line, sizeof line,
                     "{\"edge\":\"Tagged\",\"from\":\"ann\",\"to\":\"%.*s\"}\n"
                     "{\"edge\":\"Tagged\",\"from\":\"bob\",\"to\":\"%.*s\"}\n",
                     (int)idn, (const char *)id, (int)idn, (const char *)id);
            rc = wf_load(g, line, EXEC_LOAD_APPEND, NULL);
        }
        arrow_batch_free(nb);
        lance_dataset_free(ds);
        graph_snapshot_free(snap);
    }
    write_graph_close(g);
    return rc;
}

static int copy_template(const char *dir)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cp -a '%s/.' '%s/'", template_dir, dir);
    return system(cmd) == 0 ? 0 : OG_E_STORAGE;
}

static int setup_graph(store *s, void *vctx)
{
    (void)vctx;
    if (!template_dir[0]) {
        test_sandbox_new(template_dir, sizeof template_dir, "mcrash-template");
        store *t = NULL;
        int rc = store_local_open(&t, template_dir);
        if (rc == 0) rc = build_template(t);
        store_close(t);
        if (rc != 0) return rc;
    }
    return copy_template(store_local_root(s));
}

static int op_mutate(store *s, void *vctx)
{
    crash_ctx *c = vctx;
    write_graph *g = NULL;
    int rc = write_graph_open(&g, wf_borrow(s), "", NULL);
    exec_mutate_result r;
    if (rc == 0) rc = run_mutation(g, c->gq, &r);
    if (rc == 0 && !r.write.committed) rc = OG_E_INTERNAL; /* every case changes something */
    write_graph_close(g);
    return rc;
}

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            print_message("%s k=%llu mode=%d: ", c->name, (unsigned long long)pt->k,               \
                          (int)pt->mode);                                                          \
            print_message(__VA_ARGS__);                                                            \
            print_message("\n");                                                                   \
            rc = 1;                                                                                \
            goto out;                                                                              \
        }                                                                                          \
    } while (0)

static int check_graph(store *s, void *vctx, const crashsim_point *pt)
{
    crash_ctx *c = vctx;
    int rc = 0;
    write_graph *g = NULL;
    graph_snapshot *snap = NULL;
    char *sig = NULL;
    char why[512];
    CHECK(wf_open_recovered(s, &g, &c->rec, why, sizeof why) == 0, "%s", why);
    CHECK(graph_snapshot_load(&snap, s, NULL, 0, 0) == 0, "snapshot: %s", og_error_last()->message);
    for (size_t i = 0; i < N_TABLES; i++) {
        const graph_table *t = graph_snapshot_table(snap, ALIASES[i]);
        CHECK(t != NULL, "no table %s", ALIASES[i]);
        CHECK(wf_check_table(s, t, why, sizeof why) == 0, "%s", why);
    }
    sig = signature(s, g->h->catalog);
    CHECK(sig != NULL, "read back: %s", og_error_last()->message);
    bool is_old = strcmp(sig, c->before) == 0;
    bool is_new = strcmp(sig, c->after) == 0;
    CHECK(is_old || is_new, "torn state:\n%s", sig);
    /* an acknowledged mutation must be visible */
    CHECK(pt->op_rc != 0 || pt->crashed || is_new, "acknowledged mutation lost");
    c->saw_old += is_old;
    c->saw_new += is_new;
    /* a follow-up mutation succeeds */
    exec_mutate_result r;
    CHECK(run_mutation(g, "query z() { insert Person { name: \"zed\" } }", &r) == 0 &&
              r.write.committed,
          "follow-up mutation: %s", og_error_last()->message);
out:
    free(sig);
    graph_snapshot_free(snap);
    write_graph_close(g);
    return rc;
}

/* The old and new signatures: the template, and the mutation run once on a plain copy. */
static void expected_states(crash_ctx *c)
{
    char dir[256];
    test_sandbox_new(dir, sizeof dir, "mcrash-ref");
    store *s = NULL;
    assert_og_ok(store_local_open(&s, dir));
    assert_og_ok(setup_graph(s, c));
    write_graph *g = NULL;
    assert_og_ok(write_graph_open(&g, s, dir, NULL));
    c->before = signature(g->h->s, g->h->catalog);
    assert_non_null(c->before);
    exec_mutate_result r;
    assert_og_ok(run_mutation(g, c->gq, &r));
    assert_true(r.write.committed);
    c->after = signature(g->h->s, g->h->catalog);
    assert_non_null(c->after);
    assert_string_not_equal(c->before, c->after);
    write_graph_close(g);
    test_sandbox_done(dir);
}

static void run_case(const char *name, const char *gq, unsigned min_effects)
{
    crash_ctx c;
    memset(&c, 0, sizeof c);
    c.name = name;
    c.gq = gq;
    expected_states(&c);
    crashsim_case cc = {name, &c, setup_graph, op_mutate, check_graph};
    crashsim_report rep;
    crashsim_run(&cc, &rep);
    print_message("%s: %llu durable ops, %llu crash runs, old %u new %u, recovered %u "
                  "(rolled back %u, rolled forward %u, discarded %u)\n",
                  name, (unsigned long long)rep.n, (unsigned long long)rep.runs, c.saw_old,
                  c.saw_new, c.rec.recovered, c.rec.rolled_back, c.rec.rolled_forward,
                  c.rec.discarded);
    free(c.before);
    free(c.after);
    if (rep.violations)
        fail_msg("%llu violations; first: %s", (unsigned long long)rep.violations, rep.first);
    /* The enumeration reached each row of the crash contract. */
    assert_true(rep.n >= 6 + 2 * min_effects);
    assert_true(c.saw_old > 0 && c.saw_new > 0);
    assert_true(c.rec.discarded > 0);      /* sidecar durable, no effect */
    assert_true(c.rec.rolled_forward > 0); /* all effects done (or committed), sidecar left */
    if (min_effects > 1) assert_true(c.rec.rolled_back > 0); /* some effects done, not all */
}

#if MUTATE_CRASH_GROUP == 1
static void test_crash_update_keyed(void **state)
{
    (void)state;
    run_case("update keyed", "query u() { update Person set { age: 9 } where name = \"ann\" }", 1);
}

static void test_crash_update_generated(void **state)
{
    (void)state;
    run_case("update generated-id",
             "query u() { update Note set { text: \"changed\" } where text = \"n1\" }", 1);
}
#elif MUTATE_CRASH_GROUP == 2
static void test_crash_delete_keyed(void **state)
{
    (void)state;
    run_case("delete keyed", "query d() { delete Company where name = \"zeta\" }", 1);
}

static void test_crash_delete_generated(void **state)
{
    (void)state;
    run_case("delete generated-id", "query d() { delete Note where text = \"n2\" }", 1);
}
#else
static void test_crash_delete_cascade(void **state)
{
    (void)state;
    /* ann's row, both of ann's WorksAt and Tagged edges: three tables in one commit */
    run_case("delete cascade", "query d() { delete Person where name = \"ann\" }", 3);
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
#if MUTATE_CRASH_GROUP == 1
        cmocka_unit_test(test_crash_update_keyed),
        cmocka_unit_test(test_crash_update_generated),
#elif MUTATE_CRASH_GROUP == 2
        cmocka_unit_test(test_crash_delete_keyed),
        cmocka_unit_test(test_crash_delete_generated),
#else
        cmocka_unit_test(test_crash_delete_cascade),
#endif
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    if (template_dir[0]) test_sandbox_done(template_dir);
    return rc;
}
