/* Crash enumeration over the write path (docs/conventions.md, Tests): init and each load mode are
 * run on the fault store, crashing after every durable store operation in both crash modes; the
 * root is then reopened read-write (which recovers) and the invariants checked:
 *   - the graph shows exactly the old or exactly the new state (all tables together);
 *   - no sidecar remains after a read-write open;
 *   - every table's manifest pin equals its Lance HEAD;
 *   - the audit log has exactly one row per sidecar the open resolved;
 *   - a follow-up load succeeds.
 * The spec's §5 crash-contract rows are each hit by some k (named in the comments below and
 * counted by the test: a crash before the sidecar, with the sidecar and no effect, with some
 * effects, with all effects before the manifest commit, and after the commit). Optimize (the
 * optimize adapter) has its own cells: content unchanged, old or new fragment layout. */
#include "write_fixture.h"

#include "core/failpoint.h"
#include "crashsim.h"

#include "exec/load.h"
#include "exec/request.h"
#include "lance/keyindex.h"
#include "lance/version.h"
#include "write/internal.h"

#include <string.h>

static const char *SCHEMA = "node Person {\n"
                            "    name: String @key\n"
                            "    age: I32?\n"
                            "}\n"
                            "node Company {\n"
                            "    name: String @key\n"
                            "}\n"
                            "edge WorksAt: Person -> Company { role: String? }\n";

static const char *BASE = "{\"type\":\"Person\",\"data\":{\"name\":\"ann\",\"age\":1}}\n";

static const char *DELTA =
    "{\"type\":\"Person\",\"data\":{\"name\":\"bob\",\"age\":2}}\n"
    "{\"type\":\"Company\",\"data\":{\"name\":\"acme\"}}\n"
    "{\"edge\":\"WorksAt\",\"from\":\"bob\",\"to\":\"acme\",\"data\":{\"role\":\"x\"}}\n";

typedef struct crash_ctx {
    exec_load_mode mode;
    const char *delta;
    size_t chunk;       /* nonzero: the load request (exec_load) in chunks of this many bytes */
    const char *branch; /* with chunk: the load on this graph branch (made by the template) */
    /* expected row counts (Person, Company, WorksAt) before and after */
    uint64_t before[3], after[3];
    /* what the check saw, over all points */
    unsigned saw_old, saw_new;
    wf_recovery_counts rec; /* recoveries the checks saw, by outcome */
} crash_ctx;

/* The starting graph is built once and copied for every crash run (a copy costs no fsyncs). */
static char template_dir[256];

static int build_template(store *s)
{
    write_init_result ir;
    int rc = write_init(s, SCHEMA, strlen(SCHEMA), "s.pg", &ir);
    if (rc != 0) return rc;
    write_graph *g = NULL;
    if ((rc = write_graph_open(&g, wf_borrow(s), "", NULL)) != 0) return rc;
    rc = wf_load(g, BASE, EXEC_LOAD_APPEND, NULL);
    write_graph_close(g);
    return rc;
}

/* Copy the template in dir (built by `build` on first use) into the crash run's root. */
static int copy_template(store *s, char *dir, size_t cap, const char *tag, int (*build)(store *))
{
    if (!dir[0]) {
        test_sandbox_new(dir, cap, tag);
        store *t = NULL;
        int rc = store_local_open(&t, dir);
        if (rc == 0) rc = build(t);
        store_close(t);
        if (rc != 0) return rc;
    }
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cp -a '%s/.' '%s/'", dir, store_local_root(s));
    return system(cmd) == 0 ? 0 : OG_E_STORAGE;
}

/* The same with graph branch "feat" made from main (nothing forked yet). */
static char template_branch_dir[256];

static int build_template_branch(store *s)
{
    int rc = build_template(s);
    write_graph *g = NULL;
    if (rc == 0) rc = write_graph_open(&g, wf_borrow(s), "", NULL);
    if (rc == 0) rc = write_branch_create(g, "feat", NULL, NULL, NULL);
    write_graph_close(g);
    return rc;
}

static int setup_graph(store *s, void *vctx)
{
    (void)vctx;
    return copy_template(s, template_dir, sizeof template_dir, "crash-template", build_template);
}

