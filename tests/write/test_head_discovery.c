/* Head discovery that is never silently stale (issue 33 item 1, findings F1 and F5): a graph of
 * 30 one-row commits on main, and 30 on a branch, then every graph-manifest version deleted in
 * turn (each in a fresh copy of the graph). A read at the head through a fresh open, and a
 * write, must give either the right answer (the deleted version was history the search does
 * not need) or a typed OG_E_CORRUPT naming the lost version's file; never a stale head with
 * success. Reads --at an intact commit keep working. */
#include "testutil.h"

#include <dirent.h>
#include <inttypes.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

static const char *SCHEMA = "node Person {\n"
                            "    name: String @key\n"
                            "}\n";

static const char *Q_COUNT = "query q() { match { $p: Person } return { count($p) as n } }";

#define COMMITS 30

static void load_person(og_graph *g, const char *branch, const char *name)
{
    char row[128];
    snprintf(row, sizeof row, "{\"type\":\"Person\",\"data\":{\"name\":\"%s\"}}\n", name);
    og_load_options lo = OG_LOAD_OPTIONS_INIT;
    lo.mode = OG_LOAD_MERGE;
    lo.branch = branch;
    og_write_result *r = NULL;
    assert_og_ok(og_graph_load(&r, g, "d.jsonl", row, strlen(row), &lo));
    og_write_result_free(r);
}

/* The Person count at the head of branch (NULL: main), or -1 with the error set. */
static int64_t count_people(og_graph *g, const char *branch)
{
    og_query_options qo = OG_QUERY_OPTIONS_INIT;
    qo.source = Q_COUNT;
    qo.branch = branch;
    og_result *r = NULL;
    if (og_graph_query(&r, g, &qo) != 0) return -1;
    assert_int_equal(og_result_row_count(r), 1);
    og_value v;
    assert_og_ok(og_result_value(&v, r, 0, 0));
    int64_t n = v.i;
    og_result_free(r);
    return n;
}

/* The versions stored in dir (a _versions/ folder), ascending: V2 names count down. */
static size_t list_versions(const char *dir, uint64_t *out, size_t cap)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        unsigned long long x;
        char tail[16];
        if (strlen(e->d_name) != 29 || sscanf(e->d_name, "%20llu%15s", &x, tail) != 2 ||
            strcmp(tail, ".manifest") != 0)
            continue;
        assert_true(n < cap);
        out[n++] = UINT64_MAX - (uint64_t)x;
    }
    closedir(d);
    for (size_t i = 1; i < n; i++) /* insertion sort: a few dozen */
        for (size_t j = i; j > 0 && out[j - 1] > out[j]; j--) {
            uint64_t t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    return n;
}

typedef struct tally {
    unsigned correct, typed, repaired, holes, total;
} tally;

/* In a fresh copy of src, delete version v of the manifest dataset whose versions are in
 * vdir_rel (relative to the graph root), then read and write at the head of branch. */
