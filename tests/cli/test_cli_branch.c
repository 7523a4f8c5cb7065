/* omnigraph branch create|list|delete|merge through the built binary: the reference's human lines,
 * one JSON object per --json call, exit codes of refusals (exists, unknown source, forked-from
 * parent, main), usage errors, and that create/delete leave main's commits alone. */
#include "testutil.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char g_bin[512];
static char g_schema[512];
static char g_data[512];
static char g_dir[256];

static int og(const char *args, char *out, size_t cap, char *err, size_t ecap)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s %s", g_bin, args);
    return test_run(g_dir, 1, cmd, out, cap, err, ecap);
}

/* Run with --json expecting want_exit and exactly one JSON object on stdout. */
static json_t *og_json(const char *args, int want_exit)
{
    static char out[65536];
    char err[4096];
    int ex = og(args, out, sizeof out, err, sizeof err);
    if (ex != want_exit) fail_msg("'%s' exited %d, not %d; stderr: %s", args, ex, want_exit, err);
    json_error_t je;
    json_t *j = json_loads(out, 0, &je);
    if (!j || !json_is_object(j))
        fail_msg("'%s' printed no single JSON object: %s (%s)", args, out, je.text);
    return j;
}

static const char *jstr(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    if (!json_is_string(v)) fail_msg("member '%s' is not a string", k);
    return json_string_value(v);
}

static int setup(void **state)
{
    (void)state;
    test_sandbox_new(g_dir, sizeof g_dir, "cli-branch");
    char args[1200], err[4096];
    snprintf(args, sizeof args, "init --schema '%s' g", g_schema);
    if (og(args, NULL, 0, err, sizeof err) != 0) fail_msg("init: %s", err);
    snprintf(args, sizeof args, "load --data '%s' --mode append --store g", g_data);
    if (og(args, NULL, 0, err, sizeof err) != 0) fail_msg("load: %s", err);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    test_sandbox_done(g_dir);
    return 0;
}

