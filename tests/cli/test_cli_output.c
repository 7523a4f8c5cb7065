/* What the omnigraph command promises about its output and its refusals (docs/cli.md,
 * "Conventions"), through the built binary: --json prints exactly one JSON object whatever
 * happens (usage errors, missing files, a failure part way through a streamed result); a
 * root written as a URI is refused as
 * unsupported and nothing is created, as an init with a bad schema creates nothing; JSON input
 * holding \u0000 is refused, said plainly; a bad --params is located once; a UTF-8 byte order mark
 * is named; --at 0 is refused as the version that never exists; a write recovery completed reports
 * its real commit; a mutation's
 * @unique error names its lines; and the write semantics docs/cli.md states (keyed inserts
 * replace rows, edges without ids are new every load, which writes make no commit). */
#include "testutil.h"

#include <ftw.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

static char g_bin[512];
static char g_schema[512];
static char g_dir[256]; /* scratch for each test; the CLI runs in it */

/* ---- helpers ------------------------------------------------------------------------------ */

/* Run the CLI with args (and env, a prefix such as "OG_FAILPOINTS=... ", may be "") in g_dir;
 * stdout into out, stderr into err; the exit status. */
static int run_env(const char *env, const char *args, char *out, size_t cap, char *err, size_t ecap)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "%s%s %s", env, g_bin, args);
    return test_run(g_dir, 1, cmd, out, cap, err, ecap);
}

static int run(const char *args, char *out, size_t cap, char *err, size_t ecap)
{
    return run_env("", args, out, cap, err, ecap);
}

/* Run with env; stdout must be exactly one JSON object (and nothing else), the exit status
 * want_exit. Returns the object. */
static json_t *run_json_env(const char *env, const char *args, int want_exit)
{
    static char out[1 << 20];
    char err[8192];
    int ex = run_env(env, args, out, sizeof out, err, sizeof err);
    if (ex != want_exit)
        fail_msg("'%s' exited %d, not %d; stdout: %s; stderr: %s", args, ex, want_exit, out, err);
    json_error_t je;
    json_t *j = json_loads(out, 0, &je); /* the whole of stdout: one value, nothing after it */
    if (!j || !json_is_object(j))
        fail_msg("'%s' did not print one JSON object: [%s] (%s)", args, out, je.text);
    return j;
}

static json_t *run_json(const char *args, int want_exit)
{
    return run_json_env("", args, want_exit);
}

/* The error object of a failure: "ok" is false and error.code is `code`. */
static const json_t *json_error_of(const json_t *j, const char *code)
{
    assert_true(json_is_false(json_object_get(j, "ok")));
    const json_t *e = json_object_get(j, "error");
    assert_true(json_is_object(e));
    const char *c = json_string_value(json_object_get(e, "code"));
    if (!c || strcmp(c, code) != 0) fail_msg("error code %s, not %s", c ? c : "(none)", code);
    assert_non_null(json_string_value(json_object_get(e, "message")));
    return e;
}

static const char *jstr(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    if (!json_is_string(v)) fail_msg("member '%s' is not a string", k);
    return json_string_value(v);
}

static void write_text(const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    test_write_file(path, text, strlen(text));
}

static int exists(const char *name)
{
    char path[512];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    return lstat(path, &st) == 0;
}

/* Graph "g" in g_dir from examples/social.pg, loaded with PEOPLE. */
static const char PEOPLE[] = "{\"type\":\"Person\",\"data\":{\"name\":\"Alice\",\"age\":30,"
                             "\"email\":\"alice@example.com\"}}\n"
                             "{\"type\":\"Person\",\"data\":{\"name\":\"Bob\",\"age\":25}}\n"
                             "{\"type\":\"Company\",\"data\":{\"name\":\"Acme\"}}\n";

static void make_graph(void)
{
    char args[1024], out[4096], err[4096];
    snprintf(args, sizeof args, "init --schema '%s' g", g_schema);
    if (run(args, out, sizeof out, err, sizeof err) != 0) fail_msg("init failed: %s", err);
    write_text("people.jsonl", PEOPLE);
    if (run("load --data people.jsonl --mode overwrite g", out, sizeof out, err, sizeof err) != 0)
        fail_msg("load failed: %s", err);
}