static int setup_graph_branch(store *s, void *vctx)
{
    (void)vctx;
    return copy_template(s, template_branch_dir, sizeof template_branch_dir,
                         "crash-template-branch", build_template_branch);
}

static int op_load(store *s, void *vctx)
{
    crash_ctx *c = vctx;
    write_graph *g = NULL;
    int rc = write_graph_open(&g, wf_borrow(s), "", NULL);
    if (rc == 0 && c->chunk) {
        /* the load request streams it: each chunk staged as more files of one transaction
         * (a type's rows in fragments of 64: some fill, with a key index segment each) */
        exec_load_set_chunk_bytes(c->chunk);
        write_stream_set_fragment_rows(64);
        exec_load_request req = {c->delta, strlen(c->delta), "d.jsonl", c->mode, NULL, NULL};
        exec_load_result res;
        write_options wo = WRITE_OPTIONS_INIT;
        wo.branch = c->branch;
        rc = exec_load(&res, g, &req, &wo);
        exec_load_set_chunk_bytes(0);
        write_stream_set_fragment_rows(0);
    } else if (rc == 0) {
        rc = wf_load(g, c->delta, c->mode, NULL);
    }
    write_graph_close(g);
    return rc;
}

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

static int count_hit(void *arg, size_t key, uint64_t addr, const uint8_t *pay, size_t plen)
{
    (void)key;
    (void)addr;
    (void)pay;
    (void)plen;
    ++*(uint64_t *)arg;
    return 0;
}

/* For a few ids, a lookup through table t's key index (segments and scanned fragments) finds
 * as many rows as a scan of its id column: 0 when so. */
static int index_agrees(store *s, const graph_table *t, char *why, size_t cap)
{
    lance_dataset *ds = NULL;
    int rc = graph_table_open(&ds, s, t, LANCE_ACCESS_READ);
    arrow_batch *b = NULL;
    if (rc == 0) {
        const char *cols[] = {"id"};
        lance_scan_options so = LANCE_SCAN_OPTIONS_INIT;
        so.columns = cols;
        so.n_columns = 1;
        rc = lance_dataset_scan_all(&b, ds, &so);
    }
    static const char *const ids[] = {"ann", "bob", "p0", "p33", "p69", "acme", "nobody"};
    for (size_t k = 0; rc == 0 && k < sizeof ids / sizeof ids[0]; k++) {
        const uint8_t *kp = (const uint8_t *)ids[k];
        size_t kl = strlen(ids[k]);
        uint64_t by_index = 0, by_scan = 0;
        rc = lance_kix_lookup(ds, "id", NULL, &kp, &kl, 1, count_hit, &by_index, NULL);
        for (int64_t r = 0; rc == 0 && r < b->num_rows; r++) {
            size_t n;
            const uint8_t *v = arrow_array_get_bytes(b->columns[0], r, &n);
            by_scan += n == kl && memcmp(v, kp, kl) == 0;
        }
        if (rc == 0 && by_index != by_scan) {
            snprintf(why, cap, "%s: id %s: %llu rows by index, %llu by scan", t->alias, ids[k],
                     (unsigned long long)by_index, (unsigned long long)by_scan);
            rc = 1;
        }
    }
    if (rc < 0) snprintf(why, cap, "%s: %s", t->alias, og_error_last()->message);
    arrow_batch_free(b);
    lance_dataset_free(ds);
    return rc;
}