static void test_branch_commands(void **state)
{
    (void)state;
    char out[65536], err[4096];
    json_t *c0 = og_json("commit list --json --store g", 0);
    size_t commits = json_array_size(json_object_get(c0, "commits"));
    assert_true(commits == 2);
    const char *head = jstr(json_array_get(json_object_get(c0, "commits"), 0), "id");
    const char *genesis = jstr(json_array_get(json_object_get(c0, "commits"), 1), "id");

    assert_int_equal(og("branch create dev --store g", out, sizeof out, err, sizeof err), 0);
    char want[256];
    snprintf(want, sizeof want, "created branch dev from main at commit %s\n", head);
    assert_string_equal(out, want);

    char args[512];
    snprintf(args, sizeof args, "branch create old --at %s --json --store g", genesis);
    json_t *j = og_json(args, 0);
    assert_true(json_is_true(json_object_get(j, "ok")));
    const json_t *b = json_object_get(j, "branch");
    assert_string_equal(jstr(b, "name"), "old");
    assert_string_equal(jstr(b, "parent"), "main");
    assert_string_equal(jstr(b, "forked_from"), genesis);
    assert_string_equal(jstr(b, "head"), genesis);
    json_decref(j);
    assert_int_equal(og("branch create feat/x --from dev g", out, sizeof out, err, sizeof err), 0);
    assert_non_null(strstr(out, "created branch feat/x from dev"));

    j = og_json("branch list --json --store g", 0);
    const json_t *list = json_object_get(j, "branches");
    assert_int_equal(json_array_size(list), 4);
    const char *names[] = {"main", "dev", "feat/x", "old"};
    for (size_t i = 0; i < 4; i++)
        assert_string_equal(jstr(json_array_get(list, i), "name"), names[i]);
    assert_true(json_is_null(json_object_get(json_array_get(list, 0), "parent")));
    assert_string_equal(jstr(json_array_get(list, 2), "parent"), "dev");
    json_decref(j);
    assert_int_equal(og("branch list --store g", out, sizeof out, err, sizeof err), 0);
    assert_non_null(strstr(out, "feat/x"));
    assert_non_null(strstr(out, "(from dev)"));

    /* refusals: typed, with their exit codes, and one JSON object each */
    j = og_json("branch create dev --json --store g", 1);
    assert_string_equal(jstr(json_object_get(j, "error"), "code"), "exists");
    json_decref(j);
    j = og_json("branch create dev/y --json --store g", 1);
    assert_string_equal(jstr(json_object_get(j, "error"), "code"), "exists");
    json_decref(j);
    /* prefix-disjoint names both ways (issue 33 F9), main always taken: the error names the
     * branch in the way */
    const char *beside[][2] = {
        {"main/x", "main"}, {"main/x/y", "main"}, {"feat", "feat/x"}, {"dev/y/z", "dev"}};
    for (size_t i = 0; i < sizeof beside / sizeof beside[0]; i++) {
        snprintf(args, sizeof args, "branch create %s --json --store g", beside[i][0]);
        j = og_json(args, 1);
        const json_t *e = json_object_get(j, "error");
        assert_string_equal(jstr(e, "code"), "exists");
        assert_string_equal(jstr(e, "key"), beside[i][1]);
        assert_non_null(strstr(jstr(e, "message"), beside[i][1]));
        json_decref(j);
    }
    assert_int_equal(og("branch create main/x --store g", out, sizeof out, err, sizeof err), 1);
    assert_non_null(strstr(err, "error[exists]"));
    assert_non_null(strstr(err, "'main'"));
    j = og_json("branch create z --from nope --json --store g", 1);
    assert_string_equal(jstr(json_object_get(j, "error"), "code"), "not_found");
    assert_non_null(strstr(jstr(json_object_get(j, "error"), "message"), "nope"));
    json_decref(j);
    j = og_json("branch create _z --json --store g", 1);
    assert_string_equal(jstr(json_object_get(j, "error"), "code"), "bad_request");
    json_decref(j);
    j = og_json("branch delete dev --json --store g", 4);
    assert_string_equal(jstr(json_object_get(j, "error"), "code"), "precondition_failed");
    assert_non_null(strstr(jstr(json_object_get(j, "error"), "message"), "feat/x"));
    json_decref(j);
    j = og_json("branch delete main --json --store g", 1);
    json_decref(j);
    j = og_json("branch delete nope --json --store g", 1);
    assert_string_equal(jstr(json_object_get(j, "error"), "code"), "not_found");
    json_decref(j);

    assert_int_equal(og("branch delete feat/x --store g", out, sizeof out, err, sizeof err), 0);
    assert_string_equal(out, "deleted branch feat/x\n");
    j = og_json("branch delete dev --json --store g", 0);
    assert_string_equal(jstr(j, "deleted"), "dev");
    json_decref(j);

    /* main's lineage is untouched by all of it */
    j = og_json("commit list --json --store g", 0);
    assert_int_equal(json_array_size(json_object_get(j, "commits")), commits);
    assert_string_equal(jstr(json_array_get(json_object_get(j, "commits"), 0), "id"), head);
    json_decref(j);
    json_decref(c0);
}

