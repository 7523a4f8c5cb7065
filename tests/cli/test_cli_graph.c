/* omnigraph init|load|snapshot|commit through the built binary, and the public graph API
 * (og_graph_*) directly: init (and init twice), every load mode with the row counts and
 * versions they leave, a bad line (FILE:LINE, exit 1, nothing written), time travel with
 * --at, read-only inspection writing nothing (a recursive listing compared before/after),
 * the --json forms parsed with jansson, and usage errors (exit 2). */
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
static char g_dir[256]; /* scratch for each test */

/* ---- helpers ------------------------------------------------------------------------------ */

/* Run the CLI with args; stdout into out, stderr into err (either may be NULL); exit status. */
static int run(const char *args, char *out, size_t cap, char *err, size_t ecap)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s %s", g_bin, args);
    return test_run(g_dir, 1, cmd, out, cap, err, ecap);
}

/* Run and parse stdout as one JSON object (the test fails when it is not one). */
static json_t *run_json(const char *args, int want_exit)
{
    static char out[262144];
    char err[4096];
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

static uint64_t jint(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    if (!json_is_integer(v)) fail_msg("member '%s' is not an integer", k);
    return (uint64_t)json_integer_value(v);
}

static const char *jstr(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    if (!json_is_string(v)) fail_msg("member '%s' is not a string", k);
    return json_string_value(v);
}

/* The table with this alias in a "tables" array, or a failed test. */
static const json_t *jtable(const json_t *snap, const char *alias)
{
    const json_t *tables = json_object_get(snap, "tables");
    assert_true(json_is_array(tables));
    size_t i;
    const json_t *t;
    json_array_foreach(tables, i, t) if (!strcmp(jstr(t, "alias"), alias)) return t;
    fail_msg("no table '%s'", alias);
    return NULL;
}

static uint64_t rows_of(const json_t *snap, const char *alias)
{
    return jint(jtable(snap, alias), "row_count");
}

static json_t *snapshot_json(const char *extra)
{
    char args[512];
    snprintf(args, sizeof args, "snapshot --store g --json %s", extra ? extra : "");
    return run_json(args, 0);
}

/* A recursive listing of a directory (path, size, mtime in ns), to prove nothing changed. */
static char *g_listing;
static size_t g_listing_len, g_listing_cap;
static int g_dir_times = 1; /* 0: a directory's mtime is left out (see test_bad_line) */

static int list_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)flag;
    (void)ftw;
    char line[1024];
    int n;
    if (S_ISDIR(st->st_mode) && !g_dir_times)
        n = snprintf(line, sizeof line, "%s/\n", path);
    else
        n = snprintf(line, sizeof line, "%s %lld %lld.%09ld\n", path, (long long)st->st_size,
                     (long long)st->st_mtim.tv_sec, st->st_mtim.tv_nsec);
    if (g_listing_len + (size_t)n + 1 > g_listing_cap) {
        g_listing_cap = (g_listing_cap + (size_t)n + 1) * 2;
        g_listing = realloc(g_listing, g_listing_cap);
        assert_non_null(g_listing);
    }
    memcpy(g_listing + g_listing_len, line, (size_t)n + 1);
    g_listing_len += (size_t)n;
    return 0;
}

/* root: absolute, or relative to the scratch directory (where the CLI runs). */
static char *listing(const char *root)
{
    char path[768];
    if (root[0] == '/')
        snprintf(path, sizeof path, "%s", root);
    else
        snprintf(path, sizeof path, "%s/%s", g_dir, root);
    g_listing = NULL;
    g_listing_len = g_listing_cap = 0;
    assert_int_equal(nftw(path, list_one, 16, FTW_PHYS), 0);
    return g_listing;
}

/* The JSONL the tests load: 3 people, 1 company, 2 Knows edges, 1 WorksAt edge. */
static const char *const DATA1 =
    "{\"type\":\"Person\",\"data\":{\"name\":\"Alice\",\"age\":30,\"email\":\"alice@example.com\","
    "\"status\":\"active\"}}\n"
    "{\"type\":\"Person\",\"data\":{\"name\":\"Bob\",\"age\":25}}\n"
    "\n"
    "{\"type\":\"Person\",\"data\":{\"name\":\"Carol\"}}\n"
    "{\"type\":\"Company\",\"data\":{\"name\":\"Acme\",\"size\":50}}\n"
    "{\"edge\":\"Knows\",\"from\":\"Alice\",\"to\":\"Bob\",\"data\":{\"since\":\"2020-01-02\"}}\n"
    "{\"edge\":\"Knows\",\"from\":\"Bob\",\"to\":\"Carol\"}\n"
    "{\"edge\":\"WorksAt\",\"from\":\"Alice\",\"to\":\"Acme\",\"data\":{\"role\":\"CTO\"}}\n";

static void init_graph(void)
{
    char args[1024], out[4096], err[4096];
    snprintf(args, sizeof args, "init --schema '%s' g", g_schema);
    int ex = run(args, out, sizeof out, err, sizeof err);
    if (ex != 0) fail_msg("init exited %d: %s", ex, err);
}

static int setup(void **state)
{
    (void)state;
    test_sandbox_new(g_dir, sizeof g_dir, "cli-graph");
    g_dir_times = 1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    test_sandbox_done(g_dir);
    return 0;
}

/* ---- CLI tests ---------------------------------------------------------------------------- */