/* The rows of a one-column query's --csv output (header and CRLFs included). */
static void query_csv(const char *gq, char *out, size_t cap)
{
    char args[2048], err[4096];
    snprintf(args, sizeof args, "query --csv --store g -e '%s'", gq);
    if (run(args, out, cap, err, sizeof err) != 0) fail_msg("'%s' failed: %s", args, err);
}

static int setup(void **state)
{
    (void)state;
    test_sandbox_new(g_dir, sizeof g_dir, "cli-output");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    test_sandbox_done(g_dir);
    return 0;
}

/* Overwrite every occurrence of the marker in the files under a directory with bytes that are
 * not UTF-8 (a damaged data file: Lance stores short strings as they are). */
static const char *g_marker;
static int g_damaged;

static int damage_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)ftw;
    if (flag != FTW_F || !S_ISREG(st->st_mode)) return 0;
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    char *buf = malloc((size_t)st->st_size + 1);
    assert_non_null(buf);
    size_t n = fread(buf, 1, (size_t)st->st_size, f);
    size_t ml = strlen(g_marker);
    for (size_t i = 0; i + ml <= n; i++) {
        if (memcmp(buf + i, g_marker, ml) != 0) continue;
        memset(buf + i, 0xFF, ml);
        assert_int_equal(fseek(f, (long)i, SEEK_SET), 0);
        assert_int_equal(fwrite(buf + i, 1, ml, f), ml);
        g_damaged++;
    }
    free(buf);
    fclose(f);
    return 0;
}

static void damage_marker(const char *dir, const char *marker)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", g_dir, dir);
    g_marker = marker;
    g_damaged = 0;
    assert_int_equal(nftw(path, damage_one, 16, FTW_PHYS), 0);
    assert_true(g_damaged > 0);
}

/* ---- --json: one object, whatever happens ------------------------------------------------------
 */

/* Every command with --json prints exactly one JSON object on stdout: usage errors ("usage",
 * exit 2: they printed nothing on stdout), --help, missing input files and roots, and a query
 * whose rows fail part way (the rows so far, then "ok":false and the error: it printed a
 * truncated document). */
