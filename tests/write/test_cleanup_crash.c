/* Crash enumeration of graph cleanup (issue 33 item 4, finding F3). The graph: seven commits
 * of main, one of them a schema apply that drops the type City (so its table is reclaimed
 * whole), and a graph branch forked after the drop that has written to Person (a per-table
 * fork whose base is main's Person at the fork point). cleanup --keep 2 runs on the fault
 * store, crashing after every durable store operation in both crash modes; the root is then
 * reopened with a plain store and checked:
 *   - verify reports no problem;
 *   - the head and every retained commit read exactly the rows they read before, and every
 *     other commit either still reads them or fails not_found saying cleanup removed it;
 *   - the branch reads what it read before;
 *   - a second cleanup (orphan grace 0) leaves exactly the files the uncrashed cleanup leaves
 *     followed by the same second cleanup, which removes nothing: no file named by nothing
 *     stays;
 *   - a follow-up write to main and to the branch succeeds, and verify is still clean.
 * Also: a read --at a commit whose graph-manifest version cleanup removed, and at one whose
 * manifest version is still there but a table version it pins is gone (what a cleanup killed
 * part way by an older build left), both say cleanup removed it. */
#include "write_fixture.h"

#include "crashsim.h"
#include "lance/cleanup.h"
#include "lang/catalog.h"
#include "omnigraph.h"
#include "write/verify.h"

#include <string.h>

static const char *OLD_SCHEMA = "node Person {\n"
                                "    name: String @key\n"
                                "    age: I32?\n"
                                "}\n"
                                "node City { name: String @key }\n";
static const char *NEW_SCHEMA = "node Person {\n"
                                "    name: String @key\n"
                                "    age: I32?\n"
                                "}\n";

#define KEEP 2
#define MAX_COMMITS 16

typedef struct cleanup_case {
    size_t n_commits; /* newest first, as the lineage lists them */
    uint64_t mver[MAX_COMMITS];
    char *content[MAX_COMMITS]; /* main's rows at each commit */
    char *branch_content;
    char *files_after; /* the files (by directory) after cleanup and a second cleanup */
    /* what the checks saw */
    unsigned removed_reads, kept_reads, second_removed;
} cleanup_case;

static void release_case(cleanup_case *cc)
{
    for (size_t i = 0; i < MAX_COMMITS; i++) {
        free(cc->content[i]);
        cc->content[i] = NULL;
    }
    free(cc->branch_content);
    cc->branch_content = NULL;
    cc->n_commits = 0;
}

/* Every row of every table a snapshot of main at manifest version mver (0: the head) pins, as
 * wf_content prints them; the error of the first failing read otherwise. */
static int content_at(store *s, uint64_t mver, char **text)
{
    return wf_content_at(s, NULL, mver, text);
}

/* The files under the root, counted by directory ("<dir> <n>\n" per directory, sorted): file
 * names carry random ids, directories do not. */
static char *files_by_dir(store *s)
{
    store_list l = {0};
    if (store_list_prefix(s, "", 0, &l) != 0) return NULL;
    char **dirs = calloc(l.count ? l.count : 1, sizeof *dirs);
    size_t n = 0;
    for (size_t i = 0; i < l.count; i++) {
        if (l.items[i].is_prefix) continue;
        const char *slash = strrchr(l.items[i].key, '/');
        dirs[n++] = slash ? strndup(l.items[i].key, (size_t)(slash - l.items[i].key)) : strdup(".");
    }
    store_list_free(&l);
    qsort(dirs, n, sizeof *dirs, wf_cmp_str);
    core_buf out = CORE_BUF_INIT;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && strcmp(dirs[j], dirs[i]) == 0)
            j++;
        (void)core_buf_printf(&out, "%s %zu\n", dirs[i], j - i);
        i = j;
    }
    for (size_t i = 0; i < n; i++)
        free(dirs[i]);
    free(dirs);
    char *text = strdup(core_buf_cstr(&out));
    core_buf_free(&out);
    return text;
}

