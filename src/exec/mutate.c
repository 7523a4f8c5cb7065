/* .gq mutations (insert / update / delete) turned into one graph change set by a builder the
 * coordinator calls in every prepare: each touched type's rows are viewed as the committed
 * rows at the prepare's snapshot overlaid with this query's pending rows, statements apply in
 * order against that view (read-your-writes), and the view's net effect becomes one change per
 * type. Nothing computed here outlives one prepare. The mutate request (exec_mutate,
 * request.h) checks a .gq mutation against the graph's schema and runs it this way. */
#include "exec/mutate.h"
#include "exec/request.h"

#include "exec/exec_internal.h"

#include "core/alloc.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/hmap.h"
#include "core/ulid.h"
#include "lance/keyindex.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdatomic.h>
#include <string.h>

/* ---- the per-type view -------------------------------------------------------------------- */

enum { ROW_BASE = 0, ROW_PENDING, ROW_GONE };

/* One live (or removed) row of the view: row i of batch b. */
typedef struct vrow {
    const arrow_batch *b;
    int64_t i;
    uint8_t state;
    uint8_t committed; /* its id is a committed row of the snapshot */
    int line;          /* ROW_PENDING: the source line of the statement that wrote it last */
} vrow;

typedef struct mtype {
    int used, loaded;
    const lang_typedef *t;
    arrow_schema schema; /* graph_type_schema */
    size_t first_prop;   /* column of property 0 */
    vrow *rows;
    size_t n, cap;
    core_bmap ids; /* id (borrowed from the row) -> index in rows */
    int upsert;    /* a keyed insert or an update: the change is an UPSERT */
    char **del;    /* committed ids deleted */
    size_t n_del, cap_del;
} mtype;

typedef struct mctx {
    const lang_ir_query *q;
    const exec_params *p;
    int64_t now_ms;
    const lang_catalog *cat;
    const graph_snapshot *snap;
    store *s;
    mtype *types;
    size_t n_types;
    arrow_batch **owned; /* every batch a vrow points into */
    size_t n_owned, cap_owned;
    exec_mutate_result counts; /* of the latest build */
    graph_probes *reads;       /* committed tables this build read (the coordinator's) */
} mctx;

static void mtype_clear(mtype *mt)
{
    arrow_schema_clear(&mt->schema);
    core_free(mt->rows);
    core_bmap_free(&mt->ids);
    for (size_t i = 0; i < mt->n_del; i++)
        core_free(mt->del[i]);
    core_free(mt->del);
    memset(mt, 0, sizeof *mt);
}

static void mctx_reset(mctx *m)
{
    for (size_t i = 0; m->types && i < m->n_types; i++)
        mtype_clear(&m->types[i]);
    core_free(m->types);
    m->types = NULL;
    m->n_types = 0;
    for (size_t i = 0; i < m->n_owned; i++)
        arrow_batch_free(m->owned[i]);
    core_free(m->owned);
    m->owned = NULL;
    m->n_owned = m->cap_owned = 0;
}

static int own_batch(mctx *m, arrow_batch *b)
{
    if (m->n_owned == m->cap_owned) {
        size_t nc = m->cap_owned ? m->cap_owned * 2 : 16;
        arrow_batch **no = core_realloc(m->owned, nc * sizeof *no);
        if (!no) {
            arrow_batch_free(b);
            return core_err_nomem();
        }
        m->owned = no;
        m->cap_owned = nc;
    }
    m->owned[m->n_owned++] = b;
    return 0;
}

static const uint8_t *row_id(const vrow *r, size_t *n)
{
    return arrow_array_get_bytes(r->b->columns[0], r->i, n);
}

/* Point id (n bytes, in row r's batch) at row r; the key then borrows that row's bytes. */
static int ids_set(mtype *mt, const uint8_t *id, size_t n, size_t r)
{
    core_bmap_entry *e;
    int fresh;
    int rc = core_bmap_put(&mt->ids, id, n, &e, &fresh);
    if (rc) return rc;
    e->key = id;
    e->val = (int64_t)r;
    return 0;
}

/* The row of id in the view, or NULL. */
static vrow *ids_row(const mtype *mt, const void *id, size_t n)
{
    const core_bmap_entry *e = core_bmap_find(&mt->ids, id, n);
    return e ? &mt->rows[e->val] : NULL;
}

static int push_row(mtype *mt, const arrow_batch *b, int64_t i, int state, int committed)
{
    if (mt->n == mt->cap) {
        size_t nc = mt->cap ? mt->cap * 2 : 64;
        vrow *nr = core_realloc(mt->rows, nc * sizeof *nr);
        if (!nr) return core_err_nomem();
        mt->rows = nr;
        mt->cap = nc;
    }
    vrow *r = &mt->rows[mt->n];
    r->b = b;
    r->i = i;
    r->state = (uint8_t)state;
    r->committed = (uint8_t)committed;
    r->line = 0;
    size_t n;
    const uint8_t *id = row_id(r, &n);
    int rc = ids_set(mt, id, n, mt->n);
    if (rc) return rc;
    mt->n++;
    return 0;
}

static int type_use(mctx *m, int ti, mtype **out)
{
    if (ti < 0 || (size_t)ti >= m->n_types)
        return core_err(OG_E_BAD_REQUEST, "mutation names type index %d, not in the catalog", ti);
    mtype *mt = &m->types[ti];
    if (!mt->used) {
        mt->t = &m->cat->types[ti];
        int rc = graph_type_schema(&mt->schema, mt->t);
        if (rc) return rc;
        mt->used = 1;
        mt->first_prop = mt->t->kind == LANG_EDGE ? 3 : 1;
    }
    *out = mt;
    return 0;
}

/* Read the committed rows of type ti at the snapshot into the view. Pending rows already there
 * (inserts before the first read) supersede committed rows with their id. */
