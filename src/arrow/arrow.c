/* Arrow types, schemas, immutable reference-counted arrays and their builders, record batches.
 * Export/import lives in cdata.c, kernels in kernels.c. */
#include "arrow/arrow.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/error.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- Types ------------------------------------------------------------------------------- */

arrow_type arrow_type_simple(arrow_type_id id)
{
    arrow_type t;
    memset(&t, 0, sizeof t);
    t.id = id;
    return t;
}

int arrow_type_timestamp(arrow_type *out, arrow_time_unit unit, const char *tz)
{
    *out = arrow_type_simple(ARROW_TIMESTAMP);
    out->unit = unit;
    if (tz) {
        out->tz = core_strdup(tz);
        if (!out->tz) return core_err_nomem();
    }
    return 0;
}

static int type_with_children(arrow_type *out, arrow_type_id id, const arrow_field *f, size_t n)
{
    *out = arrow_type_simple(id);
    if (n == 0) return 0;
    out->children = core_calloc(n, sizeof *out->children);
    if (!out->children) return core_err_nomem();
    for (size_t i = 0; i < n; i++) {
        int rc = arrow_field_copy(&out->children[i], &f[i]);
        if (rc) {
            out->n_children = i;
            arrow_type_clear(out);
            return rc;
        }
    }
    out->n_children = n;
    return 0;
}

int arrow_type_list(arrow_type *out, const arrow_field *item)
{
    return type_with_children(out, ARROW_LIST, item, 1);
}

int arrow_type_fixed_size_list(arrow_type *out, const arrow_field *item, int32_t size)
{
    if (size <= 0) {
        *out = arrow_type_simple(ARROW_NA);
        return core_err(OG_E_BAD_REQUEST, "fixed-size list size must be positive, got %d",
                        (int)size);
    }
    int rc = type_with_children(out, ARROW_FIXED_SIZE_LIST, item, 1);
    if (rc == 0) out->list_size = size;
    return rc;
}

int arrow_type_struct(arrow_type *out, const arrow_field *fields, size_t n)
{
    return type_with_children(out, ARROW_STRUCT, fields, n);
}

int arrow_type_copy(arrow_type *out, const arrow_type *in)
{
    int rc = type_with_children(out, in->id, in->children, in->n_children);
    if (rc) return rc;
    out->unit = in->unit;
    out->list_size = in->list_size;
    if (in->tz) {
        out->tz = core_strdup(in->tz);
        if (!out->tz) {
            arrow_type_clear(out);
            return core_err_nomem();
        }
    }
    return 0;
}

void arrow_type_clear(arrow_type *t)
{
    if (!t) return;
    for (size_t i = 0; i < t->n_children; i++)
        arrow_field_clear(&t->children[i]);
    core_free(t->children);
    core_free(t->tz);
    *t = arrow_type_simple(ARROW_NA);
}

bool arrow_type_equal(const arrow_type *a, const arrow_type *b)
{
    if (a->id != b->id || a->n_children != b->n_children) return false;
    if (a->id == ARROW_TIMESTAMP) {
        if (a->unit != b->unit) return false;
        if ((a->tz == NULL) != (b->tz == NULL)) return false;
        if (a->tz && strcmp(a->tz, b->tz) != 0) return false;
    }
    if (a->id == ARROW_FIXED_SIZE_LIST && a->list_size != b->list_size) return false;
    for (size_t i = 0; i < a->n_children; i++) {
        const arrow_field *x = &a->children[i], *y = &b->children[i];
        if (a->id == ARROW_STRUCT && strcmp(x->name, y->name) != 0) return false;
        if (x->nullable != y->nullable) return false;
        if (!arrow_type_equal(&x->type, &y->type)) return false;
    }
    return true;
}

static const char *const type_names[ARROW_TYPE_COUNT] = {
    "null",    "bool",    "int32",     "int64",           "uint32", "uint64",
    "float32", "float64", "utf8",      "large_utf8",      "binary", "large_binary",
    "date32",  "date64",  "timestamp", "fixed_size_list", "list",   "struct"};

/* Append s to buf (capacity cap, *len bytes used), cutting it short at the capacity. */
static void describe_cat(char *buf, size_t cap, size_t *len, const char *s)
{
    size_t n = strlen(s);
    if (*len + 1 >= cap) return;
    if (n > cap - 1 - *len) n = cap - 1 - *len;
    memcpy(buf + *len, s, n);
    *len += n;
    buf[*len] = 0;
}

void arrow_type_describe(const arrow_type *t, char *buf, size_t cap)
{
    if (cap == 0) return;
    buf[0] = '\0';
    const char *name = (unsigned)t->id < ARROW_TYPE_COUNT ? type_names[t->id] : "?";
    static const char *const units[] = {"s", "ms", "us", "ns"};
    switch (t->id) {
    case ARROW_TIMESTAMP:
        snprintf(buf, cap, "timestamp[%s%s%s]", units[t->unit & 3], t->tz ? ", " : "",
                 t->tz ? t->tz : "");
        break;
    case ARROW_LIST:
    case ARROW_FIXED_SIZE_LIST: {
        char inner[128];
        if (t->n_children == 1)
            arrow_type_describe(&t->children[0].type, inner, sizeof inner);
        else
            snprintf(inner, sizeof inner, "?");
        /* Pieced together rather than one snprintf of a %s, which gcc -O3 flags as a possible
         * truncation: a description longer than cap is cut short, on purpose (it only names
         * a type in a message). */
        char tail[24] = ">";
        if (t->id != ARROW_LIST) snprintf(tail, sizeof tail, ", %d>", (int)t->list_size);
        size_t len = 0;
        if (cap) buf[0] = 0;
        describe_cat(buf, cap, &len, t->id == ARROW_LIST ? "list<" : "fixed_size_list<");
        describe_cat(buf, cap, &len, inner);
        describe_cat(buf, cap, &len, tail);
        break;
    }
    default:
        snprintf(buf, cap, "%s", name);
    }
}

