/* The read-query executor: runs an IR read pipeline over rows of slot bindings (one int32
 * table row per slot, plus a tag used by anti-joins), reading node and edge tables through
 * the cache, and builds the result as Arrow batches. Semantics are summarised in query.h. */
#include "exec/exec_internal.h"
#include "exec/request.h"

#include "arrow/arrow_json.h"
#include "core/alloc.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/hash.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define EXEC_BATCH_ROWS 65536

/* ---- values ---------------------------------------------------------------------------------- */

enum { XV_NULL = 0, XV_BOOL, XV_INT, XV_UINT, XV_F, XV_STR, XV_ALIST, XV_VLIST };

/* One evaluated value; strings and lists point into arrays or the IR (never copied). */
typedef struct xv {
    int k;
    int64_t i;
    uint64_t u;
    double f;
    const uint8_t *s;
    size_t n;
    const arrow_array *la; /* XV_ALIST: items la[lo, hi) */
    int64_t lo, hi;
    const lang_value *items; /* XV_VLIST: items[n] */
} xv;

static xv xv_from_value(const lang_value *v)
{
    xv r;
    memset(&r, 0, sizeof r);
    switch (v->kind) {
    case LANG_V_BOOL:
        r.k = XV_BOOL;
        r.i = v->u != 0;
        break;
    case LANG_V_INT:
        if (v->neg) {
            r.k = XV_INT;
            r.i = v->u > (uint64_t)INT64_MAX ? INT64_MIN : -(int64_t)v->u;
        } else if (v->u > (uint64_t)INT64_MAX) {
            r.k = XV_UINT;
            r.u = v->u;
        } else {
            r.k = XV_INT;
            r.i = (int64_t)v->u;
        }
        break;
    case LANG_V_FLOAT:
        r.k = XV_F;
        r.f = v->f;
        break;
    case LANG_V_STRING:
        r.k = XV_STR;
        r.s = (const uint8_t *)v->s;
        r.n = strlen(v->s);
        break;
    case LANG_V_DATE:
    case LANG_V_DATETIME:
        r.k = XV_INT;
        r.i = v->i;
        if (!v->checked && v->s &&
            (v->kind == LANG_V_DATE ? lang_parse_date(v->s, &r.i)
                                    : lang_parse_datetime(v->s, &r.i)))
            r.k = XV_NULL;
        break;
    case LANG_V_LIST:
        r.k = XV_VLIST;
        r.items = v->items;
        r.n = v->n;
        break;
    default:
        break;
    }
    return r;
}

static xv xv_from_array(const arrow_array *a, int64_t i)
{
    xv r;
    memset(&r, 0, sizeof r);
    if (i < 0 || !arrow_array_is_valid(a, i)) return r;
    switch (a->type.id) {
    case ARROW_BOOL:
        r.k = XV_BOOL;
        r.i = arrow_array_get_bool(a, i);
        break;
    case ARROW_INT32:
    case ARROW_INT64:
    case ARROW_DATE32:
    case ARROW_DATE64:
    case ARROW_TIMESTAMP:
        r.k = XV_INT;
        r.i = arrow_array_get_int(a, i);
        break;
    case ARROW_UINT32:
    case ARROW_UINT64:
        r.u = arrow_array_get_uint(a, i);
        if (r.u <= (uint64_t)INT64_MAX) {
            r.k = XV_INT;
            r.i = (int64_t)r.u;
        } else {
            r.k = XV_UINT;
        }
        break;
    case ARROW_FLOAT32:
    case ARROW_FLOAT64:
        r.k = XV_F;
        r.f = arrow_array_get_double(a, i);
        break;
    case ARROW_UTF8:
    case ARROW_LARGE_UTF8:
    case ARROW_BINARY:
    case ARROW_LARGE_BINARY:
        r.k = XV_STR;
        r.s = arrow_array_get_bytes(a, i, &r.n);
        break;
    case ARROW_LIST:
    case ARROW_FIXED_SIZE_LIST:
        r.k = XV_ALIST;
        r.la = a->children[0];
        arrow_array_list_range(a, i, &r.lo, &r.hi);
        r.n = (size_t)(r.hi - r.lo);
        break;
    default:
        break;
    }
    return r;
}

static xv xv_item(const xv *l, size_t j)
{
    if (l->k == XV_ALIST) return xv_from_array(l->la, l->lo + (int64_t)j);
    return xv_from_value(&l->items[j]);
}

static int cmp_num(const xv *a, const xv *b)
{
    if (a->k == XV_F || b->k == XV_F) {
        double x = a->k == XV_F ? a->f : a->k == XV_UINT ? (double)a->u : (double)a->i;
        double y = b->k == XV_F ? b->f : b->k == XV_UINT ? (double)b->u : (double)b->i;
        if (isnan(x) || isnan(y)) return isnan(x) - isnan(y); /* NaN after every number */
        return (x > y) - (x < y);
    }
    if (a->k == XV_UINT || b->k == XV_UINT) {
        if (a->k != XV_UINT)
            return a->i < 0 ? -1 : ((uint64_t)a->i > b->u) - ((uint64_t)a->i < b->u);
        if (b->k != XV_UINT)
            return b->i < 0 ? 1 : (a->u > (uint64_t)b->i) - (a->u < (uint64_t)b->i);
        return (a->u > b->u) - (a->u < b->u);
    }
    return (a->i > b->i) - (a->i < b->i);
}

static int is_num(int k)
{
    return k == XV_INT || k == XV_UINT || k == XV_F;
}
static int is_list(int k)
{
    return k == XV_ALIST || k == XV_VLIST;
}

/* Total order of two values: NULL first, then by kind, then by value. */
static int xv_cmp(const xv *a, const xv *b)
{
    if (a->k == XV_NULL || b->k == XV_NULL) return (a->k != XV_NULL) - (b->k != XV_NULL);
    if (is_num(a->k) && is_num(b->k)) return cmp_num(a, b);
    if (a->k == XV_STR && b->k == XV_STR) {
        size_t n = a->n < b->n ? a->n : b->n;
        int c = n ? memcmp(a->s, b->s, n) : 0;
        if (c) return c < 0 ? -1 : 1;
        return (a->n > b->n) - (a->n < b->n);
    }
    if (a->k == XV_BOOL && b->k == XV_BOOL) return (a->i > b->i) - (a->i < b->i);
    if (is_list(a->k) && is_list(b->k)) {
        size_t n = a->n < b->n ? a->n : b->n;
        for (size_t j = 0; j < n; j++) {
            xv x = xv_item(a, j), y = xv_item(b, j);
            int c = xv_cmp(&x, &y);
            if (c) return c;
        }
        return (a->n > b->n) - (a->n < b->n);
    }
    return (a->k > b->k) - (a->k < b->k);
}

static int pred_holds(int op, const xv *l, const xv *r)
{
    if (l->k == XV_NULL || r->k == XV_NULL) return 0;
    switch (op) {
    case GQ_OP_CONTAINS:
        if (is_list(l->k)) {
            for (size_t j = 0; j < l->n; j++) {
                xv it = xv_item(l, j);
                if (it.k != XV_NULL && xv_cmp(&it, r) == 0) return 1;
            }
            return 0;
        }
        if (l->k == XV_STR && r->k == XV_STR)
            return r->n == 0 || (r->n <= l->n && memmem(l->s, l->n, r->s, r->n) != NULL);
        return 0;
    case GQ_OP_STARTS_WITH:
        return l->k == XV_STR && r->k == XV_STR && r->n <= l->n &&
               (r->n == 0 || memcmp(l->s, r->s, r->n) == 0);
    default:
        break;
    }
    int c = xv_cmp(l, r);
    switch (op) {
    case GQ_OP_EQ:
        return c == 0;
    case GQ_OP_NE:
        return c != 0;
    case GQ_OP_LT:
        return c < 0;
    case GQ_OP_GT:
        return c > 0;
    case GQ_OP_LE:
        return c <= 0;
    case GQ_OP_GE:
        return c >= 0;
    default:
        return 0;
    }
}

int exec_pred_holds_cell(int op, const arrow_array *a, int64_t i, const lang_value *rhs)
{
    xv l = xv_from_array(a, i), r = xv_from_value(rhs);
    return pred_holds(op, &l, &r);
}

/* ---- context --------------------------------------------------------------------------------- */

typedef struct xslot {
    exec_table *t;
    const lang_typedef *td;
    const arrow_array **props; /* per property index, loaded on first use */
} xslot;

