/* Races of graph branches (issue 17 item 5), with threads (separate handles on one root,
 * sharing the process's gates) and with processes (the store's flock gates only). Every cell
 * asserts outcomes, counts and orders, never times:
 *   - writes on two different branches do not wait for each other's gates: writer A, paused
 *     inside its gates with its sidecar armed, does not hold up writer B on another branch
 *     (B completes while A is paused; B's gate sets are never contended);
 *   - a write on a branch racing the delete of that branch (seeded random interleavings):
 *     the write lands first and the delete removes it (having seen it) or is refused typed
 *     while the write holds the branch, or the delete lands first and the write fails typed
 *     naming the branch; never a write on a deleted branch, no leftover files, main untouched;
 *   - a delete of a branch with a live writer (holding its gate, or with its sidecar armed) is
 *     refused typed; a dead writer's intent is resolved through the delete's barrier first; a
 *     damaged one refuses it typed;
 *   - with the gates off (test-only switch), two processes writing one branch: every
 *     acknowledged write is there exactly once, the lineage is linear, pins equal Lance HEADs;
 *     and, deterministically, a writer whose revalidated plan another process published under
 *     is stopped by the graph-manifest CAS, the table's exact Lance commit or the fork, and
 *     fails typed with nothing of it left (RFC-022 §3.7, §9: the conditional commits, not the
 *     gates, arbitrate).
 * Seeds: OG_TEST_SEED (printed); iterations: OG_BRANCH_RACE_ITERS (threads; processes get a
 * third); one cell: OG_TEST_FILTER=<its function's name>. */
#include "write_fixture.h"

#include "core/alloc.h"
#include "core/clock.h"
#include "core/failpoint.h"
#include "lance/branch.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *SCHEMA = "node Person {\n"
                            "    name: String @key\n"
                            "    age: I32?\n"
                            "}\n"
                            "node Company {\n"
                            "    name: String @key\n"
                            "}\n"
                            "edge WorksAt: Person -> Company\n";

static const char *DATA1 = "{\"type\":\"Person\",\"data\":{\"name\":\"ann\",\"age\":1}}\n"
                           "{\"type\":\"Company\",\"data\":{\"name\":\"acme\"}}\n"
                           "{\"edge\":\"WorksAt\",\"from\":\"ann\",\"to\":\"acme\"}\n";

/* ---- helpers ------------------------------------------------------------------------------- */

static unsigned test_seed(void)
{
    const char *e = getenv("OG_TEST_SEED");
    unsigned seed = e && *e ? (unsigned)strtoul(e, NULL, 10)
                            : (unsigned)(core_wall_us() ^ ((uint64_t)getpid() << 16));
    return seed;
}

static int iterations(int dflt)
{
    const char *e = getenv("OG_BRANCH_RACE_ITERS");
    int n = e && *e ? atoi(e) : dflt;
    return n > 0 ? n : dflt;
}

static void new_graph(char *dir, size_t cap, const char *tag)
{
    test_sandbox_new(dir, cap, tag);
    store *s = wf_store(dir);
    write_init_result ir;
    assert_og_ok(write_init(s, SCHEMA, strlen(SCHEMA), "s.pg", &ir));
    write_graph *g = NULL;
    assert_og_ok(write_graph_open(&g, s, dir, NULL));
    assert_og_ok(wf_load(g, DATA1, EXEC_LOAD_APPEND, NULL));
    write_graph_close(g);
}

static void node_line(char *out, size_t cap, const char *type, const char *name)
{
    snprintf(out, cap, "{\"type\":\"%s\",\"data\":{\"name\":\"%s\"}}\n", type, name);
}

/* One load on `branch` (NULL: main); the write's rc. */
static int load_on(write_graph *g, const char *branch, const char *text, write_result *res)
{
    graph_change_set cs;
    memset(&cs, 0, sizeof cs);
    exec_load_stats st;
    write_result local;
    if (!res) res = &local;
    memset(res, 0, sizeof *res);
    int rc = exec_load_parse(&cs, g->h->catalog, text, strlen(text), "d.jsonl", EXEC_LOAD_APPEND,
                             &st, NULL, NULL);
    write_options wo = WRITE_OPTIONS_INIT;
    wo.branch = branch;
    if (rc == 0) rc = write_changes(g, WRITE_KIND_LOAD, &cs, &wo, res);
    graph_change_set_clear(&cs);
    return rc;
}

static size_t sidecars(store *s)
{
    size_t n = 0;
    assert_og_ok(wf_count_sidecars(s, &n));
    return n;
}

/* How many rows of table `alias` at the branch's pin have name == `name`. */
static unsigned count_name(store *s, const graph_snapshot *snap, const char *alias,
                           const char *name)
{
    const graph_table *t = graph_snapshot_table(snap, alias);
    assert_non_null(t);
    lance_dataset *ds = NULL;
    arrow_batch *b = NULL;
    const char *cols[] = {"name"};
    lance_scan_options so = LANCE_SCAN_OPTIONS_INIT;
    so.columns = cols;
    so.n_columns = 1;
    assert_og_ok(graph_table_open(&ds, s, t, LANCE_ACCESS_READ));
    assert_og_ok(lance_dataset_scan_all(&b, ds, &so));
    lance_dataset_free(ds);
    unsigned n = 0;
    size_t want = strlen(name);
    for (int64_t r = 0; r < b->num_rows; r++) {
        size_t l = 0;
        const uint8_t *v = arrow_array_get_bytes(b->columns[0], r, &l);
        n += l == want && memcmp(v, name, l) == 0;
    }
    arrow_batch_free(b);
    return n;
}

static unsigned count_on(store *s, const char *branch, const char *alias, const char *name)
{
    graph_snapshot *snap = NULL;
    assert_og_ok(graph_snapshot_load(&snap, s, branch, 0, 0));
    unsigned n = count_name(s, snap, alias, name);
    graph_snapshot_free(snap);
    return n;
}

/* Nothing of graph branch `name` is left: no manifest ref, no table fork ref, no file under the
 * manifest's or any table's tree/<name>/. 0, or 1 with the reason in why. */
static int branch_leftovers(store *s, const graph_snapshot *main_snap, const char *name, char *why,
                            size_t cap)
{
    lance_branch ref;
    int rc = lance_branch_get(s, GRAPH_MANIFEST_DIR, name, &ref);
    og_error_clear();
    if (rc != OG_E_NOT_FOUND)
        return snprintf(why, cap, "the manifest ref of '%s' is there (rc %d)", name, rc), 1;
    for (size_t i = 0; i <= main_snap->n_tables; i++) {
        const char *path = i < main_snap->n_tables ? main_snap->tables[i].path : GRAPH_MANIFEST_DIR;
        if (i < main_snap->n_tables) {
            rc = lance_branch_get(s, path, name, &ref);
            og_error_clear();
            if (rc != OG_E_NOT_FOUND)
                return snprintf(why, cap, "table %s still has a fork '%s' (rc %d)", path, name, rc),
                       1;
        }
        char root[STORE_KEY_MAX], prefix[STORE_KEY_MAX + 2];
        assert_og_ok(lance_branch_root(root, path, name));
        snprintf(prefix, sizeof prefix, "%s/", root);
        store_list l;
        memset(&l, 0, sizeof l);
        rc = store_list_prefix(s, prefix, 0, &l);
        og_error_clear();
        size_t files = rc == 0 ? l.count : 0;
        char first[STORE_KEY_MAX] = "";
        if (files) snprintf(first, sizeof first, "%s", l.items[0].key);
        store_list_free(&l);
        if (rc != 0 && rc != OG_E_NOT_FOUND)
            return snprintf(why, cap, "listing %.300s: rc %d", prefix, rc), 1;
        if (files)
            return snprintf(why, cap, "%zu files left under %.300s (%.300s)", files, prefix, first),
                   1;
    }
    return 0;
}

static graph_snapshot *main_snapshot(store *s)
{
    graph_snapshot *snap = NULL;
    assert_og_ok(graph_snapshot_load(&snap, s, NULL, 0, GRAPH_SNAP_LINEAGE));
    return snap;
}

static bool branch_exists(store *s, const char *name)
{
    lance_branch ref;
    int rc = lance_branch_get(s, GRAPH_MANIFEST_DIR, name, &ref);
    og_error_clear();
    return rc == 0;
}

/* ---- cell 1: writes on two branches do not wait for each other's gates --------------------- */

