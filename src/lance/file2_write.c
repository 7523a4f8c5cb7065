/* Lance data file 2.0 writer: encodes record batches into 2.0 pages (flat, nullable, bool,
 * binary with null-adjusted offsets, list offsets + items column, fixed-size list, struct),
 * lays the columns out contiguously with 64-byte aligned buffers, then the metadata tail. */
#include "lance/file2.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/hash.h"
#include "lance/proto/encodings.pb-c.h"
#include "lance/proto/file2.pb-c.h"

#include <inttypes.h>
#include <string.h>

#define MAX_PAGE_BUFFERS 4

typedef struct page_rec {
    unsigned n_buf;
    uint64_t off[MAX_PAGE_BUFFERS]; /* relative to the column's data until finish */
    uint64_t size[MAX_PAGE_BUFFERS];
    uint64_t length;
    uint8_t *enc; /* packed ArrayEncoding */
    size_t enc_len;
} page_rec;

typedef struct col_state {
    core_buf data;
    page_rec *pages;
    size_t n_pages, cap_pages;
} col_state;

struct lance_file2_writer {
    arrow_schema schema;
    Lance__File__Field **fields;
    size_t n_fields; /* = columns */
    col_state *cols;
    size_t page_bytes;
    uint64_t rows;
    unsigned put_flags;
    bool spent;
    /* Batches written but not yet encoded: small writes are gathered into one page per column
     * (a page per write made every merged file of many small fragments carry one page per
     * fragment and column, and every reader decode all their metadata). */
    arrow_batch **pend;
    size_t n_pend, cap_pend;
    size_t pend_bytes;
};

static int pack_msg(core_buf *out, const ProtobufCMessage *m)
{
    size_t n = protobuf_c_message_get_packed_size(m);
    int rc = core_buf_reserve(out, n);
    if (rc) return rc;
    protobuf_c_message_pack(m, out->data + out->len);
    out->len += n;
    return 0;
}

/* ---- Encoding messages (stack-built, packed immediately) -------------------------------- */

typedef Lance__Encodings__ArrayEncoding AE;

typedef struct flat_msg {
    AE ae;
    Lance__Encodings__Flat flat;
    Lance__Encodings__Buffer buf;
} flat_msg;

static AE *mk_flat(flat_msg *m, unsigned bits, unsigned buf_index)
{
    lance__encodings__array_encoding__init(&m->ae);
    lance__encodings__flat__init(&m->flat);
    lance__encodings__buffer__init(&m->buf);
    m->buf.buffer_index = buf_index;
    m->flat.bits_per_value = bits;
    m->flat.buffer = &m->buf;
    m->ae.array_encoding_case = LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_FLAT;
    m->ae.flat = &m->flat;
    return &m->ae;
}

typedef struct nullable_msg {
    AE ae;
    Lance__Encodings__Nullable n;
    Lance__Encodings__Nullable__NoNull no;
    Lance__Encodings__Nullable__SomeNull some;
    Lance__Encodings__Nullable__AllNull all;
} nullable_msg;

/* validity NULL: no_nulls{values}; values NULL: all_nulls; else some_nulls. */
static AE *mk_nullable(nullable_msg *m, AE *validity, AE *values)
{
    lance__encodings__array_encoding__init(&m->ae);
    lance__encodings__nullable__init(&m->n);
    m->ae.array_encoding_case = LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_NULLABLE;
    m->ae.nullable = &m->n;
    if (!values) {
        lance__encodings__nullable__all_null__init(&m->all);
        m->n.nullability_case = LANCE__ENCODINGS__NULLABLE__NULLABILITY_ALL_NULLS;
        m->n.all_nulls = &m->all;
    } else if (!validity) {
        lance__encodings__nullable__no_null__init(&m->no);
        m->no.values = values;
        m->n.nullability_case = LANCE__ENCODINGS__NULLABLE__NULLABILITY_NO_NULLS;
        m->n.no_nulls = &m->no;
    } else {
        lance__encodings__nullable__some_null__init(&m->some);
        m->some.validity = validity;
        m->some.values = values;
        m->n.nullability_case = LANCE__ENCODINGS__NULLABLE__NULLABILITY_SOME_NULLS;
        m->n.some_nulls = &m->some;
    }
    return &m->ae;
}

/* ---- Column data ----------------------------------------------------------------------- */

