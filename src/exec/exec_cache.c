/* The executor's per-graph-handle cache: tables at a version (ids, id dictionary, columns
 * loaded on demand) and CSR adjacency built over them. Keys carry versions, so an entry is
 * never stale and nothing expires by time; a newer version of a table evicts the older one. */
#include "exec/exec_internal.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/log.h"
#include "lance/branch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXEC_COLD_ENTRIES 16

static _Atomic uint64_t lineages;

static uint64_t new_lineage(void)
{
    return atomic_fetch_add(&lineages, 1) + 1;
}

struct exec_cache {
    pthread_mutex_t mu;
    exec_table **tables;
    size_t n_tables, cap_tables;
    exec_csr **csrs;
    size_t n_csrs, cap_csrs;
    exec_scratch *pool[8];
    size_t n_pool;
    exec_cache_stats st;
    /* Cold (subset) runs per table version, most recent last. */
    struct {
        char path[256], branch[128];
        uint64_t version;
        unsigned runs;
    } cold[EXEC_COLD_ENTRIES];
    size_t n_cold;
    unsigned cold_runs; /* subset runs per table version before loading it whole */
};

int exec_cache_new(exec_cache **out)
{
    *out = NULL;
    exec_cache *c = core_calloc(1, sizeof *c);
    if (!c) return core_err_nomem();
    pthread_mutex_init(&c->mu, NULL);
    c->cold_runs = EXEC_COLD_RUNS_DEFAULT;
    *out = c;
    return 0;
}

void exec_cache_set_cold_runs(exec_cache *c, unsigned n)
{
    pthread_mutex_lock(&c->mu);
    c->cold_runs = n;
    pthread_mutex_unlock(&c->mu);
}

unsigned exec_cache_cold_runs(exec_cache *c)
{
    pthread_mutex_lock(&c->mu);
    unsigned n = c->cold_runs;
    pthread_mutex_unlock(&c->mu);
    return n;
}

static void table_free(exec_table *t)
{
    arrow_array_free(t->id);
    arrow_array_free(t->src);
    arrow_array_free(t->dst);
    arrow_array_free(t->d_id);
    arrow_array_free(t->d_src);
    arrow_array_free(t->d_dst);
    core_free(t->d_addrs);
    exec_table_release(t->base);
    core_hmap_free(&t->dict);
    core_free(t->addrs);
    lance_dataset_free(t->ds);
    for (size_t i = 0; i < t->n_cols; i++) {
        core_free(t->col_names[i]);
        arrow_array_free(t->cols[i]);
    }
    core_free(t->col_names);
    core_free(t->cols);
    core_free(t->path);
    core_free(t->branch);
    pthread_mutex_destroy(&t->mu);
    core_free(t);
}

void exec_table_release(exec_table *t)
{
    if (t && atomic_fetch_sub(&t->refs, 1) == 1) table_free(t);
}

void exec_csr_release(exec_csr *g)
{
    if (!g || atomic_fetch_sub(&g->refs, 1) != 1) return;
    exec_table_release(g->edges);
    exec_table_release(g->from);
    exec_table_release(g->to);
    if (!g->base) { /* a folded adjacency borrows these from its base */
        core_free(g->out_off);
        core_free(g->out_nbr);
        core_free(g->out_edge);
        core_free(g->in_off);
        core_free(g->in_nbr);
        core_free(g->in_edge);
    }
    exec_csr_release(g->base);
    core_free(g->d_out);
    core_free(g->d_in);
    core_free(g);
}

size_t exec_dedge_range(const exec_dedge *d, size_t n, uint32_t node, size_t *first)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (d[mid].node < node)
            lo = mid + 1;
        else
            hi = mid;
    }
    *first = lo;
    size_t e = lo;
    while (e < n && d[e].node == node)
        e++;
    return e - lo;
}
static void scratch_free(exec_scratch *s)
{
    if (!s) return;
    core_free(s->visited);
    core_free(s->seen);
    core_free(s->frontier);
    core_free(s->next);
    core_free(s->found);
    core_free(s);
}

int exec_scratch_get(exec_scratch **out, exec_cache *c, size_t n_nodes)
{
    *out = NULL;
    size_t need = n_nodes + 1;
    exec_scratch *s = NULL;
    pthread_mutex_lock(&c->mu);
    /* Prefer the largest pooled one: it fits most often. */
    size_t best = SIZE_MAX;
    for (size_t i = 0; i < c->n_pool; i++)
        if (best == SIZE_MAX || c->pool[i]->cap > c->pool[best]->cap) best = i;
    if (best != SIZE_MAX) {
        s = c->pool[best];
        c->pool[best] = c->pool[--c->n_pool];
    }
    pthread_mutex_unlock(&c->mu);
    if (s && (s->cap < need || s->epoch > UINT32_MAX - 2)) {
        scratch_free(s);
        s = NULL;
    }
    if (!s) {
        s = core_calloc(1, sizeof *s);
        if (!s) return core_err_nomem();
        s->cap = need;
        s->visited = core_calloc(need, sizeof *s->visited);
        s->seen = core_calloc(need, sizeof *s->seen);
        s->frontier = core_malloc(need * sizeof *s->frontier);
        s->next = core_malloc(need * sizeof *s->next);
        s->found = core_malloc(need * sizeof *s->found);
        if (!s->visited || !s->seen || !s->frontier || !s->next || !s->found) {
            scratch_free(s);
            return core_err_nomem();
        }
    }
    *out = s;
    return 0;
}

void exec_scratch_put(exec_cache *c, exec_scratch *s)
{
    if (!s) return;
    pthread_mutex_lock(&c->mu);
    if (c->n_pool < sizeof c->pool / sizeof c->pool[0]) {
        c->pool[c->n_pool++] = s;
        s = NULL;
    }
    pthread_mutex_unlock(&c->mu);
    scratch_free(s);
}

void exec_cache_free(exec_cache *c)
{
    if (!c) return;
    for (size_t i = 0; i < c->n_pool; i++)
        scratch_free(c->pool[i]);
    for (size_t i = 0; i < c->n_csrs; i++)
        exec_csr_release(c->csrs[i]);
    for (size_t i = 0; i < c->n_tables; i++)
        exec_table_release(c->tables[i]);
    core_free(c->csrs);
    core_free(c->tables);
    pthread_mutex_destroy(&c->mu);
    core_free(c);
}

void exec_cache_stats_get(exec_cache *c, exec_cache_stats *out)
{
    pthread_mutex_lock(&c->mu);
    *out = c->st;
    out->tables = c->n_tables;
    out->csrs = c->n_csrs;
    pthread_mutex_unlock(&c->mu);
}

void exec_cache_count_pushed(exec_cache *c)
{
    pthread_mutex_lock(&c->mu);
    c->st.pushed_scans++;
    pthread_mutex_unlock(&c->mu);
}

void exec_cache_count_subset(exec_cache *c)
{
    pthread_mutex_lock(&c->mu);
    c->st.subset_runs++;
    pthread_mutex_unlock(&c->mu);
}

void exec_cache_count_key_lookup(exec_cache *c)
{
    pthread_mutex_lock(&c->mu);
    c->st.key_lookups++;
    pthread_mutex_unlock(&c->mu);
}

static int str_eq(const char *a, const char *b)
{
    if (!a || !b) return a == b;
    return strcmp(a, b) == 0;
}