static int check_graph(store *s, void *vctx, const crashsim_point *pt)
{
    crash_ctx *c = vctx;
    int rc = 0;
    write_graph *g = NULL;
    graph_snapshot *snap = NULL;
    char why[512];
    CHECK(wf_open_recovered(s, &g, &c->rec, why, sizeof why) == 0, "%s", why);
    CHECK(graph_snapshot_load(&snap, s, c->branch, 0, 0) == 0, "snapshot: %s",
          og_error_last()->message);
    const char *aliases[3] = {"node:Person", "node:Company", "edge:WorksAt"};
    uint64_t got[3];
    for (size_t i = 0; i < 3; i++) {
        const graph_table *t = graph_snapshot_table(snap, aliases[i]);
        CHECK(t != NULL, "no table %s", aliases[i]);
        got[i] = t->row_count;
        /* pin == Lance HEAD, and the pinned version really has row_count rows */
        CHECK(wf_check_table(s, t, why, sizeof why) == 0, "%s", why);
    }
    /* the key indexes the recovered version names agree with its data, and every segment it
     * names survived the crash (written before the manifest that names it, and synced with
     * its data files: a lookup that fell back to a scan would hide a lost one) */
    uint64_t damaged0 = lance_kix_damaged();
    for (size_t i = 0; i < 3; i++)
        CHECK(index_agrees(s, graph_snapshot_table(snap, aliases[i]), why, sizeof why) == 0, "%s",
              why);
    CHECK(lance_kix_damaged() == damaged0, "a key index segment named by the recovered "
                                           "version is missing or damaged");
    bool is_old = memcmp(got, c->before, sizeof got) == 0;
    bool is_new = memcmp(got, c->after, sizeof got) == 0;
    CHECK(is_old || is_new, "torn state %llu/%llu/%llu", (unsigned long long)got[0],
          (unsigned long long)got[1], (unsigned long long)got[2]);
    /* an acknowledged write must be visible */
    CHECK(pt->op_rc != 0 || pt->crashed || is_new, "acknowledged write lost");
    c->saw_old += is_old;
    c->saw_new += is_new && !is_old;
    /* a follow-up write succeeds */
    write_options wo = WRITE_OPTIONS_INIT;
    wo.branch = c->branch;
    write_result wr;
    CHECK(wf_load_opt(g, "{\"type\":\"Person\",\"data\":{\"name\":\"zed\"}}\n", EXEC_LOAD_MERGE,
                      &wo, &wr) == 0,
          "follow-up load: %s", og_error_last()->message);
out:
    graph_snapshot_free(snap);
    write_graph_close(g);
    return rc;
}

static void run_mode_on(exec_load_mode mode, const char *delta, const uint64_t before[3],
                        const uint64_t after[3], size_t chunk, const char *branch)
{
    crash_ctx c;
    memset(&c, 0, sizeof c);
    c.chunk = chunk;
    c.branch = branch;
    c.mode = mode;
    c.delta = delta;
    memcpy(c.before, before, sizeof c.before);
    memcpy(c.after, after, sizeof c.after);
    crashsim_case cc = {exec_load_mode_name(mode), &c, branch ? setup_graph_branch : setup_graph,
                        op_load, check_graph};
    crashsim_report rep;
    crashsim_run(&cc, &rep);
    print_message("load %s: %llu durable ops, %llu crash runs, old %u new %u, recovered %u "
                  "(rolled back %u, rolled forward %u, discarded %u)\n",
                  exec_load_mode_name(mode), (unsigned long long)rep.n,
                  (unsigned long long)rep.runs, c.saw_old, c.saw_new, c.rec.recovered,
                  c.rec.rolled_back, c.rec.rolled_forward, c.rec.discarded);
    if (rep.violations)
        fail_msg("%llu violations; first: %s", (unsigned long long)rep.violations, rep.first);
    /* The enumeration reached each row of the crash contract. */
    assert_true(rep.n >= 8);
    assert_true(c.saw_old > 0 && c.saw_new > 0);
    assert_true(c.rec.discarded > 0);      /* sidecar durable, no effect */
    assert_true(c.rec.rolled_forward > 0); /* all effects done (or committed), sidecar left */
}

static void run_mode_chunked(exec_load_mode mode, const char *delta, const uint64_t before[3],
                             const uint64_t after[3], size_t chunk)
{
    run_mode_on(mode, delta, before, after, chunk, NULL);
}

static void run_mode(exec_load_mode mode, const char *delta, const uint64_t before[3],
                     const uint64_t after[3])
{
    run_mode_chunked(mode, delta, before, after, 0);
}

static void test_crash_load_append(void **state)
{
    (void)state;
    const uint64_t before[3] = {1, 0, 0}, after[3] = {2, 1, 1};
    run_mode(EXEC_LOAD_APPEND, DELTA, before, after);
}