static int add_page(col_state *c, const void *const *bufs, const uint64_t *sizes, unsigned n_buf,
                    uint64_t length, const AE *enc)
{
    if (c->n_pages == c->cap_pages) {
        size_t cap = c->cap_pages ? c->cap_pages * 2 : 8;
        page_rec *p = core_realloc(c->pages, cap * sizeof *p);
        if (!p) return core_err_nomem();
        c->pages = p;
        c->cap_pages = cap;
    }
    page_rec *pr = &c->pages[c->n_pages];
    memset(pr, 0, sizeof *pr);
    pr->n_buf = n_buf;
    pr->length = length;
    for (unsigned i = 0; i < n_buf; i++) {
        pr->off[i] = c->data.len;
        pr->size[i] = sizes[i];
        int rc = core_buf_append(&c->data, bufs[i], sizes[i]);
        size_t pad = (LANCE_FILE2_ALIGN - c->data.len % LANCE_FILE2_ALIGN) % LANCE_FILE2_ALIGN;
        if (rc == 0) rc = core_buf_append_zeros(&c->data, pad);
        if (rc) return rc;
    }
    core_buf eb = CORE_BUF_INIT;
    int rc = pack_msg(&eb, &enc->base);
    if (rc) {
        core_buf_free(&eb);
        return rc;
    }
    pr->enc = core_buf_detach(&eb, &pr->enc_len);
    if (!pr->enc) {
        /* an empty message packs to zero bytes; keep a non-NULL pointer */
        pr->enc = core_malloc(1);
        if (!pr->enc) return core_err_nomem();
    }
    c->n_pages++;
    return 0;
}

static int64_t nulls_in(const arrow_array *a, int64_t s, int64_t e)
{
    if (a->type.id == ARROW_NA) return e - s;
    if (!a->validity) return 0;
    int64_t n = 0;
    for (int64_t i = s; i < e; i++)
        n += !arrow_bit_get(a->validity, i);
    return n;
}

/* Bits [s, e) of src into a fresh LSB-first bitmap (NULL src: all ones). */
static uint8_t *bits_slice(const uint8_t *src, int64_t s, int64_t e, size_t *len)
{
    int64_t n = e - s;
    *len = (size_t)(n + 7) / 8;
    uint8_t *d = core_calloc(*len + 1, 1);
    if (!d) return NULL;
    for (int64_t i = 0; i < n; i++)
        if (!src || arrow_bit_get(src, s + i)) d[i >> 3] |= (uint8_t)(1u << (i & 7));
    return d;
}

/* Fixed-width values [s, e) with null slots zeroed. */
static uint8_t *values_slice(const arrow_array *a, int64_t s, int64_t e, size_t *len)
{
    int w = arrow_type_bit_width(a->type.id);
    if (w == 1) {
        size_t l;
        uint8_t *d = bits_slice(a->values, s, e, &l);
        if (d && a->validity)
            for (int64_t i = s; i < e; i++)
                if (!arrow_bit_get(a->validity, i)) arrow_bit_set(d, i - s, false);
        *len = l;
        return d;
    }
    size_t wb = (size_t)w / 8;
    *len = (size_t)(e - s) * wb;
    uint8_t *d = core_malloc(*len ? *len : 1);
    if (!d) return NULL;
    if (*len) memcpy(d, (const uint8_t *)a->values + (size_t)s * wb, *len);
    if (a->validity)
        for (int64_t i = s; i < e; i++)
            if (!arrow_bit_get(a->validity, i)) memset(d + (size_t)(i - s) * wb, 0, wb);
    return d;
}

static int write_flat_page(col_state *c, const arrow_array *a, int64_t s, int64_t e)
{
    int64_t n = e - s, nulls = nulls_in(a, s, e);
    unsigned bits = (unsigned)arrow_type_bit_width(a->type.id);
    nullable_msg nm;
    flat_msg fv, fval;
    if (nulls == n) return add_page(c, NULL, NULL, 0, (uint64_t)n, mk_nullable(&nm, NULL, NULL));
    size_t vlen, blen = 0;
    uint8_t *vals = values_slice(a, s, e, &vlen);
    uint8_t *valid = nulls ? bits_slice(a->validity, s, e, &blen) : NULL;
    int rc;
    if (!vals || (nulls && !valid)) {
        rc = core_err_nomem();
    } else if (nulls) {
        const void *bufs[2] = {valid, vals};
        uint64_t sizes[2] = {blen, vlen};
        rc = add_page(c, bufs, sizes, 2, (uint64_t)n,
                      mk_nullable(&nm, mk_flat(&fv, 1, 0), mk_flat(&fval, bits, 1)));
    } else {
        const void *bufs[1] = {vals};
        uint64_t sizes[1] = {vlen};
        rc = add_page(c, bufs, sizes, 1, (uint64_t)n,
                      mk_nullable(&nm, NULL, mk_flat(&fval, bits, 0)));
    }
    core_free(vals);
    core_free(valid);
    return rc;
}

