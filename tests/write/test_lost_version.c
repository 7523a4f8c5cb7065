/* A lost graph-manifest version is named for what it is (cells of the damage matrix,
 * test_damage_matrix.c): a graph of 12 one-row commits on main (the version hint stops at 8),
 * then, each in a fresh copy:
 *   - version 4 deleted (below the hint, above the oldest): the head reads as before, but verify
 *     reports manifest_version_lost naming the file (it exited 0 before), and a read --at 4 fails
 *     corrupt naming the file; it does not say cleanup removed it (cleanup deletes only the oldest
 *     versions, so a version with an older one still stored was lost);
 *   - version 1 deleted (the oldest: what cleanup does): verify is clean and --at 1 still says
 *     cleanup removed it (not_found);
 *   - the newest version deleted: verify's table_ahead names the lost version and its file, as a
 *     read at the head does (unless that version was the manifest's own compaction, which moved
 *     no table: then nothing is lost and the head reads every row). */
#include "testutil.h"

#include <dirent.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#define COMMITS 12

static const char *Q_COUNT = "query q() { match { $p: Person } return { count($p) as n } }";

static void build(const char *root)
{
    og_init_options io = OG_INIT_OPTIONS_INIT;
    io.schema_source = "node Person {\n    name: String @key\n}\n";
    og_init_result *ir = NULL;
    assert_og_ok(og_root_init(&ir, root, &io));
    og_init_result_free(ir);
    og_graph *g = NULL;
    assert_og_ok(og_graph_open(&g, root, NULL));
    for (int i = 0; i < COMMITS - 1; i++) {
        char row[96];
        snprintf(row, sizeof row, "{\"type\":\"Person\",\"data\":{\"name\":\"p%02d\"}}\n", i);
        og_load_options lo = OG_LOAD_OPTIONS_INIT;
        lo.mode = OG_LOAD_MERGE;
        og_write_result *r = NULL;
        assert_og_ok(og_graph_load(&r, g, "d.jsonl", row, strlen(row), &lo));
        og_write_result_free(r);
    }
    og_graph_close(g);
}

/* A fresh copy of src at dst with main's version v deleted; its file name into vname. */
static void copy_without(const char *src, const char *dst, uint64_t v, char *vname, size_t cap)
{
    char cmd[1200], path[900];
    test_rmrf(dst);
    snprintf(cmd, sizeof cmd, "cp -a '%s' '%s'", src, dst);
    assert_int_equal(system(cmd), 0);
    snprintf(vname, cap, "%020llu.manifest", (unsigned long long)(UINT64_MAX - v));
    snprintf(path, sizeof path, "%s/__manifest.lance/_versions/%s", dst, vname);
    assert_int_equal(unlink(path), 0);
}

/* The newest version of main's graph manifest (maintenance may have added some after the
 * commits): V2 names count down. */
static uint64_t newest_version(const char *root)
{
    char path[600];
    snprintf(path, sizeof path, "%s/__manifest.lance/_versions", root);
    DIR *d = opendir(path);
    assert_non_null(d);
    uint64_t best = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        unsigned long long x;
        if (strlen(e->d_name) == 29 && sscanf(e->d_name, "%20llu", &x) == 1 &&
            UINT64_MAX - (uint64_t)x > best)
            best = UINT64_MAX - (uint64_t)x;
    }
    closedir(d);
    return best;
}

/* Count the people at `at` (NULL: the head); -1 with the error set. */
static int64_t count_at(const char *root, const char *at)
{
    og_graph *g = NULL;
    if (og_graph_open(&g, root, NULL) != 0) return -1;
    og_query_options qo = OG_QUERY_OPTIONS_INIT;
    qo.source = Q_COUNT;
    qo.at = at;
    og_result *r = NULL;
    int64_t n = -1;
    if (og_graph_query(&r, g, &qo) == 0) {
        og_value v;
        assert_og_ok(og_result_value(&v, r, 0, 0));
        n = v.i;
        og_result_free(r);
    }
    og_graph_close(g);
    return n;
}

/* The verify problems, one "kind object message" line each (malloc'd). */
static char *verify_text(const char *root)
{
    og_verify_report *vr = NULL;
    assert_og_ok(og_root_verify(&vr, root, NULL));
    size_t cap = 1, len = 0;
    for (size_t i = 0; i < og_verify_report_problem_count(vr); i++)
        cap += strlen(og_verify_report_problem(vr, i)->kind) +
               strlen(og_verify_report_problem(vr, i)->object) +
               strlen(og_verify_report_problem(vr, i)->message) + 4;
    char *t = malloc(cap);
    t[0] = '\0';
    for (size_t i = 0; i < og_verify_report_problem_count(vr); i++)
        len += (size_t)snprintf(
            t + len, cap - len, "%s %s %s\n", og_verify_report_problem(vr, i)->kind,
            og_verify_report_problem(vr, i)->object, og_verify_report_problem(vr, i)->message);
    og_verify_report_free(vr);
    return t;
}

static void test_lost_versions(void **state)
{
    (void)state;
    char dir[256], src[400], copy[400], vname[64];
    test_sandbox_new(dir, sizeof dir, "lost-version");
    snprintf(src, sizeof src, "%s/g", dir);
    snprintf(copy, sizeof copy, "%s/copy", dir);
    build(src);
    og_set_log(NULL, NULL, OG_LOG_ERROR);

    /* a middle version, below the hint */
    copy_without(src, copy, 4, vname, sizeof vname);
    assert_int_equal(count_at(copy, NULL), COMMITS - 1);
    char *t = verify_text(copy);
    print_message("version 4 deleted: verify: %s", t);
    assert_non_null(strstr(t, "manifest_version_lost"));
    assert_non_null(strstr(t, vname));
    free(t);
    assert_int_equal(count_at(copy, "4"), -1);
    print_message("--at 4: %s\n", og_error_last()->message);
    assert_int_equal(og_error_last()->code, OG_E_CORRUPT);
    assert_non_null(strstr(og_error_last()->message, vname));
    assert_null(strstr(og_error_last()->message, "cleanup removed it"));
    assert_int_equal(count_at(copy, "5"), 4); /* its neighbours read as before */
    assert_int_equal(count_at(copy, "3"), 2);

    /* the oldest: what cleanup removes */
    copy_without(src, copy, 1, vname, sizeof vname);
    t = verify_text(copy);
    if (*t) fail_msg("the oldest version deleted: verify reported %s", t);
    free(t);
    assert_int_equal(count_at(copy, "1"), -1);
    assert_int_equal(og_error_last()->code, OG_E_NOT_FOUND);
    assert_non_null(strstr(og_error_last()->message, "cleanup removed it"));

    /* the newest */
    uint64_t newest = newest_version(src);
    copy_without(src, copy, newest, vname, sizeof vname);
    t = verify_text(copy);
    print_message("the newest deleted: verify: %s", t);
    char want[160];
    snprintf(want, sizeof want, "version %llu, __manifest.lance/_versions/%s",
             (unsigned long long)newest, vname);
    if (*t) {
        assert_non_null(strstr(t, "table_ahead"));
        assert_non_null(strstr(t, want));
    } else {
        /* The newest version was the graph manifest's own compaction (automatic maintenance
         * at close, when it ran): no table moved, so the version below holds the same
         * content and the head reads all of it. */
        assert_int_equal(count_at(copy, NULL), COMMITS - 1);
    }
    free(t);

    og_set_log(NULL, NULL, OG_LOG_WARN);
    test_sandbox_done(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lost_versions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
