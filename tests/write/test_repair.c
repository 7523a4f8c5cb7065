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
 *   - og_root_repair: a dry run changes nothing; --confirm restores writability, rolls the
 *     lost version's data forward (its acknowledged rows read at the head, issue 33) and every
 *     earlier commit reads as before; crashing it after every durable operation (both crash
 *     modes) never loses an acknowledged commit, and reopening or repairing again restores
 *     service. */
#include "write_fixture.h"
#include "interop.h"

#include "core/failpoint.h"
#include "crashsim.h"

#include <dirent.h>
#include <jansson.h>
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
    assert_og_ok(og_root_init(&ir, root, &io));
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
    assert_og_ok(og_graph_commits(&l, g, NULL));
    assert_int_equal(og_commit_list_count(l), 3); /* versions 1..3 */
    assert_int_equal(og_commit_list_get(l, 0)->manifest_version, 3);
    og_commit_list_free(l);
    assert_true(warned_about(name));

    char *at3 = people_at(g, "3");
    assert_non_null(at3);
    assert_string_equal(at3, before_v3);
    og_snapshot_info *si = NULL;
    assert_og_ok(og_graph_snapshot(
        &si, g, &(og_snapshot_options){.version = OG_SNAPSHOT_OPTIONS_VERSION, .at = "2"}));
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
            rc = og_graph_commits(&l, g, NULL);
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
        assert_og_error(og_root_init(&ir, copy, &io), OG_E_EXISTS);
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
    if (!strstr(og_error_last()->message, "omnigraph repair"))
        fail_msg("no remedy: %s", og_error_last()->message);
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

static size_t count_commits(const char *root)
{
    og_graph *g = open_ro(root);
    og_commit_list *l = NULL;
    assert_og_ok(og_graph_commits(&l, g, NULL));
    size_t n = og_commit_list_count(l);
    og_commit_list_free(l);
    og_graph_close(g);
    return n;
}

/* Every file under root with its bytes, sorted by path: a listing that any change shows in. */
static char *listing(const char *root)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cd '%s' && find . -type f | LC_ALL=C sort | xargs md5sum", root);
    int st = 0;
    char *out = test_capture(cmd, &st);
    assert_int_equal(st, 0);
    assert_non_null(out);
    return out;
}

/* ---- og_root_repair ---------------------------------------------------------------------- */

/* Damage the newest version (truncate or delete it), repair it, and check: a dry run changes
 * nothing; confirm restores writes; every commit before the damage reads as it did. */
