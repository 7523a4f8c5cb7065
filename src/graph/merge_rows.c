/* Merge, row level: the three-way classification of one type's table into a delta onto the
 * target (graph/merge.h, graph_merge_table).
 *
 * Work follows the change. The table at base, source and target is one Lance lineage: a
 * branch's table is a fork whose manifest lists the inherited fragments with their data files
 * under the parent's root. A fragment whose data files are the same objects in two states holds
 * the same rows at the same offsets, so only its deletion vectors can tell the states apart.
 * Each pair (base, source) and (base, target) is diffed that way: shared fragments through
 * their deletion vectors (rows live on one side only are read by address), other fragments
 * read whole. Any id of a table outside a pair's diff has the same row in both states (ids are
 * unique in a table: a row at a shared live offset is there on both sides, and a second row for
 * its id would be a duplicate).
 *
 * The source's pair reads whole rows (one scan of the unshared fragments of each side, every
 * column, and the live-only rows by address) and keeps them; an id whose row is the same in
 * base and source then leaves the diff, so a reload that rewrote every row but changed 5% of
 * them leaves 5% candidates, having read base and source once each. Only the candidates' rows
 * are kept past that. The target's pair reads ids only, and marks which candidates the target
 * changed too; their target rows are taken by address, and the decision is made over the
 * candidates alone. */
#include "graph/merge.h"

#include "core/alloc.h"
#include "core/arena.h"
#include "core/error.h"
#include "core/hmap.h"
#include "lance/paths.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

enum { ST_BASE = 0, ST_SRC = 1, ST_TGT = 2, N_ST = 3 };

static const char *const STATE_NAME[N_ST] = {"base", "source", "target"};

/* The rows of one state held in memory: chunks, each the catalog schema's columns of one scan
 * batch or of rows taken by address. */
typedef struct rowchunk {
    arrow_array **cols; /* one per field of the catalog schema */
} rowchunk;

typedef struct rowset {
    rowchunk *ch;
    size_t n, cap;
} rowset;

/* An id seen in a diff. Its row in a state is known when that state's side of a diff saw it;
 * in_diff[ST_SRC] / [ST_TGT] say which pair's diff (base-source, base-target) it is in. Where
 * the row itself is held: chunk (an index into the state's rowset, -1 when it is not) and row. */
typedef struct cand {
    const uint8_t *id; /* in the context's arena */
    size_t len;
    uint64_t addr[N_ST];
    bool has[N_ST];
    bool in_diff[N_ST];
    int32_t chunk[N_ST];
    int64_t row[N_ST];
} cand;

typedef struct mctx {
    const lang_typedef *t;
    const arrow_schema *sch; /* the catalog schema of the type */
    size_t idc;              /* its id column */
    unsigned flags;
    core_arena arena;
    core_bmap ids; /* id bytes -> index into c */
    cand *c;
    size_t n, cap;
    rowset rows[N_ST];
    graph_merge_stats st;
} mctx;

/* ---- Candidates ---------------------------------------------------------------------------- */

static void chunk_free(const mctx *x, rowchunk *ch)
{
    for (size_t c = 0; ch->cols && c < x->sch->n_fields; c++)
        arrow_array_free(ch->cols[c]);
    core_free(ch->cols);
    ch->cols = NULL;
}

static void rowset_clear(const mctx *x, rowset *r)
{
    for (size_t i = 0; i < r->n; i++)
        chunk_free(x, &r->ch[i]);
    core_free(r->ch);
    memset(r, 0, sizeof *r);
}

/* Hand the columns cols (n_fields of them, allocated) to state's rowset: *idx is their chunk.
 * On failure they are freed. */
static int rowset_push(mctx *x, int state, arrow_array **cols, int32_t *idx)
{
    rowset *r = &x->rows[state];
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 8;
        rowchunk *ch = core_realloc(r->ch, cap * sizeof *ch);
        if (!ch || r->n >= INT32_MAX) {
            rowchunk tmp = {cols};
            chunk_free(x, &tmp);
            if (ch) r->ch = ch;
            return core_err_nomem();
        }
        r->ch = ch;
        r->cap = cap;
    }
    r->ch[r->n].cols = cols;
    *idx = (int32_t)r->n++;
    return 0;
}

/* Record that `state`'s side of the pair diff(base, pair) holds id at addr, its row at `row`
 * of chunk `chunk` (-1: not held). create: an id not seen yet becomes a candidate (the target's
 * diff only marks the source's candidates: no other id can change). */
