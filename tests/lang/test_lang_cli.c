/* omnigraph schema check / schema plan / lint: exit codes, diagnostics with caret, --json. */
#include "testutil.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static char g_bin[512];
static char g_dir[256];

/* Run the CLI with args in g_dir; capture stdout (and stderr when both is set). */
static int run(const char *args, int both, char *out, size_t cap)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd %s && %s %s %s", g_dir, g_bin, args,
             both ? "2>&1" : "2>/dev/null");
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void put(const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    test_write_file(path, text, strlen(text));
}

static const char SCHEMA[] = "node Person { name: String @key\n"
                             "              age: I32? }\n"
                             "node Company { name: String @key }\n"
                             "edge Knows: Person -> Person { since: Date? }\n"
                             "edge WorksAt: Person -> Company\n";

static void test_schema_check(void **state)
{
    (void)state;
    char out[16384];
    put("good.pg", SCHEMA);
    put("bad.pg", "node Person {\n  name: String? @key\n}\n");
    put("comma.pg", "node Signal { slug: String @key, title: String }\n");
    assert_int_equal(run("schema check good.pg", 0, out, sizeof out), 0);
    assert_non_null(strstr(out, "good.pg: ok (2 node types, 2 edge types)"));
    assert_int_equal(run("schema check bad.pg", 1, out, sizeof out), 1);
    assert_non_null(
        strstr(out, "bad.pg:2:17: error[S007]: @key property 'name' must not be nullable"));
    /* the source line, then a caret under column 17 */
    assert_non_null(strstr(out, "\n    name: String? @key\n                  ^\n"));
    assert_int_equal(run("schema check comma.pg", 1, out, sizeof out), 1);
    assert_non_null(strstr(out, "comma.pg:1:32: error[S000]"));
    assert_int_equal(run("schema check --json bad.pg", 0, out, sizeof out), 1);
    json_error_t je;
    json_t *j = json_loads(out, 0, &je);
    assert_non_null(j);
    assert_true(json_is_false(json_object_get(j, "ok")));
    json_t *d0 = json_array_get(json_object_get(j, "diagnostics"), 0);
    assert_string_equal(json_string_value(json_object_get(d0, "code")), "S007");
    assert_int_equal(json_integer_value(json_object_get(d0, "line")), 2);
    assert_int_equal(json_integer_value(json_object_get(d0, "column")), 17);
    json_decref(j);
    assert_int_equal(run("schema check good.pg --json", 0, out, sizeof out), 0);
    assert_non_null(strstr(out, "\"catalog\""));
    /* usage errors and unreadable files */
    assert_int_equal(run("schema", 0, out, sizeof out), 2);
    assert_int_equal(run("schema frob x.pg", 0, out, sizeof out), 2);
    assert_int_equal(run("schema check", 0, out, sizeof out), 2);
    assert_int_equal(run("schema check --bogus good.pg", 0, out, sizeof out), 2);
    assert_int_equal(run("schema check missing.pg", 0, out, sizeof out), 1);
    assert_int_equal(run("schema --help", 0, out, sizeof out), 0);
    assert_non_null(strstr(out, "usage: omnigraph schema check"));
}