static void repair_case(bool delete_it)
{
    char dir[256], root[512], vpath[700];
    test_sandbox_new(dir, sizeof dir, delete_it ? "repair-del" : "repair-trunc");
    snprintf(root, sizeof root, "%s/g", dir);
    make_graph(root);
    og_graph *g = open_ro(root);
    char *before[4] = {NULL, NULL, NULL, NULL};
    og_commit_list *l = NULL;
    assert_og_ok(og_graph_commits(&l, g, NULL));
    assert_int_equal(og_commit_list_count(l), 4);
    char ids[4][OG_ID_LEN + 1];
    for (size_t i = 0; i < 4; i++) /* newest first: ids[i] is version 4 - i */
        snprintf(ids[i], sizeof ids[i], "%s", og_commit_list_get(l, i)->id);
    og_commit_list_free(l);
    for (int v = 1; v <= 3; v++) {
        char at[8];
        snprintf(at, sizeof at, "%d", v);
        assert_non_null(before[v] = people_at(g, at));
    }
    og_graph_close(g);
    version_path(vpath, sizeof vpath, root, 4);
    if (delete_it)
        assert_int_equal(unlink(vpath), 0);
    else
        assert_int_equal(truncate(vpath, 100), 0);
    og_set_log(NULL, NULL, OG_LOG_ERROR);

    /* A dry run reports and changes nothing. */
    char *list0 = listing(root);
    og_repair_result *r = NULL;
    assert_og_ok(og_root_repair(&r, root, NULL));
    assert_int_equal(r->clean, 0);
    assert_int_equal(r->repaired, 0);
    assert_int_equal(r->intact_version, 3);
    assert_int_equal(og_repair_result_damaged_count(r), delete_it ? 0 : 1);
    if (delete_it) assert_int_equal(r->missing_version, 4);
    assert_int_equal(og_repair_result_table_count(r), 1); /* the last load moved node:Person only */
    assert_string_equal(og_repair_result_table(r, 0)->alias, "node:Person");
    assert_true(og_repair_result_table(r, 0)->head > og_repair_result_table(r, 0)->published);
    assert_string_equal(r->commit_id, "");
    assert_string_equal(r->at_stake, ""); /* a load: its data can be rolled forward */
    assert_string_equal(r->branch, "main");
    og_repair_result_free(r);
    char *list1 = listing(root);
    assert_string_equal(list0, list1);
    assert_og_error(load_one(root, LOADS[0]), OG_E_CORRUPT); /* still refused */

    /* Confirm: the repair commit is version 4, writes work again. */
    og_repair_options ro = OG_REPAIR_OPTIONS_INIT;
    ro.confirm = 1;
    assert_og_ok(og_root_repair(&r, root, &ro));
    assert_int_equal(r->repaired, 1);
    assert_int_equal(r->manifest_version, 4);
    assert_int_equal(strlen(r->commit_id), OG_ID_LEN);
    char repair_id[OG_ID_LEN + 1];
    snprintf(repair_id, sizeof repair_id, "%s", r->commit_id);
    og_repair_result_free(r);
    assert_og_ok(load_one(root, "{\"type\":\"Person\",\"data\":{\"name\":\"dan\",\"age\":4}}\n"));

    /* Every commit before the damage reads as before; the head is the lost commit's state
     * (rolled forward: its acknowledged row reads) plus the new write; only the lost commit's
     * record is gone, and the repair commit names its actor. */
    g = open_ro(root);
    for (int v = 1; v <= 3; v++) {
        char at[8];
        snprintf(at, sizeof at, "%d", v);
        char *now = people_at(g, at);
        assert_non_null(now);
        assert_string_equal(now, before[v]);
        free(now);
    }
    char *head = people_at(g, NULL);
    assert_non_null(head);
    assert_non_null(strstr(head, "\"dan\""));
    assert_non_null(strstr(head, "\"cid\"")); /* the lost commit's row, kept */
    free(head);
    assert_og_ok(og_graph_commits(&l, g, NULL));
    assert_int_equal(og_commit_list_count(l), 5);
    assert_string_equal(og_commit_list_get(l, 1)->id, repair_id);
    assert_string_equal(og_commit_list_get(l, 1)->actor, "omnigraph:repair");
    for (size_t i = 2; i < 5; i++) /* versions 3, 2, 1: the same commits */
        assert_string_equal(og_commit_list_get(l, i)->id, ids[i - 1]);
    og_commit_list_free(l);
    og_graph_close(g);

    /* Audited with its own kind; nothing left to repair. */
    store *s = wf_store(root);
    write_audit_row *audit = NULL;
    size_t n_audit = 0;
    assert_og_ok(write_audit_list(s, &audit, &n_audit));
    assert_int_equal(n_audit, 1);
    assert_string_equal(audit[0].kind, "repaired");
    assert_string_equal(audit[0].commit_id, repair_id);
    free(audit);
    store_close(s);
    assert_og_ok(og_root_repair(&r, root, NULL));
    assert_int_equal(r->clean, 1);
    og_repair_result_free(r);
    og_verify_report *vr = NULL;
    assert_og_ok(og_root_verify(&vr, root, NULL));
    if (og_verify_report_problem_count(vr))
        fail_msg("verify after repair: %s: %s", og_verify_report_problem(vr, 0)->kind,
                 og_verify_report_problem(vr, 0)->message);
    og_verify_report_free(vr);
    og_set_log(NULL, NULL, OG_LOG_WARN);
    for (int v = 1; v <= 3; v++)
        free(before[v]);
    free(list0);
    free(list1);
    test_sandbox_done(dir);
}

static void test_repair_truncated(void **state)
{
    (void)state;
    repair_case(false);
}

static void test_repair_deleted(void **state)
{
    (void)state;
    repair_case(true);
}

/* A graph with no damage: repair says so and writes nothing. */
static void test_repair_clean(void **state)
{
    (void)state;
    char dir[256], root[512];
    test_sandbox_new(dir, sizeof dir, "repair-clean");
    snprintf(root, sizeof root, "%s/g", dir);
    make_graph(root);
    char *l0 = listing(root);
    for (int confirm = 0; confirm <= 1; confirm++) {
        og_repair_options ro = OG_REPAIR_OPTIONS_INIT;
        ro.confirm = confirm;
        og_repair_result *r = NULL;
        assert_og_ok(og_root_repair(&r, root, &ro));
        assert_int_equal(r->clean, 1);
        assert_int_equal(r->repaired, 0);
        assert_int_equal(r->latest_version, 4);
        og_repair_result_free(r);
    }
    char *l1 = listing(root);
    assert_string_equal(l0, l1);
    assert_int_equal(count_commits(root), 4);
    free(l0);
    free(l1);
    test_sandbox_done(dir);
}

/* ---- the schema files ------------------------------------------------------------------------
 * _schema.json gone: the graph still opens (the pair kept under the identity main's head
 * records, _schemas/<id>.*, is read); a dry run reports the root pair damaged and writes
 * nothing; confirm rewrites it and everything reads again. _schema.pg gone too: rebuilt from
 * the kept pair. The kept pair gone as well: _schema.pg is the only copy of the source left,
 * and with it gone, corrupt naming it, nothing written. */