int arrow_type_bit_width(arrow_type_id id)
{
    switch (id) {
    case ARROW_BOOL:
        return 1;
    case ARROW_INT32:
    case ARROW_UINT32:
    case ARROW_FLOAT32:
    case ARROW_DATE32:
        return 32;
    case ARROW_INT64:
    case ARROW_UINT64:
    case ARROW_FLOAT64:
    case ARROW_DATE64:
    case ARROW_TIMESTAMP:
        return 64;
    default:
        return 0;
    }
}

bool arrow_type_is_binary_like(arrow_type_id id)
{
    return id == ARROW_UTF8 || id == ARROW_LARGE_UTF8 || id == ARROW_BINARY ||
           id == ARROW_LARGE_BINARY;
}

bool arrow_type_is_large(arrow_type_id id)
{
    return id == ARROW_LARGE_UTF8 || id == ARROW_LARGE_BINARY;
}

/* ---- Fields and schemas ------------------------------------------------------------------ */

int arrow_field_init(arrow_field *out, const char *name, const arrow_type *type, bool nullable)
{
    memset(out, 0, sizeof *out);
    out->name = core_strdup(name ? name : "");
    if (!out->name) return core_err_nomem();
    out->nullable = nullable;
    int rc = arrow_type_copy(&out->type, type);
    if (rc) {
        core_free(out->name);
        out->name = NULL;
    }
    return rc;
}

int arrow_field_copy(arrow_field *out, const arrow_field *in)
{
    return arrow_field_init(out, in->name, &in->type, in->nullable);
}

void arrow_field_clear(arrow_field *f)
{
    if (!f) return;
    core_free(f->name);
    f->name = NULL;
    arrow_type_clear(&f->type);
}

void arrow_schema_init(arrow_schema *s)
{
    s->n_fields = 0;
    s->fields = NULL;
}

int arrow_schema_add(arrow_schema *s, const arrow_field *f)
{
    arrow_field *nf = core_realloc(s->fields, (s->n_fields + 1) * sizeof *nf);
    if (!nf) return core_err_nomem();
    s->fields = nf;
    int rc = arrow_field_copy(&s->fields[s->n_fields], f);
    if (rc) return rc;
    s->n_fields++;
    return 0;
}

int arrow_schema_copy(arrow_schema *out, const arrow_schema *in)
{
    arrow_schema_init(out);
    if (in->n_fields == 0) return 0;
    out->fields = core_calloc(in->n_fields, sizeof *out->fields);
    if (!out->fields) return core_err_nomem();
    for (size_t i = 0; i < in->n_fields; i++) {
        int rc = arrow_field_copy(&out->fields[i], &in->fields[i]);
        if (rc) {
            arrow_schema_clear(out);
            return rc;
        }
        out->n_fields = i + 1;
    }
    return 0;
}

void arrow_schema_clear(arrow_schema *s)
{
    if (!s) return;
    for (size_t i = 0; i < s->n_fields; i++)
        arrow_field_clear(&s->fields[i]);
    core_free(s->fields);
    arrow_schema_init(s);
}

int arrow_schema_find(const arrow_schema *s, const char *name)
{
    for (size_t i = 0; i < s->n_fields; i++)
        if (strcmp(s->fields[i].name, name) == 0) return (int)i;
    return -1;
}

bool arrow_schema_equal(const arrow_schema *a, const arrow_schema *b)
{
    if (a->n_fields != b->n_fields) return false;
    for (size_t i = 0; i < a->n_fields; i++) {
        if (strcmp(a->fields[i].name, b->fields[i].name) != 0) return false;
        if (a->fields[i].nullable != b->fields[i].nullable) return false;
        if (!arrow_type_equal(&a->fields[i].type, &b->fields[i].type)) return false;
    }
    return true;
}

/* ---- Arrays ------------------------------------------------------------------------------ */

arrow_array *arrow_array_ref(arrow_array *a)
{
    if (a) atomic_fetch_add_explicit(&a->refs, 1, memory_order_relaxed);
    return a;
}

void arrow_array_free(arrow_array *a)
{
    if (!a) return;
    if (atomic_fetch_sub_explicit(&a->refs, 1, memory_order_acq_rel) != 1) return;
    for (size_t i = 0; i < a->n_children; i++)
        arrow_array_free(a->children[i]);
    core_free(a->children);
    core_free(a->validity);
    core_free(a->offsets);
    core_free(a->values);
    arrow_type_clear(&a->type);
    core_free(a);
}

int arrow_array_make(arrow_array **out, const arrow_type *type, int64_t length, int64_t null_count,
                     uint8_t *validity, void *offsets, void *values, size_t values_size,
                     arrow_array **children, size_t n_children)
{
    *out = NULL;
    arrow_array *a = core_calloc(1, sizeof *a);
    if (!a || arrow_type_copy(&a->type, type) != 0) {
        core_free(a);
        core_free(validity);
        core_free(offsets);
        core_free(values);
        for (size_t i = 0; i < n_children; i++)
            arrow_array_free(children[i]);
        core_free(children);
        return core_err_nomem();
    }
    atomic_init(&a->refs, 1);
    a->length = length;
    a->null_count = null_count;
    if (null_count == 0) {
        core_free(validity);
        validity = NULL;
    }
    a->validity = validity;
    a->offsets = offsets;
    a->values = values;
    a->values_size = values_size;
    a->children = children;
    a->n_children = n_children;
    *out = a;
    return 0;
}

int64_t arrow_array_get_int(const arrow_array *a, int64_t i)
{
    switch (a->type.id) {
    case ARROW_INT32:
    case ARROW_DATE32:
        return ((const int32_t *)a->values)[i];
    case ARROW_UINT32:
        return ((const uint32_t *)a->values)[i];
    case ARROW_INT64:
    case ARROW_DATE64:
    case ARROW_TIMESTAMP:
        return ((const int64_t *)a->values)[i];
    case ARROW_UINT64:
        return (int64_t)((const uint64_t *)a->values)[i];
    case ARROW_BOOL:
        return arrow_bit_get(a->values, i);
    default:
        return 0;
    }
}