static void test_json_everywhere(void **state)
{
    (void)state;
    make_graph();
    static const struct {
        const char *args;
        int exit;
        const char *code; /* NULL: a success */
    } cases[] = {
        {"version --json --bogus", 2, "usage"},
        {"bogus --json", 2, "usage"},
        {"--json", 2, "usage"},
        {"selfcheck --json", 2, "usage"},
        {"schema --json", 2, "usage"},
        {"schema check --json", 2, "usage"},
        {"schema plan --json --from a.pg", 2, "usage"},
        {"lint --json x.gq", 2, "usage"},
        {"lance --json", 2, "usage"},
        {"lance cat --json", 2, "usage"},
        {"lance cat --json --limit x dir", 2, "usage"},
        {"init --json g9", 2, "usage"},
        {"load --json g", 2, "usage"},
        {"load --json --data people.jsonl --mode upsert g", 2, "usage"},
        {"load --json --data people.jsonl --mode merge --store g g", 2, "usage"},
        {"query --json --store g", 2, "usage"},
        {"query --json --csv --store g -e x", 2, "usage"},
        {"mutate --json --at 1 --store g -e x", 2, "usage"},
        {"snapshot --json", 2, "usage"},
        {"commit --json", 2, "usage"},
        {"commit show --json g", 2, "usage"},
        {"optimize --json --bogus g", 2, "usage"},
        {"cleanup --json g", 2, "usage"},
        {"cleanup --keep 0 --json g", 2, "usage"},
        {"schema check --json missing.pg", 1, "not_found"},
        {"schema plan --json --from missing.pg --to missing.pg", 1, "not_found"},
        {"lint --json --schema missing.pg missing.gq", 1, "not_found"},
        {"init --json --schema missing.pg g9", 1, "not_found"},
        {"load --json --data missing.jsonl --mode merge g", 1, "not_found"},
        {"load --json --data people.jsonl --mode merge missing", 1, "not_found"},
        {"query --json --store g --file missing.gq", 1, "not_found"},
        {"mutate --json --store g --file missing.gq", 1, "not_found"},
        {"snapshot --json missing", 1, "not_found"},
        {"lance cat --json missing", 1, "not_found"},
        {"lance schema --json missing", 1, "not_found"},
        {"--help --json", 0, NULL},
        {"load --help --json", 0, NULL},
        {"version --json", 0, NULL},
        {"--version --json", 0, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *j = run_json(cases[i].args, cases[i].exit);
        if (cases[i].code) {
            json_error_of(j, cases[i].code);
        } else {
            assert_null(json_object_get(j, "error"));
        }
        json_decref(j);
    }
    json_t *j = run_json("load --json g", 2);
    assert_non_null(strstr(jstr(json_error_of(j, "usage"), "usage"), "omnigraph load --data"));
    json_decref(j);
    j = run_json("--help --json", 0);
    assert_true(json_array_size(json_object_get(j, "commands")) > 10);
    json_decref(j);
    j = run_json("query --help --json", 0);
    assert_string_equal(jstr(j, "command"), "query");
    assert_non_null(strstr(jstr(j, "usage"), "omnigraph query --store ROOT"));
    json_decref(j);

    /* Damage inside a data file larger than LANCE_FILE2_SMALL_FILE_BYTES (the damaged row
     * shares it with enough padding rows): such a file is read in ranges, and every range is
     * checked against the file's block checksums, so the query fails `corrupt` naming the
     * file before any row is written, and the document is still one whole object. (Before
     * block checksums this reached the row writer, which refused the invalid UTF-8 part way:
     * that writer is tested in tests/arrow/test_arrow_json.c.) */
    {
        size_t cap = 6u << 20, len = 0;
        char *more = malloc(cap);
        assert_non_null(more);
        len += (size_t)snprintf(more, cap,
                                "{\"type\":\"Person\",\"data\":{\"name\":\"Zz-DAMAGED-zz\"}}\n");
        for (int i = 0; len < (5u << 20); i++)
            len += (size_t)snprintf(
                more + len, cap - len,
                "{\"type\":\"Person\",\"data\":{\"name\":\"zpad%07d-%0100d\"}}\n", i, 0);
        char path[1024];
        snprintf(path, sizeof path, "%s/more.jsonl", g_dir);
        test_write_file(path, more, len);
        free(more);
    }
    char out[8192], err[8192];
    assert_int_equal(run("load --data more.jsonl --mode merge g", out, sizeof out, err, sizeof err),
                     0);
    damage_marker("g/nodes", "DAMAGED");
    j = run_json("query --json --store g -e 'query q() { match { $p: Person } return { $p.name } "
                 "order { $p.name asc } }'",
                 1);
    const char *msg = jstr(json_error_of(j, "corrupt"), "message");
    assert_non_null(strstr(msg, "checksum mismatch in block"));
    assert_non_null(strstr(msg, "/data/"));
    assert_int_equal(json_array_size(json_object_get(j, "rows")), 0); /* no wrong row */
    json_decref(j);
    /* lance cat --json reads every row before it writes one: the error is the one object */
    j = run_json("snapshot --json g", 0);
    const json_t *t;
    size_t k;
    char args[1024] = "";
    json_array_foreach(json_object_get(j, "tables"), k,
                       t) if (!strcmp(jstr(t, "alias"), "node:Person"))
        snprintf(args, sizeof args, "lance cat --json g/%s", jstr(t, "path"));
    json_decref(j);
    j = run_json(args, 1);
    json_error_of(j, "corrupt");
    json_decref(j);
}

/* ---- roots -------------------------------------------------------------------------------- */

/* A root (or table directory) written as a URI is refused as unsupported, in text and JSON,
 * and no local directory "s3:" appears; "./s3://..." still names a local path. */
static void test_uri_roots_unsupported(void **state)
{
    (void)state;
    char args[1024], out[4096], err[4096];
    snprintf(args, sizeof args, "init --schema '%s' s3://bucket/g", g_schema);
    assert_int_equal(run(args, out, sizeof out, err, sizeof err), 1);
    assert_non_null(strstr(err, "error[unsupported]"));
    assert_non_null(strstr(err, "s3://"));
    assert_false(exists("s3:"));
    snprintf(args, sizeof args, "init --json --schema '%s' --store gs://bucket/g", g_schema);
    json_t *j = run_json(args, 1);
    assert_string_equal(jstr(json_error_of(j, "unsupported"), "object"), "gs://bucket/g");
    json_decref(j);
    assert_false(exists("gs:"));
    const char *cmds[] = {
        "snapshot --json s3://bucket/g",
        "load --json --data d.jsonl --mode merge --store http://host/g",
        "query --json --store s3+x.y://b/g -e 'query q() { match { $p: P } return { $p.id } }'",
        "mutate --json --store S3://b/g -e 'query q() { delete P where id = \"x\" }'",
        "commit list --json --store s3://b/g",
        "optimize --json s3://b/g",
        "cleanup --keep 1 --json s3://b/g",
        "lance stats --json s3://b/t.lance",
        "selfcheck --json s3://b/check",
    };
    write_text("d.jsonl", "\n");
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        j = run_json(cmds[i], 1);
        json_error_of(j, "unsupported");
        json_decref(j);
    }
    assert_false(exists("s3:"));
    assert_false(exists("http:"));
    /* A local directory whose name merely looks like a URI is reachable as ./NAME. */
    snprintf(args, sizeof args, "init --schema '%s' ./s3://bucket/g", g_schema);
    assert_int_equal(run(args, out, sizeof out, err, sizeof err), 0);
    assert_true(exists("s3:/bucket/g"));
}

