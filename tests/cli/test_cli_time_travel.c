/* Time travel across schema changes at the shell (issue 19 item 3), through the built binary:
 * a graph taken through two `schema apply` runs (a type renamed, a property soft-dropped),
 * then `query --at` an earlier commit under its own schema, `schema show --at`, `export --at`,
 * and `lint --store` (the graph's schema at the head, --at, --branch, --json, every
 * diagnostic with its location, the history wording, exit codes 0/1/2) beside the file form
 * `lint --schema`, which keeps working. */
#include "testutil.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char g_bin[512];
static char g_dir[256];

static int run(const char *args, char *out, size_t cap, char *err, size_t ecap)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s %s", g_bin, args);
    return test_run(g_dir, 1, cmd, out, cap, err, ecap);
}

static json_t *run_json(const char *args, int want_exit)
{
    static char out[262144];
    char err[8192];
    int ex = run(args, out, sizeof out, err, sizeof err);
    if (ex != want_exit) fail_msg("'%s' exited %d, not %d; stderr: %s", args, ex, want_exit, err);
    json_error_t je;
    json_t *j = json_loads(out, 0, &je);
    if (!j || !json_is_object(j))
        fail_msg("'%s' printed no JSON object: %s (%s)", args, out, je.text);
    return j;
}

static void write_text(const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    test_write_file(path, text, strlen(text));
}

static const char *jstr(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    if (!json_is_string(v)) fail_msg("member '%s' is not a string", k);
    return json_string_value(v);
}

static const char S0[] = "node Person { name: String @key  nick: String? }\n"
                         "edge Knows: Person -> Person\n";
static const char S1[] = "node Person { name: String @key  nick: String?  email: String? }\n"
                         "edge Knows: Person -> Person\n";
static const char S2[] =
    "node Human @rename_from(\"Person\") { name: String @key  email: String? }\n"
    "edge Knows: Human -> Human\n";

static char g_c1[64], g_c3[64];

static void ok(const char *args)
{
    static char out[65536];
    char err[8192];
    int ex = run(args, out, sizeof out, err, sizeof err);
    if (ex != 0) fail_msg("'%s' exited %d; stderr: %s", args, ex, err);
}

/* S0 + Alice, Bob; apply S1; Carol with email; apply S2. g_c1: the load under S0; g_c3: the
 * load under S1. */
static void build(void)
{
    write_text("s0.pg", S0);
    write_text("s1.pg", S1);
    write_text("s2.pg", S2);
    write_text("d1.jsonl", "{\"type\":\"Person\",\"data\":{\"name\":\"Alice\",\"nick\":\"al\"}}\n"
                           "{\"type\":\"Person\",\"data\":{\"name\":\"Bob\"}}\n");
    write_text("d3.jsonl",
               "{\"type\":\"Person\",\"data\":{\"name\":\"Carol\",\"email\":\"c@x\"}}\n");
    ok("init --schema s0.pg g");
    json_t *j = run_json("load --data d1.jsonl --mode merge --store g --json", 0);
    snprintf(g_c1, sizeof g_c1, "%s", jstr(j, "commit_id"));
    json_decref(j);
    ok("schema apply --schema s1.pg --store g");
    j = run_json("load --data d3.jsonl --mode merge --store g --json", 0);
    snprintf(g_c3, sizeof g_c3, "%s", jstr(j, "commit_id"));
    json_decref(j);
    ok("schema apply --schema s2.pg --store g");
}

static int setup(void **state)
{
    (void)state;
    test_sandbox_new(g_dir, sizeof g_dir, "cli-tt");
    build();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    test_sandbox_done(g_dir);
    return 0;
}