static void test_crash_load_merge(void **state)
{
    (void)state;
    const uint64_t before[3] = {1, 0, 0}, after[3] = {2, 1, 1};
    run_mode(EXEC_LOAD_MERGE,
             "{\"type\":\"Person\",\"data\":{\"name\":\"ann\",\"age\":5}}\n"
             "{\"type\":\"Person\",\"data\":{\"name\":\"bob\",\"age\":2}}\n"
             "{\"type\":\"Company\",\"data\":{\"name\":\"acme\"}}\n"
             "{\"edge\":\"WorksAt\",\"from\":\"bob\",\"to\":\"acme\"}\n",
             before, after);
}

static void test_crash_load_overwrite(void **state)
{
    (void)state;
    /* overwrite replaces the Person table with bob only */
    const uint64_t before[3] = {1, 0, 0}, after[3] = {1, 1, 1};
    run_mode(EXEC_LOAD_OVERWRITE, DELTA, before, after);
}

/* A load big enough to write key index segments (70 people, 70 edges): a crash anywhere
 * leaves an index that agrees with the data it names (checked in check_graph). */
static void test_crash_load_indexed(void **state)
{
    (void)state;
    static char delta[16384];
    size_t o = 0;
    for (int i = 0; i < 70; i++)
        o += (size_t)snprintf(delta + o, sizeof delta - o,
                              "{\"type\":\"Person\",\"data\":{\"name\":\"p%d\",\"age\":%d}}\n", i,
                              i);
    o += (size_t)snprintf(delta + o, sizeof delta - o,
                          "{\"type\":\"Company\",\"data\":{\"name\":\"acme\"}}\n");
    for (int i = 0; i < 70; i++)
        o += (size_t)snprintf(delta + o, sizeof delta - o,
                              "{\"edge\":\"WorksAt\",\"from\":\"p%d\",\"to\":\"acme\"}\n", i);
    const uint64_t before[3] = {1, 0, 0}, after[3] = {71, 1, 70};
    run_mode(EXEC_LOAD_APPEND, delta, before, after);
}

/* The same load read in chunks of 2 KiB (exec_load): four chunks, each staged as more data
 * files (and a key index segment where it has 64+ rows of a type) of the one transaction per
 * table; a crash after any of their durable operations leaves the old state or the new. As an
 * append, an overwrite, a merge (upserts in chunks), and a merge on a branch (first touches
 * of its tables: forks in apply, the input read twice). */
static void test_crash_load_chunked(void **state)
{
    (void)state;
    static char delta[16384];
    size_t o = 0;
    for (int i = 0; i < 70; i++)
        o += (size_t)snprintf(delta + o, sizeof delta - o,
                              "{\"type\":\"Person\",\"data\":{\"name\":\"p%d\",\"age\":%d}}\n", i,
                              i);
    o += (size_t)snprintf(delta + o, sizeof delta - o,
                          "{\"type\":\"Company\",\"data\":{\"name\":\"acme\"}}\n");
    for (int i = 0; i < 70; i++)
        o += (size_t)snprintf(delta + o, sizeof delta - o,
                              "{\"edge\":\"WorksAt\",\"from\":\"p%d\",\"to\":\"acme\"}\n", i);
    assert_true(o > 3 * 2048);
    const uint64_t before[3] = {1, 0, 0}, after[3] = {71, 1, 70};
    run_mode_chunked(EXEC_LOAD_APPEND, delta, before, after, 2048);
    /* an overwrite in chunks: Person becomes the 70 people (ann is replaced) */
    const uint64_t after_ow[3] = {70, 1, 70};
    run_mode_chunked(EXEC_LOAD_OVERWRITE, delta, before, after_ow, 2048);
    /* a merge in chunks: ann upserted in the last chunk, the rest inserted */
    o += (size_t)snprintf(delta + o, sizeof delta - o,
                          "{\"type\":\"Person\",\"data\":{\"name\":\"ann\",\"age\":9}}\n");
    run_mode_chunked(EXEC_LOAD_MERGE, delta, before, after, 2048);
    /* on a branch whose tables are all first touched: the forks made in apply, after the
     * sidecar, and the input read again to stage their rows on them */
    run_mode_on(EXEC_LOAD_MERGE, delta, before, after, 2048, "feat");
}

/* ---- init ---------------------------------------------------------------------------------- */

typedef struct init_ctx {
    unsigned none, complete, took_over;
} init_ctx;