static lang_catalog *catalog_of(const char *src)
{
    core_arena a;
    core_arena_init(&a, 4096);
    lang_diags d;
    lang_diags_init(&d, &a);
    lang_catalog *c = NULL;
    int rc = lang_catalog_build(&c, src, strlen(src), "schema.pg", &d);
    core_arena_free(&a);
    return rc == 0 ? c : NULL;
}

static int load_line(write_graph *g, const char *branch, const char *name, int age)
{
    char line[160];
    snprintf(line, sizeof line, "{\"type\":\"Person\",\"data\":{\"name\":\"%s\",\"age\":%d}}\n",
             name, age);
    write_options wo = WRITE_OPTIONS_INIT;
    wo.branch = branch;
    write_result res;
    return wf_load_opt(g, line, EXEC_LOAD_MERGE, &wo, &res);
}

/* The starting state (see the file comment): init, three loads (the first with a City), the
 * apply dropping City, a load, the branch "dev" at the head with a write of its own, two more
 * loads of main. */
static int build_start(store *s, void *vctx)
{
    (void)vctx;
    write_init_result ir;
    int rc = write_init(s, OLD_SCHEMA, strlen(OLD_SCHEMA), "s.pg", &ir);
    write_graph *g = NULL;
    if (rc == 0) rc = write_graph_open(&g, wf_borrow(s), "", NULL);
    if (rc == 0)
        rc = wf_load(g,
                     "{\"type\":\"Person\",\"data\":{\"name\":\"ann\",\"age\":1}}\n"
                     "{\"type\":\"City\",\"data\":{\"name\":\"oslo\"}}\n",
                     EXEC_LOAD_MERGE, NULL);
    if (rc == 0) rc = load_line(g, NULL, "bob", 2);
    if (rc == 0) rc = load_line(g, NULL, "ann", 3); /* an update: a deletion file */
    lang_catalog *to = rc == 0 ? catalog_of(NEW_SCHEMA) : NULL;
    if (rc == 0 && !to) rc = OG_E_INTERNAL;
    write_schema_result sr;
    memset(&sr, 0, sizeof sr);
    if (rc == 0) rc = write_schema_apply(g, to, true, NULL, &sr);
    write_schema_result_clear(&sr);
    lang_catalog_free(to);
    if (rc == 0) rc = load_line(g, NULL, "cyd", 4);
    if (rc == 0) rc = write_branch_create(g, "dev", NULL, NULL, NULL);
    if (rc == 0) rc = load_line(g, "dev", "dev1", 5);
    if (rc == 0) rc = load_line(g, NULL, "dee", 6);
    if (rc == 0) rc = load_line(g, NULL, "eve", 7);
    write_graph_close(g);
    return rc;
}

static int run_cleanup(store *s, write_cleanup_report *rep)
{
    write_graph *g = NULL;
    int rc = write_graph_open(&g, wf_borrow(s), "", NULL);
    write_cleanup_options co = WRITE_CLEANUP_OPTIONS_INIT;
    co.keep = KEEP;
    co.orphan_grace_ms = 0; /* nothing here is staged by a live writer */
    if (rc == 0) rc = write_cleanup(g, &co, rep);
    write_graph_close(g);
    return rc;
}

static int op_cleanup(store *s, void *vctx)
{
    (void)vctx;
    write_cleanup_report rep;
    return run_cleanup(s, &rep);
}

/* Once, without a crash: what each commit and the branch read before, and the files an
 * uncrashed cleanup followed by a second one leaves. */
