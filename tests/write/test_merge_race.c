/* Races of branch merges (issue 18 item 7, race bullet), with threads (separate handles on one
 * root, sharing the process's gates) and processes (the store's flock gates only). Every cell
 * asserts outcomes, counts and orders, never times:
 *   - reclassification (deterministic, write_graph.test_after_prepare): a write to the target
 *     between the merge's prepare and its gates makes the merge start again and classify
 *     afresh (a fast-forward becomes a three-way merge), its commit's parent is that write's
 *     commit and the content has it; a write to the SOURCE in that window makes the recheck
 *     start it again too, and the newer source head is what it merges (its merged parent);
 *     both in process and with the writes made by another process;
 *   - a conflicting write in that window: after reclassification the merge conflicts
 *     (OG_E_MERGE_CONFLICTS, divergent_update), and nothing of it is written;
 *   - two merges into one target (different sources, disjoint changes), deterministic and
 *     racing (threads, processes): both land, one after the other, the second classified on
 *     the first's result (a fast-forward, then a three-way merge whose parent is the first);
 *     the content has both;
 *   - a merge racing the delete of its source (threads, processes; seeded interleavings: the
 *     delete let go at the merge's start, after its prepare, or inside its gates): either the
 *     merge lands with the source's content (the delete after it, seeing the head it merged,
 *     or refused typed), or it fails typed (not_found naming the source) with nothing written;
 *     never a partial state, never a sidecar left; and deterministically, a delete landing in
 *     the merge's prepare while it reads the source's tables (write_graph.test_in_prepare).
 * Seeds: OG_TEST_SEED (printed); iterations: OG_MERGE_RACE_ITERS (threads; processes get a
 * third); one cell: OG_TEST_FILTER=<its function's name>. */
#include "write_fixture.h"

#include "core/alloc.h"
#include "core/clock.h"
#include "lance/branch.h"

#include <pthread.h>
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

static const char *BASE = "{\"type\":\"Person\",\"data\":{\"name\":\"ann\",\"age\":1}}\n"
                          "{\"type\":\"Person\",\"data\":{\"name\":\"bob\",\"age\":2}}\n"
                          "{\"type\":\"Company\",\"data\":{\"name\":\"acme\"}}\n"
                          "{\"edge\":\"WorksAt\",\"from\":\"ann\",\"to\":\"acme\"}\n";

/* ---- helpers ------------------------------------------------------------------------------- */

static unsigned test_seed(void)
{
    const char *e = getenv("OG_TEST_SEED");
    return e && *e ? (unsigned)strtoul(e, NULL, 10)
                   : (unsigned)(core_wall_us() ^ ((uint64_t)getpid() << 16));
}

static int iterations(int dflt)
{
    const char *e = getenv("OG_MERGE_RACE_ITERS");
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
    assert_og_ok(wf_load(g, BASE, EXEC_LOAD_APPEND, NULL));
    write_graph_close(g);
}

/* One load on `branch` (NULL: main); the write's rc. */
static int load_on(write_graph *g, const char *branch, const char *text, exec_load_mode mode,
                   write_result *res)
{
    graph_change_set cs;
    memset(&cs, 0, sizeof cs);
    exec_load_stats st;
    write_result local;
    if (!res) res = &local;
    memset(res, 0, sizeof *res);
    int rc =
        exec_load_parse(&cs, g->h->catalog, text, strlen(text), "d.jsonl", mode, &st, NULL, NULL);
    write_options wo = WRITE_OPTIONS_INIT;
    wo.branch = branch;
    if (rc == 0) rc = write_changes(g, WRITE_KIND_LOAD, &cs, &wo, res);
    graph_change_set_clear(&cs);
    return rc;
}

static void must_load(write_graph *g, const char *branch, const char *text, write_result *res)
{
    int rc = load_on(g, branch, text, EXEC_LOAD_APPEND, res);
    if (rc) fail_msg("load on %s: %s", branch ? branch : "main", og_error_last()->message);
}

static int merge_into(write_graph *g, const char *source, const char *target,
                      write_merge_result *mr)
{
    write_options wo = WRITE_OPTIONS_INIT;
    wo.branch = target;
    return write_merge(g, source, &wo, mr);
}

static size_t sidecars(store *s)
{
    size_t n = 0;
    assert_og_ok(wf_count_sidecars(s, &n));
    return n;
}

static graph_snapshot *lineage_of(store *s, const char *branch)
{
    graph_snapshot *snap = NULL;
    assert_og_ok(graph_snapshot_load(&snap, s, branch, 0, GRAPH_SNAP_LINEAGE));
    return snap;
}

static void head_of(store *s, const char *branch, char out[GRAPH_ID_LEN + 1])
{
    graph_snapshot *snap = NULL;
    assert_og_ok(graph_snapshot_load(&snap, s, branch, 0, 0));
    memcpy(out, snap->head, GRAPH_ID_LEN + 1);
    graph_snapshot_free(snap);
}

static char *content(store *s, const char *branch)
{
    char *c = wf_content(s, branch);
    if (!c) fail_msg("content of %s: %s", branch ? branch : "main", og_error_last()->message);
    return c;
}

static bool has_name(const char *content, const char *name)
{
    char pat[96];
    snprintf(pat, sizeof pat, "\"name\":\"%s\"", name);
    return strstr(content, pat) != NULL;
}

static bool branch_exists(store *s, const char *name)
{
    lance_branch ref;
    int rc = lance_branch_get(s, GRAPH_MANIFEST_DIR, name, &ref);
    og_error_clear();
    return rc == 0;
}

/* Every pinned table of a branch is at its Lance HEAD and holds row_count rows. */
static void assert_pins(store *s, const char *branch)
{
    graph_snapshot *snap = NULL;
    assert_og_ok(graph_snapshot_load(&snap, s, branch, 0, 0));
    for (size_t i = 0; i < snap->n_tables; i++) {
        char why[400];
        if (wf_check_table(s, &snap->tables[i], why, sizeof why)) fail_msg("%s", why);
    }
    graph_snapshot_free(snap);
}

static uint64_t reprepares_of(write_graph *g)
{
    write_stats st;
    write_graph_stats(g, &st);
    return st.reprepares;
}