static int same_table(const exec_table *t, const char *path, const char *branch)
{
    return str_eq(t->path, path) && str_eq(t->branch, branch);
}

/* ---- dictionary ------------------------------------------------------------------------------ */

/* Row of id (hash h), or -1. A folded table looks in its appended rows, then its base's (a
 * base row's id cannot come again in an appended row: the fold takes appends only). */
static int64_t table_find_h(const exec_table *t, const void *id, size_t n, uint64_t h)
{
    const arrow_array *ids = t->base ? t->d_id : t->id;
    int64_t shift = t->base ? t->n_base : 0;
    core_hmap_probe p = core_hmap_probe_of(&t->dict, h);
    uint32_t r;
    while (core_hmap_next(&t->dict, &p, &r)) {
        size_t len;
        const uint8_t *k = arrow_array_get_bytes(ids, (int64_t)r, &len);
        if (len == n && memcmp(k, id, n) == 0) return shift + (int64_t)r;
    }
    return t->base ? table_find_h(t->base, id, n, h) : -1;
}

int64_t exec_table_find(const exec_table *t, const void *id, size_t n)
{
    return table_find_h(t, id, n, core_hmap_hash(id, n));
}

static int cmp_u64_asc(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int build_dict(exec_table *t)
{
    if (t->n_rows >= (int64_t)UINT32_MAX / 2)
        return core_err(OG_E_RESOURCE_LIMIT, "table %s has too many rows for the executor",
                        t->path);
    const arrow_array *ids = t->base ? t->d_id : t->id;
    int64_t rows = ids->length;
    int rc = core_hmap_reserve(&t->dict, (size_t)rows);
    for (int64_t r = 0; rc == 0 && r < rows; r++) {
        size_t n;
        const uint8_t *id = arrow_array_get_bytes(ids, r, &n);
        uint64_t h = core_hmap_hash(id, n);
        /* a duplicate id: the first row wins (a base's row, for a folded table) */
        core_hmap_probe p = core_hmap_probe_of(&t->dict, h);
        uint32_t e;
        int dup = 0;
        while (!dup && core_hmap_next(&t->dict, &p, &e)) {
            size_t len;
            const uint8_t *k = arrow_array_get_bytes(ids, (int64_t)e, &len);
            dup = len == n && memcmp(k, id, n) == 0;
        }
        if (!dup && t->base) dup = table_find_h(t->base, id, n, h) >= 0;
        if (!dup) rc = core_hmap_add_at(&t->dict, &p, h, (uint32_t)r);
    }
    return rc;
}

/* ---- tables ---------------------------------------------------------------------------------- */

static int scan_columns(arrow_array **cols, const lance_dataset *ds, const char *const *names,
                        size_t n)
{
    lance_scan_options o = LANCE_SCAN_OPTIONS_INIT;
    o.columns = names;
    o.n_columns = n;
    arrow_batch *b = NULL;
    int rc = lance_dataset_scan_all(&b, ds, &o);
    if (rc) return rc;
    for (size_t i = 0; i < n; i++)
        cols[i] = arrow_array_ref(b->columns[i]);
    arrow_batch_free(b);
    return 0;
}

static int table_load(exec_table **out, store *s, const graph_table *gt)
{
    *out = NULL;
    exec_table *t = core_calloc(1, sizeof *t);
    if (!t) return core_err_nomem();
    atomic_init(&t->refs, 1);
    pthread_mutex_init(&t->mu, NULL);
    t->kind = gt->kind;
    t->version = gt->version;
    t->lineage = new_lineage();
    t->path = core_strdup(gt->path);
    t->branch = gt->table_branch ? core_strdup(gt->table_branch) : NULL;
    int rc = 0;
    if (!t->path || (gt->table_branch && !t->branch)) {
        rc = core_err_nomem();
        goto fail;
    }
    /* graph_table_open: a version cleanup removed is reported as such */
    rc = graph_table_open(&t->ds, s, gt, LANCE_ACCESS_READ);
    if (rc) {
        core_err_prefix("opening table %s at version %llu", gt->alias ? gt->alias : gt->path,
                        (unsigned long long)gt->version);
        goto fail;
    }
    arrow_array *cols[3] = {NULL, NULL, NULL};
    static const char *const node_cols[] = {GRAPH_COL_ID};
    static const char *const edge_cols[] = {GRAPH_COL_ID, GRAPH_COL_SRC, GRAPH_COL_DST};
    int edge = gt->kind == LANG_EDGE;
    rc = scan_columns(cols, t->ds, edge ? edge_cols : node_cols, edge ? 3 : 1);
    if (rc) goto fail;
    t->id = cols[0];
    t->src = cols[1];
    t->dst = cols[2];
    for (int i = 0; i < (edge ? 3 : 1); i++)
        if (cols[i]->type.id != ARROW_UTF8 || cols[i]->null_count) {
            rc = core_err(OG_E_CORRUPT, "table %s: column %s is not non-null utf8", t->path,
                          edge ? edge_cols[i] : node_cols[i]);
            goto fail;
        }
    t->n_rows = t->id->length;
    rc = build_dict(t);
    if (rc) goto fail;
    *out = t;
    return 0;
fail:
    table_free(t);
    return rc;
}

/* A folded table's whole column: its base's then the appended rows' (concatenated). */
static int concat2(arrow_array **out, const arrow_array *a, const arrow_array *b)
{
    arrow_array *parts[2] = {(arrow_array *)a, (arrow_array *)b};
    return arrow_array_concat(out, parts, 2);
}

/* id/src/dst of every row of a folded table (under t->mu; set once). */
static int materialize(exec_table *t)
{
    int rc = 0;
    pthread_mutex_lock(&t->mu);
    if (!t->id) {
        const arrow_array *bid = exec_table_ids(t->base);
        arrow_array *id = NULL, *src = NULL, *dst = NULL;
        rc = bid ? concat2(&id, bid, t->d_id) : core_err_nomem();
        if (rc == 0 && t->kind == LANG_EDGE) {
            /* (the base's own ends: a base is never folded itself) */
            rc = concat2(&src, t->base->src, t->d_src);
            if (rc == 0) rc = concat2(&dst, t->base->dst, t->d_dst);
        }
        if (rc == 0) {
            t->src = src;
            t->dst = dst;
            t->id = id; /* last: others test it */
        } else {
            arrow_array_free(id);
            arrow_array_free(src);
            arrow_array_free(dst);
        }
    }
    pthread_mutex_unlock(&t->mu);
    return rc;
}

const arrow_array *exec_table_ids(exec_table *t)
{
    if (!t->base) return t->id;
    if (materialize(t)) return NULL;
    return t->id;
}

/* Try to fold gt's version of a table onto the cached table `old` of an earlier version of
 * it: when the new version only appended fragments (the old one's fragments, unchanged and in
 * the same order, then new ones without deletions) of few rows, the new table is old's rows
 * (shared, not copied) plus the appended ones. *out NULL when it cannot be folded. */
#define EXEC_FOLD_MAX_ROWS 4096

/* Whether fragment i of a and fragment j of b are one fragment unchanged. */
static bool same_fragment(const lance_dataset *a, size_t i, const lance_dataset *b, size_t j)
{
    lance_fragment_info x, y;
    lance_dataset_fragment_info(a, i, &x);
    lance_dataset_fragment_info(b, j, &y);
    return lance_fragment_info_same(&x, &y);
}

static lance_fragment_info fragment_at(const lance_dataset *ds, size_t i)
{
    lance_fragment_info f;
    lance_dataset_fragment_info(ds, i, &f);
    return f;
}

/* A folded table: root's rows, then the appended rows id/src/dst (references taken) at
 * addresses addrs, at `version` of ds (ds and addrs taken, also on failure), of `lineage`. */
static int folded_new(exec_table **out, exec_table *root, const char *path, const char *branch,
                      uint64_t version, lance_dataset *ds, arrow_array *id, arrow_array *src,
                      arrow_array *dst, uint64_t *addrs, uint64_t lineage)
{
    *out = NULL;
    exec_table *t = core_calloc(1, sizeof *t);
    if (!t) {
        lance_dataset_free(ds);
        core_free(addrs);
        return core_err_nomem();
    }
    atomic_init(&t->refs, 1);
    pthread_mutex_init(&t->mu, NULL);
    t->kind = root->kind;
    t->version = version;
    t->path = core_strdup(path);
    t->branch = branch ? core_strdup(branch) : NULL;
    t->ds = ds;
    atomic_fetch_add(&root->refs, 1);
    t->base = root;
    t->n_base = root->n_rows;
    t->lineage = lineage;
    t->d_id = arrow_array_ref(id);
    t->d_src = src ? arrow_array_ref(src) : NULL;
    t->d_dst = dst ? arrow_array_ref(dst) : NULL;
    t->d_addrs = addrs;
    t->n_rows = t->n_base + id->length;
    int rc = !t->path || (branch && !t->branch) ? core_err_nomem() : 0;
    const arrow_array *cols[3] = {id, src, dst};
    for (int i = 0; rc == 0 && i < (t->kind == LANG_EDGE ? 3 : 1); i++)
        if (!cols[i] || cols[i]->type.id != ARROW_UTF8 || cols[i]->null_count ||
            cols[i]->length != id->length)
            rc = core_err(OG_E_CORRUPT, "table %s: appended column %d is not non-null utf8",
                          t->path ? t->path : "?", i);
    if (rc == 0) rc = build_dict(t);
    if (rc) {
        table_free(t);
        return rc;
    }
    *out = t;
    return 0;
}

/* Versions of a table fold onto each other only under one Lance schema: columns are cached
 * by name, and a schema apply can give a name to another column (a property renamed, a column
 * a soft drop hid replaced by a new property of its name) while keeping the fragments (an
 * empty table has none to tell the versions apart). */
static bool same_lance_schema(const lance_dataset *a, const lance_dataset *b)
{
    if (a->n_field_ids != b->n_field_ids || !arrow_schema_equal(&a->schema, &b->schema))
        return false;
    return !a->n_field_ids ||
           memcmp(a->field_ids, b->field_ids, a->n_field_ids * sizeof *a->field_ids) == 0;
}

static int table_fold(exec_table **out, store *s, const graph_table *gt, exec_table *old)
{
    *out = NULL;
    exec_table *root = old->base ? old->base : old;
    if (gt->kind != LANG_EDGE || root->addrs || gt->version <= old->version) return 0;
    exec_table *const asked = old; /* (attempt 1 folds onto the root instead) */
    lance_dataset *ds = NULL;
    int rc = graph_table_open(&ds, s, gt, LANCE_ACCESS_READ);
    if (rc) return rc;
    if (!same_lance_schema(root->ds, ds) || !same_lance_schema(old->ds, ds)) {
        lance_dataset_free(ds);
        return 0; /* read whole */
    }
    /* The old version's fragments must all be there, unchanged and first (what a folded old
     * table appended stays appended: only the fragments after it are read now); failing
     * that (maintenance merged the appended fragments), the root's, and everything after it
     * is read again. */
    const lance_dataset *rp = root->ds, *vp = ds, *op = old->ds;
    size_t rn = lance_dataset_fragment_count(rp), vn = lance_dataset_fragment_count(vp);
    size_t on = lance_dataset_fragment_count(op);
    int ok = 0;
    uint64_t added = 0;
    for (int attempt = 0; attempt < 2 && !ok; attempt++) {
        if (attempt == 1) {
            if (!old->base) break;
            old = root; /* fold onto the root alone */
            op = rp;
            on = rn;
        }
        ok = vn >= on && on >= rn;
        added = old->base ? (uint64_t)(old->n_rows - old->n_base) : 0;
        for (size_t i = 0; ok && i < on; i++)
            ok = same_fragment(op, i, vp, i);
        for (size_t i = 0; ok && i < rn; i++)
            ok = same_fragment(rp, i, op, i);
        for (size_t i = on; ok && i < vn; i++) {
            lance_fragment_info f = fragment_at(vp, i);
            ok = !f.deletions;
            added += f.physical_rows;
        }
    }
    uint64_t *skip = NULL;
    if (ok && added <= EXEC_FOLD_MAX_ROWS) {
        skip = core_malloc((on ? on : 1) * sizeof *skip);
        if (!skip) rc = core_err_nomem();
        for (size_t i = 0; rc == 0 && i < on; i++)
            skip[i] = fragment_at(op, i).id;
        if (rc == 0 && on > 1) qsort(skip, on, sizeof *skip, cmp_u64_asc);
    } else {
        lance_dataset_free(ds);
        return 0;
    }
    arrow_batch *b = NULL;
    if (rc == 0) {
        static const char *const cols[] = {GRAPH_COL_ID, GRAPH_COL_SRC, GRAPH_COL_DST};
        lance_scan_options so = LANCE_SCAN_OPTIONS_INIT;
        so.columns = cols;
        so.n_columns = 3;
        so.with_row_addr = true;
        so.skip_fragments = skip;
        so.n_skip_fragments = on;
        rc = lance_dataset_scan_all(&b, ds, &so);
    }
    core_free(skip);
    /* the rows old had appended already, then these */
    if (rc == 0 && old->base) {
        arrow_array *cols[4] = {NULL, NULL, NULL, NULL};
        arrow_array *pairs[4][2] = {{old->d_id, b->columns[0]},
                                    {old->d_src, b->columns[1]},
                                    {old->d_dst, b->columns[2]},
                                    {NULL, NULL}};
        for (int k = 0; rc == 0 && k < 3; k++)
            rc = arrow_array_concat(&cols[k], pairs[k], 2);
        uint64_t *na =
            rc ? NULL
               : core_malloc((size_t)(old->n_rows - old->n_base + b->num_rows + 1) * sizeof *na);
        if (rc == 0 && !na) rc = core_err_nomem();
        size_t m = 0;
        for (int64_t r = 0; rc == 0 && r < old->n_rows - old->n_base; r++)
            na[m++] = old->d_addrs[r];
        for (int64_t r = 0; rc == 0 && r < b->num_rows; r++)
            na[m++] = arrow_array_get_uint(b->columns[3], r);
        arrow_batch *nb = NULL;
        if (rc == 0) {
            arrow_array *addr = NULL;
            arrow_type u = arrow_type_simple(ARROW_UINT64);
            arrow_builder *ab = NULL;
            rc = arrow_builder_new(&ab, &u);
            for (size_t r = 0; rc == 0 && r < m; r++)
                rc = arrow_builder_append_uint(ab, na[r]);
            if (rc == 0) rc = arrow_builder_finish(ab, &addr);
            arrow_builder_free(ab);
            cols[3] = addr;
            if (rc == 0) rc = arrow_batch_new(&nb, &b->schema, cols, 4);
        }
        core_free(na);
        for (int k = 0; k < 4; k++)
            arrow_array_free(cols[k]);
        arrow_batch_free(b);
        b = nb;
    }
    exec_table *t = NULL;
    uint64_t *addrs = NULL;
    if (rc == 0) {
        addrs = core_malloc((size_t)(b->num_rows ? b->num_rows : 1) * sizeof *addrs);
        if (!addrs) rc = core_err_nomem();
        for (int64_t r = 0; rc == 0 && r < b->num_rows; r++)
            addrs[r] = arrow_array_get_uint(b->columns[3], r);
    }
    if (rc == 0) {
        rc = folded_new(&t, root, gt->path, gt->table_branch, gt->version, ds, b->columns[0],
                        b->columns[1], b->columns[2], addrs,
                        old == asked ? old->lineage : new_lineage());
        ds = NULL;
        addrs = NULL;
    }
    core_free(addrs);
    lance_dataset_free(ds);
    arrow_batch_free(b);
    if (rc) return rc;
    *out = t;
    return 0;
}

int exec_table_new_subset(exec_table **out, int kind, const graph_table *gt, lance_dataset *ds,
                          arrow_array *id, arrow_array *src, arrow_array *dst, uint64_t *addrs)
{
    *out = NULL;
    exec_table *t = core_calloc(1, sizeof *t);
    if (!t) return core_err_nomem();
    atomic_init(&t->refs, 1);
    pthread_mutex_init(&t->mu, NULL);
    t->kind = kind;
    t->version = gt->version;
    t->path = core_strdup(gt->path);
    t->branch = gt->table_branch ? core_strdup(gt->table_branch) : NULL;
    if (!t->path || (gt->table_branch && !t->branch)) {
        table_free(t);
        return core_err_nomem();
    }
    t->ds = ds;
    t->addrs = addrs;
    t->id = arrow_array_ref(id);
    t->src = src ? arrow_array_ref(src) : NULL;
    t->dst = dst ? arrow_array_ref(dst) : NULL;
    t->n_rows = id->length;
    int rc = build_dict(t);
    if (rc) {
        t->ds = NULL; /* the caller still owns them on failure */
        t->addrs = NULL;
        table_free(t);
        return rc;
    }
    *out = t;
    return 0;
}

bool exec_cache_holds(exec_cache *c, const graph_table *gt)
{
    pthread_mutex_lock(&c->mu);
    bool found = false;
    for (size_t i = 0; i < c->n_tables && !found; i++)
        found = c->tables[i]->version == gt->version &&
                same_table(c->tables[i], gt->path, gt->table_branch);
    pthread_mutex_unlock(&c->mu);
    return found;
}

bool exec_cache_holds_any(exec_cache *c, const graph_table *gt)
{
    pthread_mutex_lock(&c->mu);
    bool found = false;
    for (size_t i = 0; i < c->n_tables && !found; i++)
        found = same_table(c->tables[i], gt->path, gt->table_branch);
    pthread_mutex_unlock(&c->mu);
    return found;
}

unsigned exec_cache_note_cold(exec_cache *c, const graph_table *gt)
{
    pthread_mutex_lock(&c->mu);
    unsigned n = 0;
    size_t i;
    for (i = 0; i < c->n_cold; i++)
        if (c->cold[i].version == gt->version && !strcmp(c->cold[i].path, gt->path) &&
            !strcmp(c->cold[i].branch, gt->table_branch ? gt->table_branch : ""))
            break;
    if (i == c->n_cold) {
        /* a small ring: the oldest entry goes */
        if (c->n_cold < EXEC_COLD_ENTRIES)
            c->n_cold++;
        else
            memmove(c->cold, c->cold + 1, (EXEC_COLD_ENTRIES - 1) * sizeof *c->cold), i--;
        snprintf(c->cold[i].path, sizeof c->cold[i].path, "%s", gt->path);
        snprintf(c->cold[i].branch, sizeof c->cold[i].branch, "%s",
                 gt->table_branch ? gt->table_branch : "");
        c->cold[i].version = gt->version;
        c->cold[i].runs = 0;
    }
    n = ++c->cold[i].runs;
    pthread_mutex_unlock(&c->mu);
    return n;
}

static void drop_csrs_on(exec_cache *c, const exec_table *t)
{
    size_t k = 0;
    for (size_t i = 0; i < c->n_csrs; i++) {
        exec_csr *g = c->csrs[i];
        if (g->edges == t || g->from == t || g->to == t)
            exec_csr_release(g);
        else
            c->csrs[k++] = g;
    }
    c->n_csrs = k;
}

/* Adjacency over an edge table the cache no longer holds goes, except the adjacency a fold
 * of `keep` (a base the cache's tables fold onto) extends: over keep itself, or folded over
 * a table of keep's. */
static void drop_orphan_csrs(exec_cache *c, const exec_table *keep)
{
    size_t k = 0;
    for (size_t i = 0; i < c->n_csrs; i++) {
        exec_csr *g = c->csrs[i];
        const exec_table *e = g->edges;
        bool held = false;
        for (size_t j = 0; j < c->n_tables && !held; j++)
            held = c->tables[j] == e;
        if (held || (keep && (e == keep || e->base == keep)))
            c->csrs[k++] = g;
        else
            exec_csr_release(g);
    }
    c->n_csrs = k;
}

/* Publish t (its one reference passed in) for its version under c->mu. A table keeps its
 * newest version and at most one older one (a time-travel read, or a query pinned just
 * before this handle's own commit): t evicts the versions older than itself, except the
 * newest when t is older. Adjacency over evicted tables goes, except what a fold of t's base
 * extends. Returns the entry with one reference for the caller: t, or the copy another
 * thread published first. */
static exec_table *cache_install(exec_cache *c, exec_table *t)
{
    const exec_table *newest = NULL;
    for (size_t i = 0; i < c->n_tables; i++) {
        exec_table *o = c->tables[i];
        if (!same_table(o, t->path, t->branch)) continue;
        if (o->version == t->version) {
            atomic_fetch_add(&o->refs, 1);
            exec_table_release(t);
            return o;
        }
        if (o->version > t->version && (!newest || o->version > newest->version)) newest = o;
    }
    size_t k = 0;
    for (size_t i = 0; i < c->n_tables; i++) {
        exec_table *o = c->tables[i];
        if (same_table(o, t->path, t->branch) && o != newest) {
            if (o != t->base && !(o->base && o->base == t->base)) drop_csrs_on(c, o);
            exec_table_release(o);
        } else {
            c->tables[k++] = o;
        }
    }
    c->n_tables = k;
    if (c->n_tables == c->cap_tables) {
        size_t nc = c->cap_tables ? c->cap_tables * 2 : 8;
        exec_table **nt = core_realloc(c->tables, nc * sizeof *nt);
        if (!nt) {
            drop_orphan_csrs(c, NULL);
            return t; /* usable, just not cached */
        }
        c->tables = nt;
        c->cap_tables = nc;
    }
    atomic_fetch_add(&t->refs, 1);
    c->tables[c->n_tables++] = t;
    /* what only a base of another table of this path's tables extends stays */
    const exec_table *keep = t->base;
    if (!keep && newest) keep = newest->base;
    drop_orphan_csrs(c, keep);
    return t;
}

int exec_cache_table(exec_table **out, exec_cache *c, store *s, const graph_table *gt)
{
    *out = NULL;
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < c->n_tables; i++) {
        exec_table *t = c->tables[i];
        if (t->version == gt->version && same_table(t, gt->path, gt->table_branch)) {
            atomic_fetch_add(&t->refs, 1);
            c->st.table_hits++;
            pthread_mutex_unlock(&c->mu);
            *out = t;
            return 0;
        }
    }
    /* The newest earlier version of it, to fold the new one onto. */
    exec_table *old = NULL;
    for (size_t i = 0; i < c->n_tables; i++) {
        exec_table *o = c->tables[i];
        if (same_table(o, gt->path, gt->table_branch) && o->version < gt->version &&
            (!old || o->version > old->version))
            old = o;
    }
    if (old) atomic_fetch_add(&old->refs, 1);
    pthread_mutex_unlock(&c->mu);
    /* Build outside the lock: another thread may build the same table meanwhile; the first
     * to publish wins and the other copy is dropped. */
    exec_table *t = NULL;
    int rc = old ? table_fold(&t, s, gt, old) : 0;
    exec_table_release(old);
    int folded = rc == 0 && t;
    if (rc == 0 && !t) rc = table_load(&t, s, gt);
    if (rc) return rc;
    pthread_mutex_lock(&c->mu);
    if (folded)
        c->st.table_folds++;
    else
        c->st.table_loads++;
    *out = cache_install(c, t);
    pthread_mutex_unlock(&c->mu);
    return 0;
}