static int cand_see(mctx *x, int pair, int state, const uint8_t *id, size_t len, uint64_t addr,
                    int32_t chunk, int64_t row, bool create)
{
    uint64_t h = core_hmap_hash(id, len);
    core_bmap_entry *e = core_bmap_find_h(&x->ids, id, len, h);
    if (!e) {
        if (!create) return 0;
        if (x->n == x->cap) {
            size_t cap = x->cap ? 2 * x->cap : 64;
            cand *c = core_realloc(x->c, cap * sizeof *c);
            if (!c) return core_err_nomem();
            x->c = c;
            x->cap = cap;
        }
        /* the map borrows its keys: they live in the arena, not in the batch they came from */
        uint8_t *key = core_arena_alloc(&x->arena, len ? len : 1);
        if (!key) return OG_E_NOMEM;
        if (len) memcpy(key, id, len);
        int fresh = 0;
        int rc = core_bmap_put_h(&x->ids, key, len, h, &e, &fresh);
        if (rc) return rc;
        e->val = (int64_t)x->n;
        cand *c = &x->c[x->n++];
        memset(c, 0, sizeof *c);
        c->id = key;
        c->len = len;
        for (int s = 0; s < N_ST; s++) {
            c->chunk[s] = -1;
            c->row[s] = -1;
        }
    }
    cand *c = &x->c[e->val];
    if ((c->has[state] && c->addr[state] != addr) ||
        (!create && state == ST_BASE && !c->has[ST_BASE] && c->in_diff[ST_SRC])) {
        /* The classification rests on one row per id; a table breaking that is damaged. (A
         * base row of a source candidate the source's diff did not see is the same damage:
         * the source holds the id at that row and at another.) */
        if (!c->has[state])
            return core_err(OG_E_CORRUPT,
                            "merge of %s: the base table's row for id \"%.*s\" (address %" PRIu64
                            ") is live on the source beside another row for that id",
                            x->t->name, (int)len, (const char *)id, addr);
        return core_err(OG_E_CORRUPT,
                        "merge of %s: the %s table holds id \"%.*s\" twice (row addresses %" PRIu64
                        " and %" PRIu64 ")",
                        x->t->name, STATE_NAME[state], (int)len, (const char *)id, c->addr[state],
                        addr);
    }
    c->has[state] = true;
    c->addr[state] = addr;
    if (chunk >= 0 && c->chunk[state] < 0) {
        c->chunk[state] = chunk;
        c->row[state] = row;
    }
    c->in_diff[pair] = true;
    return 0;
}

/* Every row of the id column `ids` (Utf8) with its address addrs[i] (or the UInt64 column
 * `addr_col`), seen on `state`'s side of `pair`; chunk: the chunk ids is the id column of
 * (-1: none, the rows are not held). */
static int see_column(mctx *x, int pair, int state, const arrow_array *ids, const uint64_t *addrs,
                      const arrow_array *addr_col, int32_t chunk, bool create)
{
    if (!arrow_type_is_binary_like(ids->type.id) || ids->type.id == ARROW_BINARY ||
        ids->type.id == ARROW_LARGE_BINARY)
        return core_err(OG_E_UNSUPPORTED, "merge of %s: the %s table's id column is not a string",
                        x->t->name, STATE_NAME[state]);
    for (int64_t i = 0; i < ids->length; i++) {
        if (!arrow_array_is_valid(ids, i))
            return core_err(OG_E_CORRUPT, "merge of %s: the %s table has a row without an id",
                            x->t->name, STATE_NAME[state]);
        size_t n;
        const uint8_t *p = arrow_array_get_bytes(ids, i, &n);
        uint64_t a = addrs ? addrs[i] : arrow_array_get_uint(addr_col, i);
        int rc = cand_see(x, pair, state, p, n, a, chunk, i, create);
        if (rc) return rc;
    }
    return 0;
}

/* ---- Fragment identity --------------------------------------------------------------------- */

/* A fragment's physical identity: the keys of its data files, in order (NUL-separated, in the
 * arena). Two fragments with the same identity are the same rows at the same offsets. */
static int frag_identity(lance_file_keys *k, mctx *x, size_t i, char **out, size_t *len)
{
    core_buf b = CORE_BUF_INIT;
    int rc = lance_file_keys_fragment(k, i, &b);
    if (!rc) {
        *out = core_arena_alloc(&x->arena, b.len ? b.len : 1);
        if (!*out) rc = OG_E_NOMEM;
        if (!rc && b.len) memcpy(*out, b.data, b.len);
        *len = b.len;
    }
    core_buf_free(&b);
    return rc;
}

/* ---- One pair's diff ----------------------------------------------------------------------- */

typedef struct addrs {
    uint64_t *v;
    size_t n, cap;
} addrs;

static int addrs_push(addrs *a, uint64_t v)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 64;
        uint64_t *p = core_realloc(a->v, cap * sizeof *p);
        if (!p) return core_err_nomem();
        a->v = p;
        a->cap = cap;
    }
    a->v[a->n++] = v;
    return 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The rows live in one state of a shared fragment and deleted in the other: the addresses on
 * each side (a's live-only rows on a, b's on b). ia and ib are the fragment's index in each. */
