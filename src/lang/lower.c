/* Lowering of checked .gq queries to the IR of ir.h (see checker.h). Scan order is chosen
 * greedily: expand from bound variables, push predicates into scans, filter as soon as every
 * variable of a predicate is bound, anti-join for not {}. Mutations become one operator each. */
#include "lang/checker.h"

#include "core/alloc.h"
#include "core/error.h"

#include <stdlib.h>

typedef struct lowerer {
    const lang_catalog *cat;
    core_arena *a;
    lang_ir_query *ir;
    int *bound; /* per slot: an emitted operator binds it */
    int *reads, *writes;
    size_t cap_reads, cap_writes;
    int oom;
} lowerer;

static void *push(lowerer *lw, void **arr, size_t *n, size_t *cap, size_t size)
{
    void *e = lang_vec_push(lw->a, arr, n, cap, size);
    if (!e) lw->oom = 1;
    return e;
}

static void add_set(lowerer *lw, int **arr, size_t *n, size_t *cap, int v)
{
    for (size_t i = 0; i < *n; i++)
        if ((*arr)[i] == v) return;
    int *e = push(lw, (void **)arr, n, cap, sizeof(int));
    if (e) *e = v;
}

static lang_ir_op *emit(lowerer *lw, lang_ir_pipeline *pl, size_t *cap, int kind)
{
    lang_ir_op *op = push(lw, (void **)&pl->ops, &pl->n_ops, cap, sizeof *op);
    if (op) {
        op->kind = kind;
        op->slot = op->src_slot = op->dst_slot = op->edge_slot = op->type = -1;
    }
    return op;
}

/* ---- match blocks ---------------------------------------------------------------------------- */