/* Parse a child's report into a result (rc returned). */
static int parse_report(const char *buf, write_merge_result *mr, char *msg, size_t cap)
{
    memset(mr, 0, sizeof *mr);
    int rc = -1, outcome = 0, used = 0;
    unsigned re = 0;
    char commit[64] = "", sh[64] = "";
    if (sscanf(buf, "%d %d %u %63s %63s %n", &rc, &outcome, &re, commit, sh, &used) < 5)
        fail_msg("bad report: %s", buf);
    mr->outcome = outcome;
    mr->wr.reprepares = re;
    if (strcmp(commit, "-") != 0) {
        mr->wr.committed = true;
        snprintf(mr->wr.commit_id, sizeof mr->wr.commit_id, "%.*s", GRAPH_ID_LEN, commit);
    }
    if (strcmp(sh, "-") != 0)
        snprintf(mr->source_head, sizeof mr->source_head, "%.*s", GRAPH_ID_LEN, sh);
    snprintf(msg, cap, "%s", used ? buf + used : "");
    return rc;
}

static void read_all(int fd, char *buf, size_t cap)
{
    size_t len = 0;
    ssize_t n;
    while (len + 1 < cap && (n = read(fd, buf + len, cap - 1 - len)) > 0)
        len += (size_t)n;
    buf[len] = 0;
}

/* ---- cell 1: reclassification after a write in the prepare-to-gates window ---------------- */

/* The interleaved write, once: `text` on `branch` through another handle on the root. */
typedef struct interleave {
    const char *dir, *branch, *text;
    exec_load_mode mode;
    int hits;
    write_result res;
    char *content_after; /* the branch's content right after it */
} interleave;

static void interleave_hook(void *arg)
{
    interleave *w = arg;
    if (w->hits++) return; /* once: the restarted attempt goes straight on */
    write_graph *o = NULL;
    assert_og_ok(wf_open(&o, w->dir));
    int rc = load_on(o, w->branch, w->text, w->mode, &w->res);
    if (rc) fail_msg("interleaved write: %s", og_error_last()->message);
    assert_true(w->res.committed);
    w->content_after = content(o->h->s, w->branch);
    write_graph_close(o);
}

/* A source that changed all three tables since it was forked from main. */
static void source_with_changes(write_graph *g, const char *name, const char *person,
                                const char *company)
{
    assert_og_ok(write_branch_create(g, name, NULL, NULL, NULL));
    char text[512];
    snprintf(text, sizeof text,
             "{\"type\":\"Person\",\"data\":{\"name\":\"%s\"}}\n"
             "{\"type\":\"Company\",\"data\":{\"name\":\"%s\"}}\n",
             person, company);
    must_load(g, name, text, NULL);
    snprintf(text, sizeof text, "{\"edge\":\"WorksAt\",\"from\":\"%s\",\"to\":\"%s\"}\n", person,
             company);
    must_load(g, name, text, NULL);
}

static void test_reclassify_after_target_write(void **state)
{
    (void)state;
    char dir[256];
    new_graph(dir, sizeof dir, "mrace-target");
    write_graph *g = NULL;
    assert_og_ok(wf_open(&g, dir));
    store *s = g->h->s;
    source_with_changes(g, "src", "cyd", "initech");
    char src_head[GRAPH_ID_LEN + 1];
    head_of(s, "src", src_head);
    /* without the interleaved write this would be a fast-forward */
    interleave w = {
        dir, NULL, "{\"type\":\"Person\",\"data\":{\"name\":\"eve\"}}\n", EXEC_LOAD_APPEND, 0,
        {0}, NULL};
    g->test_after_prepare = interleave_hook;
    g->test_arg = &w;
    uint64_t re0 = reprepares_of(g);
    write_merge_result mr;
    int rc = merge_into(g, "src", NULL, &mr);
    g->test_after_prepare = NULL;
    if (rc) fail_msg("merge: %s", og_error_last()->message);
    assert_int_equal(w.hits, 2); /* prepared twice: the restart ran the hook again */
    assert_true(mr.wr.reprepares >= 1);
    assert_true(reprepares_of(g) >= re0 + 1);
    assert_int_equal(mr.outcome, GRAPH_MERGE_MERGED); /* classified again: no longer a FF */
    assert_true(mr.wr.committed);
    assert_string_equal(mr.source_head, src_head);
    graph_snapshot *m = lineage_of(s, NULL);
    const graph_commit *mc = graph_lineage_find(m, mr.wr.commit_id);
    assert_non_null(mc);
    assert_string_equal(m->content_head, mr.wr.commit_id);
    assert_string_equal(mc->parent, w.res.commit_id);
    assert_string_equal(mc->merged_parent, src_head);
    graph_snapshot_free(m);
    char *c = content(s, NULL);
    assert_true(has_name(c, "eve") && has_name(c, "cyd") && has_name(c, "initech"));
    print_message("target written between prepare and gates: %u re-prepare(s), outcome %s\n",
                  mr.wr.reprepares, graph_merge_outcome_name(mr.outcome));
    free(c);
    free(w.content_after);
    write_merge_result_clear(&mr);
    assert_int_equal(sidecars(s), 0);
    assert_pins(s, NULL);
    write_graph_close(g);
    wf_assert_sound(dir);
    test_sandbox_done(dir);
}

static void test_reclassify_after_source_write(void **state)
{
    (void)state;
    char dir[256];
    new_graph(dir, sizeof dir, "mrace-source");
    write_graph *g = NULL;
    assert_og_ok(wf_open(&g, dir));
    store *s = g->h->s;
    source_with_changes(g, "src", "cyd", "initech");
    char src_head0[GRAPH_ID_LEN + 1], main_head[GRAPH_ID_LEN + 1];
    head_of(s, "src", src_head0);
    head_of(s, NULL, main_head);
    interleave w = {
        dir, "src", "{\"type\":\"Person\",\"data\":{\"name\":\"dee\"}}\n", EXEC_LOAD_APPEND, 0,
        {0}, NULL};
    g->test_after_prepare = interleave_hook;
    g->test_arg = &w;
    uint64_t re0 = reprepares_of(g);
    write_merge_result mr;
    int rc = merge_into(g, "src", NULL, &mr);
    g->test_after_prepare = NULL;
    if (rc) fail_msg("merge: %s", og_error_last()->message);
    assert_int_equal(w.hits, 2);
    assert_true(mr.wr.reprepares >= 1);
    assert_true(reprepares_of(g) >= re0 + 1);
    assert_int_equal(mr.outcome, GRAPH_MERGE_FAST_FORWARD);
    /* the newer source head is what was merged */
    assert_string_equal(mr.source_head, w.res.commit_id);
    assert_string_not_equal(mr.source_head, src_head0);
    graph_snapshot *m = lineage_of(s, NULL);
    const graph_commit *mc = graph_lineage_find(m, mr.wr.commit_id);
    assert_non_null(mc);
    assert_string_equal(m->content_head, mr.wr.commit_id);
    assert_string_equal(mc->parent, main_head);
    assert_string_equal(mc->merged_parent, w.res.commit_id);
    graph_snapshot_free(m);
    /* a fast-forward: the target now holds exactly the source's content */
    char *c = content(s, NULL);
    assert_string_equal(c, w.content_after);
    assert_true(has_name(c, "dee") && has_name(c, "cyd"));
    free(c);
    print_message("source written between prepare and gates: %u re-prepare(s), merged the new "
                  "source head\n",
                  mr.wr.reprepares);
    free(w.content_after);
    write_merge_result_clear(&mr);
    /* merging again: up to date */
    assert_og_ok(merge_into(g, "src", NULL, &mr));
    assert_int_equal(mr.outcome, GRAPH_MERGE_UP_TO_DATE);
    write_merge_result_clear(&mr);
    assert_int_equal(sidecars(s), 0);
    assert_pins(s, NULL);
    write_graph_close(g);
    wf_assert_sound(dir);
    test_sandbox_done(dir);
}

