/* Merge, commit level: conflict lists, outcome names and the merge base in the commit DAG
 * (graph/merge.h). */
#include "graph/merge.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/hmap.h"

#include <stdint.h>
#include <stdlib.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- Conflicts ----------------------------------------------------------------------------- */

static const char *const KIND_NAMES[GRAPH_CONFLICT_KIND_COUNT_] = {
    [GRAPH_CONFLICT_DIVERGENT_INSERT] = "divergent_insert",
    [GRAPH_CONFLICT_DIVERGENT_UPDATE] = "divergent_update",
    [GRAPH_CONFLICT_DELETE_VS_UPDATE] = "delete_vs_update",
    [GRAPH_CONFLICT_ORPHAN_EDGE] = "orphan_edge",
    [GRAPH_CONFLICT_UNIQUE_VIOLATION] = "unique_violation",
    [GRAPH_CONFLICT_CARDINALITY_VIOLATION] = "cardinality_violation",
    [GRAPH_CONFLICT_VALUE_CONSTRAINT_VIOLATION] = "value_constraint_violation",
};

const char *graph_conflict_kind_name(int kind)
{
    return kind > 0 && kind < GRAPH_CONFLICT_KIND_COUNT_ ? KIND_NAMES[kind] : NULL;
}

int graph_conflict_kind_parse(const char *name)
{
    for (int k = 1; name && k < GRAPH_CONFLICT_KIND_COUNT_; k++)
        if (strcmp(KIND_NAMES[k], name) == 0) return k;
    return 0;
}

int graph_conflicts_add(graph_conflicts *c, int kind, const char *type, const char *id,
                        const char *fmt, ...)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 8;
        graph_conflict *items = core_realloc(c->items, cap * sizeof *items);
        if (!items) return core_err_nomem();
        c->items = items;
        c->cap = cap;
    }
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    graph_conflict *x = &c->items[c->n];
    memset(x, 0, sizeof *x);
    x->kind = kind;
    x->type = core_strdup(type ? type : "");
    x->id = id ? core_strdup(id) : NULL;
    x->message = core_strdup(msg);
    if (!x->type || (id && !x->id) || !x->message) {
        core_free(x->type);
        core_free(x->id);
        core_free(x->message);
        return core_err_nomem();
    }
    c->n++;
    return 0;
}

void graph_conflicts_clear(graph_conflicts *c)
{
    for (size_t i = 0; i < c->n; i++) {
        core_free(c->items[i].type);
        core_free(c->items[i].id);
        core_free(c->items[i].message);
    }
    core_free(c->items);
    memset(c, 0, sizeof *c);
}

const char *graph_merge_outcome_name(int outcome)
{
    switch (outcome) {
    case GRAPH_MERGE_UP_TO_DATE:
        return "already_up_to_date";
    case GRAPH_MERGE_FAST_FORWARD:
        return "fast_forward";
    case GRAPH_MERGE_MERGED:
        return "merged";
    default:
        return NULL;
    }
}

/* ---- Merge base -----------------------------------------------------------------------------
 * Three walks over the DAG, each linear in the commits it reaches: the ancestors of the source
 * head (itself included), the ancestors of the target head that are also among those (the
 * common ancestors), then everything strictly below a common ancestor. The best common
 * ancestors are the common ones no walk from below reached. */

#define MARK_SRC 1u   /* an ancestor of the source head (or it) */
#define MARK_TGT 2u   /* an ancestor of the target head (or it) */
#define MARK_BELOW 4u /* strictly below a common ancestor */

#define CHUNK 256

typedef struct dag_node {
    char id[GRAPH_ID_LEN + 1]; /* the map's key: nodes never move (chunks) */
    unsigned marks;
    bool unknown; /* the lookup does not know its row: its ancestors cannot be followed */
} dag_node;

typedef struct dag {
    core_bmap ix; /* id -> node number */
    dag_node **chunks;
    size_t n, n_chunks;
    graph_commit_lookup_fn lookup;
    void *arg;
    size_t visited;
    char (*queue)[GRAPH_ID_LEN + 1];
    size_t qn, qcap;
} dag;

static dag_node *node_at(const dag *d, size_t i)
{
    return &d->chunks[i / CHUNK][i % CHUNK];
}

/* The node of id, added unmarked when new. */
static int node_get(dag *d, const char *id, dag_node **out)
{
    size_t len = strlen(id);
    core_bmap_entry *e = core_bmap_find(&d->ix, id, len);
    if (e) {
        *out = node_at(d, (size_t)e->val);
        return 0;
    }
    if (d->n == d->n_chunks * CHUNK) {
        dag_node **c = core_realloc(d->chunks, (d->n_chunks + 1) * sizeof *c);
        if (!c) return core_err_nomem();
        d->chunks = c;
        if (!(c[d->n_chunks] = core_calloc(CHUNK, sizeof **c))) return core_err_nomem();
        d->n_chunks++;
    }
    dag_node *nd = node_at(d, d->n);
    snprintf(nd->id, sizeof nd->id, "%s", id);
    int fresh;
    int rc = core_bmap_put(&d->ix, nd->id, strlen(nd->id), &e, &fresh);
    if (rc) return rc;
    e->val = (int64_t)d->n++;
    *out = nd;
    return 0;
}

static int push(dag *d, const char *id)
{
    if (!id || !*id) return 0;
    if (d->qn == d->qcap) {
        size_t cap = d->qcap ? 2 * d->qcap : 64;
        void *q = core_realloc(d->queue, cap * sizeof *d->queue);
        if (!q) return core_err_nomem();
        d->queue = q;
        d->qcap = cap;
    }
    snprintf(d->queue[d->qn++], GRAPH_ID_LEN + 1, "%s", id);
    return 0;
}