static void test_repair_schema_files(void **state)
{
    (void)state;
    char dir[256], root[512], path[700];
    test_sandbox_new(dir, sizeof dir, "repair-schema");
    snprintf(root, sizeof root, "%s/g", dir);
    make_graph(root);
    og_graph *g = open_ro(root);
    char *before = people_at(g, NULL);
    assert_non_null(before);
    og_graph_close(g);
    snprintf(path, sizeof path, "%s/_schema.json", root);
    assert_int_equal(unlink(path), 0);
    og_open_options oo = OG_OPEN_OPTIONS_INIT;
    oo.read_only = 1;
    assert_og_ok(og_graph_open(&g, root, &oo));
    og_graph_close(g);

    char *l0 = listing(root);
    og_repair_result *r = NULL;
    assert_og_ok(og_root_repair(&r, root, NULL));
    assert_int_equal(r->schema_damaged, 1);
    assert_int_equal(r->clean, 0);
    assert_int_equal(r->repaired, 0);
    og_repair_result_free(r);
    char *l1 = listing(root);
    assert_string_equal(l0, l1);

    og_repair_options ro = OG_REPAIR_OPTIONS_INIT;
    ro.confirm = 1;
    assert_og_ok(og_root_repair(&r, root, &ro));
    assert_int_equal(r->schema_damaged, 1);
    assert_int_equal(r->repaired, 1);
    assert_string_equal(r->commit_id, ""); /* the manifest needed nothing */
    og_repair_result_free(r);
    g = open_ro(root);
    char *after = people_at(g, NULL);
    assert_non_null(after);
    assert_string_equal(after, before);
    og_graph_close(g);
    assert_og_ok(load_one(root, LOADS[0]));

    snprintf(path, sizeof path, "%s/_schema.pg", root);
    assert_int_equal(unlink(path), 0);
    assert_og_ok(og_root_repair(&r, root, &ro));
    assert_int_equal(r->schema_damaged, 1);
    assert_int_equal(r->repaired, 1);
    og_repair_result_free(r);
    assert_int_equal(access(path, F_OK), 0);
    /* the kept pair gone, then _schema.pg: nothing can rebuild the source */
    char cmd[900];
    snprintf(cmd, sizeof cmd, "rm -rf '%s/_schemas'", root);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(unlink(path), 0);
    char *l2 = listing(root);
    assert_og_error(og_root_repair(&r, root, &ro), OG_E_CORRUPT);
    assert_non_null(strstr(og_error_last()->message, "_schema.pg"));
    assert_string_equal(og_error_last()->object, "_schema.pg");
    char *l3 = listing(root);
    assert_string_equal(l2, l3);
    free(before);
    free(after);
    free(l0);
    free(l1);
    free(l2);
    free(l3);
    test_sandbox_done(dir);
}

/* ---- a lost schema apply: repair refuses, --force proceeds (issue 33 item 3) ----------------
 * The newest version is a schema apply (a new property, and a new type with a table): its
 * catalog is in no table, so rolling forward cannot keep it. A dry run reports what is at
 * stake; a confirm fails precondition_failed naming the lost version, the table at stake and
 * both remedies, and changes nothing; --force restores the intact version (the apply dropped),
 * audited as repaired_forced with the table versions dropped. */
static void test_repair_lost_schema_apply(void **state)
{
    (void)state;
    char dir[256], root[512], vpath[700];
    test_sandbox_new(dir, sizeof dir, "repair-schema-apply");
    snprintf(root, sizeof root, "%s/g", dir);
    make_graph(root);
    og_graph *g = NULL;
    assert_og_ok(og_graph_open(&g, root, NULL));
    static const char *NEXT = "node Person {\n"
                              "    name: String @key\n"
                              "    age: I32?\n"
                              "    city: String?\n"
                              "}\n"
                              "node Company {\n"
                              "    name: String @key\n"
                              "}\n"
                              "node Pet {\n"
                              "    name: String @key\n"
                              "}\n"
                              "edge WorksAt: Person -> Company { role: String? }\n";
    og_schema_apply_options so = OG_SCHEMA_APPLY_OPTIONS_INIT;
    og_schema_apply_result *sr = NULL;
    so.source = NEXT;
    assert_og_ok(og_graph_schema_apply(&sr, g, &so));
    assert_int_equal(sr->manifest_version, 5);
    og_schema_apply_result_free(sr);
    og_graph_close(g);
    version_path(vpath, sizeof vpath, root, 5);
    assert_int_equal(unlink(vpath), 0);
    og_set_log(NULL, NULL, OG_LOG_ERROR);

    og_repair_result *r = NULL;
    assert_og_ok(og_root_repair(&r, root, NULL)); /* a dry run reports the stake */
    assert_int_equal(r->intact_version, 4);
    assert_int_not_equal(strlen(r->at_stake), 0);
    assert_non_null(strstr(r->at_stake, "schema apply"));
    og_repair_result_free(r);

    char *l0 = listing(root);
    og_repair_options ro = OG_REPAIR_OPTIONS_INIT;
    ro.confirm = 1;
    assert_og_error(og_root_repair(&r, root, &ro), OG_E_PRECONDITION_FAILED);
    const char *m = og_error_last()->message;
    assert_non_null(strstr(m, "version 5"));
    assert_non_null(strstr(m, "node:Person"));
    assert_non_null(strstr(m, "backup"));
    assert_non_null(strstr(m, "--force"));
    char *l1 = listing(root);
    assert_string_equal(l0, l1); /* refused: nothing written */

    ro.force = 1;
    assert_og_ok(og_root_repair(&r, root, &ro));
    assert_int_equal(r->repaired, 1);
    assert_int_equal(r->forced, 1);
    assert_int_equal(r->manifest_version, 5);
    og_repair_result_free(r);
    store *s = wf_store(root);
    write_audit_row *audit = NULL;
    size_t n_audit = 0;
    assert_og_ok(write_audit_list(s, &audit, &n_audit));
    assert_int_equal(n_audit, 1);
    assert_string_equal(audit[0].kind, "repaired_forced");
    free(audit);
    store_close(s);
    assert_og_ok(load_one(root, LOADS[0]));
    og_verify_report *vr = NULL;
    assert_og_ok(og_root_verify(&vr, root, NULL));
    if (og_verify_report_problem_count(vr))
        fail_msg("verify after a forced repair: %s: %s", og_verify_report_problem(vr, 0)->kind,
                 og_verify_report_problem(vr, 0)->message);
    og_verify_report_free(vr);
    og_set_log(NULL, NULL, OG_LOG_WARN);
    free(l0);
    free(l1);
    test_sandbox_done(dir);
}

