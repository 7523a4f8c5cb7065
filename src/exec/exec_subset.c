/* Subset tables for cold reads: a query anchored on keys (every node scan an id or @key
 * equality) touches only the nodes and edges its expansions can reach, so instead of loading
 * whole id columns and building adjacency over every edge, it runs on tables holding exactly
 * those rows, found through the tables' key indexes (lance/keyindex.h):
 *   - a node scan looks its id up in the node table's id index (or its value up in the index
 *     of a String @unique / @index property);
 *   - an expansion walks its hops through the edge table's src>dst / dst>src indexes, and the
 *     nodes it reaches through the id index of their table.
 * Up to the expansion's last hop, the subset holds every node the walk reaches and every edge
 * leaving a node it expands, so the executor's walk over the subset visits what it would visit
 * over the whole table. Rows keep the tables' scan order (fragment order, then offset), so
 * adjacency lists and results come out in the same order too. Property columns load only for
 * these rows (lance_dataset_take_column). Edge ids load only when an expansion binds the edge.
 *
 * The subset is private to one query run and never enters the shared cache. */
#include "exec/exec_internal.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/hash.h"
#include "lance/branch.h"
#include "lance/keyindex.h"

#include <stdlib.h>
#include <string.h>

/* Past this many rows in one subset, the query is better served by the whole tables. */
#define SUBSET_MAX_ROWS 20000
/* Rows outside every segment that a walk may rescan on each hop. */
#define SUBSET_SCAN_ROWS 4096

/* ---- a set of rows of one table ----------------------------------------------------------- */

typedef struct srow {
    char *id;        /* node: its id; edge: "" unless loaded */
    char *src, *dst; /* edges */
    uint64_t addr;
    uint64_t pos; /* scan position: fragment index << 32 | offset */
} srow;

typedef struct sset {
    const graph_table *gt;
    lance_dataset *ds;
    srow *r;
    size_t n, cap;
    uint64_t *slots; /* open addressing: row + 1; keyed by id (nodes) or addr (edges) */
    size_t mask;
    int need_edge_ids;
} sset;

static uint64_t key_hash(const sset *s, const srow *r)
{
    return s->gt->kind == LANG_EDGE ? core_hash64(&r->addr, sizeof r->addr, 0)
                                    : core_hash64(r->id, strlen(r->id), 0);
}

static int same_key(const sset *s, const srow *a, const srow *b)
{
    return s->gt->kind == LANG_EDGE ? a->addr == b->addr : strcmp(a->id, b->id) == 0;
}

static long sset_find(const sset *s, const srow *k)
{
    if (!s->slots) return -1;
    for (size_t i = key_hash(s, k) & s->mask;; i = (i + 1) & s->mask) {
        if (!s->slots[i]) return -1;
        if (same_key(s, &s->r[s->slots[i] - 1], k)) return (long)s->slots[i] - 1;
    }
}

static int sset_grow(sset *s)
{
    size_t cap = s->slots ? (s->mask + 1) * 2 : 64;
    uint64_t *ns = core_calloc(cap, sizeof *ns);
    if (!ns) return core_err_nomem();
    core_free(s->slots);
    s->slots = ns;
    s->mask = cap - 1;
    for (size_t k = 0; k < s->n; k++) {
        size_t i = key_hash(s, &s->r[k]) & s->mask;
        while (s->slots[i])
            i = (i + 1) & s->mask;
        s->slots[i] = k + 1;
    }
    return 0;
}

