/* Kernels over arrow arrays: take and filter (copying), total-order row comparison,
 * elementwise comparison into bool arrays, per-row hashing, stable multi-key sort. */
#include "arrow/arrow.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/error.h"
#include "core/hash.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

/* ---- Take / filter ----------------------------------------------------------------------- */

static int take_rec(arrow_array **out, const arrow_array *a, const int64_t *idx, size_t n);

static int take_children(arrow_array ***kids_out, const arrow_array *a, const int64_t *idx,
                         size_t n)
{
    arrow_array **kids = core_calloc(a->n_children ? a->n_children : 1, sizeof *kids);
    if (!kids) return core_err_nomem();
    for (size_t k = 0; k < a->n_children; k++) {
        int rc = take_rec(&kids[k], a->children[k], idx, n);
        if (rc) {
            for (size_t j = 0; j < k; j++)
                arrow_array_free(kids[j]);
            core_free(kids);
            return rc;
        }
    }
    *kids_out = kids;
    return 0;
}

static int take_rec(arrow_array **out, const arrow_array *a, const int64_t *idx, size_t n)
{
    *out = NULL;
    int64_t len = (int64_t)n;
    for (size_t i = 0; i < n; i++)
        if (idx[i] < -1 || idx[i] >= a->length)
            return core_err(OG_E_BAD_REQUEST,
                            "take index %" PRId64 " out of range [0, %" PRId64 ")", idx[i],
                            a->length);
    if (a->type.id == ARROW_NA)
        return arrow_array_make(out, &a->type, len, len, NULL, NULL, NULL, 0, NULL, 0);

    uint8_t *validity = core_calloc((size_t)(len + 7) / 8 + 1, 1);
    if (!validity) return core_err_nomem();
    int64_t nulls = 0;
    for (size_t i = 0; i < n; i++) {
        bool v = idx[i] >= 0 && arrow_array_is_valid(a, idx[i]);
        if (v)
            arrow_bit_set(validity, (int64_t)i, true);
        else
            nulls++;
    }
    void *offsets = NULL, *values = NULL;
    size_t vsize = 0;
    arrow_array **kids = NULL;
    size_t n_kids = 0;
    int rc = 0;
    int w = arrow_type_bit_width(a->type.id);
    if (w == 1) {
        vsize = (size_t)(len + 7) / 8;
        values = core_calloc(vsize + 1, 1);
        if (!values) rc = core_err_nomem();
        for (size_t i = 0; rc == 0 && i < n; i++)
            if (idx[i] >= 0 && arrow_bit_get(a->values, idx[i]))
                arrow_bit_set(values, (int64_t)i, true);
    } else if (w > 0) {
        size_t wb = (size_t)w / 8;
        vsize = n * wb;
        values = core_calloc(vsize ? vsize : 1, 1);
        if (!values) rc = core_err_nomem();
        for (size_t i = 0; rc == 0 && i < n; i++)
            if (idx[i] >= 0)
                memcpy((uint8_t *)values + i * wb, (const uint8_t *)a->values + (size_t)idx[i] * wb,
                       wb);
    } else if (arrow_type_is_binary_like(a->type.id)) {
        bool large = arrow_type_is_large(a->type.id);
        offsets = core_malloc((n + 1) * (large ? 8 : 4));
        if (!offsets) rc = core_err_nomem();
        size_t total = 0;
        for (size_t i = 0; rc == 0 && i < n; i++) {
            size_t l = 0;
            if (idx[i] >= 0) arrow_array_get_bytes(a, idx[i], &l);
            total += l;
        }
        if (rc == 0 && !large && total > INT32_MAX)
            rc = core_err(OG_E_RESOURCE_LIMIT, "take result exceeds 2^31 bytes");
        if (rc == 0 && !(values = core_malloc(total ? total : 1))) rc = core_err_nomem();
        size_t pos = 0;
        for (size_t i = 0; rc == 0 && i <= n; i++) {
            if (large)
                ((int64_t *)offsets)[i] = (int64_t)pos;
            else
                ((int32_t *)offsets)[i] = (int32_t)pos;
            if (i == n || idx[i] < 0) continue;
            size_t l;
            const uint8_t *p = arrow_array_get_bytes(a, idx[i], &l);
            if (l) /* a null or empty value may have no bytes at all (p == NULL) */
                memcpy((uint8_t *)values + pos, p, l);
            pos += l;
        }
        vsize = total;
    } else if (a->type.id == ARROW_LIST || a->type.id == ARROW_FIXED_SIZE_LIST) {
        size_t total = 0;
        for (size_t i = 0; i < n; i++) {
            if (idx[i] < 0) {
                if (a->type.id == ARROW_FIXED_SIZE_LIST) total += (size_t)a->type.list_size;
                continue;
            }
            int64_t s, e;
            arrow_array_list_range(a, idx[i], &s, &e);
            total += (size_t)(e - s);
        }
        if (a->type.id == ARROW_LIST && total > INT32_MAX)
            rc = core_err(OG_E_RESOURCE_LIMIT, "take result exceeds 2^31 list items");
        int64_t *cidx = rc ? NULL : core_malloc((total ? total : 1) * sizeof *cidx);
        if (rc == 0 && !cidx) rc = core_err_nomem();
        if (rc == 0 && a->type.id == ARROW_LIST) {
            offsets = core_malloc((n + 1) * 4);
            if (!offsets) rc = core_err_nomem();
        }
        size_t pos = 0;
        for (size_t i = 0; rc == 0 && i < n; i++) {
            if (offsets) ((int32_t *)offsets)[i] = (int32_t)pos;
            if (idx[i] < 0) {
                if (a->type.id == ARROW_FIXED_SIZE_LIST)
                    for (int32_t k = 0; k < a->type.list_size; k++)
                        cidx[pos++] = -1;
                continue;
            }
            int64_t s, e;
            arrow_array_list_range(a, idx[i], &s, &e);
            for (int64_t k = s; k < e; k++)
                cidx[pos++] = k;
        }
        if (rc == 0 && offsets) ((int32_t *)offsets)[n] = (int32_t)pos;
        if (rc == 0) {
            kids = core_calloc(1, sizeof *kids);
            if (!kids)
                rc = core_err_nomem();
            else
                rc = take_rec(&kids[0], a->children[0], cidx, total);
            n_kids = 1;
        }
        core_free(cidx);
    } else if (a->type.id == ARROW_STRUCT) {
        rc = take_children(&kids, a, idx, n);
        n_kids = a->n_children;
    }
    if (rc) {
        core_free(validity);
        core_free(offsets);
        core_free(values);
        for (size_t k = 0; kids && k < n_kids; k++)
            arrow_array_free(kids[k]);
        core_free(kids);
        return rc;
    }
    if (n_kids == 0) {
        core_free(kids);
        kids = NULL;
    }
    return arrow_array_make(out, &a->type, len, nulls, validity, offsets, values, vsize, kids,
                            n_kids);
}

