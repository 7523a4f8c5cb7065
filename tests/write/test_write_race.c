/* Read-set races (RFC-022 §11.2), each with threads (separate handles on one root, sharing the
 * process's gates) and with separate processes (no shared gates; the OS advisory locks and the
 * manifest CAS are all they share):
 *   - two distinct ids racing on one @unique value never both publish;
 *   - an edge insert racing deletion (replacement) of its endpoint revalidates or conflicts;
 *   - a probe of a table the write does not touch takes part in arbitration (deterministic:
 *     a concurrent commit lands in the window between prepare and the gates);
 *   - a recovery-required state is never advanced around.
 * Afterwards every edge's endpoints exist, every pin equals its Lance HEAD, and no sidecar is
 * left. */
#include "testutil.h"

#include "exec/load.h"
#include "lance/version.h"
#include "write/internal.h"

#include <pthread.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *SCHEMA =
    "node Person {\n"
    "    name: String @key\n"
    "    email: String? @unique\n"
    "}\n"
    "node Company {\n"
    "    name: String @key\n"
    "}\n"
    "edge WorksAt: Person -> Company { role: String? }\n";

#define NWRITERS 6

static store *open_store(const char *dir)
{
    store *s = NULL;
    assert_og_ok(store_local_open(&s, dir));
    return s;
}

static void make_graph(char *dir, size_t cap, const char *tag)
{
    test_mkdtemp(dir, cap, tag);
    store *s = open_store(dir);
    write_init_result ir;
    assert_og_ok(write_init(s, SCHEMA, strlen(SCHEMA), "s.pg", &ir));
    store_close(s);
}

static int open_graph(write_graph **g, const char *dir)
{
    store *s = NULL;
    int rc = store_local_open(&s, dir);
    if (rc != 0)
        return rc;
    return write_graph_open(g, s, dir, NULL);
}

static int load_text(write_graph *g, const char *text, exec_load_mode mode)
{
    graph_change_set cs;
    memset(&cs, 0, sizeof cs);
    exec_load_stats st;
    int rc = exec_load_parse(&cs, g->catalog, text, strlen(text), "d.jsonl", mode, &st, NULL,
                             NULL);
    write_result r;
    if (rc == 0)
        rc = write_changes(g, WRITE_KIND_LOAD, &cs, NULL, &r);
    graph_change_set_clear(&cs);
    return rc;
}

/* Every edge endpoint exists, pins equal HEADs, no sidecar is left. */
static void assert_graph_sound(const char *dir)
{
    write_graph *g = NULL;
    assert_og_ok(open_graph(&g, dir));
    graph_snapshot *snap = NULL;
    assert_og_ok(graph_snapshot_load(&snap, g->s, NULL, 0, 0));
    for (size_t i = 0; i < snap->n_tables; i++) {
        char root[STORE_KEY_MAX];
        uint64_t head = 0;
        lance_naming nm;
        assert_og_ok(lance_branch_root(root, snap->tables[i].path, snap->tables[i].table_branch));
        assert_og_ok(lance_version_latest(g->s, root, &head, &nm));
        assert_int_equal(head, snap->tables[i].version);
    }
    /* referential integrity of WorksAt */
    const graph_table *e = graph_snapshot_table(snap, "edge:WorksAt");
    const graph_table *p = graph_snapshot_table(snap, "node:Person");
    const graph_table *c = graph_snapshot_table(snap, "node:Company");
    lance_dataset *eds = NULL, *pds = NULL, *cds = NULL;
    assert_og_ok(graph_table_open(&eds, g->s, e, LANCE_ACCESS_READ));
    assert_og_ok(graph_table_open(&pds, g->s, p, LANCE_ACCESS_READ));
    assert_og_ok(graph_table_open(&cds, g->s, c, LANCE_ACCESS_READ));
    arrow_batch *eb = NULL, *pb = NULL, *cb = NULL;
    assert_og_ok(lance_dataset_scan_all(&eb, eds, NULL));
    assert_og_ok(lance_dataset_scan_all(&pb, pds, NULL));
    assert_og_ok(lance_dataset_scan_all(&cb, cds, NULL));
    int si = arrow_schema_find(&eb->schema, "src"), di = arrow_schema_find(&eb->schema, "dst");
    for (int64_t r = 0; r < eb->num_rows; r++) {
        size_t sl, dl;
        const uint8_t *sv = arrow_array_get_bytes(eb->columns[si], r, &sl);
        const uint8_t *dv = arrow_array_get_bytes(eb->columns[di], r, &dl);
        bool fs = false, fd = false;
        for (int64_t k = 0; k < pb->num_rows && !fs; k++) {
            size_t l;
            const uint8_t *v = arrow_array_get_bytes(pb->columns[0], k, &l);
            fs = l == sl && memcmp(v, sv, l) == 0;
        }
        for (int64_t k = 0; k < cb->num_rows && !fd; k++) {
            size_t l;
            const uint8_t *v = arrow_array_get_bytes(cb->columns[0], k, &l);
            fd = l == dl && memcmp(v, dv, l) == 0;
        }
        if (!fs || !fd)
            fail_msg("orphan edge %.*s -> %.*s", (int)sl, sv, (int)dl, dv);
    }
    arrow_batch_free(eb);
    arrow_batch_free(pb);
    arrow_batch_free(cb);
    lance_dataset_free(eds);
    lance_dataset_free(pds);
    lance_dataset_free(cds);
    graph_snapshot_free(snap);
    char(*ids)[GRAPH_ID_LEN + 1] = NULL;
    size_t n = 0;
    assert_og_ok(write_sidecar_list(g->s, &ids, &n));
    free(ids);
    assert_int_equal(n, 0);
    write_graph_close(g);
}