int exec_table_has_column(exec_table *t, const char *name)
{
    pthread_mutex_lock(&t->mu);
    int found = 0;
    for (size_t i = 0; i < t->n_cols && !found; i++)
        found = !strcmp(t->col_names[i], name);
    pthread_mutex_unlock(&t->mu);
    return found;
}

int exec_table_column(const arrow_array **out, exec_cache *c, exec_table *t, const char *name)
{
    *out = NULL;
    if (!strcmp(name, GRAPH_COL_ID)) {
        *out = exec_table_ids(t);
        return *out ? 0 : core_err_nomem();
    }
    /* Loading under the table's own mutex keeps two threads from reading one column twice;
     * other tables and the cache stay usable meanwhile. */
    pthread_mutex_lock(&t->mu);
    for (size_t i = 0; i < t->n_cols; i++)
        if (!strcmp(t->col_names[i], name)) {
            *out = t->cols[i];
            pthread_mutex_unlock(&t->mu);
            return 0;
        }
    arrow_array *a = NULL;
    const char *names[1] = {name};
    int rc;
    if (t->base) { /* the base's column (cached there) and the appended rows' */
        pthread_mutex_unlock(&t->mu);
        const arrow_array *ba = NULL;
        arrow_array *da = NULL;
        rc = exec_table_column(&ba, c, t->base, name);
        if (rc == 0)
            rc = lance_dataset_take_column(&da, t->ds, name, t->d_addrs,
                                           (size_t)(t->n_rows - t->n_base));
        if (rc == 0) rc = concat2(&a, ba, da);
        arrow_array_free(da);
        pthread_mutex_lock(&t->mu);
        for (size_t i = 0; rc == 0 && i < t->n_cols; i++)
            if (!strcmp(t->col_names[i], name)) { /* another thread won */
                arrow_array_free(a);
                *out = t->cols[i];
                pthread_mutex_unlock(&t->mu);
                return 0;
            }
    } else {
        rc = t->addrs ? lance_dataset_take_column(&a, t->ds, name, t->addrs, (size_t)t->n_rows)
                      : scan_columns(&a, t->ds, names, 1);
    }
    if (!rc && a->length != t->n_rows)
        rc = core_err(OG_E_CORRUPT, "table %s: column %s has %lld rows, id has %lld", t->path, name,
                      (long long)a->length, (long long)t->n_rows);
    char *nm = rc ? NULL : core_strdup(name);
    char **nn = NULL;
    arrow_array **na = NULL;
    if (!rc && nm) {
        nn = core_realloc(t->col_names, (t->n_cols + 1) * sizeof *nn);
        if (nn) t->col_names = nn;
        na = nn ? core_realloc(t->cols, (t->n_cols + 1) * sizeof *na) : NULL;
        if (na) t->cols = na;
    }
    if (!rc && (!nm || !nn || !na)) rc = core_err_nomem();
    if (rc) {
        pthread_mutex_unlock(&t->mu);
        core_free(nm);
        arrow_array_free(a);
        return rc;
    }
    t->col_names[t->n_cols] = nm;
    t->cols[t->n_cols++] = a;
    pthread_mutex_unlock(&t->mu);
    if (c) {
        pthread_mutex_lock(&c->mu);
        c->st.column_loads++;
        pthread_mutex_unlock(&c->mu);
    }
    *out = a;
    return 0;
}