/* Push the parent and merged parent of commit nd (none when the lookup does not know it). */
static int push_parents(dag *d, dag_node *nd)
{
    const graph_commit *c = NULL;
    d->visited++;
    int rc = d->lookup(d->arg, nd->id, &c);
    if (rc == 0 && !c) nd->unknown = true;
    if (rc != 0 || !c) return rc;
    /* copies: the queue may move, and the commit may be the lookup's scratch */
    char parent[GRAPH_ID_LEN + 1], merged[GRAPH_ID_LEN + 1];
    snprintf(parent, sizeof parent, "%s", c->parent);
    snprintf(merged, sizeof merged, "%s", c->merged_parent);
    rc = push(d, parent);
    if (rc == 0) rc = push(d, merged);
    return rc;
}

/* Walk from the queued ids through parents and merged parents, setting `mark` on each commit
 * reached (a commit marked already is not walked again). */
static int walk(dag *d, unsigned mark)
{
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < d->qn; i++) {
        char id[GRAPH_ID_LEN + 1];
        snprintf(id, sizeof id, "%s", d->queue[i]);
        dag_node *nd = NULL;
        if ((rc = node_get(d, id, &nd)) != 0) break;
        if (nd->marks & mark) continue;
        nd->marks |= mark;
        rc = push_parents(d, nd);
    }
    d->qn = 0;
    return rc;
}

static int cmp_id(const void *a, const void *b)
{
    return strcmp(a, b);
}

static void dag_free(dag *d)
{
    for (size_t i = 0; i < d->n_chunks; i++)
        core_free(d->chunks[i]);
    core_free(d->chunks);
    core_free(d->queue);
    core_bmap_free(&d->ix);
}

int graph_merge_base(const char *src_head, const char *tgt_head, graph_commit_lookup_fn lookup,
                     void *arg, graph_merge_base_result *out)
{
    memset(out, 0, sizeof *out);
    if (!src_head || !*src_head || !tgt_head || !*tgt_head)
        return core_err(OG_E_BAD_REQUEST, "merge base: a branch without a head commit");
    if (strcmp(src_head, tgt_head) == 0) {
        out->outcome = GRAPH_MERGE_UP_TO_DATE;
        snprintf(out->base, sizeof out->base, "%s", src_head);
        return 0;
    }
    dag d = {.lookup = lookup, .arg = arg};
    int rc = push(&d, src_head);
    if (rc == 0) rc = walk(&d, MARK_SRC);
    if (rc == 0) rc = push(&d, tgt_head);
    if (rc == 0) rc = walk(&d, MARK_TGT);
    /* below every common ancestor: everything its parents reach */
    size_t n = d.n;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        dag_node *nd = node_at(&d, i);
        if ((nd->marks & (MARK_SRC | MARK_TGT)) == (MARK_SRC | MARK_TGT)) rc = push_parents(&d, nd);
    }
    if (rc == 0) rc = walk(&d, MARK_BELOW);
    char(*best)[GRAPH_ID_LEN + 1] = NULL;
    size_t nb = 0;
    bool unknown = false;
    for (size_t i = 0; rc == 0 && i < d.n; i++) {
        dag_node *nd = node_at(&d, i);
        if ((nd->marks & (MARK_SRC | MARK_TGT)) != (MARK_SRC | MARK_TGT) ||
            (nd->marks & MARK_BELOW))
            continue;
        void *p = core_realloc(best, (nb + 1) * sizeof *best);
        if (!p) {
            rc = core_err_nomem();
            break;
        }
        best = p;
        memcpy(best[nb++], nd->id, sizeof *best);
        unknown |= nd->unknown;
    }
    out->visited = d.visited;
    if (rc == 0 && nb == 0) {
        rc = core_err(OG_E_CONFLICT,
                      "the heads %s and %s have no common ancestor: unrelated histories cannot "
                      "be merged",
                      src_head, tgt_head);
        core_err_detail(CORE_ERR_MEMBER, "merge_base");
    } else if (rc == 0 && nb > 1) {
        qsort(best, nb, sizeof *best, cmp_id);
        char names[400];
        size_t off = 0;
        for (size_t i = 0; i < nb && off + GRAPH_ID_LEN + 8 < sizeof names; i++)
            off +=
                (size_t)snprintf(names + off, sizeof names - off, "%s%s", i ? ", " : "", best[i]);
        if (unknown)
            rc = core_err(OG_E_CONFLICT,
                          "the merge base of %s and %s cannot be determined: %zu candidate "
                          "commits (%s%s), and the history of one of them is gone with the "
                          "branch it was made on",
                          src_head, tgt_head, nb, names,
                          off + GRAPH_ID_LEN + 8 >= sizeof names ? ", ..." : "");
        else
            rc = core_err(OG_E_CONFLICT,
                          "criss-cross history: the heads %s and %s have %zu best common ancestors "
                          "(%s%s); merge one branch into the other first so that one base remains",
                          src_head, tgt_head, nb, names,
                          off + GRAPH_ID_LEN + 8 >= sizeof names ? ", ..." : "");
        core_err_detail(CORE_ERR_MEMBER, "merge_base");
    } else if (rc == 0) {
        snprintf(out->base, sizeof out->base, "%s", best[0]);
        if (strcmp(out->base, src_head) == 0)
            out->outcome = GRAPH_MERGE_UP_TO_DATE;
        else if (strcmp(out->base, tgt_head) == 0)
            out->outcome = GRAPH_MERGE_FAST_FORWARD;
        else
            out->outcome = GRAPH_MERGE_MERGED;
    }
    core_free(best);
    dag_free(&d);
    return rc;
}