typedef struct rowset {
    int32_t *r; /* n rows of w int32: slot rows, then the tag */
    size_t n, cap, w;
} rowset;

typedef struct xctx {
    const lang_catalog *cat;
    const graph_snapshot *snap;
    store *s;
    const lang_ir_query *q;
    const exec_params *p;
    exec_cache *cache;
    int64_t now_ms;
    xslot *slots;
    size_t w;
    int rc;              /* sticky first error of evaluation */
    exec_table **subset; /* per type: the cold run's subset tables (exec_subset.c), or NULL */
} xctx;

static int rs_reserve(rowset *rs, size_t more)
{
    size_t need;
    if (core_size_add(&need, rs->n, more)) return core_err(OG_E_RESOURCE_LIMIT, "too many rows");
    if (need <= rs->cap) return 0;
    size_t cap = rs->cap ? rs->cap : 64;
    while (cap < need)
        cap *= 2;
    size_t bytes;
    if (core_size_mul(&bytes, cap, rs->w * sizeof(int32_t)))
        return core_err(OG_E_RESOURCE_LIMIT, "too many rows");
    int32_t *nr = core_realloc(rs->r, bytes);
    if (!nr) return core_err_nomem();
    rs->r = nr;
    rs->cap = cap;
    return 0;
}

static int32_t *rs_push(rowset *rs, const int32_t *from)
{
    if (rs_reserve(rs, 1)) return NULL;
    int32_t *row = rs->r + rs->n * rs->w;
    memcpy(row, from, rs->w * sizeof *row);
    rs->n++;
    return row;
}

static void rs_free(rowset *rs)
{
    core_free(rs->r);
    rs->r = NULL;
    rs->n = rs->cap = 0;
}

/* Every row's id of a slot's table (a folded table's, concatenated on first use). */
static const arrow_array *slot_ids(xctx *x, int slot)
{
    const arrow_array *a = exec_table_ids(x->slots[slot].t);
    if (!a && !x->rc) x->rc = core_err_nomem();
    return a;
}

static const arrow_array *slot_prop(xctx *x, int slot, int prop)
{
    xslot *sl = &x->slots[slot];
    if (prop < 0 || (size_t)prop >= sl->td->n_props) {
        if (!x->rc) x->rc = core_err(OG_E_INTERNAL, "property %d out of range", prop);
        return NULL;
    }
    if (!sl->props[prop]) {
        const arrow_array *a = NULL;
        int rc = exec_table_column(&a, x->cache, sl->t, sl->td->props[prop].name);
        if (rc) {
            if (!x->rc) x->rc = rc;
            return NULL;
        }
        sl->props[prop] = a;
    }
    return sl->props[prop];
}

static xv eval(xctx *x, const lang_ir_expr *e, const int32_t *row)
{
    xv r;
    memset(&r, 0, sizeof r);
    switch (e->kind) {
    case LANG_IR_X_LITERAL:
        return xv_from_value(&e->lit);
    case LANG_IR_X_PARAM:
        if (!x->p || e->param < 0 || (size_t)e->param >= x->p->n) return r;
        return xv_from_value(&x->p->vals[e->param]);
    case LANG_IR_X_NOW:
        r.k = XV_INT;
        r.i = x->now_ms;
        return r;
    case LANG_IR_X_ID: {
        int32_t rr = row[e->slot];
        if (rr < 0) return r;
        const arrow_array *ids = slot_ids(x, e->slot);
        return ids ? xv_from_array(ids, rr) : r;
    }
    case LANG_IR_X_PROP: {
        int32_t rr = row[e->slot];
        if (rr < 0) return r;
        const arrow_array *a = slot_prop(x, e->slot, e->prop);
        return a ? xv_from_array(a, rr) : r;
    }
    default:
        if (!x->rc)
            x->rc = core_err(OG_E_UNSUPPORTED,
                             "expression kind %d is not supported by the executor", e->kind);
        return r;
    }
}

static int preds_hold(xctx *x, const lang_ir_pred *ps, size_t n, const int32_t *row)
{
    for (size_t i = 0; i < n; i++) {
        const lang_ir_pred *p = &ps[i];
        if (p->lhs.kind == LANG_IR_X_CALL || p->op == 0) {
            if (!x->rc)
                x->rc = core_err(OG_E_UNSUPPORTED, "search predicates (%s) are not supported yet",
                                 p->lhs.fn ? p->lhs.fn : "call");
            return 0;
        }
        xv l = eval(x, &p->lhs, row), r = eval(x, &p->rhs, row);
        if (!pred_holds(p->op, &l, &r)) return 0;
    }
    return 1;
}

/* ---- node scan ------------------------------------------------------------------------------- */

static int is_const(const lang_ir_expr *e)
{
    return e->kind == LANG_IR_X_LITERAL || e->kind == LANG_IR_X_PARAM || e->kind == LANG_IR_X_NOW;
}

static const lang_value *const_value(xctx *x, const lang_ir_expr *e, lang_value *tmp)
{
    if (e->kind == LANG_IR_X_LITERAL) return &e->lit;
    if (e->kind == LANG_IR_X_PARAM)
        return x->p && e->param >= 0 && (size_t)e->param < x->p->n ? &x->p->vals[e->param] : NULL;
    memset(tmp, 0, sizeof *tmp);
    tmp->kind = LANG_V_DATETIME;
    tmp->checked = 1;
    tmp->i = x->now_ms;
    return tmp;
}

/* `slot.prop op const` as a Lance filter term, when the column and value allow it. */
static int to_term(xctx *x, const xslot *sl, const lang_ir_pred *p, lance_term *t)
{
    if (p->op < GQ_OP_EQ || p->op > GQ_OP_GE || !is_const(&p->rhs)) return 0;
    if (p->lhs.kind != LANG_IR_X_PROP && p->lhs.kind != LANG_IR_X_ID) return 0;
    const char *col = p->lhs.kind == LANG_IR_X_ID ? GRAPH_COL_ID : sl->td->props[p->lhs.prop].name;
    if (!sl->t->ds) return 0;
    int ci = arrow_schema_find(&sl->t->ds->schema, col);
    if (ci < 0) return 0;
    arrow_type_id ty = sl->t->ds->schema.fields[ci].type.id;
    lang_value tmp;
    const lang_value *v = const_value(x, &p->rhs, &tmp);
    if (!v || v->kind == LANG_V_NULL) return 0;
    xv val = xv_from_value(v);
    memset(t, 0, sizeof *t);
    t->column = col;
    static const arrow_cmp_op ops[] = {
        0, ARROW_CMP_EQ, ARROW_CMP_NE, ARROW_CMP_LT, ARROW_CMP_GT, ARROW_CMP_LE, ARROW_CMP_GE};
    t->op = ops[p->op];
    switch (ty) {
    case ARROW_INT32:
    case ARROW_INT64:
    case ARROW_DATE32:
    case ARROW_TIMESTAMP:
        if (val.k != XV_INT) return 0;
        t->value.kind = ARROW_INT64;
        t->value.i = val.i;
        return 1;
    case ARROW_UINT32:
    case ARROW_UINT64:
        if (val.k == XV_INT && val.i >= 0) {
            t->value.kind = ARROW_UINT64;
            t->value.u = (uint64_t)val.i;
            return 1;
        }
        if (val.k != XV_UINT) return 0;
        t->value.kind = ARROW_UINT64;
        t->value.u = val.u;
        return 1;
    case ARROW_FLOAT32:
    case ARROW_FLOAT64:
        if (ty == ARROW_FLOAT32) return 0; /* f32 against a double literal: keep our rounding */
        if (val.k == XV_F)
            t->value.d = val.f;
        else if (val.k == XV_INT)
            t->value.d = (double)val.i;
        else
            return 0;
        t->value.kind = ARROW_FLOAT64;
        return 1;
    case ARROW_UTF8:
        if (val.k != XV_STR) return 0;
        t->value.kind = ARROW_BINARY;
        t->value.bytes = val.s;
        t->value.n_bytes = val.n;
        return 1;
    case ARROW_BOOL:
        if (val.k != XV_BOOL) return 0;
        t->value.kind = ARROW_BOOL;
        t->value.b = val.i != 0;
        return 1;
    default:
        return 0;
    }
}