/* Loads, mutations, queries, snapshots and commit lists on a branch; main is untouched. */
static void test_branch_reads_and_writes(void **state)
{
    (void)state;
    char out[65536], err[4096];
    char path[512];
    snprintf(path, sizeof path, "%s/oslo.jsonl", g_dir);
    const char *line = "{\"type\":\"City\",\"data\":{\"name\":\"Oslo\",\"country\":\"Norway\","
                       "\"population\":700000}}\n";
    test_write_file(path, line, strlen(line));
    const char *count = "-e 'query q() { match { $c: City } return { count($c) as n } }'";
    char args[1024];

    /* unknown branch, then --from creates it */
    json_t *j = og_json("load --data oslo.jsonl --mode append --branch dev --json --store g", 1);
    assert_string_equal(jstr(json_object_get(j, "error"), "code"), "not_found");
    json_decref(j);
    j = og_json("load --data oslo.jsonl --mode append --branch dev --from main --json --store g",
                0);
    assert_string_equal(jstr(j, "branch"), "dev");
    assert_true(json_is_true(json_object_get(j, "committed")));
    char commit[64];
    snprintf(commit, sizeof commit, "%s", jstr(j, "commit_id"));
    json_decref(j);

    snprintf(args, sizeof args, "query --store g --branch dev --json %s", count);
    j = og_json(args, 0);
    long on_dev = (long)json_integer_value(
        json_object_get(json_array_get(json_object_get(j, "rows"), 0), "n"));
    json_decref(j);
    snprintf(args, sizeof args, "query --store g --json %s", count);
    j = og_json(args, 0);
    long on_main = (long)json_integer_value(
        json_object_get(json_array_get(json_object_get(j, "rows"), 0), "n"));
    json_decref(j);
    assert_int_equal(on_dev, on_main + 1);
    snprintf(args, sizeof args, "query --store g --branch dev %s", count);
    assert_int_equal(og(args, out, sizeof out, err, sizeof err), 0);
    assert_non_null(strstr(out, "from branch dev via q"));

    j = og_json("mutate --store g --branch dev --json -e 'query m() { insert City { name: "
                "\"Lima\", country: \"Peru\", population: 1 } }'",
                0);
    assert_string_equal(jstr(j, "branch"), "dev");
    json_decref(j);
    j = og_json("commit list --branch dev --json --store g", 0);
    assert_string_equal(jstr(j, "branch"), "dev");
    const json_t *commits = json_object_get(j, "commits");
    assert_int_equal(json_array_size(commits), 4); /* init, load on main, two on dev */
    assert_string_equal(jstr(json_array_get(commits, 1), "id"), commit);
    json_decref(j);
    j = og_json("commit list --json --store g", 0);
    assert_int_equal(json_array_size(json_object_get(j, "commits")), 2);
    json_decref(j);
    j = og_json("snapshot --branch dev --json --store g", 0);
    assert_string_equal(jstr(j, "branch"), "dev");
    json_decref(j);
    /* time travel on the branch: at the load, before the mutation */
    snprintf(args, sizeof args, "query --store g --branch dev --at %s --json %s", commit, count);
    j = og_json(args, 0);
    assert_int_equal(
        json_integer_value(json_object_get(json_array_get(json_object_get(j, "rows"), 0), "n")),
        on_dev);
    json_decref(j);
    snprintf(args, sizeof args, "query --store g --branch nope --json %s", count);
    j = og_json(args, 1);
    assert_string_equal(jstr(json_object_get(j, "error"), "code"), "not_found");
    json_decref(j);
}

/* optimize, export and commit show on a branch: optimize compacts the branch's fork and says
 * so in its words, export writes the branch's rows, a branch commit is shown from main by its
 * full id and with --branch, and main's own output is unchanged by all of it. */
