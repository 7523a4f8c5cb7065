/* Damage at the top of a graph's history and what the engine does about it (issue 16, faults
 * c, d, e, j, and `repair`):
 *   - a truncated newest graph-manifest version: commit list and reads --at an intact commit
 *     work, with a warning naming the damaged file; a read or write at the head fails
 *     OG_E_CORRUPT naming it and the remedy (c);
 *   - any one file of __manifest.lance/data deleted: never "no graph here, run init" (d);
 *   - the newest manifest version deleted: a write fails OG_E_CORRUPT (not the retryable
 *     OG_E_CONFLICT) naming the remedy (e);
 *   - a writer stalled inside the gates: another writer's wait ends at the configured timeout
 *     with OG_E_RESOURCE_LIMIT naming the holder's operation id and pid (j);
 *   - og_graph_repair: a dry run changes nothing; --confirm restores writability and every
 *     earlier commit reads as before; crashing it after every durable operation (both crash
 *     modes) never loses an acknowledged commit, and reopening or repairing again restores
 *     service. */
#include "write_fixture.h"

#include "core/failpoint.h"
#include "crashsim.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *SCHEMA = "node Person {\n"
                            "    name: String @key\n"
                            "    age: I32?\n"
                            "}\n"
                            "node Company {\n"
                            "    name: String @key\n"
                            "}\n"
                            "edge WorksAt: Person -> Company { role: String? }\n";

static const char *LOADS[] = {
    "{\"type\":\"Person\",\"data\":{\"name\":\"ann\",\"age\":1}}\n",
    "{\"type\":\"Person\",\"data\":{\"name\":\"bob\",\"age\":2}}\n"
    "{\"type\":\"Company\",\"data\":{\"name\":\"acme\"}}\n"
    "{\"edge\":\"WorksAt\",\"from\":\"bob\",\"to\":\"acme\",\"data\":{\"role\":\"x\"}}\n",
    "{\"type\":\"Person\",\"data\":{\"name\":\"cid\",\"age\":3}}\n",
};

static const char *Q_PEOPLE =
    "query q() { match { $p: Person } return { $p.name, $p.age } order { $p.name asc } }";

/* ---- helpers -------------------------------------------------------------------------------- */

/* A graph with genesis plus one commit per LOADS entry (manifest versions 1..4). */
static void make_graph(const char *root)
{
    og_init_options io = OG_INIT_OPTIONS_INIT;
    io.schema_source = SCHEMA;
    og_init_result *ir = NULL;
    assert_og_ok(og_graph_init(&ir, root, &io));
    og_init_result_free(ir);
    og_graph *g = NULL;
    assert_og_ok(og_graph_open(&g, root, NULL));
    for (size_t i = 0; i < sizeof LOADS / sizeof LOADS[0]; i++) {
        og_load_options lo = OG_LOAD_OPTIONS_INIT;
        lo.mode = OG_LOAD_MERGE;
        og_write_result *r = NULL;
        assert_og_ok(og_graph_load(&r, g, "d.jsonl", LOADS[i], strlen(LOADS[i]), &lo));
        og_write_result_free(r);
    }
    og_graph_close(g);
}

/* The file of graph-manifest version v (V2 names count down from UINT64_MAX). */
static void version_path(char *out, size_t cap, const char *root, uint64_t v)
{
    snprintf(out, cap, "%s/__manifest.lance/_versions/%020llu.manifest", root,
             (unsigned long long)(UINT64_MAX - v));
}

/* The rows of Q_PEOPLE at `at` (NULL: head) as one string, or NULL with the error set. */
static char *people_at(og_graph *g, const char *at)
{
    og_query_options qo = OG_QUERY_OPTIONS_INIT;
    qo.source = Q_PEOPLE;
    qo.at = at;
    og_result *r = NULL;
    if (og_graph_query(&r, g, &qo) != 0) return NULL;
    size_t cap = 4096, n = 0;
    char *out = calloc(1, cap);
    assert_non_null(out);
    for (uint64_t i = 0; i < og_result_row_count(r); i++) {
        size_t len = 0;
        const char *j = og_result_row_json(r, i, &len);
        assert_non_null(j);
        assert_true(n + len + 2 < cap);
        memcpy(out + n, j, len);
        n += len;
        out[n++] = '\n';
    }
    og_result_free(r);
    return out;
}