static int64_t off_at(const arrow_array *a, int64_t i)
{
    return arrow_type_is_large(a->type.id) ? ((const int64_t *)a->offsets)[i]
                                           : ((const int32_t *)a->offsets)[i];
}

/* Null-adjusted page-local end offsets (§2.5): end, or end + A for a null row. */
static uint64_t *adjusted_offsets(const arrow_array *a, int64_t s, int64_t e, uint64_t total,
                                  uint64_t *adj)
{
    *adj = total + 1;
    uint64_t *o = core_malloc((size_t)(e - s) * 8 + 8);
    if (!o) return NULL;
    int64_t base = off_at(a, s);
    for (int64_t i = s; i < e; i++) {
        uint64_t end = (uint64_t)(off_at(a, i + 1) - base);
        o[i - s] = arrow_array_is_valid(a, i) ? end : end + *adj;
    }
    return o;
}

static int write_binary_page(col_state *c, const arrow_array *a, int64_t s, int64_t e)
{
    int64_t b0 = off_at(a, s), b1 = off_at(a, e);
    uint64_t total = (uint64_t)(b1 - b0), adj;
    uint64_t *offs = adjusted_offsets(a, s, e, total, &adj);
    if (!offs) return core_err_nomem();
    const void *bufs[2] = {offs, total ? (const uint8_t *)a->values + b0 : (const void *)""};
    uint64_t sizes[2] = {(uint64_t)(e - s) * 8, total};
    flat_msg fi, fb;
    nullable_msg nm;
    AE ae = LANCE__ENCODINGS__ARRAY_ENCODING__INIT;
    Lance__Encodings__Binary bin = LANCE__ENCODINGS__BINARY__INIT;
    bin.indices = mk_nullable(&nm, NULL, mk_flat(&fi, 64, 0));
    bin.bytes = mk_flat(&fb, 8, 1);
    bin.null_adjustment = adj;
    ae.array_encoding_case = LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_BINARY;
    ae.binary = &bin;
    int rc = add_page(c, bufs, sizes, 2, (uint64_t)(e - s), &ae);
    core_free(offs);
    return rc;
}

static int write_fsl_page(col_state *c, const arrow_array *a, int64_t s, int64_t e)
{
    const arrow_array *items = a->children[0];
    int64_t dim = a->type.list_size, n = e - s;
    int64_t row_nulls = nulls_in(a, s, e);
    nullable_msg outer, inner;
    flat_msg frv, fiv, fval;
    if (row_nulls == n)
        return add_page(c, NULL, NULL, 0, (uint64_t)n, mk_nullable(&outer, NULL, NULL));
    int64_t is = s * dim, ie = e * dim;
    int64_t item_nulls = nulls_in(items, is, ie);
    const void *bufs[3];
    uint64_t sizes[3];
    unsigned nb = 0;
    size_t l;
    uint8_t *rv = NULL, *iv = NULL, *vals = NULL;
    int rc = 0;
    if (row_nulls) {
        rv = bits_slice(a->validity, s, e, &l);
        bufs[nb] = rv;
        sizes[nb++] = l;
    }
    unsigned iv_idx = nb;
    if (item_nulls) {
        iv = bits_slice(items->validity, is, ie, &l);
        bufs[nb] = iv;
        sizes[nb++] = l;
    }
    unsigned val_idx = nb;
    vals = values_slice(items, is, ie, &l);
    bufs[nb] = vals;
    sizes[nb++] = l;
    if ((row_nulls && !rv) || (item_nulls && !iv) || !vals) {
        rc = core_err_nomem();
    } else {
        unsigned bits = (unsigned)arrow_type_bit_width(items->type.id);
        AE *item_enc = mk_nullable(&inner, item_nulls ? mk_flat(&fiv, 1, iv_idx) : NULL,
                                   mk_flat(&fval, bits, val_idx));
        AE fsl_ae = LANCE__ENCODINGS__ARRAY_ENCODING__INIT;
        Lance__Encodings__FixedSizeList fsl = LANCE__ENCODINGS__FIXED_SIZE_LIST__INIT;
        fsl.dimension = (uint32_t)dim;
        fsl.items = item_enc;
        fsl_ae.array_encoding_case =
            LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_FIXED_SIZE_LIST;
        fsl_ae.fixed_size_list = &fsl;
        rc = add_page(c, bufs, sizes, nb, (uint64_t)n,
                      mk_nullable(&outer, row_nulls ? mk_flat(&frv, 1, 0) : NULL, &fsl_ae));
    }
    core_free(rv);
    core_free(iv);
    core_free(vals);
    return rc;
}