static void test_branch_optimize_export_show(void **state)
{
    (void)state;
    char out[65536], err[4096];
    assert_int_equal(og("branch create dev --store g", out, sizeof out, err, sizeof err), 0);
    const char *cities[] = {"Lima", "Rome", "Kyiv"};
    char args[1024];
    for (size_t i = 0; i < 3; i++) {
        snprintf(args, sizeof args,
                 "mutate --store g --branch dev -e 'query m() { insert City { name: \"%s\", "
                 "country: \"X\", population: 1 } }'",
                 cities[i]);
        if (og(args, out, sizeof out, err, sizeof err) != 0) fail_msg("%s: %s", args, err);
    }
    json_t *main0 = og_json("commit list --json --store g", 0);

    assert_int_equal(og("optimize --branch dev --store g", out, sizeof out, err, sizeof err), 0);
    assert_non_null(strstr(out, "compacted 1 table of branch dev in maintenance commit "));
    json_t *j = og_json("optimize --branch dev --json --store g", 0);
    assert_string_equal(jstr(j, "branch"), "dev");
    assert_true(json_is_null(json_object_get(j, "commit_id"))); /* nothing left to do */
    assert_int_equal(json_integer_value(json_object_get(j, "tables_compacted")), 0);
    json_decref(j);
    assert_int_equal(og("optimize --branch dev --store g", out, sizeof out, err, sizeof err), 0);
    assert_non_null(strstr(out, "no table of branch dev needed compaction"));
    j = og_json("optimize --branch nope --json --store g", 1);
    assert_string_equal(jstr(json_object_get(j, "error"), "code"), "not_found");
    json_decref(j);
    json_t *main1 = og_json("commit list --json --store g", 0);
    assert_true(json_equal(main0, main1)); /* main did not move */
    json_decref(main1);

    /* export: the branch has main's cities and its three */
    assert_int_equal(og("export --branch dev --store g", out, sizeof out, err, sizeof err), 0);
    for (size_t i = 0; i < 3; i++) {
        char want[64];
        snprintf(want, sizeof want, "\"%s\"", cities[i]);
        assert_non_null(strstr(out, want));
    }
    size_t on_dev = 0, on_main = 0;
    for (const char *p = out; (p = strstr(p, "\"type\":\"City\"")); p++)
        on_dev++;
    assert_int_equal(og("export --store g", out, sizeof out, err, sizeof err), 0);
    for (const char *p = out; (p = strstr(p, "\"type\":\"City\"")); p++)
        on_main++;
    assert_null(strstr(out, "\"Kyiv\""));
    assert_int_equal(on_dev, on_main + 3);
    j = og_json("export --branch nope --store g --out x.jsonl --json", 1);
    assert_string_equal(jstr(json_object_get(j, "error"), "code"), "not_found");
    json_decref(j);

    /* commit show of a branch commit: by full id from anywhere, and on its branch */
    j = og_json("commit list --branch dev --json --store g", 0);
    const json_t *commits = json_object_get(j, "commits");
    char id[64];
    snprintf(id, sizeof id, "%s", jstr(json_array_get(commits, 1), "id")); /* Kyiv's insert */
    json_decref(j);
    snprintf(args, sizeof args, "commit show %s --json --store g", id);
    j = og_json(args, 0);
    assert_string_equal(jstr(json_object_get(j, "commit"), "branch"), "dev");
    /* its City table is the branch's fork; the others are still main's */
    const json_t *tables = json_object_get(j, "tables");
    size_t forked = 0;
    for (size_t i = 0; i < json_array_size(tables); i++) {
        const json_t *t = json_array_get(tables, i);
        const json_t *tb = json_object_get(t, "table_branch");
        if (strcmp(jstr(t, "alias"), "node:City") == 0) {
            assert_string_equal(json_string_value(tb), "dev");
            forked++;
        } else {
            assert_true(json_is_null(tb));
        }
    }
    assert_int_equal(forked, 1);
    json_decref(j);
    snprintf(args, sizeof args, "commit show %s --branch dev --store g", id);
    assert_int_equal(og(args, out, sizeof out, err, sizeof err), 0);
    assert_non_null(strstr(out, "branch            dev"));
    snprintf(args, sizeof args, "commit show %s --branch nope --json --store g", id);
    j = og_json(args, 1);
    assert_string_equal(jstr(json_object_get(j, "error"), "code"), "not_found");
    json_decref(j);
    json_decref(main0);
}

/* omnigraph branch merge: the reference's line, --json with outcome and commit, conflicts with
 * exit 6 (a JSON object with a conflicts array, or a list on stderr), --into, --delete-branch,
 * and usage errors. */