static void test_query_at_old_schema(void **state)
{
    (void)state;
    static char out[65536];
    char err[8192], args[1024];
    /* at c1 (S0): Person and its nick */
    write_text("p.gq", "query p() { match { $p: Person } return { $p.name, $p.nick } order { "
                       "$p.name } }\n");
    snprintf(args, sizeof args, "query --store g --file p.gq --at %s --csv", g_c1);
    assert_int_equal(run(args, out, sizeof out, err, sizeof err), 0);
    assert_string_equal(out, "p.name,p.nick\r\nAlice,al\r\nBob,\r\n");
    /* at c3 (S1) */
    write_text("e.gq", "query p() { match { $p: Person } return { $p.name, $p.email } order { "
                       "$p.name } }\n");
    snprintf(args, sizeof args, "query --store g --file e.gq --at %s --csv", g_c3);
    assert_int_equal(run(args, out, sizeof out, err, sizeof err), 0);
    assert_string_equal(out, "p.name,p.email\r\nAlice,\r\nBob,\r\nCarol,c@x\r\n");
    /* the same file at the head: Person was renamed; exit 1, located, worded */
    assert_int_equal(run("query --store g --file p.gq", out, sizeof out, err, sizeof err), 1);
    assert_non_null(strstr(err, "p.gq:1:25: T1: unknown node type 'Person': node type `Person` "
                                "was renamed to `Human`"));
    json_t *j = run_json("query --store g --file p.gq --json", 1);
    const json_t *e = json_object_get(j, "error");
    assert_string_equal(jstr(e, "code"), "bad_request");
    assert_non_null(strstr(jstr(e, "message"), "was renamed to `Human`"));
    json_decref(j);
    /* the head under its own names */
    assert_int_equal(run("query --store g -e 'query h() { match { $h: Human } return { $h.name } "
                         "order { $h.name } }' --csv",
                         out, sizeof out, err, sizeof err),
                     0);
    assert_string_equal(out, "h.name\r\nAlice\r\nBob\r\nCarol\r\n");
}

static void test_schema_show_and_export_at(void **state)
{
    (void)state;
    static char out[65536];
    char err[8192], args[1024];
    snprintf(args, sizeof args, "schema show --store g --at %s", g_c1);
    assert_int_equal(run(args, out, sizeof out, err, sizeof err), 0);
    assert_string_equal(out, S0);
    snprintf(args, sizeof args, "schema show --store g --at %s --json", g_c3);
    json_t *j = run_json(args, 0);
    assert_string_equal(jstr(j, "source"), S1);
    assert_string_equal(jstr(j, "commit"), g_c3);
    json_decref(j);
    assert_int_equal(run("schema show --store g", out, sizeof out, err, sizeof err), 0);
    assert_string_equal(out, S2);
    /* export at c1 carries nick; at the head the hidden column is not exported */
    snprintf(args, sizeof args, "export --store g --at %s", g_c1);
    assert_int_equal(run(args, out, sizeof out, err, sizeof err), 0);
    assert_string_equal(out, "{\"type\":\"Person\",\"data\":{\"id\":\"Alice\",\"name\":\"Alice\","
                             "\"nick\":\"al\"}}\n"
                             "{\"type\":\"Person\",\"data\":{\"id\":\"Bob\",\"name\":\"Bob\","
                             "\"nick\":null}}\n");
    assert_int_equal(run("export --store g", out, sizeof out, err, sizeof err), 0);
    assert_null(strstr(out, "nick"));
    assert_non_null(strstr(out, "{\"type\":\"Human\",\"data\":{\"id\":\"Carol\",\"name\":"
                                "\"Carol\",\"email\":\"c@x\"}}\n"));
}