static uint64_t rows_of(const char *dir, const char *alias)
{
    store *s = open_store(dir);
    graph_snapshot *snap = NULL;
    assert_og_ok(graph_snapshot_load(&snap, s, NULL, 0, 0));
    uint64_t n = graph_snapshot_table(snap, alias)->row_count;
    graph_snapshot_free(snap);
    store_close(s);
    return n;
}

/* ---- cell 1: @unique ----------------------------------------------------------------------- */

typedef struct unique_arg {
    const char *dir;
    int idx;
    int rc;
} unique_arg;

static void *unique_writer(void *p)
{
    unique_arg *a = p;
    write_graph *g = NULL;
    a->rc = open_graph(&g, a->dir);
    if (a->rc == 0) {
        char line[200];
        snprintf(line, sizeof line,
                 "{\"type\":\"Person\",\"data\":{\"name\":\"p%d\",\"email\":\"same@x.org\"}}\n",
                 a->idx);
        a->rc = load_text(g, line, EXEC_LOAD_APPEND);
    }
    write_graph_close(g);
    return NULL;
}

static int run_children(const char *dir, void *(*fn)(void *), int n)
{
    /* Each child runs one writer on its own handle and exits with 0 (published) or 1. */
    pid_t pids[NWRITERS];
    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            unique_arg a = {dir, i, 0};
            fn(&a);
            _exit(a.rc == 0 ? 0 : 1);
        }
        pids[i] = pid;
    }
    int ok = 0;
    for (int i = 0; i < n; i++) {
        int st = 0;
        waitpid(pids[i], &st, 0);
        assert_true(WIFEXITED(st));
        ok += WEXITSTATUS(st) == 0;
    }
    return ok;
}

static void test_unique_threads(void **state)
{
    (void)state;
    char dir[256];
    make_graph(dir, sizeof dir, "race-unique");
    pthread_t th[NWRITERS];
    unique_arg args[NWRITERS];
    for (int i = 0; i < NWRITERS; i++) {
        args[i] = (unique_arg){dir, i, 0};
        pthread_create(&th[i], NULL, unique_writer, &args[i]);
    }
    int ok = 0;
    for (int i = 0; i < NWRITERS; i++) {
        pthread_join(th[i], NULL);
        ok += args[i].rc == 0;
        if (args[i].rc != 0)
            assert_int_not_equal(args[i].rc, OG_E_INTERNAL);
    }
    assert_int_equal(ok, 1);
    assert_int_equal(rows_of(dir, "node:Person"), 1);
    assert_graph_sound(dir);
    test_rmrf(dir);
}

