/* The mutation/load adapter (RFC-022 §6.1): a change set becomes one staged Lance transaction
 * per touched table, prepared outside the gates against the pinned base; every table the
 * validators probed joins the read set; effects commit at exactly their expected version + 1
 * and are proved by transaction identity; the delta is one table_version row per effect plus
 * the lineage (commit and head rows). */
#include "write/internal.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/failpoint.h"
#include "core/sortrun.h"
#include "lance/keyindex.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int write_changes_prepare(write_graph *g, const void *input, const graph_snapshot *snap,
                          write_intent *in);
int write_changes_apply(write_graph *g, write_intent *in);
int write_changes_rows(void *arg, const graph_snapshot *cur, uint64_t mver, graph_rows *rows);

/* Row addresses of the rows whose id is in ids: through the table's id index (what it does
 * not cover is scanned). */
static int find_rows(const lance_dataset *ds, char *const *ids, size_t n, uint64_t **addrs,
                     size_t *n_addrs)
{
    lance_kix_addrs out;
    int rc = lance_kix_lookup_strs(&out, ds, GRAPH_COL_ID, ids, n);
    *addrs = rc ? NULL : out.a;
    *n_addrs = rc ? 0 : out.n;
    return rc;
}

/* Rows in the type's schema as rows of the table's: a column the table keeps hidden (a property a
 * schema apply dropped softly) is null in them. *out is NULL when b fits as it is. */
static int pad_to_table(arrow_batch **out, const arrow_batch *b, const arrow_schema *ts)
{
    *out = NULL;
    if (!b) return 0;
    bool same = b->schema.n_fields == ts->n_fields;
    for (size_t i = 0; same && i < ts->n_fields; i++)
        same = strcmp(b->schema.fields[i].name, ts->fields[i].name) == 0;
    if (same) return 0;
    arrow_array **cols = core_calloc(ts->n_fields, sizeof *cols);
    if (!cols) return core_err_nomem();
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < ts->n_fields; i++) {
        int at = arrow_schema_find(&b->schema, ts->fields[i].name);
        if (at >= 0)
            cols[i] = arrow_array_ref(b->columns[at]);
        else
            rc = arrow_array_new_null(&cols[i], &ts->fields[i].type, b->num_rows);
    }
    if (rc == 0) rc = arrow_batch_new(out, ts, cols, ts->n_fields);
    for (size_t i = 0; i < ts->n_fields; i++)
        arrow_array_free(cols[i]);
    core_free(cols);
    return rc;
}

static int stage_rows(lance_staged **st, const lance_dataset *ds, const graph_change *c,
                      arrow_batch *rows, const lance_write_options *opt);
static int stream_prepare(write_graph *g, const write_change_stream *src,
                          const graph_snapshot *snap, write_intent *in);

static int stage_change_opt(lance_staged **st, const lance_dataset *ds, const graph_change *c,
                            const lance_write_options *opt)
{
    arrow_batch *padded = NULL;
    int rc = pad_to_table(&padded, c->rows, &ds->schema);
    if (rc == 0) rc = stage_rows(st, ds, c, padded ? padded : c->rows, opt);
    arrow_batch_free(padded);
    return rc;
}

static int stage_rows(lance_staged **st, const lance_dataset *ds, const graph_change *c,
                      arrow_batch *rows, const lance_write_options *opt)
{
    lance_write_options wo = *opt;
    switch (c->mode) {
    case GRAPH_CHANGE_INSERT:
        /* Validation proved no inserted id is committed, against the pinned version the read
         * set arbitrates, so a plain append is a strict insert. */
        return lance_stage_append(st, ds, &rows, 1, &wo);
    case GRAPH_CHANGE_UPSERT:
        return lance_stage_merge_insert(st, ds, GRAPH_COL_ID, &rows, 1, LANCE_MERGE_UPSERT, &wo);
    case GRAPH_CHANGE_REPLACE: {
        arrow_batch *const *b = rows && rows->num_rows ? &rows : NULL;
        return lance_stage_overwrite(st, ds, &ds->schema, b, b ? 1 : 0, &wo);
    }
    case GRAPH_CHANGE_DELTA: {
        /* A merge's delta: its upserts and deletions in one Update, so the target moves by
         * exactly one version per table. */
        arrow_batch *const *b = rows && rows->num_rows ? &rows : NULL;
        return lance_stage_merge_insert_ex(st, ds, GRAPH_COL_ID, b, b ? 1 : 0, LANCE_MERGE_UPSERT,
                                           (const char *const *)c->delete_ids, c->n_delete_ids,
                                           &wo);
    }
    case GRAPH_CHANGE_DELETE: {
        uint64_t *addrs = NULL;
        size_t n = 0;
        int rc = find_rows(ds, c->delete_ids, c->n_delete_ids, &addrs, &n);
        if (rc == 0) rc = lance_stage_delete_rows(st, ds, addrs, n, &wo);
        core_free(addrs);
        return rc;
    }
    default:
        return core_err(OG_E_INTERNAL, "unknown change mode %d", c->mode);
    }
}

static int stage_change(lance_staged **st, const lance_dataset *ds, const graph_change *c)
{
    lance_write_options wo = LANCE_WRITE_OPTIONS_INIT;
    return stage_change_opt(st, ds, c, &wo);
}

int write_changes_prepare(write_graph *g, const void *input, const graph_snapshot *snap,
                          write_intent *in)
{
    const write_changes_input *ci = input;
    graph_change_set built;
    memset(&built, 0, sizeof built);
    if (ci->stream) return stream_prepare(g, ci->stream, snap, in);
    const graph_change_set *cs = ci->fixed;
    graph_probes reads;
    memset(&reads, 0, sizeof reads);
    int rc = 0;
    if (!cs) {
        /* Computed against this base: a re-prepare recomputes it, never patches it. */
        rc = ci->build(ci->arg, g->h->catalog, snap, g->h->s, &built, &reads);
        /* What the builder read is load-bearing, whether or not it is written. */
        for (size_t i = 0; rc == 0 && i < reads.n; i++) {
            const graph_table *t = graph_snapshot_table(snap, reads.aliases[i]);
            if (t) rc = write_rs_add_table(&in->rs, t->alias, t->version, false);
        }
        graph_probes_clear(&reads);
        if (rc != 0) {
            graph_change_set_clear(&built);
            return rc;
        }
        cs = &built;
    }
    rc = write_changes_prepare_set(g, cs, snap, in, true);
    bool deferred = false; /* a first-touch effect stages its change in apply */
    for (size_t i = 0; i < in->n_effects; i++)
        deferred |= in->effects[i].fork;
    if (rc == 0 && deferred && cs == &built) {
        if (!(in->owned_changes = core_malloc(sizeof *in->owned_changes))) {
            graph_change_set_clear(&built);
            return core_err_nomem();
        }
        *in->owned_changes = built; /* the effects point into its changes */
        return 0;
    }
    graph_change_set_clear(&built);
    return rc;
}