/* ---- branch refs (issue 33 item 3, F7) --------------------------------------------------------
 * A graph branch b with a commit of its own (a fork of node:Person). Its graph-level ref lost:
 * the branch vanishes; `repair --branch b --confirm` rebuilds the ref from the branch's first
 * version and the branch reads its row again. Its table-level ref damaged: verify names it
 * (lance cannot list the table's branches); `repair --confirm` rebuilds it (keeping the
 * damaged file) and verify is clean. */
static char *people_on(og_graph *g, const char *branch, int *rc)
{
    og_query_options qo = OG_QUERY_OPTIONS_INIT;
    qo.source = Q_PEOPLE;
    qo.branch = branch;
    og_result *r = NULL;
    *rc = og_graph_query(&r, g, &qo);
    if (*rc != 0) return NULL;
    char *out = calloc(1, 4096);
    size_t n = 0;
    for (uint64_t i = 0; i < og_result_row_count(r); i++) {
        size_t len = 0;
        const char *j = og_result_row_json(r, i, &len);
        assert_true(n + len + 2 < 4096);
        memcpy(out + n, j, len);
        n += len;
        out[n++] = '\n';
    }
    og_result_free(r);
    return out;
}

static void make_branch(const char *root)
{
    make_graph(root);
    og_graph *g = NULL;
    assert_og_ok(og_graph_open(&g, root, NULL));
    assert_og_ok(og_graph_create_branch(NULL, g, "b", NULL));
    og_load_options lo = OG_LOAD_OPTIONS_INIT;
    lo.mode = OG_LOAD_MERGE;
    lo.branch = "b";
    const char *row = "{\"type\":\"Person\",\"data\":{\"name\":\"eve\",\"age\":5}}\n";
    og_write_result *r = NULL;
    assert_og_ok(og_graph_load(&r, g, "b.jsonl", row, strlen(row), &lo));
    og_write_result_free(r);
    og_graph_close(g);
}

static void assert_verify_clean(const char *root, const char *when)
{
    og_verify_report *vr = NULL;
    assert_og_ok(og_root_verify(&vr, root, NULL));
    if (og_verify_report_problem_count(vr))
        fail_msg("verify %s: %s: %s", when, og_verify_report_problem(vr, 0)->kind,
                 og_verify_report_problem(vr, 0)->message);
    og_verify_report_free(vr);
}

