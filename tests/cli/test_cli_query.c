/* omnigraph query|mutate through the built binary, and og_graph_query / og_graph_mutate / the
 * og_result accessors directly: the exact table, JSON and CSV output of a small graph, params
 * (missing, mistyped, unknown), time travel with --at (commit id, prefix, manifest version),
 * mutate with --if-commit (exit 4, nothing written), a located .gq error (FILE:LINE:COL), and
 * a 100,000-row result written batch by batch (two executor batches; the CLI's peak RSS stays
 * well under the bytes it printed). */
#include "testutil.h"

#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define OG_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define OG_TEST_ASAN 1
#endif
#endif

static char g_bin[512];
static char g_dir[256];

static const char SCHEMA[] = "node Person { name: String @key  age: I32?  nick: String? }\n"
                             "node City { name: String @key }\n"
                             "edge Knows: Person -> Person { since: Date? }\n"
                             "edge LivesIn: Person -> City @card(0..1)\n";

static const char DATA[] =
    "{\"type\":\"Person\",\"data\":{\"name\":\"Ada\",\"age\":36,\"nick\":\"countess\"}}\n"
    "{\"type\":\"Person\",\"data\":{\"name\":\"Bob\",\"age\":7,\"nick\":\"says \\\"hi\\\", "
    "twice\"}}\n"
    "{\"type\":\"Person\",\"data\":{\"name\":\"Cy\"}}\n"
    "{\"type\":\"Person\",\"data\":{\"name\":\"Dee\",\"age\":52}}\n"
    "{\"type\":\"City\",\"data\":{\"name\":\"Oslo\"}}\n"
    "{\"edge\":\"Knows\",\"from\":\"Ada\",\"to\":\"Bob\",\"data\":{\"since\":\"2020-02-29\"}}\n"
    "{\"edge\":\"Knows\",\"from\":\"Ada\",\"to\":\"Cy\"}\n"
    "{\"edge\":\"Knows\",\"from\":\"Bob\",\"to\":\"Dee\"}\n"
    "{\"edge\":\"LivesIn\",\"from\":\"Ada\",\"to\":\"Oslo\"}\n";

static const char QUERIES[] = "query friends($name: String) {\n"
                              "    match { $p: Person { name: $name }  $p knows $f }\n"
                              "    return { $f.name, $f.age, $f.nick }\n"
                              "    order { $f.name asc }\n"
                              "}\n"
                              "query older($min: I32) {\n"
                              "    match { $p: Person  $p.age > $min }\n"
                              "    return { $p.name, $p.age }\n"
                              "    order { $p.age desc }\n"
                              "}\n"
                              "query count_people() {\n"
                              "    match { $p: Person }\n"
                              "    return { count($p) as people }\n"
                              "}\n"
                              "query set_age($name: String, $age: I32) {\n"
                              "    update Person set { age: $age } where name = $name\n"
                              "}\n"
                              "query add_person($name: String) {\n"
                              "    insert Person { name: $name }\n"
                              "}\n";

/* ---- helpers ------------------------------------------------------------------------------ */

/* Run the CLI with args in g_dir; stdout into out, stderr into err; exit status. */
static int run(const char *args, char *out, size_t cap, char *err, size_t ecap)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "%s %s", g_bin, args);
    return test_run(g_dir, 1, cmd, out, cap, err, ecap);
}

static void run_ok(const char *args, char *out, size_t cap)
{
    char err[4096];
    int ex = run(args, out, cap, err, sizeof err);
    if (ex != 0) fail_msg("'%s' exited %d: %s", args, ex, err);
}

static void write_text(const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    test_write_file(path, text, strlen(text));
}

/* A graph "g" in g_dir with SCHEMA and DATA; q.gq holds QUERIES. *load_commit (27 bytes)
 * receives the load's commit id. */
static void make_graph(char *load_commit)
{
    write_text("s.pg", SCHEMA);
    write_text("d.jsonl", DATA);
    write_text("q.gq", QUERIES);
    char out[4096];
    run_ok("init --schema s.pg g", out, sizeof out);
    run_ok("load --data d.jsonl --mode overwrite --store g --json", out, sizeof out);
    json_error_t je;
    json_t *j = json_loads(out, 0, &je);
    assert_non_null(j);
    snprintf(load_commit, OG_ID_LEN + 1, "%s", json_string_value(json_object_get(j, "commit_id")));
    assert_int_equal(strlen(load_commit), OG_ID_LEN);
    json_decref(j);
}

