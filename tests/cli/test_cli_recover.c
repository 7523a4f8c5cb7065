/* omnigraph recover list|show|resolve and the pending intents `snapshot` shows, through the
 * built binary: writes killed by a failpoint (OG_FAILPOINTS=...=exit(3)) leave recovery
 * intents; each is listed, classified, refused where resolving it would be unsafe (a live
 * owner, a discard without proof) and resolved; a damaged one blocks writes with exit 5 until
 * a forced discard. Every --json form prints exactly one JSON object. */
#include "testutil.h"

#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char g_bin[512];
static char g_schema[512];
static char g_dir[256];

/* Run the CLI (args may start with VAR=value assignments); stdout into out, stderr into err. */
static int run(const char *args, char *out, size_t cap, char *err, size_t ecap)
{
    return test_run(g_dir, 1, args, out, cap, err, ecap);
}

static int og(const char *env, const char *args, char *out, size_t cap, char *err, size_t ecap)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s %s", env ? env : "", g_bin, args);
    return run(cmd, out, cap, err, ecap);
}

/* Run and parse stdout as exactly one JSON object (and nothing after it). */
static json_t *og_json(const char *args, int want_exit)
{
    static char out[262144];
    char err[4096];
    int ex = og(NULL, args, out, sizeof out, err, sizeof err);
    if (ex != want_exit) fail_msg("'%s' exited %d, not %d; stderr: %s", args, ex, want_exit, err);
    json_error_t je;
    json_t *j = json_loads(out, 0, &je); /* fails on anything after the first value */
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

static void write_text(const char *name, const char *text)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    test_write_file(path, text, strlen(text));
}

static const char *const DATA =
    "{\"type\":\"Person\",\"data\":{\"name\":\"Alice\",\"age\":30}}\n"
    "{\"type\":\"Company\",\"data\":{\"name\":\"Acme\",\"size\":50}}\n"
    "{\"edge\":\"WorksAt\",\"from\":\"Alice\",\"to\":\"Acme\",\"data\":{\"role\":\"CTO\"}}\n";

static const char *const MORE = "{\"type\":\"Person\",\"data\":{\"name\":\"Bob\"}}\n";

static void init_graph(void)
{
    char args[1024], err[4096];
    snprintf(args, sizeof args, "init --schema '%s' g", g_schema);
    int ex = og(NULL, args, NULL, 0, err, sizeof err);
    if (ex != 0) fail_msg("init exited %d: %s", ex, err);
    write_text("data.jsonl", DATA);
    write_text("more.jsonl", MORE);
}

/* A load killed by a failpoint (env arms it); returns the one pending intent's id (static
 * storage). */
static const char *interrupted_load(const char *env)
{
    char err[4096];
    int ex = og(env, "load --data data.jsonl --mode append --store g", NULL, 0, err, sizeof err);
    if (ex != 3) fail_msg("the killed load exited %d: %s", ex, err);
    json_t *l = og_json("recover list --json --store g", 0);
    const json_t *items = json_object_get(l, "intents");
    assert_int_equal(json_array_size(items), 1);
    static char id[64];
    snprintf(id, sizeof id, "%s", jstr(json_array_get(items, 0), "operation_id"));
    json_decref(l);
    return id;
}

static int setup(void **state)
{
    (void)state;
    test_sandbox_new(g_dir, sizeof g_dir, "cli-recover");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    test_sandbox_done(g_dir);
    return 0;
}

/* A load killed after its first table effect: listed (snapshot too), classified roll_back,
 * refused while its owner lock is held (exit 3 naming the pid) and for a discard without proof
 * (exit 4), then rolled back; nothing is pending afterwards. */