static void test_lint(void **state)
{
    (void)state;
    char out[32768];
    put("s.pg", SCHEMA);
    put("ok.gq", "query friends($n: String) { match { $p: Person { name: $n }  $p knows $f }\n"
                 "  return { $f.name, count($p) as c } }\n"
                 "query add($n: String) { insert Person { name: $n } }\n");
    put("bad.gq", "query a() { match { $p: Person } return { $p.name } }\n"
                  "query b() { match { $p: Person  $p likes $q } return { $q } }\n");
    assert_int_equal(run("lint --schema s.pg ok.gq", 1, out, sizeof out), 0);
    assert_non_null(strstr(out, "query friends: ok"));
    /* L201 warns about Person.age, which no mutation sets; warnings do not fail */
    assert_non_null(strstr(out, "s.pg:2:15: warning[L201]"));
    assert_int_equal(run("lint --schema s.pg --query bad.gq", 1, out, sizeof out), 1);
    assert_non_null(strstr(out, "bad.gq:2:36: error[T4]: unknown edge 'likes'"));
    assert_int_equal(run("lint --schema s.pg bad.gq --json", 0, out, sizeof out), 1);
    json_error_t je;
    json_t *j = json_loads(out, 0, &je);
    assert_non_null(j);
    json_t *qs = json_object_get(j, "queries");
    assert_int_equal(json_array_size(qs), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(qs, 0), "status")), "ok");
    assert_string_equal(json_string_value(json_object_get(json_array_get(qs, 1), "status")),
                        "error");
    json_decref(j);
    assert_int_equal(run("lint --schema s.pg ok.gq --json", 0, out, sizeof out), 0);
    j = json_loads(out, 0, &je);
    assert_non_null(j);
    json_t *q0 = json_array_get(json_object_get(j, "queries"), 0);
    json_t *op = json_object_get(q0, "operation");
    json_t *cols = json_object_get(op, "result");
    assert_int_equal(json_array_size(cols), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(cols, 0), "name")),
                        "f.name");
    assert_string_equal(json_string_value(json_object_get(json_array_get(cols, 0), "kind")),
                        "String");
    assert_string_equal(json_string_value(json_object_get(json_array_get(cols, 1), "kind")), "I64");
    json_t *reads = json_object_get(op, "reads");
    assert_int_equal(json_array_size(reads), 2);
    assert_int_equal(json_array_size(json_object_get(op, "writes")), 0);
    json_t *q1 = json_array_get(json_object_get(j, "queries"), 1);
    json_t *w = json_object_get(json_object_get(q1, "operation"), "writes");
    assert_string_equal(json_string_value(json_array_get(w, 0)), "Person");
    json_decref(j);
    /* a broken schema is reported and the queries are not checked */
    put("broken.pg", "node A { a: Nope }\n");
    assert_int_equal(run("lint --schema broken.pg ok.gq", 1, out, sizeof out), 1);
    assert_non_null(strstr(out, "broken.pg:1:13: error[S000]"));
    assert_int_equal(run("lint ok.gq", 0, out, sizeof out), 2);
    assert_int_equal(run("lint --schema s.pg", 0, out, sizeof out), 2);
    assert_int_equal(run("lint --schema s.pg a.gq b.gq", 0, out, sizeof out), 2);
}

static void test_plan(void **state)
{
    (void)state;
    char out[16384];
    put("v1.pg", SCHEMA);
    put("v2.pg", "node Person { name: String @key\n  age: I32?\n  email: String? }\n"
                 "node Firm @rename_from(\"Company\") { name: String @key }\n"
                 "edge Knows: Person -> Person { since: Date? }\n"
                 "edge WorksAt: Person -> Firm\n");
    put("v3.pg",
        "node Person { name: String @key\n  age: I64? }\nnode Company { name: String @key }\n"
        "edge Knows: Person -> Person { since: Date? }\nedge WorksAt: Person -> Company\n");
    assert_int_equal(run("schema plan --from v1.pg --to v2.pg", 0, out, sizeof out), 0);
    assert_non_null(strstr(out, "supported"));
    assert_non_null(strstr(out, "rename_type Company: Company -> Firm"));
    assert_non_null(strstr(out, "add_property Person.email"));
    assert_int_equal(run("schema plan --from v1.pg --to v2.pg --json", 0, out, sizeof out), 0);
    json_error_t je;
    json_t *j = json_loads(out, 0, &je);
    assert_non_null(j);
    assert_true(json_is_true(json_object_get(j, "supported")));
    json_t *s0 = json_array_get(json_object_get(j, "steps"), 0);
    assert_string_equal(json_string_value(json_object_get(s0, "kind")), "rename_type");
    json_decref(j);
    assert_int_equal(run("schema plan --from v1.pg --to v3.pg --json", 0, out, sizeof out), 1);
    assert_non_null(strstr(out, "\"code\":\"M101\""));
    assert_non_null(strstr(out, "\"supported\":false"));
    assert_int_equal(run("schema plan --from v1.pg", 0, out, sizeof out), 2);
    assert_int_equal(run("schema plan --from v1.pg --to", 0, out, sizeof out), 2);
}