/* The number of commits `commit list --json` shows. */
static size_t commit_count(void)
{
    static char out[65536];
    run_ok("commit list --store g --json", out, sizeof out);
    json_error_t je;
    json_t *j = json_loads(out, 0, &je);
    assert_non_null(j);
    size_t n = json_array_size(json_object_get(j, "commits"));
    json_decref(j);
    return n;
}

static int setup(void **state)
{
    (void)state;
    test_sandbox_new(g_dir, sizeof g_dir, "cli-query");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    test_sandbox_done(g_dir);
    return 0;
}

/* ---- output formats ----------------------------------------------------------------------- */

static void test_formats(void **state)
{
    (void)state;
    char head[OG_ID_LEN + 1];
    make_graph(head);
    static char out[65536], want[65536];

    run_ok("query --store g --file q.gq --name friends --params '{\"name\":\"Ada\"}'", out,
           sizeof out);
    snprintf(want, sizeof want,
             "2 rows from branch main via friends at commit %s\n"
             "f.name | f.age | f.nick\n"
             "-------+-------+-----------------\n"
             "Bob    |     7 | says \"hi\", twice\n"
             "Cy     |  null | null\n",
             head);
    assert_string_equal(out, want);

    run_ok("query --store g --file q.gq --name friends --params '{\"name\":\"Ada\"}' --json", out,
           sizeof out);
    snprintf(want, sizeof want,
             "{\"graph_commit_id\":\"%s\",\"columns\":[\"f.name\",\"f.age\",\"f.nick\"],"
             "\"rows\":[{\"f.name\":\"Bob\",\"f.age\":7,\"f.nick\":\"says \\\"hi\\\", twice\"},"
             "{\"f.name\":\"Cy\",\"f.age\":null,\"f.nick\":null}]}\n",
             head);
    assert_string_equal(out, want);

    /* RFC 4180: CRLF, a field with a comma or quote quoted and its quotes doubled, null empty. */
    run_ok("query --store g --file q.gq --name friends --params '{\"name\":\"Ada\"}' --csv", out,
           sizeof out);
    assert_string_equal(out, "f.name,f.age,f.nick\r\n"
                             "Bob,7,\"says \"\"hi\"\", twice\"\r\n"
                             "Cy,,\r\n");

    /* An aggregate, and -e with the only query of the text. */
    run_ok("query --store g -e 'query c() { match { $p: Person } return { count($p) as n } }'", out,
           sizeof out);
    snprintf(want, sizeof want, "1 row from branch main via c at commit %s\nn\n-\n4\n", head);
    assert_string_equal(out, want);

    /* No rows: the header still prints. */
    run_ok("query --store g --file q.gq --name older --params '{\"min\":100}'", out, sizeof out);
    snprintf(want, sizeof want,
             "0 rows from branch main via older at commit %s\np.name | p.age\n-------+------\n",
             head);
    assert_string_equal(out, want);
}

/* ---- params --------------------------------------------------------------------------------- */

static void test_params(void **state)
{
    (void)state;
    char head[OG_ID_LEN + 1];
    make_graph(head);
    static char out[65536];
    char err[4096];
    run_ok("query --store g --file q.gq --name older --params '{\"min\":10}' --csv", out,
           sizeof out);
    assert_string_equal(out, "p.name,p.age\r\nDee,52\r\nAda,36\r\n");
    run_ok("query --store g --file q.gq --name older --params '{\"min\":40}' --csv", out,
           sizeof out);
    assert_string_equal(out, "p.name,p.age\r\nDee,52\r\n");

    /* Missing, mistyped and unknown params are errors naming the param (exit 1). */
    assert_int_equal(
        run("query --store g --file q.gq --name older", out, sizeof out, err, sizeof err), 1);
    assert_non_null(strstr(err, "'min'"));
    assert_int_equal(run("query --store g --file q.gq --name older --params '{\"min\":\"x\"}'", out,
                         sizeof out, err, sizeof err),
                     1);
    assert_non_null(strstr(err, "min"));
    assert_int_equal(
        run("query --store g --file q.gq --name older --params '{\"min\":1,\"max\":2}'", out,
            sizeof out, err, sizeof err),
        1);
    assert_non_null(strstr(err, "max"));
    /* Params that are not a JSON object. */
    assert_int_equal(run("query --store g --file q.gq --name older --params '[1]'", out, sizeof out,
                         err, sizeof err),
                     1);
    /* Several queries and no --name: the error lists them. */
    assert_int_equal(run("query --store g --file q.gq", out, sizeof out, err, sizeof err), 1);
    assert_non_null(strstr(err, "friends, older, count_people"));
    /* A mutation is not a read, and the other way round. */
    assert_int_equal(
        run("query --store g --file q.gq --name add_person --params '{\"name\":\"X\"}'", out,
            sizeof out, err, sizeof err),
        1);
    assert_non_null(strstr(err, "mutation"));
    assert_int_equal(
        run("mutate --store g --file q.gq --name count_people", out, sizeof out, err, sizeof err),
        1);
    /* Usage errors: exit 2. */
    assert_int_equal(run("query --store g", out, sizeof out, err, sizeof err), 2);
    assert_int_equal(run("query --store g -e 'x' --file q.gq", out, sizeof out, err, sizeof err),
                     2);
    assert_int_equal(run("query --store g -e 'x' --json --csv", out, sizeof out, err, sizeof err),
                     2);
    assert_int_equal(run("query --store g -e 'x' --if-commit X", out, sizeof out, err, sizeof err),
                     2);
    assert_int_equal(run("mutate --store g -e 'x' --at 1", out, sizeof out, err, sizeof err), 2);
}