/* Candidate rows of a node scan (ascending), and which preds remain to evaluate. */
static int scan_candidates(xctx *x, const lang_ir_op *op, int64_t **out, size_t *n_out,
                           unsigned char *residual)
{
    xslot *sl = &x->slots[op->slot];
    const lang_typedef *td = sl->td;
    int64_t *cand = NULL;
    size_t nc = 0;
    for (size_t i = 0; i < op->n_preds; i++)
        residual[i] = 1;
    /* 1. id or single-key equality: a dictionary lookup. */
    for (size_t i = 0; i < op->n_preds; i++) {
        const lang_ir_pred *p = &op->preds[i];
        if (p->op != GQ_OP_EQ || !is_const(&p->rhs)) continue;
        int is_id = p->lhs.kind == LANG_IR_X_ID;
        int is_key = p->lhs.kind == LANG_IR_X_PROP && td->n_key == 1 && p->lhs.prop == td->key[0];
        if (!is_id && !is_key) continue;
        lang_value tmp;
        const lang_value *v = const_value(x, &p->rhs, &tmp);
        cand = core_malloc(sizeof *cand);
        if (!cand) return core_err_nomem();
        if (!v || v->kind == LANG_V_NULL) {
            *out = cand;
            *n_out = 0;
            exec_cache_count_key_lookup(x->cache);
            return 0;
        }
        char *id = NULL;
        if (is_id) {
            if (v->kind != LANG_V_STRING) {
                core_free(cand);
                continue;
            }
            id = core_strdup(v->s);
            if (!id) {
                core_free(cand);
                return core_err_nomem();
            }
        } else if (lang_key_id(&id, td, v)) {
            core_free(cand); /* not canonicalisable: evaluate it as a plain comparison */
            continue;
        }
        int64_t r = exec_table_find(sl->t, id, strlen(id));
        core_free(id);
        if (r >= 0) cand[nc++] = r;
        residual[i] = 0;
        exec_cache_count_key_lookup(x->cache);
        *out = cand;
        *n_out = nc;
        return 0;
    }
    /* 2. Lance scan with the pushable comparisons, while their columns are not in memory. */
    size_t n_terms = 0, cold = 0;
    lance_term *terms = core_calloc(op->n_preds ? op->n_preds : 1, sizeof *terms);
    unsigned char *pushed = core_calloc(op->n_preds ? op->n_preds : 1, 1);
    if (!terms || !pushed) {
        core_free(terms);
        core_free(pushed);
        return core_err_nomem();
    }
    for (size_t i = 0; i < op->n_preds; i++)
        if (to_term(x, sl, &op->preds[i], &terms[n_terms])) {
            pushed[i] = 1;
            if (!exec_table_has_column(sl->t, terms[n_terms].column)) cold++;
            n_terms++;
        }
    int rc = 0;
    /* (a subset table's rows are few: its predicates are evaluated in memory below) */
    if (n_terms && cold && !sl->t->addrs) {
        lance_filter f = {terms, n_terms};
        lance_scan_options o = LANCE_SCAN_OPTIONS_INIT;
        static const char *const idcol[] = {GRAPH_COL_ID};
        o.columns = idcol;
        o.n_columns = 1;
        o.filter = &f;
        arrow_batch *b = NULL;
        rc = lance_dataset_scan_all(&b, sl->t->ds, &o);
        if (!rc) {
            const arrow_array *ids = b->columns[0];
            cand = core_malloc((size_t)(ids->length ? ids->length : 1) * sizeof *cand);
            if (!cand) rc = core_err_nomem();
            for (int64_t r = 0; !rc && r < ids->length; r++) {
                size_t len;
                const uint8_t *p = arrow_array_get_bytes(ids, r, &len);
                int64_t row = exec_table_find(sl->t, p, len);
                if (row >= 0) cand[nc++] = row;
            }
            arrow_batch_free(b);
        }
        if (!rc) {
            for (size_t i = 0; i < op->n_preds; i++)
                if (pushed[i]) residual[i] = 0;
            exec_cache_count_pushed(x->cache);
        }
        core_free(terms);
        core_free(pushed);
        if (rc) {
            core_free(cand);
            return rc;
        }
        *out = cand;
        *n_out = nc;
        return 0;
    }
    core_free(terms);
    core_free(pushed);
    /* 3. every row; all preds evaluated in memory. */
    cand = core_malloc((size_t)(sl->t->n_rows ? sl->t->n_rows : 1) * sizeof *cand);
    if (!cand) return core_err_nomem();
    for (int64_t r = 0; r < sl->t->n_rows; r++)
        cand[nc++] = r;
    *out = cand;
    *n_out = nc;
    return 0;
}

static int op_node_scan(xctx *x, const lang_ir_op *op, rowset *in, rowset *out)
{
    int64_t *cand = NULL;
    size_t nc = 0;
    unsigned char *residual = core_calloc(op->n_preds ? op->n_preds : 1, 1);
    if (!residual) return core_err_nomem();
    int rc = scan_candidates(x, op, &cand, &nc, residual);
    if (rc) {
        core_free(residual);
        return rc;
    }
    /* Residual predicates see only this slot and constants: evaluate once per candidate. */
    int32_t *tmp = core_malloc(x->w * sizeof *tmp);
    if (!tmp) rc = core_err_nomem();
    size_t kept = 0;
    for (size_t c = 0; !rc && c < nc; c++) {
        for (size_t k = 0; k < x->w; k++)
            tmp[k] = -1;
        tmp[op->slot] = (int32_t)cand[c];
        int ok = 1;
        for (size_t i = 0; ok && i < op->n_preds; i++)
            if (residual[i]) ok = preds_hold(x, &op->preds[i], 1, tmp);
        if (x->rc) rc = x->rc;
        if (ok) cand[kept++] = cand[c];
    }
    for (size_t i = 0; !rc && i < in->n; i++) {
        const int32_t *src = in->r + i * in->w;
        if (rs_reserve(out, kept)) {
            rc = og_error_last()->code;
            break;
        }
        for (size_t c = 0; c < kept; c++) {
            int32_t *row = rs_push(out, src);
            row[op->slot] = (int32_t)cand[c];
        }
    }
    core_free(tmp);
    core_free(cand);
    core_free(residual);
    return rc;
}

/* ---- expand ---------------------------------------------------------------------------------- */

static const graph_table *snap_table(const graph_snapshot *snap, int kind, const char *type)
{
    /* Aliases are "node:<Type>" / "edge:<Type>"; compare in place, no formatting. */
    const char *prefix = kind == LANG_EDGE ? "edge:" : "node:";
    for (size_t i = 0; snap && i < snap->n_tables; i++) {
        const char *a = snap->tables[i].alias;
        if (a && !strncmp(a, prefix, 5) && !strcmp(a + 5, type)) return &snap->tables[i];
    }
    return NULL;
}

/* A table with no rows, for types that have no table in the snapshot. */
static int empty_table(exec_table **out, int kind)
{
    exec_table *t = core_calloc(1, sizeof *t);
    if (!t) return core_err_nomem();
    atomic_init(&t->refs, 1);
    pthread_mutex_init(&t->mu, NULL);
    t->kind = kind;
    arrow_type u = arrow_type_simple(ARROW_UTF8);
    arrow_builder *b = NULL;
    int rc = arrow_builder_new(&b, &u);
    if (!rc) rc = arrow_builder_finish(b, &t->id);
    if (!rc && kind == LANG_EDGE) {
        t->src = arrow_array_ref(t->id);
        t->dst = arrow_array_ref(t->id);
    }
    arrow_builder_free(b);
    if (rc) {
        exec_table_release(t);
        return rc;
    }
    *out = t;
    return 0;
}

static int type_table(xctx *x, int type, exec_table **out)
{
    if (x->subset && x->subset[type]) {
        atomic_fetch_add(&x->subset[type]->refs, 1);
        *out = x->subset[type];
        return 0;
    }
    const lang_typedef *td = &x->cat->types[type];
    const graph_table *gt = snap_table(x->snap, td->kind, td->name);
    if (!gt) return empty_table(out, td->kind);
    return exec_cache_table(out, x->cache, x->s, gt);
}

typedef struct adj {
    const uint32_t *off, *nbr, *edge;
    size_t n_base;       /* nodes the arrays cover */
    const exec_dedge *d; /* a folded adjacency's appended edges (sorted by node) */
    size_t n_d;
} adj;

/* BFS from `src` under the reference's rules; destinations land in st->found. With one node
 * type (same), the source starts visited and a node enters the frontier once; a self-loop
 * reports its node but never expands it. Across types there is one hop and no frontier. */