static void test_resolve_partial_load(void **state)
{
    (void)state;
    char args[512], out[65536], err[4096];
    init_graph();
    const char *id = interrupted_load("OG_FAILPOINTS='write.post_table_effect=exit(3)'");

    json_t *l = og_json("recover list --json --store g", 0);
    const json_t *it = json_array_get(json_object_get(l, "intents"), 0);
    assert_string_equal(jstr(it, "writer_kind"), "load");
    assert_string_equal(jstr(it, "state"), "pending");
    assert_true(json_is_false(json_object_get(it, "damaged")));
    assert_true(json_is_integer(json_object_get(it, "owner_pid")));
    assert_int_equal(strncmp(jstr(it, "file"), "__recovery/", 11), 0);
    json_decref(l);

    json_t *s = og_json("snapshot --json --store g", 0);
    const json_t *pend = json_object_get(s, "pending_recovery");
    assert_int_equal(json_array_size(pend), 1);
    assert_string_equal(jstr(json_array_get(pend, 0), "operation_id"), id);
    assert_true(json_is_false(json_object_get(json_array_get(pend, 0), "damaged")));
    /* snapshot lists read-only (og_recover_options.read_only): no lock probed, so unchecked */
    assert_string_equal(jstr(json_array_get(pend, 0), "state"), "unchecked");
    json_decref(s);
    assert_int_equal(og(NULL, "snapshot --store g", out, sizeof out, NULL, 0), 0);
    assert_non_null(strstr(out, "pending recovery intents"));
    assert_non_null(strstr(out, id));

    snprintf(args, sizeof args, "recover show %s --json --store g", id);
    json_t *sh = og_json(args, 0);
    const json_t *in = json_object_get(sh, "intent");
    assert_string_equal(jstr(in, "action"), "roll_back");
    assert_non_null(strstr(jstr(in, "reason"), "1 of its"));
    json_decref(sh);
    snprintf(args, sizeof args, "recover show %s g", id);
    assert_int_equal(og(NULL, args, out, sizeof out, NULL, 0), 0);
    assert_non_null(strstr(out, "roll_back"));

    /* Its writer still running: hold the owner lock the intent names. */
    char path[600];
    snprintf(path, sizeof path, "%s/g/__recovery/%s.json", g_dir, id);
    json_t *side = json_load_file(path, 0, NULL);
    assert_non_null(side);
    long long pid = (long long)json_integer_value(json_object_get(side, "owner_pid"));
    assert_true(pid > 0);
    snprintf(path, sizeof path, "%s/g/.og-locks/%s", g_dir, jstr(side, "owner_lock"));
    json_decref(side);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(flock(fd, LOCK_EX), 0);
    snprintf(args, sizeof args, "recover resolve %s --json --store g", id);
    json_t *e = og_json(args, 3);
    const json_t *je = json_object_get(e, "error");
    assert_string_equal(jstr(je, "code"), "conflict");
    char want[64];
    snprintf(want, sizeof want, "pid %lld", pid);
    assert_non_null(strstr(jstr(je, "message"), want));
    json_decref(e);
    l = og_json("recover list --json --store g", 0);
    assert_string_equal(jstr(json_array_get(json_object_get(l, "intents"), 0), "state"), "live");
    json_decref(l);
    flock(fd, LOCK_UN);
    close(fd);

    /* A table effect exists: no proof for a discard. */
    snprintf(args, sizeof args, "recover resolve %s --discard --confirm --json --store g", id);
    e = og_json(args, 4);
    assert_string_equal(jstr(json_object_get(e, "error"), "code"), "precondition_failed");
    json_decref(e);

    snprintf(args, sizeof args, "recover resolve %s --json --store g", id);
    json_t *r = og_json(args, 0);
    assert_string_equal(jstr(r, "outcome"), "rolled_back");
    assert_true(json_is_string(json_object_get(r, "commit_id")));
    json_decref(r);
    l = og_json("recover list --json --store g", 0);
    assert_int_equal(json_array_size(json_object_get(l, "intents")), 0);
    json_decref(l);
    snprintf(args, sizeof args, "recover show %s --store g", id);
    assert_int_equal(og(NULL, args, NULL, 0, err, sizeof err), 1);
    assert_non_null(strstr(err, "not_found"));
    assert_int_equal(
        og(NULL, "load --data data.jsonl --mode append --store g", NULL, 0, err, sizeof err), 0);
}

/* A load killed before any effect: a discard has its proof. */
static void test_discard_with_proof(void **state)
{
    (void)state;
    char args[512];
    init_graph();
    const char *id = interrupted_load("OG_FAILPOINTS='write.post_sidecar=exit(3)'");
    snprintf(args, sizeof args, "recover show --json --store g %s", id);
    json_t *sh = og_json(args, 0);
    assert_string_equal(jstr(json_object_get(sh, "intent"), "action"), "discard");
    json_decref(sh);
    snprintf(args, sizeof args, "recover resolve %s --discard --confirm --json g", id);
    json_t *r = og_json(args, 0);
    assert_string_equal(jstr(r, "outcome"), "discarded");
    assert_true(json_is_null(json_object_get(r, "commit_id")));
    json_decref(r);
    json_t *s = og_json("snapshot --json --store g", 0);
    assert_int_equal(json_array_size(json_object_get(s, "pending_recovery")), 0);
    json_decref(s);
}