static void test_init(void **state)
{
    (void)state;
    char args[1024], out[4096], err[4096];
    snprintf(args, sizeof args, "init --schema '%s' g", g_schema);
    assert_int_equal(run(args, out, sizeof out, err, sizeof err), 0);
    assert_non_null(strstr(out, "initialized g (2 node types, 2 edge types; commit "));
    assert_null(strstr(out, "took over"));
    /* A second init refuses: the graph already exists, and nothing changed. */
    char *before = listing("g");
    assert_int_equal(run(args, out, sizeof out, err, sizeof err), 1);
    assert_non_null(strstr(err, "already"));
    assert_non_null(strstr(err, "error[exists]"));
    snprintf(args, sizeof args, "init --json --schema '%s' g", g_schema);
    json_t *j = run_json(args, 1);
    assert_string_equal(jstr(json_object_get(j, "error"), "code"), "exists");
    json_decref(j);
    char *after = listing("g");
    assert_string_equal(before, after);
    free(before);
    free(after);

    /* --json on a fresh root; the genesis is the head and the only commit. */
    snprintf(args, sizeof args, "init --json --schema '%s' g2", g_schema);
    j = run_json(args, 0);
    assert_true(json_is_true(json_object_get(j, "ok")));
    assert_int_equal(jint(j, "node_types"), 2);
    assert_int_equal(jint(j, "edge_types"), 2);
    assert_true(json_is_false(json_object_get(j, "took_over")));
    char genesis[32];
    snprintf(genesis, sizeof genesis, "%s", jstr(j, "commit_id"));
    assert_int_equal(strlen(genesis), OG_ID_LEN);
    json_decref(j);
    j = run_json("snapshot g2 --json", 0);
    assert_string_equal(jstr(j, "head_commit"), genesis);
    assert_int_equal(jint(j, "manifest_version"), 1);
    assert_int_equal(json_array_size(json_object_get(j, "tables")), 4);
    assert_int_equal(rows_of(j, "node:Person"), 0);
    json_decref(j);

    /* An init that dies before its genesis commit leaves no graph; the next init takes the
     * root over and says so. */
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && OG_FAILPOINTS='init.pre_manifest=exit(3)' %s init --schema '%s' g4 "
             ">/dev/null 2>&1",
             g_dir, g_bin, g_schema);
    int st = system(cmd);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 3);
    assert_int_equal(run("snapshot g4", out, sizeof out, err, sizeof err), 1);
    assert_non_null(strstr(err, "did not finish"));
    snprintf(args, sizeof args, "init --schema '%s' g4", g_schema);
    assert_int_equal(run(args, out, sizeof out, err, sizeof err), 0);
    assert_non_null(strstr(out, "took over an interrupted init"));
    assert_non_null(strstr(out, "initialized g4 (2 node types, 2 edge types; commit "));
    j = run_json("snapshot --json g4", 0);
    assert_int_equal(jint(j, "manifest_version"), 1);
    json_decref(j);

    /* A schema with an error: located, exit 1, no graph. */
    write_text("bad.pg", "node Person {\n  name: Strin @key\n}\n");
    assert_int_equal(run("init --schema bad.pg g3", out, sizeof out, err, sizeof err), 1);
    assert_non_null(strstr(err, "bad.pg:2"));
    assert_int_equal(run("snapshot g3", out, sizeof out, err, sizeof err), 1);
    assert_non_null(strstr(err, "not_found"));
}

static void test_load_modes(void **state)
{
    (void)state;
    char out[8192], err[8192];
    init_graph();
    write_text("d1.jsonl", DATA1);

    /* overwrite: the human line, then the same counts in the snapshot. */
    assert_int_equal(
        run("load --data d1.jsonl --mode overwrite --store g", out, sizeof out, err, sizeof err),
        0);
    assert_non_null(strstr(out, "loaded g on branch main with overwrite: 7 entities across 2 node "
                                "types and 2 edge types (commit "));
    json_t *s = snapshot_json(NULL);
    assert_int_equal(jint(s, "manifest_version"), 2);
    assert_int_equal(rows_of(s, "node:Person"), 3);
    assert_int_equal(rows_of(s, "node:Company"), 1);
    assert_int_equal(rows_of(s, "edge:Knows"), 2);
    assert_int_equal(rows_of(s, "edge:WorksAt"), 1);
    uint64_t person_v = jint(jtable(s, "node:Person"), "version");
    assert_true(person_v >= 2);
    json_decref(s);

    /* append (root given positionally): one new person; --json carries the table versions. */
    write_text("d2.jsonl", "{\"type\":\"Person\",\"data\":{\"name\":\"Dan\",\"age\":41}}\n");
    json_t *l = run_json("load --json --data d2.jsonl --mode append g", 0);
    assert_true(json_is_true(json_object_get(l, "ok")));
    assert_string_equal(jstr(l, "mode"), "append");
    assert_string_equal(jstr(l, "branch"), "main");
    assert_int_equal(jint(l, "nodes"), 1);
    assert_int_equal(jint(l, "edges"), 0);
    assert_int_equal(jint(l, "lines"), 1);
    assert_int_equal(jint(l, "node_types"), 1);
    assert_int_equal(jint(l, "manifest_version"), 3);
    const json_t *pt = jtable(l, "node:Person");
    assert_int_equal(jint(pt, "from_version"), person_v);
    assert_int_equal(jint(pt, "to_version"), person_v + 1);
    assert_int_equal(jint(pt, "row_count"), 4);
    char append_commit[32];
    snprintf(append_commit, sizeof append_commit, "%s", jstr(l, "commit_id"));
    json_decref(l);
    s = snapshot_json(NULL);
    assert_string_equal(jstr(s, "head_commit"), append_commit);
    assert_int_equal(rows_of(s, "node:Person"), 4);
    assert_int_equal(jint(jtable(s, "node:Person"), "version"), person_v + 1);
    assert_int_equal(rows_of(s, "edge:Knows"), 2); /* untouched */
    json_decref(s);

    /* append of an existing key: key_conflict, exit 1, nothing written. */
    write_text("dup.jsonl", "{\"type\":\"Person\",\"data\":{\"name\":\"Alice\"}}\n");
    assert_int_equal(
        run("load --data dup.jsonl --mode append --store g", out, sizeof out, err, sizeof err), 1);
    assert_non_null(strstr(err, "key_conflict"));
    s = snapshot_json(NULL);
    assert_int_equal(jint(s, "manifest_version"), 3);
    json_decref(s);

    /* merge: one update, one insert. */
    write_text("d3.jsonl", "{\"type\":\"Person\",\"data\":{\"name\":\"Alice\",\"age\":31}}\n"
                           "{\"type\":\"Person\",\"data\":{\"name\":\"Eve\"}}\n");
    assert_int_equal(
        run("load --data d3.jsonl --mode merge --store g", out, sizeof out, err, sizeof err), 0);
    assert_non_null(strstr(out, "with merge: 2 entities across 1 node types and 0 edge types"));
    s = snapshot_json(NULL);
    assert_int_equal(jint(s, "manifest_version"), 4);
    assert_int_equal(rows_of(s, "node:Person"), 5);
    json_decref(s);

    /* overwrite of Person only: Person is replaced, the other types are kept. */
    write_text("d4.jsonl", "{\"type\":\"Person\",\"data\":{\"name\":\"Alice\"}}\n"
                           "{\"type\":\"Person\",\"data\":{\"name\":\"Bob\"}}\n"
                           "{\"type\":\"Person\",\"data\":{\"name\":\"Carol\"}}\n");
    assert_int_equal(
        run("load --data d4.jsonl --mode overwrite --store g", out, sizeof out, err, sizeof err),
        0);
    s = snapshot_json(NULL);
    assert_int_equal(jint(s, "manifest_version"), 5);
    assert_int_equal(rows_of(s, "node:Person"), 3);
    assert_int_equal(rows_of(s, "node:Company"), 1);
    json_decref(s);

    /* The lineage: genesis + 4 loads, newest first, each the parent of the next. */
    json_t *c = run_json("commit list --store g --json", 0);
    const json_t *arr = json_object_get(c, "commits");
    assert_int_equal(json_array_size(arr), 5);
    for (size_t i = 0; i < 5; i++) {
        const json_t *ci = json_array_get(arr, i);
        assert_int_equal(jint(ci, "manifest_version"), 5 - i);
        assert_string_equal(jstr(ci, "branch"), "main");
        assert_true(jint(ci, "created_at_us") > 0);
        if (i + 1 < 5)
            assert_string_equal(jstr(ci, "parent"), jstr(json_array_get(arr, i + 1), "id"));
        else
            assert_true(json_is_null(json_object_get(ci, "parent")));
    }
    assert_string_equal(jstr(json_array_get(arr, 2), "id"), append_commit);
    json_decref(c);
    assert_int_equal(run("commit list g", out, sizeof out, err, sizeof err), 0);
    assert_non_null(strstr(out, append_commit));
    assert_non_null(strstr(out, "(5 commits)"));

    /* Time travel: --at a manifest version, a commit id, an 8-character prefix. */
    s = snapshot_json("--at 2");
    assert_int_equal(jint(s, "manifest_version"), 2);
    assert_int_equal(rows_of(s, "node:Person"), 3);
    json_decref(s);
    char extra[64];
    snprintf(extra, sizeof extra, "--at %s", append_commit);
    s = snapshot_json(extra);
    assert_int_equal(jint(s, "manifest_version"), 3);
    assert_int_equal(rows_of(s, "node:Person"), 4);
    json_decref(s);
    assert_int_equal(run("snapshot --store g --at 99", out, sizeof out, err, sizeof err), 1);
    assert_non_null(strstr(err, "not_found"));

    /* commit show by full id and by a prefix: the commit and its tables. */
    char args[256];
    snprintf(args, sizeof args, "commit show %s --store g --json", append_commit);
    json_t *cs = run_json(args, 0);
    const json_t *commit = json_object_get(cs, "commit");
    assert_string_equal(jstr(commit, "id"), append_commit);
    assert_int_equal(jint(commit, "manifest_version"), 3);
    assert_int_equal(rows_of(cs, "node:Person"), 4);
    json_decref(cs);
    char prefix[32];
    snprintf(prefix, sizeof prefix, "%s", append_commit);
    /* the shortest prefix that is unique in this lineage (ULIDs share their time part) */
    json_t *all = run_json("commit list --store g --json", 0);
    size_t plen = 4;
    for (; plen < OG_ID_LEN; plen++) {
        size_t hits = 0, i;
        const json_t *ci;
        json_array_foreach(json_object_get(all, "commits"), i,
                           ci) if (!strncmp(jstr(ci, "id"), append_commit, plen)) hits++;
        if (hits == 1) break;
    }
    json_decref(all);
    prefix[plen] = '\0';
    snprintf(args, sizeof args, "commit show %s g", prefix);
    assert_int_equal(run(args, out, sizeof out, err, sizeof err), 0);
    assert_non_null(strstr(out, append_commit));
    assert_non_null(strstr(out, "manifest version  3"));
    assert_int_equal(run("commit show ZZZZZZZZ g", out, sizeof out, err, sizeof err), 1);
    assert_non_null(strstr(err, "not_found"));

    /* The text snapshot: an aligned table with a header. */
    assert_int_equal(run("snapshot g", out, sizeof out, err, sizeof err), 0);
    assert_non_null(strstr(out, "manifest version  5"));
    assert_non_null(strstr(out, "table"));
    assert_non_null(strstr(out, "node:Person"));
}