/* Add row r (strings copied) unless its key is there. */
static int sset_add(sset *s, const srow *r)
{
    if (sset_find(s, r) >= 0) return 0;
    if (s->n >= SUBSET_MAX_ROWS) return core_err(OG_E_RESOURCE_LIMIT, "subset too large");
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 32;
        srow *nr = core_realloc(s->r, nc * sizeof *nr);
        if (!nr) return core_err_nomem();
        s->r = nr;
        s->cap = nc;
    }
    if (!s->slots || (s->n + 1) * 2 > s->mask + 1) {
        int rc = sset_grow(s);
        if (rc) return rc;
    }
    srow *x = &s->r[s->n];
    *x = *r;
    x->id = core_strdup(r->id ? r->id : "");
    x->src = r->src ? core_strdup(r->src) : NULL;
    x->dst = r->dst ? core_strdup(r->dst) : NULL;
    if (!x->id || (r->src && !x->src) || (r->dst && !x->dst)) {
        core_free(x->id);
        core_free(x->src);
        core_free(x->dst);
        return core_err_nomem();
    }
    size_t i = key_hash(s, x) & s->mask;
    while (s->slots[i])
        i = (i + 1) & s->mask;
    s->slots[i] = ++s->n;
    return 0;
}

static void sset_clear(sset *s)
{
    for (size_t i = 0; i < s->n; i++) {
        core_free(s->r[i].id);
        core_free(s->r[i].src);
        core_free(s->r[i].dst);
    }
    core_free(s->r);
    core_free(s->slots);
    lance_dataset_free(s->ds);
    memset(s, 0, sizeof *s);
}

/* ---- the walk ----------------------------------------------------------------------------- */

typedef struct strs {
    char **v;
    size_t n, cap;
} strs;

static void strs_clear(strs *s)
{
    for (size_t i = 0; i < s->n; i++)
        core_free(s->v[i]);
    core_free(s->v);
    memset(s, 0, sizeof *s);
}

static int strs_push(strs *s, const char *p, size_t n)
{
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 16;
        char **nv = core_realloc(s->v, nc * sizeof *nv);
        if (!nv) return core_err_nomem();
        s->v = nv;
        s->cap = nc;
    }
    char *c = core_malloc(n + 1);
    if (!c) return core_err_nomem();
    memcpy(c, p, n);
    c[n] = '\0';
    s->v[s->n++] = c;
    return 0;
}

typedef struct subset {
    const lang_catalog *cat;
    const graph_snapshot *snap;
    store *s;
    sset *t;    /* per type index */
    strs *cand; /* per slot: node ids it may hold */
    int poor;   /* a table the walk needs has no usable key index: whole tables are better */
} subset;

static const graph_table *snap_table(const graph_snapshot *snap, const lang_typedef *td)
{
    const char *prefix = td->kind == LANG_EDGE ? "edge:" : "node:";
    for (size_t i = 0; snap && i < snap->n_tables; i++) {
        const char *a = snap->tables[i].alias;
        if (a && !strncmp(a, prefix, 5) && !strcmp(a + 5, td->name)) return &snap->tables[i];
    }
    return NULL;
}

/* The set of type ti, its table opened (gt NULL: the snapshot has no table for it). */
static int type_set(subset *sb, int ti, sset **out)
{
    sset *s = &sb->t[ti];
    *out = s;
    if (s->gt || s->ds) return 0;
    const graph_table *gt = snap_table(sb->snap, &sb->cat->types[ti]);
    if (!gt) return 0;
    s->gt = gt;
    /* graph_table_open: a version cleanup removed is reported as such */
    int rc = graph_table_open(&s->ds, sb->s, gt, LANCE_ACCESS_READ);
    if (rc) {
        core_err_prefix("opening table %s", gt->alias);
        return rc;
    }
    /* Every lookup reads what no segment covers: with most rows outside every segment (a
     * graph made before key indexes, or one lancedb appended to), each hop would rescan them
     * (a small table is cheap to rescan). */
    uint64_t rows = lance_dataset_physical_rows(s->ds);
    int indexed = lance_kix_declared(s->ds, GRAPH_COL_ID, NULL) &&
                  (gt->kind != LANG_EDGE || (lance_kix_declared(s->ds, GRAPH_COL_SRC, NULL) &&
                                             lance_kix_declared(s->ds, GRAPH_COL_DST, NULL)));
    uint64_t covered = lance_kix_covered_rows(s->ds);
    if (rows - covered > SUBSET_SCAN_ROWS && (!indexed || covered * 2 < rows)) sb->poor = 1;
    return 0;
}