static void test_unique_processes(void **state)
{
    (void)state;
    char dir[256];
    make_graph(dir, sizeof dir, "race-unique-p");
    assert_int_equal(run_children(dir, unique_writer, NWRITERS), 1);
    assert_int_equal(rows_of(dir, "node:Person"), 1);
    assert_graph_sound(dir);
    test_rmrf(dir);
}

/* ---- cell 2: edge insert vs endpoint deletion ------------------------------------------------ */

static void *edge_or_delete_writer(void *p)
{
    unique_arg *a = p;
    write_graph *g = NULL;
    a->rc = open_graph(&g, a->dir);
    if (a->rc == 0) {
        if (a->idx % 2 == 0) {
            char line[200];
            snprintf(line, sizeof line,
                     "{\"edge\":\"WorksAt\",\"from\":\"ann\",\"to\":\"acme\",\"data\":"
                     "{\"role\":\"r%d\"}}\n",
                     a->idx);
            a->rc = load_text(g, line, EXEC_LOAD_APPEND);
        } else {
            /* Replace every company by one that is not acme: acme is deleted. */
            a->rc = load_text(g, "{\"type\":\"Company\",\"data\":{\"name\":\"bolt\"}}\n",
                              EXEC_LOAD_OVERWRITE);
        }
    }
    write_graph_close(g);
    return NULL;
}

static void seed_ann_acme(const char *dir)
{
    write_graph *g = NULL;
    assert_og_ok(open_graph(&g, dir));
    assert_og_ok(load_text(g,
                           "{\"type\":\"Person\",\"data\":{\"name\":\"ann\"}}\n"
                           "{\"type\":\"Company\",\"data\":{\"name\":\"acme\"}}\n",
                           EXEC_LOAD_APPEND));
    write_graph_close(g);
}

static void test_edge_vs_delete_threads(void **state)
{
    (void)state;
    char dir[256];
    make_graph(dir, sizeof dir, "race-ri");
    seed_ann_acme(dir);
    pthread_t th[NWRITERS];
    unique_arg args[NWRITERS];
    for (int i = 0; i < NWRITERS; i++) {
        args[i] = (unique_arg){dir, i, 0};
        pthread_create(&th[i], NULL, edge_or_delete_writer, &args[i]);
    }
    for (int i = 0; i < NWRITERS; i++) {
        pthread_join(th[i], NULL);
        if (args[i].rc != 0)
            assert_int_not_equal(args[i].rc, OG_E_INTERNAL);
    }
    assert_graph_sound(dir);
    test_rmrf(dir);
}

static void test_edge_vs_delete_processes(void **state)
{
    (void)state;
    char dir[256];
    make_graph(dir, sizeof dir, "race-ri-p");
    seed_ann_acme(dir);
    (void)run_children(dir, edge_or_delete_writer, NWRITERS);
    assert_graph_sound(dir);
    test_rmrf(dir);
}

/* ---- cell 3: a probed, untouched table arbitrates ------------------------------------------- */

typedef struct interleave {
    const char *dir;
    int fired;
} interleave;

static void delete_acme_now(void *p)
{
    interleave *il = p;
    if (il->fired++)
        return;
    write_graph *g2 = NULL;
    assert_og_ok(open_graph(&g2, il->dir));
    assert_og_ok(load_text(g2, "{\"type\":\"Company\",\"data\":{\"name\":\"bolt\"}}\n",
                           EXEC_LOAD_OVERWRITE));
    write_graph_close(g2);
}

static void test_untouched_probe_arbitrates(void **state)
{
    (void)state;
    char dir[256];
    make_graph(dir, sizeof dir, "race-probe");
    seed_ann_acme(dir);
    write_graph *g = NULL;
    assert_og_ok(open_graph(&g, dir));
    interleave il = {dir, 0};
    g->test_after_prepare = delete_acme_now;
    g->test_arg = &il;
    /* The edge write touches only edge:WorksAt; node:Company was probed for the endpoint and
     * changes between prepare and the gates. The write must re-prepare and then refuse. */
    int rc = load_text(g, "{\"edge\":\"WorksAt\",\"from\":\"ann\",\"to\":\"acme\"}\n",
                       EXEC_LOAD_APPEND);
    assert_og_error(rc, OG_E_BAD_REQUEST);
    write_stats st;
    write_graph_stats(g, &st);
    assert_int_equal(st.reprepares, 1);
    assert_int_equal(il.fired, 1);
    write_graph_close(g);
    assert_int_equal(rows_of(dir, "edge:WorksAt"), 0);
    assert_graph_sound(dir);
    test_rmrf(dir);
}