/* The same two cells with processes (no shared in-process gates): a child merges and stops
 * after its prepare; the parent writes to the target (or the source) and lets it go on. */
static void child_pause_hook(void *arg)
{
    int *fds = arg; /* ready, go; once */
    if (fds[0] < 0) return;
    char c = 'r';
    if (write(fds[0], &c, 1) != 1 || read(fds[1], &c, 1) != 1) _exit(94);
    fds[0] = -1;
}

static void reclassify_processes(bool source_write)
{
    char dir[256];
    new_graph(dir, sizeof dir, source_write ? "mrace-src-proc" : "mrace-tgt-proc");
    write_graph *g = NULL;
    assert_og_ok(wf_open(&g, dir));
    store *s = g->h->s;
    source_with_changes(g, "src", "cyd", "initech");
    char src_head0[GRAPH_ID_LEN + 1], main_head[GRAPH_ID_LEN + 1];
    head_of(s, "src", src_head0);
    head_of(s, NULL, main_head);
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
        write_graph *c = NULL;
        if (wf_open(&c, dir) != 0) _exit(80);
        int fds[2] = {ready[1], go[0]};
        c->test_after_prepare = child_pause_hook;
        c->test_arg = fds;
        write_merge_result mr;
        int rc = merge_into(c, "src", NULL, &mr);
        char out[900];
        int n =
            snprintf(out, sizeof out, "%d %d %u %s %s %s", rc, mr.outcome, mr.wr.reprepares,
                     mr.wr.committed ? mr.wr.commit_id : "-",
                     mr.source_head[0] ? mr.source_head : "-", rc ? og_error_last()->message : "");
        if (write(rep[1], out, (size_t)n) != n) _exit(93);
        write_merge_result_clear(&mr);
        write_graph_close(c);
        _exit(0);
    }
    close(ready[1]);
    close(go[0]);
    close(rep[1]);
    char ch;
    assert_int_equal(read(ready[0], &ch, 1), 1); /* the child has prepared */
    write_result wr;
    must_load(g, source_write ? "src" : NULL,
              source_write ? "{\"type\":\"Person\",\"data\":{\"name\":\"dee\"}}\n"
                           : "{\"type\":\"Person\",\"data\":{\"name\":\"eve\"}}\n",
              &wr);
    assert_int_equal(write(go[1], "g", 1), 1);
    char buf[1000], msg[900];
    read_all(rep[0], buf, sizeof buf);
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    close(ready[0]);
    close(go[1]);
    close(rep[0]);
    write_merge_result mr;
    int rc = parse_report(buf, &mr, msg, sizeof msg);
    if (rc) fail_msg("the child's merge: %s", msg);
    print_message("%s written by another process between the merge's prepare and gates: %u "
                  "re-prepare(s), outcome %s\n",
                  source_write ? "source" : "target", mr.wr.reprepares,
                  graph_merge_outcome_name(mr.outcome));
    assert_true(mr.wr.reprepares >= 1);
    assert_true(mr.wr.committed);
    graph_snapshot *m = lineage_of(s, NULL);
    const graph_commit *mc = graph_lineage_find(m, mr.wr.commit_id);
    assert_non_null(mc);
    assert_string_equal(m->content_head, mr.wr.commit_id);
    if (source_write) {
        assert_int_equal(mr.outcome, GRAPH_MERGE_FAST_FORWARD);
        assert_string_equal(mr.source_head, wr.commit_id);
        assert_string_equal(mc->parent, main_head);
        assert_string_equal(mc->merged_parent, wr.commit_id);
    } else {
        assert_int_equal(mr.outcome, GRAPH_MERGE_MERGED);
        assert_string_equal(mr.source_head, src_head0);
        assert_string_equal(mc->parent, wr.commit_id);
        assert_string_equal(mc->merged_parent, src_head0);
    }
    graph_snapshot_free(m);
    char *c = content(s, NULL);
    assert_true(has_name(c, source_write ? "dee" : "eve") && has_name(c, "cyd") &&
                has_name(c, "initech"));
    free(c);
    assert_int_equal(sidecars(s), 0);
    assert_pins(s, NULL);
    write_graph_close(g);
    wf_assert_sound(dir);
    test_sandbox_done(dir);
}

static void test_reclassify_processes(void **state)
{
    (void)state;
    reclassify_processes(false);
    reclassify_processes(true);
}

/* A target write in the window that makes the merge conflict once it is classified again:
 * the source set ann's age to 31, the interleaved write sets it to 32. */