/* ---- time travel and mutations ----------------------------------------------------------------
 */

static void test_at_and_mutate(void **state)
{
    (void)state;
    char load_commit[OG_ID_LEN + 1];
    make_graph(load_commit);
    static char out[65536], want[65536];
    char err[4096];
    assert_int_equal(commit_count(), 2);

    run_ok("mutate --store g --file q.gq --name set_age --params '{\"name\":\"Bob\",\"age\":8}'",
           out, sizeof out);
    char set_commit[OG_ID_LEN + 1];
    assert_int_equal(
        sscanf(out, "changed main via set_age: 1 nodes, 0 edges (commit %26[0-9A-Z])", set_commit),
        1);
    assert_int_equal(commit_count(), 3);

    /* The head answers with the new age, --at the load's commit with the old one, whether it
     * is named by its id, a prefix or its manifest version (2). */
    run_ok("query --store g --file q.gq --name friends --params '{\"name\":\"Ada\"}' --csv", out,
           sizeof out);
    assert_non_null(strstr(out, "Bob,8,"));
    const char *refs[3] = {load_commit, NULL, "2"};
    char prefix[16];
    snprintf(prefix, sizeof prefix, "%.12s", load_commit);
    refs[1] = prefix;
    for (int i = 0; i < 3; i++) {
        char args[512];
        snprintf(args, sizeof args,
                 "query --store g --file q.gq --name friends --params '{\"name\":\"Ada\"}' --at %s",
                 refs[i]);
        run_ok(args, out, sizeof out);
        snprintf(want, sizeof want, "2 rows from branch main via friends at commit %s\n",
                 load_commit);
        assert_memory_equal(out, want, strlen(want));
        assert_non_null(strstr(out, "Bob    |     7 |"));
    }
    /* An unknown reference: exit 1, not found. */
    assert_int_equal(run("query --store g --file q.gq --name count_people --at ZZZZZZ", out,
                         sizeof out, err, sizeof err),
                     1);
    assert_non_null(strstr(err, "not_found"));

    /* --if-commit: a stale id is exit 4 and writes nothing; the head's id commits. */
    char args[512];
    snprintf(args, sizeof args,
             "mutate --store g --file q.gq --name set_age --params '{\"name\":\"Bob\",\"age\":9}' "
             "--if-commit %s",
             load_commit);
    assert_int_equal(run(args, out, sizeof out, err, sizeof err), 4);
    assert_non_null(strstr(err, "precondition_failed"));
    assert_int_equal(commit_count(), 3);
    run_ok("query --store g --file q.gq --name friends --params '{\"name\":\"Ada\"}' --csv", out,
           sizeof out);
    assert_non_null(strstr(out, "Bob,8,"));
    snprintf(args, sizeof args,
             "mutate --store g --file q.gq --name set_age --params '{\"name\":\"Bob\",\"age\":9}' "
             "--if-commit %s --json",
             load_commit);
    assert_int_equal(run(args, out, sizeof out, err, sizeof err), 4);
    json_error_t je;
    json_t *j = json_loads(out, 0, &je);
    assert_non_null(j);
    json_t *e = json_object_get(j, "error");
    assert_string_equal(json_string_value(json_object_get(e, "code")), "precondition_failed");
    assert_string_equal(json_string_value(json_object_get(e, "expected")), load_commit);
    assert_string_equal(json_string_value(json_object_get(e, "actual")), set_commit);
    json_decref(j);

    snprintf(args, sizeof args,
             "mutate --store g --file q.gq --name set_age --params '{\"name\":\"Bob\",\"age\":9}' "
             "--if-commit %s --json",
             set_commit);
    run_ok(args, out, sizeof out);
    j = json_loads(out, 0, &je);
    assert_non_null(j);
    assert_true(json_is_true(json_object_get(j, "committed")));
    assert_int_equal(json_integer_value(json_object_get(j, "nodes_updated")), 1);
    assert_int_equal(json_integer_value(json_object_get(j, "manifest_version")), 4);
    assert_string_equal(json_string_value(json_object_get(j, "query")), "set_age");
    json_decref(j);
    assert_int_equal(commit_count(), 4);

    /* An update matching nothing commits nothing. */
    run_ok("mutate --store g --file q.gq --name set_age --params '{\"name\":\"Nobody\",\"age\":1}'",
           out, sizeof out);
    assert_string_equal(out, "changed main via set_age: 0 nodes, 0 edges (nothing to commit)\n");
    assert_int_equal(commit_count(), 4);
}

