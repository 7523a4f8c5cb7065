/* Scans of a dataset snapshot: per fragment, read the projected (and filter) columns from the
 * data files that hold them, drop deleted rows and rows the filter rejects, then project and
 * add _rowaddr / _rowid. A column that no data file of a fragment holds reads as nulls. */
#include "lance/dataset.h"
#include "core/alloc.h"
#include "core/error.h"
#include "lance/deletion.h"
#include "lance/file2.h"
#include "lance/rowids.h"

#include <stdio.h>
#include <string.h>

struct lance_scanner {
    const lance_dataset *ds;
    lance_scan_options opt;
    size_t n_out;     /* projected columns */
    size_t *out_cols; /* their dataset column indexes */
    size_t n_read;    /* columns read: projected, then filter-only ones */
    size_t *read_cols;
    size_t *term_col;    /* per filter term: position in read_cols */
    arrow_schema schema; /* output schema */
    size_t next_frag;
    int64_t returned;
    int done;
};

static int push_unique(size_t *arr, size_t *n, size_t v)
{
    for (size_t i = 0; i < *n; i++)
        if (arr[i] == v) return (int)i;
    arr[*n] = v;
    return (int)(*n)++;
}

void lance_scanner_free(lance_scanner *sc)
{
    if (!sc) return;
    core_free(sc->out_cols);
    core_free(sc->read_cols);
    core_free(sc->term_col);
    arrow_schema_clear(&sc->schema);
    core_free(sc);
}

const arrow_schema *lance_scanner_schema(const lance_scanner *sc)
{
    return &sc->schema;
}

static int add_u64_field(arrow_schema *s, const char *name)
{
    arrow_field f;
    arrow_type t = arrow_type_simple(ARROW_UINT64);
    int rc = arrow_field_init(&f, name, &t, false);
    if (rc) return rc;
    rc = arrow_schema_add(s, &f);
    arrow_field_clear(&f);
    return rc;
}

int lance_scanner_open(lance_scanner **out, const lance_dataset *ds, const lance_scan_options *opt)
{
    *out = NULL;
    lance_scan_options def = LANCE_SCAN_OPTIONS_INIT;
    if (!opt) opt = &def;
    if (opt->version != 1)
        return core_err(OG_E_BAD_REQUEST, "lance_scan_options version %d is not 1", opt->version);
    if (opt->with_row_id && !lance_dataset_stable_row_ids(ds))
        return core_err(OG_E_BAD_REQUEST, "table '%s' has no stable row ids", ds->root);
    lance_scanner *sc = core_calloc(1, sizeof *sc);
    if (!sc) return core_err_nomem();
    sc->ds = ds;
    sc->opt = *opt;
    arrow_schema_init(&sc->schema);
    size_t ncols = ds->schema.n_fields;
    size_t nterms = opt->filter ? opt->filter->n : 0;
    size_t nproj = opt->columns ? opt->n_columns : ncols;
    sc->out_cols = core_calloc(nproj ? nproj : 1, sizeof *sc->out_cols);
    sc->read_cols = core_calloc(nproj + nterms + 1, sizeof *sc->read_cols);
    sc->term_col = core_calloc(nterms ? nterms : 1, sizeof *sc->term_col);
    int rc = (!sc->out_cols || !sc->read_cols || !sc->term_col) ? core_err_nomem() : 0;
    for (size_t i = 0; rc == 0 && i < nproj; i++) {
        size_t c = i;
        if (opt->columns) rc = lance_dataset_column(ds, opt->columns[i], &c);
        if (rc) break;
        sc->out_cols[sc->n_out++] = c;
        push_unique(sc->read_cols, &sc->n_read, c);
        rc = arrow_schema_add(&sc->schema, &ds->schema.fields[c]);
    }
    for (size_t t = 0; rc == 0 && t < nterms; t++) {
        size_t c;
        rc = lance_dataset_column(ds, opt->filter->terms[t].column, &c);
        if (rc) break;
        arrow_type_id id = ds->schema.fields[c].type.id;
        if (id == ARROW_LIST || id == ARROW_FIXED_SIZE_LIST || id == ARROW_STRUCT) {
            rc = core_err(OG_E_BAD_REQUEST, "filter on nested column '%s' is not supported",
                          opt->filter->terms[t].column);
            break;
        }
        sc->term_col[t] = (size_t)push_unique(sc->read_cols, &sc->n_read, c);
    }
    if (rc == 0 && opt->with_row_addr) rc = add_u64_field(&sc->schema, "_rowaddr");
    if (rc == 0 && opt->with_row_id) rc = add_u64_field(&sc->schema, "_rowid");
    if (rc) {
        lance_scanner_free(sc);
        return rc;
    }
    *out = sc;
    return 0;
}