typedef struct node_hits {
    sset *s;
    const uint8_t *const *keys;
    const size_t *lens;
    strs *found; /* optional: ids that exist */
} node_hits;

static int on_node(void *arg, size_t key, uint64_t addr, const uint8_t *pay, size_t plen)
{
    node_hits *h = arg;
    (void)pay;
    (void)plen;
    char *id = core_malloc(h->lens[key] + 1);
    if (!id) return core_err_nomem();
    memcpy(id, h->keys[key], h->lens[key]);
    id[h->lens[key]] = '\0';
    srow r = {id, NULL, NULL, addr, lance_dataset_scan_pos(h->s->ds, addr)};
    int rc = sset_add(h->s, &r);
    if (rc == 0 && h->found) rc = strs_push(h->found, id, h->lens[key]);
    core_free(id);
    return rc;
}

/* Add the nodes of type ti among ids (those that exist); their ids to *found when given. */
static int add_nodes(subset *sb, int ti, char *const *ids, size_t n, strs *found)
{
    sset *s;
    int rc = type_set(sb, ti, &s);
    if (rc || !s->ds || !n) return rc;
    const uint8_t **k = core_malloc(n * sizeof *k);
    size_t *l = core_malloc(n * sizeof *l);
    if (!k || !l) rc = core_err_nomem();
    for (size_t i = 0; rc == 0 && i < n; i++) {
        k[i] = (const uint8_t *)ids[i];
        l[i] = strlen(ids[i]);
    }
    node_hits h = {s, k, l, found};
    if (rc == 0) rc = lance_kix_lookup(s->ds, GRAPH_COL_ID, NULL, k, l, n, on_node, &h, NULL);
    core_free(k);
    core_free(l);
    return rc;
}

typedef struct edge_hits {
    sset *s;
    const uint8_t *const *keys;
    const size_t *lens;
    int from_dst; /* the lookup was on dst (payload src) */
    strs *next;   /* the other endpoints */
} edge_hits;

static int on_edge(void *arg, size_t key, uint64_t addr, const uint8_t *pay, size_t plen)
{
    edge_hits *h = arg;
    if (!pay) return 0; /* a null endpoint: no edge the executor can walk */
    char *me = core_malloc(h->lens[key] + 1), *other = core_malloc(plen + 1);
    int rc = me && other ? 0 : core_err_nomem();
    if (rc == 0) {
        memcpy(me, h->keys[key], h->lens[key]);
        me[h->lens[key]] = '\0';
        memcpy(other, pay, plen);
        other[plen] = '\0';
        srow r = {"", h->from_dst ? other : me, h->from_dst ? me : other, addr,
                  lance_dataset_scan_pos(h->s->ds, addr)};
        rc = sset_add(h->s, &r);
    }
    if (rc == 0) rc = strs_push(h->next, other, plen);
    core_free(me);
    core_free(other);
    return rc;
}

/* An id or single-key equality with a constant, as op_node_scan's dictionary lookup takes it:
 * 1 and *id (owned) when the op has one. */
static int anchor_id(const lang_typedef *td, const lang_ir_op *op, const exec_params *p, char **id)
{
    *id = NULL;
    for (size_t i = 0; i < op->n_preds; i++) {
        const lang_ir_pred *pr = &op->preds[i];
        if (pr->op != GQ_OP_EQ) continue;
        const lang_value *v = NULL;
        if (pr->rhs.kind == LANG_IR_X_LITERAL)
            v = &pr->rhs.lit;
        else if (pr->rhs.kind == LANG_IR_X_PARAM && p && pr->rhs.param >= 0 &&
                 (size_t)pr->rhs.param < p->n)
            v = &p->vals[pr->rhs.param];
        else
            continue;
        int is_id = pr->lhs.kind == LANG_IR_X_ID;
        int is_key = pr->lhs.kind == LANG_IR_X_PROP && td->n_key == 1 && pr->lhs.prop == td->key[0];
        if (!is_id && !is_key) continue;
        if (v->kind == LANG_V_NULL) return 1; /* matches nothing */
        if (is_id) {
            if (v->kind != LANG_V_STRING) continue;
            *id = core_strdup(v->s);
            return *id ? 1 : core_err_nomem();
        }
        if (lang_key_id(id, td, v) != 0) {
            og_error_clear(); /* not canonicalisable: the scan evaluates it as a comparison */
            continue;
        }
        return 1;
    }
    return 0;
}