static int write_list_page(col_state *c, const arrow_array *a, int64_t s, int64_t e)
{
    int64_t i0 = ((const int32_t *)a->offsets)[s], i1 = ((const int32_t *)a->offsets)[e];
    uint64_t k = (uint64_t)(i1 - i0), adj;
    uint64_t *offs = adjusted_offsets(a, s, e, k, &adj);
    if (!offs) return core_err_nomem();
    const void *bufs[1] = {offs};
    uint64_t sizes[1] = {(uint64_t)(e - s) * 8};
    flat_msg fo;
    nullable_msg nm;
    AE ae = LANCE__ENCODINGS__ARRAY_ENCODING__INIT;
    Lance__Encodings__List l = LANCE__ENCODINGS__LIST__INIT;
    l.offsets = mk_nullable(&nm, NULL, mk_flat(&fo, 64, 0));
    l.null_offset_adjustment = adj;
    l.num_items = k;
    ae.array_encoding_case = LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_LIST;
    ae.list = &l;
    int rc = add_page(c, bufs, sizes, 1, (uint64_t)(e - s), &ae);
    core_free(offs);
    return rc;
}

/* Rows of [s, e) that fit a page of at most page_bytes (at least one row). */
static int64_t page_end(const lance_file2_writer *w, const arrow_array *a, int64_t s, int64_t e)
{
    size_t budget = w->page_bytes;
    switch (a->type.id) {
    case ARROW_UTF8:
    case ARROW_LARGE_UTF8:
    case ARROW_BINARY:
    case ARROW_LARGE_BINARY: {
        int64_t i = s + 1;
        int64_t b0 = off_at(a, s);
        while (i < e && (uint64_t)(off_at(a, i + 1) - b0) + (uint64_t)(i + 1 - s) * 8 <= budget)
            i++;
        return i;
    }
    case ARROW_LIST: {
        int64_t rows = (int64_t)(budget / 8);
        return rows < 1 ? s + 1 : (e - s > rows ? s + rows : e);
    }
    case ARROW_FIXED_SIZE_LIST: {
        size_t per =
            (size_t)a->type.list_size * (size_t)(arrow_type_bit_width(a->children[0]->type.id) / 8);
        int64_t rows = (int64_t)(budget / (per ? per : 1));
        return rows < 1 ? s + 1 : (e - s > rows ? s + rows : e);
    }
    default: {
        int w_bits = arrow_type_bit_width(a->type.id);
        int64_t rows = (int64_t)(budget * 8 / (size_t)(w_bits ? w_bits : 1));
        /* bool and validity bitmaps of a page start on a byte, so keep pages a multiple of 8 */
        if (rows > 8) rows -= rows % 8;
        return rows < 1 ? s + 1 : (e - s > rows ? s + rows : e);
    }
    }
}

static int write_column(lance_file2_writer *w, size_t *col, const arrow_field *f,
                        const arrow_array *a, int64_t s, int64_t e)
{
    size_t c = (*col)++;
    if (c >= w->n_fields) return core_err(OG_E_INTERNAL, "column index past the schema");
    col_state *cs = &w->cols[c];
    int rc = 0;
    if (a->type.id == ARROW_STRUCT) {
        if (nulls_in(a, s, e))
            return core_err(OG_E_UNSUPPORTED,
                            "column %s: file format 2.0 cannot store null "
                            "struct rows",
                            f->name);
        if (e > s) {
            AE ae = LANCE__ENCODINGS__ARRAY_ENCODING__INIT;
            Lance__Encodings__SimpleStruct st = LANCE__ENCODINGS__SIMPLE_STRUCT__INIT;
            ae.array_encoding_case = LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_SIMPLE_STRUCT;
            ae.simple_struct = &st;
            rc = add_page(cs, NULL, NULL, 0, (uint64_t)(e - s), &ae);
        }
        for (size_t k = 0; rc == 0 && k < a->n_children; k++)
            rc = write_column(w, col, &f->type.children[k], a->children[k], s, e);
        return rc;
    }
    if (a->type.id == ARROW_LIST) {
        size_t item_col = *col;
        size_t after = item_col;
        for (int64_t p = s; rc == 0 && p < e;) {
            int64_t q = page_end(w, a, p, e);
            rc = write_list_page(cs, a, p, q);
            size_t ic = item_col;
            if (rc == 0)
                rc = write_column(w, &ic, &f->type.children[0], a->children[0],
                                  ((const int32_t *)a->offsets)[p],
                                  ((const int32_t *)a->offsets)[q]);
            after = ic;
            p = q;
        }
        if (s == e) {
            arrow_schema one = {1, (arrow_field *)&f->type.children[0]};
            after = item_col + lance_field_count(&one);
        }
        *col = after;
        return rc;
    }
    for (int64_t p = s; rc == 0 && p < e;) {
        int64_t q = page_end(w, a, p, e);
        if (arrow_type_is_binary_like(a->type.id))
            rc = write_binary_page(cs, a, p, q);
        else if (a->type.id == ARROW_FIXED_SIZE_LIST)
            rc = write_fsl_page(cs, a, p, q);
        else if (arrow_type_bit_width(a->type.id) > 0)
            rc = write_flat_page(cs, a, p, q);
        else
            rc = core_err(OG_E_UNSUPPORTED, "column %s: type not supported by the 2.0 writer",
                          f->name);
        p = q;
    }
    return rc;
}