/* A writer paused inside its gates (test_in_gates: gates held, sidecar armed) until released.
 * Threads use the condition; a child process uses the pipes. */
typedef struct pause_ctl {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int inside, release, done;
    int fd_ready, fd_go; /* processes: -1 for threads */
} pause_ctl;

static void pause_hook(void *arg)
{
    pause_ctl *p = arg;
    if (p->fd_ready >= 0) {
        char c = 'r';
        if (write(p->fd_ready, &c, 1) != 1) _exit(90);
        if (read(p->fd_go, &c, 1) != 1) _exit(91);
        p->fd_ready = -1; /* once: a later call (a restarted attempt) goes straight on */
        p->release = 1;
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->inside = 1;
    pthread_cond_broadcast(&p->cv);
    while (!p->release)
        pthread_cond_wait(&p->cv, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

typedef struct paused_writer {
    write_graph *g;
    const char *branch, *text;
    pause_ctl *pc;
    int rc;
    write_result res;
} paused_writer;

static void *paused_write(void *arg)
{
    paused_writer *w = arg;
    w->rc = load_on(w->g, w->branch, w->text, &w->res);
    pthread_mutex_lock(&w->pc->mu);
    w->pc->done = 1;
    pthread_cond_broadcast(&w->pc->cv);
    pthread_mutex_unlock(&w->pc->mu);
    return NULL;
}

static void gate_stats(write_graph *g, write_gate_stats *st)
{
    write_gates_stats(g->gates, st);
}

/* Both orders (A on a paused, B on b runs; then the roles swapped, with the branches' second
 * writes, which no longer fork), and a control on one branch: there B does wait for A. */
static void test_branches_do_not_block_threads(void **state)
{
    (void)state;
    char dir[256];
    new_graph(dir, sizeof dir, "brace-noblock");
    write_graph *ga = NULL, *gb = NULL;
    assert_og_ok(wf_open(&ga, dir));
    assert_og_ok(wf_open(&gb, dir));
    assert_og_ok(write_branch_create(ga, "a", NULL, NULL, NULL));
    assert_og_ok(write_branch_create(ga, "b", NULL, NULL, NULL));
    graph_snapshot *m0 = main_snapshot(ga->h->s);
    /* a writer that waited for the other would time out: short, so a regression fails fast */
    ga->gate_timeout_ms = gb->gate_timeout_ms = 2000;
    for (int round = 0; round < 4; round++) {
        bool swap = round % 2;
        write_graph *gp = swap ? gb : ga, *gr = swap ? ga : gb; /* paused, running */
        const char *bp = swap ? "b" : "a", *br = swap ? "a" : "b";
        char np[32], nr[32], lp[128], lr[128];
        snprintf(np, sizeof np, "p%d-%s", round, bp);
        snprintf(nr, sizeof nr, "p%d-%s", round, br);
        node_line(lp, sizeof lp, "Person", np);
        node_line(lr, sizeof lr, "Person", nr);
        pause_ctl pc = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, -1, -1};
        gp->test_in_gates = pause_hook;
        gp->test_in_gates_arg = &pc;
        paused_writer w = {gp, bp, lp, &pc, -1, {0}};
        pthread_t th;
        assert_int_equal(pthread_create(&th, NULL, paused_write, &w), 0);
        pthread_mutex_lock(&pc.mu);
        while (!pc.inside && !pc.done)
            pthread_cond_wait(&pc.cv, &pc.mu);
        pthread_mutex_unlock(&pc.mu);
        assert_true(pc.inside); /* A holds its gates, its sidecar armed */
        assert_int_equal(sidecars(gr->h->s), 1);
        write_gate_stats before_r, after_r, before_p, after_p;
        gate_stats(gr, &before_r);
        gate_stats(gp, &before_p);
        write_result rr;
        int rc = load_on(gr, br, lr, &rr); /* B: a complete write, while A is paused */
        if (rc)
            fail_msg("round %d: the write on %s failed: %s", round, br, og_error_last()->message);
        assert_true(rr.committed);
        gate_stats(gr, &after_r);
        pthread_mutex_lock(&pc.mu);
        assert_false(pc.done); /* B finished while A still held its gates */
        pc.release = 1;
        pthread_cond_broadcast(&pc.cv);
        pthread_mutex_unlock(&pc.mu);
        pthread_join(th, NULL);
        gp->test_in_gates = NULL;
        if (w.rc)
            fail_msg("round %d: the paused write on %s failed: %s", round, bp,
                     og_error_last()->message);
        assert_true(w.res.committed);
        gate_stats(gp, &after_p);
        /* B's acquisitions (its write, and any maintenance after it) never waited */
        assert_true(after_r.acquisitions > before_r.acquisitions);
        assert_int_equal(after_r.contended, before_r.contended);
        assert_int_equal(after_r.timeouts, before_r.timeouts);
        assert_int_equal(after_p.contended, before_p.contended);
        print_message("round %d: %s paused in its gates, %s wrote through: %llu acquisitions, "
                      "0 contended\n",
                      round, bp, br,
                      (unsigned long long)(after_r.acquisitions - before_r.acquisitions));
        /* each write on its own branch only; main untouched */
        store *s = ga->h->s;
        assert_int_equal(count_on(s, bp, "node:Person", np), 1);
        assert_int_equal(count_on(s, bp, "node:Person", nr), 0);
        assert_int_equal(count_on(s, br, "node:Person", nr), 1);
        assert_int_equal(count_on(s, br, "node:Person", np), 0);
        assert_int_equal(count_on(s, NULL, "node:Person", np), 0);
        assert_int_equal(count_on(s, NULL, "node:Person", nr), 0);
        assert_int_equal(sidecars(s), 0);
    }
    /* control: on one branch, the second writer does wait for the paused one's gates */
    {
        pause_ctl pc = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, -1, -1};
        ga->test_in_gates = pause_hook;
        ga->test_in_gates_arg = &pc;
        char la[128], lb[128];
        node_line(la, sizeof la, "Person", "same-1");
        node_line(lb, sizeof lb, "Person", "same-2");
        paused_writer w = {ga, "a", la, &pc, -1, {0}};
        pthread_t th;
        assert_int_equal(pthread_create(&th, NULL, paused_write, &w), 0);
        pthread_mutex_lock(&pc.mu);
        while (!pc.inside && !pc.done)
            pthread_cond_wait(&pc.cv, &pc.mu);
        pthread_mutex_unlock(&pc.mu);
        assert_true(pc.inside);
        gb->gate_timeout_ms = 100;
        write_gate_stats before, after;
        gate_stats(gb, &before);
        assert_int_equal(load_on(gb, "a", lb, NULL), OG_E_RESOURCE_LIMIT);
        gate_stats(gb, &after);
        assert_int_equal(after.timeouts, before.timeouts + 1);
        pthread_mutex_lock(&pc.mu);
        pc.release = 1;
        pthread_cond_broadcast(&pc.cv);
        pthread_mutex_unlock(&pc.mu);
        pthread_join(th, NULL);
        ga->test_in_gates = NULL;
        assert_og_ok(w.rc);
        gb->gate_timeout_ms = 2000;
        assert_og_ok(load_on(gb, "a", lb, NULL));
    }
    graph_snapshot *m1 = main_snapshot(ga->h->s);
    assert_string_equal(m1->head, m0->head);
    assert_int_equal(m1->manifest_version, m0->manifest_version);
    graph_snapshot_free(m1);
    graph_snapshot_free(m0);
    write_graph_close(ga);
    write_graph_close(gb);
    wf_assert_sound(dir);
    test_sandbox_done(dir);
}

/* The same with a child process paused inside its gates (its flocks held: the schema key
 * shared, its branch and tables exclusive; its sidecar armed) while this process writes on the
 * other branch. */
static void test_branches_do_not_block_processes(void **state)
{
    (void)state;
    char dir[256];
    new_graph(dir, sizeof dir, "brace-noblock-proc");
    write_graph *g = NULL;
    assert_og_ok(wf_open(&g, dir));
    assert_og_ok(write_branch_create(g, "a", NULL, NULL, NULL));
    assert_og_ok(write_branch_create(g, "b", NULL, NULL, NULL));
    graph_snapshot *m0 = main_snapshot(g->h->s);
    write_graph_close(g);
    for (int round = 0; round < 4; round++) {
        bool swap = round % 2;
        const char *bp = swap ? "b" : "a", *br = swap ? "a" : "b";
        char np[32], nr[32], lp[128], lr[128];
        snprintf(np, sizeof np, "q%d-%s", round, bp);
        snprintf(nr, sizeof nr, "q%d-%s", round, br);
        node_line(lp, sizeof lp, round < 2 ? "Person" : "Company", np);
        node_line(lr, sizeof lr, round < 2 ? "Person" : "Company", nr);
        /* Opened first: a read-write open runs the barrier over every branch, which waits for
         * a live writer's gates (the write's own barrier is scoped to its branch). */
        write_graph *gr = NULL;
        assert_og_ok(wf_open(&gr, dir));
        gr->gate_timeout_ms = 2000;
        int ready[2], go[2];
        assert_int_equal(pipe(ready), 0);
        assert_int_equal(pipe(go), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(ready[0]);
            close(go[1]);
            write_graph *c = NULL;
            if (wf_open(&c, dir) != 0) _exit(80);
            pause_ctl pc = {
                PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, ready[1], go[0]};
            c->test_in_gates = pause_hook;
            c->test_in_gates_arg = &pc;
            write_result res;
            int rc = load_on(c, bp, lp, &res);
            write_graph_close(c);
            _exit(rc == 0 && res.committed ? 0 : 81);
        }
        close(ready[1]);
        close(go[0]);
        char ch;
        assert_int_equal(read(ready[0], &ch, 1), 1); /* the child holds its gates */
        assert_int_equal(sidecars(gr->h->s), 1);
        write_gate_stats before, after;
        gate_stats(gr, &before);
        write_result rr;
        int rc = load_on(gr, br, lr, &rr);
        if (rc)
            fail_msg("round %d: the write on %s failed: %s", round, br, og_error_last()->message);
        assert_true(rr.committed);
        gate_stats(gr, &after);
        int st = 0;
        assert_int_equal(waitpid(pid, &st, WNOHANG), 0); /* the child is still paused */
        assert_true(after.acquisitions > before.acquisitions);
        assert_int_equal(after.contended, before.contended); /* no flock wait either */
        assert_int_equal(after.timeouts, before.timeouts);
        print_message("round %d: child on %s paused in its gates, parent wrote %s through: "
                      "%llu acquisitions, 0 contended\n",
                      round, bp, br,
                      (unsigned long long)(after.acquisitions - before.acquisitions));
        assert_int_equal(write(go[1], "g", 1), 1);
        assert_int_equal(waitpid(pid, &st, 0), pid);
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), 0);
        close(ready[0]);
        close(go[1]);
        store *s = gr->h->s;
        const char *alias = round < 2 ? "node:Person" : "node:Company";
        assert_int_equal(count_on(s, bp, alias, np), 1);
        assert_int_equal(count_on(s, bp, alias, nr), 0);
        assert_int_equal(count_on(s, br, alias, nr), 1);
        assert_int_equal(count_on(s, br, alias, np), 0);
        assert_int_equal(count_on(s, NULL, alias, np), 0);
        assert_int_equal(sidecars(s), 0);
        write_graph_close(gr);
    }
    store *s = wf_store(dir);
    graph_snapshot *m1 = main_snapshot(s);
    assert_string_equal(m1->head, m0->head);
    assert_int_equal(m1->manifest_version, m0->manifest_version);
    graph_snapshot_free(m1);
    graph_snapshot_free(m0);
    store_close(s);
    wf_assert_sound(dir);
    test_sandbox_done(dir);
}