static void test_bad_line(void **state)
{
    (void)state;
    char out[8192], err[8192];
    init_graph();
    write_text("d1.jsonl", DATA1);
    assert_int_equal(
        run("load --data d1.jsonl --mode overwrite g", out, sizeof out, err, sizeof err), 0);
    json_t *s0 = snapshot_json(NULL);
    /* A read-write open probes the filesystem with a temporary in the root (created and
     * removed: the root's mtime moves), so here directories are compared by name only;
     * every file keeps its size and mtime. */
    g_dir_times = 0;
    char *before = listing("g");

    /* Line 3 names a property Person does not have. */
    write_text("bad.jsonl", "{\"type\":\"Person\",\"data\":{\"name\":\"Zed\"}}\n"
                            "{\"type\":\"Company\",\"data\":{\"name\":\"Initech\"}}\n"
                            "{\"type\":\"Person\",\"data\":{\"name\":\"Yan\",\"shoe\":42}}\n");
    assert_int_equal(
        run("load --data bad.jsonl --mode append --store g", out, sizeof out, err, sizeof err), 1);
    assert_non_null(strstr(err, "bad.jsonl:3: "));
    assert_non_null(strstr(err, "shoe"));
    assert_null(strstr(err, "bad.jsonl:3: line 3")); /* the location is not said twice */
    /* --json: the error object carries file and line. */
    json_t *j = run_json("load --json --data bad.jsonl --mode append --store g", 1);
    const json_t *e = json_object_get(j, "error");
    assert_string_equal(jstr(e, "code"), "bad_request");
    assert_string_equal(jstr(e, "file"), "bad.jsonl");
    assert_int_equal(jint(e, "line"), 3);
    json_decref(j);
    /* Not JSON at all on line 2. */
    write_text("bad2.jsonl", "{\"type\":\"Person\",\"data\":{\"name\":\"Zed\"}}\n{oops\n");
    assert_int_equal(
        run("load --data bad2.jsonl --mode merge --store g", out, sizeof out, err, sizeof err), 1);
    assert_non_null(strstr(err, "bad2.jsonl:2:"));
    /* An edge to a node that does not exist (found by validation, not parsing). */
    write_text("bad3.jsonl", "{\"edge\":\"Knows\",\"from\":\"Alice\",\"to\":\"Nobody\"}\n");
    assert_int_equal(
        run("load --data bad3.jsonl --mode append --store g", out, sizeof out, err, sizeof err), 1);
    assert_non_null(strstr(err, "bad3.jsonl:1"));

    json_t *s1 = snapshot_json(NULL);
    assert_int_equal(jint(s1, "manifest_version"), jint(s0, "manifest_version"));
    assert_string_equal(jstr(s1, "head_commit"), jstr(s0, "head_commit"));
    assert_int_equal(rows_of(s1, "node:Person"), 3);
    json_decref(s0);
    json_decref(s1);
    /* Not a single byte of the graph changed (a failed load leaves no files behind). */
    char *after = listing("g");
    g_dir_times = 1;
    assert_string_equal(before, after);
    free(before);
    free(after);
}

