/* omnigraph repair and the damage-tolerant reads, through the built binary: with the newest
 * graph-manifest version truncated, `commit list`, `snapshot --at` and `query --at` an intact
 * commit work (exit 0) and their --json carries a "warnings" array naming the damaged file,
 * while a read or write at the head fails `corrupt` (exit 1) naming `omnigraph repair`;
 * `repair` reports without changing anything, `repair --confirm` restores writes and rolls the
 * damaged version's data forward (its rows read at the head; text and --json say so); a deleted
 * newest version makes writes fail `corrupt`, not the retryable `conflict` (exit 3); a gate
 * held past OG_GATE_TIMEOUT_MS fails `resource_limit` (exit 1). Every --json form prints
 * exactly one JSON object. */
#include "testutil.h"

#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

static char g_bin[512];
static char g_schema[512];
static char g_dir[256];

static int og(const char *env, const char *args, char *out, size_t cap, char *err, size_t ecap)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s %s", env ? env : "", g_bin, args);
    return test_run(g_dir, 1, cmd, out, cap, err, ecap);
}

/* Run and parse stdout as exactly one JSON object. */
static json_t *og_json(const char *env, const char *args, int want_exit)
{
    static char out[262144];
    char err[8192];
    int ex = og(env, args, out, sizeof out, err, sizeof err);
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

/* The "warnings" array holds a string containing needle. */
static void assert_warned(const json_t *j, const char *needle)
{
    const json_t *w = json_object_get(j, "warnings");
    if (!json_is_array(w)) fail_msg("no \"warnings\" array");
    for (size_t i = 0; i < json_array_size(w); i++)
        if (strstr(json_string_value(json_array_get(w, i)), needle)) return;
    fail_msg("no warning names %s", needle);
}

static void write_text(const char *name, const char *text)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    test_write_file(path, text, strlen(text));
}

/* init + two loads: manifest versions 1..3. */
static void make_graph(void)
{
    char args[1024], err[4096];
    snprintf(args, sizeof args, "init --schema '%s' g", g_schema);
    int ex = og(NULL, args, NULL, 0, err, sizeof err);
    if (ex != 0) fail_msg("init exited %d: %s", ex, err);
    write_text("a.jsonl", "{\"type\":\"Person\",\"data\":{\"name\":\"Alice\",\"age\":30}}\n");
    write_text("b.jsonl", "{\"type\":\"Person\",\"data\":{\"name\":\"Bob\",\"age\":40}}\n");
    write_text("c.jsonl", "{\"type\":\"Person\",\"data\":{\"name\":\"Cy\",\"age\":50}}\n");
    assert_int_equal(og(NULL, "load --data a.jsonl --mode merge g", NULL, 0, err, sizeof err), 0);
    assert_int_equal(og(NULL, "load --data b.jsonl --mode merge g", NULL, 0, err, sizeof err), 0);
}

/* The file name of manifest version v, and its path under g_dir. */
static void version_file(char *name, size_t ncap, char *path, size_t pcap, uint64_t v)
{
    snprintf(name, ncap, "%020llu.manifest", (unsigned long long)(UINT64_MAX - v));
    snprintf(path, pcap, "%s/g/__manifest.lance/_versions/%s", g_dir, name);
}

static int setup(void **state)
{
    (void)state;
    test_sandbox_new(g_dir, sizeof g_dir, "cli-repair");
    make_graph();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    test_sandbox_done(g_dir);
    return 0;
}

static const char *Q = "-e 'query q() { match { $p: Person } return { $p.name } }'";

