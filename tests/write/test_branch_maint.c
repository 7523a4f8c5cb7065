/* Maintenance on graph branches (issue 17): automatic maintenance compacts a branch's own
 * forks and its own graph manifest after writes on it, so that a branch's write cost stays flat
 * in its history like main's; an explicit optimize of a branch compacts only the tables forked
 * on it (an unforked table is its source branch's version, never touched from here); and main
 * neither moves nor changes content while its branches are maintained. verify checks every
 * branch's head: the versions it pins, on its forks and shared, and its forks' Lance HEADs. */
#include "write_fixture.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "lance/branch.h"
#include "lance/keyindex.h"
#include "write/verify.h"

#include <dirent.h>
#include <unistd.h>

static const char *SCHEMA = "node Person {\n"
                            "    name: String @key\n"
                            "    age: I32?\n"
                            "}\n"
                            "node Company {\n"
                            "    name: String @key\n"
                            "}\n"
                            "edge WorksAt: Person -> Company\n";

static const char *DATA1 = "{\"type\":\"Person\",\"data\":{\"name\":\"ann\",\"age\":1}}\n"
                           "{\"type\":\"Company\",\"data\":{\"name\":\"acme\"}}\n"
                           "{\"edge\":\"WorksAt\",\"from\":\"ann\",\"to\":\"acme\"}\n";

static write_graph *new_graph(char *dir, size_t cap, const char *tag, bool background)
{
    test_sandbox_new(dir, cap, tag);
    store *s = wf_store(dir);
    write_init_result ir;
    assert_og_ok(write_init(s, SCHEMA, strlen(SCHEMA), "s.pg", &ir));
    write_open_options oo = WRITE_OPEN_OPTIONS_INIT;
    oo.background_maintenance = background;
    write_graph *g = NULL;
    assert_og_ok(write_graph_open(&g, s, dir, &oo));
    assert_og_ok(wf_load(g, DATA1, EXEC_LOAD_APPEND, NULL));
    return g;
}

static write_result person_on(write_graph *g, const char *branch, const char *name)
{
    char text[128];
    snprintf(text, sizeof text, "{\"type\":\"Person\",\"data\":{\"name\":\"%s\"}}\n", name);
    graph_change_set cs;
    memset(&cs, 0, sizeof cs);
    exec_load_stats st;
    assert_og_ok(exec_load_parse(&cs, g->h->catalog, text, strlen(text), "d.jsonl",
                                 EXEC_LOAD_APPEND, &st, NULL, NULL));
    write_options wo = WRITE_OPTIONS_INIT;
    wo.branch = branch;
    write_result r;
    memset(&r, 0, sizeof r);
    int rc = write_changes(g, WRITE_KIND_LOAD, &cs, &wo, &r);
    graph_change_set_clear(&cs);
    if (rc) fail_msg("load on %s: %s", branch ? branch : "main", og_error_last()->message);
    return r;
}

static graph_snapshot *lineage(write_graph *g, const char *branch)
{
    graph_snapshot *snap = NULL;
    assert_og_ok(graph_snapshot_load(&snap, g->h->s, branch, 0, GRAPH_SNAP_LINEAGE));
    return snap;
}

static uint64_t fragments(write_graph *g, const graph_table *t)
{
    lance_dataset *ds = NULL;
    assert_og_ok(graph_table_open(&ds, g->h->s, t, LANCE_ACCESS_READ));
    uint64_t n = ds->m->pb->n_fragments;
    lance_dataset_free(ds);
    return n;
}

static uint64_t manifest_fragments(write_graph *g, const char *branch)
{
    lance_dataset *m = NULL;
    assert_og_ok(graph_manifest_open(&m, g->h->s, branch, 0, LANCE_ACCESS_READ));
    uint64_t n = m->m->pb->n_fragments;
    lance_dataset_free(m);
    return n;
}