static size_t bfs(exec_scratch *st, const adj *a1, const adj *a2, int same, uint32_t src,
                  uint32_t min, uint32_t max)
{
    uint32_t ep = ++st->epoch;
    size_t nf = 1, found = 0;
    st->frontier[0] = src;
    if (same) st->visited[src] = ep;
    for (uint32_t hop = 1; hop <= max && nf; hop++) {
        size_t nn = 0;
        int report = hop >= min;
        for (size_t i = 0; i < nf; i++) {
            uint32_t node = st->frontier[i];
            for (int side = 0; side < 2; side++) {
                const adj *a = side ? a2 : a1;
                if (!a) continue;
                /* the base's neighbours, then the appended ones (edge-row order) */
                uint32_t k = node < a->n_base ? a->off[node] : 0,
                         e = node < a->n_base ? a->off[node + 1] : 0;
                size_t df = 0, dn = a->n_d ? exec_dedge_range(a->d, a->n_d, node, &df) : 0;
                for (size_t step = 0; step < (size_t)(e - k) + dn; step++) {
                    uint32_t nb =
                        step < (size_t)(e - k) ? a->nbr[k + step] : a->d[df + step - (e - k)].nbr;
                    if (same) {
                        if (nb != node) {
                            if (st->visited[nb] == ep) continue;
                            st->visited[nb] = ep;
                            if (hop < max) st->next[nn++] = nb;
                        }
                    }
                    if (report && st->seen[nb] != ep) {
                        st->seen[nb] = ep;
                        st->found[found++] = nb;
                    }
                }
            }
        }
        uint32_t *t = st->frontier;
        st->frontier = st->next;
        st->next = t;
        nf = nn;
    }
    return found;
}

static int op_expand(xctx *x, const lang_ir_op *op, rowset *in, rowset *out)
{
    const lang_typedef *et = &x->cat->types[op->type];
    exec_table *edges = NULL, *from = NULL, *to = NULL;
    exec_csr *g = NULL;
    exec_scratch *st = NULL;
    /* The endpoint tables are the slots' own, so CSR rows and slot rows agree. */
    int in_dir = op->direction == LANG_IR_IN;
    from = x->slots[in_dir ? op->dst_slot : op->src_slot].t;
    to = x->slots[in_dir ? op->src_slot : op->dst_slot].t;
    int rc = 0;
    if (x->slots[op->src_slot].td != &x->cat->types[in_dir ? et->to : et->from] ||
        x->slots[op->dst_slot].td != &x->cat->types[in_dir ? et->from : et->to]) {
        rc = core_err(OG_E_INTERNAL, "expand over %s: slot types differ from the endpoints",
                      et->name);
        goto done;
    }
    rc = type_table(x, op->type, &edges);
    if (!rc) rc = exec_cache_csr(&g, x->cache, edges, from, to);
    if (rc) goto done;
    int same = et->from == et->to;
    /* (a folded adjacency's base arrays cover the base's node tables, which are from/to) */
    adj out_adj = {g->out_off, g->out_nbr, g->out_edge, (size_t)from->n_rows, g->d_out, g->n_d};
    adj in_adj = {g->in_off, g->in_nbr, g->in_edge, (size_t)to->n_rows, g->d_in, g->n_d};
    const adj *a1 = op->direction == LANG_IR_IN ? &in_adj : &out_adj;
    const adj *a2 = op->direction == LANG_IR_BOTH ? &in_adj : NULL;
    exec_table *dst_t = in_dir ? from : to;
    uint32_t min = op->min_hops ? op->min_hops : 1, max = op->max_hops ? op->max_hops : 1;
    if (!same && max > 1) max = 1; /* endpoints of different types cannot chain */
    size_t n_dst = (size_t)dst_t->n_rows;
    if (op->edge_slot < 0) {
        size_t n_src = (size_t)(in_dir ? to : from)->n_rows;
        rc = exec_scratch_get(&st, x->cache, n_dst > n_src ? n_dst : n_src);
        if (rc) goto done;
    }
    for (size_t i = 0; i < in->n; i++) {
        const int32_t *row = in->r + i * in->w;
        int32_t s = row[op->src_slot];
        if (s < 0) continue;
        int32_t bound = op->dst_bound ? row[op->dst_slot] : -1;
        if (op->dst_bound && bound < 0) continue;
        if (op->edge_slot >= 0) {
            if (min > 1) continue;
            for (int side = 0; side < 2; side++) {
                const adj *a = side ? a2 : a1;
                if (!a) continue;
                uint32_t node = (uint32_t)s;
                uint32_t k = node < a->n_base ? a->off[node] : 0,
                         e = node < a->n_base ? a->off[node + 1] : 0;
                size_t df = 0, dn = a->n_d ? exec_dedge_range(a->d, a->n_d, node, &df) : 0;
                for (size_t step = 0; step < (size_t)(e - k) + dn; step++) {
                    int base_step = step < (size_t)(e - k);
                    uint32_t nb = base_step ? a->nbr[k + step] : a->d[df + step - (e - k)].nbr;
                    uint32_t edge = base_step ? a->edge[k + step] : a->d[df + step - (e - k)].edge;
                    if (side && nb == (uint32_t)s) continue; /* a self-loop once, not per side */
                    if (op->dst_bound && nb != (uint32_t)bound) continue;
                    int32_t *r = rs_push(out, row);
                    if (!r) {
                        rc = og_error_last()->code;
                        goto done;
                    }
                    r[op->dst_slot] = (int32_t)nb;
                    r[op->edge_slot] = (int32_t)edge;
                }
            }
            continue;
        }
        size_t nf = bfs(st, a1, a2, same, (uint32_t)s, min, max);
        if (op->dst_bound) {
            if (st->seen[bound] == st->epoch && nf && !rs_push(out, row)) {
                rc = og_error_last()->code;
                goto done;
            }
            continue;
        }
        if (rs_reserve(out, nf)) {
            rc = og_error_last()->code;
            goto done;
        }
        for (size_t k = 0; k < nf; k++) {
            int32_t *r = rs_push(out, row);
            r[op->dst_slot] = (int32_t)st->found[k];
        }
    }
done:
    exec_scratch_put(x->cache, st);
    exec_csr_release(g);
    exec_table_release(edges);
    return rc;
}

/* ---- pipeline -------------------------------------------------------------------------------- */

static int run_ops(xctx *x, const lang_ir_op *ops, size_t n_ops, size_t *pos, rowset *rs);

static int op_filter(xctx *x, const lang_ir_op *op, rowset *rs)
{
    size_t kept = 0;
    for (size_t i = 0; i < rs->n; i++) {
        int32_t *row = rs->r + i * rs->w;
        if (preds_hold(x, op->preds, op->n_preds, row)) {
            if (kept != i) memcpy(rs->r + kept * rs->w, row, rs->w * sizeof *row);
            kept++;
        }
        if (x->rc) return x->rc;
    }
    rs->n = kept;
    return 0;
}

static int op_anti_join(xctx *x, const lang_ir_op *op, rowset *rs)
{
    rowset sub = {NULL, 0, 0, rs->w};
    int rc = rs_reserve(&sub, rs->n);
    if (rc) return rc;
    if (rs->n) memcpy(sub.r, rs->r, rs->n * rs->w * sizeof *rs->r);
    sub.n = rs->n;
    for (size_t i = 0; i < sub.n; i++)
        sub.r[i * sub.w + sub.w - 1] = (int32_t)i;
    size_t pos = 0;
    rc = run_ops(x, op->sub.ops, op->sub.n_ops, &pos, &sub);
    unsigned char *hit = rc ? NULL : core_calloc(rs->n ? rs->n : 1, 1);
    if (!rc && !hit) rc = core_err_nomem();
    if (!rc) {
        for (size_t i = 0; i < sub.n; i++)
            hit[sub.r[i * sub.w + sub.w - 1]] = 1;
        size_t kept = 0;
        for (size_t i = 0; i < rs->n; i++)
            if (!hit[i]) {
                if (kept != i)
                    memcpy(rs->r + kept * rs->w, rs->r + i * rs->w, rs->w * sizeof *rs->r);
                kept++;
            }
        rs->n = kept;
    }
    core_free(hit);
    rs_free(&sub);
    return rc;
}

/* ORDER over slots: keys, then the tie slots' ids, then the output columns, then input order. */
typedef struct sort_ctx {
    xctx *x;
    const lang_ir_op *op;
    const rowset *rs;
    xv *vals; /* n_rows * n_keys */
} sort_ctx;