int arrow_take(arrow_array **out, const arrow_array *a, const int64_t *idx, size_t n)
{
    return take_rec(out, a, idx, n);
}

static int mask_indices(int64_t **idx_out, size_t *n_out, const arrow_array *mask, int64_t len)
{
    if (mask->type.id != ARROW_BOOL)
        return core_err(OG_E_BAD_REQUEST, "filter mask must be a bool array");
    if (mask->length != len)
        return core_err(OG_E_BAD_REQUEST, "filter mask has %" PRId64 " rows, array %" PRId64,
                        mask->length, len);
    size_t n = 0;
    for (int64_t i = 0; i < len; i++)
        n += arrow_array_is_valid(mask, i) && arrow_bit_get(mask->values, i);
    int64_t *idx = core_malloc((n ? n : 1) * sizeof *idx);
    if (!idx) return core_err_nomem();
    size_t k = 0;
    for (int64_t i = 0; i < len; i++)
        if (arrow_array_is_valid(mask, i) && arrow_bit_get(mask->values, i)) idx[k++] = i;
    *idx_out = idx;
    *n_out = n;
    return 0;
}

int arrow_filter(arrow_array **out, const arrow_array *a, const arrow_array *mask)
{
    *out = NULL;
    int64_t *idx;
    size_t n;
    int rc = mask_indices(&idx, &n, mask, a->length);
    if (rc) return rc;
    rc = take_rec(out, a, idx, n);
    core_free(idx);
    return rc;
}