/* ---- a change set in chunks (write_changes_stream) ----------------------------------------- */

/* One type's state across the chunks of a stream: its transaction, fed chunk by chunk, and the
 * columns the whole-set checks read (ids, endpoints, @unique columns) of every chunk. */
typedef struct stream_type {
    int mode;         /* 0: no chunk had the type yet */
    bool fork;        /* a first touch of the branch: its rows are staged in apply, on the fork */
    const char *uuid; /* the transaction identity (NULL: a new one; a fork's is pre-minted) */
    const graph_table *t;
    const lance_dataset *ds; /* the pinned table (owned or borrowed from the base) */
    lance_dataset *owned;    /* NULL when borrowed from the base */
    lance_staged *st;
    arrow_schema schema; /* of the type's rows (copied from the first chunk) */
    /* The id (and src, dst) columns, appended chunk by chunk into buffers that grow in place
     * (a large realloc remaps rather than copies), so they are never held twice, as a
     * concatenation of per-chunk columns would at the end. Never null (the row checks). */
    struct stream_str {
        int32_t *off; /* rows + 1 */
        char *val;
        size_t rows, cap_rows, len, cap_len;
    } str[3];
    arrow_array ***cols; /* per part: the other kept columns (NULL where not kept) */
    uint64_t **lines;    /* per part (NULL: the rows have none) */
    int64_t *rows;       /* per part */
    size_t n_parts, cap_parts;
    /* Once the kept columns outgrow their budget (spilled): the ids as (id, line) records and
     * an edge type's endpoints as (src or dst, line, edge id), in sorted runs on disk. */
    core_sortrun *sort[3];
    /* Rows not staged yet: a type's rows are staged in whole fragments of g_frag rows (the
     * compaction target, so a large load leaves nothing for maintenance to merge), the rest
     * waits for the next chunk, or the end. */
    arrow_batch **pend;
    size_t n_pend, cap_pend;
    uint64_t pend_rows, pend_bytes;
} stream_type;

static void stream_parts_free(stream_type *ty)
{
    for (size_t p = 0; p < ty->n_parts; p++) {
        for (size_t f = 0; ty->cols[p] && f < ty->schema.n_fields; f++)
            arrow_array_free(ty->cols[p][f]);
        core_free(ty->cols[p]);
        core_free(ty->lines[p]);
    }
    core_free(ty->cols);
    core_free(ty->lines);
    core_free(ty->rows);
    ty->cols = NULL;
    ty->lines = NULL;
    ty->rows = NULL;
    ty->n_parts = ty->cap_parts = 0;
}

static void stream_type_clear(stream_type *ty)
{
    stream_parts_free(ty);
    for (size_t k = 0; k < 3; k++) {
        core_free(ty->str[k].off);
        core_free(ty->str[k].val);
    }
    for (size_t k = 0; k < 3; k++)
        core_sortrun_free(ty->sort[k]);
    for (size_t i = 0; i < ty->n_pend; i++)
        arrow_batch_free(ty->pend[i]);
    core_free(ty->pend);
    arrow_schema_clear(&ty->schema);
    lance_staged_discard(ty->st); /* never committed: its files go too */
    lance_dataset_free(ty->owned);
    memset(ty, 0, sizeof *ty);
}

/* Whether the whole-set checks read column f of type td's rows. */
static bool stream_keeps(const lang_typedef *td, size_t f)
{
    size_t first = td->kind == LANG_EDGE ? 3 : 1;
    if (f < first) return true;
    for (size_t k = 0; k < td->n_cons; k++) {
        const lang_constraint *con = &td->cons[k];
        if (con->kind != LANG_CON_UNIQUE) continue;
        for (size_t j = 0; j < con->n_cols; j++)
            if (con->cols[j] >= 0 && (size_t)con->cols[j] + first == f) return true;
    }
    return false;
}

/* Append the rows of a (Utf8, non-null) column to k. */
static int str_append(struct stream_str *k, const arrow_array *a, const char *type_name)
{
    if (!k->off) {
        if (!(k->off = core_malloc(1024 * sizeof *k->off))) return core_err_nomem();
        k->off[0] = 0;
        k->cap_rows = 1023;
    }
    for (int64_t i = 0; i < a->length; i++) {
        size_t n = 0;
        const uint8_t *v = arrow_array_get_bytes(a, i, &n);
        if (k->len + n > INT32_MAX)
            return core_err(OG_E_RESOURCE_LIMIT,
                            "%s: the ids or endpoints of one load exceed 2 GiB; load the file "
                            "in parts",
                            type_name);
        if (k->rows == k->cap_rows) {
            size_t cap = k->cap_rows * 2 + 1;
            int32_t *o = core_realloc(k->off, (cap + 1) * sizeof *o);
            if (!o) return core_err_nomem();
            k->off = o;
            k->cap_rows = cap;
        }
        if (k->len + n > k->cap_len) {
            size_t cap = k->cap_len ? k->cap_len : 4096;
            while (cap < k->len + n)
                cap *= 2;
            char *p = core_realloc(k->val, cap);
            if (!p) return core_err_nomem();
            k->val = p;
            k->cap_len = cap;
        }
        if (n) memcpy(k->val + k->len, v, n);
        k->len += n;
        k->off[++k->rows] = (int32_t)k->len;
    }
    return 0;
}

/* Keep the chunk's kept columns (references) and take its lines. */
static int stream_keep(stream_type *ty, const lang_typedef *td, graph_change *c)
{
    size_t first = td->kind == LANG_EDGE ? 3 : 1;
    for (size_t f = 0; f < first; f++) {
        const arrow_array *a = c->rows->columns[f];
        if (a->type.id != ARROW_UTF8 || a->null_count)
            return core_err(OG_E_INTERNAL, "%s: column %zu is not non-null Utf8", td->name, f);
        int rc = str_append(&ty->str[f], a, td->name);
        if (rc) return rc;
    }
    if (ty->n_parts == ty->cap_parts) {
        size_t cap = ty->cap_parts ? ty->cap_parts * 2 : 8;
        arrow_array ***cols = core_realloc(ty->cols, cap * sizeof *cols);
        if (cols) ty->cols = cols;
        uint64_t **lines = cols ? core_realloc(ty->lines, cap * sizeof *lines) : NULL;
        if (lines) ty->lines = lines;
        int64_t *rows = lines ? core_realloc(ty->rows, cap * sizeof *rows) : NULL;
        if (!rows) return core_err_nomem();
        ty->rows = rows;
        ty->cap_parts = cap;
    }
    size_t nf = ty->schema.n_fields;
    arrow_array **cols = core_calloc(nf ? nf : 1, sizeof *cols);
    if (!cols) return core_err_nomem();
    for (size_t f = first; f < nf; f++)
        if (stream_keeps(td, f)) cols[f] = arrow_array_ref(c->rows->columns[f]);
    size_t p = ty->n_parts++;
    ty->cols[p] = cols;
    ty->lines[p] = c->lines;
    ty->rows[p] = c->rows->num_rows;
    c->lines = NULL;
    return 0;
}