/* An init whose schema is invalid writes nothing at all: not the root, not its parents (it
 * used to leave the root behind as an empty directory). */
static void test_init_bad_schema_leaves_nothing(void **state)
{
    (void)state;
    char out[4096], err[4096];
    write_text("bad.pg", "node Person {\n  name: Strin @key\n}\n");
    assert_int_equal(run("init --schema bad.pg g3", out, sizeof out, err, sizeof err), 1);
    assert_non_null(strstr(err, "bad.pg:2:"));
    assert_false(exists("g3"));
    json_t *j = run_json("init --json --schema bad.pg --store deep/er/g3", 1);
    const json_t *e = json_error_of(j, "bad_request");
    assert_string_equal(jstr(e, "file"), "bad.pg");
    json_decref(j);
    assert_false(exists("deep"));
}

/* ---- JSON input ----------------------------------------------------------------------------- */

/* A string holding \u0000 is refused in --params as in JSONL (it used to be cut there:
 * "Alice\u0000x" matched Alice, an inserted "zed\u0000tail" was stored as "zed"), and no
 * message names a library flag. */
static void test_nul_in_json_input(void **state)
{
    (void)state;
    make_graph();
    char out[8192], err[8192];
    json_t *j = run_json("query --json --store g --params '{\"h\":\"Alice\\u0000x\"}' "
                         "-e 'query q($h: String) { match { $p: Person { name: $h } } "
                         "return { $p.name } }'",
                         1);
    const json_t *e = json_error_of(j, "bad_request");
    assert_non_null(strstr(jstr(e, "message"), "\\u0000"));
    assert_null(strstr(jstr(e, "message"), "JSON_ALLOW_NUL"));
    json_decref(j);
    j = run_json("mutate --json --store g --params '{\"h\":\"zed\\u0000tail\"}' "
                 "-e 'query q($h: String) { insert Person { name: $h } }'",
                 1);
    json_error_of(j, "bad_request");
    json_decref(j);
    query_csv("query q() { match { $p: Person } return { $p.name } order { $p.name asc } }", out,
              sizeof out);
    assert_string_equal(out, "p.name\r\nAlice\r\nBob\r\n");
    /* JSONL: refused before as now, but said plainly. */
    write_text("nul.jsonl", "{\"type\":\"Person\",\"data\":{\"name\":\"a\\u0000b\"}}\n");
    assert_int_equal(run("load --data nul.jsonl --mode merge g", out, sizeof out, err, sizeof err),
                     1);
    assert_non_null(strstr(err, "nul.jsonl:1:"));
    assert_non_null(strstr(err, "\\u0000 (the NUL character) is not allowed in a string"));
    assert_null(strstr(err, "JSON_ALLOW_NUL"));
}

/* Bad --params JSON: its position said once, on the line with the error code (params are not
 * a file to jump to: it used to print "params:1:1: params:1:1: ..." then a bare code line). */