static int op_init(store *s, void *vctx)
{
    (void)vctx;
    write_init_result ir;
    return write_init(s, SCHEMA, strlen(SCHEMA), "s.pg", &ir);
}

static int check_init(store *s, void *vctx, const crashsim_point *pt)
{
    init_ctx *c = vctx;
    int rc = 0;
    write_graph *g = NULL;
    graph_snapshot *snap = NULL;
    int orc = write_graph_open(&g, wf_borrow(s), "", NULL);
    if (orc == OG_E_NOT_FOUND) {
        /* No graph: a retried init takes over and completes. */
        CHECK(pt->op_rc != 0, "init acknowledged but no graph");
        c->none++;
        write_init_result ir;
        CHECK(write_init(s, SCHEMA, strlen(SCHEMA), "s.pg", &ir) == 0, "retried init: %s",
              og_error_last()->message);
        c->took_over += ir.took_over;
        CHECK(write_graph_open(&g, wf_borrow(s), "", NULL) == 0, "open after retry");
    } else {
        CHECK(orc == 0, "open: %s", og_error_last()->message);
        c->complete++;
        /* A retried init says the graph exists. */
        write_init_result ir;
        CHECK(write_init(s, SCHEMA, strlen(SCHEMA), "s.pg", &ir) == OG_E_EXISTS,
              "second init not refused");
    }
    CHECK(graph_snapshot_load(&snap, s, NULL, 0, GRAPH_SNAP_LINEAGE) == 0, "snapshot");
    CHECK(snap->manifest_version == 1 && snap->n_tables == 3 && snap->n_commits == 1,
          "genesis shape v%llu tables %zu commits %zu", (unsigned long long)snap->manifest_version,
          snap->n_tables, snap->n_commits);
    store_meta meta;
    CHECK(store_head(s, GRAPH_INIT_CLAIM, &meta) == OG_E_NOT_FOUND, "claim left after open");
    CHECK(wf_load(g, BASE, EXEC_LOAD_APPEND, NULL) == 0, "first load: %s",
          og_error_last()->message);
out:
    graph_snapshot_free(snap);
    write_graph_close(g);
    return rc;
}

static void test_crash_init(void **state)
{
    (void)state;
    init_ctx c;
    memset(&c, 0, sizeof c);
    crashsim_case cc = {"init", &c, NULL, op_init, check_init};
    crashsim_report rep;
    crashsim_run(&cc, &rep);
    print_message("init: %llu durable ops, %llu crash runs, no graph %u (took over %u), "
                  "complete %u\n",
                  (unsigned long long)rep.n, (unsigned long long)rep.runs, c.none, c.took_over,
                  c.complete);
    if (rep.violations)
        fail_msg("%llu violations; first: %s", (unsigned long long)rep.violations, rep.first);
    assert_true(c.none > 0 && c.complete > 0 && c.took_over > 0);
}

/* ---- a crash during recovery itself --------------------------------------------------------
 * The starting state: the base graph plus an interrupted load whose first table effect landed
 * and whose second did not (its sidecar is left). The operation under test is the read-write
 * open that rolls it back (rollback plan rewrite, Restore, rollback commit, audit, sidecar
 * delete); a crash after any of its durable operations must leave a state the next open
 * finishes: the old content exactly, no sidecar, pins equal to HEADs, one audit row. */

static int setup_interrupted(store *s, void *vctx)
{
    int rc = setup_graph(s, vctx);
    write_graph *g = NULL;
    if (rc == 0) rc = write_graph_open(&g, wf_borrow(s), "", NULL);
    if (rc != 0) return rc;
    /* fail after the first table effect, and keep in-process recovery from resolving it */
    core_fp_set("write.post_table_effect", CORE_FP_ERROR, OG_E_STORAGE, 1);
    core_fp_set("recovery.pre_restore", CORE_FP_ERROR, OG_E_STORAGE, 0);
    rc = wf_load(g, DELTA, EXEC_LOAD_APPEND, NULL);
    core_fp_clear_all();
    write_graph_close(g);
    size_t n = 0;
    if (rc != OG_E_RECOVERY_REQUIRED || wf_count_sidecars(s, &n) != 0 || n != 1)
        return OG_E_INTERNAL; /* the starting state is not what this test needs */
    return 0;
}