uint64_t arrow_array_get_uint(const arrow_array *a, int64_t i)
{
    if (a->type.id == ARROW_UINT64) return ((const uint64_t *)a->values)[i];
    if (a->type.id == ARROW_UINT32) return ((const uint32_t *)a->values)[i];
    return (uint64_t)arrow_array_get_int(a, i);
}

double arrow_array_get_double(const arrow_array *a, int64_t i)
{
    if (a->type.id == ARROW_FLOAT32) return ((const float *)a->values)[i];
    if (a->type.id == ARROW_FLOAT64) return ((const double *)a->values)[i];
    return (double)arrow_array_get_int(a, i);
}

bool arrow_array_get_bool(const arrow_array *a, int64_t i)
{
    return arrow_bit_get(a->values, i);
}

const uint8_t *arrow_array_get_bytes(const arrow_array *a, int64_t i, size_t *len)
{
    int64_t s, e;
    if (arrow_type_is_large(a->type.id)) {
        s = ((const int64_t *)a->offsets)[i];
        e = ((const int64_t *)a->offsets)[i + 1];
    } else {
        s = ((const int32_t *)a->offsets)[i];
        e = ((const int32_t *)a->offsets)[i + 1];
    }
    *len = (size_t)(e - s);
    return (const uint8_t *)a->values + s;
}

void arrow_array_list_range(const arrow_array *a, int64_t i, int64_t *start, int64_t *end)
{
    if (a->type.id == ARROW_FIXED_SIZE_LIST) {
        *start = i * a->type.list_size;
        *end = *start + a->type.list_size;
        return;
    }
    *start = ((const int32_t *)a->offsets)[i];
    *end = ((const int32_t *)a->offsets)[i + 1];
}

int arrow_array_new_null(arrow_array **out, const arrow_type *type, int64_t length)
{
    *out = NULL;
    if (length < 0 || length > INT64_MAX / 16)
        return core_err(OG_E_BAD_REQUEST, "null array of %" PRId64 " rows", length);
    if (type->id == ARROW_NA)
        return arrow_array_make(out, type, length, length, NULL, NULL, NULL, 0, NULL, 0);
    /* every buffer zero: validity all null, values zero, offsets all zero (empty rows) */
    size_t bits = (size_t)(length + 7) / 8 + 1;
    uint8_t *validity = core_calloc(bits, 1);
    void *offsets = NULL, *values = NULL;
    size_t vsize = 0;
    int w = arrow_type_bit_width(type->id);
    int rc = validity ? 0 : core_err_nomem();
    if (rc == 0 && w > 0) {
        vsize = w == 1 ? (size_t)(length + 7) / 8 : (size_t)length * (size_t)(w / 8);
        if (!(values = core_calloc(vsize + 1, 1))) rc = core_err_nomem();
    }
    if (rc == 0 && (arrow_type_is_binary_like(type->id) || type->id == ARROW_LIST)) {
        offsets = core_calloc((size_t)length + 1, arrow_type_is_large(type->id) ? 8 : 4);
        if (!offsets) rc = core_err_nomem();
    }
    arrow_array **kids = NULL;
    size_t nk = 0;
    if (rc == 0 && type->n_children) {
        nk = type->n_children;
        kids = core_calloc(nk, sizeof *kids);
        if (!kids) rc = core_err_nomem();
        int64_t child_len = type->id == ARROW_LIST              ? 0
                            : type->id == ARROW_FIXED_SIZE_LIST ? length * type->list_size
                                                                : length;
        for (size_t k = 0; rc == 0 && k < nk; k++)
            rc = arrow_array_new_null(&kids[k], &type->children[k].type, child_len);
    }
    if (rc) {
        core_free(validity);
        core_free(values);
        core_free(offsets);
        for (size_t k = 0; kids && k < nk; k++)
            arrow_array_free(kids[k]);
        core_free(kids);
        return rc;
    }
    return arrow_array_make(out, type, length, length, validity, offsets, values, vsize, kids, nk);
}

static void copy_bits_to(uint8_t *dst, int64_t at, const uint8_t *src, int64_t n)
{
    if (at % 8 == 0) {
        memcpy(dst + at / 8, src, (size_t)(n + 7) / 8);
        if (n % 8) dst[(at + n) / 8] &= (uint8_t)((1u << ((at + n) % 8)) - 1);
        return;
    }
    for (int64_t i = 0; i < n; i++)
        if (arrow_bit_get(src, i)) dst[(at + i) >> 3] |= (uint8_t)(1u << ((at + i) & 7));
}