/* ---- offers from this handle's own commits --------------------------------------------------- */

static uint64_t live_rows(const lance_fragment_info *f, bool *known)
{
    if (!f->deletions) return f->physical_rows;
    if (!f->deleted_rows || f->deleted_rows > f->physical_rows) *known = false;
    return f->physical_rows - (f->deleted_rows <= f->physical_rows ? f->deleted_rows : 0);
}

static bool has_fragment(const lance_dataset *ds, uint64_t id)
{
    size_t n = lance_dataset_fragment_count(ds);
    for (size_t i = 0; i < n; i++)
        if (fragment_at(ds, i).id == id) return true;
    return false;
}

/* Whether `to` holds the same live rows as `from` in the same scan order, given that it is a
 * Rewrite of it (same rows): the fragments both have are unchanged and in the same order, and
 * each run of fragments between two of them was replaced in place by new fragments (without
 * deletions) holding as many rows. A merge of fragments that were not adjacent moves rows and
 * fails here. It also takes a run's rows to keep their order inside the run, which a data
 * table's compaction does (only the graph manifest's sets rows apart, first). */
static bool same_order(const lance_dataset *from, const lance_dataset *to)
{
    size_t nf = lance_dataset_fragment_count(from), nt = lance_dataset_fragment_count(to);
    size_t i = 0, j = 0;
    while (i < nf || j < nt) {
        if (i < nf && j < nt && fragment_at(from, i).id == fragment_at(to, j).id) {
            if (!same_fragment(from, i, to, j)) return false;
            i++, j++;
            continue;
        }
        uint64_t was = 0, now = 0;
        size_t i0 = i, j0 = j;
        bool known = true;
        while (i < nf && !has_fragment(to, fragment_at(from, i).id)) {
            lance_fragment_info f = fragment_at(from, i++);
            was += live_rows(&f, &known);
        }
        while (j < nt && !has_fragment(from, fragment_at(to, j).id)) {
            lance_fragment_info f = fragment_at(to, j++);
            if (f.deletions) return false;
            now += f.physical_rows;
        }
        if ((i == i0 && j == j0) || !known || was != now) return false;
    }
    return true;
}