static void test_repair_lost_branch_ref(void **state)
{
    (void)state;
    char dir[256], root[512], ref[700];
    test_sandbox_new(dir, sizeof dir, "repair-branch-ref");
    snprintf(root, sizeof root, "%s/g", dir);
    make_branch(root);
    og_graph *g = open_ro(root);
    int qrc = 0;
    char *before = people_on(g, "b", &qrc);
    assert_non_null(before);
    assert_non_null(strstr(before, "\"eve\""));
    og_graph_close(g);
    snprintf(ref, sizeof ref, "%s/__manifest.lance/_refs/branches/b.json", root);
    assert_int_equal(unlink(ref), 0);
    og_set_log(NULL, NULL, OG_LOG_ERROR);
    g = open_ro(root);
    assert_null(people_on(g, "b", &qrc));
    assert_int_equal(qrc, OG_E_NOT_FOUND); /* the branch vanished */
    og_graph_close(g);

    og_repair_options ro = OG_REPAIR_OPTIONS_INIT;
    og_repair_result *r = NULL;
    /* A repair of main does not rebuild it (only the operator knows whether the branch was
     * deleted on purpose) but names it, instead of "nothing to repair". */
    ro.confirm = 1;
    assert_og_ok(og_root_repair(&r, root, &ro));
    assert_int_equal(r->clean, 0);
    assert_int_equal(og_repair_result_refless_count(r), 1);
    assert_string_equal(og_repair_result_refless(r, 0), "b");
    assert_int_equal(og_repair_result_ref_count(r), 0);
    og_repair_result_free(r);
    assert_int_not_equal(access(ref, F_OK), 0);
    ro.confirm = 0;
    ro.branch = "b";
    assert_og_ok(og_root_repair(&r, root, &ro)); /* a dry run names the ref */
    assert_int_equal(og_repair_result_ref_count(r), 1);
    assert_non_null(strstr(og_repair_result_ref(r, 0), "__manifest.lance/_refs/branches/b.json"));
    assert_int_equal(r->repaired, 0);
    og_repair_result_free(r);
    assert_int_not_equal(access(ref, F_OK), 0);
    ro.confirm = 1;
    assert_og_ok(og_root_repair(&r, root, &ro));
    assert_int_equal(r->repaired, 1);
    assert_int_equal(og_repair_result_ref_count(r), 1);
    og_repair_result_free(r);
    g = open_ro(root);
    char *after = people_on(g, "b", &qrc);
    if (!after) fail_msg("branch b after repair: %s", og_error_last()->message);
    assert_string_equal(after, before);
    og_graph_close(g);
    assert_verify_clean(root, "after rebuilding the branch ref");
    og_set_log(NULL, NULL, OG_LOG_WARN);
    free(before);
    free(after);
    test_sandbox_done(dir);
}

static void test_repair_damaged_fork_ref(void **state)
{
    (void)state;
    char dir[256], root[512], cmd[1200];
    test_sandbox_new(dir, sizeof dir, "repair-fork-ref");
    snprintf(root, sizeof root, "%s/g", dir);
    make_branch(root);
    og_graph *g = open_ro(root);
    int qrc = 0;
    char *before = people_on(g, "b", &qrc);
    assert_non_null(before);
    og_graph_close(g);
    snprintf(cmd, sizeof cmd, "find '%s/nodes' -path '*/_refs/branches/b.json'", root);
    int st = 0;
    char *found = test_capture(cmd, &st);
    assert_non_null(found);
    char *nl = strchr(found, '\n');
    assert_non_null(nl);
    *nl = 0;
    assert_true(strlen(found) > 0);
    FILE *f = fopen(found, "w");
    assert_non_null(f);
    fputs("{\"parentVersion\": \"garbage", f);
    fclose(f);
    og_set_log(NULL, NULL, OG_LOG_ERROR);
    og_verify_report *vr = NULL; /* verify names it (reads of b skip the fork's ref) */
    assert_og_ok(og_root_verify(&vr, root, NULL));
    assert_int_equal(og_verify_report_problem_count(vr), 1);
    assert_string_equal(og_verify_report_problem(vr, 0)->kind, "table_branch_ref_damaged");
    assert_non_null(strstr(og_verify_report_problem(vr, 0)->remedy, "omnigraph repair"));
    og_verify_report_free(vr);

    og_repair_options ro = OG_REPAIR_OPTIONS_INIT;
    ro.confirm = 1;
    og_repair_result *r = NULL;
    assert_og_ok(og_root_repair(&r, root, &ro));
    assert_int_equal(r->repaired, 1);
    assert_int_equal(og_repair_result_ref_count(r), 1);
    assert_non_null(strstr(og_repair_result_ref(r, 0), "_refs/branches/b.json"));
    og_repair_result_free(r);
    g = open_ro(root);
    char *after = people_on(g, "b", &qrc);
    if (!after) fail_msg("branch b after repair: %s", og_error_last()->message);
    assert_string_equal(after, before);
    og_graph_close(g);
    assert_verify_clean(root, "after rebuilding the fork's ref");
    char kept[1400];
    snprintf(kept, sizeof kept, "%s/_repair/refs/%s", root, found + strlen(root) + 1);
    assert_int_equal(access(kept, F_OK), 0); /* the damaged file is kept */
    assert_og_ok(og_root_repair(&r, root, NULL));
    assert_int_equal(r->clean, 1);
    og_repair_result_free(r);
    og_set_log(NULL, NULL, OG_LOG_WARN);
    free(found);
    free(before);
    free(after);
    test_sandbox_done(dir);
}

/* ---- a flipped byte in the newest version, on main and on a branch (F2) ----------------------
 * The chain checksum finds it; repair --confirm moves the file aside and rolls its commit's
 * data forward: the acknowledged row reads at the head, verify is clean, writes work. */