int arrow_batch_take(arrow_batch **out, const arrow_batch *b, const int64_t *idx, size_t n)
{
    *out = NULL;
    arrow_array **cols = core_calloc(b->n_columns ? b->n_columns : 1, sizeof *cols);
    if (!cols) return core_err_nomem();
    int rc = 0;
    for (size_t k = 0; k < b->n_columns && rc == 0; k++) {
        rc = take_rec(&cols[k], b->columns[k], idx, n);
        if (rc == 0 && !b->schema.fields[k].nullable && cols[k]->null_count)
            rc = core_err(OG_E_BAD_REQUEST, "take of -1 into non-nullable column %s",
                          b->schema.fields[k].name);
    }
    if (rc == 0) rc = arrow_batch_new(out, &b->schema, cols, b->n_columns);
    if (rc == 0) (*out)->num_rows = (int64_t)n;
    for (size_t k = 0; k < b->n_columns; k++)
        arrow_array_free(cols[k]);
    core_free(cols);
    return rc;
}

int arrow_batch_filter(arrow_batch **out, const arrow_batch *b, const arrow_array *mask)
{
    *out = NULL;
    int64_t *idx;
    size_t n;
    int rc = mask_indices(&idx, &n, mask, b->num_rows);
    if (rc) return rc;
    rc = arrow_batch_take(out, b, idx, n);
    core_free(idx);
    return rc;
}

/* ---- Compare ----------------------------------------------------------------------------- */

static int cmp_double(double x, double y)
{
    bool xn = isnan(x), yn = isnan(y);
    if (xn || yn) return xn == yn ? 0 : (xn ? 1 : -1);
    return x < y ? -1 : (x > y ? 1 : 0); /* -0.0 == 0.0 */
}

static int cmp_bytes(const uint8_t *p, size_t n, const uint8_t *q, size_t m)
{
    size_t k = n < m ? n : m;
    int c = k ? memcmp(p, q, k) : 0;
    if (c) return c < 0 ? -1 : 1;
    return n < m ? -1 : (n > m ? 1 : 0);
}

static bool is_unsigned(arrow_type_id id)
{
    return id == ARROW_UINT32 || id == ARROW_UINT64;
}

int arrow_compare_rows(const arrow_array *a, int64_t i, const arrow_array *b, int64_t j)
{
    bool va = arrow_array_is_valid(a, i), vb = arrow_array_is_valid(b, j);
    if (!va || !vb) return va == vb ? 0 : (va ? 1 : -1);
    switch (a->type.id) {
    case ARROW_BOOL:
        return (int)arrow_bit_get(a->values, i) - (int)arrow_bit_get(b->values, j);
    case ARROW_FLOAT32:
    case ARROW_FLOAT64:
        return cmp_double(arrow_array_get_double(a, i), arrow_array_get_double(b, j));
    case ARROW_UINT64: {
        uint64_t x = arrow_array_get_uint(a, i), y = arrow_array_get_uint(b, j);
        return x < y ? -1 : (x > y ? 1 : 0);
    }
    case ARROW_INT32:
    case ARROW_INT64:
    case ARROW_UINT32:
    case ARROW_DATE32:
    case ARROW_DATE64:
    case ARROW_TIMESTAMP: {
        int64_t x = arrow_array_get_int(a, i), y = arrow_array_get_int(b, j);
        return x < y ? -1 : (x > y ? 1 : 0);
    }
    case ARROW_UTF8:
    case ARROW_LARGE_UTF8:
    case ARROW_BINARY:
    case ARROW_LARGE_BINARY: {
        size_t n, m;
        const uint8_t *p = arrow_array_get_bytes(a, i, &n);
        const uint8_t *q = arrow_array_get_bytes(b, j, &m);
        return cmp_bytes(p, n, q, m);
    }
    case ARROW_LIST:
    case ARROW_FIXED_SIZE_LIST: {
        int64_t s1, e1, s2, e2;
        arrow_array_list_range(a, i, &s1, &e1);
        arrow_array_list_range(b, j, &s2, &e2);
        for (; s1 < e1 && s2 < e2; s1++, s2++) {
            int c = arrow_compare_rows(a->children[0], s1, b->children[0], s2);
            if (c) return c;
        }
        return (e1 - s1) < (e2 - s2) ? -1 : ((e1 - s1) > (e2 - s2) ? 1 : 0);
    }
    case ARROW_STRUCT:
        for (size_t k = 0; k < a->n_children && k < b->n_children; k++) {
            int c = arrow_compare_rows(a->children[k], i, b->children[k], j);
            if (c) return c;
        }
        return 0;
    default:
        return 0;
    }
}