static void prepare_case(cleanup_case *cc)
{
    char dir[256];
    test_sandbox_new(dir, sizeof dir, "cleanup-crash-expected");
    store *s = wf_store(dir);
    assert_og_ok(build_start(s, cc));
    graph_snapshot *lin = NULL;
    assert_og_ok(graph_snapshot_load(&lin, s, NULL, 0, GRAPH_SNAP_LINEAGE));
    assert_true(lin->n_commits >= 6 && lin->n_commits <= MAX_COMMITS);
    cc->n_commits = lin->n_commits;
    for (size_t i = 0; i < lin->n_commits; i++) {
        cc->mver[i] = lin->commits[i].manifest_version;
        assert_og_ok(content_at(s, cc->mver[i], &cc->content[i]));
    }
    graph_snapshot_free(lin);
    assert_non_null(cc->branch_content = wf_content(s, "dev"));
    assert_non_null(strstr(cc->branch_content, "dev1"));
    assert_null(strstr(cc->content[0], "dev1"));
    write_cleanup_report rep;
    assert_og_ok(run_cleanup(s, &rep));
    print_message("uncrashed cleanup: %llu versions, %llu files, %llu tables removed\n",
                  (unsigned long long)rep.versions_removed, (unsigned long long)rep.files_removed,
                  (unsigned long long)rep.tables_removed);
    assert_true(rep.versions_removed > 0);
    assert_int_equal(rep.tables_removed, 1); /* City's */
    assert_og_ok(run_cleanup(s, &rep));
    assert_int_equal(rep.files_removed, 0);
    assert_int_equal(rep.tables_removed, 0);
    assert_non_null(cc->files_after = files_by_dir(s));
    store_close(s);
    test_sandbox_done(dir);
}

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            print_message("k=%llu mode=%d: ", (unsigned long long)pt->k, (int)pt->mode);           \
            print_message(__VA_ARGS__);                                                            \
            print_message("\n");                                                                   \
            rc = 1;                                                                                \
            goto out;                                                                              \
        }                                                                                          \
    } while (0)

/* verify's problems as one line each ("" when clean). */
static char *verify_problems(store *s)
{
    write_verify_options vo = {0};
    write_verify_report vr;
    if (write_verify(s, &vo, &vr) != 0) return strdup(og_error_last()->message);
    core_buf b = CORE_BUF_INIT;
    for (size_t i = 0; i < vr.n_problems; i++)
        (void)core_buf_printf(&b, "%s %s: %s\n", vr.problems[i].kind, vr.problems[i].object,
                              vr.problems[i].message);
    write_verify_report_clear(&vr);
    char *text = strdup(b.len ? core_buf_cstr(&b) : "");
    core_buf_free(&b);
    return text;
}

static int check_cleanup(store *s, void *vctx, const crashsim_point *pt)
{
    cleanup_case *cc = vctx;
    int rc = 0;
    char *problems = NULL, *got = NULL, *files = NULL;
    write_graph *g = NULL;
    CHECK(pt->k != 0 || pt->op_rc == 0, "uncrashed cleanup: %s", og_error_last()->message);
    CHECK((problems = verify_problems(s)) && !*problems, "verify after the crash:\n%s", problems);
    for (size_t i = 0; i < cc->n_commits; i++) {
        free(got);
        got = NULL;
        int r = content_at(s, cc->mver[i], &got);
        if (r == 0) {
            CHECK(strcmp(got, cc->content[i]) == 0, "commit %zu (version %llu) reads:\n%s", i,
                  (unsigned long long)cc->mver[i], got);
            cc->kept_reads++;
            continue;
        }
        CHECK(i >= KEEP, "retained commit %zu (version %llu): %s", i,
              (unsigned long long)cc->mver[i], og_error_last()->message);
        CHECK(r == OG_E_NOT_FOUND && strstr(og_error_last()->message, "cleanup removed it"),
              "expired commit %zu (version %llu): %s", i, (unsigned long long)cc->mver[i],
              og_error_last()->message);
        cc->removed_reads++;
    }
    free(got);
    CHECK((got = wf_content(s, "dev")) && strcmp(got, cc->branch_content) == 0,
          "the branch reads:\n%s", got ? got : og_error_last()->message);
    /* a second cleanup finishes the job */
    write_cleanup_report rep;
    CHECK(run_cleanup(s, &rep) == 0, "second cleanup: %s", og_error_last()->message);
    cc->second_removed += rep.files_removed > 0;
    CHECK((files = files_by_dir(s)) && strcmp(files, cc->files_after) == 0,
          "files after a second cleanup:\n%s--- expected:\n%s", files, cc->files_after);
    free(problems);
    CHECK((problems = verify_problems(s)) && !*problems, "verify after a second cleanup:\n%s",
          problems);
    /* follow-up writes */
    CHECK(write_graph_open(&g, wf_borrow(s), "", NULL) == 0, "open: %s", og_error_last()->message);
    CHECK(load_line(g, NULL, "fay", 8) == 0, "write to main: %s", og_error_last()->message);
    CHECK(load_line(g, "dev", "dev2", 9) == 0, "write to dev: %s", og_error_last()->message);
    write_graph_close(g);
    g = NULL;
    free(got);
    CHECK((got = wf_content(s, NULL)) && strstr(got, "\"fay\""), "main after: %s",
          got ? got : og_error_last()->message);
    free(problems);
    CHECK((problems = verify_problems(s)) && !*problems, "verify after the writes:\n%s", problems);
out:
    write_graph_close(g);
    free(problems);
    free(got);
    free(files);
    return rc;
}