static void test_interleaved_write_makes_conflict(void **state)
{
    (void)state;
    char dir[256];
    new_graph(dir, sizeof dir, "mrace-conflict");
    write_graph *g = NULL;
    assert_og_ok(wf_open(&g, dir));
    store *s = g->h->s;
    assert_og_ok(write_branch_create(g, "src", NULL, NULL, NULL));
    assert_og_ok(load_on(g, "src", "{\"type\":\"Person\",\"data\":{\"name\":\"ann\",\"age\":31}}\n",
                         EXEC_LOAD_MERGE, NULL));
    must_load(g, "src", "{\"type\":\"Company\",\"data\":{\"name\":\"initech\"}}\n", NULL);
    interleave w = {dir,
                    NULL,
                    "{\"type\":\"Person\",\"data\":{\"name\":\"ann\",\"age\":32}}\n",
                    EXEC_LOAD_MERGE,
                    0,
                    {0},
                    NULL};
    g->test_after_prepare = interleave_hook;
    g->test_arg = &w;
    write_merge_result mr;
    int rc = merge_into(g, "src", NULL, &mr);
    g->test_after_prepare = NULL;
    assert_int_equal(w.hits, 1); /* the first prepare found no conflict and went on */
    assert_int_equal(rc, OG_E_MERGE_CONFLICTS);
    assert_true(mr.wr.reprepares >= 1);
    assert_int_equal(mr.outcome, GRAPH_MERGE_MERGED);
    assert_false(mr.wr.committed);
    assert_int_equal(mr.conflicts.n, 1);
    assert_int_equal(mr.conflicts.items[0].kind, GRAPH_CONFLICT_DIVERGENT_UPDATE);
    assert_string_equal(mr.conflicts.items[0].id, "ann");
    print_message("conflicting target write between prepare and gates: %s (%s)\n", og_code_name(rc),
                  mr.conflicts.items[0].message);
    write_merge_result_clear(&mr);
    /* nothing written: main is the interleaved write's commit, with its content */
    graph_snapshot *m = lineage_of(s, NULL);
    assert_string_equal(m->content_head, w.res.commit_id);
    graph_snapshot_free(m);
    char *c = content(s, NULL);
    assert_string_equal(c, w.content_after);
    assert_false(has_name(c, "initech"));
    free(c);
    free(w.content_after);
    assert_int_equal(sidecars(s), 0);
    assert_pins(s, NULL);
    write_graph_close(g);
    wf_assert_sound(dir);
    test_sandbox_done(dir);
}

/* ---- cell 2: two merges into one target ----------------------------------------------------- */

typedef struct merge_then {
    write_graph *other;
    const char *source;
    int hits;
    int rc;
    write_merge_result mr;
} merge_then;

static void merge_hook(void *arg)
{
    merge_then *m = arg;
    if (m->hits++) return;
    m->rc = merge_into(m->other, m->source, NULL, &m->mr);
}

/* The commit under any maintenance commits (automatic compaction after a write) from id. */
static const char *below_maintenance(const graph_snapshot *lin, const char *id)
{
    const graph_commit *c = graph_lineage_find(lin, id);
    while (c && c->maintenance)
        c = graph_lineage_find(lin, (id = c->parent));
    return id;
}

/* What two merges into main (sources forked at the same head) must leave: both landed, the
 * first a fast-forward, the second a three-way merge on top of it; the content has both. */
typedef struct two_tally {
    unsigned second_restarted, second_serialized, first_is_a, violations;
} two_tally;

static const char *judge_two(store *s, const char *head0, const char *src_a, const char *src_b,
                             int rc_a, const write_merge_result *a, int rc_b,
                             const write_merge_result *b, const char *name_a, const char *name_b,
                             two_tally *t, char *why, size_t cap)
{
    if (rc_a || rc_b) {
        snprintf(why, cap, "merge rc %d and %d", rc_a, rc_b);
        return why;
    }
    if (!a->wr.committed || !b->wr.committed) return "a merge committed nothing";
    if (strcmp(a->source_head, src_a) || strcmp(b->source_head, src_b))
        return "a merge merged another source head";
    bool a_first = a->outcome == GRAPH_MERGE_FAST_FORWARD;
    const write_merge_result *first = a_first ? a : b, *second = a_first ? b : a;
    if (first->outcome != GRAPH_MERGE_FAST_FORWARD || second->outcome != GRAPH_MERGE_MERGED) {
        snprintf(why, cap, "outcomes %s and %s", graph_merge_outcome_name(a->outcome),
                 graph_merge_outcome_name(b->outcome));
        return why;
    }
    graph_snapshot *m = NULL;
    if (graph_snapshot_load(&m, s, NULL, 0, GRAPH_SNAP_LINEAGE) != 0) return "main does not load";
    const graph_commit *c2 = graph_lineage_find(m, second->wr.commit_id);
    const graph_commit *c1 = graph_lineage_find(m, first->wr.commit_id);
    bool ok = c1 && c2 && strcmp(m->content_head, second->wr.commit_id) == 0 &&
              strcmp(below_maintenance(m, c2->parent), first->wr.commit_id) == 0 &&
              strcmp(c1->parent, head0) == 0 &&
              strcmp(c1->merged_parent, first->source_head) == 0 &&
              strcmp(c2->merged_parent, second->source_head) == 0;
    graph_snapshot_free(m);
    if (!ok) return "main's lineage is not head0 <- first merge <- second merge";
    char *c = wf_content(s, NULL);
    bool both = c && has_name(c, name_a) && has_name(c, name_b);
    free(c);
    if (!both) return "the content does not have both merges";
    if (sidecars(s)) return "a sidecar was left";
    if (second->wr.reprepares)
        t->second_restarted++;
    else
        t->second_serialized++;
    t->first_is_a += a_first;
    return NULL;
}

/* Deterministic: merge A's window holds merge B, whole. A starts again on B's result. */
static void test_two_merges_deterministic(void **state)
{
    (void)state;
    char dir[256];
    new_graph(dir, sizeof dir, "mrace-two-det");
    write_graph *ga = NULL, *gb = NULL;
    assert_og_ok(wf_open(&ga, dir));
    assert_og_ok(wf_open(&gb, dir));
    store *s = ga->h->s;
    source_with_changes(ga, "sa", "pa", "ca");
    assert_og_ok(write_branch_create(ga, "sb", NULL, NULL, NULL));
    must_load(ga, "sb", "{\"type\":\"Person\",\"data\":{\"name\":\"pb\"}}\n", NULL);
    must_load(ga, "sb", "{\"type\":\"Company\",\"data\":{\"name\":\"cb\"}}\n", NULL);
    char ha[GRAPH_ID_LEN + 1], hb[GRAPH_ID_LEN + 1], h0[GRAPH_ID_LEN + 1];
    head_of(s, "sa", ha);
    head_of(s, "sb", hb);
    head_of(s, NULL, h0);
    merge_then mt = {gb, "sb", 0, -1, {0}};
    ga->test_after_prepare = merge_hook;
    ga->test_arg = &mt;
    write_merge_result ma;
    int rc = merge_into(ga, "sa", NULL, &ma);
    ga->test_after_prepare = NULL;
    assert_int_equal(mt.hits, 2);
    assert_true(ma.wr.reprepares >= 1);
    two_tally t = {0};
    char why[256];
    const char *v =
        judge_two(s, h0, ha, hb, rc, &ma, mt.rc, &mt.mr, "pa", "pb", &t, why, sizeof why);
    if (v) fail_msg("%s", v);
    assert_int_equal(t.first_is_a, 0); /* B landed inside A's window: B first */
    assert_int_equal(t.second_restarted, 1);
    char *c = content(s, NULL);
    assert_true(has_name(c, "ca") && has_name(c, "cb"));
    free(c);
    write_merge_result_clear(&ma);
    write_merge_result_clear(&mt.mr);
    assert_pins(s, NULL);
    write_graph_close(ga);
    write_graph_close(gb);
    wf_assert_sound(dir);
    test_sandbox_done(dir);
}