/* ---- cell 2: a write on a branch against the delete of that branch ------------------------- */

#define DOOMED "doomed"

typedef struct wd_tally {
    unsigned write_first, refused, delete_first, violations;
    unsigned by_point[3];
} wd_tally;

/* Check one iteration's outcome; returns the violation message or NULL (tallied). */
static const char *wd_judge(store *s, const graph_snapshot *m0, int wrc, const char *wmsg,
                            const char *wcommit, int drc, const write_branch_info *deleted,
                            wd_tally *t, char *why, size_t cap)
{
    bool exists = branch_exists(s, DOOMED);
    graph_snapshot *m = main_snapshot(s);
    bool main_same = strcmp(m->head, m0->head) == 0 && m->manifest_version == m0->manifest_version;
    graph_snapshot_free(m);
    if (!main_same) return "main moved";
    if (sidecars(s) != 0) return "a sidecar was left";
    bool wtyped =
        (wrc == OG_E_NOT_FOUND || wrc == OG_E_READ_SET_CONFLICT) && strstr(wmsg, DOOMED) != NULL;
    bool drefused =
        drc == OG_E_CONFLICT || drc == OG_E_RESOURCE_LIMIT || drc == OG_E_RECOVERY_REQUIRED;
    if (wrc == 0 && drc == 0) {
        if (exists) return "both succeeded but the branch is there (resurrected)";
        if (strcmp(deleted->head, wcommit) != 0) return "the delete did not see the write";
        t->write_first++;
    } else if (wrc == 0 && drefused) {
        if (!exists) return "the delete was refused but the branch is gone";
        graph_snapshot *b = NULL;
        if (graph_snapshot_load(&b, s, DOOMED, 0, 0) != 0) return "the branch does not load";
        bool head = strcmp(b->head, wcommit) == 0;
        graph_snapshot_free(b);
        if (!head) return "the refused delete's branch does not show the write";
        t->refused++;
    } else if (wtyped && drc == 0) {
        if (exists) return "the delete succeeded but the branch is there";
        t->delete_first++;
    } else {
        snprintf(why, cap, "write rc %d (%s), delete rc %d", wrc, wmsg, drc);
        return why;
    }
    return NULL;
}

typedef struct wd_ctx {
    write_graph *gw, *gd;
    int point; /* where the write lets the delete go: 0 at its start, 1 after prepare, 2 in gates */
    unsigned jitter_w, jitter_d, jitter_hook; /* microseconds */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int go, hook_hits;
    const char *text;
    int wrc, drc;
    char wmsg[512];
    write_result wres;
    write_branch_info deleted; /* what the delete removed */
} wd_ctx;

