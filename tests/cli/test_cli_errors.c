/* Every error the omnigraph command prints without --json carries its code (docs/cli.md,
 * "Conventions": `omnigraph: error[CODE]: MESSAGE`): a table of bad invocations through the
 * built binary (a usage error of each verb, an unreadable or missing input file, a root that
 * holds no graph, a schema apply that existing data violates, a merge that conflicts), each
 * checked for its exit code and for `omnigraph: error[CODE]` on stderr, and for no line on
 * stderr that says `omnigraph: ` without a code. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char g_bin[512];
static char g_schema[512];
static char g_dir[256]; /* scratch for each test; the CLI runs in it */

static int run(const char *args, char *out, size_t cap, char *err, size_t ecap)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "%s %s", g_bin, args);
    return test_run(g_dir, 1, cmd, out, cap, err, ecap);
}

static void write_text(const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    test_write_file(path, text, strlen(text));
}

static int setup(void **state)
{
    (void)state;
    test_sandbox_new(g_dir, sizeof g_dir, "cli-errors");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    test_sandbox_done(g_dir);
    return 0;
}

/* stderr holds `omnigraph: error[code]`, and every line that starts "omnigraph: " is an
 * error with a code (the library's log lines say "omnigraph warn:" and are not errors). */
static void assert_coded(const char *args, const char *err, const char *code)
{
    char want[96];
    snprintf(want, sizeof want, "omnigraph: error[%s]", code);
    if (!strstr(err, want)) fail_msg("'%s': no '%s' on stderr: [%s]", args, want, err);
    for (const char *l = err; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (!strncmp(l, "omnigraph: ", 11) && strncmp(l, "omnigraph: error[", 17) != 0)
            fail_msg("'%s': an error line without a code: [%s]", args, err);
}

static void make_graph(void)
{
    char args[1024], out[4096], err[4096];
    snprintf(args, sizeof args, "init --schema '%s' g", g_schema);
    if (run(args, out, sizeof out, err, sizeof err) != 0) fail_msg("init failed: %s", err);
    write_text("people.jsonl", "{\"type\":\"Person\",\"data\":{\"name\":\"Alice\",\"age\":30}}\n"
                               "{\"type\":\"Person\",\"data\":{\"name\":\"Bob\",\"age\":25}}\n");
    if (run("load --data people.jsonl --mode overwrite g", out, sizeof out, err, sizeof err) != 0)
        fail_msg("load failed: %s", err);
}

static void test_every_error_has_a_code(void **state)
{
    (void)state;
    make_graph();
    char adir[512];
    snprintf(adir, sizeof adir, "%s/adir", g_dir);
    assert_int_equal(mkdir(adir, 0755), 0);
    write_text("bad.pg", "node Person { name: String @key\n");
    write_text("bad.jsonl", "{\"type\":\"Nobody\",\"data\":{}}\n");
    /* A schema the data refuses: Alice is older than 26. */
    char *pg = NULL;
    {
        FILE *f = fopen(g_schema, "rb");
        assert_non_null(f);
        pg = calloc(1, 1 << 16);
        assert_non_null(pg);
        size_t n = fread(pg, 1, (1 << 16) - 1, f);
        fclose(f);
        pg[n] = '\0';
    }
    char *at = strstr(pg, "node Person {");
    assert_non_null(at);
    at += strlen("node Person {");
    char ranged[1 << 16];
    snprintf(ranged, sizeof ranged, "%.*s\n    @range(age, 0..26)%s", (int)(at - pg), pg, at);
    free(pg);
    write_text("ranged.pg", ranged);

    static const struct {
        const char *args;
        int exit;
        const char *code;
    } cases[] = {
        /* usage errors: each verb */
        {"", 2, "usage"},
        {"bogus", 2, "usage"},
        {"version --bogus", 2, "usage"},
        {"selfcheck", 2, "usage"},
        {"schema", 2, "usage"},
        {"schema bogus", 2, "usage"},
        {"schema check", 2, "usage"},
        {"schema plan --from a.pg", 2, "usage"},
        {"schema apply --schema ranged.pg", 2, "usage"},
        {"schema show --bogus g", 2, "usage"},
        {"lint x.gq", 2, "usage"},
        {"lance", 2, "usage"},
        {"lance cat", 2, "usage"},
        {"lance cat --limit x dir", 2, "usage"},
        {"init g9", 2, "usage"},
        {"load g", 2, "usage"},
        {"load --data people.jsonl --mode upsert g", 2, "usage"},
        {"load --data people.jsonl --mode merge --from main g", 2, "usage"},
        {"snapshot", 2, "usage"},
        {"commit", 2, "usage"},
        {"commit show g", 2, "usage"},
        {"optimize --bogus g", 2, "usage"},
        {"cleanup g", 2, "usage"},
        {"query --store g", 2, "usage"},
        {"mutate --at 1 --store g -e x", 2, "usage"},
        {"export", 2, "usage"},
        {"backup g", 2, "usage"},
        {"branch", 2, "usage"},
        {"branch create", 2, "usage"},
        {"branch bogus g", 2, "usage"},
        {"recover", 2, "usage"},
        {"recover show g", 2, "usage"},
        {"repair --bogus g", 2, "usage"},
        {"verify", 2, "usage"},
        /* unreadable or missing input files */
        {"schema check missing.pg", 1, "not_found"},
        {"schema check adir", 1, "storage"},
        {"schema plan --from missing.pg --to missing.pg", 1, "not_found"},
        {"schema apply --schema missing.pg --store g", 1, "not_found"},
        {"lint --schema missing.pg missing.gq", 1, "not_found"},
        {"init --schema missing.pg g9", 1, "not_found"},
        {"load --data missing.jsonl --mode merge g", 1, "not_found"},
        {"load --data adir --mode merge g", 1, "storage"},
        {"query --store g --file missing.gq", 1, "not_found"},
        {"mutate --store g --file missing.gq", 1, "not_found"},
        /* bad input in a file: located, then the code */
        {"schema check bad.pg", 1, "bad_request"},
        {"load --data bad.jsonl --mode merge g", 1, "bad_request"},
        /* no graph */
        {"snapshot missing", 1, "not_found"},
        {"lance schema missing", 1, "not_found"},
        /* existing data the new schema violates */
        {"schema apply --schema ranged.pg --store g", 1, "bad_request"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[16384], err[16384];
        int ex = run(cases[i].args, out, sizeof out, err, sizeof err);
        if (ex != cases[i].exit)
            fail_msg("'%s' exited %d, not %d; stderr: %s", cases[i].args, ex, cases[i].exit, err);
        assert_coded(cases[i].args, err, cases[i].code);
    }
    /* The violations are still listed under the coded line. */
    char out[16384], err[16384];
    assert_int_equal(
        run("schema apply --schema ranged.pg --store g", out, sizeof out, err, sizeof err), 1);
    assert_non_null(strstr(err, "value_constraint_violation"));
}

/* A merge with conflicts: exit 6, error[merge_conflicts], each conflict listed. */
static void test_merge_conflicts_coded(void **state)
{
    (void)state;
    make_graph();
    char out[16384], err[16384];
    assert_int_equal(run("branch create dev g", out, sizeof out, err, sizeof err), 0);
    write_text("a.jsonl", "{\"type\":\"Person\",\"data\":{\"name\":\"Alice\",\"age\":31}}\n");
    write_text("b.jsonl", "{\"type\":\"Person\",\"data\":{\"name\":\"Alice\",\"age\":32}}\n");
    assert_int_equal(run("load --data a.jsonl --mode merge g", out, sizeof out, err, sizeof err),
                     0);
    assert_int_equal(
        run("load --data b.jsonl --mode merge --branch dev g", out, sizeof out, err, sizeof err),
        0);
    int ex = run("branch merge dev g", out, sizeof out, err, sizeof err);
    if (ex != 6) fail_msg("merge exited %d: %s", ex, err);
    assert_coded("branch merge dev g", err, "merge_conflicts");
}

int main(void)
{
    const char *bindir = getenv("OG_TEST_BINDIR");
    const char *srcdir = getenv("OG_TEST_SRCDIR");
    snprintf(g_bin, sizeof g_bin, "%s/omnigraph", bindir ? bindir : ".");
    snprintf(g_schema, sizeof g_schema, "%s/examples/social.pg", srcdir ? srcdir : "../..");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_every_error_has_a_code, setup, teardown),
        cmocka_unit_test_setup_teardown(test_merge_conflicts_coded, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