static void test_crash_cleanup(void **state)
{
    (void)state;
    cleanup_case cc;
    memset(&cc, 0, sizeof cc);
    prepare_case(&cc);
    crashsim_case c = {"cleanup --keep 2 (a dropped table, a branch with a fork)", &cc, build_start,
                       op_cleanup, check_cleanup};
    crashsim_report rep;
    crashsim_run(&c, &rep);
    print_message("%s: %llu durable ops, %llu crash runs, %llu violations (expired commits read "
                  "as removed %u, commits still read %u; second cleanups that removed files "
                  "%u) %s\n",
                  c.name, (unsigned long long)rep.n, (unsigned long long)rep.runs,
                  (unsigned long long)rep.violations, cc.removed_reads, cc.kept_reads,
                  cc.second_removed, rep.first);
    assert_int_equal(rep.violations, 0);
    assert_true(rep.n >= 10);
    assert_true(cc.removed_reads > 0 && cc.second_removed > 0);
    release_case(&cc);
    free(cc.files_after);
}

/* A query --at a commit through the public API: NULL and the error set when it fails. */
static char *query_at(const char *root, const char *at)
{
    og_graph *og = NULL;
    og_open_options oo = OG_OPEN_OPTIONS_INIT;
    if (og_graph_open(&og, root, &oo) != 0) return NULL;
    og_query_options qo = OG_QUERY_OPTIONS_INIT;
    qo.source = "query p() { match { $p: Person } return { $p.name } }\n";
    qo.at = at;
    og_result *r = NULL;
    char *text = NULL;
    if (og_graph_query(&r, og, &qo) == 0) {
        core_buf b = CORE_BUF_INIT;
        for (uint64_t i = 0; i < og_result_row_count(r); i++) {
            size_t len = 0;
            const char *j = og_result_row_json(r, i, &len);
            (void)core_buf_printf(&b, "%.*s\n", (int)len, j);
        }
        text = strdup(b.len ? core_buf_cstr(&b) : "");
        core_buf_free(&b);
    }
    og_result_free(r);
    core_err_saved e;
    core_err_save(&e);
    og_graph_close(og);
    if (!text) core_err_restore(&e);
    return text;
}

/* A read --at a commit that cleanup removed says so, whether its graph-manifest version is
 * gone (what cleanup does now) or only a table version it pins (what a cleanup of an older
 * build, which deleted table versions first, left when killed part way). And a cleanup, even
 * one whose rules retain every commit, finishes such a half-done one: the commits whose table
 * versions are gone lose their manifest versions, and verify is clean again. */
/* The state a cleanup of an older build (table versions first) killed part way left: Person's
 * versions below the one the second-newest commit pins are gone, the manifest versions naming
 * them are not. *lin: main's lineage. */