/* The table of a Rewrite of old's version (the same rows in the same order: checked by
 * same_order): a new root over ds holding old's rows (a folded old's concatenated), their
 * dictionary, and the columns old had loaded, so that later appends fold onto it. */
static int reroot(exec_table **out, exec_table *old, const exec_table_offer *o, lance_dataset *ds)
{
    *out = NULL;
    const arrow_array *ids = exec_table_ids(old); /* (a folded old's src/dst too) */
    exec_table *t = ids ? core_calloc(1, sizeof *t) : NULL;
    if (!t) {
        lance_dataset_free(ds);
        return core_err_nomem();
    }
    atomic_init(&t->refs, 1);
    pthread_mutex_init(&t->mu, NULL);
    t->kind = old->kind;
    t->version = o->to_version;
    t->lineage = new_lineage();
    t->ds = ds;
    t->path = core_strdup(o->path);
    t->branch = o->branch ? core_strdup(o->branch) : NULL;
    t->id = arrow_array_ref((arrow_array *)ids);
    t->src = old->src ? arrow_array_ref(old->src) : NULL;
    t->dst = old->dst ? arrow_array_ref(old->dst) : NULL;
    t->n_rows = old->n_rows;
    int rc = !t->path || (o->branch && !t->branch) ? core_err_nomem() : 0;
    if (rc == 0 && old->kind == LANG_EDGE && (!t->src || !t->dst))
        rc = core_err(OG_E_INTERNAL, "table %s: no endpoints to re-root", o->path);
    if (rc == 0) rc = build_dict(t);
    /* the columns old has loaded: the same rows */
    pthread_mutex_lock(&old->mu);
    size_t nc = old->n_cols;
    if (rc == 0 && nc) {
        t->col_names = core_calloc(nc, sizeof *t->col_names);
        t->cols = core_calloc(nc, sizeof *t->cols);
        if (!t->col_names || !t->cols) rc = core_err_nomem();
        for (size_t i = 0; rc == 0 && i < nc; i++) {
            if (!(t->col_names[i] = core_strdup(old->col_names[i]))) {
                rc = core_err_nomem();
                break;
            }
            t->cols[i] = arrow_array_ref(old->cols[i]);
            t->n_cols++;
        }
    }
    pthread_mutex_unlock(&old->mu);
    if (rc) {
        table_free(t);
        return rc;
    }
    *out = t;
    return 0;
}