/* ---- kept columns past their budget: sorted runs on disk ---- */

#define KEEP_DEFAULT ((size_t)64 << 20)
static size_t g_keep; /* 0: OMNIGRAPH_LOAD_KEEP_BYTES, else KEEP_DEFAULT */

#ifdef OG_TESTING
void write_stream_set_keep_bytes(size_t bytes)
{
    g_keep = bytes;
}
#endif

static size_t keep_bytes(void)
{
    if (g_keep) return g_keep;
    const char *env = getenv("OMNIGRAPH_LOAD_KEEP_BYTES");
    if (env && *env) {
        char *end = NULL;
        unsigned long long v = strtoull(env, &end, 10);
        if (end && !*end && v > 0) return (size_t)v;
    }
    return KEEP_DEFAULT;
}

/* The buffer of each sorted run: an eighth of the budget (a stream has up to four sorters
 * filling at once: a node type's ids, an edge type's ids and endpoints), within 4 KiB-8 MiB. */
static size_t sort_budget(size_t keep)
{
    size_t b = keep / 8;
    if (b < 4096) b = 4096;
    if (b > ((size_t)8 << 20)) b = (size_t)8 << 20;
    return b;
}

/* Bytes the kept columns of a type hold in memory (ids, endpoints, lines). */
static size_t stream_kept_bytes(const stream_type *ty)
{
    size_t n = 0;
    for (size_t k = 0; k < 3; k++)
        if (ty->str[k].off) n += (ty->str[k].cap_rows + 1) * sizeof(int32_t) + ty->str[k].cap_len;
    for (size_t p = 0; p < ty->n_parts; p++)
        if (ty->lines[p]) n += (size_t)ty->rows[p] * sizeof(uint64_t);
    return n;
}

static int spill_open(stream_type *ty, const lang_typedef *td, size_t budget)
{
    size_t n = td->kind == LANG_EDGE ? 3 : 1;
    for (size_t k = 0; k < n; k++) {
        if (ty->sort[k]) continue;
        int rc = core_sortrun_new(&ty->sort[k], budget);
        if (rc) return rc;
    }
    return 0;
}

/* One row into the sorters: its id, and an edge's endpoints with its id as aux. */
static int spill_row(stream_type *ty, const uint8_t *const v[3], const size_t n[3], uint64_t line,
                     bool edge)
{
    int rc = core_sortrun_add(ty->sort[0], v[0], n[0], line, NULL, 0);
    for (size_t k = 1; rc == 0 && edge && k < 3; k++)
        rc = core_sortrun_add(ty->sort[k], v[k], n[k], line, v[0], n[0]);
    return rc;
}

/* The kept columns held so far into the sorters (memory freed). */
static int spill_kept(stream_type *ty, const lang_typedef *td, size_t budget)
{
    bool edge = td->kind == LANG_EDGE;
    int rc = spill_open(ty, td, budget);
    size_t row = 0;
    for (size_t p = 0; rc == 0 && p < ty->n_parts; p++) {
        for (int64_t r = 0; rc == 0 && r < ty->rows[p]; r++, row++) {
            const uint8_t *v[3] = {NULL, NULL, NULL};
            size_t n[3] = {0, 0, 0};
            for (size_t k = 0; k < (edge ? 3u : 1u); k++) {
                const struct stream_str *st = &ty->str[k];
                v[k] = (const uint8_t *)st->val + st->off[row];
                n[k] = (size_t)(st->off[row + 1] - st->off[row]);
            }
            rc = spill_row(ty, v, n, ty->lines[p] ? ty->lines[p][r] : 0, edge);
        }
    }
    if (rc) return rc;
    for (size_t k = 0; k < 3; k++) {
        core_free(ty->str[k].off);
        core_free(ty->str[k].val);
        memset(&ty->str[k], 0, sizeof ty->str[k]);
    }
    stream_parts_free(ty);
    return 0;
}

/* A chunk's rows straight into the sorters. */
static int spill_chunk(stream_type *ty, const lang_typedef *td, const graph_change *c,
                       size_t budget)
{
    bool edge = td->kind == LANG_EDGE;
    int rc = spill_open(ty, td, budget);
    for (size_t f = 0; rc == 0 && f < (edge ? 3u : 1u); f++) {
        const arrow_array *a = c->rows->columns[f];
        if (a->type.id != ARROW_UTF8 || a->null_count)
            rc = core_err(OG_E_INTERNAL, "%s: column %zu is not non-null Utf8", td->name, f);
    }
    for (int64_t r = 0; rc == 0 && r < c->rows->num_rows; r++) {
        const uint8_t *v[3] = {NULL, NULL, NULL};
        size_t n[3] = {0, 0, 0};
        for (size_t k = 0; k < (edge ? 3u : 1u); k++)
            v[k] = arrow_array_get_bytes(c->rows->columns[k], r, &n[k]);
        rc = spill_row(ty, v, n, c->lines ? c->lines[r] : 0, edge);
    }
    return rc;
}

/* ---- rows staged in whole fragments ---- */

static size_t g_frag; /* 0: LANCE_DEFAULT_MAX_ROWS_PER_FILE */

#ifdef OG_TESTING
void write_stream_set_fragment_rows(size_t rows)
{
    g_frag = rows;
}
#endif

static uint64_t frag_rows(void)
{
    return g_frag ? g_frag : LANCE_DEFAULT_MAX_ROWS_PER_FILE;
}

/* Stage b[0..n) as more files of the type's transaction (the first opens it). */
static int stream_stage(stream_type *ty, int mode, arrow_batch *const *b, size_t n)
{
    if (!n) return 0;
    lance_write_options wo = LANCE_WRITE_OPTIONS_INIT;
    wo.max_rows_per_file = frag_rows();
    wo.uuid = ty->uuid;
    if (mode == GRAPH_CHANGE_UPSERT) {
        /* each batch looked up in the pinned table on its own: the replaced rows' deletions
         * wait for the end (stream_prepare finishes the stage) */
        int rc = ty->st ? 0 : lance_stage_upsert(&ty->st, ty->ds, GRAPH_COL_ID, &wo);
        return rc ? rc : lance_stage_upsert_add(ty->st, b, n);
    }
    if (ty->st) return lance_stage_add_rows(ty->st, b, n);
    if (mode == GRAPH_CHANGE_INSERT) return lance_stage_append(&ty->st, ty->ds, b, n, &wo);
    return lance_stage_overwrite(&ty->st, ty->ds, &ty->ds->schema, b, n, &wo);
}