static int row_cmp(const void *pa, const void *pb, void *arg)
{
    const sort_ctx *c = arg;
    size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
    size_t k = c->op->n_keys;
    for (size_t i = 0; i < k; i++) {
        int r = xv_cmp(&c->vals[a * k + i], &c->vals[b * k + i]);
        if (r) return c->op->keys[i].desc ? -r : r;
    }
    const int32_t *ra = c->rs->r + a * c->rs->w, *rb = c->rs->r + b * c->rs->w;
    for (size_t i = 0; i < c->op->n_tie_slots; i++) {
        int s = c->op->tie_slots[i];
        const arrow_array *ids = slot_ids(c->x, s);
        if (!ids) return 0;
        xv va = xv_from_array(ids, ra[s]);
        xv vb = xv_from_array(ids, rb[s]);
        int r = xv_cmp(&va, &vb);
        if (r) return r;
    }
    for (size_t i = 0; i < c->x->q->n_columns; i++) {
        xv va = eval(c->x, &c->x->q->columns[i].expr, ra);
        xv vb = eval(c->x, &c->x->q->columns[i].expr, rb);
        int r = xv_cmp(&va, &vb);
        if (r) return r;
    }
    return (a > b) - (a < b);
}

static int op_order_rows(xctx *x, const lang_ir_op *op, rowset *rs)
{
    size_t n = rs->n, k = op->n_keys, bytes;
    for (size_t i = 0; i < k; i++)
        if (op->keys[i].expr.kind == LANG_IR_X_NEAREST || op->keys[i].expr.kind == LANG_IR_X_CALL)
            return core_err(OG_E_UNSUPPORTED,
                            "ranking order (nearest/bm25/rrf) is not supported yet");
    if (n < 2) return 0;
    if (core_size_mul(&bytes, n, (k ? k : 1) * sizeof(xv)))
        return core_err(OG_E_RESOURCE_LIMIT, "too many rows");
    xv *vals = core_malloc(bytes);
    size_t *idx = core_malloc(n * sizeof *idx);
    int32_t *nr = core_malloc(n * rs->w * sizeof *nr);
    int rc = 0;
    if (!vals || !idx || !nr) {
        rc = core_err_nomem();
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        idx[i] = i;
        for (size_t j = 0; j < k; j++)
            vals[i * k + j] = eval(x, &op->keys[j].expr, rs->r + i * rs->w);
    }
    if (x->rc) {
        rc = x->rc;
        goto done;
    }
    sort_ctx c = {x, op, rs, vals};
    qsort_r(idx, n, sizeof *idx, row_cmp, &c);
    if (x->rc) {
        rc = x->rc;
        goto done;
    }
    for (size_t i = 0; i < n; i++)
        memcpy(nr + i * rs->w, rs->r + idx[i] * rs->w, rs->w * sizeof *nr);
    core_free(rs->r);
    rs->r = nr;
    rs->cap = n;
    nr = NULL;
done:
    core_free(vals);
    core_free(idx);
    core_free(nr);
    return rc;
}

/* Runs ops from *pos while they are row operators (stops at PROJECT / AGGREGATE). */
static int run_ops(xctx *x, const lang_ir_op *ops, size_t n_ops, size_t *pos, rowset *rs)
{
    for (; *pos < n_ops; (*pos)++) {
        const lang_ir_op *op = &ops[*pos];
        int rc = 0;
        rowset out = {NULL, 0, 0, rs->w};
        switch (op->kind) {
        case LANG_IR_NODE_SCAN:
            rc = op_node_scan(x, op, rs, &out);
            break;
        case LANG_IR_EXPAND:
            rc = op_expand(x, op, rs, &out);
            break;
        case LANG_IR_FILTER:
            rc = op_filter(x, op, rs);
            break;
        case LANG_IR_ANTI_JOIN:
            rc = op_anti_join(x, op, rs);
            break;
        case LANG_IR_ORDER:
            rc = op_order_rows(x, op, rs);
            break;
        case LANG_IR_LIMIT:
            if (rs->n > op->count) rs->n = (size_t)op->count;
            break;
        case LANG_IR_PROJECT:
        case LANG_IR_AGGREGATE:
            return 0;
        default:
            return core_err(OG_E_BAD_REQUEST, "operator %s cannot run in a read query",
                            lang_ir_op_name(op->kind));
        }
        if (op->kind == LANG_IR_NODE_SCAN || op->kind == LANG_IR_EXPAND) {
            if (rc) {
                rs_free(&out);
            } else {
                rs_free(rs);
                *rs = out;
            }
        }
        if (!rc && x->rc) rc = x->rc;
        if (rc) return rc;
    }
    return 0;
}

/* ---- output ---------------------------------------------------------------------------------- */

static int scalar_arrow(arrow_type *out, int scalar)
{
    static const arrow_type_id ids[] = {
        [LANG_S_STRING] = ARROW_UTF8, [LANG_S_BOOL] = ARROW_BOOL,   [LANG_S_I32] = ARROW_INT32,
        [LANG_S_I64] = ARROW_INT64,   [LANG_S_U32] = ARROW_UINT32,  [LANG_S_U64] = ARROW_UINT64,
        [LANG_S_F32] = ARROW_FLOAT32, [LANG_S_F64] = ARROW_FLOAT64, [LANG_S_DATE] = ARROW_DATE32,
        [LANG_S_BLOB] = ARROW_BINARY};
    if (scalar == LANG_S_DATETIME) return arrow_type_timestamp(out, ARROW_UNIT_MILLI, NULL);
    if (scalar == LANG_S_NONE) {
        *out = arrow_type_simple(ARROW_NA);
        return 0;
    }
    if (scalar < 0 || scalar > LANG_S_BLOB)
        return core_err(OG_E_INTERNAL, "unknown scalar %d", scalar);
    *out = arrow_type_simple(ids[scalar]);
    return 0;
}

int exec_arrow_type(arrow_type *out, const lang_type *t)
{
    if (t->kind == LANG_TY_ENUM) {
        *out = arrow_type_simple(ARROW_UTF8);
        return 0;
    }
    if (t->kind == LANG_TY_SCALAR) return scalar_arrow(out, t->scalar);
    arrow_type it;
    int rc = t->kind == LANG_TY_VECTOR ? (it = arrow_type_simple(ARROW_FLOAT32), 0)
                                       : scalar_arrow(&it, t->scalar);
    if (rc) return rc;
    arrow_field item;
    rc = arrow_field_init(&item, "item", &it, true);
    arrow_type_clear(&it);
    if (rc) return rc;
    if (t->kind == LANG_TY_LIST)
        rc = arrow_type_list(out, &item);
    else if (t->dim == 0 || t->dim > INT32_MAX)
        rc = core_err(OG_E_BAD_REQUEST, "vector dimension %u out of range", t->dim);
    else
        rc = arrow_type_fixed_size_list(out, &item, (int32_t)t->dim);
    arrow_field_clear(&item);
    return rc;
}

static int append_xv(arrow_builder *b, const arrow_type *t, const xv *v)
{
    if (v->k == XV_NULL) return arrow_builder_append_null(b);
    switch (t->id) {
    case ARROW_BOOL:
        return arrow_builder_append_bool(b, v->i != 0);
    case ARROW_INT32:
    case ARROW_INT64:
    case ARROW_DATE32:
    case ARROW_DATE64:
    case ARROW_TIMESTAMP:
    case ARROW_UINT32:
    case ARROW_UINT64:
        if (v->k == XV_UINT) return arrow_builder_append_uint(b, v->u);
        if (v->k == XV_F) return arrow_builder_append_int(b, (int64_t)v->f);
        if ((t->id == ARROW_UINT32 || t->id == ARROW_UINT64) && v->i >= 0)
            return arrow_builder_append_uint(b, (uint64_t)v->i);
        return arrow_builder_append_int(b, v->i);
    case ARROW_FLOAT32:
    case ARROW_FLOAT64:
        return arrow_builder_append_double(b, v->k == XV_F      ? v->f
                                              : v->k == XV_UINT ? (double)v->u
                                                                : (double)v->i);
    case ARROW_UTF8:
    case ARROW_BINARY:
        return arrow_builder_append_bytes(b, v->s, v->n);
    case ARROW_LIST:
    case ARROW_FIXED_SIZE_LIST: {
        if (!is_list(v->k)) return core_err(OG_E_INTERNAL, "list column given a scalar");
        arrow_builder *cb = arrow_builder_child(b, 0);
        for (size_t j = 0; j < v->n; j++) {
            xv it = xv_item(v, j);
            int rc = append_xv(cb, &t->children[0].type, &it);
            if (rc) return rc;
        }
        return t->id == ARROW_LIST ? arrow_builder_append_list(b, (int64_t)v->n)
                                   : arrow_builder_append_valid(b);
    }
    case ARROW_NA:
        return arrow_builder_append_null(b);
    default:
        return core_err(OG_E_UNSUPPORTED, "cannot output this column type");
    }
}