/* The table of o's version from `old` (o's from_version), without reading storage. */
static int offer_derive(exec_table **out, exec_table *old, const exec_table_offer *o,
                        lance_dataset *ds)
{
    *out = NULL;
    exec_table *root = old->base ? old->base : old;
    const lance_dataset *op = old->ds, *vp = ds;
    size_t on = lance_dataset_fragment_count(op), vn = lance_dataset_fragment_count(vp);
    size_t nd = old->base ? (size_t)(old->n_rows - old->n_base) : 0; /* old's appended rows */
    if (!same_lance_schema(old->ds, ds) || !same_lance_schema(root->ds, ds)) goto skip;
    if (o->rewrite) {
        if (!same_order(op, vp)) goto skip;
        return reroot(out, old, o, ds);
    }
    /* An append: old's fragments unchanged and first, then fragments holding exactly the
     * offered rows. */
    int64_t n = o->id ? o->id->length : 0;
    if (!o->id || vn <= on) goto skip;
    for (size_t i = 0; i < on; i++)
        if (!same_fragment(op, i, vp, i)) goto skip;
    uint64_t added = 0;
    for (size_t i = on; i < vn; i++) {
        lance_fragment_info f = fragment_at(vp, i);
        if (f.deletions) goto skip;
        added += f.physical_rows;
    }
    if (added != (uint64_t)n || nd + (size_t)n > EXEC_FOLD_MAX_ROWS) goto skip;
    if (old->kind == LANG_EDGE && (!o->src || !o->dst)) goto skip;
    uint64_t *addrs = core_malloc((nd + (size_t)n + 1) * sizeof *addrs);
    if (!addrs) {
        lance_dataset_free(ds);
        return core_err_nomem();
    }
    size_t m = 0;
    for (size_t r = 0; r < nd; r++)
        addrs[m++] = old->d_addrs[r];
    for (size_t i = on; i < vn; i++) {
        lance_fragment_info f = fragment_at(vp, i);
        for (uint64_t r = 0; r < f.physical_rows; r++)
            addrs[m++] = (f.id << 32) | r;
    }
    arrow_array *cols[3] = {NULL, NULL, NULL};
    const arrow_array *add[3] = {o->id, o->src, o->dst};
    const arrow_array *had[3] = {old->d_id, old->d_src, old->d_dst};
    int rc = 0;
    for (int k = 0; rc == 0 && k < (old->kind == LANG_EDGE ? 3 : 1); k++)
        rc = old->base ? concat2(&cols[k], had[k], add[k])
             : (cols[k] = arrow_array_ref((arrow_array *)add[k])) ? 0
                                                                  : core_err_nomem();
    if (rc == 0) {
        rc = folded_new(out, root, o->path, o->branch, o->to_version, ds, cols[0], cols[1], cols[2],
                        addrs, old->lineage);
    } else {
        lance_dataset_free(ds);
        core_free(addrs);
    }
    for (int k = 0; k < 3; k++)
        arrow_array_free(cols[k]);
    return rc;
skip:
    lance_dataset_free(ds);
    return 0;
}

static void csr_attach(exec_csr *g, exec_table *edges, exec_table *from, exec_table *to);

/* One side of a folded adjacency as plain arrays: each node's base neighbours, then its
 * appended ones (what csr_build gives over the same rows: edge-row order). */
static int flatten_side(uint32_t **off_out, uint32_t **nbr_out, uint32_t **edge_out,
                        const uint32_t *off, const uint32_t *nbr, const uint32_t *edg,
                        const exec_dedge *d, size_t nd, size_t n_nodes)
{
    size_t m = (size_t)off[n_nodes] + nd;
    uint32_t *no = core_malloc((n_nodes + 1) * sizeof *no);
    uint32_t *nn = core_malloc((m ? m : 1) * sizeof *nn),
             *ne = core_malloc((m ? m : 1) * sizeof *ne);
    if (!no || !nn || !ne) {
        core_free(no);
        core_free(nn);
        core_free(ne);
        return core_err_nomem();
    }
    size_t w = 0, k = 0;
    for (size_t v = 0; v < n_nodes; v++) {
        no[v] = (uint32_t)w;
        size_t b = off[v], e = off[v + 1];
        memcpy(nn + w, nbr + b, (e - b) * sizeof *nn);
        memcpy(ne + w, edg + b, (e - b) * sizeof *ne);
        w += e - b;
        for (; k < nd && d[k].node == v; k++, w++) {
            nn[w] = d[k].nbr;
            ne[w] = d[k].edge;
        }
    }
    no[n_nodes] = (uint32_t)w;
    *off_out = no;
    *nbr_out = nn;
    *edge_out = ne;
    return 0;
}

/* The adjacency of re-rooted table t (old's rows) from old's adjacency g: the same lists. */
static int csr_flatten(exec_csr **out, const exec_csr *g, exec_table *t)
{
    *out = NULL;
    exec_csr *n = core_calloc(1, sizeof *n);
    if (!n) return core_err_nomem();
    int rc = flatten_side(&n->out_off, &n->out_nbr, &n->out_edge, g->out_off, g->out_nbr,
                          g->out_edge, g->d_out, g->n_d, (size_t)g->from->n_rows);
    if (rc == 0)
        rc = flatten_side(&n->in_off, &n->in_nbr, &n->in_edge, g->in_off, g->in_nbr, g->in_edge,
                          g->d_in, g->n_d, (size_t)g->to->n_rows);
    if (rc) {
        core_free(n->out_off);
        core_free(n->out_nbr);
        core_free(n->out_edge);
        core_free(n);
        return rc;
    }
    csr_attach(n, t, g->from, g->to);
    *out = n;
    return 0;
}

