/* write_backup (src/write/backup.c) on its own stores:
 *  - a copy of a graph with history, deletions and compactions holds exactly the head: the
 *    same snapshot, one Lance version per dataset, the same rows (an export of each);
 *  - files of the pin vanishing mid-copy (the fault store's NOT_FOUND on a read) make it pin
 *    again; the head having moved in between, the copy holds the new head and nothing of the
 *    abandoned pin (no second table version below the one it holds);
 *  - files vanishing on every attempt: it gives up with OG_E_NOT_FOUND and the destination
 *    holds no graph;
 *  - crash enumeration on the destination (every durable op, process crash and power loss):
 *    the destination holds no graph, or one that verifies as the source's head; holding no
 *    graph, it is empty or reads as an unfinished backup (not_found, run the backup again),
 *    never as a damaged graph. */
#include "write_fixture.h"

#include "crashsim.h"
#include "exec/export.h"
#include "graph/graph.h"
#include "graph/graph_handle.h"
#include "write/backup.h"

#include <string.h>

static const char *SCHEMA = "node Person { name: String @key  age: I32?  tags: [String]? }\n"
                            "node Company { name: String @key }\n"
                            "edge WorksAt: Person -> Company { role: String? }\n";

static char g_dir[256];

/* A graph with history in dir/src: loads, an update and a delete (deletion files), and many
 * small writes (automatic compaction runs inline on this handle). */
static void build_source(const char *root)
{
    store *s = wf_store(root);
    write_init_result ir;
    assert_og_ok(write_init(s, SCHEMA, strlen(SCHEMA), "s.pg", &ir));
    store_close(s);
    write_graph *g = NULL;
    assert_og_ok(wf_open(&g, root));
    assert_og_ok(
        wf_load(g,
                "{\"type\":\"Person\",\"data\":{\"name\":\"ann\",\"age\":1,\"tags\":[\"x\"]}}\n"
                "{\"type\":\"Company\",\"data\":{\"name\":\"acme\"}}\n"
                "{\"edge\":\"WorksAt\",\"from\":\"ann\",\"to\":\"acme\"}\n",
                EXEC_LOAD_OVERWRITE, NULL));
    for (int i = 0; i < 20; i++) {
        char line[160];
        snprintf(line, sizeof line,
                 "{\"type\":\"Person\",\"data\":{\"name\":\"p%d\",\"age\":%d}}\n", i, i);
        assert_og_ok(wf_load(g, line, EXEC_LOAD_APPEND, NULL));
    }
    assert_og_ok(wf_load(g, "{\"type\":\"Person\",\"data\":{\"name\":\"p3\",\"age\":33}}\n",
                         EXEC_LOAD_MERGE, NULL));
    write_graph_close(g);
}

static int collect(void *arg, const void *data, size_t len)
{
    return core_buf_append(arg, data, len);
}

/* The export of the head of the graph on s. */
static char *export_of(store *s)
{
    graph_snapshot *snap = NULL;
    assert_og_ok(graph_snapshot_load(&snap, s, NULL, 0, 0));
    core_buf b = CORE_BUF_INIT;
    assert_og_ok(exec_export(s, snap, NULL, 0, collect, &b, NULL));
    graph_snapshot_free(snap);
    char *out = strdup(core_buf_cstr(&b));
    core_buf_free(&b);
    return out;
}

/* Versions present in a dataset of the copy. */
static size_t versions_in(store *s, const char *root)
{
    lance_version_list l;
    assert_og_ok(lance_versions_list(s, root, &l));
    size_t n = l.n;
    lance_version_list_free(&l);
    return n;
}

static void assert_one_version_each(store *dst)
{
    graph_snapshot *snap = NULL;
    assert_og_ok(graph_snapshot_load(&snap, dst, NULL, 0, 0));
    for (size_t i = 0; i < snap->n_tables; i++)
        assert_int_equal(versions_in(dst, snap->tables[i].path), 1);
    assert_int_equal(versions_in(dst, GRAPH_MANIFEST_DIR), 1);
    graph_snapshot_free(snap);
}

static int setup(void **state)
{
    (void)state;
    test_sandbox_new(g_dir, sizeof g_dir, "write-backup");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    test_sandbox_done(g_dir);
    return 0;
}