/* Append expression e's value for `row` to b (type t): PROP and ID copy from the table. */
static int append_expr(xctx *x, arrow_builder *b, const arrow_type *t, const lang_ir_expr *e,
                       const int32_t *row)
{
    if (row && (e->kind == LANG_IR_X_PROP || e->kind == LANG_IR_X_ID) && row[e->slot] >= 0) {
        const arrow_array *a =
            e->kind == LANG_IR_X_ID ? slot_ids(x, e->slot) : slot_prop(x, e->slot, e->prop);
        if (!a) return x->rc;
        if (arrow_type_equal(&a->type, t)) return arrow_builder_append_from(b, a, row[e->slot]);
    }
    if (!row) return arrow_builder_append_null(b);
    xv v = eval(x, e, row);
    if (x->rc) return x->rc;
    return append_xv(b, t, &v);
}

struct exec_result {
    arrow_schema schema;
    arrow_batch **batches;
    size_t n_batches;
    uint64_t n_rows;
    uint64_t *starts; /* first row of each batch */
};

static int result_add(exec_result *r, arrow_array **cols)
{
    arrow_batch *b = NULL;
    int rc = arrow_batch_new(&b, &r->schema, cols, r->schema.n_fields);
    if (rc) return rc;
    arrow_batch **nb = core_realloc(r->batches, (r->n_batches + 1) * sizeof *nb);
    uint64_t *ns = nb ? core_realloc(r->starts, (r->n_batches + 1) * sizeof *ns) : NULL;
    if (nb) r->batches = nb;
    if (ns) r->starts = ns;
    if (!nb || !ns) {
        arrow_batch_free(b);
        return core_err_nomem();
    }
    r->starts[r->n_batches] = r->n_rows;
    r->batches[r->n_batches++] = b;
    r->n_rows += (uint64_t)b->num_rows;
    return 0;
}

static int finish_builders(arrow_builder **bs, size_t n, arrow_array **cols)
{
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        cols[i] = NULL;
        if (!rc) rc = arrow_builder_finish(bs[i], &cols[i]);
    }
    return rc;
}

static void free_cols(arrow_array **cols, size_t n)
{
    for (size_t i = 0; cols && i < n; i++)
        arrow_array_free(cols[i]);
}

static int new_builders(exec_result *r, arrow_builder **bs)
{
    for (size_t i = 0; i < r->schema.n_fields; i++) {
        bs[i] = NULL;
        int rc = arrow_builder_new(&bs[i], &r->schema.fields[i].type);
        if (rc) return rc;
    }
    return 0;
}

static void free_builders(arrow_builder **bs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        arrow_builder_free(bs[i]);
}

static int project(xctx *x, const rowset *rs, exec_result *r)
{
    size_t nc = r->schema.n_fields;
    arrow_builder **bs = core_calloc(nc ? nc : 1, sizeof *bs);
    arrow_array **cols = core_calloc(nc ? nc : 1, sizeof *cols);
    int rc = (!bs || !cols) ? core_err_nomem() : new_builders(r, bs);
    for (size_t start = 0; !rc && (start < rs->n || (start == 0 && rs->n == 0));
         start += EXEC_BATCH_ROWS) {
        size_t end = start + EXEC_BATCH_ROWS < rs->n ? start + EXEC_BATCH_ROWS : rs->n;
        for (size_t c = 0; !rc && c < nc; c++) {
            rc = arrow_builder_reserve(bs[c], (int64_t)(end - start));
            for (size_t i = start; !rc && i < end; i++)
                rc = append_expr(x, bs[c], &r->schema.fields[c].type, &x->q->columns[c].expr,
                                 rs->r + i * rs->w);
        }
        if (!rc) rc = finish_builders(bs, nc, cols);
        if (!rc) rc = result_add(r, cols);
        free_cols(cols, nc);
        if (rs->n == 0) break;
    }
    if (bs) free_builders(bs, nc);
    core_free(bs);
    core_free(cols);
    return rc;
}

/* ---- aggregate ------------------------------------------------------------------------------- */

typedef struct agg_acc {
    int64_t count; /* values seen (non-null) */
    int64_t isum;
    double fsum;
    int64_t best; /* MIN/MAX: row index of the best value, -1 none */
} agg_acc;

typedef struct group {
    size_t first; /* a row of the group */
    uint64_t hash;
} group;

static uint64_t xv_hash(const xv *v, uint64_t h)
{
    uint64_t k = (uint64_t)v->k;
    switch (v->k) {
    case XV_STR:
        return core_hash64(v->s, v->n, h ^ 0x9e3779b97f4a7c15ull);
    case XV_INT:
    case XV_BOOL:
        k = (uint64_t)v->i * 0x9e3779b97f4a7c15ull;
        break;
    case XV_UINT:
        k = v->u * 0xbf58476d1ce4e5b9ull;
        break;
    case XV_F: {
        double d = v->f == 0 ? 0 : v->f;
        memcpy(&k, &d, sizeof k);
        break;
    }
    default:
        break;
    }
    return core_hash64(&k, sizeof k, h);
}

typedef struct agg_sort_ctx {
    const lang_ir_op *op;
    arrow_array **cols;
} agg_sort_ctx;

static int agg_row_cmp(const void *pa, const void *pb, void *arg)
{
    const agg_sort_ctx *c = arg;
    int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
    for (size_t i = 0; i < c->op->n_keys; i++) {
        const arrow_array *col = c->cols[c->op->keys[i].expr.column];
        int r = arrow_compare_rows(col, a, col, b);
        if (r) return c->op->keys[i].desc ? -r : r;
    }
    for (size_t i = 0; i < c->op->n_tie_columns; i++) {
        const arrow_array *col = c->cols[c->op->tie_columns[i]];
        int r = arrow_compare_rows(col, a, col, b);
        if (r) return r;
    }
    return (a > b) - (a < b);
}