static int lower_block(lowerer *lw, const lang_checked_block *b, lang_ir_pipeline *pl,
                       size_t *cap_ops)
{
    const lang_checked_clause *pd = b->clauses;
    size_t n = b->n;
    unsigned char *done = core_arena_calloc(lw->a, n ? n : 1, 1);
    if (!done) {
        lw->oom = 1;
        return -1;
    }
    /* bindings of variables bound outside this block (a not {} body naming an outer
     * variable) filter right away */
    for (size_t i = 0; i < n; i++) {
        if (pd[i].kind != GQ_C_BIND || !lw->bound[pd[i].src_slot]) continue;
        done[i] = 1;
        if (!pd[i].n_preds) continue;
        lang_ir_op *f = emit(lw, pl, cap_ops, LANG_IR_FILTER);
        if (!f) return -1;
        f->preds = pd[i].preds;
        f->n_preds = pd[i].n_preds;
    }
    for (;;) {
        int progress = 0;
        for (size_t i = 0; i < n; i++) {
            const lang_checked_clause *p = &pd[i];
            if (done[i] || p->kind != GQ_C_TRAV) continue;
            int sb = lw->bound[p->src_slot], db = lw->bound[p->dst_slot];
            if (!sb && !db) continue;
            lang_ir_op *op = emit(lw, pl, cap_ops, LANG_IR_EXPAND);
            if (!op) return -1;
            op->type = p->edge_type;
            op->type_id = lw->cat->types[p->edge_type].id;
            op->edge_slot = p->edge_slot;
            op->min_hops = (uint32_t)p->min_hops;
            op->max_hops = (uint32_t)p->max_hops;
            if (sb) {
                op->src_slot = p->src_slot;
                op->dst_slot = p->dst_slot;
                op->direction = p->undirected ? LANG_IR_BOTH : LANG_IR_OUT;
                op->dst_bound = db;
            } else {
                op->src_slot = p->dst_slot;
                op->dst_slot = p->src_slot;
                op->direction = p->undirected ? LANG_IR_BOTH : LANG_IR_IN;
            }
            int newly = op->dst_bound ? -1 : op->dst_slot;
            lw->bound[op->dst_slot] = 1;
            if (p->edge_slot >= 0) lw->bound[p->edge_slot] = 1;
            add_set(lw, &lw->reads, &lw->ir->n_reads, &lw->cap_reads, p->edge_type);
            done[i] = 1;
            progress = 1;
            /* binding predicates of the newly bound node become a filter */
            for (size_t k = 0; newly >= 0 && k < n; k++) {
                if (pd[k].kind != GQ_C_BIND || done[k] || pd[k].src_slot != newly) continue;
                done[k] = 1;
                if (!pd[k].n_preds) continue;
                lang_ir_op *f = emit(lw, pl, cap_ops, LANG_IR_FILTER);
                if (!f) return -1;
                f->preds = pd[k].preds;
                f->n_preds = pd[k].n_preds;
            }
        }
        for (size_t i = 0; i < n; i++) {
            const lang_checked_clause *p = &pd[i];
            if (done[i] || (p->kind != GQ_C_FILTER && p->kind != GQ_C_CALL)) continue;
            int all = 1;
            for (size_t k = 0; k < p->n_uses; k++)
                all &= lw->bound[p->uses[k]];
            if (!all) continue;
            lang_ir_op *f = emit(lw, pl, cap_ops, LANG_IR_FILTER);
            if (!f) return -1;
            f->preds = p->pred;
            f->n_preds = 1;
            done[i] = 1;
            progress = 1;
        }
        if (progress) continue;
        /* scan the first unbound node variable of this block */
        int pick = -1;
        for (size_t s = b->first_slot; s < b->own_end; s++)
            if (!lw->bound[s] && lw->ir->slots[s].kind == LANG_IR_SLOT_NODE) {
                pick = (int)s;
                break;
            }
        if (pick < 0) break;
        lang_ir_op *op = emit(lw, pl, cap_ops, LANG_IR_NODE_SCAN);
        if (!op) return -1;
        op->slot = pick;
        op->type = lw->ir->slots[pick].type;
        op->type_id = lw->ir->slots[pick].type_id;
        size_t pcap = 0;
        for (size_t k = 0; k < n; k++) {
            const lang_checked_clause *p = &pd[k];
            if (done[k]) continue;
            if (p->kind == GQ_C_BIND && p->src_slot == pick) {
                for (size_t j = 0; j < p->n_preds; j++) {
                    lang_ir_pred *d = push(lw, (void **)&op->preds, &op->n_preds, &pcap, sizeof *d);
                    if (!d) return -1;
                    *d = p->preds[j];
                }
                done[k] = 1;
            } else if (p->kind == GQ_C_FILTER && p->n_uses == 1 && p->uses[0] == pick &&
                       p->pred->lhs.kind == LANG_IR_X_PROP && p->pred->rhs.slot < 0 &&
                       p->pred->rhs.kind != LANG_IR_X_CALL) {
                lang_ir_pred *d = push(lw, (void **)&op->preds, &op->n_preds, &pcap, sizeof *d);
                if (!d) return -1;
                *d = *p->pred;
                done[k] = 1;
            }
        }
        lw->bound[pick] = 1;
    }
    for (size_t s = b->first_slot; s < b->own_end; s++)
        if (lw->ir->slots[s].kind == LANG_IR_SLOT_NODE)
            add_set(lw, &lw->reads, &lw->ir->n_reads, &lw->cap_reads, lw->ir->slots[s].type);
    /* not {} blocks, correlated on everything bound so far */
    for (size_t i = 0; i < n; i++) {
        if (pd[i].kind != GQ_C_NOT) continue;
        if (!emit(lw, pl, cap_ops, LANG_IR_ANTI_JOIN)) return -1;
        const lang_checked_block *body = pd[i].body;
        size_t sub_cap = 0;
        lang_ir_pipeline sub = {NULL, 0};
        int rc = lower_block(lw, body, &sub, &sub_cap);
        /* the anti-join's own slots never reach an output row */
        for (size_t s = body->first_slot; s < body->end_slot; s++)
            lw->bound[s] = 0;
        /* the body has its own array, so the anti-join is still the last op of pl */
        pl->ops[pl->n_ops - 1].sub = sub;
        if (rc) return -1;
    }
    return 0;
}

/* ---- aggregate / order / limit / project --------------------------------------------------- */