static void one_case(const char *sandbox, const char *src, const char *vdir_rel, uint64_t v,
                     bool newest, bool first, const char *branch, int64_t want, tally *t)
{
    char copy[700], cmd[1600], vfile[900];
    snprintf(copy, sizeof copy, "%s/copy", sandbox);
    test_rmrf(copy);
    snprintf(cmd, sizeof cmd, "cp -a '%s' '%s'", src, copy);
    assert_int_equal(system(cmd), 0);
    char vname[32];
    snprintf(vname, sizeof vname, "%020llu", (unsigned long long)(UINT64_MAX - v));
    snprintf(vfile, sizeof vfile, "%s/%s/%s.manifest", copy, vdir_rel, vname);
    assert_int_equal(unlink(vfile), 0);
    t->total++;

    og_graph *g = NULL;
    int rc = og_graph_open(&g, copy, NULL);
    if (rc != 0) { /* an open that refuses is typed and names the file */
        assert_int_equal(rc, OG_E_CORRUPT);
        t->typed++;
        return;
    }
    int64_t n = count_people(g, branch);
    if (n >= 0) {
        if (n != want)
            fail_msg("%s version %" PRIu64 " deleted: the head read %" PRId64
                     " people with success, the head has %" PRId64 " (a stale head)",
                     branch ? branch : "main", v, n, want);
        t->correct++;
    } else {
        const og_error *e = og_error_last();
        if (e->code != OG_E_CORRUPT)
            fail_msg("%s version %" PRIu64 " deleted: %s: %s", branch ? branch : "main", v,
                     og_code_name(e->code), e->message);
        bool named = strstr(e->message, vname) || (e->object && strstr(e->object, vname));
        if (!named)
            fail_msg("%s version %" PRIu64 " deleted: the error does not name %s: %s",
                     branch ? branch : "main", v, vname, e->message);
        t->typed++;
        /* A branch's first version is its fork record (the ref names it): repair does not
         * rebuild it yet, and every read of the branch stays typed corrupt. */
        if (branch && first) {
            og_graph_close(g);
            return;
        }
        /* repair restores a head read without dropping a commit (issue 33 item 3) */
        og_verify_report *vr = NULL;
        if (!branch) { /* verify reports it first, naming the lost version */
            assert_og_ok(og_root_verify(&vr, copy, NULL));
            bool seen = false;
            for (size_t i = 0; i < og_verify_report_problem_count(vr); i++)
                if (strstr(og_verify_report_problem(vr, i)->object, vname) ||
                    strstr(og_verify_report_problem(vr, i)->message, vname))
                    seen = true;
            /* a lost newest version shows as the tables its commit moved (table_ahead) */
            if (!og_verify_report_problem_count(vr) || (!seen && !newest))
                fail_msg("main version %" PRIu64 " deleted: verify reported %zu problems, none "
                         "naming %s",
                         v, og_verify_report_problem_count(vr), vname);
            og_verify_report_free(vr);
        }
        og_repair_options ro;
        assert_og_ok(og_repair_options_init(&ro, OG_REPAIR_OPTIONS_VERSION));
        ro.confirm = 1;
        ro.branch = branch;
        og_repair_result *rr = NULL;
        og_graph_close(g);
        g = NULL;
        if (og_root_repair(&rr, copy, &ro) != 0)
            fail_msg("%s version %" PRIu64 " deleted: repair failed: %s", branch ? branch : "main",
                     v, og_error_last()->message);
        bool hole = rr->lost_version != 0;
        assert_false(rr->clean);
        assert_string_equal(rr->at_stake, "");
        og_repair_result_free(rr);
        assert_og_ok(og_graph_open(&g, copy, NULL));
        int64_t fixed = count_people(g, branch);
        if (fixed < 0)
            fail_msg("%s version %" PRIu64 " deleted: after repair: %s", branch ? branch : "main",
                     v, og_error_last()->message);
        /* A hole loses no commit; a lost newest version's rows are rolled forward: every
         * acknowledged person reads at the head. */
        if (fixed != want)
            fail_msg("%s version %" PRIu64 " deleted: after repair the head has %" PRId64
                     " people, %" PRId64 " were acknowledged",
                     branch ? branch : "main", v, fixed, want);
        t->holes += hole;
        /* After repair verify is clean, except that a hole's version file of main stays lost:
         * its commit cannot be read --at (the others can), which verify keeps reporting, by
         * name, until the file is restored from a backup. */
        assert_og_ok(og_root_verify(&vr, copy, NULL));
        for (size_t i = 0; i < og_verify_report_problem_count(vr); i++)
            if (branch || !hole ||
                strcmp(og_verify_report_problem(vr, i)->kind, "manifest_version_lost") != 0 ||
                !strstr(og_verify_report_problem(vr, i)->object, vname))
                fail_msg("%s version %" PRIu64 " deleted: after repair verify reports %s: %s",
                         branch ? branch : "main", v, og_verify_report_problem(vr, i)->kind,
                         og_verify_report_problem(vr, i)->message);
        og_verify_report_free(vr);
        t->repaired++;
    }
    /* A write lands on the true head (one more person) or is refused typed. */
    char row[128];
    snprintf(row, sizeof row, "{\"type\":\"Person\",\"data\":{\"name\":\"late\"}}\n");
    og_load_options lo = OG_LOAD_OPTIONS_INIT;
    lo.mode = OG_LOAD_MERGE;
    lo.branch = branch;
    og_write_result *r = NULL;
    rc = og_graph_load(&r, g, "d.jsonl", row, strlen(row), &lo);
    og_write_result_free(r);
    if (rc == 0) {
        int64_t after = count_people(g, branch);
        if (after != want + 1)
            fail_msg("%s version %" PRIu64 " deleted: a write was acknowledged on a stale head "
                     "(%" PRId64 " people after it, want %" PRId64 ")",
                     branch ? branch : "main", v, after, want + 1);
    } else if (rc != OG_E_CORRUPT) {
        fail_msg("%s version %" PRIu64 " deleted: the write failed %s: %s",
                 branch ? branch : "main", v, og_code_name(rc), og_error_last()->message);
    }
    og_graph_close(g);
}

static void build(const char *root, const char *branch)
{
    og_init_options io = OG_INIT_OPTIONS_INIT;
    io.schema_source = SCHEMA;
    og_init_result *ir = NULL;
    assert_og_ok(og_root_init(&ir, root, &io));
    og_init_result_free(ir);
    og_graph *g = NULL;
    assert_og_ok(og_graph_open(&g, root, NULL));
    load_person(g, NULL, "root");
    if (branch) assert_og_ok(og_graph_create_branch(NULL, g, branch, NULL));
    for (int i = 0; i < COMMITS; i++) {
        char name[16];
        snprintf(name, sizeof name, "p%02d", i);
        load_person(g, branch, name);
    }
    og_graph_close(g); /* finishes queued maintenance: the files below are final */
}