static void test_readonly_inspection_writes_nothing(void **state)
{
    (void)state;
    char out[65536], err[8192];
    init_graph();
    write_text("d1.jsonl", DATA1);
    assert_int_equal(
        run("load --data d1.jsonl --mode overwrite g", out, sizeof out, err, sizeof err), 0);
    char *before = listing("g");
    assert_int_equal(run("snapshot --store g", out, sizeof out, err, sizeof err), 0);
    assert_int_equal(run("snapshot --store g --json --at 1", out, sizeof out, err, sizeof err), 0);
    assert_int_equal(run("commit list --store g", out, sizeof out, err, sizeof err), 0);
    assert_int_equal(run("commit show 2 --store g --json", out, sizeof out, err, sizeof err), 0);
    char *after = listing("g");
    assert_string_equal(before, after);
    free(before);
    free(after);
    /* ... and it works on a root the user cannot write (unless we are root, who can). */
    char path[512];
    snprintf(path, sizeof path, "%s/g", g_dir);
    assert_int_equal(chmod(path, 0555), 0);
    assert_int_equal(run("snapshot --store g --json", out, sizeof out, err, sizeof err), 0);
    assert_int_equal(chmod(path, 0755), 0);
}

static char *read_all(const char *path, size_t *len);

/* schema show prints the accepted .pg (the file init was given, byte for byte), --json adds
 * its identity and the catalog's stable ids, --at/--branch resolve like query's, and schema
 * plan --store plans against it; neither writes anything. */
static void test_schema_show_and_plan(void **state)
{
    (void)state;
    static char out[262144];
    char err[8192];
    init_graph();
    write_text("d1.jsonl", DATA1);
    assert_int_equal(run("load --data d1.jsonl --mode append g", out, sizeof out, err, sizeof err),
                     0);
    char *before = listing("g");
    assert_int_equal(run("schema show --store g", out, sizeof out, err, sizeof err), 0);
    size_t len = 0;
    char *pg = read_all(g_schema, &len);
    assert_non_null(pg);
    assert_int_equal(strncmp(out, pg, len), 0);
    json_t *j = run_json("schema show g --json --at 1", 0);
    assert_int_equal(strlen(jstr(j, "identity")), 32);
    assert_string_equal(jstr(j, "branch"), "main");
    assert_int_equal(strcmp(jstr(j, "source"), pg), 0);
    const json_t *types = json_object_get(json_object_get(j, "catalog"), "types");
    assert_true(json_array_size(types) > 0);
    assert_int_equal(strlen(jstr(json_array_get(types, 0), "id")), 16);
    json_decref(j);
    free(pg);
    j = run_json("schema show --store g --at 99 --json", 1);
    assert_string_equal(jstr(json_object_get(j, "error"), "code"), "not_found");
    json_decref(j);
    j = run_json("schema show --store g --branch nope --json", 1);
    assert_string_equal(jstr(json_object_get(j, "error"), "code"), "not_found");
    json_decref(j);
    /* plan against the graph: the same schema plus one type */
    char args[1024];
    snprintf(args, sizeof args, "schema plan --schema '%s' --store g --json", g_schema);
    j = run_json(args, 0);
    assert_true(json_is_true(json_object_get(j, "supported")));
    assert_int_equal(json_array_size(json_object_get(j, "steps")), 0);
    json_decref(j);
    pg = read_all(g_schema, &len);
    char *more = malloc(len + 64);
    memcpy(more, pg, len);
    strcpy(more + len, "\nnode Pet { name: String @key }\n");
    write_text("more.pg", more);
    free(more);
    free(pg);
    j = run_json("schema plan --schema more.pg --store g --json", 0);
    const json_t *steps = json_object_get(j, "steps");
    assert_int_equal(json_array_size(steps), 1);
    assert_string_equal(jstr(json_array_get(steps, 0), "kind"), "add_type");
    assert_string_equal(jstr(json_array_get(steps, 0), "entity"), "Pet");
    json_decref(j);
    char *after = listing("g");
    assert_string_equal(before, after);
    free(before);
    free(after);
    /* apply: existing data that breaks an added constraint is listed, nothing changes */
    pg = read_all(g_schema, &len);
    char *at = strstr(pg, "node Person {");
    assert_non_null(at);
    at += strlen("node Person {");
    char *ranged = malloc(len + 64);
    snprintf(ranged, len + 64, "%.*s\n    @range(age, 0..26)%s", (int)(at - pg), pg, at);
    write_text("ranged.pg", ranged);
    free(ranged);
    free(pg);
    g_dir_times = 0; /* a read-write open's lock files come and go in the root */
    before = listing("g");
    j = run_json("schema apply --schema ranged.pg --store g --json", 1);
    assert_string_equal(jstr(json_object_get(j, "error"), "code"), "bad_request");
    const json_t *viol = json_object_get(j, "violations");
    assert_int_equal(json_array_size(viol), 1);
    assert_string_equal(jstr(json_array_get(viol, 0), "kind"), "value_constraint_violation");
    assert_string_equal(jstr(json_array_get(viol, 0), "type"), "Person");
    json_decref(j);
    assert_int_equal(
        run("schema apply --schema ranged.pg --store g", out, sizeof out, err, sizeof err), 1);
    assert_non_null(strstr(err, "value_constraint_violation"));
    after = listing("g");
    assert_string_equal(before, after);
    free(before);
    free(after);
    g_dir_times = 1;
    /* apply: the plan with one more type, once; then nothing to do */
    j = run_json("schema apply --schema more.pg --store g --json", 0);
    assert_true(json_is_true(json_object_get(j, "applied")));
    assert_int_equal(json_integer_value(json_object_get(j, "tables_created")), 1);
    assert_int_equal(json_integer_value(json_object_get(j, "tables_rewritten")), 0);
    assert_int_equal(strlen(jstr(j, "commit")), 26);
    json_decref(j);
    j = run_json("schema apply --schema more.pg --store g --json", 0);
    assert_true(json_is_false(json_object_get(j, "applied")));
    json_decref(j);
    assert_int_equal(run("schema show --store g", out, sizeof out, err, sizeof err), 0);
    assert_non_null(strstr(out, "node Pet"));
    assert_int_equal(run("schema apply --store g", out, sizeof out, err, sizeof err), 2);
    assert_int_equal(run("schema show", out, sizeof out, err, sizeof err), 2);
    assert_int_equal(run("schema plan --schema more.pg --store g --from more.pg", out, sizeof out,
                         err, sizeof err),
                     2);
}