/* Concatenation by buffers: validity bits, values, rebased offsets, children recursively. */
static int concat_rec(arrow_array **out, arrow_array *const *parts, size_t n)
{
    const arrow_type *t = &parts[0]->type;
    int64_t len = 0, nulls = 0;
    size_t vbytes = 0;
    for (size_t k = 0; k < n; k++) {
        if (parts[k]->length > INT64_MAX / 2 - len)
            return core_err(OG_E_RESOURCE_LIMIT, "concatenation too long");
        len += parts[k]->length;
        nulls += parts[k]->null_count;
        if (core_size_add(&vbytes, vbytes, parts[k]->values_size) != 0)
            return core_err(OG_E_RESOURCE_LIMIT, "concatenation too large");
    }
    if (t->id == ARROW_NA) return arrow_array_make(out, t, len, len, NULL, NULL, NULL, 0, NULL, 0);
    uint8_t *validity = NULL;
    void *offsets = NULL, *values = NULL;
    size_t vsize = 0;
    arrow_array **kids = NULL;
    size_t nk = 0;
    int rc = 0;
    if (nulls) {
        validity = core_calloc((size_t)(len + 7) / 8 + 1, 1);
        if (!validity) return core_err_nomem();
        int64_t at = 0;
        for (size_t k = 0; k < n; k++) {
            const arrow_array *p = parts[k];
            if (p->validity)
                copy_bits_to(validity, at, p->validity, p->length);
            else
                for (int64_t i = 0; i < p->length; i++)
                    arrow_bit_set(validity, at + i, true);
            at += p->length;
        }
    }
    int w = arrow_type_bit_width(t->id);
    if (w == 1) {
        vsize = (size_t)(len + 7) / 8;
        values = core_calloc(vsize + 1, 1);
        if (!values) rc = core_err_nomem();
        int64_t at = 0;
        for (size_t k = 0; rc == 0 && k < n; k++) {
            if (parts[k]->length) copy_bits_to(values, at, parts[k]->values, parts[k]->length);
            at += parts[k]->length;
        }
    } else if (w > 0) {
        size_t wb = (size_t)w / 8;
        vsize = (size_t)len * wb;
        values = core_malloc(vsize ? vsize : 1);
        if (!values) rc = core_err_nomem();
        size_t at = 0;
        for (size_t k = 0; rc == 0 && k < n; k++) {
            size_t b = (size_t)parts[k]->length * wb;
            if (b) memcpy((uint8_t *)values + at, parts[k]->values, b);
            at += b;
        }
    } else if (arrow_type_is_binary_like(t->id) || t->id == ARROW_LIST) {
        bool large = arrow_type_is_large(t->id);
        int64_t total = 0;
        for (size_t k = 0; k < n; k++) {
            int64_t s = 0, e = 0;
            if (parts[k]->length) {
                s = large ? ((const int64_t *)parts[k]->offsets)[0]
                          : ((const int32_t *)parts[k]->offsets)[0];
                e = large ? ((const int64_t *)parts[k]->offsets)[parts[k]->length]
                          : ((const int32_t *)parts[k]->offsets)[parts[k]->length];
            }
            total += e - s;
        }
        if (!large && total > INT32_MAX)
            rc = core_err(OG_E_RESOURCE_LIMIT, "concatenation exceeds 2^31 bytes or items");
        if (rc == 0 && !(offsets = core_malloc((size_t)(len + 1) * (large ? 8 : 4))))
            rc = core_err_nomem();
        if (rc == 0 && t->id != ARROW_LIST) {
            vsize = (size_t)total;
            if (!(values = core_malloc(vsize ? vsize : 1))) rc = core_err_nomem();
        }
        int64_t row = 0, base = 0;
        if (rc == 0) {
            if (large)
                ((int64_t *)offsets)[0] = 0;
            else
                ((int32_t *)offsets)[0] = 0;
        }
        for (size_t k = 0; rc == 0 && k < n; k++) {
            const arrow_array *p = parts[k];
            if (!p->length) continue;
            int64_t s = large ? ((const int64_t *)p->offsets)[0] : ((const int32_t *)p->offsets)[0];
            for (int64_t i = 1; i <= p->length; i++) {
                int64_t o =
                    large ? ((const int64_t *)p->offsets)[i] : ((const int32_t *)p->offsets)[i];
                if (large)
                    ((int64_t *)offsets)[row + i] = base + o - s;
                else
                    ((int32_t *)offsets)[row + i] = (int32_t)(base + o - s);
            }
            int64_t e = large ? ((const int64_t *)p->offsets)[p->length]
                              : ((const int32_t *)p->offsets)[p->length];
            if (t->id != ARROW_LIST && e > s)
                memcpy((uint8_t *)values + base, (const uint8_t *)p->values + s, (size_t)(e - s));
            row += p->length;
            base += e - s;
        }
        if (rc == 0 && t->id == ARROW_LIST) {
            /* list items: each part's item range [first offset, last offset) */
            arrow_array **items = core_calloc(n, sizeof *items);
            if (!items) rc = core_err_nomem();
            for (size_t k = 0; rc == 0 && k < n; k++) {
                const arrow_array *p = parts[k];
                int64_t s = p->length ? ((const int32_t *)p->offsets)[0] : 0;
                int64_t e = p->length ? ((const int32_t *)p->offsets)[p->length] : 0;
                if (s == 0 && e == p->children[0]->length) {
                    items[k] = arrow_array_ref(p->children[0]);
                } else {
                    int64_t *idx = core_malloc((size_t)(e - s) * sizeof *idx + 8);
                    if (!idx) {
                        rc = core_err_nomem();
                        break;
                    }
                    for (int64_t i = s; i < e; i++)
                        idx[i - s] = i;
                    rc = arrow_take(&items[k], p->children[0], idx, (size_t)(e - s));
                    core_free(idx);
                }
            }
            if (rc == 0) {
                kids = core_calloc(1, sizeof *kids);
                if (!kids)
                    rc = core_err_nomem();
                else
                    rc = concat_rec(&kids[0], items, n);
                nk = 1;
            }
            for (size_t k = 0; items && k < n; k++)
                arrow_array_free(items[k]);
            core_free(items);
        }
    } else if (t->id == ARROW_FIXED_SIZE_LIST || t->id == ARROW_STRUCT) {
        nk = parts[0]->n_children;
        kids = core_calloc(nk ? nk : 1, sizeof *kids);
        arrow_array **col = core_calloc(n, sizeof *col);
        if (!kids || !col) rc = core_err_nomem();
        for (size_t c = 0; rc == 0 && c < nk; c++) {
            for (size_t k = 0; k < n; k++)
                col[k] = parts[k]->children[c];
            rc = concat_rec(&kids[c], col, n);
        }
        core_free(col);
    }
    if (rc) {
        core_free(validity);
        core_free(offsets);
        core_free(values);
        for (size_t k = 0; kids && k < nk; k++)
            arrow_array_free(kids[k]);
        core_free(kids);
        return rc;
    }
    if (nk == 0) {
        core_free(kids);
        kids = NULL;
    }
    return arrow_array_make(out, t, len, nulls, validity, offsets, values, vsize, kids, nk);
}