/* A damaged intent blocks writes with exit 5 naming the file and the command; only a forced
 * discard clears it. */
static void test_damaged_intent(void **state)
{
    (void)state;
    char args[512], err[4096];
    init_graph();
    const char *id = "01M90XAAAAAAAAAAAAAAAAAAAA";
    char path[600];
    snprintf(path, sizeof path, "%s/g/__recovery", g_dir);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "__recovery/%s.json", id);
    char rel[640];
    snprintf(rel, sizeof rel, "g/%s", path);
    write_text(rel, "{\"format\":1}");
    assert_int_equal(
        og(NULL, "load --data more.jsonl --mode append --store g", NULL, 0, err, sizeof err), 5);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, "omnigraph recover"));
    json_t *e = og_json("load --data more.jsonl --mode append --json --store g", 5);
    assert_string_equal(jstr(json_object_get(e, "error"), "code"), "recovery_required");
    assert_string_equal(jstr(json_object_get(e, "error"), "operation_id"), id);
    json_decref(e);

    json_t *s = og_json("snapshot --json --store g", 0);
    const json_t *p0 = json_array_get(json_object_get(s, "pending_recovery"), 0);
    assert_true(json_is_true(json_object_get(p0, "damaged")));
    assert_string_equal(jstr(p0, "state"), "damaged");
    json_decref(s);

    snprintf(args, sizeof args, "recover show %s --json --store g", id);
    json_t *sh = og_json(args, 0);
    const json_t *in = json_object_get(sh, "intent");
    assert_string_equal(jstr(in, "action"), "blocked");
    assert_true(json_is_string(json_object_get(in, "problem")));
    json_decref(sh);

    snprintf(args, sizeof args, "recover resolve %s --json --store g", id);
    json_decref(og_json(args, 5));
    snprintf(args, sizeof args, "recover resolve %s --discard --confirm --json --store g", id);
    json_decref(og_json(args, 5));
    snprintf(args, sizeof args, "recover resolve %s --discard --confirm --force --json --store g",
             id);
    json_t *r = og_json(args, 0);
    assert_string_equal(jstr(r, "outcome"), "discarded_forced");
    json_decref(r);
    assert_int_equal(
        og(NULL, "load --data more.jsonl --mode append --store g", NULL, 0, err, sizeof err), 0);
}

static void test_usage(void **state)
{
    (void)state;
    init_graph();
    const char *bad[] = {
        "recover",
        "recover bogus --store g",
        "recover list",
        "recover show --store g",
        "recover resolve --store g",
        "recover resolve 01M90XAAAAAAAAAAAAAAAAAAAA --discard --store g",
        "recover resolve 01M90XAAAAAAAAAAAAAAAAAAAA --confirm --store g",
        "recover resolve 01M90XAAAAAAAAAAAAAAAAAAAA --force --store g",
        "recover list --discard --store g",
        "recover list --store g g",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int ex = og(NULL, bad[i], NULL, 0, NULL, 0);
        if (ex != 2) fail_msg("'%s' exited %d, not 2", bad[i], ex);
    }
    char out[4096];
    assert_int_equal(og(NULL, "recover list --store g", out, sizeof out, NULL, 0), 0);
    assert_non_null(strstr(out, "no pending recovery intents"));
    json_t *e = og_json("recover show NOTANID --json --store g", 1);
    assert_string_equal(jstr(json_object_get(e, "error"), "code"), "bad_request");
    json_decref(e);
    e = og_json("recover resolve 01M90XAAAAAAAAAAAAAAAAAAAA --json --store g", 1);
    assert_string_equal(jstr(json_object_get(e, "error"), "code"), "not_found");
    json_decref(e);
}

int main(void)
{
    const char *bindir = getenv("OG_TEST_BINDIR");
    const char *srcdir = getenv("OG_TEST_SRCDIR");
    snprintf(g_bin, sizeof g_bin, "%s/omnigraph", bindir ? bindir : ".");
    snprintf(g_schema, sizeof g_schema, "%s/examples/social.pg", srcdir ? srcdir : "../..");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_resolve_partial_load, setup, teardown),
        cmocka_unit_test_setup_teardown(test_discard_with_proof, setup, teardown),
        cmocka_unit_test_setup_teardown(test_damaged_intent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_usage, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
