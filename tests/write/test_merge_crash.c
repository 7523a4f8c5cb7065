/* Crash enumeration of branch merges (issue 18 item 7, crash bullet): a merge is run on the
 * fault store, crashing after every durable store operation in both crash modes; the root is
 * then reopened read-write (which recovers) and checked:
 *   - the target holds exactly its old content or exactly the merged content (every column of
 *     every table, compared with states computed beforehand on a copy of the same start);
 *   - its head is the old head (or a recovery rollback commit above it) or a merge commit whose
 *     parent is the old head and whose merged parent is the source head;
 *   - no sidecar is left, and the audit log has one row per sidecar the open resolved;
 *   - every table the target pins is at its Lance HEAD (on the target's lineage: its fork, or
 *     the branch it reads through) and holds row_count rows;
 *   - the source (and, for a branch target, main) is untouched;
 *   - a follow-up merge succeeds: up to date when the merge landed, landing the merged content
 *     now when it did not; and a follow-up write on the target succeeds.
 * Two cases: a three-way `merged` outcome into main touching three tables (two node types and
 * an edge type) after several source commits per table (inserts, an update, a delete) and
 * target commits on all three; and a `fast_forward` into a branch whose tables are unforked,
 * so the merge makes the first-touch forks itself. Also: a merge that fails after its sidecar
 * (a failpoint returning an error, in process) resolves its own intent before it returns, so
 * the next write and a repeated merge on the same handle succeed without a reopen. */
#include "write_fixture.h"

#include "core/alloc.h"
#include "core/failpoint.h"
#include "crashsim.h"
#include "exec/mutate.h"

#include <string.h>

static const char *SCHEMA = "node Person {\n"
                            "    name: String @key\n"
                            "    age: I32?\n"
                            "}\n"
                            "node Company {\n"
                            "    name: String @key\n"
                            "}\n"
                            "edge WorksAt: Person -> Company { role: String? }\n";

static const char *BASE = "{\"type\":\"Person\",\"data\":{\"name\":\"ann\",\"age\":1}}\n"
                          "{\"type\":\"Person\",\"data\":{\"name\":\"bob\",\"age\":2}}\n"
                          "{\"type\":\"Company\",\"data\":{\"name\":\"acme\"}}\n"
                          "{\"type\":\"Company\",\"data\":{\"name\":\"zeta\"}}\n"
                          "{\"edge\":\"WorksAt\",\"from\":\"ann\",\"to\":\"acme\"}\n";

/* The source's commits: every table several times (inserts, an update, a delete). */
typedef struct step {
    const char *text; /* JSONL (NULL: the mutation below) */
    exec_load_mode mode;
    const char *gq;
} step;

static const step SOURCE_STEPS[] = {
    {"{\"type\":\"Person\",\"data\":{\"name\":\"cyd\",\"age\":3}}\n"
     "{\"type\":\"Company\",\"data\":{\"name\":\"initech\"}}\n",
     EXEC_LOAD_APPEND, NULL},
    {"{\"type\":\"Person\",\"data\":{\"name\":\"bob\",\"age\":20}}\n", EXEC_LOAD_MERGE, NULL},
    {"{\"edge\":\"WorksAt\",\"from\":\"cyd\",\"to\":\"initech\",\"data\":{\"role\":\"eng\"}}\n",
     EXEC_LOAD_APPEND, NULL},
    {"{\"type\":\"Person\",\"data\":{\"name\":\"dee\"}}\n"
     "{\"type\":\"Company\",\"data\":{\"name\":\"globex\"}}\n"
     "{\"edge\":\"WorksAt\",\"from\":\"dee\",\"to\":\"globex\"}\n",
     EXEC_LOAD_APPEND, NULL},
    {NULL, 0, "query q() { delete Company where name = \"zeta\" }\n"},
    {"{\"edge\":\"WorksAt\",\"from\":\"bob\",\"to\":\"initech\",\"data\":{\"role\":\"ops\"}}\n",
     EXEC_LOAD_APPEND, NULL},
};