/* Warnings the library logged (the sink keeps the last few). */
static char g_warn[8][1024];
static int g_n_warn;

static void keep_log(void *arg, int level, const char *msg)
{
    (void)arg;
    if (level != OG_LOG_WARN) return;
    snprintf(g_warn[g_n_warn % 8], sizeof g_warn[0], "%s", msg);
    g_n_warn++;
}

static bool warned_about(const char *needle)
{
    for (int i = 0; i < g_n_warn && i < 8; i++)
        if (strstr(g_warn[i], needle)) return true;
    return false;
}

static void capture_warnings(void)
{
    g_n_warn = 0;
    og_set_log(keep_log, NULL, OG_LOG_WARN);
}

static og_graph *open_ro(const char *root)
{
    og_open_options oo = OG_OPEN_OPTIONS_INIT;
    oo.read_only = 1;
    og_graph *g = NULL;
    assert_og_ok(og_graph_open(&g, root, &oo));
    return g;
}

static int load_one(const char *root, const char *line)
{
    og_graph *g = NULL;
    int rc = og_graph_open(&g, root, NULL);
    if (rc != 0) return rc;
    og_load_options lo = OG_LOAD_OPTIONS_INIT;
    lo.mode = OG_LOAD_MERGE;
    og_write_result *r = NULL;
    rc = og_graph_load(&r, g, "x.jsonl", line, strlen(line), &lo);
    og_write_result_free(r);
    og_graph_close(g);
    return rc;
}

/* ---- (c) a truncated newest version --------------------------------------------------------- */

static void test_truncated_head(void **state)
{
    (void)state;
    char dir[256], root[512], vpath[700];
    test_sandbox_new(dir, sizeof dir, "repair-c");
    snprintf(root, sizeof root, "%s/g", dir);
    make_graph(root);
    og_graph *g = open_ro(root);
    char *before_v3 = people_at(g, "3");
    assert_non_null(before_v3);
    og_graph_close(g);

    version_path(vpath, sizeof vpath, root, 4);
    assert_int_equal(truncate(vpath, 100), 0);
    const char *name = strrchr(vpath, '/') + 1;

    capture_warnings();
    g = open_ro(root); /* opens: commits before the damage stay readable */
    og_commit_list *l = NULL;
    assert_og_ok(og_graph_commits(&l, g));
    assert_int_equal(og_commit_list_count(l), 3); /* versions 1..3 */
    assert_int_equal(og_commit_list_get(l, 0)->manifest_version, 3);
    og_commit_list_free(l);
    assert_true(warned_about(name));

    char *at3 = people_at(g, "3");
    assert_non_null(at3);
    assert_string_equal(at3, before_v3);
    og_snapshot_info *si = NULL;
    assert_og_ok(og_graph_snapshot(&si, g, "2"));
    assert_int_equal(si->manifest_version, 2);
    og_snapshot_info_free(si);

    /* At the head: typed corrupt naming the file and the remedy. */
    assert_og_error(og_graph_snapshot(&si, g, NULL), OG_E_CORRUPT);
    assert_non_null(strstr(og_error_last()->message, name));
    assert_non_null(strstr(og_error_last()->message, "omnigraph repair"));
    assert_null(people_at(g, NULL));
    assert_int_equal(og_error_last()->code, OG_E_CORRUPT);
    og_graph_close(g);

    /* A write fails the same way (never a retryable conflict). */
    assert_og_error(load_one(root, LOADS[0]), OG_E_CORRUPT);
    assert_non_null(strstr(og_error_last()->message, "omnigraph repair"));
    og_set_log(NULL, NULL, OG_LOG_WARN);
    free(before_v3);
    free(at3);
    test_sandbox_done(dir);
}