static void wd_signal(wd_ctx *c)
{
    pthread_mutex_lock(&c->mu);
    c->go = 1;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

static void wd_hook(void *arg)
{
    wd_ctx *c = arg;
    if (c->hook_hits++) return; /* once: a restarted attempt passes */
    wd_signal(c);
    if (c->jitter_hook) usleep(c->jitter_hook);
}

static void *wd_writer(void *arg)
{
    wd_ctx *c = arg;
    if (c->point == 0) {
        wd_signal(c);
        if (c->jitter_w) usleep(c->jitter_w);
    }
    c->wrc = load_on(c->gw, DOOMED, c->text, &c->wres);
    snprintf(c->wmsg, sizeof c->wmsg, "%s", c->wrc ? og_error_last()->message : "");
    wd_signal(c); /* the hook was not reached (a failure before it) */
    return NULL;
}

static void *wd_deleter(void *arg)
{
    wd_ctx *c = arg;
    pthread_mutex_lock(&c->mu);
    while (!c->go)
        pthread_cond_wait(&c->cv, &c->mu);
    pthread_mutex_unlock(&c->mu);
    if (c->jitter_d) usleep(c->jitter_d);
    c->drc = write_branch_delete(c->gd, DOOMED, NULL, &c->deleted);
    return NULL;
}

static void test_write_vs_delete_threads(void **state)
{
    (void)state;
    char dir[256];
    new_graph(dir, sizeof dir, "brace-wd");
    unsigned seed = test_seed();
    int iters = iterations(200);
    print_message("write-vs-delete (threads): seed %u (OG_TEST_SEED), %d iterations\n", seed,
                  iters);
    write_graph *gw = NULL, *gd = NULL;
    assert_og_ok(wf_open(&gw, dir));
    assert_og_ok(wf_open(&gd, dir));
    store *s = gw->h->s;
    graph_snapshot *m0 = main_snapshot(s);
    wd_tally t = {0};
    unsigned rnd = seed;
    for (int it = 0; it < iters; it++) {
        assert_og_ok(write_branch_create(gd, DOOMED, NULL, NULL, NULL));
        if (rand_r(&rnd) % 2) { /* the branch already has a write (forked tables) */
            char pre[128], n[32];
            snprintf(n, sizeof n, "pre%d", it);
            node_line(pre, sizeof pre, "Person", n);
            assert_og_ok(load_on(gw, DOOMED, pre, NULL));
        }
        char line[128], name[32];
        snprintf(name, sizeof name, "w%d", it);
        node_line(line, sizeof line, rand_r(&rnd) % 2 ? "Person" : "Company", name);
        wd_ctx c;
        memset(&c, 0, sizeof c);
        pthread_mutex_init(&c.mu, NULL);
        pthread_cond_init(&c.cv, NULL);
        c.gw = gw;
        c.gd = gd;
        c.text = line;
        c.point = (int)(rand_r(&rnd) % 3);
        c.jitter_w = rand_r(&rnd) % 3000;
        c.jitter_d = rand_r(&rnd) % 3000;
        c.jitter_hook = rand_r(&rnd) % 2000;
        if (c.point == 1) {
            gw->test_after_prepare = wd_hook;
            gw->test_arg = &c;
        } else if (c.point == 2) {
            gw->test_in_gates = wd_hook;
            gw->test_in_gates_arg = &c;
        }
        pthread_t tw, td;
        assert_int_equal(pthread_create(&td, NULL, wd_deleter, &c), 0);
        assert_int_equal(pthread_create(&tw, NULL, wd_writer, &c), 0);
        pthread_join(tw, NULL);
        pthread_join(td, NULL);
        gw->test_after_prepare = NULL;
        gw->test_in_gates = NULL;
        t.by_point[c.point]++;
        char why[700];
        const char *v = wd_judge(s, m0, c.wrc, c.wmsg, c.wres.commit_id, c.drc, &c.deleted, &t, why,
                                 sizeof why);
        if (v) {
            t.violations++;
            print_message("iteration %d (seed %u, point %d): %s\n", it, seed, c.point, v);
        }
        if (branch_exists(s, DOOMED)) assert_og_ok(write_branch_delete(gd, DOOMED, NULL, NULL));
        if (branch_leftovers(s, m0, DOOMED, why, sizeof why)) {
            t.violations++;
            print_message("iteration %d (seed %u, point %d): %s\n", it, seed, c.point, why);
        }
        pthread_mutex_destroy(&c.mu);
        pthread_cond_destroy(&c.cv);
    }
    print_message("write-vs-delete (threads): %d iterations (points: %u at start, %u after "
                  "prepare, %u in gates): %u write-first, %u delete refused, %u delete-first, %u "
                  "violations\n",
                  iters, t.by_point[0], t.by_point[1], t.by_point[2], t.write_first, t.refused,
                  t.delete_first, t.violations);
    assert_int_equal(t.violations, 0);
    assert_int_equal(t.write_first + t.refused + t.delete_first, (unsigned)iters);
    graph_snapshot_free(m0);
    write_graph_close(gw);
    write_graph_close(gd);
    wf_assert_sound(dir);
    test_sandbox_done(dir);
}

/* The child writes, the parent deletes. The child tells the parent when to go (at its start,
 * after prepare, or inside its gates), then waits a random moment; it reports its rc, its
 * commit id and its error message through a pipe. */
typedef struct wd_child {
    int fd_go;
    unsigned jitter_hook;
    int hits;
} wd_child;

static void wd_child_hook(void *arg)
{
    wd_child *c = arg;
    if (c->hits++) return;
    char ch = 'g';
    if (write(c->fd_go, &ch, 1) != 1) _exit(92);
    if (c->jitter_hook) usleep(c->jitter_hook);
}

static void test_write_vs_delete_processes(void **state)
{
    (void)state;
    char dir[256];
    new_graph(dir, sizeof dir, "brace-wd-proc");
    unsigned seed = test_seed();
    int iters = iterations(200) / 3;
    if (iters < 1) iters = 1;
    print_message("write-vs-delete (processes): seed %u (OG_TEST_SEED), %d iterations\n", seed,
                  iters);
    write_graph *gd = NULL;
    assert_og_ok(wf_open(&gd, dir));
    store *s = gd->h->s;
    graph_snapshot *m0 = main_snapshot(s);
    wd_tally t = {0};
    unsigned rnd = seed;
    for (int it = 0; it < iters; it++) {
        assert_og_ok(write_branch_create(gd, DOOMED, NULL, NULL, NULL));
        if (rand_r(&rnd) % 2) {
            char pre[128], n[32];
            snprintf(n, sizeof n, "pre%d", it);
            node_line(pre, sizeof pre, "Company", n);
            assert_og_ok(load_on(gd, DOOMED, pre, NULL));
        }
        char line[128], name[32];
        snprintf(name, sizeof name, "w%d", it);
        node_line(line, sizeof line, rand_r(&rnd) % 2 ? "Person" : "Company", name);
        int point = (int)(rand_r(&rnd) % 3);
        unsigned jitter_w = rand_r(&rnd) % 5000, jitter_d = rand_r(&rnd) % 5000;
        unsigned jitter_hook = rand_r(&rnd) % 3000;
        int go[2], rep[2];
        assert_int_equal(pipe(go), 0);
        assert_int_equal(pipe(rep), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(go[0]);
            close(rep[0]);
            write_graph *c = NULL;
            if (wf_open(&c, dir) != 0) _exit(80);
            wd_child wc = {go[1], jitter_hook, 0};
            if (point == 0) {
                wd_child_hook(&wc);
                if (jitter_w) usleep(jitter_w);
            } else if (point == 1) {
                c->test_after_prepare = wd_child_hook;
                c->test_arg = &wc;
            } else {
                c->test_in_gates = wd_child_hook;
                c->test_in_gates_arg = &wc;
            }
            write_result res;
            int rc = load_on(c, DOOMED, line, &res);
            char out[700];
            int n = snprintf(out, sizeof out, "%d %s %s", rc, rc == 0 ? res.commit_id : "-",
                             rc ? og_error_last()->message : "");
            if (write(rep[1], out, (size_t)n) != n) _exit(93);
            write_graph_close(c);
            _exit(0);
        }
        close(go[1]);
        close(rep[1]);
        char ch;
        ssize_t gone = read(go[0], &ch, 1); /* 1: go; 0: the child ended before the point */
        (void)gone;
        if (jitter_d) usleep(jitter_d);
        write_branch_info deleted;
        memset(&deleted, 0, sizeof deleted);
        int drc = write_branch_delete(gd, DOOMED, NULL, &deleted);
        int st = 0;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), 0);
        char buf[800];
        ssize_t n = read(rep[0], buf, sizeof buf - 1);
        assert_true(n > 0);
        buf[n] = 0;
        close(go[0]);
        close(rep[0]);
        int wrc = atoi(buf);
        char commit[GRAPH_ID_LEN + 1] = "";
        const char *sp = strchr(buf, ' ');
        if (sp && wrc == 0) snprintf(commit, sizeof commit, "%.*s", GRAPH_ID_LEN, sp + 1);
        const char *msg = sp ? sp + 1 : "";
        t.by_point[point]++;
        char why[900];
        const char *v = wd_judge(s, m0, wrc, msg, commit, drc, &deleted, &t, why, sizeof why);
        if (v) {
            t.violations++;
            print_message("iteration %d (seed %u, point %d): %s\n", it, seed, point, v);
        }
        if (branch_exists(s, DOOMED)) assert_og_ok(write_branch_delete(gd, DOOMED, NULL, NULL));
        if (branch_leftovers(s, m0, DOOMED, why, sizeof why)) {
            t.violations++;
            print_message("iteration %d (seed %u, point %d): %s\n", it, seed, point, why);
        }
    }
    print_message("write-vs-delete (processes): %d iterations (points: %u at start, %u after "
                  "prepare, %u in gates): %u write-first, %u delete refused, %u delete-first, %u "
                  "violations\n",
                  iters, t.by_point[0], t.by_point[1], t.by_point[2], t.write_first, t.refused,
                  t.delete_first, t.violations);
    assert_int_equal(t.violations, 0);
    assert_int_equal(t.write_first + t.refused + t.delete_first, (unsigned)iters);
    graph_snapshot_free(m0);
    write_graph_close(gd);
    wf_assert_sound(dir);
    test_sandbox_done(dir);
}

/* ---- cell 3: delete of a branch with an unresolved recovery sidecar ------------------------ */

#define CRASHY "crashy"