/* Refuse what write_column would refuse, before anything is buffered: null struct rows among
 * the rows [s, e) that would be written. */
static int check_storable(const arrow_field *f, const arrow_array *a, int64_t s, int64_t e)
{
    if (a->type.id == ARROW_STRUCT) {
        if (nulls_in(a, s, e))
            return core_err(OG_E_UNSUPPORTED,
                            "column %s: file format 2.0 cannot store null "
                            "struct rows",
                            f->name);
        for (size_t k = 0; k < a->n_children; k++) {
            int rc = check_storable(&f->type.children[k], a->children[k], s, e);
            if (rc) return rc;
        }
    } else if (a->type.id == ARROW_LIST) {
        const int32_t *off = a->offsets;
        if (e > s) return check_storable(&f->type.children[0], a->children[0], off[s], off[e]);
    } else if (a->type.id == ARROW_FIXED_SIZE_LIST) {
        int64_t k = a->type.list_size;
        return check_storable(&f->type.children[0], a->children[0], s * k, e * k);
    } else if (!arrow_type_is_binary_like(a->type.id) && arrow_type_bit_width(a->type.id) <= 0) {
        return core_err(OG_E_UNSUPPORTED, "column %s: type not supported by the 2.0 writer",
                        f->name);
    }
    return 0;
}

/* About how many bytes rows [s, e) of a take in pages (for the gathering bound only). */
static size_t approx_bytes(const arrow_array *a, int64_t s, int64_t e)
{
    size_t n = (size_t)(e - s), b = n / 8 + 1;
    int w = arrow_type_bit_width(a->type.id);
    if (a->type.id == ARROW_LIST && e > s) {
        const int32_t *off = a->offsets;
        return b + 8 * n + approx_bytes(a->children[0], off[s], off[e]);
    }
    if (arrow_type_is_binary_like(a->type.id) && e > s)
        return b + 8 * n + (size_t)(off_at(a, e) - off_at(a, s));
    if (w > 0) b += (n * (size_t)w + 7) / 8;
    for (size_t k = 0; a->type.id == ARROW_STRUCT && k < a->n_children; k++)
        b += approx_bytes(a->children[k], s, e);
    if (a->type.id == ARROW_FIXED_SIZE_LIST && a->n_children)
        b += approx_bytes(a->children[0], s * a->type.list_size, e * a->type.list_size);
    return b;
}

/* Encode the gathered batches as pages: one concatenation per column, then write_column. */
static int flush_pending(lance_file2_writer *w)
{
    if (w->n_pend == 0) return 0;
    int rc = 0;
    size_t n = w->n_pend;
    arrow_array **parts = core_calloc(n, sizeof *parts);
    if (!parts) rc = core_err_nomem();
    size_t col = 0;
    for (size_t i = 0; rc == 0 && i < w->schema.n_fields; i++) {
        arrow_array *a = NULL;
        for (size_t k = 0; k < n; k++)
            parts[k] = w->pend[k]->columns[i];
        if (n == 1)
            a = arrow_array_ref(parts[0]);
        else
            rc = arrow_array_concat(&a, parts, n);
        if (rc == 0) rc = write_column(w, &col, &w->schema.fields[i], a, 0, a->length);
        arrow_array_free(a);
    }
    core_free(parts);
    for (size_t k = 0; k < n; k++)
        arrow_batch_free(w->pend[k]);
    w->n_pend = 0;
    w->pend_bytes = 0;
    if (rc) w->spent = true; /* pages of some columns were written: the file is inconsistent */
    return rc;
}

/* ---- Writer API -------------------------------------------------------------------------- */