/* ---- (d) one file of __manifest.lance/data deleted ------------------------------------------ */

static void test_manifest_data_file_gone(void **state)
{
    (void)state;
    char dir[256], root[512], data[600];
    test_sandbox_new(dir, sizeof dir, "repair-d");
    snprintf(root, sizeof root, "%s/g", dir);
    make_graph(root);
    snprintf(data, sizeof data, "%s/__manifest.lance/data", root);
    DIR *d = opendir(data);
    assert_non_null(d);
    char names[64][256];
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 64)
        if (e->d_name[0] != '.') snprintf(names[n++], sizeof names[0], "%s", e->d_name);
    closedir(d);
    assert_true(n >= 2);
    og_set_log(NULL, NULL, OG_LOG_ERROR);
    for (size_t i = 0; i < n; i++) {
        char copy[600], cmd[1400], victim[1000];
        snprintf(copy, sizeof copy, "%s/d%zu", dir, i);
        snprintf(cmd, sizeof cmd, "cp -r '%s' '%s'", root, copy);
        assert_int_equal(system(cmd), 0);
        snprintf(victim, sizeof victim, "%s/__manifest.lance/data/%s", copy, names[i]);
        assert_int_equal(unlink(victim), 0);
        /* Every outcome is either a read (falling back past the damage) or typed corrupt
         * naming the missing file: never "no graph here". */
        og_open_options oo = OG_OPEN_OPTIONS_INIT;
        oo.read_only = 1;
        og_graph *g = NULL;
        int rc = og_graph_open(&g, copy, &oo);
        if (rc == 0) {
            og_commit_list *l = NULL;
            rc = og_graph_commits(&l, g);
            og_commit_list_free(l);
            og_snapshot_info *si = NULL;
            int hrc = og_graph_snapshot(&si, g, NULL);
            og_snapshot_info_free(si);
            if (hrc != 0) {
                assert_int_equal(hrc, OG_E_CORRUPT);
                assert_non_null(strstr(og_error_last()->message, names[i]));
            }
            og_graph_close(g);
        }
        if (rc != 0) {
            if (rc != OG_E_CORRUPT)
                fail_msg("deleting %s: %s: %s", names[i], og_code_name(rc),
                         og_error_last()->message);
            assert_non_null(strstr(og_error_last()->message, names[i]));
            assert_null(strstr(og_error_last()->message, "omnigraph init"));
        }
        /* init agrees that a graph is there. */
        og_init_options io = OG_INIT_OPTIONS_INIT;
        io.schema_source = SCHEMA;
        og_init_result *ir = NULL;
        assert_og_error(og_graph_init(&ir, copy, &io), OG_E_EXISTS);
        test_rmrf(copy);
    }
    og_set_log(NULL, NULL, OG_LOG_WARN);
    test_sandbox_done(dir);
}

/* ---- (e) the newest version deleted ---------------------------------------------------------- */

static void test_newest_version_deleted(void **state)
{
    (void)state;
    char dir[256], root[512], vpath[700];
    test_sandbox_new(dir, sizeof dir, "repair-e");
    snprintf(root, sizeof root, "%s/g", dir);
    make_graph(root);
    version_path(vpath, sizeof vpath, root, 4);
    assert_int_equal(unlink(vpath), 0);
    og_set_log(NULL, NULL, OG_LOG_ERROR);
    int rc = load_one(root, LOADS[0]);
    if (rc != OG_E_CORRUPT)
        fail_msg("a write after the newest version was deleted: %s (%d): %s", og_code_name(rc), rc,
                 og_error_last()->message);
    assert_non_null(strstr(og_error_last()->message, "omnigraph repair"));
    og_set_log(NULL, NULL, OG_LOG_WARN);
    test_sandbox_done(dir);
}

/* ---- (j) a writer stalled inside the gates ----------------------------------------------------
 */

typedef struct stall {
    int ready_w; /* written once inside the gates */
    int go_r;    /* read (blocks) until the parent lets go */
} stall;