static void test_params_error_said_once(void **state)
{
    (void)state;
    make_graph();
    char out[8192], err[8192];
    const char *q = "query --store g --params '{' "
                    "-e 'query q() { match { $p: Person } return { $p.name } }'";
    assert_int_equal(run(q, out, sizeof out, err, sizeof err), 1);
    assert_string_equal(err, "omnigraph: error[bad_request]: params: invalid JSON at line 1, "
                             "column 1: string or '}' expected near end of file\n");
    json_t *j = run_json("query --json --store g --params '{\"a\":1,\n\"b\"}' "
                         "-e 'query q() { match { $p: Person } return { $p.name } }'",
                         1);
    const json_t *e = json_error_of(j, "bad_request");
    assert_non_null(strstr(jstr(e, "message"), "params: invalid JSON at line 2, column 4: "));
    assert_null(json_object_get(e, "file"));
    assert_int_equal(json_integer_value(json_object_get(e, "line")), 2);
    assert_int_equal(json_integer_value(json_object_get(e, "column")), 4);
    json_decref(j);
}

/* A leading UTF-8 byte order mark in a .pg, .gq or JSONL file is refused by name, at 1:1 (it
 * was "unexpected byte outside a string", or "'{' expected near" an invisible character). */
static void test_bom_named(void **state)
{
    (void)state;
    make_graph();
    char out[8192], err[8192];
    const char *bom = "\xEF\xBB\xBF";
    char text[512];
    snprintf(text, sizeof text, "%snode A { k: String @key }\n", bom);
    write_text("bom.pg", text);
    snprintf(text, sizeof text, "%squery q() { match { $p: Person } return { $p.name } }\n", bom);
    write_text("bom.gq", text);
    snprintf(text, sizeof text, "%s{\"type\":\"Person\",\"data\":{\"name\":\"Zed\"}}\n", bom);
    write_text("bom.jsonl", text);
    const char *what = "starts with a UTF-8 byte order mark (bytes EF BB BF)";
    assert_int_equal(run("schema check bom.pg", out, sizeof out, err, sizeof err), 1);
    assert_non_null(strstr(err, "bom.pg:1:1: error[S000]: the source "));
    assert_non_null(strstr(err, what));
    assert_int_equal(run("init --schema bom.pg g2", out, sizeof out, err, sizeof err), 1);
    assert_non_null(strstr(err, "bom.pg:1:1: S000: the source "));
    assert_non_null(strstr(err, what));
    assert_int_equal(run("query --store g --file bom.gq", out, sizeof out, err, sizeof err), 1);
    assert_non_null(strstr(err, "bom.gq:1:1: Q000: the source "));
    assert_non_null(strstr(err, what));
    assert_int_equal(run("load --data bom.jsonl --mode merge g", out, sizeof out, err, sizeof err),
                     1);
    assert_non_null(strstr(err, "bom.jsonl:1:1: the file "));
    assert_non_null(strstr(err, what));
    json_t *j = run_json("load --json --data bom.jsonl --mode merge g", 1);
    const json_t *e = json_error_of(j, "bad_request");
    assert_string_equal(jstr(e, "file"), "bom.jsonl");
    assert_int_equal(json_integer_value(json_object_get(e, "line")), 1);
    assert_non_null(strstr(jstr(e, "message"), what));
    json_decref(j);
}

/* ---- writes ------------------------------------------------------------------------------------
 */

/* A write whose publish failed and that in-process recovery completed reports the commit
 * recovery made: its manifest version and tables, as the snapshot shows them (it said
 * "manifest_version":0,"tables":[]). */
static void test_recovered_write_reports_commit(void **state)
{
    (void)state;
    make_graph();
    const char *fail_publish_once = "OG_FAILPOINTS='write.pre_publish=1*error' ";
    write_text("rec.jsonl", "{\"type\":\"Person\",\"data\":{\"name\":\"Rec\"}}\n");
    const char *cmds[] = {
        "load --json --data rec.jsonl --mode merge g",
        "mutate --json --store g -e 'query a() { insert Person { name: \"Rec2\" } }'",
    };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        json_t *w = run_json_env(fail_publish_once, cmds[i], 0);
        assert_true(json_is_true(json_object_get(w, "committed")));
        json_t *s = run_json("snapshot --json g", 0);
        assert_string_equal(jstr(w, "commit_id"), jstr(s, "head_commit"));
        assert_int_equal(json_integer_value(json_object_get(w, "manifest_version")),
                         json_integer_value(json_object_get(s, "manifest_version")));
        const json_t *tables = json_object_get(w, "tables");
        assert_int_equal(json_array_size(tables), 1);
        const json_t *t = json_array_get(tables, 0);
        assert_string_equal(jstr(t, "alias"), "node:Person");
        size_t k;
        const json_t *st;
        json_array_foreach(json_object_get(s, "tables"), k, st)
        {
            if (strcmp(jstr(st, "alias"), "node:Person") != 0) continue;
            assert_int_equal(json_integer_value(json_object_get(t, "to_version")),
                             json_integer_value(json_object_get(st, "version")));
            assert_int_equal(json_integer_value(json_object_get(t, "row_count")),
                             json_integer_value(json_object_get(st, "row_count")));
        }
        json_decref(s);
        json_decref(w);
    }
}