/* About the bytes an array's buffers hold. */
static uint64_t array_bytes(const arrow_array *a)
{
    uint64_t n = a->values_size + (a->validity ? (uint64_t)(a->length + 7) / 8 : 0) +
                 (a->offsets ? (uint64_t)(a->length + 1) * sizeof(int32_t) : 0);
    for (size_t i = 0; i < a->n_children; i++)
        n += array_bytes(a->children[i]);
    return n;
}

static uint64_t batch_bytes(const arrow_batch *b)
{
    uint64_t n = 0;
    for (size_t i = 0; i < b->schema.n_fields; i++)
        n += array_bytes(b->columns[i]);
    return n;
}

/* Rows [from, to) of b as a batch of their own (copied). */
static int batch_range(arrow_batch **out, const arrow_batch *b, int64_t from, int64_t to)
{
    int64_t *idx = core_malloc((size_t)(to > from ? to - from : 1) * sizeof *idx);
    if (!idx) return core_err_nomem();
    for (int64_t i = from; i < to; i++)
        idx[i - from] = i;
    int rc = arrow_batch_take(out, b, idx, (size_t)(to - from));
    core_free(idx);
    return rc;
}

/* Stage the pending rows: all of them (`all`), else as many whole fragments as they fill, the
 * rest staying pending. */
static int stage_pending(stream_type *ty, bool all)
{
    uint64_t frag = frag_rows();
    uint64_t take = all ? ty->pend_rows : ty->pend_rows / frag * frag;
    if (!take) return 0;
    /* the batches wholly inside the first `take` rows, and where the last one is cut */
    size_t k = 0;
    uint64_t before = 0;
    while (k < ty->n_pend && before + (uint64_t)ty->pend[k]->num_rows <= take)
        before += (uint64_t)ty->pend[k++]->num_rows;
    arrow_batch *head = NULL, *tail = NULL;
    int rc = 0;
    if (before < take) { /* pend[k] is cut */
        int64_t cut = (int64_t)(take - before), nr = ty->pend[k]->num_rows;
        rc = batch_range(&head, ty->pend[k], 0, cut);
        if (rc == 0) rc = batch_range(&tail, ty->pend[k], cut, nr);
    }
    if (rc == 0 && head) {
        arrow_batch_free(ty->pend[k]);
        ty->pend[k] = head; /* staged below with the ones before it */
        head = NULL;
        k++;
    }
    if (rc == 0) rc = stream_stage(ty, ty->mode, ty->pend, k);
    arrow_batch_free(head);
    if (rc) {
        arrow_batch_free(tail);
        return rc;
    }
    for (size_t i = 0; i < k; i++)
        arrow_batch_free(ty->pend[i]);
    size_t left = ty->n_pend - k;
    memmove(ty->pend + (tail ? 1 : 0), ty->pend + k, left * sizeof *ty->pend);
    if (tail) ty->pend[0] = tail;
    ty->n_pend = left + (tail ? 1 : 0);
    ty->pend_rows -= take;
    ty->pend_bytes = 0;
    for (size_t i = 0; i < ty->n_pend; i++)
        ty->pend_bytes += batch_bytes(ty->pend[i]);
    return 0;
}

static bool first_touch(const char *branch, const graph_table *t);

/* The chunk's rows join the type's pending ones (a reference, or padded to the table's
 * schema); whole fragments of them are staged. */
static int stream_pend(stream_type *ty, const graph_change *c)
{
    arrow_batch *rows = NULL;
    int rc = pad_to_table(&rows, c->rows, &ty->ds->schema);
    if (rc == 0 && !rows)
        rc = arrow_batch_new(&rows, &c->rows->schema, c->rows->columns, c->rows->schema.n_fields);
    if (rc == 0 && ty->n_pend == ty->cap_pend) {
        size_t cap = ty->cap_pend ? ty->cap_pend * 2 : 8;
        arrow_batch **p = core_realloc(ty->pend, cap * sizeof *p);
        if (!p) rc = core_err_nomem();
        if (p) ty->pend = p, ty->cap_pend = cap;
    }
    if (rc) {
        arrow_batch_free(rows);
        return rc;
    }
    ty->pend[ty->n_pend++] = rows;
    ty->pend_rows += (uint64_t)rows->num_rows;
    ty->pend_bytes += batch_bytes(rows);
    return stage_pending(ty, false);
}

/* One chunk's change of a type: staged at once (the first chunk opens the transaction, later
 * ones add data files to it), then only the kept columns and the lines stay. A type whose
 * table the branch has not forked yet (a first touch) is not staged here: the fork is made in
 * apply, after the sidecar is durable, and its rows are read again then (stream_apply). */
static int stream_chunk(write_graph *g, const graph_snapshot *snap, write_intent *in,
                        stream_type *ty, graph_change *c, size_t spill)
{
    const lang_typedef *td = &g->h->catalog->types[c->type_index];
    if (c->mode != GRAPH_CHANGE_INSERT && c->mode != GRAPH_CHANGE_REPLACE &&
        c->mode != GRAPH_CHANGE_UPSERT)
        return core_err(OG_E_INTERNAL,
                        "a change stream holds inserts, upserts and replaces, not mode %d",
                        c->mode);
    if (!c->rows || !c->rows->num_rows) return 0;
    int rc = 0;
    if (!ty->mode) {
        char alias[256];
        if ((rc = graph_table_alias(alias, sizeof alias, td->kind, td->name)) != 0) return rc;
        ty->t = graph_snapshot_table(snap, alias);
        if (!ty->t)
            return core_err(OG_E_INTERNAL, "type %s has no table in the graph manifest", alias);
        ty->fork = first_touch(in->branch, ty->t);
        if (ty->fork)
            rc = 0;
        else if (in->base)
            rc = graph_head_table(in->base, ty->t, &ty->ds); /* shared with validation */
        else if ((rc = graph_table_open(&ty->owned, g->h->s, ty->t, LANCE_ACCESS_WRITE)) == 0)
            ty->ds = ty->owned;
        if (rc == 0) rc = arrow_schema_copy(&ty->schema, &c->rows->schema);
        if (rc) return rc;
    } else if (c->mode != ty->mode || !arrow_schema_equal(&c->rows->schema, &ty->schema)) {
        return core_err(OG_E_INTERNAL, "%s: the chunks of a change stream differ in mode or rows",
                        td->name);
    }
    ty->mode = c->mode;
    if (!ty->fork) rc = stream_pend(ty, c);
    if (rc == 0) rc = spill ? spill_chunk(ty, td, c, spill) : stream_keep(ty, td, c);
    return rc;
}

/* The kept columns of every chunk of a type as one change of the whole set: the columns the
 * checks do not read are null columns of type NA (no buffers). The parts are freed. */