static void stall_in_gates(void *arg)
{
    stall *st = arg;
    char c = 'x';
    if (write(st->ready_w, &c, 1) != 1) _exit(90);
    if (read(st->go_r, &c, 1) < 0) _exit(91);
}

static void test_gate_timeout_names_holder(void **state)
{
    (void)state;
    char dir[256], root[512];
    test_sandbox_new(dir, sizeof dir, "repair-j");
    snprintf(root, sizeof root, "%s/g", dir);
    make_graph(root);
    int ready[2], go[2];
    assert_int_equal(pipe(ready), 0);
    assert_int_equal(pipe(go), 0);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        close(ready[0]);
        close(go[1]);
        write_graph *w = NULL;
        if (wf_open(&w, root) != 0) _exit(92);
        stall st = {ready[1], go[0]};
        w->test_in_gates = stall_in_gates;
        w->test_in_gates_arg = &st;
        int rc = wf_load(w, LOADS[2], EXEC_LOAD_MERGE, NULL);
        write_graph_close(w);
        _exit(rc == 0 ? 0 : 93);
    }
    close(ready[1]);
    close(go[0]);
    char c;
    assert_int_equal(read(ready[0], &c, 1), 1); /* the child holds the gates now */

    /* A short configured timeout: the wait ends typed, naming the holder. */
    og_open_options oo = OG_OPEN_OPTIONS_INIT;
    oo.gate_timeout_ms = 50;
    og_graph *g = NULL;
    int rc = og_graph_open(&g, root, &oo);
    if (rc == 0) {
        og_load_options lo = OG_LOAD_OPTIONS_INIT;
        lo.mode = OG_LOAD_MERGE;
        og_write_result *r = NULL;
        rc = og_graph_load(&r, g, "x.jsonl", LOADS[0], strlen(LOADS[0]), &lo);
        og_write_result_free(r);
    }
    assert_og_error(rc, OG_E_RESOURCE_LIMIT);
    char pid[32];
    snprintf(pid, sizeof pid, "pid %d", (int)child);
    assert_non_null(strstr(og_error_last()->message, pid));
    assert_non_null(og_error_last()->operation_id);
    assert_non_null(strstr(og_error_last()->message, og_error_last()->operation_id));
    assert_non_null(strstr(og_error_last()->message, "gate timeout (50 ms)"));
    og_graph_close(g); /* NULL when the open itself waited (its recovery barrier) */

    /* The environment variable sets the same when the option is 0. */
    setenv("OG_GATE_TIMEOUT_MS", "40", 1);
    og_open_options od = OG_OPEN_OPTIONS_INIT;
    g = NULL;
    rc = og_graph_open(&g, root, &od);
    if (rc == 0) {
        og_load_options lo = OG_LOAD_OPTIONS_INIT;
        lo.mode = OG_LOAD_MERGE;
        og_write_result *r = NULL;
        rc = og_graph_load(&r, g, "x.jsonl", LOADS[0], strlen(LOADS[0]), &lo);
        og_write_result_free(r);
    }
    assert_og_error(rc, OG_E_RESOURCE_LIMIT);
    assert_non_null(strstr(og_error_last()->message, "gate timeout (40 ms)"));
    og_graph_close(g);
    setenv("OG_GATE_TIMEOUT_MS", "soon", 1);
    assert_og_error(og_graph_open(&g, root, &od), OG_E_BAD_REQUEST);
    unsetenv("OG_GATE_TIMEOUT_MS");

    /* Let the holder go: it finishes, and the next write succeeds. */
    assert_int_equal(write(go[1], "g", 1), 1);
    int st = 0;
    assert_int_equal(waitpid(child, &st, 0), child);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    assert_og_ok(load_one(root, LOADS[0]));
    close(ready[0]);
    close(go[1]);
    test_sandbox_done(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_truncated_head),
        cmocka_unit_test(test_manifest_data_file_gone),
        cmocka_unit_test(test_newest_version_deleted),
        cmocka_unit_test(test_gate_timeout_names_holder),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