static void run_matrix(const char *branch)
{
    char dir[256], root[512], vdir[700];
    test_sandbox_new(dir, sizeof dir, branch ? "head-branch" : "head-main");
    snprintf(root, sizeof root, "%s/g", dir);
    build(root, branch);
    const char *vdir_rel =
        branch ? "__manifest.lance/tree/b/_versions" : "__manifest.lance/_versions";
    snprintf(vdir, sizeof vdir, "%s/%s", root, vdir_rel);
    uint64_t vs[256];
    size_t n = list_versions(vdir, vs, 256);
    assert_true(n >= COMMITS);
    int64_t want = 1 + COMMITS;
    og_set_log(NULL, NULL, OG_LOG_ERROR);
    tally t = {0};
    for (size_t i = 0; i < n; i++)
        one_case(dir, root, vdir_rel, vs[i], i + 1 == n, i == 0, branch, want, &t);
    og_set_log(NULL, NULL, OG_LOG_WARN);
    print_message("%s: %u versions deleted one at a time: %u read the true head, %u typed "
                  "corrupt naming the lost version (%u repaired, %u of them holes that lost no "
                  "commit), 0 stale\n",
                  branch ? "branch b" : "main", t.total, t.correct, t.typed, t.repaired, t.holes);
    assert_int_equal(t.correct + t.typed, t.total);
    /* The newest version's loss is always seen (nothing above it explains the head). */
    assert_true(t.typed >= 1);
    test_sandbox_done(dir);
}

static void test_each_main_version_deleted(void **state)
{
    (void)state;
    run_matrix(NULL);
}

static void test_each_branch_version_deleted(void **state)
{
    (void)state;
    run_matrix("b");
}

/* A branch whose only commit is its first touch of a table (the fork of Person made for it),
 * and that commit's manifest version lost: the branch's previous version reads Person from
 * main, and nothing on the branch itself is ahead of a pin. The fork made at the pinned version
 * with a commit of its own proves the loss: the head read is typed corrupt naming the lost
 * version (it read main's people with success before), and repair rolls the fork forward. */
static void test_branch_first_touch_lost(void **state)
{
    (void)state;
    char dir[256], root[512], vdir[700], vfile[800];
    test_sandbox_new(dir, sizeof dir, "head-first-touch");
    snprintf(root, sizeof root, "%s/g", dir);
    build(root, NULL); /* main: root + COMMITS people */
    og_graph *g = NULL;
    assert_og_ok(og_graph_open(&g, root, NULL));
    assert_og_ok(og_graph_create_branch(NULL, g, "b", NULL));
    load_person(g, "b", "only-on-b");
    assert_int_equal(count_people(g, "b"), 2 + COMMITS);
    og_graph_close(g);
    snprintf(vdir, sizeof vdir, "%s/__manifest.lance/tree/b/_versions", root);
    uint64_t vs[16];
    size_t n = list_versions(vdir, vs, 16);
    /* The fork record, then the first touch, then what maintenance at close may have added (a
     * compaction of the branch's manifest): every version after the fork record goes. */
    assert_true(n >= 2);
    char names[16][32];
    for (size_t i = 1; i < n; i++) {
        snprintf(names[i], sizeof names[i], "%020llu", (unsigned long long)(UINT64_MAX - vs[i]));
        snprintf(vfile, sizeof vfile, "%s/%s.manifest", vdir, names[i]);
        assert_int_equal(unlink(vfile), 0);
    }

    og_set_log(NULL, NULL, OG_LOG_ERROR);
    assert_og_ok(og_graph_open(&g, root, NULL));
    int64_t stale = count_people(g, "b");
    if (stale >= 0)
        fail_msg("the branch's first-touch version deleted: the head read %" PRId64
                 " people with success (a stale head; %d were acknowledged)",
                 stale, 2 + COMMITS);
    const og_error *e = og_error_last();
    assert_int_equal(e->code, OG_E_CORRUPT);
    bool named = false;
    for (size_t i = 1; i < n; i++)
        named |= strstr(e->message, names[i]) || (e->object && strstr(e->object, names[i]));
    if (!named) fail_msg("the error names none of the lost versions: %s", e->message);
    assert_int_equal(count_people(g, NULL), 1 + COMMITS); /* main is untouched */
    og_graph_close(g);
    og_verify_report *vr = NULL; /* verify sees it too */
    assert_og_ok(og_root_verify(&vr, root, NULL));
    if (!og_verify_report_problem_count(vr))
        fail_msg("the branch's first-touch version deleted: verify is clean");
    print_message("verify: %s: %s\n", og_verify_report_problem(vr, 0)->kind,
                  og_verify_report_problem(vr, 0)->message);
    og_verify_report_free(vr);

    og_repair_options ro;
    assert_og_ok(og_repair_options_init(&ro, OG_REPAIR_OPTIONS_VERSION));
    ro.confirm = 1;
    ro.branch = "b";
    og_repair_result *rr = NULL;
    assert_og_ok(og_root_repair(&rr, root, &ro));
    assert_false(rr->clean);
    assert_string_equal(rr->at_stake, "");
    og_repair_result_free(rr);
    og_set_log(NULL, NULL, OG_LOG_WARN);
    assert_og_ok(og_graph_open(&g, root, NULL));
    assert_int_equal(count_people(g, "b"), 2 + COMMITS);
    og_graph_close(g);
    test_sandbox_done(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_main_version_deleted),
        cmocka_unit_test(test_each_branch_version_deleted),
        cmocka_unit_test(test_branch_first_touch_lost),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