static void test_branch_merge(void **state)
{
    (void)state;
    char out[65536], err[8192];
    const char *set =
        "query s($p: I64) { update City set { population: $p } where name = \"Oslo\" }";
    char args[1024];
    json_t *j = og_json("mutate --store g --json -e 'query m() { insert City { name: \"Oslo\", "
                        "country: \"Norway\", population: 1 } }'",
                        0);
    json_decref(j);
    assert_int_equal(og("branch create dev --store g", out, sizeof out, err, sizeof err), 0);
    snprintf(args, sizeof args, "mutate --store g --branch dev -e '%s' --params '{\"p\":2}'", set);
    assert_int_equal(og(args, out, sizeof out, err, sizeof err), 0);
    assert_int_equal(og("branch merge dev --store g", out, sizeof out, err, sizeof err), 0);
    assert_string_equal(out, "merged dev into main: fast_forward\n");
    j = og_json("branch merge dev --json --store g", 0);
    assert_string_equal(jstr(j, "outcome"), "already_up_to_date");
    assert_true(json_is_null(json_object_get(j, "commit")));
    assert_string_equal(jstr(j, "source"), "dev");
    assert_string_equal(jstr(j, "target"), "main");
    json_decref(j);

    /* a conflict: both set Oslo's population */
    assert_int_equal(og("branch create x --store g", out, sizeof out, err, sizeof err), 0);
    snprintf(args, sizeof args, "mutate --store g --branch x -e '%s' --params '{\"p\":3}'", set);
    assert_int_equal(og(args, out, sizeof out, err, sizeof err), 0);
    snprintf(args, sizeof args, "mutate --store g -e '%s' --params '{\"p\":4}'", set);
    assert_int_equal(og(args, out, sizeof out, err, sizeof err), 0);
    j = og_json("branch merge x --json --store g", 6);
    assert_true(json_is_false(json_object_get(j, "ok")));
    const json_t *cs = json_object_get(j, "conflicts");
    assert_int_equal(json_array_size(cs), 1);
    assert_string_equal(jstr(json_array_get(cs, 0), "kind"), "divergent_update");
    assert_string_equal(jstr(json_array_get(cs, 0), "type"), "City");
    assert_string_equal(jstr(json_array_get(cs, 0), "id"), "Oslo");
    assert_string_equal(jstr(json_object_get(j, "error"), "code"), "merge_conflicts");
    json_decref(j);
    assert_int_equal(og("branch merge x --store g", out, sizeof out, err, sizeof err), 6);
    assert_non_null(strstr(err, "1 conflict"));
    assert_non_null(strstr(err, "divergent_update  City Oslo"));
    /* into another branch, then --delete-branch */
    j = og_json("branch merge x --into dev --json --store g", 0);
    assert_string_equal(jstr(j, "target"), "dev");
    assert_string_equal(jstr(j, "outcome"), "fast_forward");
    json_decref(j);
    assert_int_equal(og("branch create y --store g", out, sizeof out, err, sizeof err), 0);
    j = og_json("mutate --store g --branch y --json -e 'query m() { insert City { name: \"Lima\", "
                "country: \"Peru\", population: 9 } }'",
                0);
    json_decref(j);
    assert_int_equal(
        og("branch merge y --delete-branch --store g", out, sizeof out, err, sizeof err), 0);
    assert_string_equal(out, "merged y into main: fast_forward\ndeleted branch y\n");
    j = og_json("branch list --json --store g", 0);
    assert_int_equal(json_array_size(json_object_get(j, "branches")), 3); /* main, dev, x */
    json_decref(j);
    /* merged parents name commits of other branches' lineages (y's is gone): verify is clean */
    assert_int_equal(og("verify --store g", out, sizeof out, err, sizeof err), 0);
    j = og_json("branch merge nope --json --store g", 1);
    assert_string_equal(jstr(json_object_get(j, "error"), "code"), "not_found");
    json_decref(j);
    assert_int_equal(og("branch merge --store g", out, sizeof out, err, sizeof err), 2);
    assert_int_equal(og("branch merge dev --store g --into", out, sizeof out, err, sizeof err), 2);
    assert_int_equal(
        og("branch create z --delete-branch --store g", out, sizeof out, err, sizeof err), 2);
}