static int stream_whole(graph_change *out, stream_type *ty, int type_index)
{
    size_t nf = ty->schema.n_fields;
    int64_t total = 0;
    for (size_t p = 0; p < ty->n_parts; p++)
        total += ty->rows[p];
    arrow_schema schema;
    arrow_schema_init(&schema);
    arrow_array **cols = core_calloc(nf ? nf : 1, sizeof *cols);
    arrow_array **part = core_calloc(ty->n_parts ? ty->n_parts : 1, sizeof *part);
    int rc = cols && part ? 0 : core_err_nomem();
    for (size_t f = 0; rc == 0 && f < nf; f++) {
        const arrow_field *fd = &ty->schema.fields[f];
        if (f < 3 && ty->str[f].off) { /* the ids and endpoints: their buffers become it */
            struct stream_str *k = &ty->str[f];
            rc = arrow_schema_add(&schema, fd);
            if (rc == 0)
                rc = arrow_array_make(&cols[f], &fd->type, (int64_t)k->rows, 0, NULL, k->off,
                                      k->val, k->len, NULL, 0);
            memset(k, 0, sizeof *k); /* owned by the array now (or freed on failure) */
            continue;
        }
        if (!ty->n_parts || !ty->cols[0][f]) {
            arrow_field na = {fd->name, true, {.id = ARROW_NA}};
            rc = arrow_schema_add(&schema, &na);
            if (rc == 0) rc = arrow_array_new_null(&cols[f], &na.type, total);
            continue;
        }
        rc = arrow_schema_add(&schema, fd);
        for (size_t p = 0; p < ty->n_parts; p++)
            part[p] = ty->cols[p][f];
        if (rc == 0 && ty->n_parts == 1)
            cols[f] = arrow_array_ref(part[0]);
        else if (rc == 0)
            rc = arrow_array_concat(&cols[f], part, ty->n_parts);
        for (size_t p = 0; p < ty->n_parts; p++) { /* each part's column once, as we go */
            arrow_array_free(ty->cols[p][f]);
            ty->cols[p][f] = NULL;
        }
    }
    uint64_t *lines = NULL;
    bool have_lines = ty->n_parts > 0;
    for (size_t p = 0; p < ty->n_parts; p++)
        have_lines &= ty->lines[p] != NULL;
    if (rc == 0 && have_lines) {
        lines = core_malloc((size_t)(total ? total : 1) * sizeof *lines);
        if (!lines) rc = core_err_nomem();
        size_t at = 0;
        for (size_t p = 0; rc == 0 && p < ty->n_parts; p++) {
            memcpy(lines + at, ty->lines[p], (size_t)ty->rows[p] * sizeof *lines);
            at += (size_t)ty->rows[p];
        }
    }
    if (rc == 0) rc = arrow_batch_new(&out->rows, &schema, cols, nf);
    for (size_t f = 0; cols && f < nf; f++)
        arrow_array_free(cols[f]);
    core_free(cols);
    core_free(part);
    arrow_schema_clear(&schema);
    stream_parts_free(ty);
    if (rc) {
        core_free(lines);
        return rc;
    }
    out->lines = lines;
    out->type_index = type_index;
    out->mode = ty->mode;
    return 0;
}

/* The bytes of rows that may wait to fill whole fragments, over every type (a million edges
 * with minted ids hold about 60 MB). */
#define PEND_BYTES ((uint64_t)96 << 20)