/* The dataset's top-level column c as Lance field id. */
static int32_t column_field_id(const lance_dataset *ds, size_t c)
{
    size_t pos = 0;
    for (size_t i = 0; i < c; i++) {
        arrow_schema one = {1, &ds->schema.fields[i]};
        pos += lance_field_count(&one);
    }
    return ds->field_ids[pos];
}

/* Top-level column index in a data file whose field id is id, or -1. */
static int file_column_of(lance_file2_reader *r, int32_t id)
{
    const arrow_schema *fs = lance_file2_schema(r);
    size_t n;
    const int32_t *ids = lance_file2_field_ids(r, &n);
    size_t pos = 0;
    for (size_t i = 0; i < fs->n_fields; i++) {
        if (pos < n && ids[pos] == id) return (int)i;
        arrow_schema one = {1, &fs->fields[i]};
        pos += lance_field_count(&one);
    }
    return -1;
}

static int data_file_has(const Lance__Table__DataFile *df, int32_t id)
{
    for (size_t i = 0; i < df->n_fields; i++)
        if (df->fields[i] == id) return 1;
    return 0;
}

/* Read dataset columns cols[0..n) of fragment f, all physical rows, into the cols_out[i] that
 * are still NULL (each gets a new reference). readers (NULL, or one slot per data file of f)
 * keeps the files it opens open for a later call; the caller closes them. */