/* A graph with branches can be moved or copied: a branch's Lance manifests name their parent
 * dataset by the absolute path it had, which then lies outside the store; the parent inside the
 * store is used (and a copy never reads or writes the original). */
static void test_moved_and_copied(void **state)
{
    (void)state;
    char out[65536], err[8192], from[600], to[600];
    const char *q = "query --store %s --branch dev --json -e 'query c() { match { $c: City } "
                    "return { $c.name } order { $c.name asc } }'";
    char args[1024];
    assert_int_equal(og("branch create dev --store g", out, sizeof out, err, sizeof err), 0);
    json_t *j = og_json("mutate --store g --branch dev --json -e 'query m() { insert City { "
                        "name: \"Lima\", country: \"Peru\", population: 9 } }'",
                        0);
    json_decref(j);
    snprintf(args, sizeof args, q, "g");
    assert_int_equal(og(args, out, sizeof out, err, sizeof err), 0);
    char before[65536];
    snprintf(before, sizeof before, "%s", out);
    assert_non_null(strstr(before, "Lima"));
    snprintf(from, sizeof from, "%s/g", g_dir);
    snprintf(to, sizeof to, "%s/moved", g_dir);
    assert_int_equal(rename(from, to), 0);
    snprintf(args, sizeof args, q, "moved");
    assert_int_equal(og(args, out, sizeof out, err, sizeof err), 0);
    assert_string_equal(out, before);
    /* a copy of the moved graph; the moved one is written after, the copy must not see it */
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "cp -a '%s/moved' '%s/copy'", g_dir, g_dir);
    assert_int_equal(system(cmd), 0);
    j = og_json("mutate --store moved --branch dev --json -e 'query m() { insert City { "
                "name: \"Quito\", country: \"Ecuador\", population: 3 } }'",
                0);
    json_decref(j);
    snprintf(args, sizeof args, q, "copy");
    assert_int_equal(og(args, out, sizeof out, err, sizeof err), 0);
    assert_string_equal(out, before);
    assert_int_equal(og("branch merge dev --store copy", out, sizeof out, err, sizeof err), 0);
    assert_int_equal(og("verify --store copy", out, sizeof out, err, sizeof err), 0);
    assert_int_equal(og("verify --store moved", out, sizeof out, err, sizeof err), 0);
    snprintf(args, sizeof args, q, "moved");
    assert_int_equal(og(args, out, sizeof out, err, sizeof err), 0);
    assert_non_null(strstr(out, "Quito"));
}

static void test_usage(void **state)
{
    (void)state;
    char out[8192], err[4096];
    assert_int_equal(og("branch", out, sizeof out, err, sizeof err), 2);
    assert_int_equal(og("branch frob --store g", out, sizeof out, err, sizeof err), 2);
    assert_int_equal(og("branch create --store g", out, sizeof out, err, sizeof err), 2);
    assert_int_equal(og("branch create a b --store g", out, sizeof out, err, sizeof err), 2);
    assert_int_equal(og("branch delete x --from main --store g", out, sizeof out, err, sizeof err),
                     2);
    json_t *j = og_json("branch create --json --store g", 2);
    assert_string_equal(jstr(json_object_get(j, "error"), "code"), "usage");
    json_decref(j);
}

/* Whether `branch list --json` of g names `name`. */
static int has_branch(const char *name)
{
    json_t *j = og_json("branch list --json --store g", 0);
    const json_t *arr = json_object_get(j, "branches");
    assert_true(json_is_array(arr));
    int found = 0;
    for (size_t i = 0; i < json_array_size(arr); i++)
        found |= strcmp(jstr(json_array_get(arr, i), "name"), name) == 0;
    json_decref(j);
    return found;
}

/* load --branch NEW --from BASE (issue 33 F10): a refused load (a line the schema refuses, a
 * missing or unreadable input file) creates no branch; a load that succeeds creates it and says
 * so; a refused load into a branch that existed before leaves it. */