int arrow_array_concat(arrow_array **out, arrow_array *const *parts, size_t n)
{
    *out = NULL;
    if (n == 0) return core_err(OG_E_BAD_REQUEST, "concat of no arrays");
    for (size_t k = 1; k < n; k++)
        if (!arrow_type_equal(&parts[k]->type, &parts[0]->type))
            return core_err(OG_E_BAD_REQUEST, "concat of arrays of different types");
    if (n == 1) {
        *out = arrow_array_ref(parts[0]);
        return 0;
    }
    return concat_rec(out, parts, n);
}

bool arrow_array_equal(const arrow_array *a, const arrow_array *b)
{
    if (!arrow_type_equal(&a->type, &b->type) || a->length != b->length) return false;
    if (a->null_count != b->null_count) return false;
    for (int64_t i = 0; i < a->length; i++) {
        if (arrow_array_is_valid(a, i) != arrow_array_is_valid(b, i)) return false;
        if (arrow_compare_rows(a, i, b, i) != 0) return false;
    }
    return true;
}

static int64_t count_nulls(const uint8_t *validity, int64_t n)
{
    if (!validity) return 0;
    int64_t nulls = 0;
    for (int64_t i = 0; i < n; i++)
        nulls += !arrow_bit_get(validity, i);
    return nulls;
}

int arrow_array_validate(const arrow_array *a)
{
    char tn[96];
    arrow_type_describe(&a->type, tn, sizeof tn);
    if (a->length < 0) return core_err(OG_E_CORRUPT, "%s array has negative length", tn);
    if (a->type.id == ARROW_NA) {
        if (a->null_count != a->length)
            return core_err(OG_E_CORRUPT, "null array with null_count != length");
        return 0;
    }
    if (a->null_count != count_nulls(a->validity, a->length))
        return core_err(OG_E_CORRUPT, "%s array null_count disagrees with its validity", tn);
    int w = arrow_type_bit_width(a->type.id);
    if (w > 0) {
        size_t need = w == 1 ? (size_t)(a->length + 7) / 8 : (size_t)a->length * (size_t)(w / 8);
        if (a->values_size < need || (need && !a->values))
            return core_err(OG_E_CORRUPT, "%s array values buffer too small", tn);
        return 0;
    }
    if (arrow_type_is_binary_like(a->type.id) || a->type.id == ARROW_LIST) {
        bool large = arrow_type_is_large(a->type.id);
        int64_t prev = 0;
        for (int64_t i = 0; i <= a->length; i++) {
            int64_t o = large ? ((const int64_t *)a->offsets)[i] : ((const int32_t *)a->offsets)[i];
            if ((i == 0 && o != 0) || o < prev)
                return core_err(OG_E_CORRUPT, "%s array offsets not monotone at %" PRId64, tn, i);
            prev = o;
        }
        if (a->type.id == ARROW_LIST) {
            if (a->n_children != 1 || a->children[0]->length != prev)
                return core_err(OG_E_CORRUPT,
                                "list array offsets end %" PRId64 " but items have another length",
                                prev);
            return arrow_array_validate(a->children[0]);
        }
        if ((uint64_t)prev > a->values_size)
            return core_err(OG_E_CORRUPT, "%s array offsets beyond its bytes", tn);
        return 0;
    }
    if (a->type.id == ARROW_FIXED_SIZE_LIST) {
        if (a->n_children != 1 || a->children[0]->length != a->length * a->type.list_size)
            return core_err(OG_E_CORRUPT, "fixed-size list items length mismatch");
        return arrow_array_validate(a->children[0]);
    }
    if (a->type.id == ARROW_STRUCT) {
        if (a->n_children != a->type.n_children)
            return core_err(OG_E_CORRUPT, "struct array has wrong number of children");
        for (size_t k = 0; k < a->n_children; k++) {
            if (a->children[k]->length != a->length)
                return core_err(OG_E_CORRUPT, "struct child %zu length mismatch", k);
            int rc = arrow_array_validate(a->children[k]);
            if (rc) return rc;
        }
    }
    return 0;
}

/* ---- Builders ---------------------------------------------------------------------------- */

struct arrow_builder {
    arrow_type type;
    int64_t length;
    int64_t null_count;
    core_buf validity; /* bits for every row */
    core_buf offsets;  /* int32 or int64, length+1 entries */
    core_buf values;   /* fixed-width values, bool bits, or bytes */
    size_t n_children;
    arrow_builder **children;
};

static int bits_push(core_buf *b, int64_t i, bool v)
{
    size_t need = (size_t)(i >> 3) + 1;
    if (b->len < need) {
        int rc = core_buf_append_zeros(b, need - b->len); /* doubling growth inside */
        if (rc) return rc;
    }
    if (v) b->data[i >> 3] |= (uint8_t)(1u << (i & 7));
    return 0;
}

static int offsets_push(arrow_builder *b, int64_t v)
{
    if (arrow_type_is_large(b->type.id)) return core_buf_append(&b->offsets, &v, 8);
    if (v > INT32_MAX)
        return core_err(OG_E_RESOURCE_LIMIT, "array exceeds 2^31 bytes or items; use a large type");
    int32_t x = (int32_t)v;
    return core_buf_append(&b->offsets, &x, 4);
}

static int64_t offsets_last(const arrow_builder *b)
{
    if (arrow_type_is_large(b->type.id))
        return ((const int64_t *)b->offsets.data)[b->offsets.len / 8 - 1];
    return ((const int32_t *)b->offsets.data)[b->offsets.len / 4 - 1];
}

static bool has_offsets(arrow_type_id id)
{
    return arrow_type_is_binary_like(id) || id == ARROW_LIST;
}

