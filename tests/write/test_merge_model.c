/* Branch merge, model-based random testing (issue 18, item 7): seeded random steps over a small
 * graph, each run through the public API and through a reference model written here,
 * independent of the implementation, and the two compared after every step that can tell them
 * apart.
 *
 * The graph: Person {name @key, age: I32?} and Knows: Person -> Person {since: I32?}, keys from
 * the pool p0..p7 and edge ids from e0..e63 (edges are loaded with an explicit data.id, so the
 * model knows their identity), ages 0..3 and since 0..2 or null: collisions, equal changes
 * and conflicts are frequent. Every run starts from the same load on main (p0..p3, e0, e1).
 *
 * The steps: create a branch from a random branch at its head (each seed caps its branches at
 * 2 to 5); one-row writes on a random branch (upsert a person, update its age, delete it with
 * its edges, load an edge: a fresh id, one of the branch's own with a new since, or another
 * branch's id inserted here too; delete an edge by id); a load of 2 to 4 persons and edges as
 * one commit; a merge between two random distinct branches, or sometimes instead the write on
 * its target that settles one conflict that merge would meet (so conflicted branches merge
 * again later); a read of a branch. Writes the model says must fail (an edge endpoint the
 * branch lacks) must fail with bad_request; writes that match nothing must commit nothing.
 *
 * The model (docs/merge.md): every commit is a model commit with its id (from the write or
 * merge result), its parent and merged parent, and the full content (nodes id -> row, edges
 * id -> row; an absent row is a value); a branch is a head. The handle's automatic maintenance
 * is drained after each step and its commits (actorless, content unchanged) join the model's
 * DAG as the commits they are. A merge computes the base from the DAG (ancestors follow
 * parents and merged parents; the best common ancestors are the common ones no other common
 * one descends from; more than one: OG_E_CONFLICT), the outcome, the row-by-row three-way
 * result of nodes and edges (a conflicting row keeps the target's), then the orphan edges of
 * that result. It expects exactly those conflicts (kind, type, id, as a set) or the outcome,
 * the commit (parent = the old target head, merged parent = the source head, the base), the
 * target's content (read back whole with og_graph_export) and every other branch unchanged
 * (its head and its content).
 *
 * A mismatch prints the seed, the step and both sides, then shrinks the step list (delta
 * debugging on fresh graphs: chunks, then single steps, kept out while a mismatch of the same
 * kind still shows) and prints the shrunk run as a tests/merge/NAME.scn scenario with the
 * model's expectations (also written to $OG_MODEL_SCN when set).
 *
 * Environment: OG_MODEL_SEED=N runs that seed alone; OG_MODEL_SEEDS (default 200, seeds 1..N)
 * and OG_MODEL_STEPS (default 30) set the counts; OG_MODEL_INJECT_BUG=1 (the model ignores the
 * source's node deletions) or =2 (the model calls equal changes on both sides a conflict)
 * breaks the model on purpose, to see the shrinker work: run it by hand, it fails.
 *
 * Speed: the sandboxes go to /dev/shm when TMPDIR is not set and it exists (every commit
 * fsyncs, and durability is not what this test is about): about 17 s there, 85 s on this
 * machine's disk. */
#include "testutil.h"

#include "omnigraph.h"

#include "api/graph_internal.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

enum {
    NP = 8,  /* persons p0..p7 */
    NE = 64, /* edge ids e0..e63 */
    NB = 5,  /* branches: main, b1..b4 */
};

static const char *SCHEMA = "node Person {\n"
                            "    name: String @key\n"
                            "    age: I32?\n"
                            "}\n"
                            "edge Knows: Person -> Person { since: I32? }\n";

static const char *QUERIES =
    "query add($n: String, $a: I32?) { insert Person { name: $n, age: $a } }\n"
    "query set_age($n: String, $a: I32?) { update Person set { age: $a } where name = $n }\n"
    "query drop($n: String) { delete Person where name = $n }\n"
    "query unlink($e: String) { delete Knows where id = $e }\n"
    "query persons() { match { $p: Person } return { $p.name, $p.age } }\n"
    "query edges() {\n"
    "    match { $a: Person  $a $e:knows $b }\n"
    "    return { $e.id, $a.name, $b.name, $e.since }\n"
    "}\n";

/* ---- the model ------------------------------------------------------------------------------ */

#define NUL -1 /* a null age or since */

typedef struct nrow {
    bool live;
    int age;
} nrow;

typedef struct erow {
    bool live;
    int src, dst, since;
} erow;

typedef struct state {
    nrow n[NP];
    erow e[NE];
} state;

typedef struct mcommit {
    char id[OG_ID_LEN + 1];
    int parent, merged; /* commit indexes, -1 for none */
    state st;
} mcommit;

typedef struct model {
    mcommit *c;
    int nc, cap;
    int head[NB]; /* commit index of each branch's head */
    bool exists[NB];
} model;

static bool nrow_eq(const nrow *a, const nrow *b)
{
    return a->live == b->live && (!a->live || a->age == b->age);
}

static bool erow_eq(const erow *a, const erow *b)
{
    return a->live == b->live &&
           (!a->live || (a->src == b->src && a->dst == b->dst && a->since == b->since));
}

static int add_commit(model *m, const char *id, int parent, int merged, const state *st)
{
    if (m->nc == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 64;
        m->c = realloc(m->c, (size_t)m->cap * sizeof *m->c);
        assert_non_null(m->c);
    }
    mcommit *c = &m->c[m->nc];
    snprintf(c->id, sizeof c->id, "%s", id);
    c->parent = parent;
    c->merged = merged;
    c->st = *st;
    return m->nc++;
}

static const state *head_state(const model *m, int b)
{
    return &m->c[m->head[b]].st;
}

/* anc[i] = commit i is c or an ancestor of c (parents and merged parents). */
static void ancestors(const model *m, int c, bool *anc)
{
    memset(anc, 0, (size_t)m->nc);
    int *stack = malloc((size_t)m->nc * 2 * sizeof *stack + sizeof *stack), n = 0;
    stack[n++] = c;
    while (n) {
        int x = stack[--n];
        if (x < 0 || anc[x]) continue;
        anc[x] = true;
        stack[n++] = m->c[x].parent;
        stack[n++] = m->c[x].merged;
    }
    free(stack);
}

/* A delete of node p, and the mutation's cascade over its edges. */
static void del_node(state *s, int p)
{
    s->n[p].live = false;
    for (int e = 0; e < NE; e++)
        if (s->e[e].live && (s->e[e].src == p || s->e[e].dst == p)) s->e[e].live = false;
}

enum { K_DIV_INSERT, K_DIV_UPDATE, K_DEL_VS_UPD, K_ORPHAN, N_KINDS };
static const char *KIND_NAME[N_KINDS] = {"divergent_insert", "divergent_update", "delete_vs_update",
                                         "orphan_edge"};

typedef struct mconf {
    int kind;
    bool edge;
    int id;
} mconf;

/* What the model expects of merging branch src into tgt. */
typedef struct mexpect {
    int rc;      /* 0, OG_E_CONFLICT (criss-cross) or OG_E_MERGE_CONFLICTS */
    int outcome; /* og_merge_outcome when rc == 0 */
    int base;    /* commit index (-1: none) */
    int nbest;
    mconf conf[NP + 2 * NE];
    int nconf;
    state result; /* the target's content after it */
} mexpect;

static int g_inject; /* OG_MODEL_INJECT_BUG */