/* ---- located .gq errors --------------------------------------------------------------------- */

static void test_bad_query(void **state)
{
    (void)state;
    char head[OG_ID_LEN + 1];
    make_graph(head);
    static char out[65536];
    char err[4096];
    write_text("bad.gq",
               "// a comment\nquery q() {\n    match { $p: Persn }\n    return { $p.name }\n}\n");
    assert_int_equal(run("query --store g --file bad.gq", out, sizeof out, err, sizeof err), 1);
    assert_string_equal(err, "bad.gq:3:17: T1: unknown node type 'Persn'\n"
                             "omnigraph: error[bad_request]\n");
    assert_string_equal(out, "");
    /* A syntax error in -e text. */
    assert_int_equal(run("query --store g -e 'query q( { }'", out, sizeof out, err, sizeof err), 1);
    assert_memory_equal(err, "<-e>:1:10: Q000: ", 17);
    /* --json: the location in the error object. */
    assert_int_equal(run("query --store g --file bad.gq --json", out, sizeof out, err, sizeof err),
                     1);
    json_error_t je;
    json_t *j = json_loads(out, 0, &je);
    assert_non_null(j);
    json_t *e = json_object_get(j, "error");
    assert_string_equal(json_string_value(json_object_get(e, "code")), "bad_request");
    assert_string_equal(json_string_value(json_object_get(e, "file")), "bad.gq");
    assert_int_equal(json_integer_value(json_object_get(e, "line")), 3);
    assert_int_equal(json_integer_value(json_object_get(e, "column")), 17);
    json_decref(j);
    /* An error in another query of the file does not stop a good one from running. */
    write_text("mixed.gq", "query good() { match { $p: Person } return { count($p) as n } }\n"
                           "query broken() { match { $p: Persn } return { $p.name } }\n");
    run_ok("query --store g --file mixed.gq --name good --csv", out, sizeof out);
    assert_string_equal(out, "n\r\n4\r\n");
    assert_int_equal(
        run("query --store g --file mixed.gq --name broken", out, sizeof out, err, sizeof err), 1);
    assert_string_equal(err, "mixed.gq:2:30: T1: unknown node type 'Persn'\n"
                             "omnigraph: error[bad_request]\n");
    /* A failing mutate writes nothing either, and says so. */
    assert_int_equal(run("mutate --store g -e 'query m() { insert Persn { name: \"x\" } }'", out,
                         sizeof out, err, sizeof err),
                     1);
    assert_non_null(strstr(err, "omnigraph: error[bad_request]: nothing was written\n"));
    assert_int_equal(commit_count(), 2);
    /* A source that cannot be read: with --json, an error object like any other. */
    assert_int_equal(
        run("query --store g --file missing.gq --json", out, sizeof out, err, sizeof err), 1);
    j = json_loads(out, 0, &je);
    assert_non_null(j);
    e = json_object_get(j, "error");
    assert_string_equal(json_string_value(json_object_get(e, "code")), "not_found");
    assert_string_equal(json_string_value(json_object_get(e, "object")), "missing.gq");
    json_decref(j);
    assert_int_equal(run("query --store g --file missing.gq", out, sizeof out, err, sizeof err), 1);
    assert_non_null(strstr(err, "cannot read missing.gq"));
    /* The source may come from a pipe. */
    run_ok("query --store g --file /dev/stdin --name good --csv < mixed.gq", out, sizeof out);
    assert_string_equal(out, "n\r\n4\r\n");
}