static int aggregate(xctx *x, const lang_ir_op *ops, size_t n_ops, size_t pos, const rowset *rs,
                     exec_result *r)
{
    const lang_ir_query *q = x->q;
    size_t nc = q->n_columns, ng = 0, gcap = 0, n_keys = 0;
    for (size_t c = 0; c < nc; c++)
        n_keys += q->columns[c].agg == LANG_IR_AGG_NONE;
    group *groups = NULL;
    agg_acc *acc = NULL;
    uint32_t *table = NULL;
    size_t tmask = 0;
    arrow_builder **bs = core_calloc(nc ? nc : 1, sizeof *bs);
    arrow_array **cols = core_calloc(nc ? nc : 1, sizeof *cols);
    xv *kv = core_calloc(n_keys ? n_keys : 1, sizeof *kv);
    int64_t *idx = NULL;
    int rc = (!bs || !cols || !kv) ? core_err_nomem() : 0;
    size_t tcap = 16;
    while (tcap < rs->n * 2)
        tcap <<= 1;
    if (!rc) {
        table = core_calloc(tcap, sizeof *table);
        if (!table) rc = core_err_nomem();
        tmask = tcap - 1;
    }
    for (size_t i = 0; !rc && i < rs->n; i++) {
        const int32_t *row = rs->r + i * rs->w;
        uint64_t h = 0;
        size_t kk = 0;
        for (size_t c = 0; c < nc; c++)
            if (q->columns[c].agg == LANG_IR_AGG_NONE) {
                kv[kk] = eval(x, &q->columns[c].expr, row);
                h = xv_hash(&kv[kk++], h);
            }
        if (x->rc) {
            rc = x->rc;
            break;
        }
        size_t g = SIZE_MAX, slot = (size_t)h & tmask;
        for (; table[slot]; slot = (slot + 1) & tmask) {
            group *gp = &groups[table[slot] - 1];
            if (gp->hash != h) continue;
            const int32_t *fr = rs->r + gp->first * rs->w;
            int same = 1;
            kk = 0;
            for (size_t c = 0; same && c < nc; c++)
                if (q->columns[c].agg == LANG_IR_AGG_NONE) {
                    xv o = eval(x, &q->columns[c].expr, fr);
                    same = xv_cmp(&o, &kv[kk++]) == 0;
                }
            if (same) {
                g = table[slot] - 1;
                break;
            }
        }
        if (g == SIZE_MAX) {
            if (ng == gcap) {
                size_t ncap = gcap ? gcap * 2 : 16;
                group *ngp = core_realloc(groups, ncap * sizeof *ngp);
                if (ngp) groups = ngp;
                agg_acc *na = ngp ? core_realloc(acc, ncap * (nc ? nc : 1) * sizeof *na) : NULL;
                if (na) acc = na;
                if (!ngp || !na) {
                    rc = core_err_nomem();
                    break;
                }
                gcap = ncap;
            }
            g = ng++;
            groups[g].first = i;
            groups[g].hash = h;
            for (size_t c = 0; c < nc; c++)
                acc[g * nc + c] = (agg_acc){0, 0, 0, -1};
            table[slot] = (uint32_t)(g + 1);
        }
        for (size_t c = 0; c < nc; c++) {
            const lang_ir_column *col = &q->columns[c];
            if (col->agg == LANG_IR_AGG_NONE) continue;
            agg_acc *a = &acc[g * nc + c];
            xv v = eval(x, &col->expr, row);
            if (v.k == XV_NULL) continue;
            a->count++;
            if (col->agg == LANG_IR_SUM || col->agg == LANG_IR_AVG) {
                double d = v.k == XV_F ? v.f : v.k == XV_UINT ? (double)v.u : (double)v.i;
                a->fsum += d;
                if (col->agg == LANG_IR_SUM && v.k != XV_F) {
                    if (v.k == XV_UINT || __builtin_add_overflow(a->isum, v.i, &a->isum)) {
                        rc = core_err(OG_E_BAD_REQUEST, "sum for column '%s' overflows I64",
                                      col->name);
                        break;
                    }
                }
            } else if (col->agg == LANG_IR_MIN || col->agg == LANG_IR_MAX) {
                if (a->best < 0) {
                    a->best = (int64_t)i;
                } else {
                    xv o = eval(x, &col->expr, rs->r + (size_t)a->best * rs->w);
                    int cmp = xv_cmp(&v, &o);
                    if (col->agg == LANG_IR_MIN ? cmp < 0 : cmp > 0) a->best = (int64_t)i;
                }
            }
        }
        if (!rc && x->rc) rc = x->rc;
    }
    /* A global aggregate over no rows still answers one row. */
    int empty_global = !rc && ng == 0 && n_keys == 0;
    size_t n_out = empty_global ? 1 : ng;
    if (!rc) rc = new_builders(r, bs);
    for (size_t c = 0; !rc && c < nc; c++) {
        const lang_ir_column *col = &q->columns[c];
        const arrow_type *t = &r->schema.fields[c].type;
        for (size_t g = 0; !rc && g < n_out; g++) {
            agg_acc a = empty_global ? (agg_acc){0, 0, 0, -1} : acc[g * nc + c];
            const int32_t *fr = empty_global ? NULL : rs->r + groups[g].first * rs->w;
            switch (col->agg) {
            case LANG_IR_AGG_NONE:
                rc = append_expr(x, bs[c], t, &col->expr, fr);
                break;
            case LANG_IR_COUNT:
                rc = arrow_builder_append_int(bs[c], a.count);
                break;
            case LANG_IR_SUM:
                rc = t->id == ARROW_FLOAT64 ? arrow_builder_append_double(bs[c], a.fsum)
                                            : arrow_builder_append_int(bs[c], a.isum);
                break;
            case LANG_IR_AVG:
                rc = a.count ? arrow_builder_append_double(bs[c], a.fsum / (double)a.count)
                             : arrow_builder_append_null(bs[c]);
                break;
            default:
                rc = append_expr(x, bs[c], t, &col->expr,
                                 a.best < 0 ? NULL : rs->r + (size_t)a.best * rs->w);
                break;
            }
        }
    }
    if (!rc) rc = finish_builders(bs, nc, cols);
    /* ORDER / LIMIT after the aggregate work on the output columns. */
    size_t n_sel = n_out;
    idx = rc ? NULL : core_malloc((n_out ? n_out : 1) * sizeof *idx);
    if (!rc && !idx) rc = core_err_nomem();
    for (size_t i = 0; !rc && i < n_out; i++)
        idx[i] = (int64_t)i;
    for (size_t p = pos + 1; !rc && p < n_ops; p++) {
        const lang_ir_op *op = &ops[p];
        if (op->kind == LANG_IR_ORDER) {
            agg_sort_ctx sc = {op, cols};
            if (n_sel > 1) qsort_r(idx, n_sel, sizeof *idx, agg_row_cmp, &sc);
        } else if (op->kind == LANG_IR_LIMIT) {
            if (n_sel > op->count) n_sel = (size_t)op->count;
        } else {
            rc = core_err(OG_E_BAD_REQUEST, "operator %s after an aggregate",
                          lang_ir_op_name(op->kind));
        }
    }
    if (!rc) {
        arrow_array **taken = core_calloc(nc ? nc : 1, sizeof *taken);
        if (!taken) rc = core_err_nomem();
        for (size_t c = 0; !rc && c < nc; c++)
            rc = arrow_take(&taken[c], cols[c], idx, n_sel);
        if (!rc) rc = result_add(r, taken);
        if (taken) free_cols(taken, nc);
        core_free(taken);
    }
    free_cols(cols, nc);
    if (bs) free_builders(bs, nc);
    core_free(bs);
    core_free(cols);
    core_free(kv);
    core_free(idx);
    core_free(groups);
    core_free(acc);
    core_free(table);
    return rc;
}

/* ---- entry ----------------------------------------------------------------------------------- */

static int check_params(const lang_ir_query *q, const exec_params *p)
{
    if (p && p->n != q->n_params)
        return core_err(OG_E_BAD_REQUEST, "params were built for another query than %s", q->name);
    if (!p)
        for (size_t i = 0; i < q->n_params; i++)
            if (!q->params[i].type.nullable) {
                int rc = core_err(OG_E_BAD_REQUEST, "param '%s': a value is required",
                                  q->params[i].name);
                core_err_detail(CORE_ERR_KEY, q->params[i].name);
                return rc;
            }
    return 0;
}

static int result_schema(exec_result *r, const lang_ir_query *q)
{
    arrow_schema_init(&r->schema);
    for (size_t c = 0; c < q->n_columns; c++) {
        arrow_type t;
        int rc = exec_arrow_type(&t, &q->columns[c].type);
        if (rc) return rc;
        arrow_field f;
        rc = arrow_field_init(&f, q->columns[c].name, &t, true);
        arrow_type_clear(&t);
        if (rc) return rc;
        rc = arrow_schema_add(&r->schema, &f);
        arrow_field_clear(&f);
        if (rc) return rc;
    }
    return 0;
}

/* Should this run read only what it reaches (subset tables) rather than load whole tables
 * into the cache? When a table it uses is not cached at its version, for the first
 * exec_cache_cold_runs() runs over that version: a one-shot process never pays for whole
 * tables, a long-lived handle loads them once they are asked again and again. */
static int cold_run(xctx *x)
{
    unsigned limit = exec_cache_cold_runs(x->cache);
    if (!limit) return 0;
    int cold = 0, warmed = 0;
    const lang_ir_query *q = x->q;
    size_t n = q->n_slots + q->pipeline.n_ops, nseen = 0;
    const graph_table **seen = core_malloc((n ? n : 1) * sizeof *seen);
    if (!seen) return 0; /* (whole tables: always right) */
    for (size_t i = 0; i < n; i++) {
        int type = i < q->n_slots ? q->slots[i].type
                   : q->pipeline.ops[i - q->n_slots].kind == LANG_IR_EXPAND
                       ? q->pipeline.ops[i - q->n_slots].type
                       : -1;
        if (type < 0 || (size_t)type >= x->cat->n_types) continue;
        const lang_typedef *td = &x->cat->types[type];
        const graph_table *gt = snap_table(x->snap, td->kind, td->name);
        /* (an edge table the handle holds at some version is warm: a newer version that
         * only appended folds onto it; a node table at another version is cold, as a load of
         * it and of the adjacency over it would be) */
        if (!gt || exec_cache_holds(x->cache, gt) ||
            (td->kind == LANG_EDGE && exec_cache_holds_any(x->cache, gt)))
            continue;
        /* each table counts once per run, however many slots or expansions use it */
        size_t k = 0;
        while (k < nseen && seen[k] != gt)
            k++;
        if (k < nseen) continue;
        seen[nseen++] = gt;
        cold = 1;
        if (exec_cache_note_cold(x->cache, gt) > limit) warmed = 1;
    }
    core_free(seen);
    return cold && !warmed;
}