static void test_backup_copy(void **state)
{
    (void)state;
    char src_dir[512], dst_dir[512];
    snprintf(src_dir, sizeof src_dir, "%s/src", g_dir);
    snprintf(dst_dir, sizeof dst_dir, "%s/dst", g_dir);
    build_source(src_dir);
    store *src = wf_store(src_dir), *dst = wf_store(dst_dir);
    write_backup_report rep;
    assert_og_ok(write_backup(src, dst, NULL, &rep));
    assert_int_equal(rep.attempts, 1);
    assert_int_equal(rep.tables, 3);
    assert_int_equal(rep.rows, 21 + 1 + 1);
    graph_snapshot *a = NULL, *b = NULL;
    assert_og_ok(graph_snapshot_load(&a, src, NULL, 0, 0));
    assert_og_ok(graph_snapshot_load(&b, dst, NULL, 0, 0));
    assert_int_equal(a->manifest_version, b->manifest_version);
    assert_int_equal(rep.manifest_version, a->manifest_version);
    assert_string_equal(a->head, b->head);
    assert_string_equal(rep.commit_id, a->head);
    for (size_t i = 0; i < a->n_tables; i++) {
        assert_string_equal(a->tables[i].path, b->tables[i].path);
        assert_int_equal(a->tables[i].version, b->tables[i].version);
    }
    graph_snapshot_free(a);
    graph_snapshot_free(b);
    assert_one_version_each(dst);
    char *ea = export_of(src), *eb = export_of(dst);
    assert_string_equal(ea, eb);
    free(ea);
    free(eb);
    /* No sidecar directory, no audit log (the source has none), nothing of the lock files. */
    store_meta m;
    assert_int_equal(store_head(dst, GRAPH_SCHEMA_PG, &m), 0);
    store_list l = {0};
    assert_og_ok(store_list_prefix(dst, GRAPH_RECOVERY_DIR "/", 0, &l));
    assert_int_equal(l.count, 0);
    store_list_free(&l);
    /* The copy is a graph writes go on in. */
    store_close(dst);
    write_graph *g = NULL;
    assert_og_ok(wf_open(&g, dst_dir));
    assert_og_ok(
        wf_load(g, "{\"type\":\"Person\",\"data\":{\"name\":\"new\"}}\n", EXEC_LOAD_APPEND, NULL));
    write_graph_close(g);
    store_close(src);
}

/* The hook between attempts: a write moves the head (Person's table gets a new version),
 * then the next read of the source fails again while `fail_again` lasts. */
typedef struct retry_ctx {
    const char *src_dir;
    store *fault;
    unsigned calls;
    int fail_again;
} retry_ctx;

static void between(void *arg, unsigned attempt)
{
    retry_ctx *c = arg;
    c->calls++;
    write_graph *g = NULL;
    assert_og_ok(wf_open(&g, c->src_dir));
    char line[128];
    snprintf(line, sizeof line, "{\"type\":\"Person\",\"data\":{\"name\":\"r%u\"}}\n", attempt);
    assert_og_ok(wf_load(g, line, EXEC_LOAD_APPEND, NULL));
    write_graph_close(g);
    if (c->fail_again)
        store_fault_fail_nth(c->fault, 3, STORE_OP_BIT(STORE_OP_GET), STORE_FAULT_NOT_FOUND);
}

static void test_backup_repins(void **state)
{
    (void)state;
    char src_dir[512], dst_dir[512];
    snprintf(src_dir, sizeof src_dir, "%s/src", g_dir);
    snprintf(dst_dir, sizeof dst_dir, "%s/dst", g_dir);
    build_source(src_dir);
    store *inner = wf_store(src_dir), *src = NULL, *dst = wf_store(dst_dir);
    assert_og_ok(store_fault_open(&src, inner, 1));
    /* Fail a read well into the copy: some tables are copied by then. */
    store_fault_fail_nth(src, 25, STORE_OP_BIT(STORE_OP_GET), STORE_FAULT_NOT_FOUND);
    retry_ctx rc = {.src_dir = src_dir, .fault = src};
    write_backup_options o = WRITE_BACKUP_OPTIONS_INIT;
    o.test_between_attempts = between;
    o.test_arg = &rc;
    write_backup_report rep;
    assert_og_ok(write_backup(src, dst, &o, &rep));
    assert_int_equal(rep.attempts, 2);
    assert_int_equal(rc.calls, 1);
    graph_snapshot *a = NULL;
    assert_og_ok(graph_snapshot_load(&a, inner, NULL, 0, 0));
    assert_string_equal(rep.commit_id, a->head); /* the head after the hook's write */
    graph_snapshot_free(a);
    assert_one_version_each(dst);
    char *ea = export_of(inner), *eb = export_of(dst);
    assert_string_equal(ea, eb);
    assert_non_null(strstr(eb, "\"r1\""));
    free(ea);
    free(eb);
    store_close(dst);
    store_close(src);
}