static int op_recover(store *s, void *vctx)
{
    (void)vctx;
    write_graph *g = NULL;
    int rc = write_graph_open(&g, wf_borrow(s), "", NULL);
    write_graph_close(g);
    return rc;
}

static int check_recovered(store *s, void *vctx, const crashsim_point *pt)
{
    (void)vctx;
    int rc = 0;
    write_graph *g = NULL;
    graph_snapshot *snap = NULL;
    write_audit_row *audit = NULL;
    size_t n_audit = 0;
    char why[512];
    wf_recovery_counts rec = {0, 0, 0, 0};
    CHECK(wf_open_recovered(s, &g, &rec, why, sizeof why) == 0, "%s", why);
    CHECK(write_audit_list(s, &audit, &n_audit) == 0 && n_audit == 1,
          "%zu audit rows for one interrupted write", n_audit);
    CHECK(strcmp(audit[0].kind, "rolled_back") == 0, "audit says %s", audit[0].kind);
    CHECK(graph_snapshot_load(&snap, s, NULL, 0, 0) == 0, "snapshot: %s", og_error_last()->message);
    const char *aliases[3] = {"node:Person", "node:Company", "edge:WorksAt"};
    const uint64_t old_rows[3] = {1, 0, 0};
    for (size_t i = 0; i < 3; i++) {
        const graph_table *t = graph_snapshot_table(snap, aliases[i]);
        CHECK(t != NULL, "no table %s", aliases[i]);
        CHECK(wf_check_table(s, t, why, sizeof why) == 0, "%s", why);
        CHECK(t->row_count == old_rows[i], "%s has %llu rows after the rollback", aliases[i],
              (unsigned long long)t->row_count);
    }
    CHECK(wf_load(g, DELTA, EXEC_LOAD_APPEND, NULL) == 0, "follow-up load: %s",
          og_error_last()->message);
out:
    free(audit);
    graph_snapshot_free(snap);
    write_graph_close(g);
    return rc;
}

static void test_crash_during_recovery(void **state)
{
    (void)state;
    crashsim_case cc = {"recovery", NULL, setup_interrupted, op_recover, check_recovered};
    crashsim_report rep;
    crashsim_run(&cc, &rep);
    print_message("recovery (roll back of a partial load): %llu durable ops, %llu crash runs\n",
                  (unsigned long long)rep.n, (unsigned long long)rep.runs);
    if (rep.violations)
        fail_msg("%llu violations; first: %s", (unsigned long long)rep.violations, rep.first);
    assert_true(rep.n >= 5); /* plan rewrite, restore (txn + version), commit, audit, delete */
}

/* ---- a crash while an operator resolves (omnigraph recover resolve) ------------------------
 * The same interrupted load, resolved by write_recover_resolve on a writer attached without the
 * barrier (as og_root_recover_resolve does): a crash after any durable operation leaves a state the
 * next open finishes exactly as if recovery had run there. Then a damaged sidecar discarded
 * with --force: a crash before its audit row leaves it pending (writes still blocked, the
 * operator's command runs again), a crash after it leaves a stale copy the barrier retires. */

static int open_deferred(store *s, write_graph **g)
{
    write_open_options oo = WRITE_OPEN_OPTIONS_INIT;
    oo.defer_recovery = true;
    return write_graph_open(g, wf_borrow(s), "", &oo);
}

static int op_operator_resolve(store *s, void *vctx)
{
    const write_resolve_options *ro = vctx;
    write_graph *g = NULL;
    char(*ids)[GRAPH_ID_LEN + 1] = NULL;
    size_t n = 0;
    int rc = write_sidecar_list(s, &ids, &n);
    if (rc == 0 && n != 1) rc = OG_E_INTERNAL;
    if (rc == 0) rc = open_deferred(s, &g);
    int kind = 0;
    char commit[GRAPH_ID_LEN + 1];
    if (rc == 0) rc = write_recover_resolve(g, ids[0], ro, &kind, commit);
    free(ids);
    write_graph_close(g);
    return rc;
}