static void test_usage(void **state)
{
    (void)state;
    char out[4096], err[4096];
    assert_int_equal(run("init g", out, sizeof out, err, sizeof err), 2);
    assert_int_equal(run("init --schema x.pg", out, sizeof out, err, sizeof err), 2);
    assert_int_equal(run("load --data x.jsonl g", out, sizeof out, err, sizeof err), 2);
    assert_non_null(strstr(err, "--mode"));
    assert_int_equal(run("load --data x.jsonl --mode upsert g", out, sizeof out, err, sizeof err),
                     2);
    assert_int_equal(run("load --mode merge g", out, sizeof out, err, sizeof err), 2);
    assert_int_equal(
        run("load --data x --mode merge --store g h", out, sizeof out, err, sizeof err), 2);
    assert_int_equal(run("snapshot", out, sizeof out, err, sizeof err), 2);
    assert_int_equal(run("snapshot --bogus g", out, sizeof out, err, sizeof err), 2);
    assert_int_equal(run("commit", out, sizeof out, err, sizeof err), 2);
    assert_int_equal(run("commit frob g", out, sizeof out, err, sizeof err), 2);
    assert_int_equal(run("commit show --store g", out, sizeof out, err, sizeof err), 2);
    assert_int_equal(run("--help", out, sizeof out, err, sizeof err), 0);
    assert_non_null(strstr(out, "5 recovery required"));
    assert_non_null(strstr(out, "snapshot"));
    /* No graph there: exit 1, not_found; and the missing root is not created. */
    assert_int_equal(run("snapshot --store nope", out, sizeof out, err, sizeof err), 1);
    assert_non_null(strstr(err, "not_found"));
    write_text("x.jsonl", "\n");
    assert_int_equal(run("load --data x.jsonl --mode merge nope", out, sizeof out, err, sizeof err),
                     1);
    struct stat st;
    char path[512];
    snprintf(path, sizeof path, "%s/nope", g_dir);
    assert_int_equal(stat(path, &st), -1);
}

/* The listing without the store's own files (lock files appear when a command takes one). */
static char *listing_data(const char *root)
{
    char *l = listing(root), *w = l;
    for (char *line = l; *line;) {
        char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) + 1 : strlen(line);
        if (!memmem(line, len, "/.og-", 5)) {
            memmove(w, line, len);
            w += len;
        }
        line += len;
    }
    *w = '\0';
    return l;
}

/* optimize and cleanup through the CLI. optimize compacts every table to one fragment in one
 * maintenance commit without changing content; cleanup --keep N leaves exactly the newest N
 * commits readable (commit list still shows all), refuses --at on an expired one with a
 * message naming cleanup, removes nothing with --dry-run, and is idempotent. */
static void test_optimize_and_cleanup(void **state)
{
    (void)state;
    char out[65536], err[8192], args[512];
    init_graph();
    write_text("d1.jsonl", DATA1);
    assert_int_equal(run("load --data d1.jsonl --mode overwrite --store g", NULL, 0, NULL, 0), 0);
    for (int i = 0; i < 12; i++) {
        char line[128];
        snprintf(line, sizeof line, "{\"type\":\"Person\",\"data\":{\"name\":\"P%d\"}}\n", i);
        write_text("dn.jsonl", line);
        assert_int_equal(run("load --data dn.jsonl --mode append --store g", NULL, 0, NULL, 0), 0);
    }
    json_t *s0 = snapshot_json(NULL);
    assert_int_equal(rows_of(s0, "node:Person"), 15);

    json_t *o = run_json("optimize --store g --json", 0);
    assert_true(json_is_string(json_object_get(o, "commit_id")));
    assert_true(jint(o, "tables_compacted") >= 1);
    assert_true(jint(o, "fragments_after") < jint(o, "fragments_before"));
    assert_int_equal(jint(o, "fragments_after"), 4); /* one per table */
    /* the manifest: its commit rows, and the rest (graph.h, "Manifest compaction") */
    assert_int_equal(jint(o, "manifest_fragments_after"), 2);
    json_decref(o);
    json_t *s1 = snapshot_json(NULL);
    const char *aliases[] = {"node:Person", "node:Company", "edge:Knows", "edge:WorksAt"};
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(rows_of(s1, aliases[i]), rows_of(s0, aliases[i]));
    json_decref(s1);
    json_decref(s0);
    /* nothing left to do: no commit */
    o = run_json("optimize --store g --json", 0);
    assert_true(json_is_null(json_object_get(o, "commit_id")));
    json_decref(o);

    json_t *cl = run_json("commit list --store g --json", 0);
    json_t *commits = json_object_get(cl, "commits");
    size_t n = json_array_size(commits);
    assert_true(n >= 15);
    char third[64], fourth[64];
    snprintf(third, sizeof third, "%s", jstr(json_array_get(commits, 2), "id"));
    snprintf(fourth, sizeof fourth, "%s", jstr(json_array_get(commits, 3), "id"));
    json_decref(cl);

    g_dir_times = 0; /* opening read-write makes the store's own temporaries in the root */
    char *before = listing_data("g");
    json_t *dry = run_json("cleanup --store g --keep 3 --dry-run --json", 0);
    assert_true(json_is_true(json_object_get(dry, "dry_run")));
    assert_int_equal(jint(dry, "commits_total"), n);
    assert_int_equal(jint(dry, "commits_retained"), 3);
    uint64_t would = jint(dry, "versions_removed");
    assert_true(would > 0);
    char *after = listing_data("g");
    assert_string_equal(before, after); /* a dry run deletes nothing */
    free(before);
    free(after);
    g_dir_times = 1;
    json_decref(dry);

    json_t *c = run_json("cleanup --store g --keep 3 --json", 0);
    assert_int_equal(jint(c, "commits_retained"), 3);
    assert_int_equal(jint(c, "versions_removed"), would);
    assert_true(jint(c, "files_removed") >= would);
    assert_true(jint(c, "bytes_removed") > 0);
    assert_string_equal(jstr(c, "oldest_retained"), third);
    json_decref(c);

    cl = run_json("commit list --store g --json", 0);
    assert_int_equal(json_array_size(json_object_get(cl, "commits")), n);
    json_decref(cl);
    snprintf(args, sizeof args, "snapshot --store g --at %s", third);
    assert_int_equal(run(args, out, sizeof out, err, sizeof err), 0);
    snprintf(args, sizeof args, "snapshot --store g --at %s", fourth);
    assert_int_equal(run(args, out, sizeof out, err, sizeof err), 1);
    assert_non_null(strstr(err, "cleanup removed"));
    s1 = snapshot_json(NULL);
    assert_int_equal(rows_of(s1, "node:Person"), 15);
    json_decref(s1);

    /* idempotent; an age rule that keeps everything removes nothing, and cannot bring back
     * what is gone: 3 commits are still readable */
    c = run_json("cleanup --store g --keep 3 --json", 0);
    assert_int_equal(jint(c, "versions_removed"), 0);
    json_decref(c);
    c = run_json("cleanup --store g --older-than 1w --json", 0);
    assert_int_equal(jint(c, "versions_removed"), 0);
    assert_int_equal(jint(c, "commits_retained"), 3);
    assert_string_equal(jstr(c, "oldest_retained"), third);
    json_decref(c);
    /* the human form */
    assert_int_equal(run("cleanup --store g --keep 2", out, sizeof out, err, sizeof err), 0);
    assert_non_null(strstr(out, "kept 2 of "));
    assert_non_null(strstr(out, "removed "));

    /* usage: a rule is required, and must be well formed */
    assert_int_equal(run("cleanup --store g", NULL, 0, NULL, 0), 2);
    assert_int_equal(run("cleanup --store g --keep 0", NULL, 0, NULL, 0), 2);
    assert_int_equal(run("cleanup --store g --keep -3", NULL, 0, NULL, 0), 2);
    assert_int_equal(run("cleanup --store g --older-than 5x", NULL, 0, NULL, 0), 2);
    assert_int_equal(run("cleanup --store g --older-than 5", NULL, 0, NULL, 0), 2);
    assert_int_equal(run("optimize --store g --branch dev", NULL, 0, NULL, 0), 1);
}