static bool cache_holds_table(const exec_cache *c, const exec_table *t)
{
    for (size_t i = 0; i < c->n_tables; i++)
        if (c->tables[i] == t) return true;
    return false;
}

void exec_cache_offer(exec_cache *c, exec_table_offer *o)
{
    lance_dataset *ds = o->ds;
    o->ds = NULL;
    if (!c || !ds || !ds->m || o->kind != LANG_EDGE || o->to_version <= o->from_version) {
        lance_dataset_free(ds);
        return;
    }
    pthread_mutex_lock(&c->mu);
    exec_table *old = NULL;
    for (size_t i = 0; i < c->n_tables && !old; i++) {
        exec_table *t = c->tables[i];
        if (t->version == o->from_version && same_table(t, o->path, o->branch) && !t->addrs &&
            !(t->base && t->base->addrs) && t->ds && t->ds->m) {
            old = t;
            atomic_fetch_add(&old->refs, 1);
        }
    }
    /* a re-root carries old's adjacency over (flattened below, outside the lock) */
    exec_csr *gs[8];
    size_t ng = 0;
    for (size_t i = 0; old && o->rewrite && i < c->n_csrs && ng < 8; i++)
        if (c->csrs[i]->edges == old) {
            gs[ng] = c->csrs[i];
            atomic_fetch_add(&gs[ng++]->refs, 1);
        }
    pthread_mutex_unlock(&c->mu);
    if (!old) {
        lance_dataset_free(ds);
        return;
    }
    exec_table *t = NULL;
    int rc = offer_derive(&t, old, o, ds);
    exec_table_release(old);
    exec_csr *flat[8];
    size_t nf = 0;
    for (size_t i = 0; i < ng; i++) {
        if (rc == 0 && t && csr_flatten(&flat[nf], gs[i], t) == 0) nf++;
        exec_csr_release(gs[i]);
    }
    if (rc) {
        /* only a cache: the table is read when a query needs it */
        core_log(CORE_LOG_DEBUG, "exec cache: offer of %s version %llu dropped: %s", o->path,
                 (unsigned long long)o->to_version, og_error_last()->message);
        og_error_clear();
        return;
    }
    if (!t) return;
    pthread_mutex_lock(&c->mu);
    exec_table *got = cache_install(c, t);
    if (got == t && cache_holds_table(c, t)) {
        c->st.offers++;
        for (size_t i = 0; i < nf; i++) {
            exec_csr *g = flat[i];
            if (!cache_holds_table(c, g->from) || !cache_holds_table(c, g->to)) continue;
            if (c->n_csrs == c->cap_csrs) {
                size_t cap = c->cap_csrs ? c->cap_csrs * 2 : 8;
                exec_csr **nn = core_realloc(c->csrs, cap * sizeof *nn);
                if (!nn) continue;
                c->csrs = nn;
                c->cap_csrs = cap;
            }
            c->csrs[c->n_csrs++] = g;
            flat[i] = NULL;
        }
    }
    pthread_mutex_unlock(&c->mu);
    for (size_t i = 0; i < nf; i++)
        exec_csr_release(flat[i]);
    exec_table_release(got);
}

/* ---- CSR ------------------------------------------------------------------------------------- */

static int csr_side(uint32_t **off_out, uint32_t **nbr_out, uint32_t **edge_out, size_t n_nodes,
                    const int64_t *key, const int64_t *other, int64_t n_edges)
{
    uint32_t *off = core_calloc(n_nodes + 1, sizeof *off);
    size_t m = 0;
    for (int64_t e = 0; e < n_edges; e++)
        if (key[e] >= 0 && other[e] >= 0) m++;
    uint32_t *nbr = core_malloc((m ? m : 1) * sizeof *nbr);
    uint32_t *edg = core_malloc((m ? m : 1) * sizeof *edg);
    if (!off || !nbr || !edg) {
        core_free(off);
        core_free(nbr);
        core_free(edg);
        return core_err_nomem();
    }
    for (int64_t e = 0; e < n_edges; e++)
        if (key[e] >= 0 && other[e] >= 0) off[key[e] + 1]++;
    for (size_t i = 0; i < n_nodes; i++)
        off[i + 1] += off[i];
    /* Fill in edge-row order: a running cursor per node (off[] shifted by one, restored). */
    for (int64_t e = 0; e < n_edges; e++) {
        if (key[e] < 0 || other[e] < 0) continue;
        uint32_t at = off[key[e]]++;
        nbr[at] = (uint32_t)other[e];
        edg[at] = (uint32_t)e;
    }
    for (size_t i = n_nodes; i > 0; i--)
        off[i] = off[i - 1];
    off[0] = 0;
    *off_out = off;
    *nbr_out = nbr;
    *edge_out = edg;
    return 0;
}

/* A new adjacency's one reference, and its references to the tables it is over. */
static void csr_attach(exec_csr *g, exec_table *edges, exec_table *from, exec_table *to)
{
    atomic_init(&g->refs, 1);
    atomic_fetch_add(&edges->refs, 1);
    atomic_fetch_add(&from->refs, 1);
    atomic_fetch_add(&to->refs, 1);
    g->edges = edges;
    g->from = from;
    g->to = to;
}

static int dedge_cmp(const void *pa, const void *pb)
{
    const exec_dedge *a = pa, *b = pb;
    if (a->node != b->node) return a->node < b->node ? -1 : 1;
    return a->edge < b->edge ? -1 : a->edge > b->edge;
}

/* The adjacency of a folded edge table from its base's (same endpoint tables): the base's
 * arrays borrowed, the appended edges sorted by node then edge row. `prev` (or NULL): the
 * adjacency of an earlier folded version over the same base, whose appended edges are the
 * first of these (a table only appends between two versions that fold onto one base): its
 * sorted lists are merged with the edges after them instead of sorting them all again. */