static void test_lint_store(void **state)
{
    (void)state;
    static char out[65536];
    char err[8192], args[1024];
    /* two errors in one file, both reported with their places and history */
    write_text("bad.gq", "query a() { match { $p: Person } return { $p.name } }\n"
                         "query b() { match { $h: Human } return { $h.nick } }\n");
    assert_int_equal(run("lint --store g bad.gq", out, sizeof out, err, sizeof err), 1);
    assert_non_null(strstr(err, "bad.gq:1:25: error[T1]: unknown node type 'Person': node type "
                                "`Person` was renamed to `Human`"));
    assert_non_null(strstr(err, "bad.gq:2:42: error[T2]: 'Human' has no property 'nick': "
                                "property `Human.nick` was dropped (schema "));
    assert_non_null(strstr(out, "2 errors, 0 warnings"));
    json_t *j = run_json("lint --store g --json --query bad.gq", 1);
    const json_t *d = json_object_get(j, "diagnostics");
    assert_int_equal(json_array_size(d), 2);
    assert_string_equal(jstr(json_array_get(d, 0), "code"), "T1");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(d, 0), "line")), 1);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(d, 0), "column")), 25);
    assert_string_equal(jstr(json_array_get(d, 1), "code"), "T2");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(d, 1), "line")), 2);
    json_decref(j);
    /* the same file is clean at c1 */
    write_text("old.gq", "query a() { match { $p: Person } return { $p.name, $p.nick } }\n");
    snprintf(args, sizeof args, "lint --store g --at %s old.gq", g_c1);
    assert_int_equal(run(args, out, sizeof out, err, sizeof err), 0);
    assert_non_null(strstr(out, "0 errors"));
    /* a name of the head's schema at c1 */
    write_text("new.gq", "query a() { match { $h: Human } return { $h.name } }\n");
    snprintf(args, sizeof args, "lint --store g --at %s new.gq", g_c1);
    assert_int_equal(run(args, out, sizeof out, err, sizeof err), 1);
    assert_non_null(strstr(err, "new.gq:1:25: error[T1]: unknown node type 'Human': node type "
                                "`Human` is `Person` in this schema"));
    assert_int_equal(run("lint --store g new.gq", out, sizeof out, err, sizeof err), 0);
    /* a branch starts under the accepted schema (one at c1 is refused, exit 4), and lints
     * under it */
    snprintf(args, sizeof args, "branch create old --at %s --store g", g_c1);
    assert_int_equal(run(args, out, sizeof out, err, sizeof err), 4);
    assert_int_equal(run("branch create dev --store g", out, sizeof out, err, sizeof err), 0);
    assert_int_equal(run("lint --store g --branch dev new.gq", out, sizeof out, err, sizeof err),
                     0);
    assert_int_equal(run("lint --store g --branch dev old.gq", out, sizeof out, err, sizeof err),
                     1);
    assert_non_null(strstr(err, "was renamed to `Human`"));
    /* unknowns: branch and commit are not_found (exit 1) */
    j = run_json("lint --store g --branch nope --json old.gq", 1);
    assert_string_equal(jstr(json_object_get(j, "error"), "code"), "not_found");
    json_decref(j);
    assert_int_equal(run("lint --store g --at 99 old.gq", out, sizeof out, err, sizeof err), 1);
    /* usage (exit 2): both sources, neither, --at without --store */
    assert_int_equal(run("lint --store g --schema s0.pg old.gq", out, sizeof out, err, sizeof err),
                     2);
    assert_int_equal(run("lint old.gq", out, sizeof out, err, sizeof err), 2);
    assert_int_equal(run("lint --schema s0.pg --at 1 old.gq", out, sizeof out, err, sizeof err), 2);
    /* the file form still works */
    assert_int_equal(run("lint --schema s0.pg old.gq", out, sizeof out, err, sizeof err), 0);
    assert_int_equal(run("lint --schema s2.pg --query old.gq", out, sizeof out, err, sizeof err),
                     1);
    assert_non_null(strstr(err, "old.gq:1:25: error[T1]: unknown node type 'Person'\n"));
    /* help names both forms */
    assert_int_equal(run("lint --help", out, sizeof out, err, sizeof err), 0);
    assert_non_null(strstr(out, "omnigraph lint --store ROOT [--branch B] [--at COMMIT]"));
}

int main(void)
{
    const char *bindir = getenv("OG_TEST_BINDIR");
    snprintf(g_bin, sizeof g_bin, "%s/omnigraph", bindir ? bindir : ".");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_query_at_old_schema, setup, teardown),
        cmocka_unit_test_setup_teardown(test_schema_show_and_export_at, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lint_store, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