/* main's head, manifest version, and every table's branch and version are those of m0. */
static void assert_main_unchanged(write_graph *g, const graph_snapshot *m0)
{
    graph_snapshot *m1 = lineage(g, NULL);
    assert_string_equal(m1->head, m0->head);
    assert_int_equal(m1->manifest_version, m0->manifest_version);
    assert_int_equal(m1->n_tables, m0->n_tables);
    for (size_t i = 0; i < m1->n_tables; i++) {
        assert_null(m1->tables[i].table_branch);
        assert_int_equal(m1->tables[i].version, m0->tables[i].version);
    }
    graph_snapshot_free(m1);
}

static size_t maintenance_commits(const graph_snapshot *snap)
{
    size_t n = 0;
    for (size_t i = 0; i < snap->n_commits; i++)
        n += snap->commits[i].maintenance;
    return n;
}

/* Many one-row writes on a branch, inline or on the background worker: the branch's fork and
 * its graph manifest stay within the size tiers (no tier left due), the branch's lineage has
 * maintenance commits whose content head is the last write, its rows are all there, and main
 * is exactly as it was. */
static void run_auto(bool background)
{
    char dir[256];
    write_graph *g = new_graph(dir, sizeof dir, background ? "bmaint-bg" : "bmaint", background);
    graph_snapshot *m0 = lineage(g, NULL);
    uint64_t main_manifest_frags = manifest_fragments(g, NULL);
    assert_og_ok(write_branch_create(g, "dev", NULL, NULL, NULL));
    enum { WRITES = 4 * WRITE_TIER_FACTOR };
    char last[GRAPH_ID_LEN + 1] = "";
    for (unsigned i = 0; i < WRITES; i++) {
        char name[32];
        snprintf(name, sizeof name, "d%u", i);
        write_result r = person_on(g, "dev", name);
        assert_true(r.committed);
        memcpy(last, r.commit_id, sizeof last);
    }
    write_maintenance_drain(g);

    graph_snapshot *b = lineage(g, "dev");
    assert_string_equal(b->content_head, last);
    assert_true(maintenance_commits(b) >= 1);
    const graph_table *t = graph_snapshot_table(b, "node:Person");
    assert_non_null(t->table_branch);
    assert_string_equal(t->table_branch, "dev");
    lance_dataset *ds = NULL;
    assert_og_ok(graph_table_open(&ds, g->h->s, t, LANCE_ACCESS_READ));
    assert_false(write_compact_due(ds));
    /* WRITES one-row fragments without maintenance; with it, under two tiers' worth */
    assert_true(ds->m->pb->n_fragments < 2 * WRITE_TIER_FACTOR);
    lance_dataset_free(ds);
    lance_dataset *m = NULL;
    assert_og_ok(graph_manifest_open(&m, g->h->s, "dev", 0, LANCE_ACCESS_READ));
    assert_false(write_compact_due(m));
    lance_dataset_free(m);
    arrow_batch *ids = wf_ids(g->h->s, t);
    assert_int_equal(ids->num_rows, 1 + WRITES); /* ann from main, and the branch's own */
    arrow_batch_free(ids);
    /* tables the branch never wrote stay unforked: main maintains them */
    assert_null(graph_snapshot_table(b, "node:Company")->table_branch);

    assert_main_unchanged(g, m0);
    assert_int_equal(manifest_fragments(g, NULL), main_manifest_frags);
    graph_snapshot_free(b);
    graph_snapshot_free(m0);
    write_graph_close(g);
    wf_assert_sound(dir);
    test_sandbox_done(dir);
}

static void test_auto_maintenance_inline(void **state)
{
    (void)state;
    run_auto(false);
}

static void test_auto_maintenance_background(void **state)
{
    (void)state;
    run_auto(true);
}

/* An explicit optimize of a branch merges its fork's small fragments in one maintenance commit
 * on the branch; the unforked tables (and main's own) are left alone; a second optimize finds
 * nothing to do; optimizing main afterwards does not see the branch's fork. */