static void half_done(store *s, graph_snapshot **lin)
{
    assert_og_ok(build_start(s, NULL));
    assert_og_ok(graph_snapshot_load(lin, s, NULL, 0, GRAPH_SNAP_LINEAGE));
    assert_true((*lin)->n_commits >= 6);
    graph_snapshot *floor = NULL;
    assert_og_ok(graph_snapshot_load(&floor, s, NULL, (*lin)->commits[1].manifest_version, 0));
    const graph_table *person = graph_snapshot_table(floor, "node:Person");
    assert_non_null(person);
    lance_cleanup_options co = LANCE_CLEANUP_OPTIONS_INIT;
    co.before_version = person->version;
    co.older_than_ms = -1;
    co.contiguous = true;
    lance_cleanup_report lr;
    assert_og_ok(lance_cleanup(s, person->path, &co, &lr));
    assert_true(lr.versions_deleted > 0);
    graph_snapshot_free(floor);
}

static void test_read_removed_commit(void **state)
{
    (void)state;
    char dir[256];
    test_sandbox_new(dir, sizeof dir, "cleanup-removed");
    store *s = wf_store(dir);
    graph_snapshot *lin = NULL;
    half_done(s, &lin);
    size_t n = lin->n_commits;
    char *problems = verify_problems(s);
    assert_non_null(strstr(problems, "table_version_missing"));
    free(problems);
    /* the oldest load: its manifest version is there, its Person version is not */
    const graph_commit *old = &lin->commits[n - 2];
    char *text = NULL;
    assert_int_equal(content_at(s, old->manifest_version, &text), OG_E_NOT_FOUND);
    print_message("a table version gone: %s\n", og_error_last()->message);
    assert_non_null(strstr(og_error_last()->message, "cleanup removed it"));
    assert_null(query_at(dir, old->id));
    print_message("query --at it: %s\n", og_error_last()->message);
    assert_int_equal(og_error_last()->code, OG_E_NOT_FOUND);
    assert_non_null(strstr(og_error_last()->message, "cleanup removed it"));
    char *rows = query_at(dir, lin->commits[1].id); /* retained: still reads */
    assert_non_null(rows);
    assert_non_null(strstr(rows, "\"dee\""));
    free(rows);

    /* a cleanup that retains every commit by its rules finishes the half-done one */
    write_graph *g = NULL;
    assert_og_ok(write_graph_open(&g, wf_borrow(s), "", NULL));
    write_cleanup_options wco = WRITE_CLEANUP_OPTIONS_INIT;
    wco.keep = 1000;
    write_cleanup_report rep;
    assert_og_ok(write_cleanup(g, &wco, &rep));
    write_graph_close(g);
    print_message("cleanup --keep 1000 after the half-done one: %llu of %llu commits readable, "
                  "%llu versions removed\n",
                  (unsigned long long)rep.commits_retained, (unsigned long long)rep.commits_total,
                  (unsigned long long)rep.versions_removed);
    assert_true(rep.commits_retained < rep.commits_total);
    problems = verify_problems(s);
    if (*problems) fail_msg("verify after the cleanup:\n%s", problems);
    free(problems);
    /* now the manifest version is gone too: still "cleanup removed it" */
    assert_int_equal(content_at(s, old->manifest_version, &text), OG_E_NOT_FOUND);
    assert_non_null(strstr(og_error_last()->message, "cleanup removed it"));
    assert_null(query_at(dir, old->id));
    assert_non_null(strstr(og_error_last()->message, "cleanup removed it"));
    rows = query_at(dir, lin->commits[1].id);
    assert_non_null(rows);
    free(rows);
    graph_snapshot_free(lin);
    store_close(s);
    test_sandbox_done(dir);
}

/* repair finishes what a cleanup of an older build killed part way left: a dry run reports
 * the unreadable commits and changes nothing, a confirm removes their manifest versions (they
 * were outside that cleanup's retention), and verify is clean after it. */