int lance_file2_writer_new(lance_file2_writer **out, const arrow_schema *schema,
                           const lance_file2_options *opt)
{
    *out = NULL;
    lance_file2_options def = LANCE_FILE2_OPTIONS_INIT;
    if (!opt) opt = &def;
    lance_file2_writer *w = core_calloc(1, sizeof *w);
    if (!w) return core_err_nomem();
    w->page_bytes = opt->page_bytes ? opt->page_bytes : LANCE_FILE2_DEFAULT_PAGE_BYTES;
    w->put_flags = opt->put_flags;
    int rc = arrow_schema_copy(&w->schema, schema);
    if (rc == 0)
        rc = lance_fields_from_arrow(&w->fields, &w->n_fields, schema, opt->field_ids,
                                     opt->n_field_ids);
    if (rc == 0 && w->n_fields > UINT32_MAX) rc = core_err(OG_E_RESOURCE_LIMIT, "too many columns");
    if (rc == 0 && w->n_fields && !(w->cols = core_calloc(w->n_fields, sizeof *w->cols)))
        rc = core_err_nomem();
    if (rc) {
        lance_file2_writer_free(w);
        return rc;
    }
    *out = w;
    return 0;
}

void lance_file2_writer_free(lance_file2_writer *w)
{
    if (!w) return;
    for (size_t c = 0; w->cols && c < w->n_fields; c++) {
        for (size_t p = 0; p < w->cols[c].n_pages; p++)
            core_free(w->cols[c].pages[p].enc);
        core_free(w->cols[c].pages);
        core_buf_free(&w->cols[c].data);
    }
    core_free(w->cols);
    for (size_t k = 0; k < w->n_pend; k++)
        arrow_batch_free(w->pend[k]);
    core_free(w->pend);
    lance_fields_free(w->fields, w->n_fields);
    arrow_schema_clear(&w->schema);
    core_free(w);
}

int lance_file2_writer_write(lance_file2_writer *w, const arrow_batch *b)
{
    if (w->spent) return core_err(OG_E_BAD_REQUEST, "file writer already finished");
    if (!arrow_schema_equal(&b->schema, &w->schema))
        return core_err(OG_E_BAD_REQUEST, "batch schema differs from the file's schema");
    size_t bytes = 0;
    for (size_t i = 0; i < b->n_columns; i++) {
        int rc = check_storable(&w->schema.fields[i], b->columns[i], 0, b->num_rows);
        if (rc) return rc;
        bytes += approx_bytes(b->columns[i], 0, b->num_rows);
    }
    if (b->num_rows == 0) return 0;
    if (w->n_pend == w->cap_pend) {
        size_t cap = w->cap_pend ? w->cap_pend * 2 : 8;
        arrow_batch **p = core_realloc(w->pend, cap * sizeof *p);
        if (!p) return core_err_nomem();
        w->pend = p;
        w->cap_pend = cap;
    }
    int rc = arrow_batch_new(&w->pend[w->n_pend], &b->schema, b->columns, b->n_columns);
    if (rc) return rc;
    w->n_pend++;
    w->pend_bytes += bytes;
    w->rows += (uint64_t)b->num_rows;
    return w->pend_bytes >= w->page_bytes ? flush_pending(w) : 0;
}

int lance_file2_writer_write_rows(lance_file2_writer *w, const arrow_batch *b, int64_t off,
                                  int64_t n)
{
    if (off < 0 || n < 0 || off > b->num_rows || n > b->num_rows - off)
        return core_err(OG_E_BAD_REQUEST, "rows [%lld, +%lld) of a batch of %lld", (long long)off,
                        (long long)n, (long long)b->num_rows);
    if (off == 0 && n == b->num_rows) return lance_file2_writer_write(w, b);
    int64_t *idx = core_malloc((size_t)(n ? n : 1) * sizeof *idx);
    if (!idx) return core_err_nomem();
    for (int64_t k = 0; k < n; k++)
        idx[k] = off + k;
    arrow_batch *part = NULL;
    int rc = arrow_batch_take(&part, b, idx, (size_t)n);
    if (rc == 0) rc = lance_file2_writer_write(w, part);
    arrow_batch_free(part);
    core_free(idx);
    return rc;
}