static void test_crash_during_operator_resolve(void **state)
{
    (void)state;
    write_resolve_options ro = {false, false};
    crashsim_case cc = {"operator resolve", &ro, setup_interrupted, op_operator_resolve,
                        check_recovered};
    crashsim_report rep;
    crashsim_run(&cc, &rep);
    print_message("operator resolve (roll back of a partial load): %llu durable ops, %llu crash "
                  "runs\n",
                  (unsigned long long)rep.n, (unsigned long long)rep.runs);
    if (rep.violations)
        fail_msg("%llu violations; first: %s", (unsigned long long)rep.violations, rep.first);
    assert_true(rep.n >= 5);
}

#define DAMAGED_ID "01M90XAAAAAAAAAAAAAAAAAAAA"

static int setup_damaged(store *s, void *vctx)
{
    int rc = setup_graph(s, vctx);
    char key[STORE_KEY_MAX];
    write_sidecar_key(key, DAMAGED_ID);
    if (rc == 0) rc = store_put(s, key, "{\"format\":1}", 12, 0);
    return rc;
}

static size_t audit_rows(store *s, const char *kind)
{
    write_audit_row *rows = NULL;
    size_t n = 0, k = 0;
    if (write_audit_list(s, &rows, &n) != 0) return SIZE_MAX;
    for (size_t i = 0; i < n; i++)
        k += strcmp(rows[i].kind, kind) == 0;
    free(rows);
    return k;
}

static int check_forced_discard(store *s, void *vctx, const crashsim_point *pt)
{
    int rc = 0;
    write_graph *g = NULL;
    char key[STORE_KEY_MAX];
    write_sidecar_key(key, DAMAGED_ID);
    int orc = write_graph_open(&g, wf_borrow(s), "", NULL);
    if (orc == OG_E_RECOVERY_REQUIRED) {
        /* The discard never happened: the intent still blocks, and the command runs again. */
        store_meta m;
        CHECK(store_head(s, key, &m) == 0, "blocked by %s, but the sidecar is gone",
              og_error_last()->message);
        CHECK(audit_rows(s, "discarded_forced") == 0, "blocked although the discard was audited");
        CHECK(op_operator_resolve(s, vctx) == 0, "resolving again: %s", og_error_last()->message);
        orc = write_graph_open(&g, wf_borrow(s), "", NULL);
    }
    CHECK(orc == 0, "open after the forced discard: %s", og_error_last()->message);
    size_t n = 0;
    CHECK(wf_count_sidecars(s, &n) == 0 && n == 0, "%zu sidecars left", n);
    CHECK(audit_rows(s, "discarded_forced") == 1, "%zu discarded_forced audit rows",
          audit_rows(s, "discarded_forced"));
    CHECK(audit_rows(s, "retired") <= 1, "retired more than once");
    CHECK(wf_load(g, DELTA, EXEC_LOAD_APPEND, NULL) == 0, "follow-up load: %s",
          og_error_last()->message);
out:
    write_graph_close(g);
    return rc;
}

static void test_crash_during_forced_discard(void **state)
{
    (void)state;
    write_resolve_options ro = {true, true};
    crashsim_case cc = {"forced discard", &ro, setup_damaged, op_operator_resolve,
                        check_forced_discard};
    crashsim_report rep;
    crashsim_run(&cc, &rep);
    print_message("forced discard of a damaged sidecar: %llu durable ops, %llu crash runs\n",
                  (unsigned long long)rep.n, (unsigned long long)rep.runs);
    if (rep.violations)
        fail_msg("%llu violations; first: %s", (unsigned long long)rep.violations, rep.first);
    assert_true(rep.n >= 2); /* the audit row, the sidecar delete */
}

/* ---- optimize (the optimize adapter, og_graph_optimize) ----------------------------------
 * A graph whose Person table has four fragments is optimized (one maintenance commit that
 * rewrites them into one) with a crash after every durable operation. After a read-write open:
 * the rows are unchanged, every pin equals its Lance HEAD, and the table has either its four
 * fragments (old) or one (new). */
static char opt_template[256];

static int build_optimize_template(store *t)
{
    write_init_result ir;
    int rc = write_init(t, SCHEMA, strlen(SCHEMA), "s.pg", &ir);
    write_graph *g = NULL;
    if (rc == 0) rc = write_graph_open(&g, wf_borrow(t), "", NULL);
    for (int i = 0; rc == 0 && i < 4; i++) {
        char line[96];
        snprintf(line, sizeof line, "{\"type\":\"Person\",\"data\":{\"name\":\"o%d\"}}\n", i);
        rc = wf_load(g, line, EXEC_LOAD_APPEND, NULL);
    }
    write_graph_close(g);
    return rc;
}