static int read_fragment_columns(const lance_dataset *ds, const Lance__Table__DataFragment *f,
                                 const size_t *cols, size_t n, arrow_array **cols_out,
                                 lance_file2_reader **readers)
{
    int rc = 0;
    for (size_t fi = 0; rc == 0 && fi < f->n_files; fi++) {
        const Lance__Table__DataFile *df = f->files[fi];
        size_t want[64], dscol[64], nw = 0;
        for (size_t i = 0; i < n; i++) {
            if (cols_out[i]) continue;
            if (!data_file_has(df, column_field_id(ds, cols[i]))) continue;
            if (nw == 64) break; /* the rest in another pass over this file below */
            dscol[nw] = i;
            want[nw++] = cols[i];
        }
        if (nw == 0) continue;
        if (df->file_major_version != 2 || df->file_minor_version != 0) {
            return core_err(OG_E_UNSUPPORTED,
                            "table '%s': data file '%s' has file version %u.%u; only 2.0 is "
                            "supported",
                            ds->root, df->path, df->file_major_version, df->file_minor_version);
        }
        /* A file inherited by a branch lives under the base path its base_id names. */
        char key[STORE_KEY_MAX], dir[STORE_KEY_MAX];
        rc = lance_dataset_file_root(ds, df->has_base_id, df->base_id, dir);
        if (rc == 0) rc = lance_key(key, dir, "data/", df->path);
        if (rc) break;
        lance_file2_reader *r = readers ? readers[fi] : NULL;
        lance_file2_read_options ro = LANCE_FILE2_READ_OPTIONS_INIT;
        lance_file2_expect(&ro, df);
        if (!r)
            rc = lance_file2_open(&r, ds->s, key, df->has_file_size_bytes ? df->file_size_bytes : 0,
                                  &ro);
        if (rc) break;
        if (readers) readers[fi] = r;
        size_t fcols[64];
        for (size_t i = 0; rc == 0 && i < nw; i++) {
            int fc = file_column_of(r, column_field_id(ds, want[i]));
            if (fc < 0)
                rc = core_err(OG_E_CORRUPT, "table '%s': data file '%s' lacks field %d it lists",
                              ds->root, df->path, column_field_id(ds, want[i]));
            fcols[i] = (size_t)fc;
        }
        arrow_batch *b = NULL;
        if (rc == 0) rc = lance_file2_read(r, fcols, nw, 0, UINT64_MAX, &b);
        if (rc == 0 && (uint64_t)b->num_rows != f->physical_rows) {
            rc = core_err(OG_E_CORRUPT,
                          "table '%s': data file '%s' has %lld rows, fragment %llu "
                          "says %llu",
                          ds->root, df->path, (long long)b->num_rows, (unsigned long long)f->id,
                          (unsigned long long)f->physical_rows);
        }
        for (size_t i = 0; rc == 0 && i < nw; i++) {
            /* Files may store a column with a narrower nullability or equal type only. */
            if (!arrow_type_equal(&b->columns[i]->type, &ds->schema.fields[want[i]].type)) {
                rc = core_err(OG_E_CORRUPT,
                              "table '%s': data file '%s' stores column '%s' with "
                              "another type",
                              ds->root, df->path, ds->schema.fields[want[i]].name);
                break;
            }
            cols_out[dscol[i]] = arrow_array_ref(b->columns[i]);
        }
        arrow_batch_free(b);
        if (!readers) lance_file2_close(r);
        if (rc == 0 && nw == 64) fi--; /* more columns of this file remain */
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (cols_out[i]) continue;
        rc = arrow_array_new_null(&cols_out[i], &ds->schema.fields[cols[i]].type,
                                  (int64_t)f->physical_rows);
    }
    if (rc)
        for (size_t i = 0; i < n; i++) {
            arrow_array_free(cols_out[i]);
            cols_out[i] = NULL;
        }
    return rc;
}

/* A UInt64 array of v[0..n) without nulls, in one copy (a row address column is as long as
 * the batch: appending value by value cost more than the ids it goes with). */
static int u64_array(arrow_array **out, const uint64_t *v, size_t n)
{
    arrow_type t = arrow_type_simple(ARROW_UINT64);
    uint64_t *vals = core_malloc(n ? n * sizeof *vals : 1);
    if (!vals) return core_err_nomem();
    if (n) memcpy(vals, v, n * sizeof *vals);
    return arrow_array_make(out, &t, (int64_t)n, 0, NULL, NULL, vals, n * sizeof *vals, NULL, 0);
}