/* make_graph, then open it (root: its path, 512 bytes) through the API. */
static og_graph *open_made_graph(char load_commit[OG_ID_LEN + 1], char *root)
{
    make_graph(load_commit);
    snprintf(root, 512, "%s/g", g_dir);
    og_graph *g = NULL;
    assert_int_equal(og_graph_open(&g, root, NULL), 0);
    return g;
}

/* ---- the API directly ------------------------------------------------------------------------ */

static void test_api(void **state)
{
    (void)state;
    char load_commit[OG_ID_LEN + 1], root[512];
    og_graph *g = open_made_graph(load_commit, root);
    og_query_options q = OG_QUERY_OPTIONS_INIT;
    q.source = QUERIES;
    q.source_file = "q.gq";
    q.name = "friends";
    q.params_json = "{\"name\":\"Ada\"}";
    og_result *r = NULL;
    assert_int_equal(og_graph_query(&r, g, &q), 0);
    assert_string_equal(og_result_graph_commit_id(r), load_commit);
    assert_int_equal(og_result_manifest_version(r), 2);
    assert_string_equal(og_result_query_name(r), "friends");
    assert_int_equal(og_result_column_count(r), 3);
    assert_string_equal(og_result_column_name(r, 2), "f.nick");
    assert_null(og_result_column_name(r, 3));
    assert_int_equal(og_result_row_count(r), 2);
    og_value v;
    /* The cursor: not on a row before next. */
    assert_int_equal(og_result_get(&v, r, 0), OG_E_BAD_REQUEST);
    assert_int_equal(og_result_next(r), OG_OK);
    assert_int_equal(og_result_get(&v, r, 0), 0);
    assert_int_equal(v.type, OG_VALUE_STRING);
    assert_int_equal(v.len, 3);
    assert_memory_equal(v.str, "Bob", 3);
    assert_int_equal(og_result_get(&v, r, 1), 0);
    assert_int_equal(v.type, OG_VALUE_INT);
    assert_int_equal(v.i, 7);
    assert_int_equal(og_result_next(r), OG_OK);
    assert_int_equal(og_result_get(&v, r, 1), 0);
    assert_int_equal(v.type, OG_VALUE_NULL);
    /* The end is OG_ITER_OVER, again on every later call, and not an error. */
    og_error_clear();
    assert_int_equal(og_result_next(r), OG_ITER_OVER);
    assert_int_equal(og_result_next(r), OG_ITER_OVER);
    assert_int_equal(og_error_last()->code, OG_OK);
    assert_int_equal(og_result_get(&v, r, 0), OG_E_BAD_REQUEST);
    assert_int_equal(og_result_next(NULL), OG_E_BAD_REQUEST); /* a failure, not the end */
    og_result_rewind(r);
    /* The loop every cursor is read with. */
    int rc, seen = 0;
    while ((rc = og_result_next(r)) == OG_OK)
        seen++;
    assert_int_equal(rc, OG_ITER_OVER);
    assert_int_equal(seen, 2);
    og_result_rewind(r);
    assert_int_equal(og_result_next(r), OG_OK);
    assert_int_equal(og_result_value(&v, r, 5, 0), OG_E_BAD_REQUEST);
    size_t len = 0;
    const char *js = og_result_row_json(r, 1, &len);
    assert_non_null(js);
    assert_string_equal(js, "{\"f.name\":\"Cy\",\"f.age\":null,\"f.nick\":null}");
    assert_int_equal(len, strlen(js));
    js = og_result_cell_json(r, 0, 2, NULL);
    assert_string_equal(js, "\"says \\\"hi\\\", twice\"");
    uint64_t first = 9, rows = 9;
    assert_int_equal(og_result_batch_count(r), 1);
    assert_int_equal(og_result_batch_rows(&first, &rows, r, 0), 0);
    assert_int_equal(first, 0);
    assert_int_equal(rows, 2);
    /* Export: the stream has the rows, the result none afterwards. */
    struct ArrowArrayStream st;
    assert_int_equal(og_result_export_stream(&st, r), 0);
    struct ArrowSchema sch;
    assert_int_equal(st.get_schema(&st, &sch), 0);
    assert_int_equal(sch.n_children, 3);
    assert_string_equal(sch.children[0]->name, "f.name");
    sch.release(&sch);
    struct ArrowArray arr;
    int64_t total = 0;
    for (;;) {
        assert_int_equal(st.get_next(&st, &arr), 0);
        if (!arr.release) break;
        total += arr.length;
        arr.release(&arr);
    }
    assert_int_equal(total, 2);
    st.release(&st);
    assert_int_equal(og_result_row_count(r), 0);
    og_result_free(r);

    /* Dates and aggregates come typed. */
    q.source =
        "query s() { match { $a: Person  $a $k:knows $b } return { $k.since, count($b) as n } "
        "order { $k.since asc } }";
    q.name = NULL;
    q.params_json = NULL;
    assert_int_equal(og_graph_query(&r, g, &q), 0);
    assert_int_equal(og_result_row_count(r), 2);
    assert_int_equal(og_result_value(&v, r, 1, 0), 0);
    assert_int_equal(v.type, OG_VALUE_DATE);
    assert_int_equal(v.i, 18321); /* 2020-02-29 */
    assert_int_equal(v.len, 10);
    assert_memory_equal(v.str, "2020-02-29", 10);
    assert_int_equal(og_result_value(&v, r, 1, 1), 0);
    assert_true(v.type == OG_VALUE_INT || v.type == OG_VALUE_UINT);
    og_result_free(r);

    /* Mutate through the API; the read cache sees the new table version. */
    og_mutate_options m = OG_MUTATE_OPTIONS_INIT;
    m.source = QUERIES;
    m.name = "add_person";
    m.params_json = "{\"name\":\"Eve\"}";
    og_write_result *mr = NULL;
    assert_int_equal(og_graph_mutate(&mr, g, &m), 0);
    assert_string_equal(og_write_result_query_name(mr), "add_person");
    assert_int_equal(og_write_result_count(mr, OG_WRITE_NODES_INSERTED), 1);
    assert_int_equal(og_write_result_count(mr, OG_WRITE_LINES), 0); /* a load's count */
    assert_int_equal(strlen(og_write_result_commit_id(mr)), OG_ID_LEN);
    assert_int_equal(og_write_result_manifest_version(mr), 3);
    assert_int_equal(og_write_result_table_count(mr), 1);
    assert_string_equal(og_write_result_table(mr, 0)->alias, "node:Person");
    char mutated[OG_ID_LEN + 1];
    memcpy(mutated, og_write_result_commit_id(mr), sizeof mutated);
    og_write_result_free(mr);
    q.source = QUERIES;
    q.name = "count_people";
    assert_int_equal(og_graph_query(&r, g, &q), 0);
    assert_int_equal(og_result_value(&v, r, 0, 0), 0);
    assert_int_equal(v.type == OG_VALUE_UINT ? v.u : (uint64_t)v.i, 5);
    assert_string_equal(og_result_graph_commit_id(r), mutated);
    og_result_free(r);
    q.at = load_commit;
    assert_int_equal(og_graph_query(&r, g, &q), 0);
    assert_int_equal(og_result_value(&v, r, 0, 0), 0);
    assert_int_equal(v.type == OG_VALUE_UINT ? v.u : (uint64_t)v.i, 4);
    og_result_free(r);

    /* Typed errors. */
    m.if_commit = load_commit;
    assert_og_error(og_graph_mutate(&mr, g, &m), OG_E_PRECONDITION_FAILED);
    assert_null(mr);
    assert_string_equal(og_error_last()->expected, load_commit);
    q.at = NULL;
    q.source = "query q() { match { $p: Person } return { $p.nope } }";
    q.name = NULL;
    q.source_file = "x.gq";
    assert_og_error(og_graph_query(&r, g, &q), OG_E_BAD_REQUEST);
    assert_null(r);
    assert_string_equal(og_error_last()->file, "x.gq");
    assert_int_equal(og_error_last()->line, 1);
    q.version = 99;
    assert_og_error(og_graph_query(&r, g, &q), OG_E_BAD_REQUEST);

    /* A result outlives its handle, and a stream made from it outlives the result (the
     * header's Caveats, "What a result pins"). */
    q.version = OG_QUERY_OPTIONS_VERSION;
    q.source = QUERIES;
    q.source_file = "q.gq";
    q.name = "friends";
    q.params_json = "{\"name\":\"Ada\"}";
    assert_int_equal(og_graph_query(&r, g, &q), 0);
    og_graph_close(g);
    assert_int_equal(og_result_value(&v, r, 0, 0), 0);
    assert_int_equal(v.len, 3);
    assert_memory_equal(v.str, "Bob", 3);
    assert_string_equal(og_result_row_json(r, 1, NULL),
                        "{\"f.name\":\"Cy\",\"f.age\":null,\"f.nick\":null}");
    assert_int_equal(og_result_export_stream(&st, r), 0);
    og_result_free(r);
    assert_int_equal(st.get_next(&st, &arr), 0);
    assert_non_null(arr.release);
    assert_int_equal(arr.length, 2);
    arr.release(&arr);
    st.release(&st);

    /* A read-only handle refuses mutations before any work. */
    og_open_options ro = OG_OPEN_OPTIONS_INIT;
    ro.read_only = 1;
    assert_int_equal(og_graph_open(&g, root, &ro), 0);
    m.if_commit = NULL;
    assert_og_error(og_graph_mutate(&mr, g, &m), OG_E_BAD_REQUEST);
    og_graph_close(g);
}