/* The target's own commits since the base (the three-way case): all three tables. */
static const step TARGET_STEPS[] = {
    {"{\"type\":\"Person\",\"data\":{\"name\":\"eve\",\"age\":5}}\n", EXEC_LOAD_APPEND, NULL},
    {"{\"type\":\"Company\",\"data\":{\"name\":\"hooli\"}}\n"
     "{\"edge\":\"WorksAt\",\"from\":\"eve\",\"to\":\"hooli\"}\n",
     EXEC_LOAD_APPEND, NULL},
    {"{\"type\":\"Person\",\"data\":{\"name\":\"ann\",\"age\":10}}\n", EXEC_LOAD_MERGE, NULL},
};

static int run_step(write_graph *g, const char *branch, const step *st)
{
    write_options wo = WRITE_OPTIONS_INIT;
    wo.branch = branch;
    write_result res;
    if (st->text) {
        graph_change_set cs;
        memset(&cs, 0, sizeof cs);
        exec_load_stats ls;
        int rc = exec_load_parse(&cs, g->h->catalog, st->text, strlen(st->text), "d.jsonl",
                                 st->mode, &ls, NULL, NULL);
        if (rc == 0) rc = write_changes(g, WRITE_KIND_LOAD, &cs, &wo, &res);
        graph_change_set_clear(&cs);
        return rc;
    }
    core_arena a;
    core_arena_init(&a, 0);
    lang_diags d;
    lang_diags_init(&d, &a);
    lang_query_set *qs = NULL;
    exec_mutate_result mr;
    memset(&mr, 0, sizeof mr);
    int rc = lang_query_set_build(&qs, g->h->catalog, st->gq, strlen(st->gq), "m.gq", &d);
    if (rc == 0) rc = exec_mutate_run(&mr, g, &qs->queries[0], NULL, &wo);
    exec_mutate_result_clear(&mr);
    lang_query_set_free(qs);
    core_arena_free(&a);
    return rc;
}

/* ---- the expected states -------------------------------------------------------------------
 * Edge ids are generated, so every build of the start has its own; the expected merged
 * content is derived from each build's own base, source and target contents, without the
 * merge: per table, the target's rows less the base rows the source no longer has (deleted, or
 * the old version of a row it updated) plus the source's rows the base does not have (inserted,
 * or the new version). The two sides change different rows here, so that is the merge. */

typedef struct ctable {
    char *alias;
    char **rows;
    size_t n;
} ctable;

typedef struct content_tables {
    ctable *t;
    size_t n;
} content_tables;

static void tables_free(content_tables *c)
{
    for (size_t i = 0; i < c->n; i++) {
        for (size_t k = 0; k < c->t[i].n; k++)
            free(c->t[i].rows[k]);
        free(c->t[i].rows);
        free(c->t[i].alias);
    }
    free(c->t);
    memset(c, 0, sizeof *c);
}

/* Parse wf_content's text ("alias (N rows)" lines, each followed by its "  row" lines). */
static void tables_parse(const char *text, content_tables *out)
{
    memset(out, 0, sizeof *out);
    for (const char *p = text; *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len >= 2 && p[0] == ' ' && p[1] == ' ') {
            assert_true(out->n > 0);
            ctable *t = &out->t[out->n - 1];
            t->rows = realloc(t->rows, (t->n + 1) * sizeof *t->rows);
            t->rows[t->n++] = strndup(p + 2, len - 2);
        } else if (len) {
            const char *sp = memchr(p, ' ', len);
            out->t = realloc(out->t, (out->n + 1) * sizeof *out->t);
            ctable *t = &out->t[out->n++];
            memset(t, 0, sizeof *t);
            t->alias = strndup(p, sp ? (size_t)(sp - p) : len);
        }
        p += len + (e ? 1 : 0);
    }
}

static const ctable *table_named(const content_tables *c, const char *alias)
{
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->t[i].alias, alias) == 0) return &c->t[i];
    return NULL;
}

static bool row_in(const ctable *t, const char *row)
{
    for (size_t i = 0; t && i < t->n; i++)
        if (strcmp(t->rows[i], row) == 0) return true;
    return false;
}