static void pending_op(store *s, char id[GRAPH_ID_LEN + 1])
{
    char(*ids)[GRAPH_ID_LEN + 1] = NULL;
    size_t n = 0;
    assert_og_ok(write_sidecar_list(s, &ids, &n));
    assert_int_equal(n, 1);
    memcpy(id, ids[0], GRAPH_ID_LEN + 1);
    core_free(ids);
}

/* A writer process on `branch` that dies at failpoint fp (exit), leaving its sidecar. */
static void crash_writer(const char *dir, const char *branch, const char *fp, const char *text)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        write_graph *c = NULL;
        if (wf_open(&c, dir) != 0) _exit(80);
        core_fp_set(fp, CORE_FP_EXIT, 0, 0);
        int rc = load_on(c, branch, text, NULL);
        _exit(rc == 0 ? 1 : 2); /* not reached when the failpoint fires */
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), CORE_FP_EXIT_STATUS);
}

/* The writer is gone (its owner lock free): the delete's barrier resolves the intent first
 * (audited), then deletes; nothing of the branch is left. At every point of a write from the
 * armed sidecar to after the publish. */
static void test_delete_resolves_dead_writers_sidecar(void **state)
{
    (void)state;
    char dir[256];
    new_graph(dir, sizeof dir, "brace-del-dead");
    write_graph *gd = NULL;
    assert_og_ok(wf_open(&gd, dir));
    store *s = gd->h->s;
    graph_snapshot *m0 = main_snapshot(s);
    const char *fps[] = {"write.post_sidecar", "write.post_fork", "write.post_table_effect",
                         "write.pre_publish", "write.post_publish"};
    for (size_t i = 0; i < sizeof fps / sizeof fps[0]; i++) {
        for (int pre = 0; pre < 2; pre++) {
            if (pre && strcmp(fps[i], "write.post_fork") == 0) continue; /* first touch only */
            assert_og_ok(write_branch_create(gd, CRASHY, NULL, NULL, NULL));
            char line[128], name[32];
            if (pre) {
                snprintf(name, sizeof name, "pre-%zu", i);
                node_line(line, sizeof line, "Person", name);
                assert_og_ok(load_on(gd, CRASHY, line, NULL)); /* the table is forked already */
            }
            snprintf(name, sizeof name, "crash-%zu-%d", i, pre);
            node_line(line, sizeof line, "Person", name);
            crash_writer(dir, CRASHY, fps[i], line);
            char op[GRAPH_ID_LEN + 1];
            pending_op(s, op);
            int rc = write_branch_delete(gd, CRASHY, NULL, NULL);
            if (rc) fail_msg("%s: delete: %s", fps[i], og_error_last()->message);
            bool found = false;
            char kind[24] = "", commit[GRAPH_ID_LEN + 1] = "";
            assert_og_ok(write_audit_find(s, op, &found, kind, commit));
            assert_true(found); /* resolved through the barrier, audited */
            assert_int_equal(sidecars(s), 0);
            assert_false(branch_exists(s, CRASHY));
            char why[700];
            if (branch_leftovers(s, m0, CRASHY, why, sizeof why)) fail_msg("%s: %s", fps[i], why);
            print_message("writer dead at %s (%s): the delete's barrier %s its intent, then the "
                          "delete removed the branch\n",
                          fps[i], pre ? "table forked before" : "first touch", kind);
        }
    }
    graph_snapshot *m1 = main_snapshot(s);
    assert_string_equal(m1->head, m0->head);
    assert_int_equal(m1->manifest_version, m0->manifest_version);
    graph_snapshot_free(m1);
    graph_snapshot_free(m0);
    write_graph_close(gd);
    wf_assert_sound(dir);
    test_sandbox_done(dir);
}

/* A live writer on the branch, paused in a child process: the delete is refused typed and
 * changes nothing, then succeeds once the writer is done (its write then gone with the branch).
 *   - gates on, the writer holding its gates before it armed its sidecar: the delete's barrier
 *     finds nothing, but the branch's gate is taken: conflict ("being written");
 *   - gates on, its sidecar armed: the barrier cannot take the intent's gates: resource_limit
 *     naming the operation;
 *   - gates off, its sidecar armed: the barrier takes the (unlocked) gates, but the intent's
 *     owner lock is held: recovery_required naming the operation. */
typedef struct live_mode {
    bool gates_off, armed;
    int rc;
    const char *label;
} live_mode;

static const live_mode LIVE_MODES[] = {
    {false, false, OG_E_CONFLICT, "gates on, writer in its gates, not armed"},
    {false, true, OG_E_RESOURCE_LIMIT, "gates on, writer armed"},
    {true, true, OG_E_RECOVERY_REQUIRED, "gates off, writer armed"},
};

static void test_delete_refused_while_writer_live(void **state)
{
    (void)state;
    char dir[256];
    new_graph(dir, sizeof dir, "brace-del-live");
    for (size_t m = 0; m < sizeof LIVE_MODES / sizeof LIVE_MODES[0]; m++) {
        const live_mode *lm = &LIVE_MODES[m];
        if (lm->gates_off) setenv(WRITE_GATES_OFF_ENV, "1", 1);
        write_graph *gd = NULL;
        assert_og_ok(wf_open(&gd, dir));
        if (lm->gates_off) unsetenv(WRITE_GATES_OFF_ENV);
        assert_int_equal(write_gates_off(gd->gates), lm->gates_off);
        gd->gate_timeout_ms = 300;
        store *s = gd->h->s;
        graph_snapshot *m0 = main_snapshot(s);
        assert_og_ok(write_branch_create(gd, CRASHY, NULL, NULL, NULL));
        char name[32];
        snprintf(name, sizeof name, "live-%zu", m);
        int ready[2], go[2];
        assert_int_equal(pipe(ready), 0);
        assert_int_equal(pipe(go), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(ready[0]);
            close(go[1]);
            if (lm->gates_off) setenv(WRITE_GATES_OFF_ENV, "1", 1);
            write_graph *c = NULL;
            if (wf_open(&c, dir) != 0) _exit(80);
            pause_ctl pc = {
                PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, ready[1], go[0]};
            if (lm->armed) {
                c->test_in_gates = pause_hook;
                c->test_in_gates_arg = &pc;
            } else {
                c->test_before_arm = pause_hook;
                c->test_before_arm_arg = &pc;
            }
            char line[128];
            node_line(line, sizeof line, "Person", name);
            int rc = load_on(c, CRASHY, line, NULL);
            write_graph_close(c);
            _exit(rc == 0 ? 0 : 81);
        }
        close(ready[1]);
        close(go[0]);
        char ch;
        assert_int_equal(read(ready[0], &ch, 1), 1);
        assert_int_equal(sidecars(s), lm->armed ? 1 : 0);
        int rc = write_branch_delete(gd, CRASHY, NULL, NULL);
        print_message("%s: delete while the writer is live: %s (%s)\n", lm->label, og_code_name(rc),
                      og_error_last()->message);
        assert_int_equal(rc, lm->rc);
        if (lm->armed) assert_non_null(og_error_last()->operation_id);
        assert_true(branch_exists(s, CRASHY));
        assert_int_equal(sidecars(s), lm->armed ? 1 : 0); /* the live intent is not touched */
        int st = 0;
        assert_int_equal(waitpid(pid, &st, WNOHANG), 0);
        assert_int_equal(write(go[1], "g", 1), 1);
        assert_int_equal(waitpid(pid, &st, 0), pid);
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), 0);
        close(ready[0]);
        close(go[1]);
        graph_snapshot *b = NULL;
        assert_og_ok(graph_snapshot_load(&b, s, CRASHY, 0, 0));
        assert_int_equal(count_name(s, b, "node:Person", name), 1);
        write_branch_info deleted;
        assert_og_ok(write_branch_delete(gd, CRASHY, NULL, &deleted));
        assert_string_equal(deleted.head, b->head); /* it removed the branch with the write */
        graph_snapshot_free(b);
        char why[700];
        if (branch_leftovers(s, m0, CRASHY, why, sizeof why)) fail_msg("%s", why);
        assert_int_equal(sidecars(s), 0);
        graph_snapshot_free(m0);
        write_graph_close(gd);
    }
    wf_assert_sound(dir);
    test_sandbox_done(dir);
}

/* The same with a writer thread on another handle of this process (the in-process gates):
 * paused before arming, the delete finds the branch's gate taken (conflict); paused armed, its
 * barrier cannot take the intent's gates (resource_limit). */