static int shared_frag_diff(mctx *x, lance_file_keys *keys_a, size_t ia, lance_file_keys *keys_b,
                            size_t ib, const lance_dataset *const ds[2], addrs *live_a,
                            addrs *live_b)
{
    char ka[STORE_KEY_MAX], kb[STORE_KEY_MAX];
    int rc = lance_file_keys_deletion(keys_a, ia, ka);
    if (!rc) rc = lance_file_keys_deletion(keys_b, ib, kb);
    if (rc || strcmp(ka, kb) == 0) return rc; /* the same deletion file (or none): no difference */
    lance_fragment_info fa, fb;
    lance_dataset_fragment_info(ds[0], ia, &fa);
    lance_dataset_fragment_info(ds[1], ib, &fb);
    roaring_bitmap_t *da = NULL, *db = NULL, *only_a = NULL, *only_b = NULL;
    rc = lance_dataset_fragment_deletions(ds[0], ia, &da);
    if (!rc) rc = lance_dataset_fragment_deletions(ds[1], ib, &db);
    if (!rc && !da && !(da = roaring_bitmap_create())) rc = core_err_nomem();
    if (!rc && !db && !(db = roaring_bitmap_create())) rc = core_err_nomem();
    if (!rc) {
        only_a = roaring_bitmap_andnot(db, da); /* deleted in b only: live in a only */
        only_b = roaring_bitmap_andnot(da, db);
        if (!only_a || !only_b) rc = core_err_nomem();
    }
    uint64_t rows = fa.physical_rows;
    for (int side = 0; rc == 0 && side < 2; side++) {
        const roaring_bitmap_t *bm = side ? only_b : only_a;
        uint64_t fid = side ? fb.id : fa.id;
        addrs *out = side ? live_b : live_a;
        roaring_uint32_iterator_t *it = roaring_create_iterator(bm);
        if (!it) {
            rc = core_err_nomem();
            break;
        }
        bool any = false;
        for (; rc == 0 && it->has_value; roaring_advance_uint32_iterator(it)) {
            if (it->current_value >= rows) continue; /* past the rows: deletes nothing */
            rc = addrs_push(out, LANCE_ROW_ADDR(fid, it->current_value));
            any = true;
        }
        roaring_free_uint32_iterator(it);
        if (any) x->st.fragments_read++;
    }
    if (da) roaring_bitmap_free(da);
    if (db) roaring_bitmap_free(db);
    if (only_a) roaring_bitmap_free(only_a);
    if (only_b) roaring_bitmap_free(only_b);
    return rc;
}

/* Where each column of the catalog schema is in ds: map[c] = its index in ds's schema, -1 when
 * the table lacks it (a property added without rewriting the table: it reads as null). A
 * column of another type is refused. */
static int ds_columns(mctx *x, int state, const lance_dataset *ds, int *map)
{
    for (size_t c = 0; c < x->sch->n_fields; c++) {
        const arrow_field *f = &x->sch->fields[c];
        int k = arrow_schema_find(&ds->schema, f->name);
        if (k >= 0 && !arrow_type_equal(&ds->schema.fields[k].type, &f->type)) {
            char want[64], got[64];
            arrow_type_describe(&f->type, want, sizeof want);
            arrow_type_describe(&ds->schema.fields[k].type, got, sizeof got);
            return core_err(OG_E_UNSUPPORTED,
                            "merge of %s: column '%s' is %s in the %s table but %s in the schema",
                            x->t->name, f->name, got, STATE_NAME[state], want);
        }
        map[c] = k;
    }
    return 0;
}

/* The columns of the catalog schema at addrs, from ds, into cols (n_fields, zeroed). */
static int take_rows(mctx *x, int state, const lance_dataset *ds, const addrs *a,
                     arrow_array **cols)
{
    const arrow_schema *sch = x->sch;
    int *map = core_malloc(sch->n_fields * sizeof *map);
    int rc = map ? ds_columns(x, state, ds, map) : core_err_nomem();
    for (size_t c = 0; rc == 0 && c < sch->n_fields; c++) {
        if (map[c] < 0)
            rc = arrow_array_new_null(&cols[c], &sch->fields[c].type, (int64_t)a->n);
        else
            rc = lance_dataset_take_column(&cols[c], ds, sch->fields[c].name, a->v, a->n);
    }
    core_free(map);
    if (rc == 0) x->st.rows_read += a->n;
    return rc;
}

/* The rows of the fragments not shared with the other side, every column of the catalog schema
 * (a scan that skips the shared ones), each batch kept as a chunk of state's rowset. */