static void test_load_from_refused(void **state)
{
    (void)state;
    char out[65536], err[8192], path[512];
    snprintf(path, sizeof path, "%s/bad.jsonl", g_dir);
    const char *bad = "{\"type\":\"City\",\"data\":{\"name\":\"Oslo\",\"country\":\"Norway\","
                      "\"population\":700000}}\n{\"type\":\"Nowhere\",\"data\":{}}\n";
    test_write_file(path, bad, strlen(bad));
    snprintf(path, sizeof path, "%s/good.jsonl", g_dir);
    const char *good = "{\"type\":\"City\",\"data\":{\"name\":\"Oslo\",\"country\":"
                       "\"Norway\",\"population\":700000}}\n";
    test_write_file(path, good, strlen(good));
    snprintf(path, sizeof path, "%s/adir", g_dir);
    assert_int_equal(mkdir(path, 0755), 0);
    static const struct {
        const char *args;
        const char *code;
    } refused[] = {
        {"load --data bad.jsonl --mode append --branch feat --from main --store g", "bad_request"},
        {"load --data missing.jsonl --mode append --branch feat --from main --store g",
         "not_found"},
        {"load --data adir --mode append --branch feat --from main --store g", "storage"},
        {"load --data good.jsonl --mode append --branch feat --from nope --store g", "not_found"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        assert_int_equal(og(refused[i].args, out, sizeof out, err, sizeof err), 1);
        char want[64];
        snprintf(want, sizeof want, "error[%s]", refused[i].code);
        if (!strstr(err, want)) fail_msg("'%s': %s", refused[i].args, err);
        assert_null(strstr(err, "created branch"));
        if (has_branch("feat")) fail_msg("'%s' left branch feat created", refused[i].args);
    }
    json_t *j = og_json(
        "load --data bad.jsonl --mode append --branch feat --from main --json --store g", 1);
    assert_string_equal(jstr(json_object_get(j, "error"), "code"), "bad_request");
    json_decref(j);
    assert_false(has_branch("feat"));

    /* the load that succeeds creates it */
    assert_int_equal(og("load --data good.jsonl --mode append --branch feat --from main --store g",
                        out, sizeof out, err, sizeof err),
                     0);
    assert_non_null(strstr(err, "omnigraph: created branch feat from main"));
    assert_true(has_branch("feat"));
    /* a refused load into it now (it existed before the load) leaves it */
    assert_int_equal(og("load --data bad.jsonl --mode append --branch feat --from main --store g",
                        out, sizeof out, err, sizeof err),
                     1);
    assert_true(has_branch("feat"));
    j = og_json("load --data good.jsonl --mode merge --branch feat2 --from feat --json --store g",
                0);
    assert_true(json_is_true(json_object_get(j, "branch_created")));
    json_decref(j);
    j = og_json("load --data good.jsonl --mode merge --branch feat2 --from feat --json --store g",
                0);
    assert_true(json_is_false(json_object_get(j, "branch_created")));
    json_decref(j);
}

int main(void)
{
    const char *bindir = getenv("OG_TEST_BINDIR");
    const char *srcdir = getenv("OG_TEST_SRCDIR");
    snprintf(g_bin, sizeof g_bin, "%s/omnigraph", bindir ? bindir : ".");
    snprintf(g_schema, sizeof g_schema, "%s/examples/demo.pg", srcdir ? srcdir : "../..");
    snprintf(g_data, sizeof g_data, "%s/examples/demo.jsonl", srcdir ? srcdir : "../..");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_branch_commands, setup, teardown),
        cmocka_unit_test_setup_teardown(test_branch_reads_and_writes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_branch_optimize_export_show, setup, teardown),
        cmocka_unit_test_setup_teardown(test_branch_merge, setup, teardown),
        cmocka_unit_test_setup_teardown(test_moved_and_copied, setup, teardown),
        cmocka_unit_test_setup_teardown(test_usage, setup, teardown),
        cmocka_unit_test_setup_teardown(test_load_from_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