/* Scan one fragment into *out (NULL when no row survives). */
static int scan_fragment(lance_scanner *sc, const Lance__Table__DataFragment *f, arrow_batch **out)
{
    const lance_dataset *ds = sc->ds;
    *out = NULL;
    uint64_t nrows = f->physical_rows;
    if (nrows == 0 || f->n_files == 0) return 0;
    arrow_array **cols = core_calloc(sc->n_read ? sc->n_read : 1, sizeof *cols);
    lance_file2_reader **readers = core_calloc(f->n_files, sizeof *readers);
    uint8_t *keep = core_malloc((size_t)nrows);
    int64_t *idx = core_malloc((size_t)nrows * sizeof *idx);
    roaring_bitmap_t *del = NULL;
    uint64_t *ids = NULL;
    size_t n_ids = 0;
    arrow_batch *res = NULL;
    int rc = (!cols || !readers || !keep || !idx) ? core_err_nomem() : 0;
    /* Late materialization: the filter's columns first, the others only when a row survives
     * (a fragment the filter rejects whole costs the filter columns alone). */
    size_t nterms = sc->opt.filter ? sc->opt.filter->n : 0;
    for (size_t t = 0; rc == 0 && t < nterms; t++) {
        size_t pos = sc->term_col[t];
        if (cols[pos]) continue;
        rc = read_fragment_columns(ds, f, &sc->read_cols[pos], 1, &cols[pos], readers);
    }
    if (rc == 0 && nterms == 0)
        rc = read_fragment_columns(ds, f, sc->read_cols, sc->n_read, cols, NULL);
    if (rc == 0 && f->deletion_file)
        rc = lance_dataset_deletion_load(ds, f->id, f->deletion_file, &del);
    if (rc == 0) memset(keep, 1, (size_t)nrows);
    if (rc == 0 && del) {
        roaring_uint32_iterator_t *it = roaring_create_iterator(del);
        while (it && it->has_value) {
            if (it->current_value < nrows) keep[it->current_value] = 0;
            roaring_advance_uint32_iterator(it);
        }
        roaring_free_uint32_iterator(it);
    }
    for (size_t t = 0; rc == 0 && t < nterms; t++) {
        const lance_term *term = &sc->opt.filter->terms[t];
        arrow_array *mask = NULL;
        rc = arrow_compare_scalar(&mask, cols[sc->term_col[t]], term->op, &term->value);
        if (rc) break;
        for (uint64_t r = 0; r < nrows; r++)
            if (keep[r] &&
                !(arrow_array_is_valid(mask, (int64_t)r) && arrow_array_get_bool(mask, (int64_t)r)))
                keep[r] = 0;
        arrow_array_free(mask);
    }
    size_t nk = 0;
    for (uint64_t r = 0; rc == 0 && r < nrows; r++)
        if (keep[r]) idx[nk++] = (int64_t)r;
    if (rc == 0 && nterms > 0 && nk > 0)
        rc = read_fragment_columns(ds, f, sc->read_cols, sc->n_read, cols, readers);
    if (rc == 0 && sc->opt.limit >= 0 && (int64_t)nk > sc->opt.limit - sc->returned)
        nk = (size_t)(sc->opt.limit - sc->returned);
    if (rc == 0 && sc->opt.with_row_id) {
        lance_rowid_seq seq = {0};
        if (f->row_id_sequence_case !=
            LANCE__TABLE__DATA_FRAGMENT__ROW_ID_SEQUENCE_INLINE_ROW_IDS) {
            rc = core_err(OG_E_UNSUPPORTED, "table '%s' fragment %llu: row ids not stored inline",
                          ds->root, (unsigned long long)f->id);
        } else {
            rc = lance_rowid_seq_decode(&seq, f->inline_row_ids.data, f->inline_row_ids.len,
                                        ds->root);
            if (rc == 0) rc = lance_rowid_seq_expand(&seq, &ids, &n_ids);
            lance_rowid_seq_free(&seq);
            if (rc == 0 && n_ids != nrows)
                rc =
                    core_err(OG_E_CORRUPT, "table '%s' fragment %llu: %zu row ids for %llu rows",
                             ds->root, (unsigned long long)f->id, n_ids, (unsigned long long)nrows);
        }
    }
    if (rc == 0 && nk > 0) {
        size_t ncol = sc->n_out + sc->opt.with_row_addr + sc->opt.with_row_id;
        arrow_array **outc = core_calloc(ncol ? ncol : 1, sizeof *outc);
        uint64_t *tmp = core_malloc(nk * sizeof *tmp);
        if (!outc || !tmp) rc = core_err_nomem();
        int all_rows = nk == (size_t)nrows; /* nothing deleted, filtered or cut by the limit */
        for (size_t i = 0; rc == 0 && i < sc->n_out; i++) {
            /* out column i is read column i (projected columns were pushed first, unique). */
            size_t rpos = 0;
            while (sc->read_cols[rpos] != sc->out_cols[i])
                rpos++;
            if (all_rows)
                outc[i] = arrow_array_ref(cols[rpos]); /* no copy when every row is kept */
            else
                rc = arrow_take(&outc[i], cols[rpos], idx, nk);
        }
        size_t k = sc->n_out;
        if (rc == 0 && sc->opt.with_row_addr) {
            for (size_t i = 0; i < nk; i++)
                tmp[i] = LANCE_ROW_ADDR(f->id, idx[i]);
            rc = u64_array(&outc[k++], tmp, nk);
        }
        if (rc == 0 && sc->opt.with_row_id) {
            for (size_t i = 0; i < nk; i++)
                tmp[i] = ids[idx[i]];
            rc = u64_array(&outc[k++], tmp, nk);
        }
        if (rc == 0) rc = arrow_batch_new(&res, &sc->schema, outc, ncol);
        for (size_t i = 0; outc && i < ncol; i++)
            arrow_array_free(outc[i]);
        core_free(outc);
        core_free(tmp);
    }
    for (size_t i = 0; cols && i < sc->n_read; i++)
        arrow_array_free(cols[i]);
    core_free(cols);
    for (size_t i = 0; readers && i < f->n_files; i++)
        lance_file2_close(readers[i]);
    core_free(readers);
    core_free(keep);
    core_free(idx);
    core_free(ids);
    if (del) roaring_bitmap_free(del);
    if (rc) {
        arrow_batch_free(res);
        return rc;
    }
    *out = res;
    return 0;
}