static int encoding_any(Lance__File__V2__Encoding *enc, Lance__File__V2__DirectEncoding *direct,
                        core_buf *anybuf, const char *type_url, const uint8_t *value, size_t len)
{
    Lance__File__V2__AnyMessage any = LANCE__FILE__V2__ANY_MESSAGE__INIT;
    any.type_url = (char *)type_url;
    any.value.data = (uint8_t *)value;
    any.value.len = len;
    core_buf_clear(anybuf);
    int rc = pack_msg(anybuf, &any.base);
    if (rc) return rc;
    lance__file__v2__direct_encoding__init(direct);
    direct->encoding.data = anybuf->data;
    direct->encoding.len = anybuf->len;
    lance__file__v2__encoding__init(enc);
    enc->location_case = LANCE__FILE__V2__ENCODING__LOCATION_DIRECT;
    enc->direct = direct;
    return 0;
}

static int put_u64(core_buf *b, uint64_t v)
{
    return core_buf_append_u64le(b, v);
}

int lance_file2_writer_finish_bytes(lance_file2_writer *w, core_buf *out, lance_file2_info *info)
{
    if (info) {
        info->block_xxh3 = NULL;
        info->n_blocks = 0;
    }
    if (w->spent) return core_err(OG_E_BAD_REQUEST, "file writer already finished or failed");
    int frc = flush_pending(w);
    if (frc) return frc;
    w->spent = true;
    core_buf_clear(out);
    uint64_t *base = core_calloc(w->n_fields ? w->n_fields : 1, sizeof *base);
    if (!base) return core_err_nomem();
    int rc = 0;
    uint32_t pages = 0;
    /* Where each column's pages will start (each column's data is a multiple of 64 bytes).
     * The metadata tail is packed first, into a buffer of its own with offsets counted from
     * the end of the page data, so the whole file is then laid out in one buffer of its exact
     * size: growing it as the columns went in held a copy of most of the file. */
    uint64_t data_len = 0;
    for (size_t c = 0; c < w->n_fields; c++) {
        base[c] = data_len;
        data_len += w->cols[c].data.len;
        pages += (uint32_t)w->cols[c].n_pages;
    }
    core_buf tail = CORE_BUF_INIT;
    /* global buffer 0: FileDescriptor */
    uint64_t gb0_pos = data_len, gb0_len = 0;
    if (rc == 0) {
        Lance__File__Schema sch = LANCE__FILE__SCHEMA__INIT;
        sch.n_fields = w->n_fields;
        sch.fields = w->fields;
        Lance__File__FileDescriptor fd = LANCE__FILE__FILE_DESCRIPTOR__INIT;
        fd.schema = &sch;
        fd.length = w->rows;
        rc = pack_msg(&tail, &fd.base);
        gb0_len = tail.len;
    }
    /* column metadata */
    uint64_t cm_start = data_len + tail.len;
    uint64_t *cm_pos = core_calloc(w->n_fields ? w->n_fields : 1, 2 * sizeof *cm_pos);
    core_buf colenc_any = CORE_BUF_INIT, page_any = CORE_BUF_INIT;
    if (!cm_pos && rc == 0) rc = core_err_nomem();
    uint8_t colenc_value[2] = {0x0a, 0x00}; /* ColumnEncoding{values: {}} */
    for (size_t c = 0; c < w->n_fields && rc == 0; c++) {
        col_state *cs = &w->cols[c];
        Lance__File__V2__ColumnMetadata cm = LANCE__FILE__V2__COLUMN_METADATA__INIT;
        Lance__File__V2__Encoding cenc;
        Lance__File__V2__DirectEncoding cdir;
        rc = encoding_any(&cenc, &cdir, &colenc_any, "/lance.encodings.ColumnEncoding",
                          colenc_value, sizeof colenc_value);
        if (rc) break;
        cm.encoding = &cenc;
        size_t np = cs->n_pages;
        Lance__File__V2__ColumnMetadata__Page *pg = core_calloc(np ? np : 1, sizeof *pg);
        Lance__File__V2__ColumnMetadata__Page **pp = core_calloc(np ? np : 1, sizeof *pp);
        Lance__File__V2__Encoding *penc = core_calloc(np ? np : 1, sizeof *penc);
        Lance__File__V2__DirectEncoding *pdir = core_calloc(np ? np : 1, sizeof *pdir);
        core_buf *anys = core_calloc(np ? np : 1, sizeof *anys);
        uint64_t *offs = core_calloc(np * MAX_PAGE_BUFFERS + 1, sizeof *offs);
        if (!pg || !pp || !penc || !pdir || !anys || !offs) rc = core_err_nomem();
        for (size_t p = 0; rc == 0 && p < np; p++) {
            page_rec *pr = &cs->pages[p];
            lance__file__v2__column_metadata__page__init(&pg[p]);
            for (unsigned k = 0; k < pr->n_buf; k++)
                offs[p * MAX_PAGE_BUFFERS + k] = pr->off[k] + base[c];
            pg[p].n_buffer_offsets = pr->n_buf;
            pg[p].buffer_offsets = &offs[p * MAX_PAGE_BUFFERS];
            pg[p].n_buffer_sizes = pr->n_buf;
            pg[p].buffer_sizes = pr->size;
            pg[p].length = pr->length;
            rc = encoding_any(&penc[p], &pdir[p], &anys[p], "/lance.encodings.ArrayEncoding",
                              pr->enc, pr->enc_len);
            pg[p].encoding = &penc[p];
            pp[p] = &pg[p];
        }
        if (rc == 0) {
            cm.n_pages = np;
            cm.pages = pp;
            cm_pos[2 * c] = data_len + tail.len;
            rc = pack_msg(&tail, &cm.base);
            cm_pos[2 * c + 1] = data_len + tail.len - cm_pos[2 * c];
        }
        for (size_t p = 0; anys && p < np; p++)
            core_buf_free(&anys[p]);
        core_free(anys);
        core_free(offs);
        core_free(pdir);
        core_free(penc);
        core_free(pp);
        core_free(pg);
    }
    core_buf_free(&colenc_any);
    core_buf_free(&page_any);
    uint64_t cmo = data_len + tail.len;
    for (size_t c = 0; c < w->n_fields && rc == 0; c++) {
        rc = put_u64(&tail, cm_pos[2 * c]);
        if (rc == 0) rc = put_u64(&tail, cm_pos[2 * c + 1]);
    }
    uint64_t gbo = data_len + tail.len;
    if (rc == 0) rc = put_u64(&tail, gb0_pos);
    if (rc == 0) rc = put_u64(&tail, gb0_len);
    if (rc == 0) rc = put_u64(&tail, cm_start);
    if (rc == 0) rc = put_u64(&tail, cmo);
    if (rc == 0) rc = put_u64(&tail, gbo);
    if (rc == 0) rc = core_buf_append_u32le(&tail, 1);
    if (rc == 0) rc = core_buf_append_u32le(&tail, (uint32_t)w->n_fields);
    if (rc == 0) rc = core_buf_append_u16le(&tail, 0);
    if (rc == 0) rc = core_buf_append_u16le(&tail, 3);
    if (rc == 0) rc = core_buf_append(&tail, LANCE_FILE2_MAGIC, 4);
    core_free(cm_pos);
    core_free(base);
    /* page data, column after column, each column's buffer freed once it is in */
    if (rc == 0) rc = core_buf_reserve(out, data_len + tail.len);
    for (size_t c = 0; c < w->n_fields && rc == 0; c++) {
        rc = core_buf_append(out, w->cols[c].data.data, w->cols[c].data.len);
        core_buf_free(&w->cols[c].data);
    }
    if (rc == 0) rc = core_buf_append(out, tail.data, tail.len);
    core_buf_free(&tail);
    if (rc == 0 && info) {
        info->size = out->len;
        info->rows = w->rows;
        info->columns = (uint32_t)w->n_fields;
        info->pages = pages;
        info->xxh3 = core_hash64(out->data, out->len, 0);
        /* A file this large is read in ranges: record what every range read checks. */
        if (out->len > LANCE_FILE2_SMALL_FILE_BYTES) {
            size_t nb = (out->len + LANCE_FILE2_BLOCK_BYTES - 1) / LANCE_FILE2_BLOCK_BYTES;
            info->block_xxh3 = core_malloc(nb * sizeof *info->block_xxh3);
            if (!info->block_xxh3) return core_err_nomem();
            for (size_t i = 0; i < nb; i++) {
                size_t at = i * (size_t)LANCE_FILE2_BLOCK_BYTES, n = out->len - at;
                if (n > LANCE_FILE2_BLOCK_BYTES) n = LANCE_FILE2_BLOCK_BYTES;
                info->block_xxh3[i] = core_hash64(out->data + at, n, 0);
            }
            info->n_blocks = nb;
        }
    }
    return rc;
}

void lance_file2_info_clear(lance_file2_info *info)
{
    if (!info) return;
    core_free(info->block_xxh3);
    info->block_xxh3 = NULL;
    info->n_blocks = 0;
}

int lance_file2_writer_finish(lance_file2_writer *w, store *s, const char *key,
                              lance_file2_info *info)
{
    core_buf b = CORE_BUF_INIT;
    int rc = lance_file2_writer_finish_bytes(w, &b, info);
    if (rc == 0) rc = store_put(s, key, b.data, b.len, w->put_flags);
    if (rc) lance_file2_info_clear(info);
    core_buf_free(&b);
    return rc;
}