static void test_repair_finishes_cleanup(void **state)
{
    (void)state;
    char dir[256];
    test_sandbox_new(dir, sizeof dir, "cleanup-repair");
    store *s = wf_store(dir);
    graph_snapshot *lin = NULL;
    half_done(s, &lin);
    const graph_commit *old = &lin->commits[lin->n_commits - 2];
    og_repair_options ro = OG_REPAIR_OPTIONS_INIT;
    og_repair_result *r = NULL;
    assert_og_ok(og_root_repair(&r, dir, &ro));
    print_message("repair (dry run): clean %d, %llu commits of an unfinished cleanup\n", r->clean,
                  (unsigned long long)r->cleanup_unfinished);
    assert_int_equal(r->clean, 0);
    assert_int_equal(r->repaired, 0);
    assert_true(r->cleanup_unfinished >= 2);
    uint64_t unfinished = r->cleanup_unfinished;
    og_repair_result_free(r);
    char *problems = verify_problems(s);
    assert_non_null(strstr(problems, "table_version_missing"));
    free(problems);
    ro.confirm = 1;
    assert_og_ok(og_root_repair(&r, dir, &ro));
    print_message("repair --confirm: removed %llu manifest versions\n",
                  (unsigned long long)r->cleanup_versions_removed);
    assert_int_equal(r->repaired, 1);
    assert_int_equal(r->cleanup_unfinished, unfinished);
    assert_true(r->cleanup_versions_removed >= unfinished);
    og_repair_result_free(r);
    problems = verify_problems(s);
    if (*problems) fail_msg("verify after repair:\n%s", problems);
    free(problems);
    assert_null(query_at(dir, old->id));
    assert_non_null(strstr(og_error_last()->message, "cleanup removed it"));
    char *rows = query_at(dir, lin->commits[1].id);
    assert_non_null(rows);
    assert_non_null(strstr(rows, "\"dee\""));
    free(rows);
    ro.confirm = 0;
    assert_og_ok(og_root_repair(&r, dir, &ro));
    assert_int_equal(r->clean, 1);
    assert_int_equal(r->cleanup_unfinished, 0);
    og_repair_result_free(r);
    graph_snapshot_free(lin);
    store_close(s);
    test_sandbox_done(dir);
}

/* Crash enumeration of that repair: killed after any of its durable operations, the graph
 * still reads every commit it read before (or says cleanup removed it), and repair --confirm
 * run again leaves it clean. */
static int setup_half_done(store *s, void *vctx)
{
    (void)vctx;
    graph_snapshot *lin = NULL;
    half_done(s, &lin);
    graph_snapshot_free(lin);
    return 0;
}

static int op_repair(store *s, void *vctx)
{
    (void)vctx;
    write_graph *g = NULL;
    write_repair_report rep;
    memset(&rep, 0, sizeof rep);
    int rc = write_graph_open(&g, wf_borrow(s), "", NULL);
    if (rc == 0) rc = write_repair(g, NULL, true, false, &rep);
    write_repair_report_clear(&rep);
    write_graph_close(g);
    return rc;
}

static int check_repair(store *s, void *vctx, const crashsim_point *pt)
{
    cleanup_case *cc = vctx;
    int rc = 0;
    char *got = NULL, *problems = NULL;
    write_graph *g = NULL;
    write_repair_report rep;
    memset(&rep, 0, sizeof rep);
    CHECK(pt->k != 0 || pt->op_rc == 0, "uncrashed repair: %s", og_error_last()->message);
    for (size_t i = 0; i < cc->n_commits; i++) {
        free(got);
        got = NULL;
        int r = content_at(s, cc->mver[i], &got);
        if (r == 0) {
            CHECK(strcmp(got, cc->content[i]) == 0, "commit %zu reads:\n%s", i, got);
            cc->kept_reads++;
            continue;
        }
        CHECK(i >= 2 && r == OG_E_NOT_FOUND && strstr(og_error_last()->message, "cleanup removed"),
              "commit %zu: %s", i, og_error_last()->message);
        cc->removed_reads++;
    }
    CHECK(write_graph_open(&g, wf_borrow(s), "", NULL) == 0, "open: %s", og_error_last()->message);
    CHECK(write_repair(g, NULL, true, false, &rep) == 0, "repair again: %s",
          og_error_last()->message);
    cc->second_removed += rep.cleanup_versions_removed > 0;
    CHECK((problems = verify_problems(s)) && !*problems, "verify after repair again:\n%s",
          problems);
    CHECK(load_line(g, NULL, "fay", 8) == 0, "write: %s", og_error_last()->message);
out:
    write_repair_report_clear(&rep);
    write_graph_close(g);
    free(got);
    free(problems);
    return rc;
}