int lance_scanner_next(lance_scanner *sc, arrow_batch **out)
{
    *out = NULL;
    const Lance__Table__Manifest *pb = sc->ds->m->pb;
    while (!sc->done && sc->next_frag < pb->n_fragments) {
        if (sc->opt.limit >= 0 && sc->returned >= sc->opt.limit) break;
        arrow_batch *b = NULL;
        const Lance__Table__DataFragment *f = pb->fragments[sc->next_frag];
        size_t lo = 0, hi = sc->opt.n_skip_fragments; /* skip_fragments is ascending */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (sc->opt.skip_fragments[mid] < f->id)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < sc->opt.n_skip_fragments && sc->opt.skip_fragments[lo] == f->id) {
            sc->next_frag++;
            continue;
        }
        int rc = scan_fragment(sc, f, &b);
        if (rc) {
            sc->done = 1;
            return rc;
        }
        sc->next_frag++;
        if (b) {
            sc->returned += b->num_rows;
            *out = b;
            return 0;
        }
    }
    sc->done = 1;
    return 0;
}

int lance_dataset_scan_all(arrow_batch **out, const lance_dataset *ds,
                           const lance_scan_options *opt)
{
    *out = NULL;
    lance_scanner *sc = NULL;
    int rc = lance_scanner_open(&sc, ds, opt);
    if (rc) return rc;
    arrow_batch **parts = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        arrow_batch *b = NULL;
        rc = lance_scanner_next(sc, &b);
        if (rc || !b) break;
        if (n == cap) {
            cap = cap ? cap * 2 : 8;
            arrow_batch **p = core_realloc(parts, cap * sizeof *p);
            if (!p) {
                arrow_batch_free(b);
                rc = core_err_nomem();
                break;
            }
            parts = p;
        }
        parts[n++] = b;
    }
    const arrow_schema *schema = lance_scanner_schema(sc);
    size_t ncol = schema->n_fields;
    arrow_array **cols = rc ? NULL : core_calloc(ncol ? ncol : 1, sizeof *cols);
    if (rc == 0 && !cols) rc = core_err_nomem();
    arrow_array **pieces = rc ? NULL : core_calloc(n ? n : 1, sizeof *pieces);
    if (rc == 0 && !pieces) rc = core_err_nomem();
    for (size_t c = 0; rc == 0 && c < ncol; c++) {
        if (n == 0) {
            rc = arrow_array_new_null(&cols[c], &schema->fields[c].type, 0);
        } else {
            for (size_t i = 0; i < n; i++)
                pieces[i] = parts[i]->columns[c];
            rc = arrow_array_concat(&cols[c], pieces, n);
        }
    }
    if (rc == 0) rc = arrow_batch_new(out, schema, cols, ncol);
    for (size_t c = 0; cols && c < ncol; c++)
        arrow_array_free(cols[c]);
    core_free(cols);
    core_free(pieces);
    for (size_t i = 0; i < n; i++)
        arrow_batch_free(parts[i]);
    core_free(parts);
    lance_scanner_free(sc);
    return rc;
}