/* ---- C API -------------------------------------------------------------------------------- */

typedef struct progress_seen {
    int parse, write;
    uint64_t last_lines;
} progress_seen;

static void on_progress(void *arg, int phase, uint64_t done, uint64_t total, uint64_t lines)
{
    progress_seen *p = arg;
    assert_true(done <= total);
    if (phase == OG_LOAD_PHASE_PARSE) p->parse++;
    if (phase == OG_LOAD_PHASE_WRITE) p->write++;
    p->last_lines = lines;
}

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    buf[n] = '\0';
    *len = (size_t)n;
    return buf;
}

static void test_api(void **state)
{
    (void)state;
    char root[512];
    snprintf(root, sizeof root, "%s/api/graph", g_dir); /* parents are created too */
    size_t slen;
    char *schema = read_all(g_schema, &slen);

    og_init_options io = OG_INIT_OPTIONS_INIT;
    io.schema_source = schema;
    io.schema_source_len = slen;
    io.schema_file = "social.pg";
    og_init_result *ir = NULL;
    assert_og_ok(og_root_init(&ir, root, &io));
    assert_int_equal(ir->node_types, 2);
    assert_int_equal(ir->edge_types, 2);
    assert_int_equal(strlen(ir->commit_id), OG_ID_LEN);
    assert_int_equal(ir->took_over, 0);
    char genesis[OG_ID_LEN + 1];
    memcpy(genesis, ir->commit_id, sizeof genesis);
    og_init_result_free(ir);
    assert_og_error(og_root_init(&ir, root, &io), OG_E_EXISTS);
    assert_non_null(strstr(og_error_last()->message, "already"));
    assert_null(ir);
    /* The schema is required; options of an unknown version are refused. */
    char other[512];
    snprintf(other, sizeof other, "%s/api/other", g_dir);
    assert_og_error(og_root_init(&ir, other, NULL), OG_E_BAD_REQUEST);
    og_init_options none;
    assert_og_ok(og_init_options_init(&none, OG_INIT_OPTIONS_VERSION));
    assert_null(none.schema_source);
    assert_og_error(og_root_init(&ir, other, &none), OG_E_BAD_REQUEST);
    io.version = 2;
    assert_og_error(og_root_init(&ir, other, &io), OG_E_BAD_REQUEST);
    assert_null(ir);
    free(schema);

    og_graph *g = NULL;
    og_open_options oo = OG_OPEN_OPTIONS_INIT;
    oo.actor = "tester";
    assert_og_ok(og_graph_open(&g, root, &oo));

    og_load_options lo = OG_LOAD_OPTIONS_INIT;
    og_write_result *lr = NULL;
    /* the mode is required */
    assert_og_error(og_graph_load(&lr, g, "d.jsonl", DATA1, strlen(DATA1), &lo), OG_E_BAD_REQUEST);
    lo.branch = "dev";
    lo.mode = OG_LOAD_MERGE;
    /* a branch that does not exist (og_graph_create_branch makes one) */
    assert_og_error(og_graph_load(&lr, g, "d.jsonl", DATA1, strlen(DATA1), &lo), OG_E_NOT_FOUND);
    lo.branch = NULL;
    lo.mode = OG_LOAD_OVERWRITE;
    progress_seen ps = {0, 0, 0};
    lo.progress = on_progress;
    lo.progress_arg = &ps;
    assert_og_ok(og_graph_load(&lr, g, "d.jsonl", DATA1, strlen(DATA1), &lo));
    assert_int_equal(ps.write, 1);
    assert_int_equal(ps.last_lines, 8);
    assert_int_equal(og_write_result_count(lr, OG_WRITE_NODES), 4);
    assert_int_equal(og_write_result_count(lr, OG_WRITE_EDGES), 3);
    assert_int_equal(og_write_result_count(lr, OG_WRITE_LINES), 8);
    assert_int_equal(og_write_result_count(lr, OG_WRITE_NODE_TYPES), 2);
    assert_int_equal(og_write_result_count(lr, OG_WRITE_EDGE_TYPES), 2);
    assert_int_equal(og_write_result_count(lr, OG_WRITE_NODES_INSERTED), 0); /* a mutation's */
    assert_int_equal(og_write_result_count(lr, 0), 0);                       /* no such count */
    assert_int_equal(og_write_result_count(lr, 1000), 0);
    assert_int_equal(og_write_result_manifest_version(lr), 2);
    assert_int_equal(strlen(og_write_result_commit_id(lr)), OG_ID_LEN);
    assert_int_equal(strlen(og_write_result_operation_id(lr)), OG_ID_LEN);
    assert_string_equal(og_write_result_query_name(lr), "");
    assert_int_equal(og_write_result_table_count(lr), 4);
    assert_null(og_write_result_table(lr, 4));
    char first_load[OG_ID_LEN + 1];
    memcpy(first_load, og_write_result_commit_id(lr), sizeof first_load);
    og_write_result_free(lr);

    lo.progress = NULL;
    lo.mode = OG_LOAD_APPEND;
    const char *more = "{\"type\":\"Company\",\"data\":{\"name\":\"Globex\"}}\n";
    assert_og_ok(og_graph_load(&lr, g, "more.jsonl", more, strlen(more), &lo));
    assert_int_equal(og_write_result_manifest_version(lr), 3);
    assert_int_equal(og_write_result_table_count(lr), 1);
    const og_table_change *tc = og_write_result_table(lr, 0);
    assert_string_equal(tc->alias, "node:Company");
    assert_int_equal(tc->row_count, 2);
    assert_int_equal(tc->to_version, tc->from_version + 1);
    char second_load[OG_ID_LEN + 1];
    memcpy(second_load, og_write_result_commit_id(lr), sizeof second_load);
    og_write_result_free(lr);
    /* a bad line: located, nothing committed, no result */
    const char *bad = "{\"type\":\"Company\",\"data\":{\"name\":\"Hooli\"}}\n{\"type\":\"Nope\"}\n";
    assert_og_error(og_graph_load(&lr, g, "bad.jsonl", bad, strlen(bad), &lo), OG_E_BAD_REQUEST);
    assert_string_equal(og_error_last()->file, "bad.jsonl");
    assert_int_equal(og_error_last()->line, 2);
    assert_null(lr);

    og_snapshot_info *si = NULL;
    assert_og_ok(og_graph_snapshot(&si, g, NULL));
    assert_int_equal(si->manifest_version, 3);
    assert_string_equal(si->branch, "main");
    assert_string_equal(si->head_commit, second_load);
    assert_int_equal(og_snapshot_info_table_count(si), 4);
    assert_int_equal(strlen(si->schema_identity), OG_SCHEMA_ID_LEN);
    assert_null(og_snapshot_info_table(si, og_snapshot_info_table_count(si)));
    for (size_t i = 0; i < og_snapshot_info_table_count(si); i++) {
        const og_snapshot_table *t = og_snapshot_info_table(si, i);
        if (!strcmp(t->alias, "node:Company")) {
            assert_int_equal(t->row_count, 2);
            assert_int_equal(t->kind, OG_KIND_NODE);
            assert_string_equal(t->type_name, "Company");
            assert_non_null(strstr(t->path, "nodes/"));
        }
        if (!strcmp(t->alias, "edge:Knows")) assert_int_equal(t->kind, OG_KIND_EDGE);
    }
    char head[OG_ID_LEN + 1];
    memcpy(head, si->head_commit, sizeof head);
    og_snapshot_info_free(si);
    assert_og_ok(og_graph_snapshot(
        &si, g, &(og_snapshot_options){.version = OG_SNAPSHOT_OPTIONS_VERSION, .at = first_load}));
    assert_int_equal(si->manifest_version, 2);
    assert_string_equal(si->head_commit, first_load);
    og_snapshot_info_free(si);
    assert_og_error(
        og_graph_snapshot(
            &si, g, &(og_snapshot_options){.version = OG_SNAPSHOT_OPTIONS_VERSION, .at = "12345"}),
        OG_E_NOT_FOUND);
    assert_null(si);

    og_commit_list *cl = NULL;
    assert_og_ok(og_graph_commits(&cl, g, NULL));
    assert_int_equal(og_commit_list_count(cl), 3);
    const og_commit_info *c0 = og_commit_list_get(cl, 0), *c2 = og_commit_list_get(cl, 2);
    assert_null(og_commit_list_get(cl, 3));
    assert_string_equal(c0->id, head);
    assert_string_equal(og_commit_list_get(cl, 1)->id, first_load);
    assert_string_equal(c0->parent, first_load);
    assert_string_equal(c2->id, genesis);
    assert_string_equal(c2->parent, "");
    assert_non_null(c0->actor);
    assert_string_equal(c0->actor, "tester");
    assert_string_equal(c0->branch, "main");
    assert_true(c0->created_at_us >= c2->created_at_us);
    og_commit_list_free(cl);
    og_commit_info *c = NULL;
    assert_og_ok(og_graph_commit_show(&c, g, "2", NULL));
    assert_string_equal(c->id, first_load);
    og_commit_info_free(c);

    /* Nothing to commit: no commit id, no new manifest version, counted as a no-op. */
    assert_og_ok(og_graph_load(&lr, g, "empty.jsonl", "\n\n", 2, &lo));
    assert_string_equal(og_write_result_commit_id(lr), "");
    assert_string_equal(og_write_result_operation_id(lr), "");
    assert_int_equal(og_write_result_manifest_version(lr), 0);
    assert_int_equal(og_write_result_count(lr, OG_WRITE_LINES), 2);
    assert_int_equal(og_write_result_table_count(lr), 0);
    og_write_result_free(lr);
    assert_og_ok(og_graph_commits(&cl, g, NULL));
    assert_int_equal(og_commit_list_count(cl), 3);
    og_commit_list_free(cl);

    og_graph_stats *st = NULL;
    assert_og_ok(og_graph_stats_get(&st, g));
    assert_int_equal(st->writes, 2);
    assert_int_equal(st->noops, 1);
    assert_int_equal(st->reprepares, 0);
    og_graph_stats_free(st);
    og_graph_close(g);

    /* Read-only: reads work, loads are refused, nothing is written. */
    char *before = listing(root);
    oo.read_only = 1;
    assert_og_ok(og_graph_open(&g, root, &oo));
    assert_og_ok(og_graph_snapshot(&si, g, NULL));
    assert_int_equal(si->manifest_version, 3);
    og_snapshot_info_free(si);
    lo.mode = OG_LOAD_MERGE;
    assert_og_error(og_graph_load(&lr, g, "more.jsonl", more, strlen(more), &lo), OG_E_BAD_REQUEST);
    /* It has no writer: maintenance is refused the same way, and it counts no writes. */
    og_optimize_result *optr = NULL;
    assert_og_error(og_graph_optimize(&optr, g, NULL), OG_E_BAD_REQUEST);
    og_cleanup_options clo = OG_CLEANUP_OPTIONS_INIT;
    clo.keep = 1;
    og_cleanup_result *clr = NULL;
    assert_og_error(og_graph_cleanup(&clr, g, &clo), OG_E_BAD_REQUEST);
    assert_og_ok(og_graph_stats_get(&st, g));
    assert_int_equal(st->writes, 0);
    assert_int_equal(st->noops, 0);
    og_graph_stats_free(st);
    assert_og_ok(og_graph_commits(&cl, g, NULL));
    assert_int_equal(og_commit_list_count(cl), 3);
    og_commit_list_free(cl);
    og_graph_close(g);
    char *after = listing(root);
    assert_string_equal(before, after);
    free(before);
    free(after);

    /* Every free accepts NULL; a missing root is not found (and not created). */
    og_graph_close(NULL);
    og_init_result_free(NULL);
    og_write_result_free(NULL);
    og_snapshot_info_free(NULL);
    og_commit_list_free(NULL);
    og_commit_info_free(NULL);
    og_graph_stats_free(NULL);
    og_optimize_result_free(NULL);
    og_cleanup_result_free(NULL);
    og_selfcheck_result_free(NULL);
    char nope[512];
    snprintf(nope, sizeof nope, "%s/nope", g_dir);
    assert_og_error(og_graph_open(&g, nope, NULL), OG_E_NOT_FOUND);
    assert_null(g);
    struct stat sb;
    assert_int_equal(stat(nope, &sb), -1);
    assert_int_equal(og_load_mode_parse("merge"), OG_LOAD_MERGE);
    assert_int_equal(og_load_mode_parse("upsert"), 0);
    assert_string_equal(og_load_mode_name(OG_LOAD_OVERWRITE), "overwrite");
}