static int cmp_row(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *expected_merge(const char *base, const char *source, const char *target)
{
    content_tables b, sc, t;
    tables_parse(base, &b);
    tables_parse(source, &sc);
    tables_parse(target, &t);
    core_buf out = CORE_BUF_INIT;
    for (size_t i = 0; i < t.n; i++) {
        const ctable *tb = table_named(&b, t.t[i].alias), *ts = table_named(&sc, t.t[i].alias);
        char **rows = calloc(t.t[i].n + (ts ? ts->n : 0) + 1, sizeof *rows);
        size_t n = 0;
        for (size_t k = 0; k < t.t[i].n; k++) /* kept unless the source dropped it */
            if (!row_in(tb, t.t[i].rows[k]) || row_in(ts, t.t[i].rows[k]))
                rows[n++] = t.t[i].rows[k];
        for (size_t k = 0; ts && k < ts->n; k++) /* what the source added */
            if (!row_in(tb, ts->rows[k]) && !row_in(&t.t[i], ts->rows[k])) rows[n++] = ts->rows[k];
        qsort(rows, n, sizeof *rows, cmp_row);
        assert_og_ok(core_buf_printf(&out, "%s (%lld rows)\n", t.t[i].alias, (long long)n));
        for (size_t k = 0; k < n; k++)
            assert_og_ok(core_buf_printf(&out, "  %s\n", rows[k]));
        free(rows);
    }
    char *text = strdup(core_buf_cstr(&out));
    core_buf_free(&out);
    tables_free(&b);
    tables_free(&sc);
    tables_free(&t);
    return text;
}

/* ---- the cases ------------------------------------------------------------------------------ */

typedef struct merge_case {
    const char *name;
    const char *target; /* NULL: main */
    int outcome;        /* what the merge must be */
    /* the start of the current run (each build has its own generated edge ids) */
    char *base_content, *old_content, *new_content, *src_content, *main_content;
    char old_head[GRAPH_ID_LEN + 1], src_head[GRAPH_ID_LEN + 1], main_head[GRAPH_ID_LEN + 1];
    uint64_t src_mver, main_mver;
    /* what the checks saw */
    unsigned saw_old, saw_new, saw_rollback_head;
    unsigned followup_up_to_date, followup_landed[4]; /* by outcome */
    wf_recovery_counts rec;
} merge_case;

static void release_case(merge_case *mc)
{
    free(mc->base_content);
    free(mc->old_content);
    free(mc->new_content);
    free(mc->src_content);
    free(mc->main_content);
    mc->base_content = mc->old_content = mc->new_content = mc->src_content = mc->main_content =
        NULL;
}

static int head_of(store *s, const char *branch, char out[GRAPH_ID_LEN + 1], uint64_t *mver)
{
    graph_snapshot *snap = NULL;
    int rc = graph_snapshot_load(&snap, s, branch, 0, 0);
    if (rc == 0) {
        memcpy(out, snap->head, GRAPH_ID_LEN + 1);
        if (mver) *mver = snap->manifest_version;
    }
    graph_snapshot_free(snap);
    return rc;
}

/* The starting state: BASE on main, branches src (and the target, if it is a branch) at that
 * head, the source's commits on src, and, for a merge into main, the target's own commits;
 * then what the run expects of it (mc's contents, heads and the merged content). */
static int build_start(store *s, merge_case *mc)
{
    release_case(mc);
    write_init_result ir;
    int rc = write_init(s, SCHEMA, strlen(SCHEMA), "s.pg", &ir);
    write_graph *g = NULL;
    if (rc == 0) rc = write_graph_open(&g, wf_borrow(s), "", NULL);
    if (rc == 0) rc = wf_load(g, BASE, EXEC_LOAD_APPEND, NULL);
    if (rc == 0 && !(mc->base_content = wf_content(s, NULL))) rc = OG_E_INTERNAL;
    if (rc == 0) rc = write_branch_create(g, "src", NULL, NULL, NULL);
    if (rc == 0 && mc->target) rc = write_branch_create(g, mc->target, NULL, NULL, NULL);
    for (size_t i = 0; rc == 0 && i < sizeof SOURCE_STEPS / sizeof SOURCE_STEPS[0]; i++)
        rc = run_step(g, "src", &SOURCE_STEPS[i]);
    for (size_t i = 0; rc == 0 && !mc->target && i < sizeof TARGET_STEPS / sizeof TARGET_STEPS[0];
         i++)
        rc = run_step(g, NULL, &TARGET_STEPS[i]);
    write_graph_close(g);
    if (rc == 0 &&
        (!(mc->old_content = wf_content(s, mc->target)) ||
         !(mc->src_content = wf_content(s, "src")) || !(mc->main_content = wf_content(s, NULL))))
        rc = OG_E_INTERNAL;
    if (rc == 0) rc = head_of(s, mc->target, mc->old_head, NULL);
    if (rc == 0) rc = head_of(s, "src", mc->src_head, &mc->src_mver);
    if (rc == 0) rc = head_of(s, NULL, mc->main_head, &mc->main_mver);
    if (rc == 0)
        mc->new_content = expected_merge(mc->base_content, mc->src_content, mc->old_content);
    return rc;
}

static char *must_content(store *s, const char *branch)
{
    char *c = wf_content(s, branch);
    if (!c) fail_msg("content of %s: %s", branch ? branch : "main", og_error_last()->message);
    return c;
}

/* Once per case, without a crash: the merge leaves exactly the expected content (so the
 * derivation above is the merge's result), and that content has every change of both sides. */
static void prepare_case(merge_case *mc)
{
    char dir[256];
    test_sandbox_new(dir, sizeof dir, "merge-crash-expected");
    write_graph *g = NULL;
    store *s = wf_store(dir);
    assert_og_ok(build_start(s, mc));
    store_close(s);
    assert_og_ok(wf_open(&g, dir));
    write_options wo = WRITE_OPTIONS_INIT;
    wo.branch = mc->target;
    write_merge_result mr;
    int rc = write_merge(g, "src", &wo, &mr);
    if (rc) fail_msg("%s: the merge: %s", mc->name, og_error_last()->message);
    assert_int_equal(mr.outcome, mc->outcome);
    assert_true(mr.wr.committed);
    assert_int_equal(mr.types_changed, 3);
    assert_int_equal(mr.wr.n_tables, 3);
    char *got = must_content(g->h->s, mc->target);
    if (strcmp(got, mc->new_content) != 0)
        fail_msg("%s: merged:\n%s--- expected:\n%s", mc->name, got, mc->new_content);
    free(got);
    write_merge_result_clear(&mr);
    write_graph_close(g);
    test_sandbox_done(dir);
    const char *want[] = {"\"name\":\"cyd\"",    "\"name\":\"dee\"", "\"name\":\"initech\"",
                          "\"name\":\"globex\"", "\"role\":\"ops\"", "\"role\":\"eng\"",
                          "\"age\":20"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!strstr(mc->new_content, want[i]))
            fail_msg("%s: the merged content lacks %s:\n%s", mc->name, want[i], mc->new_content);
    assert_null(strstr(mc->new_content, "\"name\":\"zeta\""));
    assert_non_null(strstr(mc->old_content, "\"name\":\"zeta\""));
    if (!mc->target) {
        assert_non_null(strstr(mc->new_content, "\"name\":\"hooli\""));
        assert_non_null(strstr(mc->new_content, "\"age\":10"));
    } else {
        assert_string_equal(mc->new_content, mc->src_content); /* a fast-forward */
    }
    assert_true(strcmp(mc->old_content, mc->new_content) != 0);
}

static int setup_merge(store *s, void *vctx)
{
    return build_start(s, vctx);
}

static int op_merge(store *s, void *vctx)
{
    merge_case *mc = vctx;
    write_graph *g = NULL;
    int rc = write_graph_open(&g, wf_borrow(s), "", NULL);
    write_options wo = WRITE_OPTIONS_INIT;
    wo.branch = mc->target;
    write_merge_result mr;
    memset(&mr, 0, sizeof mr);
    if (rc == 0) rc = write_merge(g, "src", &wo, &mr);
    write_merge_result_clear(&mr);
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

static int check_merge(store *s, void *vctx, const crashsim_point *pt)
{
    merge_case *mc = vctx;
    int rc = 0;
    write_graph *g = NULL;
    graph_snapshot *tgt = NULL, *src = NULL, *m = NULL;
    char *tc = NULL, *sc = NULL, *mcont = NULL, *after = NULL;
    char why[512];
    write_merge_result mr;
    memset(&mr, 0, sizeof mr);
    CHECK(wf_open_recovered(s, &g, &mc->rec, why, sizeof why) == 0, "%s", why);
    CHECK(graph_snapshot_load(&tgt, s, mc->target, 0, GRAPH_SNAP_LINEAGE) == 0, "target: %s",
          og_error_last()->message);
    CHECK((tc = wf_content(s, mc->target)) != NULL, "target content: %s", og_error_last()->message);
    bool is_old = strcmp(tc, mc->old_content) == 0;
    bool is_new = strcmp(tc, mc->new_content) == 0;
    CHECK(is_old || is_new, "torn target:\n%s", tc);
    CHECK(pt->k != 0 || (is_new && pt->op_rc == 0), "uncrashed run: rc %d", pt->op_rc);
    CHECK(pt->op_rc != 0 || pt->crashed || is_new, "an acknowledged merge is lost");
    /* the head: the old one (or recovery's rollback commit above it), or the merge commit */
    const graph_commit *ch = graph_lineage_find(tgt, tgt->content_head);
    CHECK(ch != NULL, "the content head %s is not in the target's lineage", tgt->content_head);
    if (is_old) {
        CHECK(strcmp(tgt->content_head, mc->old_head) == 0, "old content, but content head %s",
              tgt->content_head);
        if (strcmp(tgt->head, mc->old_head) != 0) {
            const graph_commit *h = &tgt->commits[0];
            CHECK(h->maintenance && h->actor && strcmp(h->actor, WRITE_ACTOR_RECOVERY) == 0 &&
                      strcmp(h->parent, mc->old_head) == 0 && !h->merged_parent[0],
                  "old content under head %s that is not a rollback of the merge", tgt->head);
            mc->saw_rollback_head++;
        }
        mc->saw_old++;
    } else {
        CHECK(strcmp(ch->parent, mc->old_head) == 0 && strcmp(ch->merged_parent, mc->src_head) == 0,
              "merged content under head %s (parent %s, merged parent %s)", tgt->head, ch->parent,
              ch->merged_parent);
        mc->saw_new++;
    }
    /* every pinned table is at its Lance HEAD on the target's lineage */
    for (size_t i = 0; i < tgt->n_tables; i++)
        CHECK(wf_check_table(s, &tgt->tables[i], why, sizeof why) == 0, "target: %s", why);
    /* the source is untouched (and main, when the target is a branch) */
    CHECK(graph_snapshot_load(&src, s, "src", 0, 0) == 0, "source: %s", og_error_last()->message);
    CHECK(strcmp(src->head, mc->src_head) == 0 && src->manifest_version == mc->src_mver,
          "the source moved: head %s, version %llu", src->head,
          (unsigned long long)src->manifest_version);
    CHECK((sc = wf_content(s, "src")) != NULL && strcmp(sc, mc->src_content) == 0,
          "the source's content changed");
    if (mc->target) {
        CHECK(graph_snapshot_load(&m, s, NULL, 0, 0) == 0, "main: %s", og_error_last()->message);
        CHECK(strcmp(m->head, mc->main_head) == 0 && m->manifest_version == mc->main_mver,
              "main moved");
        CHECK((mcont = wf_content(s, NULL)) != NULL && strcmp(mcont, mc->main_content) == 0,
              "main's content changed");
    }
    /* follow-up: the merge again (up to date, or it lands now), then a write */
    write_options wo = WRITE_OPTIONS_INIT;
    wo.branch = mc->target;
    int mrc = write_merge(g, "src", &wo, &mr);
    CHECK(mrc == 0, "follow-up merge: %s", og_error_last()->message);
    if (is_new) {
        CHECK(mr.outcome == GRAPH_MERGE_UP_TO_DATE && !mr.wr.committed,
              "follow-up merge after a landed merge: outcome %d", mr.outcome);
        mc->followup_up_to_date++;
    } else {
        CHECK(mr.wr.committed &&
                  (mr.outcome == GRAPH_MERGE_MERGED || mr.outcome == GRAPH_MERGE_FAST_FORWARD),
              "follow-up merge: outcome %d, committed %d", mr.outcome, (int)mr.wr.committed);
        CHECK((after = wf_content(s, mc->target)) != NULL && strcmp(after, mc->new_content) == 0,
              "the follow-up merge's content differs:\n%s", after ? after : "");
        mc->followup_landed[mr.outcome]++;
    }
    write_result wr;
    CHECK(wf_load_opt(g, "{\"type\":\"Person\",\"data\":{\"name\":\"zed\"}}\n", EXEC_LOAD_APPEND,
                      &wo, &wr) == 0 &&
              wr.committed,
          "follow-up write: %s", og_error_last()->message);
out:
    write_merge_result_clear(&mr);
    free(tc);
    free(sc);
    free(mcont);
    free(after);
    graph_snapshot_free(m);
    graph_snapshot_free(src);
    graph_snapshot_free(tgt);
    write_graph_close(g);
    return rc;
}

static void run_case(merge_case *mc)
{
    prepare_case(mc);
    crashsim_case cc = {mc->name, mc, setup_merge, op_merge, check_merge};
    crashsim_report rep;
    crashsim_run(&cc, &rep);
    print_message("%s: %llu durable ops, %llu crash runs, %llu violations (old %u, of which %u "
                  "under a rollback commit; new %u; recovered %u: %u rolled back, %u rolled "
                  "forward, %u discarded; follow-up merge: %u up to date, %u merged, %u fast "
                  "forward) %s\n",
                  mc->name, (unsigned long long)rep.n, (unsigned long long)rep.runs,
                  (unsigned long long)rep.violations, mc->saw_old, mc->saw_rollback_head,
                  mc->saw_new, mc->rec.recovered, mc->rec.rolled_back, mc->rec.rolled_forward,
                  mc->rec.discarded, mc->followup_up_to_date,
                  mc->followup_landed[GRAPH_MERGE_MERGED],
                  mc->followup_landed[GRAPH_MERGE_FAST_FORWARD], rep.first);
    assert_int_equal(rep.violations, 0);
    assert_true(rep.n >= 3);
    assert_true(mc->saw_old > 0 && mc->saw_new > 0);
    /* every recovery path was taken: no effect yet, some effects, every effect */
    assert_true(mc->rec.discarded > 0);
    assert_true(mc->rec.rolled_back > 0);
    assert_true(mc->rec.rolled_forward > 0);
    release_case(mc);
}

static void test_crash_merge_three_way(void **state)
{
    (void)state;
    merge_case mc;
    memset(&mc, 0, sizeof mc);
    mc.name = "three-way merge into main (3 tables)";
    mc.target = NULL;
    mc.outcome = GRAPH_MERGE_MERGED;
    run_case(&mc);
}

static void test_crash_merge_fast_forward_forks(void **state)
{
    (void)state;
    merge_case mc;
    memset(&mc, 0, sizeof mc);
    mc.name = "fast-forward into an unforked branch (3 first-touch forks)";
    mc.target = "tgt";
    mc.outcome = GRAPH_MERGE_FAST_FORWARD;
    run_case(&mc);
}

/* ---- a merge that fails after its sidecar resolves its own intent ---------------------------
 * In process, on one handle: the failpoint returns an error (it does not end the process). A
 * failure after the first effect is rolled back, one before any effect discarded, one after
 * every effect rolled forward (the merge then succeeds); whichever, no sidecar is left when
 * the merge returns, and the next write on the target and a repeated merge succeed at once. */
typedef struct fail_cell {
    const char *fp;
    uint64_t nth;
    int rc;            /* what the failed merge returns */
    const char *audit; /* how its intent was resolved */
} fail_cell;

static size_t audit_count(store *s, const char *kind)
{
    write_audit_row *rows = NULL;
    size_t n = 0, k = 0;
    assert_og_ok(write_audit_list(s, &rows, &n));
    for (size_t i = 0; i < n; i++)
        k += strcmp(rows[i].kind, kind) == 0;
    free(rows);
    return k;
}

static void fail_round(merge_case *mc, const fail_cell *fc)
{
    char dir[256];
    test_sandbox_new(dir, sizeof dir, "merge-fail");
    store *b = wf_store(dir);
    assert_og_ok(build_start(b, mc));
    store_close(b);
    write_graph *g = NULL;
    assert_og_ok(wf_open(&g, dir));
    store *s = g->h->s;
    size_t audits0 = audit_count(s, fc->audit);
    write_options wo = WRITE_OPTIONS_INIT;
    wo.branch = mc->target;
    write_merge_result mr;
    assert_og_ok(core_fp_set(fc->fp, CORE_FP_ERROR, OG_E_STORAGE, fc->nth));
    int rc = write_merge(g, "src", &wo, &mr);
    uint64_t hits = core_fp_hits(fc->fp);
    core_fp_clear_all();
    print_message("%s, %s failing (hit %llu): %s%s%s\n", mc->name, fc->fp, (unsigned long long)hits,
                  og_code_name(rc), rc ? ": " : "", rc ? og_error_last()->message : "");
    assert_int_equal(rc, fc->rc);
    assert_true(hits >= fc->nth);
    if (rc) assert_non_null(strstr(og_error_last()->message, "undone by recovery"));
    /* resolved before it returned: no sidecar, its audit row */
    size_t left = 1;
    assert_og_ok(wf_count_sidecars(s, &left));
    assert_int_equal(left, 0);
    bool found = false;
    char kind[24] = "";
    assert_og_ok(write_audit_find(s, mr.wr.operation_id, &found, kind, NULL));
    assert_true(found);
    if (strcmp(kind, fc->audit) != 0)
        fail_msg("%s: %s resolved %s, not %s", mc->name, fc->fp, kind, fc->audit);
    assert_int_equal(audit_count(s, fc->audit), audits0 + 1);
    write_merge_result_clear(&mr);
    char *c = must_content(s, mc->target);
    assert_string_equal(c, rc ? mc->old_content : mc->new_content);
    free(c);
    /* the same handle writes on the target, and merges again */
    write_result wr;
    assert_og_ok(wf_load_opt(g, "{\"type\":\"Person\",\"data\":{\"name\":\"zed\"}}\n",
                             EXEC_LOAD_APPEND, &wo, &wr));
    assert_true(wr.committed);
    assert_og_ok(write_merge(g, "src", &wo, &mr));
    if (rc) {
        assert_true(mr.wr.committed);
        assert_int_equal(mr.outcome, GRAPH_MERGE_MERGED); /* the target moved meanwhile */
        graph_snapshot *t = NULL;
        assert_og_ok(graph_snapshot_load(&t, s, mc->target, 0, GRAPH_SNAP_LINEAGE));
        const graph_commit *mcm = graph_lineage_find(t, mr.wr.commit_id);
        assert_non_null(mcm);
        assert_string_equal(t->content_head, mr.wr.commit_id);
        assert_string_equal(mcm->parent, wr.commit_id);
        assert_string_equal(mcm->merged_parent, mc->src_head);
        graph_snapshot_free(t);
    } else {
        assert_int_equal(mr.outcome, GRAPH_MERGE_UP_TO_DATE);
    }
    write_merge_result_clear(&mr);
    assert_og_ok(wf_count_sidecars(s, &left));
    assert_int_equal(left, 0);
    write_graph_close(g);
    test_sandbox_done(dir);
}

static void fail_cells(merge_case *mc)
{
    prepare_case(mc);
    const fail_cell cells[] = {
        {"write.post_sidecar", 1, OG_E_STORAGE, "discarded"},
        {"write.post_table_effect", 1, OG_E_STORAGE, "rolled_back"},
        {"write.post_table_effect", 2, OG_E_STORAGE, "rolled_back"},
        {"write.pre_publish", 1, 0, "rolled_forward"},
    };
    for (size_t i = 0; i < sizeof cells / sizeof cells[0]; i++)
        fail_round(mc, &cells[i]);
    /* a first-touch fork made, nothing committed on it: the fork alone is no effect */
    const fail_cell fork = {"write.post_fork", 1, OG_E_STORAGE, "discarded"};
    if (mc->target) fail_round(mc, &fork);
    release_case(mc);
}

static void test_merge_failure_resolves_own_intent(void **state)
{
    (void)state;
    merge_case mc;
    memset(&mc, 0, sizeof mc);
    mc.name = "three-way merge into main";
    mc.outcome = GRAPH_MERGE_MERGED;
    fail_cells(&mc);
    memset(&mc, 0, sizeof mc);
    mc.name = "fast-forward into an unforked branch";
    mc.target = "tgt";
    mc.outcome = GRAPH_MERGE_FAST_FORWARD;
    fail_cells(&mc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merge_failure_resolves_own_intent),
        cmocka_unit_test(test_crash_merge_three_way),
        cmocka_unit_test(test_crash_merge_fast_forward_forks),
    };
    cmocka_set_test_filter(getenv("OG_TEST_FILTER"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