typedef struct racer {
    write_graph *g;
    const char *source;
    unsigned jitter;
    pthread_barrier_t *start;
    int rc;
    write_merge_result mr;
} racer;

static void *racer_run(void *arg)
{
    racer *r = arg;
    pthread_barrier_wait(r->start);
    if (r->jitter) usleep(r->jitter);
    r->rc = merge_into(r->g, r->source, NULL, &r->mr);
    return NULL;
}

/* Two fresh sources of one iteration: sa-i adds a person (and an edge to acme), sb-i a
 * company; both forked from main's head. */
static void two_sources(write_graph *g, int it, char *sa, char *sb, char *pa, char *cb, size_t cap,
                        char ha[GRAPH_ID_LEN + 1], char hb[GRAPH_ID_LEN + 1])
{
    snprintf(sa, cap, "sa-%d", it);
    snprintf(sb, cap, "sb-%d", it);
    snprintf(pa, cap, "pa%d", it);
    snprintf(cb, cap, "cb%d", it);
    assert_og_ok(write_branch_create(g, sa, NULL, NULL, NULL));
    assert_og_ok(write_branch_create(g, sb, NULL, NULL, NULL));
    char text[256];
    snprintf(text, sizeof text,
             "{\"type\":\"Person\",\"data\":{\"name\":\"%s\"}}\n"
             "{\"edge\":\"WorksAt\",\"from\":\"%s\",\"to\":\"acme\"}\n",
             pa, pa);
    must_load(g, sa, text, NULL);
    snprintf(text, sizeof text, "{\"type\":\"Company\",\"data\":{\"name\":\"%s\"}}\n", cb);
    must_load(g, sb, text, NULL);
    head_of(g->h->s, sa, ha);
    head_of(g->h->s, sb, hb);
}

static void test_two_merges_threads(void **state)
{
    (void)state;
    char dir[256];
    new_graph(dir, sizeof dir, "mrace-two-thr");
    unsigned seed = test_seed();
    int iters = iterations(30);
    print_message("two merges (threads): seed %u (OG_TEST_SEED), %d iterations\n", seed, iters);
    write_graph *ga = NULL, *gb = NULL;
    assert_og_ok(wf_open(&ga, dir));
    assert_og_ok(wf_open(&gb, dir));
    store *s = ga->h->s;
    unsigned rnd = seed;
    two_tally t = {0};
    for (int it = 0; it < iters; it++) {
        char sa[32], sb[32], pa[32], cb[32], ha[GRAPH_ID_LEN + 1], hb[GRAPH_ID_LEN + 1],
            h0[GRAPH_ID_LEN + 1];
        two_sources(ga, it, sa, sb, pa, cb, sizeof sa, ha, hb);
        head_of(s, NULL, h0);
        pthread_barrier_t start;
        pthread_barrier_init(&start, NULL, 2);
        racer ra = {ga, sa, rand_r(&rnd) % 3000, &start, -1, {0}};
        racer rb = {gb, sb, rand_r(&rnd) % 3000, &start, -1, {0}};
        pthread_t ta, tb;
        assert_int_equal(pthread_create(&ta, NULL, racer_run, &ra), 0);
        assert_int_equal(pthread_create(&tb, NULL, racer_run, &rb), 0);
        pthread_join(ta, NULL);
        pthread_join(tb, NULL);
        pthread_barrier_destroy(&start);
        char why[256];
        const char *v =
            judge_two(s, h0, ha, hb, ra.rc, &ra.mr, rb.rc, &rb.mr, pa, cb, &t, why, sizeof why);
        if (v) {
            t.violations++;
            print_message("iteration %d (seed %u): %s\n", it, seed, v);
        }
        write_merge_result_clear(&ra.mr);
        write_merge_result_clear(&rb.mr);
        assert_og_ok(write_branch_delete(ga, sa, NULL, NULL));
        assert_og_ok(write_branch_delete(ga, sb, NULL, NULL));
    }
    print_message("two merges (threads): %d iterations: %u with the second merge restarted on "
                  "the first's result, %u with it prepared after the first landed; %u with A "
                  "first; %u violations\n",
                  iters, t.second_restarted, t.second_serialized, t.first_is_a, t.violations);
    assert_int_equal(t.violations, 0);
    assert_int_equal(t.second_restarted + t.second_serialized, (unsigned)iters);
    assert_pins(s, NULL);
    write_graph_close(ga);
    write_graph_close(gb);
    wf_assert_sound(dir);
    test_sandbox_done(dir);
}

/* A child merging `source` into main once the parent says go; it reports "rc outcome
 * reprepares commit source_head message". */
static pid_t merge_child(const char *dir, const char *source, int fd_go, int fd_rep,
                         unsigned jitter)
{
    pid_t pid = fork();
    if (pid != 0) return pid;
    write_graph *c = NULL;
    if (wf_open(&c, dir) != 0) _exit(80);
    char ch;
    if (read(fd_go, &ch, 1) != 1) _exit(81);
    if (jitter) usleep(jitter);
    write_merge_result mr;
    int rc = merge_into(c, source, NULL, &mr);
    char out[900];
    int n = snprintf(out, sizeof out, "%d %d %u %s %s %s", rc, mr.outcome, mr.wr.reprepares,
                     mr.wr.committed ? mr.wr.commit_id : "-",
                     mr.source_head[0] ? mr.source_head : "-", rc ? og_error_last()->message : "");
    if (write(fd_rep, out, (size_t)n) != n) _exit(82);
    write_merge_result_clear(&mr);
    write_graph_close(c);
    _exit(0);
}