static int stream_prepare(write_graph *g, const write_change_stream *src,
                          const graph_snapshot *snap, write_intent *in)
{
    const lang_catalog *cat = g->h->catalog;
    size_t nt = cat->n_types;
    stream_type *ty = core_calloc(nt ? nt : 1, sizeof *ty);
    if (!ty) return core_err_nomem();
    graph_change_set whole;
    memset(&whole, 0, sizeof whole);
    /* The kept columns stay in memory up to their budget; past it (and when the sorted checks
     * cover the catalog) they go to sorted runs on disk, and so does every later chunk's. */
    size_t keep = keep_bytes(), spill = 0;
    bool can_spill = graph_validate_sorted_covers(cat);
    int64_t held = 0; /* what the in-memory kept columns accounted (core_sortrun_account) */
    int rc = src->rewind(src->arg);
    for (bool done = false; rc == 0 && !done;) {
        graph_change_set cs;
        memset(&cs, 0, sizeof cs);
        rc = src->next(src->arg, cat, &cs, &done);
        if (rc == 0 && cs.file) whole.file = cs.file;
        if (rc == 0 && cs.n)
            rc = graph_validate_scoped(cat, snap, g->h->s, &cs, NULL, NULL, NULL, NULL,
                                       GRAPH_VALIDATE_ROWS);
        for (size_t i = 0; rc == 0 && i < cs.n; i++) {
            graph_change *c = &cs.changes[i];
            if (c->type_index < 0 || (size_t)c->type_index >= nt)
                rc = core_err(OG_E_INTERNAL, "change for unknown type %d", c->type_index);
            else
                rc = stream_chunk(g, snap, in, &ty[c->type_index], c, spill);
        }
        graph_change_set_clear(&cs);
        /* Pending rows of every type together stay within PEND_BYTES: past that, the type
         * holding the most is staged whole (a fragment short of the target). */
        for (;;) {
            uint64_t bytes = 0;
            size_t most = 0;
            for (size_t i = 0; i < nt; i++) {
                bytes += ty[i].pend_bytes;
                if (ty[i].pend_bytes > ty[most].pend_bytes) most = i;
            }
            if (rc || bytes <= PEND_BYTES) break;
            rc = stage_pending(&ty[most], true);
        }
        if (rc || spill) continue;
        size_t kept = 0;
        for (size_t i = 0; i < nt; i++)
            kept += stream_kept_bytes(&ty[i]);
        core_sortrun_account((int64_t)kept - held);
        held = (int64_t)kept;
        if (!can_spill || kept <= keep) continue;
        spill = sort_budget(keep);
        for (size_t i = 0; rc == 0 && i < nt; i++)
            if (ty[i].mode) rc = spill_kept(&ty[i], &cat->types[i], spill);
        core_sortrun_account(-held);
        held = 0;
    }
    for (size_t i = 0; rc == 0 && i < nt; i++) {
        rc = stage_pending(&ty[i], true); /* the rest of every type */
        if (rc == 0 && ty[i].st && ty[i].mode == GRAPH_CHANGE_UPSERT)
            rc = lance_stage_upsert_finish(ty[i].st);
    }
    size_t n = 0;
    for (size_t i = 0; i < nt; i++)
        n += ty[i].mode != 0;
    if (rc == 0 && n && !spill && !(whole.changes = core_calloc(n, sizeof *whole.changes)))
        rc = core_err_nomem();
    for (size_t i = 0; rc == 0 && !spill && i < nt; i++)
        if (ty[i].mode) rc = stream_whole(&whole.changes[whole.n++], &ty[i], (int)i);
    /* The whole set's checks, on the kept columns or their sorted runs; every probed table
     * joins the read set. */
    graph_probes probes;
    memset(&probes, 0, sizeof probes);
    graph_validate_stats vs;
    if (rc == 0 && whole.n)
        rc =
            graph_validate_scoped(cat, snap, g->h->s, &whole, &probes, &vs,
                                  in->base ? graph_head_table : NULL, in->base, GRAPH_VALIDATE_SET);
    if (rc == 0 && spill && n) {
        int *mode = core_calloc(nt, sizeof *mode);
        core_sortrun **sorts = core_calloc(3 * nt, sizeof *sorts);
        if (!mode || !sorts) rc = core_err_nomem();
        for (size_t i = 0; rc == 0 && i < nt; i++) {
            mode[i] = ty[i].mode;
            for (size_t k = 0; k < 3; k++)
                sorts[k * nt + i] = ty[i].sort[k];
        }
        graph_sorted_set ss = {whole.file, mode, sorts, sorts + nt, sorts + 2 * nt};
        if (rc == 0)
            rc = graph_validate_sorted(cat, snap, g->h->s, &ss, &probes, &vs,
                                       in->base ? graph_head_table : NULL, in->base);
        core_free(mode);
        core_free(sorts);
    }
    for (size_t i = 0; rc == 0 && i < probes.n; i++) {
        const graph_table *t = graph_snapshot_table(snap, probes.aliases[i]);
        if (t) rc = write_rs_add_table(&in->rs, t->alias, t->version, false);
    }
    graph_probes_clear(&probes);
    if (rc == 0 && n && !(in->effects = core_calloc(n, sizeof *in->effects))) rc = core_err_nomem();
    for (size_t i = 0, k = 0; rc == 0 && i < nt; i++) {
        stream_type *s = &ty[i];
        if (!s->mode) continue;
        /* the whole change of the type, when the set was kept in memory */
        const graph_change *c = spill ? NULL : &whole.changes[k++];
        const lang_typedef *td = &cat->types[i];
        write_effect *e = &in->effects[in->n_effects++];
        if (s->fork) {
            /* staged in apply on the fork, with this pre-minted identity (stream_apply) */
            char u[LANCE_UUID_LEN + 1];
            if ((rc = lance_uuid_new(u)) != 0) break;
            snprintf(e->uuid, sizeof e->uuid, "%s", u);
            e->fork = true;
            e->kind = td->kind;
            e->sid = s->t->sid;
            e->inc = s->t->inc;
            e->expected_version = s->t->version;
            if (!(e->alias = core_strdup(s->t->alias)) || !(e->path = core_strdup(s->t->path)) ||
                !(e->table_branch = core_strdup(in->branch)) ||
                (s->t->table_branch && !(e->fork_from = core_strdup(s->t->table_branch))))
                rc = core_err_nomem();
            if (rc == 0) rc = write_rs_add_table(&in->rs, s->t->alias, s->t->version, true);
            in->stream = src;
            continue;
        }
        lance_staged_info info;
        lance_staged_get_info(s->st, &info);
        e->staged = s->st;
        e->base = s->owned; /* NULL when borrowed from the base */
        s->st = NULL;
        s->owned = NULL;
        e->kind = td->kind;
        e->sid = s->t->sid;
        e->inc = s->t->inc;
        e->expected_version = s->t->version;
        snprintf(e->uuid, sizeof e->uuid, "%s", info.uuid);
        if (!(e->alias = core_strdup(s->t->alias)) || !(e->path = core_strdup(s->t->path)) ||
            (s->t->table_branch && !(e->table_branch = core_strdup(s->t->table_branch))))
            rc = core_err_nomem();
        if (rc == 0) rc = write_rs_add_table(&in->rs, s->t->alias, s->t->version, true);
        if (rc == 0 && c && c->mode == GRAPH_CHANGE_INSERT) {
            /* what a strict insert appends, for the handle's read caches (not known when the
             * set was spilled: the caches then read the table again) */
            e->app_id = arrow_array_ref(c->rows->columns[0]);
            if (td->kind == LANG_EDGE) {
                e->app_src = arrow_array_ref(c->rows->columns[1]);
                e->app_dst = arrow_array_ref(c->rows->columns[2]);
            }
        }
    }
    core_sortrun_account(-held);
    graph_change_set_clear(&whole);
    for (size_t i = 0; i < nt; i++)
        stream_type_clear(&ty[i]);
    core_free(ty);
    return rc;
}

/* Whether a write on graph branch `branch` (NULL: main) must fork table t first: the branch
 * pins it on another Lance branch (inherited from where the graph branch was forked). */
static bool first_touch(const char *branch, const graph_table *t)
{
    if (!branch) return false;
    return !t->table_branch || strcmp(t->table_branch, branch) != 0;
}