static void test_truncated_head_then_repair(void **state)
{
    (void)state;
    char name[64], path[700], args[512];
    version_file(name, sizeof name, path, sizeof path, 3);
    assert_int_equal(truncate(path, 100), 0);

    json_t *j = og_json(NULL, "commit list --json g", 0);
    assert_int_equal(json_array_size(json_object_get(j, "commits")), 2);
    assert_warned(j, name);
    json_decref(j);
    j = og_json(NULL, "snapshot --at 2 --json g", 0);
    assert_int_equal(json_integer_value(json_object_get(j, "manifest_version")), 2);
    assert_warned(j, name);
    json_decref(j);
    snprintf(args, sizeof args, "query --store g --at 2 %s --json", Q);
    j = og_json(NULL, args, 0);
    assert_int_equal(json_array_size(json_object_get(j, "rows")), 1);
    assert_warned(j, name);
    json_decref(j);

    /* At the head: corrupt, naming the file and the remedy. */
    j = og_json(NULL, "snapshot --json g", 1);
    const json_t *e = json_object_get(j, "error");
    assert_string_equal(jstr(e, "code"), "corrupt");
    assert_non_null(strstr(jstr(e, "message"), name));
    assert_non_null(strstr(jstr(e, "message"), "omnigraph repair"));
    json_decref(j);
    j = og_json(NULL, "load --data c.jsonl --mode merge --json g", 1);
    assert_string_equal(jstr(json_object_get(j, "error"), "code"), "corrupt");
    json_decref(j);

    /* A dry run reports the plan and changes nothing. */
    char before[65536], after[65536];
    int st = 0;
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cd '%s/g' && find . -type f | LC_ALL=C sort | xargs md5sum", g_dir);
    char *l0 = test_capture(cmd, &st);
    snprintf(before, sizeof before, "%s", l0);
    free(l0);
    j = og_json(NULL, "repair --json --store g", 0);
    assert_true(json_is_false(json_object_get(j, "repaired")));
    assert_true(json_is_false(json_object_get(j, "clean")));
    assert_int_equal(json_integer_value(json_object_get(j, "intact_version")), 2);
    assert_int_equal(json_array_size(json_object_get(j, "damaged")), 1);
    assert_true(json_is_null(json_object_get(j, "commit_id")));
    assert_string_equal(jstr(j, "action"), "roll_forward");
    assert_true(json_is_null(json_object_get(j, "at_stake")));
    assert_string_equal(jstr(j, "branch"), "main");
    json_decref(j);
    char *l1 = test_capture(cmd, &st);
    snprintf(after, sizeof after, "%s", l1);
    free(l1);
    assert_string_equal(before, after);
    char out[8192], err[8192];
    assert_int_equal(og(NULL, "repair g", out, sizeof out, err, sizeof err), 0);
    assert_non_null(strstr(out, "dry run: nothing was changed"));
    assert_non_null(strstr(out, "would roll table node:Person forward"));

    /* --confirm: the damaged version's row (Bob) is rolled forward and reads at the head,
     * writes work, older commits read as before. */
    j = og_json(NULL, "repair --confirm --json g", 0);
    assert_true(json_is_true(json_object_get(j, "repaired")));
    assert_int_equal(json_integer_value(json_object_get(j, "manifest_version")), 3);
    assert_string_equal(jstr(j, "action"), "rolled_forward");
    assert_true(json_is_false(json_object_get(j, "forced")));
    json_decref(j);
    snprintf(args, sizeof args, "query --store g %s --json", Q);
    j = og_json(NULL, args, 0);
    assert_int_equal(json_array_size(json_object_get(j, "rows")), 2);
    json_decref(j);
    assert_int_equal(og(NULL, "load --data c.jsonl --mode merge g", NULL, 0, err, sizeof err), 0);
    snprintf(args, sizeof args, "query --store g --at 2 %s --json", Q);
    j = og_json(NULL, args, 0);
    assert_int_equal(json_array_size(json_object_get(j, "rows")), 1);
    assert_null(json_object_get(j, "warnings"));
    json_decref(j);
    j = og_json(NULL, "commit list --json g", 0);
    assert_int_equal(json_array_size(json_object_get(j, "commits")), 4);
    json_decref(j);
    assert_int_equal(og(NULL, "repair g", out, sizeof out, err, sizeof err), 0);
    assert_non_null(strstr(out, "nothing to repair"));
}