/* A mutation's @unique error names the lines of the statements that wrote the two rows, and is
 * located at the second (it said "lines 0 and 0", with no location). */
static void test_mutation_unique_names_lines(void **state)
{
    (void)state;
    make_graph();
    char out[8192], err[8192];
    write_text("u.gq", "query two() {\n"
                       "  insert Person { name: \"U1\", email: \"u@x.io\" }\n"
                       "  insert Person { name: \"U2\", email: \"u@x.io\" }\n"
                       "}\n");
    assert_int_equal(run("mutate --store g --file u.gq", out, sizeof out, err, sizeof err), 1);
    assert_string_equal(err, "u.gq:3: Person: @unique(email) violated: value \"u@x.io\" is given "
                             "twice in the input (lines 2 and 3)\n"
                             "omnigraph: error[key_conflict]: nothing was written\n");
    json_t *j = run_json("mutate --json --store g --file u.gq", 1);
    const json_t *e = json_error_of(j, "key_conflict");
    assert_string_equal(jstr(e, "file"), "u.gq");
    assert_int_equal(json_integer_value(json_object_get(e, "line")), 3);
    json_decref(j);
    /* one line holding both statements */
    assert_int_equal(run("mutate --store g -e 'query a() { insert Person { name: \"U1\", email: "
                         "\"u@x.io\" } insert Person { name: \"U2\", email: \"u@x.io\" } }'",
                         out, sizeof out, err, sizeof err),
                     1);
    assert_non_null(strstr(err, "<-e>:1: Person: @unique(email) violated: value \"u@x.io\" is "
                                "given twice in the input (both from line 1)\n"));
}

/* The number of commits on main. */
static size_t commit_count(void)
{
    json_t *j = run_json("commit list --json g", 0);
    size_t n = json_array_size(json_object_get(j, "commits"));
    json_decref(j);
    return n;
}

static uint64_t table_rows(const char *alias)
{
    json_t *j = run_json("snapshot --json g", 0);
    const json_t *t;
    size_t k;
    uint64_t n = UINT64_MAX;
    json_array_foreach(json_object_get(j, "tables"), k, t) if (!strcmp(jstr(t, "alias"), alias)) n =
        (uint64_t)json_integer_value(json_object_get(t, "row_count"));
    json_decref(j);
    assert_true(n != UINT64_MAX);
    return n;
}

/* What docs/cli.md says of writes, as run: a keyed insert (and a merge line) replaces the whole
 * row; edges without data.id get a new id on every load; which writes make no commit. */