typedef struct live_thread {
    write_graph *g;
    const char *line;
    pause_ctl *pc;
    int rc;
} live_thread;

static void *live_thread_write(void *arg)
{
    live_thread *w = arg;
    w->rc = load_on(w->g, CRASHY, w->line, NULL);
    pthread_mutex_lock(&w->pc->mu);
    w->pc->done = 1; /* also when it failed before the pause */
    pthread_cond_broadcast(&w->pc->cv);
    pthread_mutex_unlock(&w->pc->mu);
    return NULL;
}

static void test_delete_refused_while_writer_live_threads(void **state)
{
    (void)state;
    char dir[256];
    new_graph(dir, sizeof dir, "brace-del-live-th");
    write_graph *gd = NULL, *gw = NULL;
    assert_og_ok(wf_open(&gd, dir));
    assert_og_ok(wf_open(&gw, dir));
    gd->gate_timeout_ms = 300;
    store *s = gd->h->s;
    graph_snapshot *m0 = main_snapshot(s);
    for (size_t m = 0; m < 2; m++) {
        const live_mode *lm = &LIVE_MODES[m];
        assert_og_ok(write_branch_create(gd, CRASHY, NULL, NULL, NULL));
        pause_ctl pc = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, -1, -1};
        gw->test_in_gates = lm->armed ? pause_hook : NULL;
        gw->test_in_gates_arg = &pc;
        gw->test_before_arm = lm->armed ? NULL : pause_hook;
        gw->test_before_arm_arg = &pc;
        char line[128], name[32];
        snprintf(name, sizeof name, "live-th-%zu", m);
        node_line(line, sizeof line, "Person", name);
        live_thread w = {gw, line, &pc, -1};
        pthread_t th;
        assert_int_equal(pthread_create(&th, NULL, live_thread_write, &w), 0);
        pthread_mutex_lock(&pc.mu);
        while (!pc.inside && !pc.done)
            pthread_cond_wait(&pc.cv, &pc.mu);
        pthread_mutex_unlock(&pc.mu);
        assert_true(pc.inside);
        assert_int_equal(sidecars(s), lm->armed ? 1 : 0);
        int rc = write_branch_delete(gd, CRASHY, NULL, NULL);
        print_message("threads, %s: delete while the writer is live: %s (%s)\n", lm->label,
                      og_code_name(rc), og_error_last()->message);
        assert_int_equal(rc, lm->rc);
        assert_true(branch_exists(s, CRASHY));
        assert_int_equal(sidecars(s), lm->armed ? 1 : 0);
        pthread_mutex_lock(&pc.mu);
        pc.release = 1;
        pthread_cond_broadcast(&pc.cv);
        pthread_mutex_unlock(&pc.mu);
        pthread_join(th, NULL);
        gw->test_in_gates = gw->test_before_arm = NULL;
        assert_og_ok(w.rc);
        assert_int_equal(count_on(s, CRASHY, "node:Person", name), 1);
        assert_og_ok(write_branch_delete(gd, CRASHY, NULL, NULL));
        char why[700];
        if (branch_leftovers(s, m0, CRASHY, why, sizeof why)) fail_msg("%s", why);
        assert_int_equal(sidecars(s), 0);
    }
    graph_snapshot_free(m0);
    write_graph_close(gw);
    write_graph_close(gd);
    wf_assert_sound(dir);
    test_sandbox_done(dir);
}

/* A sidecar that cannot be read (so its branch cannot be told) blocks the delete like every
 * write: refused typed (recovery_required naming it), the branch kept, until an operator
 * resolves it. */
static void test_delete_refused_on_damaged_sidecar(void **state)
{
    (void)state;
    char dir[256];
    new_graph(dir, sizeof dir, "brace-del-damaged");
    write_graph *gd = NULL;
    assert_og_ok(wf_open(&gd, dir));
    store *s = gd->h->s;
    graph_snapshot *m0 = main_snapshot(s);
    assert_og_ok(write_branch_create(gd, CRASHY, NULL, NULL, NULL));
    char line[128];
    node_line(line, sizeof line, "Person", "damaged");
    crash_writer(dir, CRASHY, "write.post_sidecar", line);
    char op[GRAPH_ID_LEN + 1], key[STORE_KEY_MAX], body[200];
    pending_op(s, op);
    write_sidecar_key(key, op);
    int n = snprintf(body, sizeof body, "{\"format\":1,\"operation_id\":\"%s\",\"x\":true}", op);
    assert_og_ok(store_put(s, key, body, (size_t)n, 0));
    assert_int_equal(write_branch_delete(gd, CRASHY, NULL, NULL), OG_E_RECOVERY_REQUIRED);
    assert_string_equal(og_error_last()->operation_id, op);
    assert_true(branch_exists(s, CRASHY));
    assert_int_equal(sidecars(s), 1);
    /* a write on another branch is blocked by it too (its scope cannot be told) */
    assert_int_equal(load_on(gd, NULL, line, NULL), OG_E_RECOVERY_REQUIRED);
    write_resolve_options ro = {true, true};
    int kind = 0;
    char commit[GRAPH_ID_LEN + 1];
    assert_og_ok(write_recover_resolve(gd, op, &ro, &kind, commit));
    assert_og_ok(write_branch_delete(gd, CRASHY, NULL, NULL));
    char why[700];
    if (branch_leftovers(s, m0, CRASHY, why, sizeof why)) fail_msg("%s", why);
    graph_snapshot_free(m0);
    write_graph_close(gd);
    wf_assert_sound(dir);
    test_sandbox_done(dir);
}

/* ---- cell 4: gates off, two processes write one branch ------------------------------------- */

#define GO_WRITES 50
#define GO_TRIES 200

/* One writer process with the gates off: GO_WRITES one-node loads of `type` with distinct keys
 * on branch dev, each retried on a typed transient failure. Reports one line per key:
 * "A name commit" (acknowledged), "L name" (a retry met its own key: an earlier attempt landed
 * through recovery), "G name" (gave up), "E rc message" (an untyped or unexpected failure);
 * then "S retries reprepares publish_retries conflict rsc recovery other". */
static int gates_off_writer(const char *dir, int idx, const char *type, int ready_fd, int go_fd,
                            int rep_fd, unsigned seed)
{
    setenv(WRITE_GATES_OFF_ENV, "1", 1);
    write_graph *g = NULL;
    if (wf_open(&g, dir) != 0) return 80;
    if (!write_gates_off(g->gates)) return 81;
    char ch = 'r';
    if (write(ready_fd, &ch, 1) != 1 || read(go_fd, &ch, 1) != 1) return 82;
    FILE *rep = fdopen(rep_fd, "w");
    if (!rep) return 83;
    unsigned retries = 0, by[4] = {0};
    for (int i = 0; i < GO_WRITES; i++) {
        char name[32], line[128];
        snprintf(name, sizeof name, "g%d-%d", idx, i);
        node_line(line, sizeof line, type, name);
        bool done = false;
        for (int a = 0; a < GO_TRIES && !done; a++) {
            write_result res;
            int rc = load_on(g, "dev", line, &res);
            if (rc == 0) {
                fprintf(rep, "A %s %s\n", name, res.commit_id);
                done = true;
            } else if (rc == OG_E_KEY_CONFLICT && a > 0) {
                fprintf(rep, "L %s\n", name);
                done = true;
            } else if (rc == OG_E_CONFLICT || rc == OG_E_READ_SET_CONFLICT ||
                       rc == OG_E_RECOVERY_REQUIRED) {
                by[rc == OG_E_CONFLICT ? 0 : rc == OG_E_READ_SET_CONFLICT ? 1 : 2]++;
                retries++;
                /* a little longer each time: a writer whose intent is always live in the
                 * other's barrier would starve (the gates that queue them are off) */
                usleep(rand_r(&seed) % (500u * (unsigned)(a < 8 ? a + 1 : 8)));
            } else {
                fprintf(rep, "E %d %.200s\n", rc, og_error_last()->message);
                by[3]++;
                done = true;
            }
        }
        if (!done) fprintf(rep, "G %s\n", name);
        usleep(rand_r(&seed) % 1000); /* room for the other writer between two writes */
    }
    fprintf(rep, "S %u %llu %llu %u %u %u %u\n", retries, (unsigned long long)g->stats.reprepares,
            (unsigned long long)g->stats.publish_retries, by[0], by[1], by[2], by[3]);
    fclose(rep);
    write_graph_close(g);
    return 0;
}