/* A write result lists every table the commit changed, past 64 (the size of the fixed array
 * load and mutate results used to cut at), and their aliases whole. */
static void test_api_many_tables(void **state)
{
    (void)state;
    enum { TYPES = 70 };
    char longname[128];
    memset(longname, 'L', 100);
    longname[100] = '\0';
    size_t cap = 64 * 1024, used = 0;
    char *schema = malloc(cap), *data = malloc(cap);
    assert_non_null(schema);
    assert_non_null(data);
    schema[0] = data[0] = '\0';
    for (int i = 0; i < TYPES; i++) {
        char name[160];
        snprintf(name, sizeof name, "%s%d", i == TYPES - 1 ? longname : "T", i);
        used += (size_t)snprintf(schema + used, cap - used, "node %s { k: String @key }\n", name);
        size_t dl = strlen(data);
        snprintf(data + dl, cap - dl, "{\"type\":\"%s\",\"data\":{\"k\":\"x\"}}\n", name);
    }
    char root[512];
    snprintf(root, sizeof root, "%s/many", g_dir);
    og_init_options io = OG_INIT_OPTIONS_INIT;
    io.schema_source = schema;
    og_init_result *ir = NULL;
    assert_og_ok(og_root_init(&ir, root, &io));
    assert_int_equal(ir->node_types, TYPES);
    og_init_result_free(ir);
    og_graph *g = NULL;
    assert_og_ok(og_graph_open(&g, root, NULL));
    og_load_options lo = OG_LOAD_OPTIONS_INIT;
    lo.mode = OG_LOAD_APPEND;
    og_write_result *r = NULL;
    assert_og_ok(og_graph_load(&r, g, "many.jsonl", data, strlen(data), &lo));
    assert_int_equal(og_write_result_table_count(r), TYPES);
    int found_long = 0;
    for (size_t i = 0; i < TYPES; i++) {
        const og_table_change *t = og_write_result_table(r, i);
        assert_non_null(t);
        assert_int_equal(t->row_count, 1);
        if (strlen(t->alias) > 100 && !strncmp(t->alias + 5, longname, 100)) found_long = 1;
    }
    assert_true(found_long);
    og_write_result_free(r);
    og_graph_close(g);
    free(schema);
    free(data);
}