static int csr_fold(exec_csr **out, exec_csr *base, exec_csr *prev, exec_table *edges,
                    exec_table *from, exec_table *to)
{
    *out = NULL;
    size_t n = (size_t)(edges->n_rows - edges->n_base), nd = 0;
    size_t skip = prev ? (size_t)(prev->edges->n_rows - prev->edges->n_base) : 0;
    size_t np = prev ? prev->n_d : 0;
    exec_csr *g = core_calloc(1, sizeof *g);
    exec_dedge *o = core_malloc((n ? n : 1) * sizeof *o),
               *in = core_malloc((n ? n : 1) * sizeof *in);
    exec_dedge *no = np ? core_malloc((n - skip + 1) * sizeof *no) : NULL;
    exec_dedge *ni = np ? core_malloc((n - skip + 1) * sizeof *ni) : NULL;
    if (!g || !o || !in || (np && (!no || !ni))) {
        core_free(g);
        core_free(o);
        core_free(in);
        core_free(no);
        core_free(ni);
        return core_err_nomem();
    }
    /* the edges prev does not have: into o/in directly, or (with prev) into no/ni first */
    exec_dedge *wo = np ? no : o, *wi = np ? ni : in;
    for (size_t e = skip; e < n; e++) {
        size_t len;
        const uint8_t *p = arrow_array_get_bytes(edges->d_src, (int64_t)e, &len);
        int64_t sr = exec_table_find(from, p, len);
        p = arrow_array_get_bytes(edges->d_dst, (int64_t)e, &len);
        int64_t dr = exec_table_find(to, p, len);
        if (sr < 0 || dr < 0) continue; /* a missing endpoint: left out, as csr_build does */
        uint32_t row = (uint32_t)(edges->n_base + (int64_t)e);
        wo[nd] = (exec_dedge){(uint32_t)sr, (uint32_t)dr, row};
        wi[nd++] = (exec_dedge){(uint32_t)dr, (uint32_t)sr, row};
    }
    if (nd > 1) {
        qsort(wo, nd, sizeof *wo, dedge_cmp);
        qsort(wi, nd, sizeof *wi, dedge_cmp);
    }
    if (np) { /* merge prev's sorted lists with the new ones */
        const exec_dedge *pl[2] = {prev->d_out, prev->d_in}, *nl[2] = {no, ni};
        exec_dedge *dl[2] = {o, in};
        for (int k = 0; k < 2; k++) {
            size_t a = 0, b = 0, m = 0;
            while (a < np || b < nd)
                dl[k][m++] = b == nd || (a < np && dedge_cmp(&pl[k][a], &nl[k][b]) <= 0)
                                 ? pl[k][a++]
                                 : nl[k][b++];
        }
        nd += np;
        core_free(no);
        core_free(ni);
    }
    csr_attach(g, edges, from, to);
    atomic_fetch_add(&base->refs, 1);
    g->base = base;
    g->out_off = base->out_off;
    g->out_nbr = base->out_nbr;
    g->out_edge = base->out_edge;
    g->in_off = base->in_off;
    g->in_nbr = base->in_nbr;
    g->in_edge = base->in_edge;
    g->d_out = o;
    g->d_in = in;
    g->n_d = nd;
    *out = g;
    return 0;
}

static int csr_build(exec_csr **out, exec_table *edges, exec_table *from, exec_table *to)
{
    *out = NULL;
    if (edges->base && !exec_table_ids(edges)) return core_err_nomem(); /* src/dst whole */
    int64_t n = edges->n_rows;
    int64_t *s = core_malloc((size_t)(n ? n : 1) * sizeof *s);
    int64_t *d = core_malloc((size_t)(n ? n : 1) * sizeof *d);
    exec_csr *g = core_calloc(1, sizeof *g);
    int rc = 0;
    if (!s || !d || !g) {
        rc = core_err_nomem();
        goto done;
    }
    for (int64_t e = 0; e < n; e++) {
        size_t len;
        const uint8_t *p = arrow_array_get_bytes(edges->src, e, &len);
        s[e] = exec_table_find(from, p, len);
        p = arrow_array_get_bytes(edges->dst, e, &len);
        d[e] = exec_table_find(to, p, len);
    }
    rc = csr_side(&g->out_off, &g->out_nbr, &g->out_edge, (size_t)from->n_rows, s, d, n);
    if (!rc) rc = csr_side(&g->in_off, &g->in_nbr, &g->in_edge, (size_t)to->n_rows, d, s, n);
    if (rc) goto done;
    csr_attach(g, edges, from, to);
    *out = g;
    g = NULL;
done:
    if (g) {
        core_free(g->out_off);
        core_free(g->out_nbr);
        core_free(g->out_edge);
        core_free(g);
    }
    core_free(s);
    core_free(d);
    return rc;
}

int exec_cache_csr(exec_csr **out, exec_cache *c, exec_table *edges, exec_table *from,
                   exec_table *to)
{
    *out = NULL;
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < c->n_csrs; i++) {
        exec_csr *g = c->csrs[i];
        if (g->edges == edges && g->from == from && g->to == to) {
            atomic_fetch_add(&g->refs, 1);
            c->st.csr_hits++;
            pthread_mutex_unlock(&c->mu);
            *out = g;
            return 0;
        }
    }
    /* A folded edge table over the same endpoint tables as a cached adjacency of its base:
     * fold onto it instead of building. */
    exec_csr *base = NULL, *prev = NULL;
    for (size_t i = 0; edges->base && i < c->n_csrs && !base; i++) {
        exec_csr *b = c->csrs[i];
        if (b->edges == edges->base && b->from == from && b->to == to && !b->base) {
            base = b;
            atomic_fetch_add(&base->refs, 1);
        }
    }
    /* and the largest earlier fold onto it, to extend */
    for (size_t i = 0; base && i < c->n_csrs; i++) {
        exec_csr *b = c->csrs[i];
        if (b->base == base && b->from == from && b->to == to && b->edges->base == edges->base &&
            b->edges->n_rows <= edges->n_rows && b->edges->lineage == edges->lineage &&
            (!prev || b->edges->n_rows > prev->edges->n_rows))
            prev = b;
    }
    if (prev) atomic_fetch_add(&prev->refs, 1);
    pthread_mutex_unlock(&c->mu);
    exec_csr *g = NULL;
    int rc = base ? csr_fold(&g, base, prev, edges, from, to) : csr_build(&g, edges, from, to);
    exec_csr_release(prev);
    exec_csr_release(base);
    if (rc) return rc;
    pthread_mutex_lock(&c->mu);
    if (g->base)
        c->st.csr_folds++;
    else
        c->st.csr_builds++;
    for (size_t i = 0; i < c->n_csrs; i++) {
        exec_csr *o = c->csrs[i];
        if (o->edges == edges && o->from == from && o->to == to) {
            atomic_fetch_add(&o->refs, 1);
            pthread_mutex_unlock(&c->mu);
            exec_csr_release(g);
            *out = o;
            return 0;
        }
    }
    /* Only cache adjacency over tables the cache still holds (a table evicted meanwhile
     * would keep this entry from ever being dropped). */
    int held = 0;
    for (size_t i = 0; i < c->n_tables; i++)
        held += c->tables[i] == edges || c->tables[i] == from || c->tables[i] == to;
    int need = 1 + (from != edges) + (to != from && to != edges);
    if (held >= need && g->base) {
        /* a folded adjacency supersedes the others folded onto its base */
        size_t k = 0;
        for (size_t i = 0; i < c->n_csrs; i++) {
            exec_csr *o = c->csrs[i];
            if (o->base == g->base && o->from == from && o->to == to)
                exec_csr_release(o);
            else
                c->csrs[k++] = o;
        }
        c->n_csrs = k;
    }
    if (held >= need) {
        if (c->n_csrs == c->cap_csrs) {
            size_t nc = c->cap_csrs ? c->cap_csrs * 2 : 8;
            exec_csr **nn = core_realloc(c->csrs, nc * sizeof *nn);
            if (nn) {
                c->csrs = nn;
                c->cap_csrs = nc;
            }
        }
        if (c->n_csrs < c->cap_csrs) {
            atomic_fetch_add(&g->refs, 1);
            c->csrs[c->n_csrs++] = g;
        }
    }
    pthread_mutex_unlock(&c->mu);
    *out = g;
    return 0;
}