/* ---- --if-commit across automatic maintenance -------------------------------------------- */

/* Automatic optimize makes maintenance commits that move the head but change no content. A
 * precondition names content, so the commit the previous write returned still holds after
 * them; a content commit since still breaks it. */
static void test_if_commit_survives_maintenance(void **state)
{
    (void)state;
    char load_commit[OG_ID_LEN + 1], root[512];
    og_graph *g = open_made_graph(load_commit, root);
    og_mutate_options m = OG_MUTATE_OPTIONS_INIT;
    m.source = QUERIES;
    m.name = "add_person";
    og_write_result *mr = NULL;
    char last[OG_ID_LEN + 1] = "", before_last[OG_ID_LEN + 1] = "";
    int maintained = 0;
    for (int i = 0; i < 40 && !maintained; i++) {
        char params[64];
        snprintf(params, sizeof params, "{\"name\":\"m%d\"}", i);
        m.params_json = params;
        m.if_commit = last[0] ? last : NULL; /* each write names the one before */
        assert_int_equal(og_graph_mutate(&mr, g, &m), 0);
        memcpy(before_last, last, sizeof last);
        memcpy(last, og_write_result_commit_id(mr), sizeof last);
        og_write_result_free(mr);
        /* Maintenance runs on the handle's worker after the write returns; closing the
         * handle finishes it, so the head is observed after it. */
        og_graph_close(g);
        assert_int_equal(og_graph_open(&g, root, NULL), 0);
        og_commit_list *l = NULL;
        assert_int_equal(og_graph_commits(&l, g, NULL), 0);
        const og_commit_info *c = og_commit_list_get(l, 0);
        maintained = strcmp(c->id, last) != 0; /* the head moved past our commit */
        if (maintained) {
            assert_null(c->actor); /* maintenance is actorless */
            assert_string_equal(c->parent, last);
        }
        og_commit_list_free(l);
    }
    assert_true(maintained);
    m.params_json = "{\"name\":\"after\"}";
    m.if_commit = last;
    assert_int_equal(og_graph_mutate(&mr, g, &m), 0);
    og_write_result_free(mr);
    m.params_json = "{\"name\":\"stale\"}";
    m.if_commit = before_last;
    assert_int_equal(og_graph_mutate(&mr, g, &m), OG_E_PRECONDITION_FAILED);
    og_graph_close(g);
}