typedef struct value_hits {
    sset *s;
    strs *cand;
} value_hits;

static int on_value(void *arg, size_t key, uint64_t addr, const uint8_t *pay, size_t plen)
{
    value_hits *h = arg;
    (void)key;
    if (!pay) return 0;
    char *id = core_malloc(plen + 1);
    if (!id) return core_err_nomem();
    memcpy(id, pay, plen);
    id[plen] = '\0';
    srow r = {id, NULL, NULL, addr, lance_dataset_scan_pos(h->s->ds, addr)};
    int rc = sset_add(h->s, &r);
    if (rc == 0) rc = strs_push(h->cand, id, plen);
    core_free(id);
    return rc;
}

/* A node scan anchored on a String property with a key index (@unique or @index, declared
 * "prop>id"): the rows holding the value. 1 when the scan has no such equality. */
static int op_scan_indexed(subset *sb, const lang_ir_op *op, const exec_params *p)
{
    const lang_typedef *td = &sb->cat->types[op->type];
    sset *s;
    int rc = type_set(sb, op->type, &s);
    if (rc) return rc;
    for (size_t i = 0; s->ds && i < op->n_preds; i++) {
        const lang_ir_pred *pr = &op->preds[i];
        if (pr->op != GQ_OP_EQ || pr->lhs.kind != LANG_IR_X_PROP || pr->lhs.prop < 0 ||
            (size_t)pr->lhs.prop >= td->n_props)
            continue;
        const lang_value *v = NULL;
        if (pr->rhs.kind == LANG_IR_X_LITERAL)
            v = &pr->rhs.lit;
        else if (pr->rhs.kind == LANG_IR_X_PARAM && p && pr->rhs.param >= 0 &&
                 (size_t)pr->rhs.param < p->n)
            v = &p->vals[pr->rhs.param];
        if (!v || (v->kind != LANG_V_STRING && v->kind != LANG_V_NULL)) continue;
        const char *col = td->props[pr->lhs.prop].name;
        if (!lance_kix_declared(s->ds, col, GRAPH_COL_ID)) continue;
        strs_clear(&sb->cand[op->slot]);
        if (v->kind == LANG_V_NULL || !v->s) return 0; /* matches nothing */
        const uint8_t *k = (const uint8_t *)v->s;
        size_t l = strlen(v->s);
        value_hits h = {s, &sb->cand[op->slot]};
        return lance_kix_lookup(s->ds, col, GRAPH_COL_ID, &k, &l, 1, on_value, &h, NULL);
    }
    return 1;
}

static int op_scan(subset *sb, const lang_ir_op *op, const exec_params *p)
{
    char *id = NULL;
    int rc = anchor_id(&sb->cat->types[op->type], op, p, &id);
    if (rc == 0) return op_scan_indexed(sb, op, p);
    if (rc < 0) return rc;
    strs_clear(&sb->cand[op->slot]);
    if (!id) return 0;
    rc = add_nodes(sb, op->type, &id, 1, &sb->cand[op->slot]);
    core_free(id);
    return rc;
}