static void test_two_merges_processes(void **state)
{
    (void)state;
    char dir[256];
    new_graph(dir, sizeof dir, "mrace-two-proc");
    unsigned seed = test_seed();
    int iters = iterations(30) / 3;
    if (iters < 1) iters = 1;
    print_message("two merges (processes): seed %u (OG_TEST_SEED), %d iterations\n", seed, iters);
    write_graph *g = NULL;
    assert_og_ok(wf_open(&g, dir));
    store *s = g->h->s;
    unsigned rnd = seed;
    two_tally t = {0};
    for (int it = 0; it < iters; it++) {
        char sa[32], sb[32], pa[32], cb[32], ha[GRAPH_ID_LEN + 1], hb[GRAPH_ID_LEN + 1],
            h0[GRAPH_ID_LEN + 1];
        two_sources(g, it, sa, sb, pa, cb, sizeof sa, ha, hb);
        head_of(s, NULL, h0);
        int go[2][2], rep[2][2];
        pid_t pids[2];
        const char *srcs[2] = {sa, sb};
        for (int c = 0; c < 2; c++) {
            assert_int_equal(pipe(go[c]), 0);
            assert_int_equal(pipe(rep[c]), 0);
            pids[c] = merge_child(dir, srcs[c], go[c][0], rep[c][1], rand_r(&rnd) % 5000);
            assert_true(pids[c] > 0);
            close(go[c][0]);
            close(rep[c][1]);
        }
        for (int c = 0; c < 2; c++)
            assert_int_equal(write(go[c][1], "g", 1), 1);
        char buf[2][1000], msg[2][900];
        write_merge_result mr[2];
        int rc[2];
        for (int c = 0; c < 2; c++) {
            read_all(rep[c][0], buf[c], sizeof buf[c]);
            int st = 0;
            assert_int_equal(waitpid(pids[c], &st, 0), pids[c]);
            assert_true(WIFEXITED(st));
            assert_int_equal(WEXITSTATUS(st), 0);
            close(go[c][1]);
            close(rep[c][0]);
            rc[c] = parse_report(buf[c], &mr[c], msg[c], sizeof msg[c]);
        }
        char why[256];
        const char *v =
            judge_two(s, h0, ha, hb, rc[0], &mr[0], rc[1], &mr[1], pa, cb, &t, why, sizeof why);
        if (v) {
            t.violations++;
            print_message("iteration %d (seed %u): %s (%s | %s)\n", it, seed, v, msg[0], msg[1]);
        }
        assert_og_ok(write_branch_delete(g, sa, NULL, NULL));
        assert_og_ok(write_branch_delete(g, sb, NULL, NULL));
    }
    print_message("two merges (processes): %d iterations: %u with the second merge restarted on "
                  "the first's result, %u with it prepared after the first landed; %u with A "
                  "first; %u violations\n",
                  iters, t.second_restarted, t.second_serialized, t.first_is_a, t.violations);
    assert_int_equal(t.violations, 0);
    assert_int_equal(t.second_restarted + t.second_serialized, (unsigned)iters);
    assert_pins(s, NULL);
    write_graph_close(g);
    wf_assert_sound(dir);
    test_sandbox_done(dir);
}

/* ---- cell 3: a merge racing the delete of its source --------------------------------------- */

#define DOOMED "doomed"

typedef struct md_tally {
    unsigned merge_then_delete, delete_refused, delete_first, violations;
    unsigned gone_at_start, gone_later; /* delete_first: before the merge read the source, after */
    unsigned by_point[3];
} md_tally;

/* The merge's typed failures for a source that is gone: before its prepare read it, or after. */
static bool typed_gone(const char *msg)
{
    return strstr(msg, "no branch '" DOOMED "' to merge") ||
           strstr(msg, "branch '" DOOMED "' was deleted while it was being merged");
}

/* Judge one iteration. old/src: main's content before, the source's (a fast-forward makes main
 * exactly the source). */
static const char *md_judge(store *s, const char *old, const char *src_content,
                            const char *src_head, int mrc, const write_merge_result *mr,
                            const char *mmsg, int drc, const write_branch_info *deleted,
                            md_tally *t, char *why, size_t cap)
{
    if (sidecars(s) != 0) return "a sidecar was left";
    bool exists = branch_exists(s, DOOMED);
    char *now = wf_content(s, NULL);
    if (!now) return "main does not read";
    bool is_old = strcmp(now, old) == 0, is_new = strcmp(now, src_content) == 0;
    free(now);
    if (!is_old && !is_new) return "main is neither its old content nor the source's";
    bool drefused =
        drc == OG_E_CONFLICT || drc == OG_E_RESOURCE_LIMIT || drc == OG_E_RECOVERY_REQUIRED;
    if (mrc == 0) {
        if (!is_new || !mr->wr.committed || mr->outcome != GRAPH_MERGE_FAST_FORWARD)
            return "the merge succeeded but main does not hold the source's content";
        if (strcmp(mr->source_head, src_head) != 0) return "the merge merged another head";
        graph_snapshot *m = NULL;
        if (graph_snapshot_load(&m, s, NULL, 0, GRAPH_SNAP_LINEAGE) != 0)
            return "main does not load";
        const graph_commit *mc = graph_lineage_find(m, mr->wr.commit_id);
        bool ok = mc && strcmp(m->content_head, mr->wr.commit_id) == 0 &&
                  strcmp(mc->merged_parent, src_head) == 0;
        graph_snapshot_free(m);
        if (!ok) return "the merge commit is not main's head with the source as merged parent";
        if (drc == 0) {
            if (exists) return "the delete succeeded but the branch is there";
            if (strcmp(deleted->head, src_head) != 0) return "the delete removed another head";
            t->merge_then_delete++;
        } else if (drefused) {
            if (!exists) return "the delete was refused but the branch is gone";
            t->delete_refused++;
        } else {
            snprintf(why, cap, "merge landed, delete rc %d", drc);
            return why;
        }
    } else if (mrc == OG_E_NOT_FOUND && typed_gone(mmsg) && drc == 0) {
        if (!is_old) return "the merge failed but main moved";
        if (exists) return "the delete succeeded but the branch is there";
        t->delete_first++;
        if (strstr(mmsg, "to merge"))
            t->gone_at_start++;
        else
            t->gone_later++;
    } else {
        snprintf(why, cap, "merge rc %d (%s), delete rc %d", mrc, mmsg, drc);
        return why;
    }
    return NULL;
}

/* Deterministic: the source is deleted once the merge has captured its head and found the
 * merge base, before it reads the source's tables (write_graph.test_in_prepare): the delete
 * reclaims the source's table forks, so those reads find files gone; the merge fails typed,
 * not_found naming the source (not a data file), and writes nothing. Forked tables on the source:
 * all three (a person, a company, an edge). */
typedef struct delete_once {
    const char *dir, *name;
    int hits, rc;
} delete_once;