static void test_crash_repair_finishes_cleanup(void **state)
{
    (void)state;
    cleanup_case cc;
    memset(&cc, 0, sizeof cc);
    char dir[256];
    test_sandbox_new(dir, sizeof dir, "cleanup-repair-expected");
    store *s = wf_store(dir);
    graph_snapshot *lin = NULL;
    assert_og_ok(build_start(s, NULL));
    assert_og_ok(graph_snapshot_load(&lin, s, NULL, 0, GRAPH_SNAP_LINEAGE));
    assert_true(lin->n_commits <= MAX_COMMITS);
    cc.n_commits = lin->n_commits;
    for (size_t i = 0; i < lin->n_commits; i++) {
        cc.mver[i] = lin->commits[i].manifest_version;
        assert_og_ok(content_at(s, cc.mver[i], &cc.content[i]));
    }
    graph_snapshot_free(lin);
    store_close(s);
    test_sandbox_done(dir);
    crashsim_case c = {"repair --confirm finishing a half-done cleanup", &cc, setup_half_done,
                       op_repair, check_repair};
    crashsim_report rep;
    crashsim_run(&c, &rep);
    print_message("%s: %llu durable ops, %llu crash runs, %llu violations (removed reads %u, "
                  "reads %u; repairs again that removed versions %u) %s\n",
                  c.name, (unsigned long long)rep.n, (unsigned long long)rep.runs,
                  (unsigned long long)rep.violations, cc.removed_reads, cc.kept_reads,
                  cc.second_removed, rep.first);
    assert_int_equal(rep.violations, 0);
    assert_true(rep.n >= 5);
    assert_true(cc.second_removed > 0);
    release_case(&cc);
}

/* A branch forked below the floor keeps every manifest version above its fork point (Lance
 * cleanup keeps one run up to the latest): a type created and dropped again after the fork
 * point has its table read by those versions, so cleanup keeps it. A branch can fork there
 * because dropping the type brought the schema back to the one of the fork point. */
static void test_cleanup_fork_below_floor(void **state)
{
    (void)state;
    static const char *WITH_TOWN = "node Person {\n"
                                   "    name: String @key\n"
                                   "    age: I32?\n"
                                   "}\n"
                                   "node City { name: String @key }\n"
                                   "node Town { name: String @key }\n";
    char dir[256];
    test_sandbox_new(dir, sizeof dir, "cleanup-fork");
    store *s = wf_store(dir);
    write_init_result ir;
    assert_og_ok(write_init(s, OLD_SCHEMA, strlen(OLD_SCHEMA), "s.pg", &ir));
    write_graph *g = NULL;
    assert_og_ok(write_graph_open(&g, wf_borrow(s), "", NULL));
    assert_og_ok(load_line(g, NULL, "ann", 1));
    graph_snapshot *lin = NULL;
    assert_og_ok(graph_snapshot_load(&lin, s, NULL, 0, GRAPH_SNAP_LINEAGE));
    char fork[GRAPH_ID_LEN + 1];
    snprintf(fork, sizeof fork, "%s", lin->commits[0].id);
    graph_snapshot_free(lin);
    const char *schemas[] = {WITH_TOWN, OLD_SCHEMA};
    for (int i = 0; i < 2; i++) {
        lang_catalog *to = catalog_of(schemas[i]);
        assert_non_null(to);
        write_schema_result sr;
        assert_og_ok(write_schema_apply(g, to, true, NULL, &sr));
        write_schema_result_clear(&sr);
        lang_catalog_free(to);
        if (i == 0)
            assert_og_ok(wf_load(g, "{\"type\":\"Town\",\"data\":{\"name\":\"bree\"}}\n",
                                 EXEC_LOAD_MERGE, NULL));
    }
    assert_og_ok(load_line(g, NULL, "bob", 2));
    assert_og_ok(load_line(g, NULL, "cyd", 3));
    assert_og_ok(write_branch_create(g, "old", NULL, fork, NULL));
    write_cleanup_options co = WRITE_CLEANUP_OPTIONS_INIT;
    co.keep = 1;
    write_cleanup_report rep;
    assert_og_ok(write_cleanup(g, &co, &rep));
    print_message("fork below the floor: %llu versions, %llu tables removed\n",
                  (unsigned long long)rep.versions_removed, (unsigned long long)rep.tables_removed);
    assert_int_equal(rep.tables_removed, 0);
    write_graph_close(g);
    char *problems = verify_problems(s);
    if (*problems) fail_msg("verify after the cleanup:\n%s", problems);
    free(problems);
    store_close(s);
    test_sandbox_done(dir);
}