static void test_optimize_branch(void **state)
{
    (void)state;
    char dir[256];
    write_graph *g = new_graph(dir, sizeof dir, "bopt", false);
    for (unsigned i = 0; i < 2; i++) { /* main's Person table: 1 + 2 fragments */
        char name[32];
        snprintf(name, sizeof name, "m%u", i);
        person_on(g, NULL, name);
    }
    graph_snapshot *m0 = lineage(g, NULL);
    assert_og_ok(write_branch_create(g, "dev", NULL, NULL, NULL));
    /* the fork starts with main's 3 fragments; with these, still below the first tier (8), so
     * nothing is compacted automatically */
    enum { WRITES = WRITE_TIER_FACTOR - 4 };
    for (unsigned i = 0; i < WRITES; i++) {
        char name[32];
        snprintf(name, sizeof name, "d%u", i);
        person_on(g, "dev", name);
    }
    graph_snapshot *b0 = lineage(g, "dev");
    const graph_table *t0 = graph_snapshot_table(b0, "node:Person");
    assert_true(fragments(g, t0) >= (uint64_t)WRITES);
    assert_int_equal(maintenance_commits(b0), 0);

    write_optimize_options oo = WRITE_OPTIMIZE_OPTIONS_INIT;
    oo.branch = "dev";
    write_result r;
    memset(&r, 0, sizeof r);
    assert_og_ok(write_optimize(g, &oo, &r));
    assert_true(r.committed);
    assert_int_equal(r.n_tables, 1); /* only the fork: Company and WorksAt are main's */
    graph_snapshot *b1 = lineage(g, "dev");
    assert_string_equal(b1->head, r.commit_id);
    assert_string_equal(b1->content_head, b0->head); /* maintenance changes no content */
    assert_int_equal(maintenance_commits(b1), 1);
    const graph_table *t1 = graph_snapshot_table(b1, "node:Person");
    assert_string_equal(t1->table_branch, "dev");
    assert_int_equal(fragments(g, t1), 1);
    arrow_batch *before = wf_ids(g->h->s, t0);
    arrow_batch *after = wf_ids(g->h->s, t1);
    assert_int_equal(after->num_rows, before->num_rows);
    arrow_batch_free(before);
    arrow_batch_free(after);
    assert_main_unchanged(g, m0);

    /* nothing left to do on the branch: no commit */
    memset(&r, 0, sizeof r);
    assert_og_ok(write_optimize(g, &oo, &r));
    assert_false(r.committed);
    graph_snapshot *b2 = lineage(g, "dev");
    assert_string_equal(b2->head, b1->head);

    /* main compacts its own Person table; the branch's pins do not move */
    oo.branch = NULL;
    memset(&r, 0, sizeof r);
    assert_og_ok(write_optimize(g, &oo, &r));
    assert_true(r.committed);
    graph_snapshot *m2 = lineage(g, NULL);
    assert_int_equal(fragments(g, graph_snapshot_table(m2, "node:Person")), 1);
    graph_snapshot *b3 = lineage(g, "dev");
    assert_string_equal(b3->head, b1->head);
    assert_int_equal(graph_snapshot_table(b3, "node:Person")->version, t1->version);

    /* an unknown branch is typed */
    oo.branch = "nope";
    assert_int_equal(write_optimize(g, &oo, &r), OG_E_NOT_FOUND);

    graph_snapshot_free(b3);
    graph_snapshot_free(m2);
    graph_snapshot_free(b2);
    graph_snapshot_free(b1);
    graph_snapshot_free(b0);
    graph_snapshot_free(m0);
    write_graph_close(g);
    wf_assert_sound(dir);
    test_sandbox_done(dir);
}

/* verify covers branches: a graph with a branch (forked one table, then a branch of the branch
 * that forked another) verifies clean and counts both; a data file removed from a fork is
 * reported under the fork's directory, and main's own checks do not see it. */