static void delete_hook(void *arg)
{
    delete_once *d = arg;
    if (d->hits++) return;
    write_graph *o = NULL;
    assert_og_ok(wf_open(&o, d->dir));
    d->rc = write_branch_delete(o, d->name, NULL, NULL);
    write_graph_close(o);
}

static void test_source_deleted_in_prepare(void **state)
{
    (void)state;
    char dir[256];
    new_graph(dir, sizeof dir, "mrace-del-prepare");
    write_graph *g = NULL;
    assert_og_ok(wf_open(&g, dir));
    store *s = g->h->s;
    char *old = content(s, NULL);
    char head0[GRAPH_ID_LEN + 1];
    head_of(s, NULL, head0);
    for (int round = 0; round < 2; round++) {
        /* round 1: the source has a second commit on one table */
        source_with_changes(g, DOOMED, round ? "x1" : "x0", round ? "y1" : "y0");
        if (round) must_load(g, DOOMED, "{\"type\":\"Person\",\"data\":{\"name\":\"z1\"}}\n", NULL);
        delete_once d = {dir, DOOMED, 0, -1};
        g->test_in_prepare = delete_hook;
        g->test_in_prepare_arg = &d;
        write_merge_result mr;
        int rc = merge_into(g, DOOMED, NULL, &mr);
        g->test_in_prepare = NULL;
        print_message("round %d: source deleted in the merge's prepare: %s: %s\n", round,
                      og_code_name(rc), rc ? og_error_last()->message : "");
        assert_int_equal(d.hits, 1);
        assert_og_ok(d.rc);
        assert_int_equal(rc, OG_E_NOT_FOUND);
        assert_non_null(strstr(og_error_last()->message,
                               "branch '" DOOMED "' was deleted while it was being merged"));
        assert_non_null(og_error_last()->object);
        assert_string_equal(og_error_last()->object, DOOMED);
        assert_false(mr.wr.committed);
        write_merge_result_clear(&mr);
        char head[GRAPH_ID_LEN + 1];
        head_of(s, NULL, head);
        assert_string_equal(head, head0);
        char *now = content(s, NULL);
        assert_string_equal(now, old);
        free(now);
        assert_int_equal(sidecars(s), 0);
        assert_false(branch_exists(s, DOOMED));
    }
    free(old);
    write_graph_close(g);
    wf_assert_sound(dir);
    test_sandbox_done(dir);
}

typedef struct md_ctx {
    write_graph *gm, *gd;
    int point; /* where the merge lets the delete go: 0 at its start, 1 after prepare, 2 in gates */
    unsigned jitter_m, jitter_d, jitter_hook;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int go, hook_hits;
    int mrc, drc;
    char mmsg[512];
    write_merge_result mr;
    write_branch_info deleted;
} md_ctx;