/* Whether graph branch `name` exists (og_graph_branches). */
static int api_has_branch(og_graph *g, const char *name)
{
    og_branch_list *l = NULL;
    assert_og_ok(og_graph_branches(&l, g));
    int found = 0;
    for (size_t i = 0; i < og_branch_list_count(l); i++)
        found |= strcmp(og_branch_list_get(l, i)->name, name) == 0;
    og_branch_list_free(l);
    return found;
}

/* og_load_options.from (issue 33 F10): a missing branch is created for the load and kept only
 * if it succeeds; a refused load leaves no branch and reports its own error; a version-1
 * struct (no `from`) still loads; `from` without a branch other than main is refused. */
static void test_api_load_from(void **state)
{
    (void)state;
    char root[512];
    snprintf(root, sizeof root, "%s/graph", g_dir);
    size_t slen;
    char *schema = read_all(g_schema, &slen);
    og_init_options io = OG_INIT_OPTIONS_INIT;
    io.schema_source = schema;
    io.schema_source_len = slen;
    og_init_result *ir = NULL;
    assert_og_ok(og_root_init(&ir, root, &io));
    og_init_result_free(ir);
    free(schema);
    og_graph *g = NULL;
    assert_og_ok(og_graph_open(&g, root, NULL));
    og_load_options lo = OG_LOAD_OPTIONS_INIT;
    lo.mode = OG_LOAD_APPEND;
    lo.branch = "feat";
    lo.from = "main";
    og_write_result *lr = NULL;
    const char *bad = "{\"type\":\"Person\",\"data\":{\"name\":\"Zed\"}}\n"
                      "{\"type\":\"Nobody\",\"data\":{}}\n";
    assert_og_error(og_graph_load(&lr, g, "bad.jsonl", bad, strlen(bad), &lo), OG_E_BAD_REQUEST);
    assert_null(lr);
    assert_string_equal(og_error_last()->file, "bad.jsonl"); /* the load's own error */
    assert_int_equal(og_error_last()->line, 2);
    assert_false(api_has_branch(g, "feat"));
    /* an unknown base: nothing created either */
    lo.from = "nope";
    assert_og_error(og_graph_load(&lr, g, "d1.jsonl", DATA1, strlen(DATA1), &lo), OG_E_NOT_FOUND);
    assert_false(api_has_branch(g, "feat"));
    lo.from = "main";
    assert_og_ok(og_graph_load(&lr, g, "d1.jsonl", DATA1, strlen(DATA1), &lo));
    assert_int_equal(og_write_result_count(lr, OG_WRITE_NEW_BRANCH), 1);
    og_write_result_free(lr);
    assert_true(api_has_branch(g, "feat"));
    /* existing now: a refused load leaves it, a good one does not create it again */
    assert_og_error(og_graph_load(&lr, g, "bad.jsonl", bad, strlen(bad), &lo), OG_E_BAD_REQUEST);
    assert_true(api_has_branch(g, "feat"));
    lo.mode = OG_LOAD_MERGE;
    const char *more = "{\"type\":\"Person\",\"data\":{\"name\":\"Dan\"}}\n";
    assert_og_ok(og_graph_load(&lr, g, "more.jsonl", more, strlen(more), &lo));
    assert_int_equal(og_write_result_count(lr, OG_WRITE_NEW_BRANCH), 0);
    og_write_result_free(lr);
    /* `from` goes with a branch other than main */
    lo.branch = NULL;
    assert_og_error(og_graph_load(&lr, g, "d1.jsonl", DATA1, strlen(DATA1), &lo), OG_E_BAD_REQUEST);
    /* a version-1 caller has no `from`: its missing branch is not_found, as before */
    og_load_options v1;
    assert_og_ok(og_load_options_init(&v1, 1));
    v1.mode = OG_LOAD_MERGE;
    v1.branch = "other";
    assert_og_error(og_graph_load(&lr, g, "d1.jsonl", DATA1, strlen(DATA1), &v1), OG_E_NOT_FOUND);
    assert_false(api_has_branch(g, "other"));
    og_graph_close(g);
}

int main(void)
{
    const char *bindir = getenv("OG_TEST_BINDIR");
    const char *srcdir = getenv("OG_TEST_SRCDIR");
    snprintf(g_bin, sizeof g_bin, "%s/omnigraph", bindir ? bindir : ".");
    snprintf(g_schema, sizeof g_schema, "%s/examples/social.pg", srcdir ? srcdir : "../..");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_init, setup, teardown),
        cmocka_unit_test_setup_teardown(test_load_modes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_line, setup, teardown),
        cmocka_unit_test_setup_teardown(test_readonly_inspection_writes_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_schema_show_and_plan, setup, teardown),
        cmocka_unit_test_setup_teardown(test_usage, setup, teardown),
        cmocka_unit_test_setup_teardown(test_api, setup, teardown),
        cmocka_unit_test_setup_teardown(test_api_load_from, setup, teardown),
        cmocka_unit_test_setup_teardown(test_api_many_tables, setup, teardown),
        cmocka_unit_test_setup_teardown(test_optimize_and_cleanup, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