static int lower_read_tail(lowerer *lw, const lang_checked_return *r, lang_ir_pipeline *pl,
                           size_t *cap_ops)
{
    const lang_ir_query *ir = lw->ir;
    if (r->has_agg) {
        if (!emit(lw, pl, cap_ops, LANG_IR_AGGREGATE)) return -1;
    }
    if (r->n_keys || r->has_agg) {
        lang_ir_op *op = emit(lw, pl, cap_ops, LANG_IR_ORDER);
        if (!op) return -1;
        op->keys = r->keys;
        op->n_keys = r->n_keys;
        if (r->has_agg) {
            size_t tcap = 0;
            for (size_t c = 0; c < ir->n_columns; c++)
                if (ir->columns[c].agg == LANG_IR_AGG_NONE) {
                    int *x =
                        push(lw, (void **)&op->tie_columns, &op->n_tie_columns, &tcap, sizeof(int));
                    if (!x) return -1;
                    *x = (int)c;
                }
        } else {
            size_t tcap = 0;
            for (size_t s = 0; s < ir->n_slots; s++) {
                if (!lw->bound[s]) continue; /* slots inside not{} never reach the output */
                int *x = push(lw, (void **)&op->tie_slots, &op->n_tie_slots, &tcap, sizeof(int));
                if (!x) return -1;
                *x = (int)s;
            }
        }
    }
    if (r->has_limit) {
        lang_ir_op *op = emit(lw, pl, cap_ops, LANG_IR_LIMIT);
        if (!op) return -1;
        op->count = r->limit;
    }
    if (!r->has_agg && !emit(lw, pl, cap_ops, LANG_IR_PROJECT)) return -1;
    return 0;
}

/* ---- mutations ---------------------------------------------------------------------------------
 */

static int lower_mutation(lowerer *lw, const lang_checked_mut *m, lang_ir_pipeline *pl,
                          size_t *cap_ops)
{
    int t = m->type;
    const lang_typedef *td = &lw->cat->types[t];
    lang_ir_op *op = emit(lw, pl, cap_ops,
                          m->kind == GQ_M_INSERT
                              ? (td->kind == LANG_NODE ? LANG_IR_INSERT_NODE : LANG_IR_INSERT_EDGE)
                          : m->kind == GQ_M_UPDATE ? LANG_IR_UPDATE
                                                   : LANG_IR_DELETE);
    if (!op) return -1;
    op->type = t;
    op->type_id = td->id;
    op->pos = m->pos;
    op->upsert = m->kind == GQ_M_INSERT && td->kind == LANG_NODE && td->n_key > 0;
    op->assigns = m->assigns;
    op->n_assigns = m->n_assigns;
    op->from = m->from;
    op->to = m->to;
    if (m->where) {
        op->preds = m->where;
        op->n_preds = 1;
    }
    add_set(lw, &lw->writes, &lw->ir->n_writes, &lw->cap_writes, t);
    if (m->kind != GQ_M_INSERT) add_set(lw, &lw->reads, &lw->ir->n_reads, &lw->cap_reads, t);
    if (td->kind == LANG_EDGE) {
        add_set(lw, &lw->reads, &lw->ir->n_reads, &lw->cap_reads, td->from);
        add_set(lw, &lw->reads, &lw->ir->n_reads, &lw->cap_reads, td->to);
    }
    if (m->kind == GQ_M_DELETE && td->kind == LANG_NODE) /* deleting a node removes its edges */
        for (size_t i = 0; i < lw->cat->n_types; i++) {
            const lang_typedef *e = &lw->cat->types[i];
            if (e->kind == LANG_EDGE && (e->from == t || e->to == t)) {
                add_set(lw, &lw->writes, &lw->ir->n_writes, &lw->cap_writes, (int)i);
                add_set(lw, &lw->reads, &lw->ir->n_reads, &lw->cap_reads, (int)i);
            }
        }
    return 0;
}

/* ---- driver --------------------------------------------------------------------------------- */

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return x < y ? -1 : x > y;
}

int lang_lower_query(core_arena *a, const lang_catalog *cat, const lang_checked_query *cq,
                     lang_ir_query *ir)
{
    lowerer lw = {cat, a, ir, NULL, NULL, NULL, 0, 0, 0};
    lw.bound = core_arena_calloc(a, ir->n_slots ? ir->n_slots : 1, sizeof *lw.bound);
    if (!lw.bound) return core_err_nomem();
    size_t cap_ops = 0;
    int rc = 0;
    if (!ir->is_mutation) {
        rc = lower_block(&lw, &cq->match, &ir->pipeline, &cap_ops);
        if (!rc) rc = lower_read_tail(&lw, &cq->ret, &ir->pipeline, &cap_ops);
    } else {
        for (size_t i = 0; i < cq->n_muts && !rc; i++)
            rc = lower_mutation(&lw, &cq->muts[i], &ir->pipeline, &cap_ops);
    }
    if (rc || lw.oom) return core_err_nomem();
    if (ir->n_reads) qsort(lw.reads, ir->n_reads, sizeof(int), cmp_int);
    if (ir->n_writes) qsort(lw.writes, ir->n_writes, sizeof(int), cmp_int);
    ir->reads = lw.reads;
    ir->writes = lw.writes;
    return 0;
}