static void md_signal(md_ctx *c)
{
    pthread_mutex_lock(&c->mu);
    c->go = 1;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

static void md_hook(void *arg)
{
    md_ctx *c = arg;
    if (c->hook_hits++) return;
    md_signal(c);
    if (c->jitter_hook) usleep(c->jitter_hook);
}

static void *md_merger(void *arg)
{
    md_ctx *c = arg;
    if (c->point == 0) {
        md_signal(c);
        if (c->jitter_m) usleep(c->jitter_m);
    }
    c->mrc = merge_into(c->gm, DOOMED, NULL, &c->mr);
    snprintf(c->mmsg, sizeof c->mmsg, "%s", c->mrc ? og_error_last()->message : "");
    md_signal(c); /* the hook was not reached */
    return NULL;
}

static void *md_deleter(void *arg)
{
    md_ctx *c = arg;
    pthread_mutex_lock(&c->mu);
    while (!c->go)
        pthread_cond_wait(&c->cv, &c->mu);
    pthread_mutex_unlock(&c->mu);
    if (c->jitter_d) usleep(c->jitter_d);
    c->drc = write_branch_delete(c->gd, DOOMED, NULL, &c->deleted);
    return NULL;
}

/* A fresh source: a person (and, half the time, a company and an edge: forks of more tables). */
static void doomed_source(write_graph *g, int it, unsigned *rnd)
{
    assert_og_ok(write_branch_create(g, DOOMED, NULL, NULL, NULL));
    char text[512];
    if (rand_r(rnd) % 2)
        snprintf(text, sizeof text,
                 "{\"type\":\"Person\",\"data\":{\"name\":\"d%d\"}}\n"
                 "{\"type\":\"Company\",\"data\":{\"name\":\"dc%d\"}}\n"
                 "{\"edge\":\"WorksAt\",\"from\":\"d%d\",\"to\":\"dc%d\"}\n",
                 it, it, it, it);
    else
        snprintf(text, sizeof text, "{\"type\":\"Person\",\"data\":{\"name\":\"d%d\"}}\n", it);
    must_load(g, DOOMED, text, NULL);
    if (rand_r(rnd) % 2) { /* a second commit on the source */
        snprintf(text, sizeof text, "{\"type\":\"Person\",\"data\":{\"name\":\"e%d\"}}\n", it);
        must_load(g, DOOMED, text, NULL);
    }
}

static void test_merge_vs_delete_threads(void **state)
{
    (void)state;
    char dir[256];
    new_graph(dir, sizeof dir, "mrace-md");
    unsigned seed = test_seed();
    int iters = iterations(30);
    print_message("merge-vs-delete (threads): seed %u (OG_TEST_SEED), %d iterations\n", seed,
                  iters);
    write_graph *gm = NULL, *gd = NULL;
    assert_og_ok(wf_open(&gm, dir));
    assert_og_ok(wf_open(&gd, dir));
    store *s = gm->h->s;
    md_tally t = {0};
    unsigned rnd = seed;
    for (int it = 0; it < iters; it++) {
        doomed_source(gd, it, &rnd);
        char *old = content(s, NULL), *src = content(s, DOOMED);
        char src_head[GRAPH_ID_LEN + 1];
        head_of(s, DOOMED, src_head);
        md_ctx c;
        memset(&c, 0, sizeof c);
        pthread_mutex_init(&c.mu, NULL);
        pthread_cond_init(&c.cv, NULL);
        c.gm = gm;
        c.gd = gd;
        c.point = (int)(rand_r(&rnd) % 3);
        c.jitter_m = rand_r(&rnd) % 3000;
        c.jitter_d = rand_r(&rnd) % 3000;
        c.jitter_hook = rand_r(&rnd) % 2000;
        if (c.point == 1) {
            gm->test_after_prepare = md_hook;
            gm->test_arg = &c;
        } else if (c.point == 2) {
            gm->test_in_gates = md_hook;
            gm->test_in_gates_arg = &c;
        }
        pthread_t tm, td;
        assert_int_equal(pthread_create(&td, NULL, md_deleter, &c), 0);
        assert_int_equal(pthread_create(&tm, NULL, md_merger, &c), 0);
        pthread_join(tm, NULL);
        pthread_join(td, NULL);
        gm->test_after_prepare = NULL;
        gm->test_in_gates = NULL;
        t.by_point[c.point]++;
        char why[700];
        const char *v = md_judge(s, old, src, src_head, c.mrc, &c.mr, c.mmsg, c.drc, &c.deleted, &t,
                                 why, sizeof why);
        if (v) {
            t.violations++;
            print_message("iteration %d (seed %u, point %d): %s\n", it, seed, c.point, v);
        }
        write_merge_result_clear(&c.mr);
        if (branch_exists(s, DOOMED)) assert_og_ok(write_branch_delete(gd, DOOMED, NULL, NULL));
        pthread_mutex_destroy(&c.mu);
        pthread_cond_destroy(&c.cv);
        free(old);
        free(src);
    }
    print_message("merge-vs-delete (threads): %d iterations (points: %u at start, %u after "
                  "prepare, %u in gates): %u merged then deleted, %u delete refused, %u delete "
                  "first (merge not_found: %u before it read the source, %u after), %u "
                  "violations\n",
                  iters, t.by_point[0], t.by_point[1], t.by_point[2], t.merge_then_delete,
                  t.delete_refused, t.delete_first, t.gone_at_start, t.gone_later, t.violations);
    assert_int_equal(t.violations, 0);
    assert_int_equal(t.merge_then_delete + t.delete_refused + t.delete_first, (unsigned)iters);
    assert_pins(s, NULL);
    write_graph_close(gm);
    write_graph_close(gd);
    wf_assert_sound(dir);
    test_sandbox_done(dir);
}

typedef struct md_child {
    int fd_go;
    unsigned jitter_hook;
    int hits;
} md_child;

static void md_child_hook(void *arg)
{
    md_child *c = arg;
    if (c->hits++) return;
    char ch = 'g';
    if (write(c->fd_go, &ch, 1) != 1) _exit(92);
    if (c->jitter_hook) usleep(c->jitter_hook);
}

static void test_merge_vs_delete_processes(void **state)
{
    (void)state;
    char dir[256];
    new_graph(dir, sizeof dir, "mrace-md-proc");
    unsigned seed = test_seed();
    int iters = iterations(30) / 3;
    if (iters < 1) iters = 1;
    print_message("merge-vs-delete (processes): seed %u (OG_TEST_SEED), %d iterations\n", seed,
                  iters);
    write_graph *gd = NULL;
    assert_og_ok(wf_open(&gd, dir));
    store *s = gd->h->s;
    md_tally t = {0};
    unsigned rnd = seed;
    for (int it = 0; it < iters; it++) {
        doomed_source(gd, it, &rnd);
        char *old = content(s, NULL), *src = content(s, DOOMED);
        char src_head[GRAPH_ID_LEN + 1];
        head_of(s, DOOMED, src_head);
        int point = (int)(rand_r(&rnd) % 3);
        unsigned jitter_m = rand_r(&rnd) % 5000, jitter_d = rand_r(&rnd) % 5000;
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
            md_child mc = {go[1], jitter_hook, 0};
            if (point == 0) {
                md_child_hook(&mc);
                if (jitter_m) usleep(jitter_m);
            } else if (point == 1) {
                c->test_after_prepare = md_child_hook;
                c->test_arg = &mc;
            } else {
                c->test_in_gates = md_child_hook;
                c->test_in_gates_arg = &mc;
            }
            write_merge_result mr;
            int rc = merge_into(c, DOOMED, NULL, &mr);
            char out[900];
            int n = snprintf(out, sizeof out, "%d %d %u %s %s %s", rc, mr.outcome, mr.wr.reprepares,
                             mr.wr.committed ? mr.wr.commit_id : "-",
                             mr.source_head[0] ? mr.source_head : "-",
                             rc ? og_error_last()->message : "");
            if (write(rep[1], out, (size_t)n) != n) _exit(93);
            write_merge_result_clear(&mr);
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
        char buf[1000], msg[900];
        read_all(rep[0], buf, sizeof buf);
        int st = 0;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), 0);
        close(go[0]);
        close(rep[0]);
        write_merge_result mr;
        int mrc = parse_report(buf, &mr, msg, sizeof msg);
        t.by_point[point]++;
        char why[1200];
        const char *v =
            md_judge(s, old, src, src_head, mrc, &mr, msg, drc, &deleted, &t, why, sizeof why);
        if (v) {
            t.violations++;
            print_message("iteration %d (seed %u, point %d): %s\n", it, seed, point, v);
        }
        if (branch_exists(s, DOOMED)) assert_og_ok(write_branch_delete(gd, DOOMED, NULL, NULL));
        free(old);
        free(src);
    }
    print_message("merge-vs-delete (processes): %d iterations (points: %u at start, %u after "
                  "prepare, %u in gates): %u merged then deleted, %u delete refused, %u delete "
                  "first (merge not_found: %u before it read the source, %u after), %u "
                  "violations\n",
                  iters, t.by_point[0], t.by_point[1], t.by_point[2], t.merge_then_delete,
                  t.delete_refused, t.delete_first, t.gone_at_start, t.gone_later, t.violations);
    assert_int_equal(t.violations, 0);
    assert_int_equal(t.merge_then_delete + t.delete_refused + t.delete_first, (unsigned)iters);
    assert_pins(s, NULL);
    write_graph_close(gd);
    wf_assert_sound(dir);
    test_sandbox_done(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reclassify_after_target_write),
        cmocka_unit_test(test_reclassify_after_source_write),
        cmocka_unit_test(test_reclassify_processes),
        cmocka_unit_test(test_interleaved_write_makes_conflict),
        cmocka_unit_test(test_two_merges_deterministic),
        cmocka_unit_test(test_two_merges_threads),
        cmocka_unit_test(test_two_merges_processes),
        cmocka_unit_test(test_source_deleted_in_prepare),
        cmocka_unit_test(test_merge_vs_delete_threads),
        cmocka_unit_test(test_merge_vs_delete_processes),
    };
    cmocka_set_test_filter(getenv("OG_TEST_FILTER"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