/* What a cleanup costs in store operations, at two history depths (keep 2 of `depth` loads):
 * one listing per dataset (and the root's directories), never one per version; printed for
 * docs/maintenance.md. */
static void cleanup_cost(unsigned depth, store_counts *d)
{
    char dir[256];
    test_sandbox_new(dir, sizeof dir, "cleanup-cost");
    store *s = wf_store(dir);
    write_init_result ir;
    assert_og_ok(write_init(s, OLD_SCHEMA, strlen(OLD_SCHEMA), "s.pg", &ir));
    write_graph *g = NULL;
    assert_og_ok(write_graph_open(&g, wf_borrow(s), "", NULL));
    for (unsigned i = 0; i < depth; i++) {
        char name[32];
        snprintf(name, sizeof name, "p%u", i);
        assert_og_ok(load_line(g, NULL, name, (int)i));
    }
    write_cleanup_options co = WRITE_CLEANUP_OPTIONS_INIT;
    co.keep = 2;
    co.orphan_grace_ms = 0;
    write_cleanup_report rep;
    store_counts a, b;
    store_counts_get(g->h->s, &a);
    assert_og_ok(write_cleanup(g, &co, &rep));
    store_counts_get(g->h->s, &b);
    store_counts_diff(&b, &a, d);
    print_message(
        "cleanup --keep 2 at depth %u: %llu ops (get %llu, head %llu, list %llu, "
        "delete %llu, put %llu); %llu versions, %llu files removed\n",
        depth, (unsigned long long)d->total_ops, (unsigned long long)d->ops[STORE_OP_GET],
        (unsigned long long)d->ops[STORE_OP_HEAD], (unsigned long long)d->ops[STORE_OP_LIST],
        (unsigned long long)d->ops[STORE_OP_DELETE], (unsigned long long)d->ops[STORE_OP_PUT],
        (unsigned long long)rep.versions_removed, (unsigned long long)rep.files_removed);
    write_graph_close(g);
    store_close(s);
    test_sandbox_done(dir);
}

static void test_cleanup_cost(void **state)
{
    (void)state;
    store_counts shallow, deep;
    cleanup_cost(10, &shallow);
    cleanup_cost(40, &deep);
    assert_int_equal(shallow.ops[STORE_OP_LIST], deep.ops[STORE_OP_LIST]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cleanup_cost),
        cmocka_unit_test(test_cleanup_fork_below_floor),
        cmocka_unit_test(test_read_removed_commit),
        cmocka_unit_test(test_repair_finishes_cleanup),
        cmocka_unit_test(test_crash_repair_finishes_cleanup),
        cmocka_unit_test(test_crash_cleanup),
    };
    cmocka_set_test_filter(getenv("OG_TEST_FILTER"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