static int scan_rows(mctx *x, int pair, int state, const lance_dataset *ds, lance_scan_options *so)
{
    const arrow_schema *sch = x->sch;
    int *map = core_malloc(sch->n_fields * sizeof *map);
    int *pos = core_malloc(sch->n_fields * sizeof *pos);
    const char **names = core_malloc(sch->n_fields * sizeof *names);
    size_t nn = 0;
    int rc = map && pos && names ? ds_columns(x, state, ds, map) : core_err_nomem();
    if (rc == 0 && map[x->idc] < 0)
        rc = core_err(OG_E_CORRUPT, "merge of %s: the %s table has no id column", x->t->name,
                      STATE_NAME[state]);
    for (size_t c = 0; rc == 0 && c < sch->n_fields; c++) {
        pos[c] = map[c] < 0 ? -1 : (int)nn;
        if (map[c] >= 0) names[nn++] = sch->fields[c].name;
    }
    lance_scanner *sc = NULL;
    if (rc == 0) {
        so->columns = names;
        so->n_columns = nn;
        rc = lance_scanner_open(&sc, ds, so);
    }
    while (rc == 0) {
        arrow_batch *b = NULL;
        rc = lance_scanner_next(sc, &b);
        if (rc || !b) break;
        x->st.rows_read += (uint64_t)b->num_rows;
        arrow_array **cols = core_calloc(sch->n_fields, sizeof *cols);
        if (!cols) rc = core_err_nomem();
        for (size_t c = 0; rc == 0 && c < sch->n_fields; c++) {
            if (pos[c] >= 0)
                cols[c] = arrow_array_ref(b->columns[pos[c]]);
            else
                rc = arrow_array_new_null(&cols[c], &sch->fields[c].type, b->num_rows);
        }
        int32_t k = -1;
        if (rc == 0) {
            rc = rowset_push(x, state, cols, &k);
        } else if (cols) {
            rowchunk tmp = {cols};
            chunk_free(x, &tmp);
        }
        if (rc == 0)
            rc = see_column(x, pair, state, x->rows[state].ch[k].cols[x->idc], NULL, b->columns[nn],
                            k, true);
        arrow_batch_free(b);
    }
    lance_scanner_free(sc);
    core_free(names);
    core_free(pos);
    core_free(map);
    return rc;
}

/* One side of a pair's diff: every live row of the fragments not shared with the other side,
 * and the rows at `live` (shared fragments' rows live on this side only). The source's pair
 * (rows) reads and keeps whole rows: they are what the source's candidates are decided on and
 * what lets rows rewritten unchanged drop out. The target's reads ids only, of the source's
 * candidates (its rows are taken afterwards for the few both sides changed). */
static int read_side(mctx *x, int pair, int state, const lance_dataset *ds, const bool *shared,
                     const addrs *live, bool rows)
{
    size_t nf = lance_dataset_fragment_count(ds), n_unshared = 0, n_skip = 0;
    for (size_t i = 0; i < nf; i++)
        n_unshared += !shared[i];
    int rc = 0;
    if (n_unshared) {
        uint64_t *skip = NULL;
        if (n_unshared < nf) {
            skip = core_malloc((nf - n_unshared) * sizeof *skip);
            if (!skip) return core_err_nomem();
            for (size_t i = 0; i < nf; i++)
                if (shared[i]) {
                    lance_fragment_info fi;
                    lance_dataset_fragment_info(ds, i, &fi);
                    skip[n_skip++] = fi.id;
                }
            qsort(skip, n_skip, sizeof *skip, cmp_u64);
        }
        lance_scan_options so = LANCE_SCAN_OPTIONS_INIT;
        so.with_row_addr = true;
        so.skip_fragments = skip;
        so.n_skip_fragments = n_skip;
        if (rows) {
            rc = scan_rows(x, pair, state, ds, &so);
        } else {
            static const char *const cols[] = {GRAPH_COL_ID};
            so.columns = cols;
            so.n_columns = 1;
            lance_scanner *sc = NULL;
            rc = lance_scanner_open(&sc, ds, &so);
            while (rc == 0) {
                arrow_batch *b = NULL;
                rc = lance_scanner_next(sc, &b);
                if (rc || !b) break;
                x->st.rows_read += (uint64_t)b->num_rows;
                rc = see_column(x, pair, state, b->columns[0], NULL, b->columns[1], -1, false);
                arrow_batch_free(b);
            }
            lance_scanner_free(sc);
        }
        core_free(skip);
        x->st.fragments_read += n_unshared;
    }
    if (rc == 0 && live->n && rows) {
        arrow_array **cols = core_calloc(x->sch->n_fields, sizeof *cols);
        int32_t k = -1;
        rc = cols ? take_rows(x, state, ds, live, cols) : core_err_nomem();
        if (rc == 0) {
            rc = rowset_push(x, state, cols, &k);
        } else if (cols) {
            rowchunk tmp = {cols};
            chunk_free(x, &tmp);
        }
        if (rc == 0)
            rc = see_column(x, pair, state, x->rows[state].ch[k].cols[x->idc], live->v, NULL, k,
                            true);
    } else if (rc == 0 && live->n) {
        arrow_array *ids = NULL;
        rc = lance_dataset_take_column(&ids, ds, GRAPH_COL_ID, live->v, live->n);
        if (rc == 0) {
            x->st.rows_read += live->n;
            rc = see_column(x, pair, state, ids, live->v, NULL, -1, false);
        }
        arrow_array_free(ids);
    }
    return rc;
}

/* Room for the candidates of the source's diff: as many as the larger side has rows to read
 * (a reload rewrites every row under the same ids), so the map and the array do not grow row
 * by row through a whole table. */