static int setup_optimize(store *s, void *vctx)
{
    (void)vctx;
    return copy_template(s, opt_template, sizeof opt_template, "crash-opt-template",
                         build_optimize_template);
}

static int op_optimize(store *s, void *vctx)
{
    (void)vctx;
    write_graph *g = NULL;
    int rc = write_graph_open(&g, wf_borrow(s), "", NULL);
    write_optimize_options oo = WRITE_OPTIMIZE_OPTIONS_INIT;
    write_result r;
    if (rc == 0) rc = write_optimize(g, &oo, &r);
    write_graph_close(g);
    return rc;
}

static int check_optimize(store *s, void *vctx, const crashsim_point *pt)
{
    crash_ctx *c = vctx;
    int rc = 0;
    write_graph *g = NULL;
    graph_snapshot *snap = NULL;
    lance_dataset *ds = NULL;
    char why[512];
    CHECK(wf_open_recovered(s, &g, &c->rec, why, sizeof why) == 0, "%s", why);
    CHECK(graph_snapshot_load(&snap, s, NULL, 0, 0) == 0, "snapshot: %s", og_error_last()->message);
    const graph_table *t = graph_snapshot_table(snap, "node:Person");
    CHECK(t != NULL && t->row_count == 4, "Person rows changed");
    CHECK(wf_check_table(s, t, why, sizeof why) == 0, "%s", why);
    CHECK(graph_table_open(&ds, s, t, LANCE_ACCESS_READ) == 0, "open: %s",
          og_error_last()->message);
    size_t frags = ds->m->pb->n_fragments;
    CHECK(frags == 4 || frags == 1, "%zu fragments", frags);
    CHECK(pt->op_rc != 0 || pt->crashed || frags == 1, "acknowledged optimize lost");
    c->saw_old += frags == 4;
    c->saw_new += frags == 1;
    CHECK(wf_load(g, "{\"type\":\"Person\",\"data\":{\"name\":\"zed\"}}\n", EXEC_LOAD_MERGE,
                  NULL) == 0,
          "follow-up load: %s", og_error_last()->message);
out:
    lance_dataset_free(ds);
    graph_snapshot_free(snap);
    write_graph_close(g);
    return rc;
}

static void test_crash_optimize(void **state)
{
    (void)state;
    crash_ctx c;
    memset(&c, 0, sizeof c);
    crashsim_case cc = {"optimize", &c, setup_optimize, op_optimize, check_optimize};
    crashsim_report rep;
    crashsim_run(&cc, &rep);
    print_message("optimize: %llu durable ops, %llu crash runs, old %u new %u, recovered %u "
                  "(rolled back %u, rolled forward %u, discarded %u)\n",
                  (unsigned long long)rep.n, (unsigned long long)rep.runs, c.saw_old, c.saw_new,
                  c.rec.recovered, c.rec.rolled_back, c.rec.rolled_forward, c.rec.discarded);
    if (rep.violations)
        fail_msg("%llu violations; first: %s", (unsigned long long)rep.violations, rep.first);
    assert_true(rep.n >= 5);
    assert_true(c.saw_old > 0 && c.saw_new > 0);
    assert_true(c.rec.discarded > 0);
    assert_true(c.rec.rolled_forward > 0);
    if (opt_template[0]) test_sandbox_done(opt_template);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crash_init),
        cmocka_unit_test(test_crash_load_append),
        cmocka_unit_test(test_crash_load_merge),
        cmocka_unit_test(test_crash_load_overwrite),
        cmocka_unit_test(test_crash_load_indexed),
        cmocka_unit_test(test_crash_load_chunked),
        cmocka_unit_test(test_crash_during_recovery),
        cmocka_unit_test(test_crash_during_operator_resolve),
        cmocka_unit_test(test_crash_during_forced_discard),
        cmocka_unit_test(test_crash_optimize),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    if (template_dir[0]) test_sandbox_done(template_dir);
    return rc;
}