int write_changes_prepare_set(write_graph *g, const graph_change_set *cs,
                              const graph_snapshot *snap, write_intent *in, bool validate)
{
    graph_probes probes;
    memset(&probes, 0, sizeof probes);
    graph_validate_stats vs;
    memset(&vs, 0, sizeof vs);
    int rc = validate ? graph_validate_ex(g->h->catalog, snap, g->h->s, cs, &probes, &vs,
                                          in->base ? graph_head_table : NULL, in->base)
                      : 0;
    /* Every probed table is a read-set member, written or not. */
    for (size_t i = 0; rc == 0 && i < probes.n; i++) {
        const graph_table *t = graph_snapshot_table(snap, probes.aliases[i]);
        if (t) rc = write_rs_add_table(&in->rs, t->alias, t->version, false);
    }
    graph_probes_clear(&probes);
    if (rc != 0) return rc;
    if (cs->n && !(in->effects = core_calloc(cs->n, sizeof *in->effects))) return core_err_nomem();
    for (size_t i = 0; i < cs->n; i++) {
        const graph_change *c = &cs->changes[i];
        if (c->type_index < 0 || (size_t)c->type_index >= g->h->catalog->n_types)
            return core_err(OG_E_INTERNAL, "change for unknown type %d", c->type_index);
        const lang_typedef *td = &g->h->catalog->types[c->type_index];
        char alias[256];
        if ((rc = graph_table_alias(alias, sizeof alias, td->kind, td->name)) != 0) return rc;
        const graph_table *t = graph_snapshot_table(snap, alias);
        if (!t) return core_err(OG_E_INTERNAL, "type %s has no table in the graph manifest", alias);
        if (first_touch(in->branch, t)) {
            /* Nothing is staged now: the branch's files go under its own tree, which exists
             * only once apply has forked the table (after the sidecar is durable). */
            write_effect *e = &in->effects[in->n_effects++];
            char u[LANCE_UUID_LEN + 1];
            if ((rc = lance_uuid_new(u)) != 0) return rc;
            snprintf(e->uuid, sizeof e->uuid, "%s", u);
            e->fork = true;
            e->change = c;
            e->kind = td->kind;
            e->sid = t->sid;
            e->inc = t->inc;
            e->expected_version = t->version;
            if (!(e->alias = core_strdup(t->alias)) || !(e->path = core_strdup(t->path)) ||
                !(e->table_branch = core_strdup(in->branch)) ||
                (t->table_branch && !(e->fork_from = core_strdup(t->table_branch))))
                return core_err_nomem();
            if ((rc = write_rs_add_table(&in->rs, t->alias, t->version, true)) != 0) return rc;
            continue;
        }
        lance_dataset *owned = NULL;
        const lance_dataset *ds = NULL;
        lance_staged *st = NULL;
        if (in->base)
            rc = graph_head_table(in->base, t, &ds); /* shared with validation */
        else if ((rc = graph_table_open(&owned, g->h->s, t, LANCE_ACCESS_WRITE)) == 0)
            ds = owned;
        if (rc != 0) return rc;
        rc = stage_change(&st, ds, c);
        if (rc != 0) {
            lance_dataset_free(owned);
            return rc;
        }
        lance_staged_info info;
        lance_staged_get_info(st, &info);
        if (info.noop) {
            lance_staged_free(st);
            lance_dataset_free(owned);
            continue;
        }
        write_effect *e = &in->effects[in->n_effects++];
        e->staged = st;
        e->base = owned; /* NULL when borrowed from the base */
        e->kind = td->kind;
        e->sid = t->sid;
        e->inc = t->inc;
        e->expected_version = t->version;
        snprintf(e->uuid, sizeof e->uuid, "%s", info.uuid);
        if (!(e->alias = core_strdup(t->alias)) || !(e->path = core_strdup(t->path)) ||
            (t->table_branch && !(e->table_branch = core_strdup(t->table_branch))))
            return core_err_nomem();
        if ((rc = write_rs_add_table(&in->rs, t->alias, t->version, true)) != 0) return rc;
        if (c->mode == GRAPH_CHANGE_INSERT && c->rows) {
            /* what a strict insert appends, for the handle's read caches */
            const arrow_batch *b = c->rows;
            int xi = arrow_schema_find(&b->schema, GRAPH_COL_ID);
            int xs = arrow_schema_find(&b->schema, GRAPH_COL_SRC);
            int xd = arrow_schema_find(&b->schema, GRAPH_COL_DST);
            if (xi >= 0) e->app_id = arrow_array_ref(b->columns[xi]);
            if (xs >= 0) e->app_src = arrow_array_ref(b->columns[xs]);
            if (xd >= 0) e->app_dst = arrow_array_ref(b->columns[xd]);
        }
    }
    return 0;
}

/* Whether an existing fork of the table under the effect's branch name is in use: another
 * pending intent names it (it made or is making it: a writer that did not see ours, in a
 * process without shared gates), or the branch's head pins it (that writer published since
 * our revalidation). The intents are looked at first: a writer's intent is there from before
 * its fork until after its publish, so one missed there has published by the time the head
 * is read. */
static int fork_in_use(write_graph *g, const write_intent *in, const write_effect *e, bool *used)
{
    int rc = write_sidecar_fork_claimed(g->h->s, in->operation_id, e->path, e->table_branch, used);
    if (rc != 0 || *used) return rc;
    graph_snapshot *snap = NULL;
    if ((rc = graph_snapshot_load(&snap, g->h->s, in->branch, 0, 0)) != 0) return rc;
    const graph_table *t = graph_snapshot_table(snap, e->alias);
    *used = t && t->table_branch && strcmp(t->table_branch, e->table_branch) == 0;
    graph_snapshot_free(snap);
    return 0;
}

static int fork_taken(const write_effect *e)
{
    int rc = core_err(OG_E_CONFLICT,
                      "table %s already has a fork '%s' that another write on this branch made "
                      "meanwhile; retry",
                      e->alias, e->table_branch);
    core_err_detail(CORE_ERR_OBJECT, e->path);
    return rc;
}

/* A first-touch effect: fork the table onto the graph branch at the pinned version, then stage
 * the change there with the pre-minted uuid. The sidecar is durable first: the fork is the
 * write's first independently durable effect. A fork of that name that is not in use is an
 * orphan (a rolled-back first touch that left it, or a deleted branch's leftover): it is
 * replaced. One in use means another writer won the first touch: a conflict (with shared
 * gates this cannot happen: that writer would have held the table's gate). The source is the
 * base's own snapshot of the table at the pin (validation read it already; the graph branch
 * pins it, so cleanup keeps it), and the change is staged on the fork as the fork's create
 * wrote it: neither is read again. */
static int fork_table(write_graph *g, write_intent *in, write_effect *e)
{
    store *s = g->h->s;
    int rc = write_sidecar_sync(s, in);
    if (rc) return rc;
    const lance_dataset *src = NULL;
    const graph_table *t =
        in->base ? graph_snapshot_table(graph_head_snapshot(in->base), e->alias) : NULL;
    if (t && t->version == e->expected_version &&
        strcmp(t->table_branch ? t->table_branch : "", e->fork_from ? e->fork_from : "") == 0 &&
        graph_head_table(in->base, t, &src) != 0) {
        og_error_clear(); /* opened by version below */
        src = NULL;
    }
    lance_dataset *ds = NULL;
    rc = lance_branch_create_ex(s, e->path, e->table_branch, e->fork_from, e->expected_version, src,
                                NULL, &ds);
    if (rc == OG_E_EXISTS) {
        og_error_clear();
        lance_branch old;
        bool used = false;
        rc = lance_branch_get(s, e->path, e->table_branch, &old);
        if (rc == 0) rc = fork_in_use(g, in, e, &used);
        if (rc == 0 && used) {
            rc = fork_taken(e);
        } else if (rc == 0) {
            rc = lance_branch_delete(s, e->path, e->table_branch, old.identity);
            if (rc == 0)
                rc = lance_branch_create_ex(s, e->path, e->table_branch, e->fork_from,
                                            e->expected_version, src, NULL, &ds);
            if (rc == OG_E_NOT_FOUND || rc == OG_E_PRECONDITION_FAILED || rc == OG_E_EXISTS) {
                og_error_clear(); /* replaced or taken by another writer since we looked */
                rc = fork_taken(e);
            }
        }
    }
    if (rc == 0) rc = OG_FAILPOINT("write.post_fork");
    if (rc == 0 && !ds)
        rc = lance_branch_open(&ds, s, e->path, e->table_branch, e->expected_version, NULL,
                               LANCE_ACCESS_WRITE);
    lance_dataset_free(e->base);
    e->base = ds; /* outlives the staged transaction */
    return rc;
}