static int cands_reserve(mctx *x, const lance_dataset *const ds[2], bool *const shared[2],
                         const addrs live[2])
{
    uint64_t most = 0;
    for (int s = 0; s < 2; s++) {
        uint64_t rows = live[s].n;
        for (size_t i = 0; ds[s] && i < lance_dataset_fragment_count(ds[s]); i++)
            if (!shared[s][i]) {
                lance_fragment_info fi;
                lance_dataset_fragment_info(ds[s], i, &fi);
                rows += fi.physical_rows;
            }
        if (rows > most) most = rows;
    }
    if (most > (uint64_t)UINT32_MAX) most = UINT32_MAX; /* a hint only: beyond, they grow */
    size_t want = x->n + (size_t)most;
    if (want > x->cap) {
        cand *c = core_realloc(x->c, want * sizeof *c);
        if (!c) return core_err_nomem();
        x->c = c;
        x->cap = want;
    }
    return core_bmap_reserve(&x->ids, want);
}

/* Diff base against `other` (the state `pair`, source or target); either may be NULL (no
 * rows). Fragments are matched by physical identity when both are tables of one store, unless
 * the caller asked for full reads; a pair with nothing matched is a full read of both, which
 * is what tables of different lineages (another incarnation, another schema) get: always
 * correct, only slower. */
static int diff_pair(mctx *x, int pair, const lance_dataset *base, const lance_dataset *other)
{
    const lance_dataset *ds[2] = {base, other};
    size_t nf[2] = {base ? lance_dataset_fragment_count(base) : 0,
                    other ? lance_dataset_fragment_count(other) : 0};
    bool *shared[2] = {NULL, NULL}; /* per fragment of each side: matched with the other's */
    addrs live[2] = {{0}, {0}};
    lance_file_keys *r[2] = {NULL, NULL};
    core_bmap fm = CORE_BMAP_INIT;
    int rc = 0;
    for (int s = 0; s < 2; s++) {
        shared[s] = core_calloc(nf[s] ? nf[s] : 1, sizeof *shared[s]);
        if (!shared[s]) rc = core_err_nomem();
    }
    bool share = base && other && base->s == other->s && !(x->flags & GRAPH_MERGE_FULL_READ);
    if (share && !rc) rc = lance_file_keys_new(&r[0], base);
    if (share && !rc) rc = lance_file_keys_new(&r[1], other);
    if (share && !rc) {
        for (size_t i = 0; rc == 0 && i < nf[0]; i++) {
            char *key;
            size_t len;
            core_bmap_entry *e;
            int fresh = 0;
            rc = frag_identity(r[0], x, i, &key, &len);
            if (!rc) rc = core_bmap_put(&fm, key, len, &e, &fresh);
            if (!rc && fresh) e->val = (int64_t)i; /* a repeat (damage) stays unshared */
        }
        for (size_t j = 0; rc == 0 && j < nf[1]; j++) {
            char *key;
            size_t len;
            rc = frag_identity(r[1], x, j, &key, &len);
            core_bmap_entry *e = rc ? NULL : core_bmap_find(&fm, key, len);
            if (!e || shared[0][e->val]) continue;
            lance_fragment_info fa, fb;
            lance_dataset_fragment_info(base, (size_t)e->val, &fa);
            lance_dataset_fragment_info(other, j, &fb);
            if (fa.physical_rows != fb.physical_rows) continue; /* not the rows we think */
            shared[0][e->val] = shared[1][j] = true;
            x->st.fragments_shared++;
            rc = shared_frag_diff(x, r[0], (size_t)e->val, r[1], j, ds, &live[0], &live[1]);
        }
    }
    if (rc == 0 && pair == ST_SRC) rc = cands_reserve(x, ds, shared, live);
    for (int s = 0; s < 2 && rc == 0; s++)
        if (ds[s])
            rc = read_side(x, pair, s ? pair : ST_BASE, ds[s], shared[s], &live[s], pair == ST_SRC);
    core_bmap_free(&fm);
    for (int s = 0; s < 2; s++) {
        lance_file_keys_free(r[s]);
        core_free(shared[s]);
        core_free(live[s].v);
    }
    return rc;
}

/* ---- Rows ---------------------------------------------------------------------------------- */

/* One cell equal to another (same type). Fixed-width values compare bitwise (for integers,
 * dates and timestamps that is equality of value; a float that changed representation, 0.0 to
 * -0.0, changed; NaN does not reach stored data, the JSON forms of loads and mutations have
 * none, and if it did, one NaN equals the same bits), strings and binaries by their bytes,
 * nested lists and structs item by item, anything else with arrow_compare_rows. */