/* ---- a large result, streamed ---------------------------------------------------------------- */

#define BIG_ROWS 100000

/* Run the CLI with args, counting the bytes it prints without keeping them; the child's peak
 * RSS in KiB goes to *rss_kib. Returns the exit status. */
static int run_counted(const char *args, uint64_t *bytes, uint64_t *newlines, long *rss_kib)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        if (chdir(g_dir) != 0) _exit(127);
        char cmd[4096];
        snprintf(cmd, sizeof cmd, "exec %s %s", g_bin, args);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    char buf[1 << 16];
    ssize_t n;
    *bytes = 0;
    *newlines = 0;
    while ((n = read(fds[0], buf, sizeof buf)) > 0) {
        *bytes += (uint64_t)n;
        for (ssize_t i = 0; i < n; i++)
            *newlines += buf[i] == '\n';
    }
    close(fds[0]);
    int st = 0;
    struct rusage ru;
    assert_int_equal(wait4(pid, &st, 0, &ru), pid);
    *rss_kib = ru.ru_maxrss;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_streaming_big_result(void **state)
{
    (void)state;
    write_text("big.pg", "node Item { key: String @key  n: I64 }\n");
    char path[512];
    snprintf(path, sizeof path, "%s/big.jsonl", g_dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    for (int i = 0; i < BIG_ROWS; i++)
        fprintf(f, "{\"type\":\"Item\",\"data\":{\"key\":\"k%06d\",\"n\":%d}}\n", i, i);
    fclose(f);
    /* Ten copies of one integer under long names: the text the CLI prints per row is many
     * times the Arrow bytes the executor holds for it. */
    char q[4096];
    size_t used = (size_t)snprintf(q, sizeof q, "query wide() { match { $i: Item } return { ");
    for (int c = 0; c < 10; c++)
        used += (size_t)snprintf(q + used, sizeof q - used,
                                 "$i.n as a_column_with_a_deliberately_long_name_number_%d ", c);
    snprintf(q + used, sizeof q - used, "} }\n");
    write_text("wide.gq", q);
    char out[4096];
    run_ok("init --schema big.pg g", out, sizeof out);
    run_ok("load --data big.jsonl --mode overwrite --store g", out, sizeof out);

    /* The executor's result arrives in batches; the API shows them. */
    char root[512];
    snprintf(root, sizeof root, "%s/g", g_dir);
    og_graph *g = NULL;
    assert_int_equal(og_graph_open(&g, root, NULL), 0);
    og_query_options o = OG_QUERY_OPTIONS_INIT;
    o.source = q;
    og_result *r = NULL;
    assert_int_equal(og_graph_query(&r, g, &o), 0);
    assert_int_equal(og_result_row_count(r), BIG_ROWS);
    size_t nb = og_result_batch_count(r);
    assert_true(nb >= 2);
    uint64_t sum = 0;
    for (size_t b = 0; b < nb; b++) {
        uint64_t first, rows;
        assert_int_equal(og_result_batch_rows(&first, &rows, r, b), 0);
        assert_int_equal(first, sum);
        sum += rows;
    }
    assert_int_equal(sum, BIG_ROWS);
    og_result_free(r);
    og_graph_close(g);

    uint64_t bytes = 0, lines = 0;
    long rss = 0;
    assert_int_equal(run_counted("query --store g --file wide.gq --json", &bytes, &lines, &rss), 0);
    assert_int_equal(lines, 1); /* one object */
    /* Each row prints ten members of over 50 bytes. */
    assert_true(bytes > (uint64_t)BIG_ROWS * 500);
    print_message("json: %llu bytes printed, peak RSS %ld KiB\n", (unsigned long long)bytes, rss);
#ifndef OG_TEST_ASAN
    /* Had the CLI assembled its output, its peak would exceed the bytes printed. */
    assert_true((uint64_t)rss * 1024 < bytes / 2);
#endif
    assert_int_equal(run_counted("query --store g --file wide.gq --csv", &bytes, &lines, &rss), 0);
    assert_int_equal(lines, BIG_ROWS + 1);
    assert_int_equal(run_counted("query --store g --file wide.gq", &bytes, &lines, &rss), 0);
    assert_int_equal(lines, BIG_ROWS + 3);
    print_message("table: %llu bytes printed, peak RSS %ld KiB\n", (unsigned long long)bytes, rss);
#ifndef OG_TEST_ASAN
    assert_true((uint64_t)rss * 1024 < bytes / 2);
#endif
}

int main(void)
{
    const char *bindir = getenv("OG_TEST_BINDIR");
    snprintf(g_bin, sizeof g_bin, "%s/omnigraph", bindir ? bindir : ".");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_formats, setup, teardown),
        cmocka_unit_test_setup_teardown(test_params, setup, teardown),
        cmocka_unit_test_setup_teardown(test_at_and_mutate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_query, setup, teardown),
        cmocka_unit_test_setup_teardown(test_api, setup, teardown),
        cmocka_unit_test_setup_teardown(test_if_commit_survives_maintenance, setup, teardown),
        cmocka_unit_test_setup_teardown(test_streaming_big_result, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