static void builder_reset(arrow_builder *b)
{
    core_buf_free(&b->validity);
    core_buf_free(&b->offsets);
    core_buf_free(&b->values);
    b->length = 0;
    b->null_count = 0;
}

static int builder_start(arrow_builder *b)
{
    if (has_offsets(b->type.id)) return offsets_push(b, 0);
    return 0;
}

int arrow_builder_new(arrow_builder **out, const arrow_type *type)
{
    *out = NULL;
    arrow_builder *b = core_calloc(1, sizeof *b);
    if (!b) return core_err_nomem();
    int rc = arrow_type_copy(&b->type, type);
    if (rc) {
        core_free(b);
        return rc;
    }
    if (type->id == ARROW_LIST || type->id == ARROW_FIXED_SIZE_LIST || type->id == ARROW_STRUCT) {
        if ((type->id != ARROW_STRUCT && type->n_children != 1)) {
            arrow_builder_free(b);
            return core_err(OG_E_BAD_REQUEST, "list type needs exactly one item field");
        }
        if (type->n_children) {
            b->children = core_calloc(type->n_children, sizeof *b->children);
            if (!b->children) {
                arrow_builder_free(b);
                return core_err_nomem();
            }
        }
        b->n_children = type->n_children;
        for (size_t i = 0; i < type->n_children; i++) {
            rc = arrow_builder_new(&b->children[i], &type->children[i].type);
            if (rc) {
                arrow_builder_free(b);
                return rc;
            }
        }
    }
    rc = builder_start(b);
    if (rc) {
        arrow_builder_free(b);
        return rc;
    }
    *out = b;
    return 0;
}

void arrow_builder_free(arrow_builder *b)
{
    if (!b) return;
    for (size_t i = 0; i < b->n_children; i++)
        arrow_builder_free(b->children[i]);
    core_free(b->children);
    builder_reset(b);
    arrow_type_clear(&b->type);
    core_free(b);
}

arrow_builder *arrow_builder_child(arrow_builder *b, size_t i)
{
    return i < b->n_children ? b->children[i] : NULL;
}

int64_t arrow_builder_length(const arrow_builder *b)
{
    return b->length;
}

int arrow_builder_reserve(arrow_builder *b, int64_t rows)
{
    if (rows <= 0) return 0;
    int rc = core_buf_reserve(&b->validity, (size_t)rows / 8 + 1);
    int w = arrow_type_bit_width(b->type.id);
    if (rc == 0 && w > 1) rc = core_buf_reserve(&b->values, (size_t)rows * (size_t)(w / 8));
    if (rc == 0 && has_offsets(b->type.id))
        rc =
            core_buf_reserve(&b->offsets, (size_t)rows * (arrow_type_is_large(b->type.id) ? 8 : 4));
    return rc;
}

/* Record row validity and bump the length. */
static int row_done(arrow_builder *b, bool valid)
{
    int rc = bits_push(&b->validity, b->length, valid);
    if (rc) return rc;
    if (!valid) b->null_count++;
    b->length++;
    return 0;
}

static int type_mismatch(const arrow_builder *b, const char *what)
{
    char tn[96];
    arrow_type_describe(&b->type, tn, sizeof tn);
    return core_err(OG_E_BAD_REQUEST, "cannot append %s to a %s builder", what, tn);
}

int arrow_builder_append_null(arrow_builder *b)
{
    int rc = 0;
    int w = arrow_type_bit_width(b->type.id);
    switch (b->type.id) {
    case ARROW_NA:
        b->length++;
        b->null_count++;
        return 0;
    case ARROW_BOOL:
        rc = bits_push(&b->values, b->length, false);
        break;
    case ARROW_FIXED_SIZE_LIST:
        for (int32_t k = 0; rc == 0 && k < b->type.list_size; k++)
            rc = arrow_builder_append_null(b->children[0]);
        break;
    case ARROW_STRUCT:
        for (size_t k = 0; rc == 0 && k < b->n_children; k++)
            rc = arrow_builder_append_null(b->children[k]);
        break;
    case ARROW_LIST:
        rc = offsets_push(b, offsets_last(b));
        break;
    default:
        if (has_offsets(b->type.id))
            rc = offsets_push(b, offsets_last(b));
        else if (w > 0)
            rc = core_buf_append_zeros(&b->values, (size_t)w / 8);
    }
    if (rc) return rc;
    return row_done(b, false);
}

int arrow_builder_append_nulls(arrow_builder *b, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        int rc = arrow_builder_append_null(b);
        if (rc) return rc;
    }
    return 0;
}

int arrow_builder_append_bool(arrow_builder *b, bool v)
{
    if (b->type.id != ARROW_BOOL) return type_mismatch(b, "a bool");
    int rc = bits_push(&b->values, b->length, v);
    return rc ? rc : row_done(b, true);
}

int arrow_builder_append_int(arrow_builder *b, int64_t v)
{
    int rc;
    switch (b->type.id) {
    case ARROW_INT32:
    case ARROW_DATE32: {
        if (v < INT32_MIN || v > INT32_MAX)
            return core_err(OG_E_BAD_REQUEST, "value %" PRId64 " out of range for int32", v);
        int32_t x = (int32_t)v;
        rc = core_buf_append(&b->values, &x, 4);
        break;
    }
    case ARROW_UINT32: {
        if (v < 0 || v > (int64_t)UINT32_MAX)
            return core_err(OG_E_BAD_REQUEST, "value %" PRId64 " out of range for uint32", v);
        uint32_t x = (uint32_t)v;
        rc = core_buf_append(&b->values, &x, 4);
        break;
    }
    case ARROW_UINT64:
        if (v < 0)
            return core_err(OG_E_BAD_REQUEST, "value %" PRId64 " out of range for uint64", v);
        /* fall through */
    case ARROW_INT64:
    case ARROW_DATE64:
    case ARROW_TIMESTAMP:
        rc = core_buf_append(&b->values, &v, 8);
        break;
    default:
        return type_mismatch(b, "an integer");
    }
    return rc ? rc : row_done(b, true);
}