int exec_query_run(exec_result **out, const lang_catalog *cat, const graph_snapshot *snap, store *s,
                   const lang_ir_query *q, const exec_params *params, exec_cache *cache)
{
    *out = NULL;
    if (q->is_mutation)
        return core_err(OG_E_BAD_REQUEST, "query %s is a mutation, not a read", q->name);
    int rc = check_params(q, params);
    if (rc) return rc;
    exec_cache *own = NULL;
    if (!cache) {
        rc = exec_cache_new(&own);
        if (rc) return rc;
        cache = own;
    }
    xctx x;
    memset(&x, 0, sizeof x);
    x.cat = cat;
    x.snap = snap;
    x.s = s;
    x.q = q;
    x.p = params;
    x.cache = cache;
    x.now_ms = params && params->has_now ? params->now_ms : (int64_t)core_wall_ms();
    x.w = q->n_slots + 1;
    rowset rs = {NULL, 0, 0, x.w};
    exec_result *r = core_calloc(1, sizeof *r);
    x.slots = core_calloc(q->n_slots ? q->n_slots : 1, sizeof *x.slots);
    if (!r || !x.slots) {
        rc = core_err_nomem();
        goto done;
    }
    arrow_schema_init(&r->schema);
    if (cold_run(&x)) {
        rc = exec_subset_build(&x.subset, cat, snap, s, q, params);
        if (rc) goto done;
        if (x.subset) exec_cache_count_subset(cache);
    }
    for (size_t i = 0; i < q->n_slots; i++) {
        const lang_ir_slot *sl = &q->slots[i];
        if (sl->type < 0 || (size_t)sl->type >= cat->n_types) {
            rc = core_err(OG_E_BAD_REQUEST, "slot %zu names no type of this catalog", i);
            goto done;
        }
        x.slots[i].td = &cat->types[sl->type];
        x.slots[i].props = core_calloc(x.slots[i].td->n_props + 1, sizeof *x.slots[i].props);
        if (!x.slots[i].props) {
            rc = core_err_nomem();
            goto done;
        }
        rc = type_table(&x, sl->type, &x.slots[i].t);
        if (rc) goto done;
    }
    rc = result_schema(r, q);
    if (rc) goto done;
    /* The pipeline starts from one empty row. */
    rc = rs_reserve(&rs, 1);
    if (rc) goto done;
    for (size_t k = 0; k < x.w; k++)
        rs.r[k] = -1;
    rs.r[x.w - 1] = 0;
    rs.n = 1;
    size_t pos = 0;
    rc = run_ops(&x, q->pipeline.ops, q->pipeline.n_ops, &pos, &rs);
    if (rc) goto done;
    if (pos < q->pipeline.n_ops && q->pipeline.ops[pos].kind == LANG_IR_AGGREGATE)
        rc = aggregate(&x, q->pipeline.ops, q->pipeline.n_ops, pos, &rs, r);
    else
        rc = project(&x, &rs, r);
done:
    rs_free(&rs);
    if (x.slots) {
        for (size_t i = 0; i < q->n_slots; i++) {
            exec_table_release(x.slots[i].t);
            core_free(x.slots[i].props);
        }
        core_free(x.slots);
    }
    for (size_t i = 0; x.subset && i < cat->n_types; i++)
        exec_table_release(x.subset[i]);
    core_free(x.subset);
    exec_cache_free(own);
    if (rc) {
        exec_result_free(r);
        return rc;
    }
    *out = r;
    return 0;
}

/* ---- the read request (request.h) --------------------------------------------------------- */

void exec_read_clear(exec_read *r)
{
    exec_result_free(r->rows);
    core_free(r->query_name);
    memset(r, 0, sizeof *r);
}

/* The snapshot of graph branch `branch` (NULL, "" or "main": main) at `at` (NULL or "": its
 * head). */
static int snapshot_at(graph_snapshot **out, graph_handle *h, const char *branch, const char *at)
{
    *out = NULL;
    uint64_t mver = 0;
    if (branch && (!*branch || strcmp(branch, "main") == 0)) branch = NULL;
    if (branch) {
        lance_branch ref;
        int rc = lance_branch_get(h->s, GRAPH_MANIFEST_DIR, branch, &ref);
        if (rc == OG_E_NOT_FOUND) {
            og_error_clear();
            rc = core_err(OG_E_NOT_FOUND, "branch '%s' does not exist", branch);
            core_err_detail(CORE_ERR_KEY, branch);
        }
        if (rc) return rc;
    }
    if (at && *at) {
        int rc = graph_resolve_ref(h->s, branch, at, &mver);
        if (rc) return rc;
    }
    /* At main's head, the handle's cached state answers without a scan of the manifest. */
    return mver || branch ? graph_snapshot_load(out, h->s, branch, mver, 0)
                          : graph_handle_head_snapshot(h, out);
}

int exec_query(exec_read *out, graph_handle *h, const exec_gq_request *req, const char *branch,
               const char *at, exec_cache *cache)
{
    memset(out, 0, sizeof *out);
    exec_prepared p;
    memset(&p, 0, sizeof p);
    graph_snapshot *snap = NULL;
    const lang_catalog *cat = NULL;
    /* The query is checked against the schema the snapshot was written under: its catalog
     * names the tables the snapshot registers (a renamed type's table under the name it had
     * then) and the columns they hold then (a property dropped since is still a property). */
    int rc = snapshot_at(&snap, h, branch, at);
    if (!rc) rc = graph_handle_snapshot_catalog(h, snap, &cat);
    if (!rc) rc = exec_prepare_in(&p, h, cat, req, false);
    if (!rc) {
        out->query_name = core_strdup(p.q->name ? p.q->name : "");
        if (!out->query_name) rc = core_err_nomem();
    }
    if (!rc) rc = exec_query_run(&out->rows, cat, snap, h->s, p.q, p.params, cache);
    if (!rc) {
        snprintf(out->commit_id, sizeof out->commit_id, "%s", snap->head);
        out->manifest_version = snap->manifest_version;
    }
    graph_snapshot_free(snap);
    exec_prepared_clear(&p);
    if (rc) exec_read_clear(out);
    return rc;
}

/* ---- result accessors ------------------------------------------------------------------------ */

void exec_result_free(exec_result *r)
{
    if (!r) return;
    for (size_t i = 0; i < r->n_batches; i++)
        arrow_batch_free(r->batches[i]);
    core_free(r->batches);
    core_free(r->starts);
    arrow_schema_clear(&r->schema);
    core_free(r);
}

const arrow_schema *exec_result_schema(const exec_result *r)
{
    return &r->schema;
}
size_t exec_result_n_columns(const exec_result *r)
{
    return r->schema.n_fields;
}
const char *exec_result_column_name(const exec_result *r, size_t col)
{
    return col < r->schema.n_fields ? r->schema.fields[col].name : NULL;
}
uint64_t exec_result_n_rows(const exec_result *r)
{
    return r->n_rows;
}
size_t exec_result_n_batches(const exec_result *r)
{
    return r->n_batches;
}
arrow_batch *exec_result_batch(const exec_result *r, size_t i)
{
    return i < r->n_batches ? r->batches[i] : NULL;
}

int exec_result_cell(const exec_result *r, uint64_t row, size_t col, const arrow_array **arr,
                     int64_t *idx)
{
    if (row >= r->n_rows || col >= r->schema.n_fields)
        return core_err(OG_E_BAD_REQUEST, "cell (%llu, %zu) is outside the result",
                        (unsigned long long)row, col);
    size_t lo = 0, hi = r->n_batches;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (r->starts[mid] <= row)
            lo = mid;
        else
            hi = mid;
    }
    *arr = r->batches[lo]->columns[col];
    *idx = (int64_t)(row - r->starts[lo]);
    return 0;
}

int exec_result_row_json(const exec_result *r, uint64_t row, core_buf *out)
{
    const arrow_array *a = NULL;
    int64_t i = 0;
    int rc = exec_result_cell(r, row, 0, &a, &i);
    if (r->schema.n_fields == 0) return core_buf_append_str(out, "{}");
    if (rc) return rc;
    size_t lo = 0;
    while (lo + 1 < r->n_batches && r->starts[lo + 1] <= row)
        lo++;
    return arrow_json_row(out, r->batches[lo], i);
}

int exec_result_export(exec_result *r, struct ArrowArrayStream *out)
{
    arrow_batch **b = r->batches;
    size_t n = r->n_batches;
    r->batches = NULL;
    r->n_batches = 0;
    r->n_rows = 0;
    return arrow_stream_export(&r->schema, b, n, out);
}