static void flip_case(const char *branch)
{
    char dir[256], root[512], vdir[700], cmd[1400];
    test_sandbox_new(dir, sizeof dir, branch ? "repair-flip-branch" : "repair-flip");
    snprintf(root, sizeof root, "%s/g", dir);
    if (branch)
        make_branch(root); /* b's newest version holds "eve" */
    else
        make_graph(root); /* version 4 holds "cid" */
    const char *acked = branch ? "\"eve\"" : "\"cid\"";
    snprintf(vdir, sizeof vdir, "%s/__manifest.lance/%s_versions", root, branch ? "tree/b/" : "");
    /* the newest version file: V2 names count down, so the first in byte order */
    snprintf(cmd, sizeof cmd, "ls '%s' | LC_ALL=C sort | head -1", vdir);
    int st = 0;
    char *name = test_capture(cmd, &st);
    assert_non_null(name);
    name[strcspn(name, "\n")] = 0;
    char vfile[1200];
    snprintf(vfile, sizeof vfile, "%s/%s", vdir, name);
    struct stat sb;
    assert_int_equal(stat(vfile, &sb), 0);
    int fd = open(vfile, O_RDWR);
    assert_true(fd >= 0);
    unsigned char c;
    off_t mid = sb.st_size / 2;
    assert_int_equal(pread(fd, &c, 1, mid), 1);
    c ^= 0x01;
    assert_int_equal(pwrite(fd, &c, 1, mid), 1);
    close(fd);
    og_set_log(NULL, NULL, OG_LOG_ERROR);
    og_graph *g = open_ro(root);
    int qrc = 0;
    char *head = people_on(g, branch, &qrc);
    assert_null(head);
    assert_int_equal(qrc, OG_E_CORRUPT);
    og_graph_close(g);

    og_repair_options ro = OG_REPAIR_OPTIONS_INIT;
    ro.confirm = 1;
    ro.branch = branch;
    og_repair_result *r = NULL;
    if (og_root_repair(&r, root, &ro) != 0) fail_msg("repair: %s", og_error_last()->message);
    assert_int_equal(r->repaired, 1);
    assert_int_equal(og_repair_result_damaged_count(r), 1);
    assert_string_equal(r->at_stake, "");
    assert_int_equal(r->forced, 0);
    og_repair_result_free(r);
    g = open_ro(root);
    head = people_on(g, branch, &qrc);
    if (!head) fail_msg("head after repair: %s", og_error_last()->message);
    assert_non_null(strstr(head, acked)); /* the acknowledged write, rolled forward */
    free(head);
    og_graph_close(g);
    assert_verify_clean(root, "after repairing a flipped byte");
    og_graph *w = NULL;
    assert_og_ok(og_graph_open(&w, root, NULL));
    og_load_options lo = OG_LOAD_OPTIONS_INIT;
    lo.mode = OG_LOAD_MERGE;
    lo.branch = branch;
    og_write_result *wr = NULL;
    assert_og_ok(og_graph_load(&wr, w, "x.jsonl", LOADS[0], strlen(LOADS[0]), &lo));
    og_write_result_free(wr);
    og_graph_close(w);
    og_set_log(NULL, NULL, OG_LOG_WARN);
    free(name);
    test_sandbox_done(dir);
}

static void test_repair_flipped_byte(void **state)
{
    (void)state;
    flip_case(NULL);
}

static void test_repair_flipped_byte_branch(void **state)
{
    (void)state;
    flip_case("b");
}

/* ---- crash enumeration of repair --confirm --------------------------------------------------- */

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            print_message("k=%llu mode=%d: ", (unsigned long long)pt->k, (int)pt->mode);           \
            print_message(__VA_ARGS__);                                                            \
            print_message("\n");                                                                   \
            rc = 1;                                                                                \
            goto out;                                                                              \
        }                                                                                          \
    } while (0)

typedef struct crash_ctx {
    char template_dir[256];
    char ids[3][GRAPH_ID_LEN + 1]; /* the commits of versions 1..3 */
    uint64_t rows[3];              /* Person, Company, WorksAt at version 4 (the damaged one) */
    unsigned saw_repaired_by_open; /* points where a read-write open alone restored service */
} crash_ctx;

static const char *ALIASES[3] = {"node:Person", "node:Company", "edge:WorksAt"};