static void test_documented_write_semantics(void **state)
{
    (void)state;
    make_graph();
    char out[8192];
    const char *q_alice = "query q() { match { $p: Person { name: \"Alice\" } } return { $p.age, "
                          "$p.email } }";
    /* a keyed insert replaces the row: the email it leaves out becomes null */
    json_t *j = run_json("mutate --json --store g -e 'query a() { insert Person { name: \"Alice\", "
                         "age: 31 } }'",
                         0);
    assert_true(json_is_true(json_object_get(j, "committed")));
    json_decref(j);
    query_csv(q_alice, out, sizeof out);
    assert_string_equal(out, "p.age,p.email\r\n31,\r\n");
    /* so does a merge line: the age it leaves out becomes null */
    write_text("alice.jsonl",
               "{\"type\":\"Person\",\"data\":{\"name\":\"Alice\",\"email\":\"a@b.c\"}}\n");
    j = run_json("load --json --data alice.jsonl --mode merge g", 0);
    json_decref(j);
    query_csv(q_alice, out, sizeof out);
    assert_string_equal(out, "p.age,p.email\r\n,a@b.c\r\n");
    /* edges without data.id: merging the same line twice adds the edge twice */
    write_text("e.jsonl", "{\"edge\":\"Knows\",\"from\":\"Alice\",\"to\":\"Bob\"}\n");
    for (int i = 0; i < 2; i++) {
        j = run_json("load --json --data e.jsonl --mode merge g", 0);
        json_decref(j);
    }
    assert_int_equal(table_rows("edge:Knows"), 2);
    /* no commit: a load of blank lines, a mutation that matches no row */
    size_t n = commit_count();
    write_text("blank.jsonl", "\n\n");
    j = run_json("load --json --data blank.jsonl --mode merge g", 0);
    assert_true(json_is_false(json_object_get(j, "committed")));
    assert_true(json_is_null(json_object_get(j, "commit_id")));
    json_decref(j);
    j = run_json(
        "mutate --json --store g -e 'query a() { update Person set { age: 1 } where name = "
        "\"Nobody\" }'",
        0);
    assert_true(json_is_false(json_object_get(j, "committed")));
    json_decref(j);
    j = run_json("mutate --json --store g -e 'query a() { delete Person where name = \"Nobody\" }'",
                 0);
    assert_true(json_is_false(json_object_get(j, "committed")));
    json_decref(j);
    assert_int_equal(commit_count(), n);
    /* ... but rows rewritten as they already are still make a commit */
    j = run_json("load --json --data alice.jsonl --mode merge g", 0);
    assert_true(json_is_true(json_object_get(j, "committed")));
    json_decref(j);
    j = run_json("mutate --json --store g -e 'query a() { update Person set { email: \"a@b.c\" } "
                 "where name = \"Alice\" }'",
                 0);
    assert_true(json_is_true(json_object_get(j, "committed")));
    json_decref(j);
    assert_int_equal(commit_count(), n + 2);
}

/* ---- references ------------------------------------------------------------------------------ */

/* --at 0 names manifest version 0, which never exists: a bad_request that says versions start
 * at 1 (it was "commit reference '0' is too short"), for every command that takes a REF. */
static void test_at_zero(void **state)
{
    (void)state;
    make_graph();
    char out[8192], err[8192];
    const char *cmds[] = {
        "query --store g --at 0 -e 'query q() { match { $p: Person } return { $p.name } }'",
        "snapshot --at 0 g",
        "commit show 0 g",
        "snapshot --at 000 g",
    };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        assert_int_equal(run(cmds[i], out, sizeof out, err, sizeof err), 1);
        assert_non_null(strstr(err, "error[bad_request]: manifest version 0"));
        assert_non_null(strstr(err, " does not exist: versions start at 1 (the genesis commit)"));
    }
    json_t *j = run_json("snapshot --json --at 0 g", 1);
    assert_string_equal(jstr(json_error_of(j, "bad_request"), "object"), "0");
    json_decref(j);
    /* version 1 is the genesis */
    j = run_json("snapshot --json --at 1 g", 0);
    assert_int_equal(json_integer_value(json_object_get(j, "manifest_version")), 1);
    json_decref(j);
}

int main(void)
{
    const char *bindir = getenv("OG_TEST_BINDIR");
    const char *srcdir = getenv("OG_TEST_SRCDIR");
    snprintf(g_bin, sizeof g_bin, "%s/omnigraph", bindir ? bindir : ".");
    snprintf(g_schema, sizeof g_schema, "%s/examples/social.pg", srcdir ? srcdir : "../..");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_json_everywhere, setup, teardown),
        cmocka_unit_test_setup_teardown(test_uri_roots_unsupported, setup, teardown),
        cmocka_unit_test_setup_teardown(test_init_bad_schema_leaves_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nul_in_json_input, setup, teardown),
        cmocka_unit_test_setup_teardown(test_params_error_said_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bom_named, setup, teardown),
        cmocka_unit_test_setup_teardown(test_at_zero, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recovered_write_reports_commit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mutation_unique_names_lines, setup, teardown),
        cmocka_unit_test_setup_teardown(test_documented_write_semantics, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