typedef struct go_tally {
    unsigned acked, late, gave_up, errors, retries, conflict, rsc, recovery;
    unsigned long long reprepares, publish_retries;
} go_tally;

static void gates_off_round(const char *type0, const char *type1, unsigned seed)
{
    char dir[256];
    new_graph(dir, sizeof dir, "brace-gates-off");
    write_graph *g = NULL;
    assert_og_ok(wf_open(&g, dir));
    assert_og_ok(write_branch_create(g, "dev", NULL, NULL, NULL));
    graph_snapshot *m0 = main_snapshot(g->h->s);
    write_graph_close(g);
    const char *types[2] = {type0, type1};
    pid_t pids[2];
    int ready[2][2], go[2][2], rep[2][2];
    for (int c = 0; c < 2; c++) {
        assert_int_equal(pipe(ready[c]), 0);
        assert_int_equal(pipe(go[c]), 0);
        assert_int_equal(pipe(rep[c]), 0);
        pids[c] = fork();
        assert_true(pids[c] >= 0);
        if (pids[c] == 0) {
            close(ready[c][0]);
            close(go[c][1]);
            close(rep[c][0]);
            _exit(gates_off_writer(dir, c, types[c], ready[c][1], go[c][0], rep[c][1],
                                   seed + (unsigned)c));
        }
        close(ready[c][1]);
        close(go[c][0]);
        close(rep[c][1]);
    }
    char ch;
    for (int c = 0; c < 2; c++) /* both opened (a read-write open resolves every intent) */
        assert_int_equal(read(ready[c][0], &ch, 1), 1);
    for (int c = 0; c < 2; c++)
        assert_int_equal(write(go[c][1], "g", 1), 1);
    /* read the reports while the children run (a full pipe would stall them) */
    char *text[2] = {NULL, NULL};
    size_t len[2] = {0, 0};
    for (int c = 0; c < 2; c++) {
        size_t cap = 1 << 16;
        text[c] = core_malloc(cap);
        ssize_t n;
        while ((n = read(rep[c][0], text[c] + len[c], cap - 1 - len[c])) > 0)
            len[c] += (size_t)n;
        text[c][len[c]] = 0;
        close(rep[c][0]);
        close(ready[c][0]);
        close(go[c][1]);
    }
    for (int c = 0; c < 2; c++) {
        int st = 0;
        assert_int_equal(waitpid(pids[c], &st, 0), pids[c]);
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), 0);
    }
    /* a read-write open (gates on) resolves what is left; then nothing is */
    assert_og_ok(wf_open(&g, dir));
    store *s = g->h->s;
    assert_int_equal(sidecars(s), 0);
    graph_snapshot *lin = NULL;
    assert_og_ok(graph_snapshot_load(&lin, s, "dev", 0, GRAPH_SNAP_LINEAGE));
    go_tally t = {0};
    unsigned violations = 0;
    for (int c = 0; c < 2; c++) {
        char alias[64];
        snprintf(alias, sizeof alias, "node:%s", types[c]);
        for (char *line = strtok(text[c], "\n"); line; line = strtok(NULL, "\n")) {
            char name[64] = "", commit[64] = "";
            if (line[0] == 'A' && sscanf(line, "A %63s %63s", name, commit) == 2) {
                t.acked++;
                unsigned k = count_name(s, lin, alias, name);
                if (k != 1) {
                    violations++;
                    print_message("acknowledged %s is there %u times\n", name, k);
                }
                if (!graph_lineage_find(lin, commit)) {
                    violations++;
                    print_message("acknowledged %s: commit %s is not in dev's lineage\n", name,
                                  commit);
                }
            } else if (line[0] == 'L' && sscanf(line, "L %63s", name) == 1) {
                t.late++;
                unsigned k = count_name(s, lin, alias, name);
                if (k != 1) {
                    violations++;
                    print_message("late %s is there %u times\n", name, k);
                }
            } else if (line[0] == 'G' && sscanf(line, "G %63s", name) == 1) {
                t.gave_up++;
                print_message("gave up on %s\n", name);
                if (count_name(s, lin, alias, name) > 1) {
                    violations++;
                    print_message("%s (given up) is there twice\n", name);
                }
            } else if (line[0] == 'E') {
                t.errors++;
                violations++;
                print_message("child %d: %s\n", c, line);
            } else if (line[0] == 'S') {
                unsigned r, cf, rs, rq, ot;
                unsigned long long rp, pr;
                if (sscanf(line, "S %u %llu %llu %u %u %u %u", &r, &rp, &pr, &cf, &rs, &rq, &ot) ==
                    7) {
                    t.retries += r;
                    t.reprepares += rp;
                    t.publish_retries += pr;
                    t.conflict += cf;
                    t.rsc += rs;
                    t.recovery += rq;
                }
            }
        }
        core_free(text[c]);
    }
    /* the lineage is linear: each commit's parent is the one before it */
    for (size_t i = 0; i + 1 < lin->n_commits; i++)
        if (strcmp(lin->commits[i].parent, lin->commits[i + 1].id) != 0) {
            violations++;
            print_message("lineage: commit %s has parent %s, not %s\n", lin->commits[i].id,
                          lin->commits[i].parent, lin->commits[i + 1].id);
        }
    /* every table's pin is its Lance HEAD, and holds the rows the manifest says */
    for (size_t i = 0; i < lin->n_tables; i++) {
        char why[400];
        if (wf_check_table(s, &lin->tables[i], why, sizeof why)) {
            violations++;
            print_message("dev: %s\n", why);
        }
    }
    graph_snapshot *m1 = main_snapshot(s);
    if (strcmp(m1->head, m0->head) != 0 || m1->manifest_version != m0->manifest_version) {
        violations++;
        print_message("main moved\n");
    }
    print_message("gates off, %s + %s on one branch: %u acknowledged, %u landed late, %u given "
                  "up, %u untyped; %u typed retries (%u conflict, %u read_set_conflict, %u "
                  "recovery_required), %llu re-prepares, %llu manifest CAS retries; %zu commits "
                  "in a linear lineage; %u violations\n",
                  type0, type1, t.acked, t.late, t.gave_up, t.errors, t.retries, t.conflict, t.rsc,
                  t.recovery, t.reprepares, t.publish_retries, lin->n_commits, violations);
    graph_snapshot_free(m1);
    graph_snapshot_free(lin);
    graph_snapshot_free(m0);
    write_graph_close(g);
    assert_int_equal(violations, 0);
    assert_true(t.acked > 0);
    wf_assert_sound(dir);
    test_sandbox_done(dir);
}

/* Two tables: the writers' Lance commits never collide, so the graph-manifest CAS alone
 * arbitrates; one table: the table commit (and the first-touch fork) collide too. */
static void test_gates_off_two_processes_one_branch(void **state)
{
    (void)state;
    unsigned seed = test_seed();
    print_message("gates off: seed %u (OG_TEST_SEED)\n", seed);
    gates_off_round("Person", "Company", seed);
    gates_off_round("Person", "Person", seed + 7);
}

/* ---- cell 5: gates off, a writer published under another's revalidated plan -----------------
 * Deterministic: a child writer (gates off) stops once it holds its (unlocked) gates with its
 * read set revalidated, before it arms its sidecar; meanwhile this process (gates off too)
 * publishes a write on the same branch, which nothing held back. The child then goes on, and
 * only the conditional commits can stop it: the graph-manifest CAS (another table: its publish
 * loses the version, re-arbitrates and finds the head moved, and recovery rolls its effect
 * back, a first-touch fork included), the table's exact Lance commit (the same table: its
 * version is taken, and recovery proves by the other transaction's identity that its own never
 * happened), or the fork (a first touch of the same table: the fork the other published is not
 * an orphan to replace). Either way it fails typed, nothing of it shows, and its retry lands
 * once. */

typedef struct cas_case {
    const char *branch, *child_type, *parent_type;
    bool first_touch;   /* the branch's tables are not forked yet */
    int rc;             /* what the child's first attempt must return */
    const char *audit;  /* how recovery resolved its intent */
    unsigned rollbacks; /* rollback commits that makes on the branch */
    bool cas_lost;      /* its graph-manifest commit lost the version (and re-arbitrated) */
} cas_case;