static bool op_holds(arrow_cmp_op op, int c)
{
    switch (op) {
    case ARROW_CMP_EQ:
        return c == 0;
    case ARROW_CMP_NE:
        return c != 0;
    case ARROW_CMP_LT:
        return c < 0;
    case ARROW_CMP_LE:
        return c <= 0;
    case ARROW_CMP_GT:
        return c > 0;
    case ARROW_CMP_GE:
        return c >= 0;
    }
    return false;
}

/* Compare row i of a with a scalar, both valid. */
static int cmp_scalar_row(const arrow_array *a, int64_t i, const arrow_scalar *s)
{
    arrow_type_id t = a->type.id;
    if (t == ARROW_FLOAT32 || t == ARROW_FLOAT64) {
        double y = s->kind == ARROW_FLOAT64  ? s->d
                   : s->kind == ARROW_UINT64 ? (double)s->u
                                             : (double)s->i;
        return cmp_double(arrow_array_get_double(a, i), y);
    }
    if (t == ARROW_BOOL) return (int)arrow_bit_get(a->values, i) - (int)s->b;
    if (arrow_type_is_binary_like(t)) {
        size_t n;
        const uint8_t *p = arrow_array_get_bytes(a, i, &n);
        return cmp_bytes(p, n, s->bytes, s->n_bytes);
    }
    if (s->kind == ARROW_FLOAT64) {
        double x =
            is_unsigned(t) ? (double)arrow_array_get_uint(a, i) : (double)arrow_array_get_int(a, i);
        return cmp_double(x, s->d);
    }
    if (t == ARROW_UINT64) {
        uint64_t x = arrow_array_get_uint(a, i);
        if (s->kind == ARROW_INT64 && s->i < 0) return 1;
        uint64_t y = s->kind == ARROW_UINT64 ? s->u : (uint64_t)s->i;
        return x < y ? -1 : (x > y ? 1 : 0);
    }
    int64_t x = arrow_array_get_int(a, i);
    if (s->kind == ARROW_UINT64) {
        if (x < 0 || s->u > INT64_MAX) return -1;
        int64_t y = (int64_t)s->u;
        return x < y ? -1 : (x > y ? 1 : 0);
    }
    return x < s->i ? -1 : (x > s->i ? 1 : 0);
}

static bool scalar_fits(arrow_type_id t, const arrow_scalar *s)
{
    if (s->is_null) return true;
    if (t == ARROW_BOOL) return s->kind == ARROW_BOOL;
    if (arrow_type_is_binary_like(t)) return s->kind == ARROW_BINARY || s->kind == ARROW_UTF8;
    if (arrow_type_bit_width(t) > 1)
        return s->kind == ARROW_INT64 || s->kind == ARROW_UINT64 || s->kind == ARROW_FLOAT64;
    return false;
}