static bool cell_equal(const arrow_array *a, int64_t i, const arrow_array *b, int64_t j)
{
    bool va = arrow_array_is_valid(a, i), vb = arrow_array_is_valid(b, j);
    if (!va || !vb) return va == vb;
    switch (a->type.id) {
    case ARROW_INT32:
    case ARROW_UINT32:
    case ARROW_DATE32:
    case ARROW_FLOAT32: {
        uint32_t p, q;
        memcpy(&p, (const uint8_t *)a->values + 4 * i, 4);
        memcpy(&q, (const uint8_t *)b->values + 4 * j, 4);
        return p == q;
    }
    case ARROW_INT64:
    case ARROW_UINT64:
    case ARROW_DATE64:
    case ARROW_TIMESTAMP:
    case ARROW_FLOAT64: {
        uint64_t p, q;
        memcpy(&p, (const uint8_t *)a->values + 8 * i, 8);
        memcpy(&q, (const uint8_t *)b->values + 8 * j, 8);
        return p == q;
    }
    case ARROW_UTF8:
    case ARROW_LARGE_UTF8:
    case ARROW_BINARY:
    case ARROW_LARGE_BINARY: {
        size_t n, m;
        const uint8_t *p = arrow_array_get_bytes(a, i, &n), *q = arrow_array_get_bytes(b, j, &m);
        return n == m && (n == 0 || memcmp(p, q, n) == 0);
    }
    case ARROW_LIST:
    case ARROW_FIXED_SIZE_LIST: {
        int64_t s1, e1, s2, e2;
        arrow_array_list_range(a, i, &s1, &e1);
        arrow_array_list_range(b, j, &s2, &e2);
        if (e1 - s1 != e2 - s2) return false;
        for (; s1 < e1; s1++, s2++)
            if (!cell_equal(a->children[0], s1, b->children[0], s2)) return false;
        return true;
    }
    case ARROW_STRUCT:
        for (size_t k = 0; k < a->n_children; k++)
            if (!cell_equal(a->children[k], i, b->children[k], j)) return false;
        return true;
    default:
        return arrow_compare_rows(a, i, b, j) == 0;
    }
}

/* Column c of the chunk holding candidate k's row in state s. */
static const arrow_array *col_of(const mctx *x, const cand *k, int s, size_t c)
{
    return x->rows[s].ch[k->chunk[s]].cols[c];
}

/* Are states p and q of candidate k the same row (both absent counts)? *first: the first
 * column that differs (SIZE_MAX when only presence does). Both rows are held (settle and the
 * target's take see to it). */
static bool rows_equal(const mctx *x, const cand *k, int p, int q, size_t *first)
{
    *first = SIZE_MAX;
    if (k->has[p] != k->has[q]) return false;
    if (!k->has[p]) return true;
    for (size_t c = 0; c < x->sch->n_fields; c++)
        if (!cell_equal(col_of(x, k, p, c), k->row[p], col_of(x, k, q, c), k->row[q])) {
            *first = c;
            return false;
        }
    return true;
}

/* Keep in state s's rowset only the rows of the source's candidates, as one chunk (the scan
 * batches of a whole table shrink to the change). */
static int compact_rows(mctx *x, int s)
{
    rowset *r = &x->rows[s];
    if (!r->n) return 0;
    size_t nf = x->sch->n_fields, total = 0;
    size_t *cnt = core_calloc(r->n, sizeof *cnt), *off = core_calloc(r->n + 1, sizeof *off);
    int64_t *idx = NULL;
    arrow_array **cols = NULL, **parts = NULL;
    int rc = cnt && off ? 0 : core_err_nomem();
    for (size_t i = 0; rc == 0 && i < x->n; i++) {
        const cand *k = &x->c[i];
        if (k->in_diff[ST_SRC] && k->has[s]) {
            cnt[k->chunk[s]]++;
            total++;
        }
    }
    for (size_t j = 0; rc == 0 && j < r->n; j++)
        off[j + 1] = off[j] + cnt[j];
    if (rc == 0 && total) {
        idx = core_malloc(total * sizeof *idx);
        cols = core_calloc(nf, sizeof *cols);
        parts = core_calloc(r->n, sizeof *parts);
        if (!idx || !cols || !parts) rc = core_err_nomem();
    }
    /* cnt becomes each chunk's fill count; rows are numbered chunk after chunk */
    if (rc == 0) memset(cnt, 0, r->n * sizeof *cnt);
    for (size_t i = 0; rc == 0 && i < x->n; i++) {
        cand *k = &x->c[i];
        if (!k->has[s]) continue;
        if (!k->in_diff[ST_SRC]) {
            k->chunk[s] = -1; /* its row goes with its chunk */
            k->row[s] = -1;
            continue;
        }
        size_t j = (size_t)k->chunk[s], at = off[j] + cnt[j]++;
        idx[at] = k->row[s];
        k->chunk[s] = 0;
        k->row[s] = (int64_t)at;
    }
    for (size_t c = 0; rc == 0 && total && c < nf; c++) {
        size_t np = 0;
        for (size_t j = 0; rc == 0 && j < r->n; j++)
            if (cnt[j]) rc = arrow_take(&parts[np++], r->ch[j].cols[c], idx + off[j], cnt[j]);
        if (rc == 0 && np == 1) {
            cols[c] = parts[0];
            parts[0] = NULL;
        } else if (rc == 0) {
            rc = arrow_array_concat(&cols[c], parts, np);
        }
        for (size_t j = 0; j < np; j++) {
            arrow_array_free(parts[j]);
            parts[j] = NULL;
        }
    }
    if (rc == 0) {
        for (size_t j = 0; j < r->n; j++)
            chunk_free(x, &r->ch[j]);
        r->n = 0;
        if (total) {
            r->ch[0].cols = cols;
            r->n = 1;
            cols = NULL;
        }
    }
    if (cols) {
        rowchunk tmp = {cols};
        chunk_free(x, &tmp);
    }
    core_free(parts);
    core_free(idx);
    core_free(off);
    core_free(cnt);
    return rc;
}