/* The public API directly: return codes, located thread error, accessors. */
static void test_api(void **state)
{
    (void)state;
    og_lang_report *r = NULL;
    const char *bad = "node A {\n  a: Strin }\n";
    og_schema_check_options so = OG_SCHEMA_CHECK_OPTIONS_INIT;
    so.source = bad;
    so.source_file = "a.pg";
    assert_og_error(og_schema_check(&r, &so), OG_E_BAD_REQUEST);
    assert_string_equal(og_error_last()->file, "a.pg");
    assert_int_equal(og_error_last()->line, 2);
    assert_int_equal(og_error_last()->column, 6);
    assert_non_null(r);
    assert_int_equal(og_lang_report_error_count(r), 1);
    assert_int_equal(og_lang_report_diagnostic_count(r), 1);
    const og_diagnostic *d = og_lang_report_diagnostic(r, 0);
    assert_string_equal(d->code, "S000");
    assert_int_equal(d->severity, OG_DIAG_ERROR);
    assert_null(og_lang_report_diagnostic(r, 1));
    og_lang_report_free(r);
    og_lang_report_free(NULL);
    so.source = SCHEMA;
    so.source_file = "s.pg";
    assert_og_ok(og_schema_check(&r, &so));
    assert_int_equal(og_lang_report_diagnostic_count(r), 0);
    assert_non_null(strstr(og_lang_report_json(r), "\"ok\":true"));
    og_lang_report_free(r);
    /* an empty query file against a good schema is fine; NULL with a length is not */
    og_query_lint_options lo = OG_QUERY_LINT_OPTIONS_INIT;
    lo.schema_source = SCHEMA;
    lo.schema_file = "s.pg";
    lo.source = "";
    lo.source_file = "e.gq";
    assert_og_ok(og_query_lint(&r, &lo));
    og_lang_report_free(r);
    lo.source = NULL;
    lo.source_len = 3;
    assert_og_error(og_query_lint(&r, &lo), OG_E_BAD_REQUEST);
    assert_null(r);
    /* an unsupported plan is a typed error with the report still given */
    const char *v2 =
        "node Person { name: String @key  age: I32 }\nnode Company { name: String @key }\n"
        "edge Knows: Person -> Person { since: Date? }\nedge WorksAt: Person -> Company\n";
    og_schema_plan_options po = OG_SCHEMA_PLAN_OPTIONS_INIT;
    po.from_source = SCHEMA;
    po.from_file = "v1.pg";
    po.to_source = v2;
    po.to_file = "v2.pg";
    assert_og_error(og_schema_plan(&r, &po), OG_E_UNSUPPORTED);
    assert_non_null(r);
    assert_non_null(strstr(og_lang_report_json(r), "M107"));
    og_lang_report_free(r);
    /* The options: both sources are required, an unknown version is refused, and
     * og_schema_plan_options_init gives what the _INIT macro gives. */
    po.to_source = NULL;
    assert_og_error(og_schema_plan(&r, &po), OG_E_BAD_REQUEST);
    assert_null(r);
    assert_og_error(og_schema_plan(&r, NULL), OG_E_BAD_REQUEST);
    og_schema_plan_options pi;
    memset(&pi, 0x5a, sizeof pi);
    assert_og_ok(og_schema_plan_options_init(&pi, OG_SCHEMA_PLAN_OPTIONS_VERSION));
    static const og_schema_plan_options pm = OG_SCHEMA_PLAN_OPTIONS_INIT; /* padding zero */
    assert_memory_equal(&pi, &pm, sizeof pi);
    assert_og_error(og_schema_plan_options_init(&pi, OG_SCHEMA_PLAN_OPTIONS_VERSION + 1),
                    OG_E_BAD_REQUEST);
    assert_og_error(og_schema_plan_options_init(NULL, OG_SCHEMA_PLAN_OPTIONS_VERSION),
                    OG_E_BAD_REQUEST);
    pi.from_source = SCHEMA;
    pi.to_source = SCHEMA;
    pi.version = 0;
    assert_og_error(og_schema_plan(&r, &pi), OG_E_BAD_REQUEST);
    assert_null(r);
    pi.version = OG_SCHEMA_PLAN_OPTIONS_VERSION;
    assert_og_ok(og_schema_plan(&r, &pi)); /* no change: nothing to do, all supported */
    og_lang_report_free(r);
}

int main(void)
{
    const char *bindir = getenv("OG_TEST_BINDIR");
    snprintf(g_bin, sizeof g_bin, "%s/omnigraph", bindir ? bindir : ".");
    test_sandbox_new(g_dir, sizeof g_dir, "langcli");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_schema_check),
        cmocka_unit_test(test_lint),
        cmocka_unit_test(test_plan),
        cmocka_unit_test(test_api),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    test_sandbox_done(g_dir);
    return rc;
}