static void test_backup_gives_up(void **state)
{
    (void)state;
    char src_dir[512], dst_dir[512];
    snprintf(src_dir, sizeof src_dir, "%s/src", g_dir);
    snprintf(dst_dir, sizeof dst_dir, "%s/dst", g_dir);
    build_source(src_dir);
    store *inner = wf_store(src_dir), *src = NULL, *dst = wf_store(dst_dir);
    assert_og_ok(store_fault_open(&src, inner, 1));
    store_fault_fail_nth(src, 25, STORE_OP_BIT(STORE_OP_GET), STORE_FAULT_NOT_FOUND);
    retry_ctx rc = {.src_dir = src_dir, .fault = src, .fail_again = 1};
    write_backup_options o = WRITE_BACKUP_OPTIONS_INIT;
    o.attempts = 3;
    o.test_between_attempts = between;
    o.test_arg = &rc;
    write_backup_report rep;
    assert_og_error(write_backup(src, dst, &o, &rep), OG_E_NOT_FOUND);
    if (!strstr(og_error_last()->message, "kept vanishing (3 attempts)"))
        fail_msg("%s", og_error_last()->message);
    assert_int_equal(rc.calls, 2);
    graph_snapshot *b = NULL;
    assert_og_error(graph_snapshot_load(&b, dst, NULL, 0, 0), OG_E_NOT_FOUND);
    store_close(dst);
    store_close(src);
}

/* ---- crash enumeration on the destination ------------------------------------------------ */

typedef struct crash_ctx {
    char src_dir[512];
    char head[GRAPH_ID_LEN + 1];
    char *export_text;
    unsigned saw_none, saw_copy, saw_claim;
} crash_ctx;

static int crash_op(store *s, void *arg)
{
    crash_ctx *c = arg;
    store *src = NULL;
    int rc = store_local_open_readonly(&src, c->src_dir);
    if (rc) return rc;
    write_backup_report rep;
    rc = write_backup(src, s, NULL, &rep);
    store_close(src);
    return rc;
}

static int crash_check(store *s, void *arg, const crashsim_point *pt)
{
    crash_ctx *c = arg;
    graph_snapshot *snap = NULL;
    int rc = graph_snapshot_load(&snap, s, NULL, 0, 0);
    if (rc == OG_E_NOT_FOUND && pt->k > 0) {
        /* No graph: the commit point was not reached (or not made durable). Anything of the
         * copy there reads as an unfinished backup (its claim came first), never as a graph
         * that lost its manifest; an empty destination reads as no graph at all. */
        c->saw_none++;
        og_error_clear();
        store_meta meta;
        if (store_head(s, GRAPH_BACKUP_CLAIM, &meta) != 0) {
            og_error_clear();
            store_list l = {0};
            if (store_list_prefix(s, "", 0, &l) != 0) return 1;
            size_t n = l.count;
            store_list_free(&l);
            return n != 0;
        }
        c->saw_claim++;
        if (graph_root_absent_error(s) != OG_E_NOT_FOUND) return 1;
        if (!strstr(og_error_last()->message, "run `omnigraph backup` again")) return 1;
        if (graph_root_check_unfinished(s) != OG_E_NOT_FOUND) return 1;
        og_error_clear();
        return 0;
    }
    if (rc) return 1;
    int bad = strcmp(snap->head, c->head) != 0;
    graph_snapshot_free(snap);
    if (bad) return 1;
    char *e = export_of(s);
    bad = strcmp(e, c->export_text) != 0;
    free(e);
    c->saw_copy++;
    return bad;
}

static void test_backup_crash(void **state)
{
    (void)state;
    crash_ctx c = {0};
    snprintf(c.src_dir, sizeof c.src_dir, "%s/src", g_dir);
    build_source(c.src_dir);
    store *src = wf_store(c.src_dir);
    graph_snapshot *snap = NULL;
    assert_og_ok(graph_snapshot_load(&snap, src, NULL, 0, 0));
    snprintf(c.head, sizeof c.head, "%s", snap->head);
    graph_snapshot_free(snap);
    c.export_text = export_of(src);
    store_close(src);
    crashsim_case cc = {.name = "backup", .ctx = &c, .op = crash_op, .check = crash_check};
    crashsim_report r;
    crashsim_run(&cc, &r);
    if (r.violations)
        fail_msg("%llu violations; first: %s", (unsigned long long)r.violations, r.first);
    assert_true(r.n > 10);
    assert_true(c.saw_none > 0);
    assert_true(c.saw_claim > 0);
    assert_true(c.saw_copy > 0);
    free(c.export_text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_backup_copy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_backup_repins, setup, teardown),
        cmocka_unit_test_setup_teardown(test_backup_gives_up, setup, teardown),
        cmocka_unit_test_setup_teardown(test_backup_crash, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