/* Versions 1..4 built through the write layer, version 4's file then truncated. */
static int build_damaged(store *s, crash_ctx *c)
{
    write_init_result ir;
    int rc = write_init(s, SCHEMA, strlen(SCHEMA), "s.pg", &ir);
    write_graph *g = NULL;
    if (rc == 0) rc = write_graph_open(&g, wf_borrow(s), "", NULL);
    for (size_t i = 0; rc == 0 && i < 3; i++)
        rc = wf_load(g, LOADS[i], EXEC_LOAD_MERGE, NULL);
    write_graph_close(g);
    graph_snapshot *snap = NULL;
    if (rc == 0) rc = graph_snapshot_load(&snap, s, NULL, 3, GRAPH_SNAP_LINEAGE);
    for (size_t i = 0; rc == 0 && i < snap->n_commits && i < 3; i++) /* newest first */
        memcpy(c->ids[i], snap->commits[i].id, sizeof c->ids[i]);
    graph_snapshot_free(snap);
    snap = NULL;
    if (rc == 0) rc = graph_snapshot_load(&snap, s, NULL, 4, 0);
    for (size_t i = 0; rc == 0 && i < 3; i++)
        c->rows[i] = graph_snapshot_table(snap, ALIASES[i])->row_count;
    graph_snapshot_free(snap);
    char name[LANCE_VERSION_NAME_CAP], key[STORE_KEY_MAX];
    core_buf b = CORE_BUF_INIT;
    if (rc == 0) rc = lance_version_file_name(name, sizeof name, LANCE_NAMING_V2, 4);
    if (rc == 0) rc = lance_key(key, GRAPH_MANIFEST_DIR, LANCE_VERSIONS_DIR, name);
    if (rc == 0) rc = store_get(s, key, 0, STORE_ALL, &b);
    if (rc == 0) rc = store_put(s, key, b.data, 100, 0);
    core_buf_free(&b);
    return rc;
}

static int setup_damaged(store *s, void *vctx)
{
    crash_ctx *c = vctx;
    if (!c->template_dir[0]) {
        test_sandbox_new(c->template_dir, sizeof c->template_dir, "repair-crash-template");
        store *t = NULL;
        int rc = store_local_open(&t, c->template_dir);
        if (rc == 0) rc = build_damaged(t, c);
        store_close(t);
        if (rc != 0) return rc;
    }
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cp -a '%s/.' '%s/'", c->template_dir, store_local_root(s));
    return system(cmd) == 0 ? 0 : OG_E_STORAGE;
}

static int repair_on(store *s, write_repair_report *rep)
{
    write_open_options wo = WRITE_OPEN_OPTIONS_INIT;
    wo.defer_recovery = true;
    write_graph *g = NULL;
    int rc = write_graph_open(&g, wf_borrow(s), "", &wo);
    if (rc == 0) rc = write_repair(g, NULL, true, false, rep);
    write_graph_close(g);
    return rc;
}

static int op_repair(store *s, void *vctx)
{
    (void)vctx;
    write_repair_report rep;
    int rc = repair_on(s, &rep);
    write_repair_report_clear(&rep);
    return rc;
}

static int check_repaired(store *s, void *vctx, const crashsim_point *pt)
{
    crash_ctx *c = vctx;
    int rc = 0;
    write_graph *g = NULL;
    graph_snapshot *snap = NULL;
    write_audit_row *audit = NULL;
    size_t n_audit = 0;
    char why[512];
    write_repair_report rep;
    memset(&rep, 0, sizeof rep);
    /* Service comes back by a read-write open (its recovery finishes an interrupted repair)
     * or, when the repair had not got that far, by running it again. */
    if (write_graph_open(&g, wf_borrow(s), "", NULL) == 0) {
        /* Counted when the open alone left a readable head with every pin at its HEAD. */
        bool sound = graph_snapshot_load(&snap, s, NULL, 0, 0) == 0;
        for (size_t i = 0; sound && i < 3; i++) {
            const graph_table *t = graph_snapshot_table(snap, ALIASES[i]);
            sound = t && wf_check_table(s, t, why, sizeof why) == 0;
        }
        c->saw_repaired_by_open += sound;
        graph_snapshot_free(snap);
        snap = NULL;
        write_graph_close(g);
        g = NULL;
    }
    og_error_clear();
    CHECK(repair_on(s, &rep) == 0, "repair again: %s", og_error_last()->message);
    write_repair_report_clear(&rep);
    CHECK(write_graph_open(&g, wf_borrow(s), "", NULL) == 0, "open after repair: %s",
          og_error_last()->message);
    CHECK(write_audit_list(s, &audit, &n_audit) == 0, "audit: %s", og_error_last()->message);
    size_t repaired = 0;
    for (size_t i = 0; i < n_audit; i++)
        repaired += strcmp(audit[i].kind, "repaired") == 0;
    CHECK(repaired == 1 && n_audit == 1, "%zu audit rows, %zu repaired", n_audit, repaired);
    CHECK(graph_snapshot_load(&snap, s, NULL, 0, GRAPH_SNAP_LINEAGE) == 0, "snapshot: %s",
          og_error_last()->message);
    CHECK(snap->manifest_version == 4, "head at manifest version %llu",
          (unsigned long long)snap->manifest_version);
    /* Every acknowledged commit whose files are intact is still there, at its version, and
     * the damaged version's data is rolled forward (its rows count below). */
    for (size_t i = 0; i < 3; i++) {
        bool found = false;
        for (size_t k = 0; k < snap->n_commits && !found; k++)
            found = strcmp(snap->commits[k].id, c->ids[i]) == 0 &&
                    snap->commits[k].manifest_version == 3 - i;
        CHECK(found, "commit %s of version %zu is gone", c->ids[i], 3 - i);
    }
    for (size_t i = 0; i < 3; i++) {
        const graph_table *t = graph_snapshot_table(snap, ALIASES[i]);
        CHECK(t != NULL, "no table %s", ALIASES[i]);
        CHECK(wf_check_table(s, t, why, sizeof why) == 0, "%s", why);
        CHECK(t->row_count == c->rows[i], "%s has %llu rows, version 4 had %llu", ALIASES[i],
              (unsigned long long)t->row_count, (unsigned long long)c->rows[i]);
    }
    CHECK(wf_load(g, LOADS[0], EXEC_LOAD_MERGE, NULL) == 0, "follow-up load: %s",
          og_error_last()->message);
out:
    free(audit);
    graph_snapshot_free(snap);
    write_graph_close(g);
    return rc;
}