static int op_walk(subset *sb, const lang_ir_op *op)
{
    const lang_typedef *et = &sb->cat->types[op->type];
    int in_dir = op->direction == LANG_IR_IN, both = op->direction == LANG_IR_BOTH;
    int same = et->from == et->to;
    int to_type = in_dir ? et->from : et->to;
    uint32_t max = op->max_hops ? op->max_hops : 1;
    if (!same && max > 1) max = 1;
    sset *es;
    int rc = type_set(sb, op->type, &es);
    if (rc) return rc;
    if (op->edge_slot >= 0) es->need_edge_ids = 1;
    strs frontier = {0}, reached = {0}, seen = {0};
    const strs *start = &sb->cand[op->src_slot];
    for (size_t i = 0; rc == 0 && i < start->n; i++)
        rc = strs_push(&frontier, start->v[i], strlen(start->v[i]));
    /* visited ids, by a node set of their own (keys only) */
    sset visited = {0};
    graph_table vgt = {0};
    vgt.kind = LANG_NODE;
    visited.gt = &vgt;
    for (size_t i = 0; rc == 0 && i < frontier.n; i++) {
        srow r = {frontier.v[i], NULL, NULL, 0, 0};
        rc = sset_add(&visited, &r);
    }
    for (uint32_t hop = 1; rc == 0 && hop <= max && frontier.n && es->ds; hop++) {
        strs next = {0};
        const uint8_t **k = core_malloc(frontier.n * sizeof *k);
        size_t *l = core_malloc(frontier.n * sizeof *l);
        if (!k || !l) rc = core_err_nomem();
        for (size_t i = 0; rc == 0 && i < frontier.n; i++) {
            k[i] = (const uint8_t *)frontier.v[i];
            l[i] = strlen(frontier.v[i]);
        }
        for (int side = 0; rc == 0 && side < 2; side++) {
            int on_dst = side ? 1 : in_dir;
            if (side && !both) break;
            edge_hits h = {es, k, l, on_dst, &next};
            rc = lance_kix_lookup(es->ds, on_dst ? GRAPH_COL_DST : GRAPH_COL_SRC,
                                  on_dst ? GRAPH_COL_SRC : GRAPH_COL_DST, k, l, frontier.n, on_edge,
                                  &h, NULL);
        }
        core_free(k);
        core_free(l);
        strs_clear(&frontier);
        for (size_t i = 0; rc == 0 && i < next.n; i++) {
            rc = strs_push(&reached, next.v[i], strlen(next.v[i]));
            srow r = {next.v[i], NULL, NULL, 0, 0};
            if (rc == 0 && sset_find(&visited, &r) < 0) {
                rc = sset_add(&visited, &r);
                if (rc == 0 && same) rc = strs_push(&frontier, next.v[i], strlen(next.v[i]));
            }
        }
        strs_clear(&next);
    }
    /* the nodes reached, as rows of their table and candidates of the destination slot */
    if (rc == 0) rc = add_nodes(sb, to_type, reached.v, reached.n, &seen);
    if (rc == 0 && !op->dst_bound) {
        strs_clear(&sb->cand[op->dst_slot]);
        sb->cand[op->dst_slot] = seen;
        memset(&seen, 0, sizeof seen);
    }
    visited.gt = NULL;
    sset_clear(&visited);
    strs_clear(&frontier);
    strs_clear(&reached);
    strs_clear(&seen);
    return rc;
}

static int srow_cmp(const void *a, const void *b)
{
    uint64_t x = ((const srow *)a)->pos, y = ((const srow *)b)->pos;
    return x < y ? -1 : x > y;
}

static int utf8_array(arrow_array **out, const srow *r, size_t n, int which)
{
    arrow_type u = arrow_type_simple(ARROW_UTF8);
    arrow_builder *b = NULL;
    int rc = arrow_builder_new(&b, &u);
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = arrow_builder_append_str(b, which == 0 ? r[i].id : which == 1 ? r[i].src : r[i].dst);
    if (rc == 0) rc = arrow_builder_finish(b, out);
    arrow_builder_free(b);
    return rc;
}