int arrow_builder_append_uint(arrow_builder *b, uint64_t v)
{
    if (b->type.id == ARROW_UINT64) {
        int rc = core_buf_append(&b->values, &v, 8);
        return rc ? rc : row_done(b, true);
    }
    if (v > INT64_MAX) return core_err(OG_E_BAD_REQUEST, "value %" PRIu64 " out of range", v);
    return arrow_builder_append_int(b, (int64_t)v);
}

int arrow_builder_append_double(arrow_builder *b, double v)
{
    int rc;
    if (b->type.id == ARROW_FLOAT32) {
        float f = (float)v;
        rc = core_buf_append(&b->values, &f, 4);
    } else if (b->type.id == ARROW_FLOAT64) {
        rc = core_buf_append(&b->values, &v, 8);
    } else {
        return type_mismatch(b, "a float");
    }
    return rc ? rc : row_done(b, true);
}

int arrow_builder_append_bytes(arrow_builder *b, const void *p, size_t n)
{
    /* The common case (32-bit offsets, room in every buffer) in one pass: a bulk load appends
     * three strings per edge, and the general path below cost ~200 instructions each. */
    if ((b->type.id == ARROW_UTF8 || b->type.id == ARROW_BINARY) && n <= INT32_MAX &&
        b->values.len + n < b->values.cap && b->offsets.len + 4 < b->offsets.cap &&
        (size_t)(b->length >> 3) < b->validity.len && b->values.len + n <= (size_t)INT32_MAX) {
        int32_t end = (int32_t)(b->values.len + n);
        memcpy(b->offsets.data + b->offsets.len, &end, 4);
        b->offsets.len += 4;
        b->offsets.data[b->offsets.len] = '\0';
        if (n) memcpy(b->values.data + b->values.len, p, n);
        b->values.len += n;
        b->values.data[b->values.len] = '\0';
        b->validity.data[b->length >> 3] |= (uint8_t)(1u << (b->length & 7));
        b->length++;
        return 0;
    }
    if (!arrow_type_is_binary_like(b->type.id)) return type_mismatch(b, "bytes");
    size_t end;
    if (core_size_add(&end, b->values.len, n) != 0 || end > (size_t)INT64_MAX)
        return core_err(OG_E_RESOURCE_LIMIT, "array bytes overflow");
    int rc = offsets_push(b, (int64_t)end);
    if (rc) return rc;
    rc = core_buf_append(&b->values, p, n);
    if (rc) {
        b->offsets.len -= arrow_type_is_large(b->type.id) ? 8 : 4;
        return rc;
    }
    return row_done(b, true);
}

int arrow_builder_append_str(arrow_builder *b, const char *s)
{
    return arrow_builder_append_bytes(b, s, strlen(s));
}

int arrow_builder_append_list(arrow_builder *b, int64_t n_items)
{
    if (b->type.id != ARROW_LIST) return type_mismatch(b, "a list row");
    int64_t end = offsets_last(b) + n_items;
    if (n_items < 0 || end != b->children[0]->length)
        return core_err(OG_E_BAD_REQUEST,
                        "list row of %" PRId64 " items but the item builder "
                        "holds %" PRId64 " past the previous row",
                        n_items, b->children[0]->length - offsets_last(b));
    int rc = offsets_push(b, end);
    return rc ? rc : row_done(b, true);
}

int arrow_builder_append_valid(arrow_builder *b)
{
    if (b->type.id == ARROW_FIXED_SIZE_LIST) {
        if (b->children[0]->length != (b->length + 1) * b->type.list_size)
            return core_err(OG_E_BAD_REQUEST, "fixed-size list row needs exactly %d items",
                            (int)b->type.list_size);
    } else if (b->type.id == ARROW_STRUCT) {
        for (size_t k = 0; k < b->n_children; k++)
            if (b->children[k]->length != b->length + 1)
                return core_err(OG_E_BAD_REQUEST,
                                "struct row: child %zu has %" PRId64 " values, want %" PRId64, k,
                                b->children[k]->length, b->length + 1);
    } else {
        return type_mismatch(b, "a nested row");
    }
    return row_done(b, true);
}

int arrow_builder_append_from(arrow_builder *b, const arrow_array *src, int64_t i)
{
    if (!arrow_array_is_valid(src, i)) return arrow_builder_append_null(b);
    switch (src->type.id) {
    case ARROW_BOOL:
        return arrow_builder_append_bool(b, arrow_array_get_bool(src, i));
    case ARROW_UINT64:
        return arrow_builder_append_uint(b, arrow_array_get_uint(src, i));
    case ARROW_INT32:
    case ARROW_INT64:
    case ARROW_UINT32:
    case ARROW_DATE32:
    case ARROW_DATE64:
    case ARROW_TIMESTAMP:
        return arrow_builder_append_int(b, arrow_array_get_int(src, i));
    case ARROW_FLOAT32:
    case ARROW_FLOAT64:
        return arrow_builder_append_double(b, arrow_array_get_double(src, i));
    case ARROW_UTF8:
    case ARROW_LARGE_UTF8:
    case ARROW_BINARY:
    case ARROW_LARGE_BINARY: {
        size_t n;
        const uint8_t *p = arrow_array_get_bytes(src, i, &n);
        return arrow_builder_append_bytes(b, p, n);
    }
    case ARROW_LIST:
    case ARROW_FIXED_SIZE_LIST: {
        if (b->n_children != 1) return type_mismatch(b, "a list row");
        int64_t s, e;
        arrow_array_list_range(src, i, &s, &e);
        for (int64_t k = s; k < e; k++) {
            int rc = arrow_builder_append_from(b->children[0], src->children[0], k);
            if (rc) return rc;
        }
        return src->type.id == ARROW_LIST ? arrow_builder_append_list(b, e - s)
                                          : arrow_builder_append_valid(b);
    }
    case ARROW_STRUCT:
        if (b->n_children != src->n_children) return type_mismatch(b, "a struct row");
        for (size_t k = 0; k < src->n_children; k++) {
            int rc = arrow_builder_append_from(b->children[k], src->children[k], i);
            if (rc) return rc;
        }
        return arrow_builder_append_valid(b);
    default:
        return arrow_builder_append_null(b);
    }
}