static void test_verify_branches(void **state)
{
    (void)state;
    char dir[256];
    write_graph *g = new_graph(dir, sizeof dir, "bverify", false);
    /* enough rows in one write for a key index segment (LANCE_KIX_MIN_ROWS), which the forks
     * below list without holding it: it stays in main's _ogkix/ */
    core_buf many = CORE_BUF_INIT;
    for (unsigned i = 0; i < 2 * LANCE_KIX_MIN_ROWS; i++) {
        char line[96];
        int n =
            snprintf(line, sizeof line, "{\"type\":\"Person\",\"data\":{\"name\":\"p%u\"}}\n", i);
        assert_og_ok(core_buf_append(&many, line, (size_t)n));
    }
    assert_og_ok(core_buf_append(&many, "", 1));
    assert_og_ok(wf_load(g, (const char *)many.data, EXEC_LOAD_APPEND, NULL));
    core_buf_free(&many);
    assert_og_ok(write_branch_create(g, "dev", NULL, NULL, NULL));
    person_on(g, "dev", "dora");
    assert_og_ok(write_branch_create(g, "devx", "dev", NULL, NULL));
    const char *company = "{\"type\":\"Company\",\"data\":{\"name\":\"xco\"}}\n";
    graph_change_set cs;
    memset(&cs, 0, sizeof cs);
    exec_load_stats st;
    assert_og_ok(exec_load_parse(&cs, g->h->catalog, company, strlen(company), "d.jsonl",
                                 EXEC_LOAD_APPEND, &st, NULL, NULL));
    write_options wo = WRITE_OPTIONS_INIT;
    wo.branch = "devx";
    write_result r;
    assert_og_ok(write_changes(g, WRITE_KIND_LOAD, &cs, &wo, &r));
    graph_change_set_clear(&cs);
    person_on(g, "devx", "xavier");
    graph_snapshot *x = lineage(g, "devx");
    assert_string_equal(graph_snapshot_table(x, "node:Person")->table_branch, "devx");
    assert_string_equal(graph_snapshot_table(x, "node:Company")->table_branch, "devx");
    graph_snapshot_free(x);
    graph_snapshot *d = lineage(g, "dev");
    char fork[STORE_KEY_MAX];
    assert_og_ok(lance_branch_root(fork, graph_snapshot_table(d, "node:Person")->path, "dev"));
    graph_snapshot_free(d);
    store *s = g->h->s;

    write_verify_report rep;
    memset(&rep, 0, sizeof rep);
    assert_og_ok(write_verify(s, NULL, &rep));
    for (size_t i = 0; i < rep.n_problems; i++)
        print_message("%s %s %s\n", rep.problems[i].kind, rep.problems[i].object,
                      rep.problems[i].message);
    assert_int_equal(rep.n_problems, 0);
    assert_int_equal(rep.branches, 2);
    uint64_t clean_versions = rep.table_versions;
    write_verify_report_clear(&rep);

    /* remove the data file the branch's own write made on its Person fork */
    char data[STORE_KEY_MAX + 300];
    snprintf(data, sizeof data, "%s/%s/data", dir, fork);
    DIR *dd = opendir(data);
    assert_non_null(dd);
    char victim[STORE_KEY_MAX + 600] = "";
    for (struct dirent *e; (e = readdir(dd));)
        if (e->d_name[0] != '.') snprintf(victim, sizeof victim, "%s/%s", data, e->d_name);
    closedir(dd);
    assert_true(victim[0] != '\0');
    assert_int_equal(unlink(victim), 0);
    memset(&rep, 0, sizeof rep);
    assert_og_ok(write_verify(s, NULL, &rep));
    assert_true(rep.n_problems >= 1);
    size_t under_fork = 0;
    for (size_t i = 0; i < rep.n_problems; i++)
        under_fork += strstr(rep.problems[i].object, fork) != NULL;
    assert_int_equal(under_fork, rep.n_problems);
    assert_string_equal(rep.problems[0].kind, "file_missing");
    assert_int_equal(rep.table_versions, clean_versions);
    write_verify_report_clear(&rep);
    write_graph_close(g);
    test_sandbox_done(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_auto_maintenance_inline),
        cmocka_unit_test(test_auto_maintenance_background),
        cmocka_unit_test(test_optimize_branch),
        cmocka_unit_test(test_verify_branches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