static int type_load(mctx *m, int ti, mtype **out)
{
    mtype *mt = NULL;
    int rc = type_use(m, ti, &mt);
    if (rc) return rc;
    *out = mt;
    if (mt->loaded) return 0;
    mt->loaded = 1;
    char alias[512];
    if ((rc = graph_table_alias(alias, sizeof alias, mt->t->kind, mt->t->name))) return rc;
    const graph_table *gt = graph_snapshot_table(m->snap, alias);
    if (!gt) return 0;
    /* a read that decides the plan: it joins the write's read set */
    if (m->reads && (rc = graph_probes_add(m->reads, alias))) return rc;
    const char **cols = core_calloc(mt->schema.n_fields, sizeof *cols);
    if (!cols) return core_err_nomem();
    for (size_t c = 0; c < mt->schema.n_fields; c++)
        cols[c] = mt->schema.fields[c].name;
    lance_dataset *ds = NULL;
    arrow_batch *b = NULL;
    rc = graph_table_open(&ds, m->s, gt, LANCE_ACCESS_READ);
    if (!rc) {
        lance_scan_options so = LANCE_SCAN_OPTIONS_INIT;
        so.columns = cols;
        so.n_columns = mt->schema.n_fields;
        rc = lance_dataset_scan_all(&b, ds, &so);
    }
    lance_dataset_free(ds);
    core_free(cols);
    if (rc) {
        core_err_prefix("reading %s", alias);
        return rc;
    }
    if ((rc = own_batch(m, b))) return rc;
    for (int64_t i = 0; i < b->num_rows; i++) {
        size_t n;
        const uint8_t *id = arrow_array_get_bytes(b->columns[0], i, &n);
        vrow *v = ids_row(mt, id, n);
        if (v) {
            v->committed = 1;
            continue;
        }
        if ((rc = push_row(mt, b, i, ROW_BASE, 1))) return rc;
    }
    return 0;
}

static const lang_value *key_value(int scalar, const lang_value *v, lang_value *tmp);
static int expr_value(const mctx *m, const lang_ir_expr *e, lang_value *tmp,
                      const lang_value **out);

/* Add the committed rows of type ti at these addresses of its table (any order) to the view:
 * every column, read only around those rows. Ids already in the view are left as they are
 * (a pending row supersedes its committed one; a row loaded before stays). */
static int view_add_committed(mctx *m, mtype *mt, const lance_dataset *ds, const uint64_t *addrs,
                              size_t n)
{
    if (!n) return 0;
    size_t nf = mt->schema.n_fields;
    arrow_array **cols = core_calloc(nf, sizeof *cols);
    arrow_batch *b = NULL;
    int rc = cols ? 0 : core_err_nomem();
    for (size_t c = 0; rc == 0 && c < nf; c++)
        rc = lance_dataset_take_column(&cols[c], ds, mt->schema.fields[c].name, addrs, n);
    if (rc == 0) rc = arrow_batch_new(&b, &mt->schema, cols, nf);
    for (size_t c = 0; cols && c < nf; c++)
        arrow_array_free(cols[c]);
    core_free(cols);
    if (rc) return rc;
    if ((rc = own_batch(m, b))) return rc;
    for (int64_t i = 0; rc == 0 && i < b->num_rows; i++) {
        size_t len;
        const uint8_t *id = arrow_array_get_bytes(b->columns[0], i, &len);
        vrow *v = ids_row(mt, id, len);
        if (v) {
            v->committed = 1;
            continue;
        }
        rc = push_row(mt, b, i, ROW_BASE, 1);
    }
    return rc;
}