static void test_deleted_head_is_not_a_conflict(void **state)
{
    (void)state;
    char name[64], path[700], err[8192];
    version_file(name, sizeof name, path, sizeof path, 3);
    assert_int_equal(unlink(path), 0);
    json_t *j = og_json(NULL, "load --data c.jsonl --mode merge --json g", 1);
    assert_string_equal(jstr(json_object_get(j, "error"), "code"), "corrupt");
    assert_non_null(strstr(jstr(json_object_get(j, "error"), "message"), "omnigraph repair"));
    json_decref(j);
    j = og_json(NULL, "repair --confirm --json g", 0);
    assert_true(json_is_true(json_object_get(j, "repaired")));
    assert_int_equal(json_integer_value(json_object_get(j, "missing_version")), 3);
    json_decref(j);
    assert_int_equal(og(NULL, "load --data c.jsonl --mode merge g", NULL, 0, err, sizeof err), 0);
}

/* A gate held by another process (here the test itself, on the schema gate's lock file) past
 * OG_GATE_TIMEOUT_MS: resource_limit, exit 1, naming the timeout. */
static void test_gate_timeout(void **state)
{
    (void)state;
    char locks[700];
    snprintf(locks, sizeof locks, "%s/g/.og-locks", g_dir);
    DIR *d = opendir(locks);
    assert_non_null(d);
    int fds[64], n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 64) {
        if (strncmp(e->d_name, "gates", 5) != 0) continue;
        char p[1200];
        snprintf(p, sizeof p, "%s/%s", locks, e->d_name);
        int fd = open(p, O_RDWR);
        assert_true(fd >= 0);
        assert_int_equal(flock(fd, LOCK_EX), 0);
        fds[n++] = fd;
    }
    closedir(d);
    assert_true(n > 0);
    json_t *j = og_json("OG_GATE_TIMEOUT_MS=100", "load --data c.jsonl --mode merge --json g", 1);
    const json_t *err = json_object_get(j, "error");
    assert_string_equal(jstr(err, "code"), "resource_limit");
    assert_non_null(strstr(jstr(err, "message"), "gate timeout (100 ms)"));
    json_decref(j);
    j = og_json("OG_GATE_TIMEOUT_MS=0", "load --data c.jsonl --mode merge --json g", 1);
    assert_string_equal(jstr(json_object_get(j, "error"), "code"), "bad_request");
    json_decref(j);
    for (int i = 0; i < n; i++)
        close(fds[i]);
    char e2[4096];
    assert_int_equal(
        og("OG_GATE_TIMEOUT_MS=100", "load --data c.jsonl --mode merge g", NULL, 0, e2, sizeof e2),
        0);
}

static void test_usage(void **state)
{
    (void)state;
    json_t *j = og_json(NULL, "repair --json", 2);
    assert_string_equal(jstr(json_object_get(j, "error"), "code"), "usage");
    json_decref(j);
    j = og_json(NULL, "repair --bogus --json g", 2);
    json_decref(j);
    j = og_json(NULL, "repair --force --json g", 2); /* --force only with --confirm */
    json_decref(j);
    j = og_json(NULL, "repair --json nowhere", 1);
    assert_string_equal(jstr(json_object_get(j, "error"), "code"), "not_found");
    json_decref(j);
}

int main(void)
{
    const char *bindir = getenv("OG_TEST_BINDIR");
    const char *srcdir = getenv("OG_TEST_SRCDIR");
    snprintf(g_bin, sizeof g_bin, "%s/omnigraph", bindir ? bindir : ".");
    snprintf(g_schema, sizeof g_schema, "%s/examples/social.pg", srcdir ? srcdir : "../..");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_truncated_head_then_repair, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deleted_head_is_not_a_conflict, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gate_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_usage, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