int arrow_builder_finish(arrow_builder *b, arrow_array **out)
{
    *out = NULL;
    /* the reset builder's first offset, allocated before anything is handed over */
    core_buf fresh = CORE_BUF_INIT;
    if (has_offsets(b->type.id)) {
        int64_t zero = 0;
        int rc0 = core_buf_append(&fresh, &zero, arrow_type_is_large(b->type.id) ? 8 : 4);
        if (rc0) return rc0;
    }
    arrow_array **kids = NULL;
    if (b->n_children) {
        kids = core_calloc(b->n_children, sizeof *kids);
        if (!kids) {
            core_buf_free(&fresh);
            return core_err_nomem();
        }
        for (size_t k = 0; k < b->n_children; k++) {
            int rc = arrow_builder_finish(b->children[k], &kids[k]);
            if (rc) {
                for (size_t j = 0; j < k; j++)
                    arrow_array_free(kids[j]);
                core_free(kids);
                core_buf_free(&fresh);
                return rc;
            }
        }
    }
    size_t vlen = b->values.len;
    if (b->type.id == ARROW_BOOL && b->length > 0) {
        /* every row pushed one bit, so the buffer is exactly ceil(length/8) bytes */
        vlen = (size_t)(b->length + 7) / 8;
    }
    uint8_t *validity = NULL;
    if (b->null_count > 0) {
        validity = b->validity.data;
        b->validity.data = NULL;
    }
    void *offsets = NULL, *values = NULL;
    if (has_offsets(b->type.id)) {
        offsets = b->offsets.data;
        b->offsets.data = NULL;
    }
    values = b->values.data;
    b->values.data = NULL;
    int64_t len = b->length, nulls = b->null_count;
    builder_reset(b);
    b->offsets = fresh;
    return arrow_array_make(out, &b->type, len, nulls, validity, offsets, values, vlen, kids,
                            b->n_children);
}

/* ---- Record batches ---------------------------------------------------------------------- */

int arrow_batch_new(arrow_batch **out, const arrow_schema *schema, arrow_array *const *cols,
                    size_t n)
{
    *out = NULL;
    if (n != schema->n_fields)
        return core_err(OG_E_BAD_REQUEST, "batch has %zu columns but its schema %zu fields", n,
                        schema->n_fields);
    int64_t rows = n ? cols[0]->length : 0;
    for (size_t i = 0; i < n; i++) {
        if (cols[i]->length != rows)
            return core_err(OG_E_BAD_REQUEST, "batch column %s has %" PRId64 " rows, want %" PRId64,
                            schema->fields[i].name, cols[i]->length, rows);
        if (!arrow_type_equal(&cols[i]->type, &schema->fields[i].type)) {
            char want[96], got[96];
            arrow_type_describe(&schema->fields[i].type, want, sizeof want);
            arrow_type_describe(&cols[i]->type, got, sizeof got);
            return core_err(OG_E_BAD_REQUEST, "batch column %s is %s, schema says %s",
                            schema->fields[i].name, got, want);
        }
        if (!schema->fields[i].nullable && cols[i]->null_count > 0)
            return core_err(OG_E_BAD_REQUEST, "batch column %s is not nullable but has nulls",
                            schema->fields[i].name);
    }
    arrow_batch *b = core_calloc(1, sizeof *b);
    if (!b) return core_err_nomem();
    if (n) {
        b->columns = core_calloc(n, sizeof *b->columns);
        if (!b->columns) {
            core_free(b);
            return core_err_nomem();
        }
    }
    int rc = arrow_schema_copy(&b->schema, schema);
    if (rc) {
        core_free(b->columns);
        core_free(b);
        return rc;
    }
    for (size_t i = 0; i < n; i++)
        b->columns[i] = arrow_array_ref(cols[i]);
    b->n_columns = n;
    b->num_rows = rows;
    *out = b;
    return 0;
}

void arrow_batch_free(arrow_batch *b)
{
    if (!b) return;
    for (size_t i = 0; i < b->n_columns; i++)
        arrow_array_free(b->columns[i]);
    core_free(b->columns);
    arrow_schema_clear(&b->schema);
    core_free(b);
}

int arrow_batch_project(arrow_batch **out, const arrow_batch *b, const size_t *idx, size_t n)
{
    *out = NULL;
    arrow_schema s;
    arrow_schema_init(&s);
    arrow_array **cols = n ? core_calloc(n, sizeof *cols) : NULL;
    if (n && !cols) return core_err_nomem();
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (idx[i] >= b->n_columns) {
            rc = core_err(OG_E_BAD_REQUEST, "projection index %zu out of range", idx[i]);
            break;
        }
        rc = arrow_schema_add(&s, &b->schema.fields[idx[i]]);
        cols[i] = b->columns[idx[i]];
    }
    if (rc == 0) rc = arrow_batch_new(out, &s, cols, n);
    if (rc == 0 && n == 0) (*out)->num_rows = b->num_rows;
    arrow_schema_clear(&s);
    core_free(cols);
    return rc;
}

bool arrow_batch_equal(const arrow_batch *a, const arrow_batch *b)
{
    if (a->num_rows != b->num_rows || a->n_columns != b->n_columns) return false;
    if (!arrow_schema_equal(&a->schema, &b->schema)) return false;
    for (size_t i = 0; i < a->n_columns; i++)
        if (!arrow_array_equal(a->columns[i], b->columns[i])) return false;
    return true;
}