static int cmp_addr(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Bring into the view the committed rows of type ti whose column columns[k] (id, or src/dst
 * of an edge) is one of keys[0..n) for some k, found through the table's key indexes and
 * taken once each: what a mutation whose where names a key, or a node delete's cascade,
 * needs, instead of the whole table. When they are a large share of the table, it is read
 * whole instead. A type already loaded whole needs nothing. */
static int type_load_keys(mctx *m, int ti, const char *const *columns, size_t n_columns,
                          char *const *keys, size_t n)
{
    mtype *mt = NULL;
    int rc = type_use(m, ti, &mt);
    if (rc || mt->loaded || !n) return rc;
    char alias[512];
    if ((rc = graph_table_alias(alias, sizeof alias, mt->t->kind, mt->t->name))) return rc;
    const graph_table *gt = graph_snapshot_table(m->snap, alias);
    if (!gt) return 0;
    if (m->reads && (rc = graph_probes_add(m->reads, alias))) return rc; /* decides the plan */
    lance_dataset *ds = NULL;
    lance_kix_addrs all = {0};
    rc = graph_table_open(&ds, m->s, gt, LANCE_ACCESS_READ);
    for (size_t k = 0; rc == 0 && k < n_columns; k++) {
        lance_kix_addrs found = {0};
        rc = lance_kix_lookup_strs(&found, ds, columns[k], keys, n);
        if (rc == 0 && found.n) {
            uint64_t *na = core_realloc(all.a, (all.n + found.n) * sizeof *na);
            if (!na)
                rc = core_err_nomem();
            else {
                memcpy(na + all.n, found.a, found.n * sizeof *na);
                all.a = na;
                all.n += found.n;
                all.cap = all.n;
            }
        }
        lance_kix_addrs_clear(&found);
    }
    /* an edge found from both ends (or a self-loop) once */
    size_t u = 0;
    if (rc == 0 && all.n > 1) qsort(all.a, all.n, sizeof *all.a, cmp_addr);
    for (size_t i = 0; rc == 0 && i < all.n; i++)
        if (!u || all.a[u - 1] != all.a[i]) all.a[u++] = all.a[i];
    uint64_t rows = rc == 0 && ds ? lance_dataset_physical_rows(ds) : 0;
    int whole = rc == 0 && (uint64_t)u * 8 > rows;
    if (rc == 0 && !whole) rc = view_add_committed(m, mt, ds, all.a, u);
    if (rc) core_err_prefix("reading %s", alias);
    lance_kix_addrs_clear(&all);
    lance_dataset_free(ds);
    if (rc == 0 && whole) {
        mtype *full;
        rc = type_load(m, ti, &full);
    }
    return rc;
}

/* The id a where `id = v` or `<single key> = v` selects (owned; NULL when the where is not of
 * that form, or its value cannot name a row). */
static int where_key_id(const mctx *m, const lang_typedef *t, const lang_ir_op *op, char **out)
{
    *out = NULL;
    if (op->n_preds != 1) return 0;
    const lang_ir_pred *p = &op->preds[0];
    if (p->op != GQ_OP_EQ) return 0;
    int is_id = p->lhs.kind == LANG_IR_X_ID;
    int is_key = t->kind == LANG_NODE && p->lhs.kind == LANG_IR_X_PROP && t->n_key == 1 &&
                 p->lhs.prop == t->key[0];
    if (!is_id && !is_key) return 0;
    lang_value tmp, ktmp;
    const lang_value *v = NULL;
    int rc = expr_value(m, &p->rhs, &tmp, &v);
    if (rc || v->kind == LANG_V_NULL) return rc;
    if (is_id) {
        if (v->kind != LANG_V_STRING || !v->s) return 0;
        return (*out = core_strdup(v->s)) ? 0 : core_err_nomem();
    }
    v = key_value(t->props[t->key[0]].type.scalar, v, &ktmp);
    if (lang_key_id(out, t, v) != 0) {
        og_error_clear(); /* not a key value: the where is evaluated over the whole table */
        *out = NULL;
    }
    return 0;
}

static _Atomic int partial_loads = 1;

#ifdef OG_TESTING
void exec_mutate_set_partial_loads(int on)
{
    partial_loads = on;
}
#endif

/* Load what an update/delete's where needs: the rows of one key, or the whole type. */
static int type_load_for(mctx *m, const lang_ir_op *op, mtype **out)
{
    mtype *mt = NULL;
    int rc = type_use(m, op->type, &mt);
    if (rc) return rc;
    *out = mt;
    char *id = NULL;
    if (!partial_loads) return type_load(m, op->type, out);
    if (!mt->loaded && (rc = where_key_id(m, mt->t, op, &id)) == 0 && id) {
        static const char *const idcol[] = {GRAPH_COL_ID};
        rc = type_load_keys(m, op->type, idcol, 1, &id, 1);
        core_free(id);
        return rc;
    }
    core_free(id);
    return rc ? rc : type_load(m, op->type, out);
}

/* ---- values ------------------------------------------------------------------------------- */

/* The value of a LITERAL / PARAM / NOW expression (tmp receives now()). */
static int expr_value(const mctx *m, const lang_ir_expr *e, lang_value *tmp, const lang_value **out)
{
    switch (e->kind) {
    case LANG_IR_X_LITERAL:
        *out = &e->lit;
        return 0;
    case LANG_IR_X_PARAM:
        if (e->param < 0 || (size_t)e->param >= m->q->n_params)
            return core_err(OG_E_INTERNAL, "param %d out of range", e->param);
        if (!m->p) {
            memset(tmp, 0, sizeof *tmp); /* absent nullable param: NULL */
            *out = tmp;
            return 0;
        }
        *out = &m->p->vals[e->param];
        return 0;
    case LANG_IR_X_NOW:
        memset(tmp, 0, sizeof *tmp);
        tmp->kind = LANG_V_DATETIME;
        tmp->checked = 1;
        tmp->i = m->now_ms;
        *out = tmp;
        return 0;
    default:
        return core_err(OG_E_UNSUPPORTED, "expression kind %d is not a mutation value", e->kind);
    }
}

static int value_err(const lang_typedef *t, const lang_prop *p, const char *why)
{
    int rc = core_err(OG_E_BAD_REQUEST, "%s.%s: %s", t->name, p ? p->name : "?", why);
    if (p) core_err_detail(CORE_ERR_KEY, p->name);
    return rc;
}

/* Signed view of an INT value; 0 when it does not fit in int64. */
static int int_signed(const lang_value *v, int64_t *out)
{
    if (v->neg) {
        if (v->u > (uint64_t)INT64_MAX + 1u) return 0;
        *out = v->u == (uint64_t)INT64_MAX + 1u ? INT64_MIN : -(int64_t)v->u;
        return 1;
    }
    if (v->u > (uint64_t)INT64_MAX) return 0;
    *out = (int64_t)v->u;
    return 1;
}

static int append_scalar(arrow_builder *b, int scalar, const lang_value *v, const lang_typedef *t,
                         const lang_prop *p)
{
    switch (scalar) {
    case LANG_S_STRING:
    case LANG_S_BLOB:
        if (v->kind != LANG_V_STRING || !v->s) return value_err(t, p, "expected a string");
        return arrow_builder_append_bytes(b, v->s, strlen(v->s));
    case LANG_S_BOOL:
        if (v->kind != LANG_V_BOOL) return value_err(t, p, "expected a Bool");
        return arrow_builder_append_bool(b, v->u != 0);
    case LANG_S_I32:
    case LANG_S_I64: {
        int64_t x;
        if (v->kind != LANG_V_INT) return value_err(t, p, "expected an integer");
        if (!int_signed(v, &x) || (scalar == LANG_S_I32 && (x < INT32_MIN || x > INT32_MAX)))
            return value_err(t, p, "integer out of range");
        return arrow_builder_append_int(b, x);
    }
    case LANG_S_U32:
    case LANG_S_U64:
        if (v->kind != LANG_V_INT) return value_err(t, p, "expected an integer");
        if ((v->neg && v->u) || (scalar == LANG_S_U32 && v->u > UINT32_MAX))
            return value_err(t, p, "integer out of range");
        return arrow_builder_append_uint(b, v->u);
    case LANG_S_F32:
    case LANG_S_F64: {
        double d;
        int64_t x;
        if (v->kind == LANG_V_FLOAT)
            d = v->f;
        else if (v->kind == LANG_V_INT)
            d = int_signed(v, &x) ? (double)x : (double)v->u;
        else
            return value_err(t, p, "expected a number");
        if (scalar == LANG_S_F32) {
            if (isfinite(d) && fabs(d) > FLT_MAX) return value_err(t, p, "out of range for F32");
            d = (double)(float)d;
        }
        return arrow_builder_append_double(b, d);
    }
    case LANG_S_DATE:
    case LANG_S_DATETIME: {
        int64_t x;
        if (v->kind == LANG_V_DATE || v->kind == LANG_V_DATETIME) {
            if (v->kind != (scalar == LANG_S_DATE ? LANG_V_DATE : LANG_V_DATETIME))
                return value_err(t, p,
                                 scalar == LANG_S_DATE ? "expected a Date" : "expected a DateTime");
            x = v->i;
            if (!v->checked && (!v->s || (scalar == LANG_S_DATE ? lang_parse_date(v->s, &x)
                                                                : lang_parse_datetime(v->s, &x))))
                return value_err(t, p, "not a valid date");
        } else if (v->kind == LANG_V_INT) {
            if (!int_signed(v, &x)) return value_err(t, p, "out of range");
        } else {
            return value_err(t, p, "expected a date");
        }
        if (scalar == LANG_S_DATE && (x < INT32_MIN || x > INT32_MAX))
            return value_err(t, p, "out of range for Date");
        return arrow_builder_append_int(b, x);
    }
    default:
        return core_err(OG_E_INTERNAL, "unknown scalar %d", scalar);
    }
}

/* Append property p's value v to builder b (the column's builder). */
static int append_value(arrow_builder *b, const lang_typedef *t, const lang_prop *p,
                        const lang_value *v)
{
    const lang_type *ty = &p->type;
    if (!v || v->kind == LANG_V_NULL) {
        if (!ty->nullable) return value_err(t, p, "null for a non-nullable property");
        return arrow_builder_append_null(b);
    }
    switch (ty->kind) {
    case LANG_TY_SCALAR:
        return append_scalar(b, ty->scalar, v, t, p);
    case LANG_TY_ENUM:
        /* Membership is validation's (graph_validate names the value). */
        if (v->kind != LANG_V_STRING || !v->s) return value_err(t, p, "expected an enum string");
        return arrow_builder_append_bytes(b, v->s, strlen(v->s));
    case LANG_TY_LIST: {
        if (v->kind != LANG_V_LIST) return value_err(t, p, "expected a list");
        arrow_builder *child = arrow_builder_child(b, 0);
        for (size_t i = 0; i < v->n; i++) {
            if (v->items[i].kind == LANG_V_NULL) return value_err(t, p, "a list item is null");
            int rc = append_scalar(child, ty->scalar, &v->items[i], t, p);
            if (rc) return rc;
        }
        return arrow_builder_append_list(b, (int64_t)v->n);
    }
    case LANG_TY_VECTOR: {
        if (v->kind != LANG_V_LIST) return value_err(t, p, "expected a vector");
        if (v->n != ty->dim) return value_err(t, p, "vector has the wrong number of values");
        arrow_builder *child = arrow_builder_child(b, 0);
        for (size_t i = 0; i < v->n; i++) {
            int rc = append_scalar(child, LANG_S_F32, &v->items[i], t, p);
            if (rc) return rc;
        }
        return arrow_builder_append_valid(b);
    }
    default:
        return core_err(OG_E_INTERNAL, "unknown property type kind %d", ty->kind);
    }
}

/* v as the key scalar expects it (ints become floats for float keys, as the loader reads). */
static const lang_value *key_value(int scalar, const lang_value *v, lang_value *tmp)
{
    if ((scalar == LANG_S_F32 || scalar == LANG_S_F64) && v->kind == LANG_V_INT) {
        int64_t x;
        *tmp = *v;
        tmp->kind = LANG_V_FLOAT;
        tmp->f = int_signed(v, &x) ? (double)x : (double)v->u;
        if (scalar == LANG_S_F32) tmp->f = (double)(float)tmp->f;
        return tmp;
    }
    if (scalar == LANG_S_F32 && v->kind == LANG_V_FLOAT) {
        *tmp = *v;
        tmp->f = (double)(float)v->f;
        return tmp;
    }
    if ((scalar == LANG_S_DATE || scalar == LANG_S_DATETIME) && v->kind == LANG_V_INT) {
        int64_t x = 0;
        (void)int_signed(v, &x);
        memset(tmp, 0, sizeof *tmp);
        tmp->kind = scalar == LANG_S_DATE ? LANG_V_DATE : LANG_V_DATETIME;
        tmp->checked = 1;
        tmp->i = x;
        return tmp;
    }
    return v;
}

/* A node id given as an edge endpoint: a string is the id itself; a single-key node type's key
 * value derives it. */
static int endpoint_id(const mctx *m, const lang_typedef *node, const lang_ir_expr *e,
                       const char *side, char **out)
{
    *out = NULL;
    lang_value tmp, ktmp;
    const lang_value *v = NULL;
    int rc = expr_value(m, e, &tmp, &v);
    if (rc) return rc;
    if (v->kind == LANG_V_STRING && v->s) {
        if (!v->s[0])
            return core_err(OG_E_BAD_REQUEST, "%s: an empty %s node id", node->name, side);
        return (*out = core_strdup(v->s)) ? 0 : core_err_nomem();
    }
    if (v->kind == LANG_V_NULL)
        return core_err(OG_E_BAD_REQUEST, "edge %s is null (expected a %s id)", side, node->name);
    if (node->n_key != 1)
        return core_err(OG_E_BAD_REQUEST, "edge %s: a %s id is a string", side, node->name);
    v = key_value(node->props[node->key[0]].type.scalar, v, &ktmp);
    rc = lang_key_id(out, node, v);
    if (rc) core_err_prefix("edge %s", side);
    return rc;
}

/* ---- building rows ------------------------------------------------------------------------ */

typedef struct rb {
    const arrow_schema *sc;
    arrow_builder **b;
} rb;

static void rb_free(rb *r)
{
    for (size_t c = 0; r->b && c < r->sc->n_fields; c++)
        arrow_builder_free(r->b[c]);
    core_free(r->b);
    r->b = NULL;
}

static int rb_init(rb *r, const arrow_schema *sc)
{
    r->sc = sc;
    r->b = core_calloc(sc->n_fields ? sc->n_fields : 1, sizeof *r->b);
    if (!r->b) return core_err_nomem();
    for (size_t c = 0; c < sc->n_fields; c++) {
        int rc = arrow_builder_new(&r->b[c], &sc->fields[c].type);
        if (rc) return rc;
    }
    return 0;
}

static int rb_finish(rb *r, arrow_batch **out)
{
    size_t nf = r->sc->n_fields;
    arrow_array **cols = core_calloc(nf ? nf : 1, sizeof *cols);
    if (!cols) return core_err_nomem();
    int rc = 0;
    for (size_t c = 0; c < nf && !rc; c++)
        rc = arrow_builder_finish(r->b[c], &cols[c]);
    if (!rc) rc = arrow_batch_new(out, r->sc, cols, nf);
    for (size_t c = 0; c < nf; c++)
        arrow_array_free(cols[c]);
    core_free(cols);
    return rc;
}

/* Index of the assignment to property `prop` in op, or -1. */
static int assign_of(const lang_ir_op *op, size_t prop)
{
    for (size_t a = 0; a < op->n_assigns; a++)
        if (op->assigns[a].prop == (int)prop) return (int)a;
    return -1;
}

static int append_assign(const mctx *m, arrow_builder *b, const lang_typedef *t, size_t prop,
                         const lang_ir_op *op, int a)
{
    lang_value tmp;
    const lang_value *v = NULL;
    if (a >= 0) {
        int rc = expr_value(m, &op->assigns[a].value, &tmp, &v);
        if (rc) return rc;
    }
    return append_value(b, t, &t->props[prop], v);
}

/* ---- statements --------------------------------------------------------------------------- */

static int op_insert(mctx *m, const lang_ir_op *op)
{
    mtype *mt = NULL;
    int rc = type_use(m, op->type, &mt);
    if (rc) return rc;
    const lang_typedef *t = mt->t;
    int keyed = t->kind == LANG_NODE && t->n_key > 0;
    if (op->kind == LANG_IR_INSERT_EDGE && (t->kind != LANG_EDGE || !op->from || !op->to))
        return core_err(OG_E_BAD_REQUEST, "insert %s: an edge insert needs from and to", t->name);
    if (op->kind == LANG_IR_INSERT_NODE && t->kind != LANG_NODE)
        return core_err(OG_E_BAD_REQUEST, "insert %s: not a node type", t->name);
    for (size_t a = 0; a < op->n_assigns; a++)
        if (op->assigns[a].prop < 0 || (size_t)op->assigns[a].prop >= t->n_props)
            return core_err(OG_E_BAD_REQUEST, "insert %s: property %d out of range", t->name,
                            op->assigns[a].prop);
    char *id = NULL, *src = NULL, *dst = NULL;
    lang_value *keyvals = NULL;
    arrow_batch *b = NULL;
    rb r = {0};
    if ((rc = rb_init(&r, &mt->schema))) goto out;
    for (size_t i = 0; i < t->n_props && !rc; i++)
        rc = append_assign(m, r.b[mt->first_prop + i], t, i, op, assign_of(op, i));
    if (rc) goto out;
    if (keyed) {
        keyvals = core_calloc(t->n_key, sizeof *keyvals);
        if (!keyvals) {
            rc = core_err_nomem();
            goto out;
        }
        for (size_t k = 0; k < t->n_key && !rc; k++) {
            int a = assign_of(op, (size_t)t->key[k]);
            lang_value tmp, ktmp;
            const lang_value *v = NULL;
            if (a < 0) {
                rc = core_err(OG_E_BAD_REQUEST, "insert %s: key property '%s' is not set", t->name,
                              t->props[t->key[k]].name);
                break;
            }
            if ((rc = expr_value(m, &op->assigns[a].value, &tmp, &v))) break;
            keyvals[k] = *key_value(t->props[t->key[k]].type.scalar, v, &ktmp);
        }
        if (!rc && (rc = lang_key_id(&id, t, keyvals)))
            core_err_prefix("insert %s: cannot derive the id from @key", t->name);
    } else {
        core_ulid u;
        char text[CORE_ULID_LEN + 1];
        if (!(rc = core_ulid_new(&u))) {
            core_ulid_format(&u, text);
            if (!(id = core_strdup(text))) rc = core_err_nomem();
        }
    }
    if (!rc) rc = arrow_builder_append_str(r.b[0], id);
    if (!rc && t->kind == LANG_EDGE) {
        rc = endpoint_id(m, &m->cat->types[t->from], op->from, "from", &src);
        if (!rc) rc = endpoint_id(m, &m->cat->types[t->to], op->to, "to", &dst);
        if (!rc) rc = arrow_builder_append_str(r.b[1], src);
        if (!rc) rc = arrow_builder_append_str(r.b[2], dst);
    }
    if (!rc) rc = rb_finish(&r, &b);
    if (!rc) {
        rc = own_batch(m, b);
        b = NULL;
    }
    if (rc) goto out;
    {
        const arrow_batch *nb = m->owned[m->n_owned - 1];
        vrow *old = keyed ? ids_row(mt, id, strlen(id)) : NULL;
        if (old && old->state != ROW_GONE) {
            /* An upsert of a row the view holds: the new row replaces it in place. */
            old->b = nb;
            old->i = 0;
            old->state = ROW_PENDING;
            old->line = op->pos.line;
            size_t n;
            const uint8_t *k = row_id(old, &n);
            rc = ids_set(mt, k, n, (size_t)(old - mt->rows));
        } else {
            rc = push_row(mt, nb, 0, ROW_PENDING, 0);
            if (!rc) mt->rows[mt->n - 1].line = op->pos.line;
        }
    }
    if (rc) goto out;
    if (keyed) mt->upsert = 1;
    if (t->kind == LANG_NODE)
        m->counts.nodes_inserted++;
    else
        m->counts.edges_inserted++;
out:
    rb_free(&r);
    arrow_batch_free(b);
    core_free(keyvals);
    core_free(id);
    core_free(src);
    core_free(dst);
    return rc;
}

/* The column a where predicate's left side reads. */
static int where_column(const mtype *mt, const lang_ir_pred *p, size_t *col)
{
    switch (p->lhs.kind) {
    case LANG_IR_X_ID:
        *col = 0;
        return 0;
    case LANG_IR_X_PROP:
        if (p->lhs.prop < 0 || (size_t)p->lhs.prop >= mt->t->n_props) break;
        *col = mt->first_prop + (size_t)p->lhs.prop;
        return 0;
    case LANG_IR_X_EDGE_SRC:
    case LANG_IR_X_EDGE_DST:
        if (mt->t->kind != LANG_EDGE) break;
        *col = p->lhs.kind == LANG_IR_X_EDGE_SRC ? 1 : 2;
        return 0;
    default:
        break;
    }
    return core_err(OG_E_BAD_REQUEST, "%s: unsupported where operand (kind %d)", mt->t->name,
                    p->lhs.kind);
}

/* Indexes of the live rows of mt matching op's where (all conjuncts). */
static int match_rows(const mctx *m, const mtype *mt, const lang_ir_op *op, size_t **out,
                      size_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    size_t *cols = core_calloc(op->n_preds ? op->n_preds : 1, sizeof *cols);
    lang_value *tmps = core_calloc(op->n_preds ? op->n_preds : 1, sizeof *tmps);
    const lang_value **rhs = core_calloc(op->n_preds ? op->n_preds : 1, sizeof *rhs);
    size_t *idx = core_malloc((mt->n ? mt->n : 1) * sizeof *idx);
    int rc = cols && tmps && rhs && idx ? 0 : core_err_nomem();
    for (size_t k = 0; !rc && k < op->n_preds; k++) {
        if (op->preds[k].op < GQ_OP_EQ || op->preds[k].op > GQ_OP_STARTS_WITH)
            rc = core_err(OG_E_UNSUPPORTED, "%s: unsupported where operator", mt->t->name);
        if (!rc) rc = where_column(mt, &op->preds[k], &cols[k]);
        if (!rc) rc = expr_value(m, &op->preds[k].rhs, &tmps[k], &rhs[k]);
    }
    size_t n = 0;
    for (size_t r = 0; !rc && r < mt->n; r++) {
        const vrow *v = &mt->rows[r];
        if (v->state == ROW_GONE) continue;
        int ok = 1;
        for (size_t k = 0; ok && k < op->n_preds; k++)
            ok = exec_pred_holds_cell(op->preds[k].op, v->b->columns[cols[k]], v->i, rhs[k]);
        if (ok) idx[n++] = r;
    }
    core_free(cols);
    core_free(tmps);
    core_free(rhs);
    if (rc) {
        core_free(idx);
        return rc;
    }
    *out = idx;
    *n_out = n;
    return 0;
}

static int op_update(mctx *m, const lang_ir_op *op)
{
    mtype *mt = NULL;
    int rc = type_load_for(m, op, &mt);
    if (rc) return rc;
    const lang_typedef *t = mt->t;
    if (t->kind != LANG_NODE)
        return core_err(OG_E_BAD_REQUEST, "update %s: edges cannot be updated", t->name);
    for (size_t a = 0; a < op->n_assigns; a++) {
        int p = op->assigns[a].prop;
        if (p < 0 || (size_t)p >= t->n_props)
            return core_err(OG_E_BAD_REQUEST, "update %s: property %d out of range", t->name, p);
        if (t->props[p].is_key)
            return core_err(OG_E_BAD_REQUEST, "update %s: key property '%s' cannot be updated",
                            t->name, t->props[p].name);
    }
    size_t *hit = NULL, n_hit = 0;
    if ((rc = match_rows(m, mt, op, &hit, &n_hit)) || !n_hit) {
        core_free(hit);
        return rc;
    }
    /* The matched rows, rewritten whole (ids kept) into one new batch. */
    rb r = {0};
    arrow_batch *b = NULL;
    rc = rb_init(&r, &mt->schema);
    for (size_t c = 0; !rc && c < mt->schema.n_fields; c++) {
        int a = c >= mt->first_prop ? assign_of(op, c - mt->first_prop) : -1;
        for (size_t h = 0; !rc && h < n_hit; h++) {
            const vrow *v = &mt->rows[hit[h]];
            rc = a >= 0 ? append_assign(m, r.b[c], t, c - mt->first_prop, op, a)
                        : arrow_builder_append_from(r.b[c], v->b->columns[c], v->i);
        }
    }
    if (!rc) rc = rb_finish(&r, &b);
    rb_free(&r);
    if (!rc) rc = own_batch(m, b);
    for (size_t h = 0; !rc && h < n_hit; h++) {
        vrow *v = &mt->rows[hit[h]];
        v->b = m->owned[m->n_owned - 1];
        v->i = (int64_t)h;
        v->state = ROW_PENDING;
        v->line = op->pos.line;
        size_t n;
        const uint8_t *k = row_id(v, &n);
        rc = ids_set(mt, k, n, hit[h]);
    }
    core_free(hit);
    if (rc) return rc;
    mt->upsert = 1;
    m->counts.nodes_updated += n_hit;
    return 0;
}

static int add_del(mtype *mt, const uint8_t *id, size_t n)
{
    if (mt->n_del == mt->cap_del) {
        size_t nc = mt->cap_del ? mt->cap_del * 2 : 16;
        char **nd = core_realloc(mt->del, nc * sizeof *nd);
        if (!nd) return core_err_nomem();
        mt->del = nd;
        mt->cap_del = nc;
    }
    char *s = core_malloc(n + 1);
    if (!s) return core_err_nomem();
    memcpy(s, id, n);
    s[n] = '\0';
    mt->del[mt->n_del++] = s;
    return 0;
}

/* Remove row r of the view (a committed id joins the type's DELETE list). */
static int remove_row(mtype *mt, size_t r)
{
    vrow *v = &mt->rows[r];
    v->state = ROW_GONE;
    if (!v->committed) return 0;
    size_t n;
    const uint8_t *id = row_id(v, &n);
    return add_del(mt, id, n);
}

static int op_delete(mctx *m, const lang_ir_op *op)
{
    mtype *mt = NULL;
    int rc = type_load_for(m, op, &mt);
    if (rc) return rc;
    size_t *hit = NULL, n_hit = 0;
    if ((rc = match_rows(m, mt, op, &hit, &n_hit)) || !n_hit) {
        core_free(hit);
        return rc;
    }
    int ti = op->type;
    int is_node = mt->t->kind == LANG_NODE;
    core_bmap gone = CORE_BMAP_INIT;
    char **gone_ids = is_node ? core_calloc(n_hit, sizeof *gone_ids) : NULL;
    if (is_node && !gone_ids) rc = core_err_nomem();
    for (size_t h = 0; !rc && h < n_hit; h++) {
        if (is_node) {
            size_t n;
            const uint8_t *id = row_id(&mt->rows[hit[h]], &n);
            core_bmap_entry *e;
            int fresh;
            rc = core_bmap_put(&gone, id, n, &e, &fresh);
            if (!rc && !(gone_ids[h] = core_malloc(n + 1))) rc = core_err_nomem();
            if (!rc) {
                memcpy(gone_ids[h], id, n);
                gone_ids[h][n] = '\0';
            }
        }
        if (!rc) rc = remove_row(mt, hit[h]);
    }
    core_free(hit);
    if (is_node)
        m->counts.nodes_deleted += n_hit;
    else
        m->counts.edges_deleted += n_hit;
    /* Cascade: every edge (of any type) with a removed node as an endpoint goes too. */
    for (size_t et = 0; !rc && is_node && et < m->n_types; et++) {
        const lang_typedef *e = &m->cat->types[et];
        if (e->kind != LANG_EDGE || (e->from != ti && e->to != ti)) continue;
        mtype *emt;
        /* the committed edges of the removed nodes, through the edge table's src/dst indexes */
        if (!partial_loads && (rc = type_load(m, (int)et, &emt))) break;
        const char *ends[2];
        size_t n_ends = 0;
        if (e->from == ti) ends[n_ends++] = GRAPH_COL_SRC;
        if (e->to == ti) ends[n_ends++] = GRAPH_COL_DST;
        if ((rc = type_load_keys(m, (int)et, ends, n_ends, gone_ids, n_hit))) break;
        if ((rc = type_use(m, (int)et, &emt))) break;
        for (size_t r = 0; !rc && r < emt->n; r++) {
            vrow *v = &emt->rows[r];
            if (v->state == ROW_GONE) continue;
            int hit_edge = 0;
            for (int side = 0; side < 2 && !hit_edge; side++) {
                if ((side ? e->to : e->from) != ti) continue;
                size_t n;
                const uint8_t *nid = arrow_array_get_bytes(v->b->columns[1 + side], v->i, &n);
                hit_edge = core_bmap_find(&gone, nid, n) != NULL;
            }
            if (!hit_edge) continue;
            rc = remove_row(emt, r);
            m->counts.edges_deleted++;
        }
    }
    core_bmap_free(&gone);
    for (size_t h = 0; gone_ids && h < n_hit; h++)
        core_free(gone_ids[h]);
    core_free(gone_ids);
    return rc;
}

/* ---- the builder -------------------------------------------------------------------------- */

/* The view's net effect: per type in catalog order, the pending rows as INSERT (only strict
 * inserts) or UPSERT, each with the source line of the statement that wrote it (so validation
 * errors name it), or the removed committed ids as DELETE. */
static int finish(mctx *m, graph_change_set *out)
{
    out->file = m->q->file;
    size_t n = 0;
    for (size_t i = 0; i < m->n_types; i++)
        n += m->types[i].used;
    if (!n) return 0;
    out->changes = core_calloc(n, sizeof *out->changes);
    if (!out->changes) return core_err_nomem();
    for (size_t ti = 0; ti < m->n_types; ti++) {
        mtype *mt = &m->types[ti];
        if (!mt->used) continue;
        size_t pending = 0;
        for (size_t r = 0; r < mt->n; r++)
            pending += mt->rows[r].state == ROW_PENDING;
        if (pending && mt->n_del)
            return core_err(OG_E_BAD_REQUEST,
                            "%s: a mutation may not both write and delete rows of one type",
                            mt->t->name);
        graph_change *ch = &out->changes[out->n];
        if (mt->n_del) {
            ch->type_index = (int)ti;
            ch->mode = GRAPH_CHANGE_DELETE;
            ch->delete_ids = mt->del;
            ch->n_delete_ids = mt->n_del;
            mt->del = NULL;
            mt->n_del = mt->cap_del = 0;
            out->n++;
            continue;
        }
        if (!pending) continue;
        rb r = {0};
        int rc = rb_init(&r, &mt->schema);
        for (size_t c = 0; !rc && c < mt->schema.n_fields; c++)
            for (size_t i = 0; !rc && i < mt->n; i++) {
                const vrow *v = &mt->rows[i];
                if (v->state == ROW_PENDING)
                    rc = arrow_builder_append_from(r.b[c], v->b->columns[c], v->i);
            }
        if (!rc) rc = rb_finish(&r, &ch->rows);
        rb_free(&r);
        if (!rc && m->q->file && !(ch->lines = core_calloc(pending, sizeof *ch->lines))) {
            arrow_batch_free(ch->rows);
            ch->rows = NULL;
            rc = core_err_nomem();
        }
        for (size_t i = 0, k = 0; !rc && ch->lines && i < mt->n; i++)
            if (mt->rows[i].state == ROW_PENDING) ch->lines[k++] = (uint64_t)mt->rows[i].line;
        if (rc) return rc;
        ch->type_index = (int)ti;
        ch->mode = mt->upsert ? GRAPH_CHANGE_UPSERT : GRAPH_CHANGE_INSERT;
        out->n++;
    }
    return 0;
}

static int build(void *arg, const lang_catalog *cat, const graph_snapshot *snap, store *s,
                 graph_change_set *out, graph_probes *reads)
{
    mctx *m = arg;
    m->reads = reads;
    /* Everything below is computed against this base only. */
    mctx_reset(m);
    memset(&m->counts, 0, sizeof m->counts);
    m->cat = cat;
    m->snap = snap;
    m->s = s;
    m->n_types = cat->n_types;
    m->types = core_calloc(cat->n_types ? cat->n_types : 1, sizeof *m->types);
    if (!m->types) return core_err_nomem();
    int rc = 0;
    const lang_ir_pipeline *pl = &m->q->pipeline;
    for (size_t i = 0; !rc && i < pl->n_ops; i++) {
        const lang_ir_op *op = &pl->ops[i];
        switch (op->kind) {
        case LANG_IR_INSERT_NODE:
        case LANG_IR_INSERT_EDGE:
            rc = op_insert(m, op);
            break;
        case LANG_IR_UPDATE:
            rc = op_update(m, op);
            break;
        case LANG_IR_DELETE:
            rc = op_delete(m, op);
            break;
        default:
            rc = core_err(OG_E_BAD_REQUEST, "query %s: operator %s is not a mutation",
                          m->q->name ? m->q->name : "?", lang_ir_op_name(op->kind));
        }
    }
    if (!rc) rc = finish(m, out);
    mctx_reset(m);
    return rc;
}

int exec_mutate_run(exec_mutate_result *out, write_graph *g, const lang_ir_query *q,
                    const exec_params *params, const write_options *opt)
{
    memset(out, 0, sizeof *out);
    if (!q->is_mutation)
        return core_err(OG_E_BAD_REQUEST, "query %s is a read, not a mutation",
                        q->name ? q->name : "?");
    if (params && params->n != q->n_params)
        return core_err(OG_E_BAD_REQUEST, "params were built for another query than %s",
                        q->name ? q->name : "?");
    if (!params)
        for (size_t i = 0; i < q->n_params; i++)
            if (!q->params[i].type.nullable) {
                int rc = core_err(OG_E_BAD_REQUEST, "param '%s': a value is required",
                                  q->params[i].name);
                core_err_detail(CORE_ERR_KEY, q->params[i].name);
                return rc;
            }
    /* The checker refuses insert/update mixed with delete; a hand-built IR gets the same. */
    int writes = 0, deletes = 0;
    for (size_t i = 0; i < q->pipeline.n_ops; i++) {
        int k = q->pipeline.ops[i].kind;
        writes |= k == LANG_IR_INSERT_NODE || k == LANG_IR_INSERT_EDGE || k == LANG_IR_UPDATE;
        deletes |= k == LANG_IR_DELETE;
    }
    if (writes && deletes)
        return core_err(OG_E_BAD_REQUEST,
                        "query %s mixes insert/update with delete; run them as two mutations",
                        q->name ? q->name : "?");
    mctx m;
    memset(&m, 0, sizeof m);
    m.q = q;
    m.p = params;
    /* One now() for the whole run, re-prepares included. */
    m.now_ms = params && params->has_now ? params->now_ms : (int64_t)core_wall_ms();
    int rc = write_mutation(g, build, &m, opt, &out->write);
    mctx_reset(&m);
    if (rc) return rc;
    out->nodes_inserted = m.counts.nodes_inserted;
    out->nodes_updated = m.counts.nodes_updated;
    out->nodes_deleted = m.counts.nodes_deleted;
    out->edges_inserted = m.counts.edges_inserted;
    out->edges_updated = m.counts.edges_updated;
    out->edges_deleted = m.counts.edges_deleted;
    if (!out->write.committed) {
        /* Nothing committed: nothing was inserted, updated or deleted. */
        out->nodes_inserted = out->nodes_updated = out->nodes_deleted = 0;
        out->edges_inserted = out->edges_updated = out->edges_deleted = 0;
    }
    return 0;
}

void exec_mutate_result_clear(exec_mutate_result *r)
{
    core_free(r->query_name);
    r->query_name = NULL;
}

/* ---- the mutate request (request.h) -------------------------------------------------------- */

int exec_mutate(exec_mutate_result *out, write_graph *w, const exec_gq_request *req,
                const write_options *opt)
{
    memset(out, 0, sizeof *out);
    exec_prepared p;
    int rc = exec_prepare_in(&p, w->h, w->h->catalog, req, true);
    if (rc) return rc;
    /* Named before the write: once it committed, nothing may fail. */
    char *name = core_strdup(p.q->name ? p.q->name : "");
    if (!name) rc = core_err_nomem();
    if (!rc) rc = exec_mutate_run(out, w, p.q, p.params, opt);
    exec_prepared_clear(&p);
    if (rc) {
        core_free(name);
        return rc;
    }
    out->query_name = name;
    return 0;
}