/* After the source's diff: the ids whose row is the same in base and source (rows rewritten
 * unchanged, by a reload or a compaction) leave it; the rows of the rest are kept, nothing
 * else. *left: the candidates that remain. */
static int settle_source(mctx *x, size_t *left)
{
    *left = 0;
    for (size_t i = 0; i < x->n; i++) {
        cand *k = &x->c[i];
        if (!k->in_diff[ST_SRC]) continue;
        for (int s = ST_BASE; s <= ST_SRC; s++)
            if (k->has[s] && k->chunk[s] < 0)
                return core_err(OG_E_INTERNAL, "merge of %s: a %s row of the diff is not held",
                                x->t->name, STATE_NAME[s]);
        size_t first;
        if (rows_equal(x, k, ST_BASE, ST_SRC, &first))
            k->in_diff[ST_SRC] = false;
        else
            (*left)++;
    }
    int rc = compact_rows(x, ST_BASE);
    return rc ? rc : compact_rows(x, ST_SRC);
}

/* A candidate in the output order: by id bytes (shorter first on a common prefix). */
typedef struct ord {
    const uint8_t *id;
    size_t len;
    size_t i; /* index into the candidates */
} ord;

static int cmp_ord(const void *a, const void *b)
{
    const ord *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int r = n ? memcmp(x->id, y->id, n) : 0;
    if (r) return r;
    return x->len < y->len ? -1 : x->len > y->len;
}

static int add_conflict(mctx *x, graph_conflicts *out, const cand *k)
{
    const arrow_schema *sch = x->sch;
    char id[512];
    size_t n = k->len < sizeof id - 1 ? k->len : sizeof id - 1;
    memcpy(id, k->id, n);
    id[n] = '\0';
    const char *ty = x->t->name;
    if (!k->has[ST_BASE]) {
        size_t c;
        rows_equal(x, k, ST_SRC, ST_TGT, &c);
        return graph_conflicts_add(out, GRAPH_CONFLICT_DIVERGENT_INSERT, ty, id,
                                   "%s \"%s\" was inserted on both the source and the target with "
                                   "different values (first at property '%s')",
                                   ty, id, c < sch->n_fields ? sch->fields[c].name : "?");
    }
    if (!k->has[ST_SRC] || !k->has[ST_TGT])
        return graph_conflicts_add(out, GRAPH_CONFLICT_DELETE_VS_UPDATE, ty, id,
                                   "%s \"%s\" was deleted on the %s and changed on the %s", ty, id,
                                   k->has[ST_SRC] ? "target" : "source",
                                   k->has[ST_SRC] ? "source" : "target");
    size_t c;
    rows_equal(x, k, ST_SRC, ST_TGT, &c);
    return graph_conflicts_add(out, GRAPH_CONFLICT_DIVERGENT_UPDATE, ty, id,
                               "%s \"%s\" was changed on both the source and the target to "
                               "different values (first at property '%s')",
                               ty, id, c < sch->n_fields ? sch->fields[c].name : "?");
}

/* ---- The merge ----------------------------------------------------------------------------- */

static void stats_add(graph_merge_stats *to, const graph_merge_stats *s)
{
    to->rows_read += s->rows_read;
    to->fragments_read += s->fragments_read;
    to->fragments_shared += s->fragments_shared;
    to->rows_changed += s->rows_changed;
}