/* ---- cell 4: recovery-required is never advanced around ------------------------------------ */

static void *plain_writer(void *p)
{
    unique_arg *a = p;
    write_graph *g = NULL;
    a->rc = open_graph(&g, a->dir);
    if (a->rc == 0) {
        char line[200];
        snprintf(line, sizeof line, "{\"type\":\"Person\",\"data\":{\"name\":\"w%d\"}}\n",
                 a->idx);
        a->rc = load_text(g, line, EXEC_LOAD_APPEND);
    }
    write_graph_close(g);
    return NULL;
}

static void test_recovery_required_blocks(void **state)
{
    (void)state;
    char dir[256];
    make_graph(dir, sizeof dir, "race-rr");
    seed_ann_acme(dir);
    /* A foreign commit on node:Person with an armed intent that expected the old version:
     * recovery cannot prove anything and must refuse; nobody may write around it. */
    write_graph *g = NULL;
    assert_og_ok(open_graph(&g, dir));
    graph_snapshot *snap = NULL;
    assert_og_ok(graph_snapshot_load(&snap, g->s, NULL, 0, 0));
    const graph_table *pt = graph_snapshot_table(snap, "node:Person");
    write_intent in;
    memset(&in, 0, sizeof in);
    in.format = WRITE_SIDECAR_FORMAT;
    in.kind = WRITE_KIND_LOAD;
    core_ulid u;
    core_ulid_new(&u);
    core_ulid_format(&u, in.operation_id);
    core_ulid_new(&u);
    core_ulid_format(&u, in.commit_id);
    core_ulid_new(&u);
    core_ulid_format(&u, in.rollback_commit_id);
    write_rs_capture(&in.rs, snap);
    in.effects = calloc(1, sizeof *in.effects);
    in.n_effects = 1;
    in.effects[0].alias = strdup(pt->alias);
    in.effects[0].path = strdup(pt->path);
    in.effects[0].kind = LANG_NODE;
    in.effects[0].sid = pt->sid;
    in.effects[0].inc = pt->inc;
    in.effects[0].expected_version = pt->version;
    snprintf(in.effects[0].uuid, sizeof in.effects[0].uuid, "not-the-foreign-one");
    assert_og_ok(write_sidecar_put(g->s, &in));
    /* the foreign commit: an append straight to the Lance table */
    lance_dataset *ds = NULL, *after = NULL;
    assert_og_ok(graph_table_open(&ds, g->s, pt, LANCE_ACCESS_WRITE));
    arrow_batch *b = NULL;
    assert_og_ok(lance_dataset_scan_all(&b, ds, NULL));
    assert_og_ok(lance_dataset_append(&after, ds, &b, 1));
    arrow_batch_free(b);
    lance_dataset_free(ds);
    lance_dataset_free(after);
    uint64_t mver = snap->manifest_version;
    graph_snapshot_free(snap);
    write_graph_close(g);

    pthread_t th[NWRITERS];
    unique_arg args[NWRITERS];
    for (int i = 0; i < NWRITERS; i++) {
        args[i] = (unique_arg){dir, i, 0};
        pthread_create(&th[i], NULL, plain_writer, &args[i]);
    }
    for (int i = 0; i < NWRITERS; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(args[i].rc, OG_E_RECOVERY_REQUIRED);
    }
    assert_int_equal(run_children(dir, plain_writer, NWRITERS), 0);
    store *s = open_store(dir);
    assert_og_ok(graph_snapshot_load(&snap, s, NULL, 0, 0));
    assert_int_equal(snap->manifest_version, mver);
    graph_snapshot_free(snap);
    store_close(s);
    write_intent_clear(&in);
    test_rmrf(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unique_threads),
        cmocka_unit_test(test_unique_processes),
        cmocka_unit_test(test_edge_vs_delete_threads),
        cmocka_unit_test(test_edge_vs_delete_processes),
        cmocka_unit_test(test_untouched_probe_arbitrates),
        cmocka_unit_test(test_recovery_required_blocks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