static int new_bool_out(arrow_array **out, int64_t len, uint8_t **validity, uint8_t **values)
{
    *validity = core_calloc((size_t)(len + 7) / 8 + 1, 1);
    *values = core_calloc((size_t)(len + 7) / 8 + 1, 1);
    if (!*validity || !*values) {
        core_free(*validity);
        core_free(*values);
        return core_err_nomem();
    }
    (void)out;
    return 0;
}

int arrow_compare_scalar(arrow_array **out, const arrow_array *a, arrow_cmp_op op,
                         const arrow_scalar *s)
{
    *out = NULL;
    if (!scalar_fits(a->type.id, s)) {
        char tn[96];
        arrow_type_describe(&a->type, tn, sizeof tn);
        return core_err(OG_E_BAD_REQUEST, "cannot compare a %s column with this scalar", tn);
    }
    uint8_t *validity, *values;
    int rc = new_bool_out(out, a->length, &validity, &values);
    if (rc) return rc;
    int64_t nulls = 0;
    for (int64_t i = 0; i < a->length; i++) {
        if (s->is_null || !arrow_array_is_valid(a, i)) {
            nulls++;
            continue;
        }
        arrow_bit_set(validity, i, true);
        if (op_holds(op, cmp_scalar_row(a, i, s))) arrow_bit_set(values, i, true);
    }
    arrow_type bt = arrow_type_simple(ARROW_BOOL);
    return arrow_array_make(out, &bt, a->length, nulls, validity, NULL, values,
                            (size_t)(a->length + 7) / 8, NULL, 0);
}

int arrow_compare(arrow_array **out, const arrow_array *a, arrow_cmp_op op, const arrow_array *b)
{
    *out = NULL;
    if (!arrow_type_equal(&a->type, &b->type) || a->length != b->length)
        return core_err(OG_E_BAD_REQUEST,
                        "elementwise compare needs two arrays of one type and length");
    uint8_t *validity, *values;
    int rc = new_bool_out(out, a->length, &validity, &values);
    if (rc) return rc;
    int64_t nulls = 0;
    for (int64_t i = 0; i < a->length; i++) {
        if (!arrow_array_is_valid(a, i) || !arrow_array_is_valid(b, i)) {
            nulls++;
            continue;
        }
        arrow_bit_set(validity, i, true);
        if (op_holds(op, arrow_compare_rows(a, i, b, i))) arrow_bit_set(values, i, true);
    }
    arrow_type bt = arrow_type_simple(ARROW_BOOL);
    return arrow_array_make(out, &bt, a->length, nulls, validity, NULL, values,
                            (size_t)(a->length + 7) / 8, NULL, 0);
}

/* ---- Hash -------------------------------------------------------------------------------- */

#define HASH_NULL 0x9e3779b97f4a7c15ull
#define HASH_SEED 0x6f6d6e6967726170ull /* "omnigrap" */

static uint64_t mix(uint64_t h, uint64_t v)
{
    return core_hash64(&v, sizeof v, h ^ HASH_SEED);
}

static uint64_t hash_row(const arrow_array *a, int64_t i)
{
    if (!arrow_array_is_valid(a, i)) return HASH_NULL;
    switch (a->type.id) {
    case ARROW_BOOL: {
        uint64_t v = arrow_bit_get(a->values, i);
        return core_hash64(&v, 8, HASH_SEED);
    }
    case ARROW_FLOAT32:
    case ARROW_FLOAT64: {
        double d = arrow_array_get_double(a, i);
        if (d == 0) d = 0.0;   /* -0.0 and 0.0 compare equal */
        if (isnan(d)) d = NAN; /* one NaN */
        uint64_t bits;
        memcpy(&bits, &d, 8);
        return core_hash64(&bits, 8, HASH_SEED);
    }
    case ARROW_UTF8:
    case ARROW_LARGE_UTF8:
    case ARROW_BINARY:
    case ARROW_LARGE_BINARY: {
        size_t n;
        const uint8_t *p = arrow_array_get_bytes(a, i, &n);
        return core_hash64(p, n, HASH_SEED);
    }
    case ARROW_LIST:
    case ARROW_FIXED_SIZE_LIST: {
        int64_t s, e;
        arrow_array_list_range(a, i, &s, &e);
        uint64_t h = mix(HASH_SEED, (uint64_t)(e - s));
        for (int64_t k = s; k < e; k++)
            h = mix(h, hash_row(a->children[0], k));
        return h;
    }
    case ARROW_STRUCT: {
        uint64_t h = HASH_SEED;
        for (size_t k = 0; k < a->n_children; k++)
            h = mix(h, hash_row(a->children[k], i));
        return h;
    }
    case ARROW_UINT64: {
        uint64_t v = arrow_array_get_uint(a, i);
        return core_hash64(&v, 8, HASH_SEED);
    }
    default: {
        int64_t v = arrow_array_get_int(a, i);
        return core_hash64(&v, 8, HASH_SEED);
    }
    }
}