static void before_arm_hook(void *arg)
{
    int *fds = arg; /* ready, go; once */
    if (fds[0] < 0) return;
    char c = 'r';
    if (write(fds[0], &c, 1) != 1 || read(fds[1], &c, 1) != 1) _exit(94);
    fds[0] = -1;
}

/* The number of violations of a linear lineage (each commit's parent is the one before). */
static unsigned lineage_breaks(const graph_snapshot *lin)
{
    unsigned v = 0;
    for (size_t i = 0; i + 1 < lin->n_commits; i++)
        if (strcmp(lin->commits[i].parent, lin->commits[i + 1].id) != 0) {
            v++;
            print_message("lineage: commit %s has parent %s, not %s\n", lin->commits[i].id,
                          lin->commits[i].parent, lin->commits[i + 1].id);
        }
    return v;
}

static void cas_round(const char *dir, write_graph *gp, const cas_case *k, int round)
{
    store *s = gp->h->s;
    assert_og_ok(write_branch_create(gp, k->branch, NULL, NULL, NULL));
    char line[128], name[32];
    if (!k->first_touch) { /* fork both tables first: later writes commit on the forks */
        snprintf(name, sizeof name, "seed%d-p", round);
        node_line(line, sizeof line, "Person", name);
        assert_og_ok(load_on(gp, k->branch, line, NULL));
        snprintf(name, sizeof name, "seed%d-c", round);
        node_line(line, sizeof line, "Company", name);
        assert_og_ok(load_on(gp, k->branch, line, NULL));
    }
    graph_snapshot *b0 = NULL;
    assert_og_ok(graph_snapshot_load(&b0, s, k->branch, 0, GRAPH_SNAP_LINEAGE));
    char cname[32], pname[32], cline[128], pline[128];
    snprintf(cname, sizeof cname, "cas%d-child", round);
    snprintf(pname, sizeof pname, "cas%d-parent", round);
    node_line(cline, sizeof cline, k->child_type, cname);
    node_line(pline, sizeof pline, k->parent_type, pname);
    int ready[2], go[2], rep[2];
    assert_int_equal(pipe(ready), 0);
    assert_int_equal(pipe(go), 0);
    assert_int_equal(pipe(rep), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(ready[0]);
        close(go[1]);
        close(rep[0]);
        setenv(WRITE_GATES_OFF_ENV, "1", 1);
        write_graph *c = NULL;
        if (wf_open(&c, dir) != 0 || !write_gates_off(c->gates)) _exit(80);
        int fds[2] = {ready[1], go[0]};
        c->test_before_arm = before_arm_hook;
        c->test_before_arm_arg = fds;
        write_result r1, r2;
        int rc1 = load_on(c, k->branch, cline, &r1);
        write_stats ws;
        write_graph_stats(c, &ws);
        char msg[400];
        snprintf(msg, sizeof msg, "%s", rc1 ? og_error_last()->message : "");
        int rc2 = load_on(c, k->branch, cline, &r2); /* the retry */
        char out[900];
        int n = snprintf(out, sizeof out, "%d %s %llu %d %s %s", rc1, r1.operation_id,
                         (unsigned long long)ws.publish_retries, rc2, rc2 == 0 ? r2.commit_id : "-",
                         msg);
        if (write(rep[1], out, (size_t)n) != n) _exit(93);
        write_graph_close(c);
        _exit(0);
    }
    close(ready[1]);
    close(go[0]);
    close(rep[1]);
    char ch;
    assert_int_equal(read(ready[0], &ch, 1), 1); /* the child is past its revalidation */
    write_result pr;
    assert_og_ok(load_on(gp, k->branch, pline, &pr)); /* nothing holds this back */
    assert_true(pr.committed);
    assert_int_equal(write(go[1], "g", 1), 1);
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    char buf[1000];
    ssize_t n = read(rep[0], buf, sizeof buf - 1);
    assert_true(n > 0);
    buf[n] = 0;
    close(ready[0]);
    close(go[1]);
    close(rep[0]);
    int rc1 = 0, rc2 = 0;
    char op[64] = "", commit2[64] = "";
    int used = 0;
    unsigned long long cas_retries = 0;
    assert_int_equal(
        sscanf(buf, "%d %63s %llu %d %63s %n", &rc1, op, &cas_retries, &rc2, commit2, &used), 5);
    const char *msg = buf + used;
    print_message("gates off, %s: the child's %s write lost to a %s write published under its "
                  "plan: %s (%s); its retry: %s\n",
                  k->branch, k->child_type, k->parent_type, og_code_name(rc1), msg,
                  og_code_name(rc2));
    assert_int_equal(rc1, k->rc);
    assert_non_null(strstr(msg, "undone by recovery"));
    assert_int_equal(cas_retries != 0, k->cas_lost);
    assert_og_ok(rc2);
    bool found = false;
    char kind[24] = "";
    assert_og_ok(write_audit_find(s, op, &found, kind, NULL));
    assert_true(found);
    assert_string_equal(kind, k->audit);
    /* the branch: the parent's write, the child's retry once, the failed attempt nowhere; a
     * linear lineage of exactly those commits (and the rollback, when there was one) */
    assert_int_equal(sidecars(s), 0);
    graph_snapshot *b1 = NULL;
    assert_og_ok(graph_snapshot_load(&b1, s, k->branch, 0, GRAPH_SNAP_LINEAGE));
    assert_int_equal(
        count_name(s, b1, "node:Person", pname) + count_name(s, b1, "node:Company", pname), 1);
    assert_int_equal(
        count_name(s, b1, "node:Person", cname) + count_name(s, b1, "node:Company", cname), 1);
    assert_int_equal(b1->n_commits, b0->n_commits + 2 + k->rollbacks);
    assert_string_equal(b1->commits[0].id, commit2);
    assert_non_null(graph_lineage_find(b1, pr.commit_id));
    assert_int_equal(lineage_breaks(b1), 0);
    for (size_t i = 0; i < b1->n_tables; i++) {
        char why[400];
        if (wf_check_table(s, &b1->tables[i], why, sizeof why)) fail_msg("%s", why);
    }
    graph_snapshot_free(b1);
    graph_snapshot_free(b0);
}

static void test_gates_off_cas_arbitrates(void **state)
{
    (void)state;
    char dir[256];
    new_graph(dir, sizeof dir, "brace-cas");
    setenv(WRITE_GATES_OFF_ENV, "1", 1);
    write_graph *gp = NULL;
    assert_og_ok(wf_open(&gp, dir));
    unsetenv(WRITE_GATES_OFF_ENV);
    assert_true(write_gates_off(gp->gates));
    graph_snapshot *m0 = main_snapshot(gp->h->s);
    const cas_case cases[] = {
        {"cas-tables", "Person", "Company", false, OG_E_READ_SET_CONFLICT, "rolled_back", 1, true},
        {"cas-table", "Person", "Person", false, OG_E_CONFLICT, "discarded", 0, false},
        {"cas-fork", "Person", "Person", true, OG_E_CONFLICT, "discarded", 0, false},
        {"cas-forks", "Person", "Company", true, OG_E_READ_SET_CONFLICT, "rolled_back", 1, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cas_round(dir, gp, &cases[i], (int)i);
    graph_snapshot *m1 = main_snapshot(gp->h->s);
    assert_string_equal(m1->head, m0->head);
    assert_int_equal(m1->manifest_version, m0->manifest_version);
    graph_snapshot_free(m1);
    graph_snapshot_free(m0);
    write_graph_close(gp);
    wf_assert_sound(dir);
    test_sandbox_done(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_branches_do_not_block_threads),
        cmocka_unit_test(test_branches_do_not_block_processes),
        cmocka_unit_test(test_write_vs_delete_threads),
        cmocka_unit_test(test_write_vs_delete_processes),
        cmocka_unit_test(test_delete_resolves_dead_writers_sidecar),
        cmocka_unit_test(test_delete_refused_while_writer_live),
        cmocka_unit_test(test_delete_refused_while_writer_live_threads),
        cmocka_unit_test(test_delete_refused_on_damaged_sidecar),
        cmocka_unit_test(test_gates_off_two_processes_one_branch),
        cmocka_unit_test(test_gates_off_cas_arbitrates),
    };
    cmocka_set_test_filter(getenv("OG_TEST_FILTER")); /* one cell: its function's name */
    return cmocka_run_group_tests(tests, NULL, NULL);
}