static void test_crash_during_repair(void **state)
{
    (void)state;
    crash_ctx c;
    memset(&c, 0, sizeof c);
    og_set_log(NULL, NULL, OG_LOG_ERROR);
    crashsim_case cc = {"repair", &c, setup_damaged, op_repair, check_repaired};
    crashsim_report rep;
    crashsim_run(&cc, &rep);
    og_set_log(NULL, NULL, OG_LOG_WARN);
    print_message("repair --confirm: %llu durable ops, %llu crash runs, %u finished by a reopen\n",
                  (unsigned long long)rep.n, (unsigned long long)rep.runs, c.saw_repaired_by_open);
    if (rep.violations)
        fail_msg("%llu violations; first: %s", (unsigned long long)rep.violations, rep.first);
    /* move aside (copy, delete), sidecar, commit, audit, sidecar delete */
    assert_true(rep.n >= 5);
    /* a crash after the repair intent was written is finished by the reopen's recovery; one
     * before it needs the re-run */
    assert_true(c.saw_repaired_by_open > 0);
    assert_true(c.saw_repaired_by_open < rep.runs + 1);
    test_sandbox_done(c.template_dir);
}

/* ---- what lancedb sees after a repair -------------------------------------------------------
 * The graph manifest stays a valid Lance dataset: lancedb lists versions 1..4 (the repair
 * commit took the number of the version moved aside) and reads the intact versions with the
 * row counts it read before the damage. */
static void test_repair_lancedb_reads(void **state)
{
    (void)state;
    char dir[256], root[512], vpath[700];
    test_sandbox_new(dir, sizeof dir, "repair-lancedb");
    snprintf(root, sizeof root, "%s/g", dir);
    make_graph(root);
    int64_t before[4];
    for (int v = 1; v <= 3; v++) {
        json_t *j =
            test_interop_tool("lance_tool.cjs", "count '%s' __manifest --version %d", root, v);
        before[v] = test_json_int(j, "count");
        json_decref(j);
    }
    version_path(vpath, sizeof vpath, root, 4);
    assert_int_equal(truncate(vpath, 100), 0);
    og_set_log(NULL, NULL, OG_LOG_ERROR);
    og_repair_options ro = OG_REPAIR_OPTIONS_INIT;
    ro.confirm = 1;
    og_repair_result *r = NULL;
    assert_og_ok(og_root_repair(&r, root, &ro));
    assert_int_equal(r->manifest_version, 4);
    og_repair_result_free(r);
    og_set_log(NULL, NULL, OG_LOG_WARN);
    json_t *j = test_interop_tool("lance_tool.cjs", "versions '%s' __manifest", root);
    json_t *vs = json_object_get(j, "versions");
    assert_int_equal(json_array_size(vs), 4);
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(test_json_int(json_array_get(vs, i), "version"), (int64_t)i + 1);
    json_decref(j);
    for (int v = 1; v <= 3; v++) {
        j = test_interop_tool("lance_tool.cjs", "count '%s' __manifest --version %d", root, v);
        assert_int_equal(test_json_int(j, "count"), before[v]);
        json_decref(j);
    }
    j = test_interop_tool("lance_tool.cjs", "count '%s' __manifest", root); /* the head reads */
    assert_true(test_json_int(j, "count") > before[3]);
    json_decref(j);
    test_sandbox_done(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_truncated_head),
        cmocka_unit_test(test_manifest_data_file_gone),
        cmocka_unit_test(test_newest_version_deleted),
        cmocka_unit_test(test_gate_timeout_names_holder),
        cmocka_unit_test(test_repair_truncated),
        cmocka_unit_test(test_repair_deleted),
        cmocka_unit_test(test_repair_clean),
        cmocka_unit_test(test_repair_schema_files),
        cmocka_unit_test(test_repair_lost_schema_apply),
        cmocka_unit_test(test_repair_lost_branch_ref),
        cmocka_unit_test(test_repair_damaged_fork_ref),
        cmocka_unit_test(test_repair_flipped_byte),
        cmocka_unit_test(test_repair_flipped_byte_branch),
        cmocka_unit_test(test_crash_during_repair),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    const struct CMUnitTest interop[] = {
        cmocka_unit_test(test_repair_lancedb_reads),
    };
    return failed + cmocka_run_group_tests(interop, test_interop_group_setup, NULL);
}