static int classify(bool s_changed, bool t_changed, bool same, bool base_live, bool s_live,
                    bool t_live)
{
    /* -1: take the source's row; -2: keep the target's; else a conflict kind */
    if (!s_changed) return -2;
    if (!t_changed) return -1;
    if (same) return g_inject == 2 ? K_DIV_UPDATE : -2;
    if (!base_live) return K_DIV_INSERT;
    if (!s_live || !t_live) return K_DEL_VS_UPD;
    return K_DIV_UPDATE;
}

static void model_merge(const model *m, int src, int tgt, mexpect *x)
{
    memset(x, 0, sizeof *x);
    int S = m->head[src], T = m->head[tgt];
    bool *aS = malloc((size_t)m->nc), *aT = malloc((size_t)m->nc), *ad = malloc((size_t)m->nc);
    ancestors(m, S, aS);
    ancestors(m, T, aT);
    x->base = -1;
    x->result = m->c[T].st;
    if (aT[S]) {
        x->outcome = OG_MERGE_UP_TO_DATE;
        x->base = S;
        goto out;
    }
    if (aS[T]) {
        x->outcome = OG_MERGE_FAST_FORWARD;
        x->base = T;
        x->result = m->c[S].st;
        goto out;
    }
    /* best common ancestors: common, and no other common commit descends from it */
    bool *best = calloc((size_t)m->nc, 1);
    for (int c = 0; c < m->nc; c++)
        best[c] = aS[c] && aT[c];
    for (int d = 0; d < m->nc; d++) {
        if (!(aS[d] && aT[d])) continue;
        ancestors(m, d, ad);
        for (int c = 0; c < m->nc; c++)
            if (c != d && ad[c]) best[c] = false;
    }
    for (int c = 0; c < m->nc; c++)
        if (best[c]) {
            x->nbest++;
            x->base = c;
        }
    free(best);
    assert_true(x->nbest >= 1); /* the genesis commit is common to all */
    if (x->nbest > 1) {
        x->rc = OG_E_CONFLICT;
        x->base = -1;
        goto out;
    }
    x->outcome = OG_MERGE_MERGED;
    const state *B = &m->c[x->base].st, *Sst = &m->c[S].st, *Tst = &m->c[T].st;
    state *R = &x->result;
    for (int p = 0; p < NP; p++) {
        const nrow *b = &B->n[p], *s = &Sst->n[p], *t = &Tst->n[p];
        int k = classify(!nrow_eq(b, s), !nrow_eq(b, t), nrow_eq(s, t), b->live, s->live, t->live);
        if (k == -1 && !(g_inject == 1 && b->live && !s->live))
            R->n[p] = *s;
        else if (k >= 0)
            x->conf[x->nconf++] = (mconf){k, false, p};
    }
    for (int e = 0; e < NE; e++) {
        const erow *b = &B->e[e], *s = &Sst->e[e], *t = &Tst->e[e];
        int k = classify(!erow_eq(b, s), !erow_eq(b, t), erow_eq(s, t), b->live, s->live, t->live);
        if (k == -1)
            R->e[e] = *s;
        else if (k >= 0)
            x->conf[x->nconf++] = (mconf){k, true, e};
    }
    /* validation of the merged result: edges whose endpoint is not there */
    for (int e = 0; e < NE; e++)
        if (R->e[e].live && (!R->n[R->e[e].src].live || !R->n[R->e[e].dst].live))
            x->conf[x->nconf++] = (mconf){K_ORPHAN, true, e};
    if (x->nconf) {
        x->rc = OG_E_MERGE_CONFLICTS;
        x->result = *Tst;
    }
out:
    free(aS);
    free(aT);
    free(ad);
}

/* ---- steps ---------------------------------------------------------------------------------- */

typedef enum step_kind {
    ST_BRANCH, /* create branch b from branch b2 at its head */
    ST_UPSERT, /* insert Person p {age} on b (an upsert by key) */
    ST_UPDATE, /* update Person p's age on b */
    ST_DELETE, /* delete Person p on b (its edges go too) */
    ST_EDGE,   /* load (merge mode) edge e: src -> dst {since} on b */
    ST_UNLINK, /* delete edge e on b */
    ST_MERGE,  /* merge branch b into b2 */
    ST_READ,   /* read branch b whole */
    ST_BULK,   /* load (merge mode) lines[0..nl) on b: persons and edges, as one commit */
    N_STEP_KINDS
} step_kind;

/* One line of a bulk load: Person p {age}, or edge e: src -> dst {since}. */
typedef struct bline {
    bool edge;
    int p, age, e, src, dst, since;
} bline;

enum { MAX_LINES = 4 };

typedef struct step {
    int kind, b, b2, p, age, e, src, dst, since;
    int nl;
    bline line[MAX_LINES];
} step;

typedef struct stats {
    unsigned long seeds, steps, skipped, writes, noops, refused_writes, branches, reads;
    unsigned long merges, up_to_date, fast_forward, merged, conflicted, crisscross, maintenance;
    unsigned long kinds[N_KINDS];
} stats;

/* One run: a fresh graph, the model, and what went wrong. */
typedef struct run {
    char dir[TEST_SANDBOX_PATH];
    og_graph *g;
    model m;
    stats *st;  /* NULL: not counted (shrinking) */
    FILE *scn;  /* NULL: no scenario is written */
    int failed; /* the step index that failed, -1 while none */
    char cat[32];
    char *msg;
    size_t msglen;
    FILE *err;
} run;

static const char *BNAME[NB] = {"main", "b1", "b2", "b3", "b4"};

static const char *api_branch(int b)
{
    return b == 0 ? NULL : BNAME[b];
}

static void fmt_int(char *buf, size_t cap, int v)
{
    if (v == NUL)
        snprintf(buf, cap, "null");
    else
        snprintf(buf, cap, "%d", v);
}

static void mismatch(run *r, const char *cat, const char *fmt, ...)
{
    if (!r->err) {
        r->err = open_memstream(&r->msg, &r->msglen);
        snprintf(r->cat, sizeof r->cat, "%s", cat);
    }
    va_list ap;
    va_start(ap, fmt);
    vfprintf(r->err, fmt, ap);
    va_end(ap);
    fputc('\n', r->err);
    fflush(r->err);
}

/* ---- content, as og_graph_export prints it -------------------------------------------------- */