/* ---- take ------------------------------------------------------------------------------- */

/* Rows of one fragment further apart than this are read in separate windows (a 64 KiB page
 * holds thousands of short values: closer rows share pages). A fragment from which more than
 * one row in TAKE_DENSE is wanted is read whole. */
#define TAKE_GAP 4096
#define TAKE_DENSE 64

typedef struct take_ent {
    uint64_t addr;
    size_t at; /* position in the caller's order */
} take_ent;

static int take_cmp(const void *a, const void *b)
{
    uint64_t x = ((const take_ent *)a)->addr, y = ((const take_ent *)b)->addr;
    return x < y ? -1 : x > y;
}

/* Column c at rows e[0..n) (ascending offsets) of fragment f, into *out in that order: one
 * reader of the data file that holds it (exact ranged reads: its metadata once, then the
 * pages of each window of nearby rows), or nulls when no file holds it. */
static int take_fragment(const lance_dataset *ds, const Lance__Table__DataFragment *f, size_t c,
                         const take_ent *e, size_t n, arrow_array **out)
{
    *out = NULL;
    int32_t fid = column_field_id(ds, c);
    const Lance__Table__DataFile *df = NULL;
    for (size_t fi = 0; fi < f->n_files && !df; fi++)
        if (data_file_has(f->files[fi], fid)) df = f->files[fi];
    if (!df) return arrow_array_new_null(out, &ds->schema.fields[c].type, (int64_t)n);
    if (df->file_major_version != 2 || df->file_minor_version != 0)
        return core_err(OG_E_UNSUPPORTED,
                        "table '%s': data file '%s' has file version %u.%u; "
                        "only 2.0 is supported",
                        ds->root, df->path, df->file_major_version, df->file_minor_version);
    char key[STORE_KEY_MAX], dir[STORE_KEY_MAX];
    int rc = lance_dataset_file_root(ds, df->has_base_id, df->base_id, dir);
    if (rc == 0) rc = lance_key(key, dir, "data/", df->path);
    lance_file2_reader *r = NULL;
    lance_file2_read_options ro = LANCE_FILE2_READ_OPTIONS_INIT;
    int dense = (uint64_t)n * TAKE_DENSE > f->physical_rows;
    if (!dense) ro.flags = LANCE_FILE2_READ_EXACT;
    lance_file2_expect(&ro, df);
    if (rc == 0)
        rc = lance_file2_open(&r, ds->s, key, df->has_file_size_bytes ? df->file_size_bytes : 0,
                              &ro);
    int fc = rc ? -1 : file_column_of(r, fid);
    if (rc == 0 && fc < 0)
        rc = core_err(OG_E_CORRUPT, "table '%s': data file '%s' lacks field %d it lists", ds->root,
                      df->path, fid);
    if (rc == 0 && lance_file2_num_rows(r) != f->physical_rows)
        rc = core_err(OG_E_CORRUPT,
                      "table '%s': data file '%s' has %llu rows, fragment %llu "
                      "says %llu",
                      ds->root, df->path, (unsigned long long)lance_file2_num_rows(r),
                      (unsigned long long)f->id, (unsigned long long)f->physical_rows);
    arrow_array **pieces = rc ? NULL : core_calloc(n, sizeof *pieces);
    int64_t *idx = rc ? NULL : core_malloc(n * sizeof *idx);
    if (rc == 0 && (!pieces || !idx)) rc = core_err_nomem();
    size_t np = 0;
    for (size_t i = 0; rc == 0 && i < n;) {
        size_t j = i + 1;
        while (j < n &&
               (dense ||
                LANCE_ROW_ADDR_OFF(e[j].addr) - LANCE_ROW_ADDR_OFF(e[j - 1].addr) <= TAKE_GAP))
            j++;
        uint64_t lo = LANCE_ROW_ADDR_OFF(e[i].addr), hi = LANCE_ROW_ADDR_OFF(e[j - 1].addr) + 1;
        if (hi > f->physical_rows) {
            rc = core_err(OG_E_NOT_FOUND, "table '%s' fragment %llu has no row %llu", ds->root,
                          (unsigned long long)f->id, (unsigned long long)(hi - 1));
            break;
        }
        size_t col = (size_t)fc;
        arrow_batch *b = NULL;
        rc = lance_file2_read(r, &col, 1, lo, hi - lo, &b);
        if (rc == 0 && !arrow_type_equal(&b->columns[0]->type, &ds->schema.fields[c].type))
            rc = core_err(OG_E_CORRUPT,
                          "table '%s': data file '%s' stores column '%s' with "
                          "another type",
                          ds->root, df->path, ds->schema.fields[c].name);
        for (size_t k = i; rc == 0 && k < j; k++)
            idx[k - i] = (int64_t)(LANCE_ROW_ADDR_OFF(e[k].addr) - lo);
        if (rc == 0) rc = arrow_take(&pieces[np++], b->columns[0], idx, j - i);
        arrow_batch_free(b);
        i = j;
    }
    if (rc == 0)
        rc = np == 1 ? ((*out = pieces[0]), (pieces[0] = NULL), 0)
                     : arrow_array_concat(out, pieces, np);
    for (size_t i = 0; pieces && i < np; i++)
        arrow_array_free(pieces[i]);
    core_free(pieces);
    core_free(idx);
    lance_file2_close(r);
    return rc;
}