static int fork_and_stage(write_graph *g, write_intent *in, write_effect *e)
{
    int rc = fork_table(g, in, e);
    if (rc == 0) {
        lance_write_options wo = LANCE_WRITE_OPTIONS_INIT;
        wo.uuid = e->uuid;
        rc = stage_change_opt(&e->staged, e->base, e->change, &wo);
    }
    return rc;
}

/* The first-touch effects of a load in chunks (write_intent.stream): every such table forked
 * (the sidecar durable first), then the input read again, chunk by chunk, and only those
 * types' rows staged on their forks, in whole fragments, with the effects' pre-minted
 * identities. Prepare checked every row and the whole set already; the stream gives the same
 * rows again (its ids minted alike), so nothing is checked twice. */
static int stream_apply(write_graph *g, write_intent *in)
{
    const lang_catalog *cat = g->h->catalog;
    size_t nt = cat->n_types;
    stream_type *ty = core_calloc(nt ? nt : 1, sizeof *ty);
    write_effect **of = core_calloc(nt ? nt : 1, sizeof *of); /* per type: its fork effect */
    int rc = ty && of ? 0 : core_err_nomem();
    for (size_t i = 0; rc == 0 && i < in->n_effects; i++) {
        write_effect *e = &in->effects[i];
        if (!e->fork || e->change) continue;
        for (size_t t = 0; rc == 0 && t < nt; t++) {
            char alias[256];
            rc = graph_table_alias(alias, sizeof alias, cat->types[t].kind, cat->types[t].name);
            if (rc == 0 && strcmp(alias, e->alias) == 0) of[t] = e;
        }
        if (rc == 0) rc = fork_table(g, in, e);
    }
    for (size_t t = 0; rc == 0 && t < nt; t++)
        if (of[t]) {
            ty[t].ds = of[t]->base;
            ty[t].uuid = of[t]->uuid;
        }
    const write_change_stream *src = in->stream;
    if (rc == 0) rc = src->rewind(src->arg);
    for (bool done = false; rc == 0 && !done;) {
        graph_change_set cs;
        memset(&cs, 0, sizeof cs);
        rc = src->next(src->arg, cat, &cs, &done);
        for (size_t i = 0; rc == 0 && i < cs.n; i++) {
            graph_change *c = &cs.changes[i];
            if (c->type_index < 0 || (size_t)c->type_index >= nt || !of[c->type_index] ||
                !c->rows || !c->rows->num_rows)
                continue;
            stream_type *s = &ty[c->type_index];
            if (s->mode && s->mode != c->mode)
                rc = core_err(OG_E_INTERNAL, "%s: the chunks of a change stream differ in mode",
                              cat->types[c->type_index].name);
            s->mode = c->mode;
            if (rc == 0) rc = stream_pend(s, c);
        }
        graph_change_set_clear(&cs);
        for (;;) { /* as in prepare: pending rows within PEND_BYTES */
            uint64_t bytes = 0;
            size_t most = 0;
            for (size_t i = 0; i < nt; i++) {
                bytes += ty[i].pend_bytes;
                if (ty[i].pend_bytes > ty[most].pend_bytes) most = i;
            }
            if (rc || bytes <= PEND_BYTES) break;
            rc = stage_pending(&ty[most], true);
        }
    }
    for (size_t t = 0; rc == 0 && t < nt; t++) {
        if (!of[t]) continue;
        rc = stage_pending(&ty[t], true);
        if (rc == 0 && ty[t].st && ty[t].mode == GRAPH_CHANGE_UPSERT)
            rc = lance_stage_upsert_finish(ty[t].st);
        if (rc == 0 && !ty[t].st) /* no row (cannot happen: prepare saw some): an empty stage */
            rc = lance_stage_append(&ty[t].st, ty[t].ds, NULL, 0, NULL);
        if (rc == 0) {
            of[t]->staged = ty[t].st;
            ty[t].st = NULL;
        }
    }
    for (size_t t = 0; ty && t < nt; t++) {
        ty[t].ds = NULL; /* the effect's */
        stream_type_clear(&ty[t]);
    }
    core_free(ty);
    core_free(of);
    return rc;
}

int write_changes_apply(write_graph *g, write_intent *in)
{
    if (in->stream) {
        int rc = stream_apply(g, in);
        if (rc != 0) return rc;
    }
    for (size_t i = 0; i < in->n_effects; i++) {
        write_effect *e = &in->effects[i];
        lance_dataset *after = NULL;
        lance_commit_options co = LANCE_COMMIT_OPTIONS_INIT; /* exact, zero retries */
        lance_commit_result cr;
        int rc = e->fork && e->change ? fork_and_stage(g, in, e) : 0;
        if (rc == 0 && e->fork) {
            lance_staged_info info;
            lance_staged_get_info(e->staged, &info);
            if (info.noop) { /* nothing to commit: the table stays where the branch pins it */
                lance_staged_free(e->staged);
                e->staged = NULL;
                e->achieved_version = e->expected_version;
                continue;
            }
        }
        if (rc == 0) rc = write_intent_carry_sidecar(in, e->staged, NULL);
        if (rc == 0) rc = lance_staged_commit_ex(e->staged, &co, &after, &cr);
        lance_staged_free(e->staged);
        e->staged = NULL;
        if (rc != 0) return rc;
        in->sidecar_unsynced = false; /* durable with this commit's files */
        if (cr.version != e->expected_version + 1) {
            lance_dataset_free(after);
            return core_err(OG_E_INTERNAL,
                            "table %s committed at version %" PRIu64 ", expected exactly %" PRIu64,
                            e->alias, cr.version, e->expected_version + 1);
        }
        e->achieved_version = cr.version;
        e->compact_due = write_compact_due(after);
        rc = lance_dataset_count_rows(after, &e->row_count);
        lance_dataset_free(e->after);
        e->after = after;
        if (rc != 0) return rc;
        if ((rc = OG_FAILPOINT("write.post_table_effect")) != 0) return rc;
    }
    return 0;
}

/* The delta: one table_version row per effect, then the commit and the branch head. */
int write_changes_rows(void *arg, const graph_snapshot *cur, uint64_t mver, graph_rows *rows)
{
    (void)cur;
    const write_intent *in = arg;
    /* skip_unmoved: a first-touch change that staged nothing leaves its table where the
     * branch pinned it (the fork at that version is an unpinned orphan, replaced later) */
    int rc = write_rows_versions(rows, in, NULL, NULL, NULL, true);
    if (rc == 0)
        rc = write_rows_lineage(rows, in, in->commit_id, in->parent_commit_id, in->actor,
                                in->created_at_us, mver, false);
    return rc;
}