static char *model_export(const state *s)
{
    char *out = NULL, a[16];
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    for (int p = 0; p < NP; p++) {
        if (!s->n[p].live) continue;
        fmt_int(a, sizeof a, s->n[p].age);
        fprintf(f, "{\"type\":\"Person\",\"data\":{\"id\":\"p%d\",\"name\":\"p%d\",\"age\":%s}}\n",
                p, p, a);
    }
    for (int e = 0; e < NE; e++) {
        const erow *w = &s->e[e];
        if (!w->live) continue;
        fmt_int(a, sizeof a, w->since);
        fprintf(f,
                "{\"edge\":\"Knows\",\"from\":\"p%d\",\"to\":\"p%d\",\"data\":{\"id\":\"e%d\","
                "\"since\":%s}}\n",
                w->src, w->dst, e, a);
    }
    fclose(f);
    return out;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The non-empty lines of text (split in place), sorted. */
static char **lines_of(char *text, size_t *n)
{
    size_t cap = 16;
    char **v = malloc(cap * sizeof *v);
    *n = 0;
    for (char *p = strtok(text, "\n"); p; p = strtok(NULL, "\n")) {
        if (*n == cap) v = realloc(v, (cap *= 2) * sizeof *v);
        v[(*n)++] = p;
    }
    qsort(v, *n, sizeof *v, cmp_str);
    return v;
}

/* Branch b's whole content read back equals the model's; a difference is reported row by row. */
static bool check_content(run *r, int b, int step_no, const char *why)
{
    char *got = NULL;
    size_t glen = 0;
    FILE *f = open_memstream(&got, &glen);
    og_export_options eo = OG_EXPORT_OPTIONS_INIT;
    eo.branch = api_branch(b);
    og_export_result *er = NULL;
    int rc = og_graph_export(&er, f, r->g, &eo);
    fclose(f);
    og_export_result_free(er);
    if (rc) {
        mismatch(r, "read", "step %d: export of %s (%s): %s: %s", step_no, BNAME[b], why,
                 og_code_name(rc), og_error_last()->message);
        free(got);
        return false;
    }
    char *want = model_export(head_state(&r->m, b));
    size_t ng, nw;
    char **gl = lines_of(got, &ng), **wl = lines_of(want, &nw);
    bool same = ng == nw;
    for (size_t i = 0; same && i < ng; i++)
        same = strcmp(gl[i], wl[i]) == 0;
    if (!same) {
        mismatch(r, "content", "step %d: %s (%s): the content differs from the model's", step_no,
                 BNAME[b], why);
        size_t i = 0, j = 0;
        while (i < nw || j < ng) {
            int c = i == nw ? 1 : j == ng ? -1 : strcmp(wl[i], gl[j]);
            if (c == 0) {
                i++;
                j++;
            } else if (c < 0) {
                mismatch(r, "", "  model only: %s", wl[i++]);
            } else {
                mismatch(r, "", "  graph only: %s", gl[j++]);
            }
        }
    }
    free(gl);
    free(wl);
    free(got);
    free(want);
    return same;
}

/* After a step: the handle's automatic maintenance has run (write_maintenance_drain, so runs
 * replay exactly), and every branch's head is the model's, or a maintenance commit after it
 * (docs/maintenance.md: actorless, content unchanged; this handle's own commits carry the actor
 * "model"), which then becomes a model commit of the same content. Any other move of a head is
 * a mismatch: a write or merge moved a branch it should not have. */
static bool settle(run *r, int step_no)
{
    write_maintenance_drain(r->g->w);
    og_branch_list *l = NULL;
    int rc = og_graph_branches(&l, r->g);
    if (rc) {
        mismatch(r, "read", "step %d: branch list: %s", step_no, og_error_last()->message);
        return false;
    }
    bool ok = true;
    for (int b = 0; ok && b < NB; b++) {
        if (!r->m.exists[b]) continue;
        const og_branch_info *bi = NULL;
        for (size_t i = 0; i < og_branch_list_count(l); i++)
            if (strcmp(og_branch_list_get(l, i)->name, BNAME[b]) == 0)
                bi = og_branch_list_get(l, i);
        const char *want = r->m.c[r->m.head[b]].id;
        if (!bi) {
            mismatch(r, "heads", "step %d: branch %s is gone", step_no, BNAME[b]);
            ok = false;
            break;
        }
        if (strcmp(bi->head, want) == 0) continue;
        og_commit_list *cl = NULL;
        if (og_graph_commits(&cl, r->g,
                             &(og_commit_options){.version = OG_COMMIT_OPTIONS_VERSION,
                                                  .branch = api_branch(b)})) {
            mismatch(r, "read", "step %d: commits of %s: %s", step_no, BNAME[b],
                     og_error_last()->message);
            ok = false;
            break;
        }
        size_t n = og_commit_list_count(cl), k = 0;
        while (k < n && strcmp(og_commit_list_get(cl, k)->id, want) != 0)
            k++;
        for (size_t i = 0; ok && i < k && k < n; i++) {
            const og_commit_info *c = og_commit_list_get(cl, i);
            ok = c->actor == NULL && c->merged_parent[0] == 0 &&
                 strcmp(c->parent, og_commit_list_get(cl, i + 1)->id) == 0;
        }
        if (k == n || !ok) {
            const og_commit_info *c = og_commit_list_get(cl, 0);
            mismatch(r, "heads",
                     "step %d: branch %s: head %s (actor %s, parent %s, merged parent %s), the "
                     "model's %s%s",
                     step_no, BNAME[b], bi->head, c->actor ? c->actor : "none", c->parent,
                     c->merged_parent[0] ? c->merged_parent : "none", want,
                     k == n ? " is not in its history" : ": not maintenance commits after it");
            ok = false;
        } else {
            state st = *head_state(&r->m, b);
            for (size_t i = k; i-- > 0;) {
                r->m.head[b] =
                    add_commit(&r->m, og_commit_list_get(cl, i)->id, r->m.head[b], -1, &st);
                if (r->st) r->st->maintenance++;
            }
        }
        og_commit_list_free(cl);
    }
    og_branch_list_free(l);
    return ok;
}

/* ---- the scenario file ---------------------------------------------------------------------- */

static void scn_expect(run *r, int b)
{
    if (!r->scn) return;
    const state *s = head_state(&r->m, b);
    char a[16];
    fprintf(r->scn, "expect %s persons\n", BNAME[b]);
    for (int p = 0; p < NP; p++) {
        if (!s->n[p].live) continue;
        fmt_int(a, sizeof a, s->n[p].age);
        fprintf(r->scn, "{\"p.name\":\"p%d\",\"p.age\":%s}\n", p, a);
    }
    fprintf(r->scn, "end\nexpect %s edges\n", BNAME[b]);
    for (int e = 0; e < NE; e++) {
        const erow *w = &s->e[e];
        if (!w->live) continue;
        fmt_int(a, sizeof a, w->since);
        fprintf(r->scn, "{\"e.id\":\"e%d\",\"a.name\":\"p%d\",\"b.name\":\"p%d\",\"e.since\":%s}\n",
                e, w->src, w->dst, a);
    }
    fprintf(r->scn, "end\n");
}

/* ---- running steps -------------------------------------------------------------------------- */

static int mutate(run *r, int b, const char *query, const char *params, char *commit)
{
    og_mutate_options mo = OG_MUTATE_OPTIONS_INIT;
    mo.source = QUERIES;
    mo.source_file = "model.gq";
    mo.name = query;
    mo.params_json = params;
    mo.branch = api_branch(b);
    og_write_result *wr = NULL;
    int rc = og_graph_mutate(&wr, r->g, &mo);
    commit[0] = 0;
    if (rc == 0) snprintf(commit, OG_ID_LEN + 1, "%s", og_write_result_commit_id(wr));
    og_write_result_free(wr);
    return rc;
}

static int load(run *r, int b, const char *jsonl, char *commit)
{
    og_load_options lo = OG_LOAD_OPTIONS_INIT;
    lo.mode = OG_LOAD_MERGE;
    lo.branch = api_branch(b);
    og_write_result *wr = NULL;
    int rc = og_graph_load(&wr, r->g, "model.jsonl", jsonl, strlen(jsonl), &lo);
    commit[0] = 0;
    if (rc == 0) snprintf(commit, OG_ID_LEN + 1, "%s", og_write_result_commit_id(wr));
    og_write_result_free(wr);
    return rc;
}

static const char *STEP_NAME[] = {"branch", "upsert", "update", "delete", "edge",
                                  "unlink", "merge",  "read",   "load"};

/* The load line of a bulk line, with its newline. */
static void bline_json(const bline *l, char *buf, size_t cap)
{
    char v[16];
    fmt_int(v, sizeof v, l->edge ? l->since : l->age);
    if (l->edge)
        snprintf(buf, cap,
                 "{\"edge\":\"Knows\",\"from\":\"p%d\",\"to\":\"p%d\",\"data\":{\"id\":\"e%d\","
                 "\"since\":%s}}\n",
                 l->src, l->dst, l->e, v);
    else
        snprintf(buf, cap, "{\"type\":\"Person\",\"data\":{\"name\":\"p%d\",\"age\":%s}}\n", l->p,
                 v);
}

static void step_text(const step *s, char *buf, size_t cap)
{
    char a[16], sn[16];
    fmt_int(a, sizeof a, s->age);
    fmt_int(sn, sizeof sn, s->since);
    switch (s->kind) {
    case ST_BRANCH:
        snprintf(buf, cap, "branch %s from %s", BNAME[s->b], BNAME[s->b2]);
        break;
    case ST_UPSERT:
    case ST_UPDATE:
        snprintf(buf, cap, "%s p%d age %s on %s", STEP_NAME[s->kind], s->p, a, BNAME[s->b]);
        break;
    case ST_DELETE:
        snprintf(buf, cap, "delete p%d on %s", s->p, BNAME[s->b]);
        break;
    case ST_EDGE:
        snprintf(buf, cap, "edge e%d p%d->p%d since %s on %s", s->e, s->src, s->dst, sn,
                 BNAME[s->b]);
        break;
    case ST_UNLINK:
        snprintf(buf, cap, "unlink e%d on %s", s->e, BNAME[s->b]);
        break;
    case ST_MERGE:
        snprintf(buf, cap, "merge %s into %s", BNAME[s->b], BNAME[s->b2]);
        break;
    case ST_BULK: {
        size_t n = (size_t)snprintf(buf, cap, "load on %s:", BNAME[s->b]);
        for (int k = 0; k < s->nl && n < cap; k++) {
            const bline *l = &s->line[k];
            char v[16];
            fmt_int(v, sizeof v, l->edge ? l->since : l->age);
            if (l->edge)
                n += (size_t)snprintf(buf + n, cap - n, " e%d p%d->p%d since %s;", l->e, l->src,
                                      l->dst, v);
            else
                n += (size_t)snprintf(buf + n, cap - n, " p%d age %s;", l->p, v);
        }
        break;
    }
    default:
        snprintf(buf, cap, "read %s", BNAME[s->b]);
    }
}

/* A write that the model says makes `want` (or, with `want_commit` false, no commit); `maybe`:
 * the content does not change, so a commit is allowed either way. */
static bool write_done(run *r, int i, const step *s, int rc, const char *commit, bool want_commit,
                       bool maybe, const state *next)
{
    char what[256];
    step_text(s, what, sizeof what);
    if (rc) {
        mismatch(r, "write", "step %d (%s): failed: %s: %s", i + 1, what, og_code_name(rc),
                 og_error_last()->message);
        return false;
    }
    if (!maybe && want_commit != (commit[0] != 0)) {
        mismatch(r, "write", "step %d (%s): %s, the model expects %s", i + 1, what,
                 commit[0] ? "committed" : "committed nothing", want_commit ? "a commit" : "none");
        return false;
    }
    if (commit[0]) {
        r->m.head[s->b] = add_commit(&r->m, commit, r->m.head[s->b], -1, next);
        if (r->st) r->st->writes++;
    } else if (r->st) {
        r->st->noops++;
    }
    return settle(r, i + 1);
}

static bool run_merge(run *r, int i, const step *s)
{
    model *m = &r->m;
    int src = s->b, tgt = s->b2;
    mexpect x;
    model_merge(m, src, tgt, &x);
    char what[64];
    step_text(s, what, sizeof what);
    if (r->scn) {
        if (x.rc == OG_E_CONFLICT) {
            fprintf(r->scn, "merge %s into %s -> error conflict\n", BNAME[src], BNAME[tgt]);
        } else if (x.rc == OG_E_MERGE_CONFLICTS) {
            fprintf(r->scn, "merge %s into %s -> conflicts\n", BNAME[src], BNAME[tgt]);
            for (int k = 0; k < x.nconf; k++)
                fprintf(r->scn, "%s %s %c%d\n", KIND_NAME[x.conf[k].kind],
                        x.conf[k].edge ? "Knows" : "Person", x.conf[k].edge ? 'e' : 'p',
                        x.conf[k].id);
            fprintf(r->scn, "end\n");
        } else {
            fprintf(r->scn, "merge %s into %s -> %s\n", BNAME[src], BNAME[tgt],
                    og_merge_outcome_name(x.outcome));
        }
    }
    og_merge_options mo = OG_MERGE_OPTIONS_INIT;
    mo.source = BNAME[src];
    mo.into = BNAME[tgt];
    og_merge_result *res = NULL;
    int rc = og_graph_merge(&res, r->g, &mo);
    if (r->st) {
        r->st->merges++;
        if (rc == OG_E_CONFLICT) r->st->crisscross++;
        if (rc == OG_E_MERGE_CONFLICTS) {
            r->st->conflicted++;
            for (size_t k = 0; k < og_merge_result_conflict_count(res); k++)
                for (int q = 0; q < N_KINDS; q++)
                    if (strcmp(og_merge_result_conflict(res, k)->kind, KIND_NAME[q]) == 0)
                        r->st->kinds[q]++;
        }
        if (rc == 0 && res->outcome == OG_MERGE_UP_TO_DATE) r->st->up_to_date++;
        if (rc == 0 && res->outcome == OG_MERGE_FAST_FORWARD) r->st->fast_forward++;
        if (rc == 0 && res->outcome == OG_MERGE_MERGED) r->st->merged++;
    }
    bool ok = true;
    char want_desc[64];
    snprintf(want_desc, sizeof want_desc, "%s",
             x.rc == OG_E_CONFLICT          ? "conflict (criss-cross)"
             : x.rc == OG_E_MERGE_CONFLICTS ? "merge_conflicts"
                                            : og_merge_outcome_name(x.outcome));
    if (rc != x.rc || (rc == 0 && res->outcome != x.outcome)) {
        mismatch(r, "outcome", "step %d (%s): got %s%s%s, the model expects %s", i + 1, what,
                 og_code_name(rc), rc == 0 ? " " : ": ",
                 rc == 0 ? og_merge_outcome_name(res->outcome) : og_error_last()->message,
                 want_desc);
        if (x.nbest > 1) mismatch(r, "", "  model: %d best common ancestors", x.nbest);
        ok = false;
    }
    /* the conflicts, as sets of "kind type id" */
    if (ok && rc == OG_E_MERGE_CONFLICTS) {
        size_t ng = og_merge_result_conflict_count(res);
        char **gl = calloc(ng + 1, sizeof *gl), **wl = calloc((size_t)x.nconf + 1, sizeof *wl);
        for (size_t k = 0; k < ng; k++) {
            const og_merge_conflict *c = og_merge_result_conflict(res, k);
            size_t n = strlen(c->kind) + strlen(c->type) + (c->id ? strlen(c->id) : 1) + 3;
            gl[k] = malloc(n);
            snprintf(gl[k], n, "%s %s %s", c->kind, c->type, c->id ? c->id : "-");
        }
        for (int k = 0; k < x.nconf; k++) {
            wl[k] = malloc(64);
            snprintf(wl[k], 64, "%s %s %c%d", KIND_NAME[x.conf[k].kind],
                     x.conf[k].edge ? "Knows" : "Person", x.conf[k].edge ? 'e' : 'p', x.conf[k].id);
        }
        qsort(gl, ng, sizeof *gl, cmp_str);
        qsort(wl, (size_t)x.nconf, sizeof *wl, cmp_str);
        /* as sets: repeats of one conflict are dropped */
        size_t nu = 0;
        for (size_t k = 0; k < ng; k++)
            if (!nu || strcmp(gl[nu - 1], gl[k]) != 0)
                gl[nu++] = gl[k];
            else
                free(gl[k]);
        bool same = nu == (size_t)x.nconf;
        for (size_t k = 0; same && k < nu; k++)
            same = strcmp(gl[k], wl[k]) == 0;
        if (!same) {
            mismatch(r, "conflicts", "step %d (%s): the conflicts differ from the model's", i + 1,
                     what);
            for (int k = 0; k < x.nconf; k++)
                mismatch(r, "", "  model: %s", wl[k]);
            for (size_t k = 0; k < ng; k++)
                mismatch(r, "", "  graph: %s %s %s: %s", og_merge_result_conflict(res, k)->kind,
                         og_merge_result_conflict(res, k)->type,
                         og_merge_result_conflict(res, k)->id ? og_merge_result_conflict(res, k)->id
                                                              : "-",
                         og_merge_result_conflict(res, k)->message);
            ok = false;
        }
        for (size_t k = 0; k < nu; k++)
            free(gl[k]);
        for (int k = 0; k < x.nconf; k++)
            free(wl[k]);
        free(gl);
        free(wl);
    }
    if (ok && rc == 0 && x.outcome != OG_MERGE_UP_TO_DATE) {
        /* the commit: on the target, after its old head, merging the source head */
        const char *old = m->c[m->head[tgt]].id, *sh = m->c[m->head[src]].id;
        og_commit_info *h = NULL;
        if (res->commit[0] &&
            og_graph_commit_show(
                &h, r->g, res->commit,
                &(og_commit_options){.version = OG_COMMIT_OPTIONS_VERSION, .branch = BNAME[tgt]}))
            h = NULL;
        if (!h || strcmp(h->id, res->commit) != 0 || strcmp(h->parent, old) != 0 ||
            strcmp(h->merged_parent, sh) != 0 || strcmp(res->source_head, sh) != 0) {
            mismatch(r, "commit",
                     "step %d (%s): commit %s (head %s, parent %s, merged parent %s, source head "
                     "%s); the model expects parent %s, merged parent %s",
                     i + 1, what, res->commit, h ? h->id : "?", h ? h->parent : "?",
                     h ? h->merged_parent : "?", res->source_head, old, sh);
            ok = false;
        }
        if (ok && strcmp(res->base, m->c[x.base].id) != 0) {
            mismatch(r, "commit", "step %d (%s): merge base %s, the model's %s", i + 1, what,
                     res->base, m->c[x.base].id);
            ok = false;
        }
        og_commit_info_free(h);
        if (ok) m->head[tgt] = add_commit(m, res->commit, m->head[tgt], m->head[src], &x.result);
    } else if (ok && rc == 0 && res->commit[0]) {
        mismatch(r, "commit", "step %d (%s): up to date, yet commit %s", i + 1, what, res->commit);
        ok = false;
    }
    og_merge_result_free(res);
    og_error_clear();
    /* every branch: its head, and its content (the target's new one, the others' unchanged) */
    if (ok) ok = settle(r, i + 1);
    for (int b = 0; ok && b < NB; b++)
        if (m->exists[b])
            ok = check_content(r, b, i + 1, b == tgt ? "the merge's target" : "after a merge");
    if (ok && r->scn && x.rc == 0) scn_expect(r, tgt);
    return ok;
}

/* Run step i: false on a mismatch (r->msg says what). A step whose branch does not exist (a
 * shrunk list lost the step that made it) is skipped. */
static bool exec_step(run *r, int i, const step *s)
{
    model *m = &r->m;
    bool can = s->kind == ST_BRANCH ? m->exists[s->b2] && !m->exists[s->b]
                                    : m->exists[s->b] && (s->kind != ST_MERGE || m->exists[s->b2]);
    if (!can) {
        if (r->st) r->st->skipped++;
        return true;
    }
    if (r->st) r->st->steps++;
    char params[128], commit[OG_ID_LEN + 1], a[16], what[256];
    int on = s->kind == ST_BRANCH ? s->b2 : s->b;
    state next = *head_state(m, on);
    const state *cur = head_state(m, on);
    fmt_int(a, sizeof a, s->age);
    switch (s->kind) {
    case ST_BRANCH: {
        og_branch_options bo = OG_BRANCH_OPTIONS_INIT;
        bo.from = api_branch(s->b2);
        og_branch_info *bi = NULL;
        int rc = og_graph_create_branch(&bi, r->g, BNAME[s->b], &bo);
        if (rc || strcmp(bi->head, m->c[m->head[s->b2]].id) != 0) {
            step_text(s, what, sizeof what);
            mismatch(r, "write", "step %d (%s): %s", i + 1, what,
                     rc ? og_error_last()->message : "the new branch's head is not its source's");
            og_branch_info_free(bi);
            return false;
        }
        og_branch_info_free(bi);
        m->exists[s->b] = true;
        m->head[s->b] = m->head[s->b2];
        if (r->st) r->st->branches++;
        if (r->scn) {
            if (s->b2 == 0)
                fprintf(r->scn, "branch %s\n", BNAME[s->b]);
            else
                fprintf(r->scn, "branch %s from %s\n", BNAME[s->b], BNAME[s->b2]);
        }
        return true;
    }
    case ST_UPSERT: {
        snprintf(params, sizeof params, "{\"n\":\"p%d\",\"a\":%s}", s->p, a);
        if (r->scn) fprintf(r->scn, "mutate %s add %s\n", BNAME[s->b], params);
        int rc = mutate(r, s->b, "add", params, commit);
        next.n[s->p] = (nrow){true, s->age};
        return write_done(r, i, s, rc, commit, true, nrow_eq(&next.n[s->p], &cur->n[s->p]), &next);
    }
    case ST_UPDATE: {
        snprintf(params, sizeof params, "{\"n\":\"p%d\",\"a\":%s}", s->p, a);
        if (r->scn) fprintf(r->scn, "mutate %s set_age %s\n", BNAME[s->b], params);
        int rc = mutate(r, s->b, "set_age", params, commit);
        bool live = cur->n[s->p].live;
        if (live) next.n[s->p].age = s->age;
        return write_done(r, i, s, rc, commit, live, live && cur->n[s->p].age == s->age, &next);
    }
    case ST_DELETE: {
        snprintf(params, sizeof params, "{\"n\":\"p%d\"}", s->p);
        if (r->scn) fprintf(r->scn, "mutate %s drop %s\n", BNAME[s->b], params);
        int rc = mutate(r, s->b, "drop", params, commit);
        bool live = cur->n[s->p].live;
        if (live) del_node(&next, s->p);
        return write_done(r, i, s, rc, commit, live, false, &next);
    }
    case ST_EDGE: {
        char line[256], sn[16];
        fmt_int(sn, sizeof sn, s->since);
        snprintf(line, sizeof line,
                 "{\"edge\":\"Knows\",\"from\":\"p%d\",\"to\":\"p%d\",\"data\":{\"id\":\"e%d\","
                 "\"since\":%s}}\n",
                 s->src, s->dst, s->e, sn);
        int rc = load(r, s->b, line, commit);
        if (!cur->n[s->src].live || !cur->n[s->dst].live) {
            /* an endpoint this branch does not have: refused, nothing written */
            if (rc != OG_E_BAD_REQUEST) {
                step_text(s, what, sizeof what);
                mismatch(r, "write", "step %d (%s): %s, the model expects bad_request", i + 1, what,
                         og_code_name(rc));
                return false;
            }
            og_error_clear();
            if (r->st) r->st->refused_writes++;
            if (r->scn) fprintf(r->scn, "# refused (an endpoint is missing): %s", line);
            return true;
        }
        if (r->scn) fprintf(r->scn, "load %s merge\n%send\n", BNAME[s->b], line);
        next.e[s->e] = (erow){true, s->src, s->dst, s->since};
        return write_done(r, i, s, rc, commit, true, erow_eq(&next.e[s->e], &cur->e[s->e]), &next);
    }
    case ST_UNLINK: {
        snprintf(params, sizeof params, "{\"e\":\"e%d\"}", s->e);
        if (r->scn) fprintf(r->scn, "mutate %s unlink %s\n", BNAME[s->b], params);
        int rc = mutate(r, s->b, "unlink", params, commit);
        bool live = cur->e[s->e].live;
        next.e[s->e].live = false;
        return write_done(r, i, s, rc, commit, live, false, &next);
    }
    case ST_BULK: {
        char text[1024] = "";
        size_t n = 0;
        for (int k = 0; k < s->nl; k++) {
            const bline *l = &s->line[k];
            bline_json(l, text + n, sizeof text - n);
            n += strlen(text + n);
            if (l->edge)
                next.e[l->e] = (erow){true, l->src, l->dst, l->since};
            else
                next.n[l->p] = (nrow){true, l->age};
        }
        bool valid = true, same = true;
        for (int k = 0; k < s->nl; k++) {
            const bline *l = &s->line[k];
            if (l->edge) valid &= next.n[l->src].live && next.n[l->dst].live;
            same &= l->edge ? erow_eq(&next.e[l->e], &cur->e[l->e])
                            : nrow_eq(&next.n[l->p], &cur->n[l->p]);
        }
        int rc = load(r, s->b, text, commit);
        if (!valid) {
            /* an edge whose endpoint this branch (and the load) lacks: nothing written */
            if (rc != OG_E_BAD_REQUEST) {
                step_text(s, what, sizeof what);
                mismatch(r, "write", "step %d (%s): %s, the model expects bad_request", i + 1, what,
                         og_code_name(rc));
                return false;
            }
            og_error_clear();
            if (r->st) r->st->refused_writes++;
            if (r->scn) {
                fprintf(r->scn, "# refused (an endpoint is missing):\n");
                for (int k = 0; k < s->nl; k++) {
                    char l[256];
                    bline_json(&s->line[k], l, sizeof l);
                    fprintf(r->scn, "# %s", l);
                }
            }
            return true;
        }
        if (r->scn) fprintf(r->scn, "load %s merge\n%send\n", BNAME[s->b], text);
        return write_done(r, i, s, rc, commit, true, same, &next);
    }
    case ST_MERGE:
        return run_merge(r, i, s);
    default:
        if (r->st) r->st->reads++;
        if (r->scn) scn_expect(r, s->b);
        return check_content(r, s->b, i + 1, "a read");
    }
}

/* ---- the generator -------------------------------------------------------------------------- */

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t next_u64(rng *g)
{
    uint64_t z = (g->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int pick(rng *g, int n)
{
    return (int)(next_u64(g) % (uint64_t)n);
}

static bool chance(rng *g, int percent)
{
    return pick(g, 100) < percent;
}

/* A random element of the set given as flags (n of them); -1 when it is empty. */
static int pick_of(rng *g, const bool *set, int n)
{
    int c = 0;
    for (int i = 0; i < n; i++)
        c += set[i];
    if (!c) return -1;
    int k = pick(g, c);
    for (int i = 0; i < n; i++)
        if (set[i] && k-- == 0) return i;
    return -1;
}

static int rand_branch(rng *g, const model *m)
{
    return pick_of(g, m->exists, NB);
}

static int live_node(rng *g, const state *s)
{
    bool live[NP];
    for (int p = 0; p < NP; p++)
        live[p] = s->n[p].live;
    int p = pick_of(g, live, NP);
    return p < 0 ? pick(g, NP) : p;
}

static int rand_val(rng *g, int n, int null_percent)
{
    return chance(g, null_percent) ? NUL : pick(g, n);
}

/* An edge id for a write on a branch whose state is st, with its endpoints: mostly a fresh id
 * (*next_edge), else one of the branch's own edges (a new since; its endpoints stay) or an id
 * another branch has and this one does not (a second insert of it, the endpoints given).
 * Ids in `taken` are not picked (one load names an id once). */
static int gen_edge(rng *g, const model *m, const state *st, int *next_edge, const bool *taken,
                    int *src, int *dst)
{
    bool mine[NE], others[NE];
    for (int e = 0; e < NE; e++) {
        mine[e] = st->e[e].live && !taken[e];
        others[e] = false;
        for (int b = 0; b < NB; b++)
            others[e] |= m->exists[b] && !st->e[e].live && !taken[e] && head_state(m, b)->e[e].live;
    }
    int c = pick(g, 100), e = -1;
    if (c < 15) e = pick_of(g, mine, NE);
    if (e >= 0) {
        *src = st->e[e].src;
        *dst = st->e[e].dst;
        return e;
    }
    if (c < 30) e = pick_of(g, others, NE);
    if (e < 0 && *next_edge < NE) e = (*next_edge)++;
    while (e < 0 || taken[e])
        e = pick(g, NE);
    return e;
}

/* A write on branch tgt that settles one conflict merging src into tgt would meet (per the
 * model): the target takes the source's row (so both sides then made the same change), or for
 * an orphan edge drops the edge or brings back its endpoint. false when that merge has no
 * conflict. */
static bool gen_resolve(rng *g, const model *m, int src, int tgt, step *s)
{
    mexpect x;
    model_merge(m, src, tgt, &x);
    if (x.rc != OG_E_MERGE_CONFLICTS) return false;
    const mconf *c = &x.conf[pick(g, x.nconf)];
    const state *S = head_state(m, src), *T = head_state(m, tgt);
    s->b = tgt;
    if (c->kind == K_ORPHAN) {
        const erow *e = T->e[c->id].live ? &T->e[c->id] : &S->e[c->id];
        int p = !T->n[e->src].live ? e->src : e->dst;
        if (T->e[c->id].live && (chance(g, 50) || T->n[p].live)) {
            s->kind = ST_UNLINK;
            s->e = c->id;
        } else {
            s->kind = ST_UPSERT;
            s->p = p;
            s->age = S->n[p].live ? S->n[p].age : T->n[p].age;
        }
    } else if (!c->edge) {
        const nrow *n = &S->n[c->id];
        s->kind = n->live ? ST_UPSERT : ST_DELETE;
        s->p = c->id;
        s->age = n->age;
    } else {
        const erow *e = &S->e[c->id];
        s->kind = e->live ? ST_EDGE : ST_UNLINK;
        s->e = c->id;
        s->src = e->src;
        s->dst = e->dst;
        s->since = e->since;
    }
    return true;
}

/* The next step for the model's current state; *next_edge is the next fresh edge id, max_b the
 * number of branches this seed may have. */
static step gen_step(rng *g, const model *m, int *next_edge, int max_b)
{
    enum { W_BRANCH = 10, W_UPSERT = 15, W_UPDATE = 9, W_DELETE = 8, W_EDGE = 14 };
    enum { W_UNLINK = 5, W_MERGE = 30, W_READ = 6, W_BULK = 6 };
    static const int weight[N_STEP_KINDS] = {W_BRANCH, W_UPSERT, W_UPDATE, W_DELETE, W_EDGE,
                                             W_UNLINK, W_MERGE,  W_READ,   W_BULK};
    int nb = 0, free_b = -1;
    for (int b = 0; b < max_b; b++) {
        nb += m->exists[b];
        if (!m->exists[b] && free_b < 0) free_b = b;
    }
    step s;
    memset(&s, 0, sizeof s);
    for (;;) {
        int total = 0;
        for (int k = 0; k < N_STEP_KINDS; k++)
            total += weight[k];
        int w = pick(g, total), k = 0;
        while (w >= weight[k])
            w -= weight[k++];
        if (k == ST_BRANCH && free_b < 0) continue;
        if (k == ST_MERGE && nb < 2) continue;
        s.kind = k;
        break;
    }
    s.b = rand_branch(g, m);
    const state *st = head_state(m, s.b);
    s.age = rand_val(g, 4, 20);
    s.since = rand_val(g, 3, 25);
    bool taken[NE] = {0};
    switch (s.kind) {
    case ST_BRANCH:
        s.b2 = s.b;
        s.b = free_b;
        break;
    case ST_UPSERT:
        s.p = pick(g, NP);
        break;
    case ST_UPDATE:
    case ST_DELETE:
        s.p = chance(g, 85) ? live_node(g, st) : pick(g, NP);
        break;
    case ST_EDGE:
        s.src = chance(g, 92) ? live_node(g, st) : pick(g, NP);
        s.dst = chance(g, 92) ? live_node(g, st) : pick(g, NP);
        s.e = gen_edge(g, m, st, next_edge, taken, &s.src, &s.dst);
        break;
    case ST_UNLINK: {
        bool mine[NE];
        for (int e = 0; e < NE; e++)
            mine[e] = st->e[e].live;
        s.e = chance(g, 85) ? pick_of(g, mine, NE) : -1;
        if (s.e < 0) s.e = pick(g, *next_edge);
        break;
    }
    case ST_MERGE:
        for (int tries = 0;; tries++) {
            do
                s.b2 = rand_branch(g, m);
            while (s.b2 == s.b);
            /* a merge that is up to date tells little: mostly look for another pair */
            mexpect x;
            model_merge(m, s.b, s.b2, &x);
            if (tries == 2 || x.rc || x.outcome != OG_MERGE_UP_TO_DATE || chance(g, 30)) break;
            s.b = rand_branch(g, m);
        }
        /* sometimes, instead, settle a conflict that merge would meet: without it two
         * branches that once conflicted never merge again */
        if (chance(g, 20)) {
            step w = s;
            if (gen_resolve(g, m, s.b, s.b2, &w)) s = w;
        }
        break;
    case ST_BULK: {
        state tmp = *st; /* the load's own persons are endpoints for its edges */
        bool used[NP] = {0};
        s.nl = 2 + pick(g, MAX_LINES - 1);
        for (int k = 0; k < s.nl; k++) {
            bline *l = &s.line[k];
            l->edge = chance(g, 50);
            if (!l->edge) {
                do
                    l->p = pick(g, NP);
                while (used[l->p]);
                used[l->p] = true;
                l->age = rand_val(g, 4, 20);
                tmp.n[l->p] = (nrow){true, l->age};
            } else {
                l->src = chance(g, 95) ? live_node(g, &tmp) : pick(g, NP);
                l->dst = chance(g, 95) ? live_node(g, &tmp) : pick(g, NP);
                l->e = gen_edge(g, m, &tmp, next_edge, taken, &l->src, &l->dst);
                l->since = rand_val(g, 3, 25);
                taken[l->e] = true;
                tmp.e[l->e] = (erow){true, l->src, l->dst, l->since};
            }
        }
        break;
    }
    default:
        break;
    }
    return s;
}

/* ---- one run -------------------------------------------------------------------------------- */

/* The fixed start of every run: four persons and two edges on main. */
static const char *PRELUDE = "{\"type\":\"Person\",\"data\":{\"name\":\"p0\",\"age\":1}}\n"
                             "{\"type\":\"Person\",\"data\":{\"name\":\"p1\",\"age\":2}}\n"
                             "{\"type\":\"Person\",\"data\":{\"name\":\"p2\",\"age\":null}}\n"
                             "{\"type\":\"Person\",\"data\":{\"name\":\"p3\",\"age\":0}}\n"
                             "{\"edge\":\"Knows\",\"from\":\"p0\",\"to\":\"p1\","
                             "\"data\":{\"id\":\"e0\",\"since\":1}}\n"
                             "{\"edge\":\"Knows\",\"from\":\"p2\",\"to\":\"p3\","
                             "\"data\":{\"id\":\"e1\",\"since\":null}}\n";
enum { PRELUDE_EDGES = 2 };

static void run_begin(run *r, stats *st, FILE *scn)
{
    memset(r, 0, sizeof *r);
    r->st = st;
    r->scn = scn;
    r->failed = -1;
    test_sandbox_new(r->dir, sizeof r->dir, "merge-model");
    og_init_options io = OG_INIT_OPTIONS_INIT;
    io.schema_source = SCHEMA;
    og_init_result *ir = NULL;
    assert_og_ok(og_root_init(&ir, r->dir, &io));
    state empty;
    memset(&empty, 0, sizeof empty);
    int genesis = add_commit(&r->m, ir->commit_id, -1, -1, &empty);
    og_init_result_free(ir);
    og_open_options oo = OG_OPEN_OPTIONS_INIT;
    oo.actor = "model"; /* maintenance commits have none */
    assert_og_ok(og_graph_open(&r->g, r->dir, &oo));
    og_load_options lo = OG_LOAD_OPTIONS_INIT;
    lo.mode = OG_LOAD_MERGE;
    og_write_result *wr = NULL;
    assert_og_ok(og_graph_load(&wr, r->g, "prelude.jsonl", PRELUDE, strlen(PRELUDE), &lo));
    state s = empty;
    s.n[0] = (nrow){true, 1};
    s.n[1] = (nrow){true, 2};
    s.n[2] = (nrow){true, NUL};
    s.n[3] = (nrow){true, 0};
    s.e[0] = (erow){true, 0, 1, 1};
    s.e[1] = (erow){true, 2, 3, NUL};
    r->m.exists[0] = true;
    r->m.head[0] = add_commit(&r->m, og_write_result_commit_id(wr), genesis, -1, &s);
    og_write_result_free(wr);
    assert_true(settle(r, 0));
    if (scn) {
        fprintf(scn, "schema\n%send\nqueries\n%send\nload main merge\n%send\n", SCHEMA, QUERIES,
                PRELUDE);
    }
}

static void run_end(run *r)
{
    og_graph_close(r->g);
    test_sandbox_done(r->dir);
    free(r->m.c);
    if (r->err) fclose(r->err);
    free(r->msg);
}

/* Replay a step list on a fresh graph: the index of the step that failed (r->cat, r->msg say
 * how), or -1. The caller ends the run. */
static int replay(run *r, const step *steps, int n, stats *st, FILE *scn)
{
    run_begin(r, st, scn);
    for (int i = 0; i < n; i++)
        if (!exec_step(r, i, &steps[i])) return r->failed = i;
    return -1;
}

static bool reproduces(const step *steps, int n, const char *cat)
{
    run r;
    int at = replay(&r, steps, n, NULL, NULL);
    bool same = at >= 0 && strcmp(r.cat, cat) == 0;
    run_end(&r);
    return same;
}

/* Delta debugging: drop chunks of steps (halving the chunk size when none can go) while the
 * mismatch (of the same kind) still shows. Returns the new count. */
static int shrink(step *steps, int n, const char *cat, unsigned *trials)
{
    step *trial = malloc((size_t)(n ? n : 1) * sizeof *trial);
    for (int chunk = n / 2 > 0 ? n / 2 : 1; chunk >= 1;) {
        bool progress = false;
        for (int at = 0; at < n;) {
            int len = at + chunk > n ? n - at : chunk, k = 0;
            for (int i = 0; i < n; i++)
                if (i < at || i >= at + len) trial[k++] = steps[i];
            (*trials)++;
            if (k > 0 && reproduces(trial, k, cat)) {
                memcpy(steps, trial, (size_t)k * sizeof *steps);
                n = k;
                progress = true;
            } else {
                at += len;
            }
        }
        if (!progress) {
            if (chunk == 1) break;
            chunk /= 2;
        }
    }
    free(trial);
    return n;
}

static void report_failure(unsigned seed, const step *steps, int failed, const run *r)
{
    char what[256];
    fprintf(stderr, "merge model: MISMATCH, seed %u (OG_MODEL_SEED=%u), step %d (%s)\n%s", seed,
            seed, failed + 1, r->cat, r->msg);
    fprintf(stderr, "merge model: the steps:\n");
    for (int i = 0; i <= failed; i++) {
        step_text(&steps[i], what, sizeof what);
        fprintf(stderr, "  %3d %s\n", i + 1, what);
    }
    int n = failed + 1;
    step *list = malloc((size_t)n * sizeof *list);
    memcpy(list, steps, (size_t)n * sizeof *list);
    unsigned trials = 0;
    char cat[32];
    snprintf(cat, sizeof cat, "%s", r->cat);
    n = shrink(list, n, cat, &trials);
    fprintf(stderr, "merge model: shrunk to %d step%s in %u trials:\n", n, n == 1 ? "" : "s",
            trials);
    for (int i = 0; i < n; i++) {
        step_text(&list[i], what, sizeof what);
        fprintf(stderr, "  %3d %s\n", i + 1, what);
    }
    char *text = NULL;
    size_t len = 0;
    FILE *scn = open_memstream(&text, &len);
    fprintf(scn,
            "# merge model, seed %u (OG_MODEL_SEED=%u), shrunk from %d to %d steps, "
            "mismatch: %s.\n# The expectations are the model's (docs/merge.md).\n",
            seed, seed, failed + 1, n, cat);
    run rr;
    int at = replay(&rr, list, n, NULL, scn);
    fflush(scn);
    if (at >= 0) {
        fprintf(stderr, "merge model: the shrunk run, step %d: %s\n%s", at + 1, rr.cat, rr.msg);
        /* what the model holds after the failing step, for every branch */
        for (int b = 0; b < NB; b++)
            if (rr.m.exists[b]) scn_expect(&rr, b);
    } else
        fprintf(stderr, "merge model: the shrunk run did not fail again (flaky?)\n");
    run_end(&rr);
    fclose(scn);
    fprintf(stderr, "merge model: as a tests/merge/NAME.scn scenario:\n%s", text);
    const char *out = getenv("OG_MODEL_SCN");
    if (out && *out) {
        test_write_file(out, text, len);
        fprintf(stderr, "merge model: written to %s\n", out);
    }
    free(text);
    free(list);
}

static unsigned env_num(const char *name, unsigned dflt)
{
    const char *v = getenv(name);
    return v && *v ? (unsigned)strtoul(v, NULL, 10) : dflt;
}

/* Seeds whose mismatch is a known, reported implementation bug (kept out of `make test`). */
static const unsigned KNOWN_BAD[] = {0};

static void test_model(void **cm)
{
    (void)cm;
    g_inject = (int)env_num("OG_MODEL_INJECT_BUG", 0);
    unsigned one = env_num("OG_MODEL_SEED", 0);
    unsigned seeds = one ? 1 : env_num("OG_MODEL_SEEDS", 200);
    unsigned nsteps = env_num("OG_MODEL_STEPS", 30);
    stats st;
    memset(&st, 0, sizeof st);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    step *steps = malloc((nsteps ? nsteps : 1) * sizeof *steps);
    for (unsigned k = 0; k < seeds; k++) {
        unsigned seed = one ? one : k + 1;
        bool known = false;
        for (size_t q = 0; q < sizeof KNOWN_BAD / sizeof KNOWN_BAD[0]; q++)
            known |= KNOWN_BAD[q] == seed;
        if (known && !one) continue;
        rng g = {seed * 0x2545F4914F6CDD1Dull + 1};
        run r;
        run_begin(&r, &st, NULL);
        st.seeds++;
        int next_edge = PRELUDE_EDGES;
        int max_b = 2 + pick(&g, NB - 1); /* some seeds keep to few branches: deeper ones */
        for (unsigned i = 0; i < nsteps; i++) {
            steps[i] = gen_step(&g, &r.m, &next_edge, max_b);
            if (!exec_step(&r, (int)i, &steps[i])) {
                r.failed = (int)i;
                break;
            }
        }
        if (r.failed >= 0) {
            int failed = r.failed;
            char cat[32];
            snprintf(cat, sizeof cat, "%s", r.cat);
            report_failure(seed, steps, failed, &r);
            run_end(&r);
            free(steps);
            fail_msg("merge model: seed %u failed at step %d (%s)", seed, failed + 1, cat);
        }
        run_end(&r);
    }
    free(steps);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    print_message(
        "merge model: %lu seeds x %u steps (%lu run, %lu skipped) in %.1f s: %lu writes (%lu "
        "no-op, %lu refused), %lu branches, %lu reads; %lu merges: %lu already_up_to_date, %lu "
        "fast_forward, %lu merged, %lu with conflicts (%lu divergent_insert, %lu "
        "divergent_update, %lu delete_vs_update, %lu orphan_edge), %lu criss-cross refusals; "
        "%lu maintenance commits\n",
        st.seeds, nsteps, st.steps, st.skipped, secs, st.writes, st.noops, st.refused_writes,
        st.branches, st.reads, st.merges, st.up_to_date, st.fast_forward, st.merged, st.conflicted,
        st.kinds[K_DIV_INSERT], st.kinds[K_DIV_UPDATE], st.kinds[K_DEL_VS_UPD], st.kinds[K_ORPHAN],
        st.crisscross, st.maintenance);
}

int main(void)
{
    /* every commit fsyncs; a tmpfs makes that free (unless TMPDIR says where to go) */
    struct stat sb;
    const char *tmp = getenv("TMPDIR");
    if ((!tmp || !*tmp) && stat("/dev/shm", &sb) == 0 && S_ISDIR(sb.st_mode))
        setenv("TMPDIR", "/dev/shm", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