void arrow_hash_rows(const arrow_array *a, uint64_t *hashes, bool combine)
{
    for (int64_t i = 0; i < a->length; i++) {
        uint64_t h = hash_row(a, i);
        hashes[i] = combine ? mix(hashes[i], h) : h;
    }
}

/* ---- Sort -------------------------------------------------------------------------------- */

static int key_cmp(const arrow_sort_key *keys, size_t n_keys, int64_t x, int64_t y)
{
    for (size_t k = 0; k < n_keys; k++) {
        const arrow_array *c = keys[k].column;
        bool vx = arrow_array_is_valid(c, x), vy = arrow_array_is_valid(c, y);
        if (!vx || !vy) {
            if (vx == vy) continue;
            /* a null goes first iff nulls_first, whatever the direction */
            return (!vx) == keys[k].nulls_first ? -1 : 1;
        }
        int r = arrow_compare_rows(c, x, c, y);
        if (r) return keys[k].descending ? -r : r;
    }
    return 0;
}

int arrow_sort_indices(int64_t *out, const arrow_sort_key *keys, size_t n_keys, int64_t length)
{
    for (size_t k = 0; k < n_keys; k++)
        if (keys[k].column->length != length)
            return core_err(OG_E_BAD_REQUEST, "sort key %zu has %" PRId64 " rows, want %" PRId64, k,
                            keys[k].column->length, length);
    for (int64_t i = 0; i < length; i++)
        out[i] = i;
    if (length < 2 || n_keys == 0) return 0;
    int64_t *tmp = core_malloc((size_t)length * sizeof *tmp);
    if (!tmp) return core_err_nomem();
    /* bottom-up merge sort: stable, O(n log n) */
    int64_t *src = out, *dst = tmp;
    for (int64_t width = 1; width < length; width *= 2) {
        for (int64_t lo = 0; lo < length; lo += 2 * width) {
            int64_t mid = lo + width < length ? lo + width : length;
            int64_t hi = lo + 2 * width < length ? lo + 2 * width : length;
            int64_t p = lo, q = mid, o = lo;
            while (p < mid && q < hi)
                dst[o++] = key_cmp(keys, n_keys, src[q], src[p]) < 0 ? src[q++] : src[p++];
            while (p < mid)
                dst[o++] = src[p++];
            while (q < hi)
                dst[o++] = src[q++];
        }
        int64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != out) memcpy(out, src, (size_t)length * sizeof *out);
    core_free(tmp);
    return 0;
}

/* ---- Byte-comparable sort keys ------------------------------------------------------------ */

static int put_be64(core_buf *b, uint64_t v)
{
    uint8_t x[8];
    for (int i = 0; i < 8; i++)
        x[i] = (uint8_t)(v >> (56 - 8 * i));
    return core_buf_append(b, x, 8);
}

/* Ascending, prefix-free encoding of a valid value (nested nulls sort first, as in
 * arrow_compare_rows). */
static int encode_value(core_buf *b, const arrow_array *a, int64_t i, int depth);

static int encode_slot(core_buf *b, const arrow_array *a, int64_t i, int depth)
{
    if (!arrow_array_is_valid(a, i)) return core_buf_append_byte(b, 0x00);
    int rc = core_buf_append_byte(b, 0x01);
    return rc ? rc : encode_value(b, a, i, depth + 1);
}