int lance_dataset_take_column(arrow_array **out, const lance_dataset *ds, const char *column,
                              const uint64_t *addrs, size_t n)
{
    *out = NULL;
    size_t c;
    int rc = lance_dataset_column(ds, column, &c);
    if (rc) return rc;
    if (n == 0) return arrow_array_new_null(out, &ds->schema.fields[c].type, 0);
    take_ent *e = core_malloc(n * sizeof *e);
    arrow_array **pieces = core_calloc(n, sizeof *pieces);
    int64_t *inv = core_malloc(n * sizeof *inv);
    size_t np = 0;
    if (!e || !pieces || !inv) rc = core_err_nomem();
    for (size_t i = 0; rc == 0 && i < n; i++)
        e[i] = (take_ent){addrs[i], i};
    if (rc == 0 && n > 1) qsort(e, n, sizeof *e, take_cmp);
    const Lance__Table__Manifest *pb = ds->m->pb;
    for (size_t i = 0; rc == 0 && i < n;) {
        uint64_t fid = LANCE_ROW_ADDR_FRAG(e[i].addr);
        const Lance__Table__DataFragment *f = NULL;
        for (size_t k = 0; k < pb->n_fragments && !f; k++)
            if (pb->fragments[k]->id == fid) f = pb->fragments[k];
        if (!f) {
            rc = core_err(OG_E_NOT_FOUND, "table '%s' has no fragment %llu (row address %llu)",
                          ds->root, (unsigned long long)fid, (unsigned long long)e[i].addr);
            break;
        }
        size_t j = i + 1;
        while (j < n && LANCE_ROW_ADDR_FRAG(e[j].addr) == fid)
            j++;
        rc = take_fragment(ds, f, c, e + i, j - i, &pieces[np]);
        if (rc == 0) np++;
        i = j;
    }
    arrow_array *sorted = NULL;
    if (rc == 0) rc = arrow_array_concat(&sorted, pieces, np);
    /* back to the caller's order */
    for (size_t i = 0; rc == 0 && i < n; i++)
        inv[e[i].at] = (int64_t)i;
    if (rc == 0) rc = arrow_take(out, sorted, inv, n);
    arrow_array_free(sorted);
    for (size_t i = 0; i < np; i++)
        arrow_array_free(pieces[i]);
    core_free(pieces);
    core_free(e);
    core_free(inv);
    return rc;
}