/* The subset table of one set (rows in scan order). */
static int make_table(exec_table **out, sset *s, int kind)
{
    if (s->n > 1) qsort(s->r, s->n, sizeof *s->r, srow_cmp);
    arrow_array *id = NULL, *src = NULL, *dst = NULL;
    uint64_t *addrs = core_malloc((s->n ? s->n : 1) * sizeof *addrs);
    int rc = addrs ? 0 : core_err_nomem();
    for (size_t i = 0; rc == 0 && i < s->n; i++)
        addrs[i] = s->r[i].addr;
    if (rc == 0 && kind == LANG_EDGE && s->need_edge_ids && s->ds)
        rc = lance_dataset_take_column(&id, s->ds, GRAPH_COL_ID, addrs, s->n);
    else if (rc == 0)
        rc = utf8_array(&id, s->r, s->n, 0);
    if (rc == 0 && kind == LANG_EDGE) rc = utf8_array(&src, s->r, s->n, 1);
    if (rc == 0 && kind == LANG_EDGE) rc = utf8_array(&dst, s->r, s->n, 2);
    if (rc == 0) {
        rc = exec_table_new_subset(out, kind, s->gt, s->ds, id, src, dst, addrs);
        if (rc == 0) {
            s->ds = NULL; /* the table owns it now */
            addrs = NULL;
        }
    }
    arrow_array_free(id);
    arrow_array_free(src);
    arrow_array_free(dst);
    core_free(addrs);
    return rc;
}

/* Which operators a subset can serve. */
static int servable(const lang_ir_pipeline *pl)
{
    for (size_t i = 0; i < pl->n_ops; i++) {
        switch (pl->ops[i].kind) {
        case LANG_IR_NODE_SCAN:
        case LANG_IR_EXPAND:
        case LANG_IR_FILTER:
        case LANG_IR_ORDER:
        case LANG_IR_LIMIT:
        case LANG_IR_PROJECT:
        case LANG_IR_AGGREGATE:
            break;
        default:
            return 0;
        }
    }
    return 1;
}

int exec_subset_build(exec_table ***out, const lang_catalog *cat, const graph_snapshot *snap,
                      store *s, const lang_ir_query *q, const exec_params *p)
{
    *out = NULL;
    if (!servable(&q->pipeline)) return 0;
    subset sb = {cat, snap, s, NULL, NULL, 0};
    sb.t = core_calloc(cat->n_types ? cat->n_types : 1, sizeof *sb.t);
    sb.cand = core_calloc(q->n_slots ? q->n_slots : 1, sizeof *sb.cand);
    exec_table **tables = core_calloc(cat->n_types ? cat->n_types : 1, sizeof *tables);
    int rc = sb.t && sb.cand && tables ? 0 : core_err_nomem();
    int fallback = 0;
    for (size_t i = 0; rc == 0 && !fallback && i < q->pipeline.n_ops; i++) {
        const lang_ir_op *op = &q->pipeline.ops[i];
        if (op->kind == LANG_IR_NODE_SCAN) {
            rc = op_scan(&sb, op, p);
            if (rc == 1) fallback = 1, rc = 0;
        } else if (op->kind == LANG_IR_EXPAND) {
            rc = op_walk(&sb, op);
        }
    }
    if (rc == OG_E_RESOURCE_LIMIT) { /* a large neighbourhood: the whole tables are better */
        og_error_clear();
        fallback = 1;
        rc = 0;
    }
    if (sb.poor) fallback = 1;
    /* Every slot's type gets a table, an empty subset when nothing was found. */
    for (size_t i = 0; rc == 0 && !fallback && i < q->n_slots; i++) {
        int ti = q->slots[i].type;
        if (ti < 0 || (size_t)ti >= cat->n_types) {
            fallback = 1; /* the executor reports it */
            break;
        }
        sset *st;
        rc = type_set(&sb, ti, &st);
    }
    for (size_t ti = 0; rc == 0 && !fallback && ti < cat->n_types; ti++) {
        if (!sb.t[ti].gt) continue;
        rc = make_table(&tables[ti], &sb.t[ti], cat->types[ti].kind);
    }
    for (size_t ti = 0; sb.t && ti < cat->n_types; ti++)
        sset_clear(&sb.t[ti]);
    for (size_t i = 0; sb.cand && i < q->n_slots; i++)
        strs_clear(&sb.cand[i]);
    core_free(sb.t);
    core_free(sb.cand);
    if (rc || fallback) {
        for (size_t ti = 0; tables && ti < cat->n_types; ti++)
            exec_table_release(tables[ti]);
        core_free(tables);
        return rc;
    }
    *out = tables;
    return 0;
}