static int encode_value(core_buf *b, const arrow_array *a, int64_t i, int depth)
{
    if (depth > 64) return core_err(OG_E_BAD_REQUEST, "sort key nested too deeply");
    switch (a->type.id) {
    case ARROW_BOOL:
        return core_buf_append_byte(b, arrow_bit_get(a->values, i) ? 1 : 0);
    case ARROW_FLOAT32:
    case ARROW_FLOAT64: {
        double d = arrow_array_get_double(a, i);
        if (d == 0) d = 0.0;
        if (isnan(d)) d = NAN;
        uint64_t bits;
        memcpy(&bits, &d, 8);
        if (isnan(d)) bits = 0x7ff8000000000000ull; /* one NaN, above +inf */
        bits = (bits >> 63) ? ~bits : bits ^ (1ull << 63);
        return put_be64(b, bits);
    }
    case ARROW_UINT32:
    case ARROW_UINT64:
        return put_be64(b, arrow_array_get_uint(a, i));
    case ARROW_UTF8:
    case ARROW_LARGE_UTF8:
    case ARROW_BINARY:
    case ARROW_LARGE_BINARY: {
        size_t n;
        const uint8_t *p = arrow_array_get_bytes(a, i, &n);
        /* 0x00 escapes to 00 ff; the terminator is 00 00 */
        for (size_t k = 0; k < n; k++) {
            int rc = core_buf_append_byte(b, p[k]);
            if (rc == 0 && p[k] == 0) rc = core_buf_append_byte(b, 0xff);
            if (rc) return rc;
        }
        return core_buf_append(b, "\0\0", 2);
    }
    case ARROW_LIST:
    case ARROW_FIXED_SIZE_LIST: {
        int64_t s, e;
        arrow_array_list_range(a, i, &s, &e);
        for (int64_t k = s; k < e; k++) {
            int rc = core_buf_append_byte(b, 0x01);
            if (rc == 0) rc = encode_slot(b, a->children[0], k, depth);
            if (rc) return rc;
        }
        return core_buf_append_byte(b, 0x00);
    }
    case ARROW_STRUCT:
        for (size_t k = 0; k < a->n_children; k++) {
            int rc = encode_slot(b, a->children[k], i, depth);
            if (rc) return rc;
        }
        return 0;
    case ARROW_NA:
        return 0;
    default:
        return put_be64(b, (uint64_t)arrow_array_get_int(a, i) ^ (1ull << 63));
    }
}

int arrow_sort_keys_encode(uint8_t **data, size_t *offs, const arrow_sort_key *keys, size_t n_keys,
                           int64_t length)
{
    *data = NULL;
    for (size_t k = 0; k < n_keys; k++)
        if (keys[k].column->length != length)
            return core_err(OG_E_BAD_REQUEST, "sort key %zu has %" PRId64 " rows, want %" PRId64, k,
                            keys[k].column->length, length);
    core_buf b = CORE_BUF_INIT;
    int rc = 0;
    offs[0] = 0;
    for (int64_t i = 0; rc == 0 && i < length; i++) {
        for (size_t k = 0; rc == 0 && k < n_keys; k++) {
            const arrow_array *c = keys[k].column;
            if (!arrow_array_is_valid(c, i)) {
                rc = core_buf_append_byte(&b, keys[k].nulls_first ? 0x00 : 0x02);
                continue;
            }
            rc = core_buf_append_byte(&b, 0x01);
            size_t start = b.len;
            if (rc == 0) rc = encode_value(&b, c, i, 0);
            if (rc == 0 && keys[k].descending)
                for (size_t j = start; j < b.len; j++)
                    b.data[j] = (uint8_t)~b.data[j];
        }
        offs[i + 1] = b.len;
    }
    if (rc) {
        core_buf_free(&b);
        return rc;
    }
    if (!b.data) {
        b.data = core_malloc(1);
        if (!b.data) return core_err_nomem();
    }
    *data = b.data;
    return 0;
}