int graph_merge_table_ex(const lang_catalog *cat, int type_index, const lance_dataset *base,
                         const lance_dataset *src, const lance_dataset *tgt, graph_change *delta,
                         bool *changed, graph_conflicts *conflicts, graph_merge_stats *stats,
                         unsigned flags)
{
    memset(delta, 0, sizeof *delta);
    *changed = false;
    if (type_index < 0 || (size_t)type_index >= cat->n_types || !conflicts)
        return core_err(OG_E_INTERNAL, "merge: type index %d out of range or no conflict list",
                        type_index);
    mctx x;
    memset(&x, 0, sizeof x);
    x.t = &cat->types[type_index];
    x.flags = flags;
    core_arena_init(&x.arena, 16384);
    x.ids = (core_bmap)CORE_BMAP_INIT;
    arrow_schema sch;
    arrow_schema_init(&sch);
    x.sch = &sch;
    addrs want = {0};
    ord *order = NULL;
    int64_t *up_rows = NULL;
    char **del = NULL;
    size_t n_up = 0, n_del = 0, n_order = 0, left = 0;
    arrow_array **out_cols = NULL;
    arrow_batch *rows = NULL;

    int rc = graph_type_schema(&sch, x.t);
    if (!rc) {
        int idc = arrow_schema_find(&sch, GRAPH_COL_ID);
        if (idc < 0)
            rc = core_err(OG_E_INTERNAL, "merge of %s: the schema has no id column", x.t->name);
        x.idc = (size_t)(idc < 0 ? 0 : idc);
    }
    /* The source's diff names every id the merge can change, with its rows in base and source;
     * those the same in both leave it. The target's diff then says which of the rest the
     * target changed too. With nothing left the second is not needed. */
    if (!rc) rc = diff_pair(&x, ST_SRC, base, src);
    if (!rc) rc = settle_source(&x, &left);
    if (!rc && left) rc = diff_pair(&x, ST_TGT, base, tgt);

    /* The ids in the source's diff, by id: the output order. */
    if (!rc && left) {
        order = core_malloc(left * sizeof *order);
        if (!order) rc = core_err_nomem();
        for (size_t i = 0; !rc && i < x.n; i++)
            if (x.c[i].in_diff[ST_SRC]) order[n_order++] = (ord){x.c[i].id, x.c[i].len, i};
        if (!rc) qsort(order, n_order, sizeof *order, cmp_ord);
    }
    /* The target's rows where the target changed it too (elsewhere the target's row is the
     * base's), taken by address. */
    for (size_t o = 0; !rc && o < n_order; o++) {
        cand *k = &x.c[order[o].i];
        if (!k->has[ST_TGT] || !k->in_diff[ST_TGT]) continue;
        k->chunk[ST_TGT] = 0;
        k->row[ST_TGT] = (int64_t)want.n;
        rc = addrs_push(&want, k->addr[ST_TGT]);
    }
    if (!rc && want.n) {
        arrow_array **cols = core_calloc(sch.n_fields, sizeof *cols);
        int32_t k = -1;
        rc = cols ? take_rows(&x, ST_TGT, tgt, &want, cols) : core_err_nomem();
        if (rc == 0) {
            rc = rowset_push(&x, ST_TGT, cols, &k);
        } else if (cols) {
            rowchunk tmp = {cols};
            chunk_free(&x, &tmp);
        }
    }
    if (!rc && n_order) {
        up_rows = core_malloc(n_order * sizeof *up_rows);
        del = core_calloc(n_order, sizeof *del);
        if (!up_rows || !del) rc = core_err_nomem();
    }
    for (size_t o = 0; !rc && o < n_order; o++) {
        cand *k = &x.c[order[o].i];
        size_t first;
        if (rows_equal(&x, k, ST_BASE, ST_SRC, &first)) continue; /* kept (settle dropped it) */
        bool take = !k->in_diff[ST_TGT] || rows_equal(&x, k, ST_BASE, ST_TGT, &first);
        if (!take) {
            if (rows_equal(&x, k, ST_SRC, ST_TGT, &first)) continue;
            rc = add_conflict(&x, conflicts, k);
            continue;
        }
        if (k->has[ST_SRC]) {
            up_rows[n_up++] = k->row[ST_SRC];
        } else {
            del[n_del] = core_strndup((const char *)k->id, k->len);
            if (!del[n_del])
                rc = core_err_nomem();
            else
                n_del++;
        }
    }
    if (!rc && n_up) {
        out_cols = core_calloc(sch.n_fields, sizeof *out_cols);
        if (!out_cols) rc = core_err_nomem();
        for (size_t c = 0; !rc && c < sch.n_fields; c++)
            rc = arrow_take(&out_cols[c], x.rows[ST_SRC].ch[0].cols[c], up_rows, n_up);
        if (!rc) rc = arrow_batch_new(&rows, &sch, out_cols, sch.n_fields);
    }
    if (!rc) {
        delta->type_index = type_index;
        delta->mode = GRAPH_CHANGE_DELTA;
        delta->rows = rows;
        rows = NULL;
        delta->delete_ids = n_del ? del : NULL;
        delta->n_delete_ids = n_del;
        if (n_del) del = NULL;
        x.st.rows_changed = n_up + n_del;
        *changed = n_up + n_del > 0;
        if (stats) stats_add(stats, &x.st);
    }

    arrow_batch_free(rows);
    for (size_t c = 0; out_cols && c < sch.n_fields; c++)
        arrow_array_free(out_cols[c]);
    core_free(out_cols);
    for (size_t i = 0; del && i < n_del; i++)
        core_free(del[i]);
    core_free(del);
    core_free(up_rows);
    core_free(order);
    core_free(want.v);
    for (int s = 0; s < N_ST; s++)
        rowset_clear(&x, &x.rows[s]);
    arrow_schema_clear(&sch);
    core_bmap_free(&x.ids);
    core_free(x.c);
    core_arena_free(&x.arena);
    return rc;
}

int graph_merge_table(const lang_catalog *cat, int type_index, const lance_dataset *base,
                      const lance_dataset *src, const lance_dataset *tgt, graph_change *delta,
                      bool *changed, graph_conflicts *conflicts, graph_merge_stats *stats)
{
    return graph_merge_table_ex(cat, type_index, base, src, tgt, delta, changed, conflicts, stats,
                                0);
}
