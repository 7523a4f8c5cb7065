/* Arrow C Data Interface: export (zero-copy, the exported struct holds a reference on our
 * array) and import (copies into a fresh arrow_array, then releases the source). */
#include "arrow/arrow.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/error.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Format strings ---------------------------------------------------------------------- */

static int format_of(const arrow_type *t, char *buf, size_t cap)
{
    static const char units[] = {'s', 'm', 'u', 'n'};
    const char *f = NULL;
    switch (t->id) {
    case ARROW_NA:
        f = "n";
        break;
    case ARROW_BOOL:
        f = "b";
        break;
    case ARROW_INT32:
        f = "i";
        break;
    case ARROW_INT64:
        f = "l";
        break;
    case ARROW_UINT32:
        f = "I";
        break;
    case ARROW_UINT64:
        f = "L";
        break;
    case ARROW_FLOAT32:
        f = "f";
        break;
    case ARROW_FLOAT64:
        f = "g";
        break;
    case ARROW_UTF8:
        f = "u";
        break;
    case ARROW_LARGE_UTF8:
        f = "U";
        break;
    case ARROW_BINARY:
        f = "z";
        break;
    case ARROW_LARGE_BINARY:
        f = "Z";
        break;
    case ARROW_DATE32:
        f = "tdD";
        break;
    case ARROW_DATE64:
        f = "tdm";
        break;
    case ARROW_LIST:
        f = "+l";
        break;
    case ARROW_STRUCT:
        f = "+s";
        break;
    case ARROW_TIMESTAMP:
        if (snprintf(buf, cap, "ts%c:%s", units[t->unit & 3], t->tz ? t->tz : "") >= (int)cap)
            return core_err(OG_E_BAD_REQUEST, "time zone name too long");
        return 0;
    case ARROW_FIXED_SIZE_LIST:
        snprintf(buf, cap, "+w:%d", (int)t->list_size);
        return 0;
    default:
        return core_err(OG_E_INTERNAL, "no Arrow format for type id %d", (int)t->id);
    }
    snprintf(buf, cap, "%s", f);
    return 0;
}

/* ---- Schema export ----------------------------------------------------------------------- */

typedef struct schema_priv {
    char *format;
    char *name;
    struct ArrowSchema **child_ptrs;
    struct ArrowSchema *child_store;
    int64_t n;
} schema_priv;

static void schema_release(struct ArrowSchema *s)
{
    if (!s || !s->release) return;
    schema_priv *p = s->private_data;
    for (int64_t i = 0; i < p->n; i++)
        if (p->child_store[i].release) p->child_store[i].release(&p->child_store[i]);
    core_free(p->child_ptrs);
    core_free(p->child_store);
    core_free(p->format);
    core_free(p->name);
    core_free(p);
    s->release = NULL;
}

static int schema_export_node(const char *format, const char *name, bool nullable,
                              const arrow_field *kids, size_t n_kids, struct ArrowSchema *out)
{
    memset(out, 0, sizeof *out);
    schema_priv *p = core_calloc(1, sizeof *p);
    if (!p) return core_err_nomem();
    p->format = core_strdup(format);
    p->name = core_strdup(name ? name : "");
    if (n_kids) {
        p->child_ptrs = core_calloc(n_kids, sizeof *p->child_ptrs);
        p->child_store = core_calloc(n_kids, sizeof *p->child_store);
    }
    out->private_data = p;
    out->release = schema_release;
    if (!p->format || !p->name || (n_kids && (!p->child_ptrs || !p->child_store))) {
        schema_release(out);
        return core_err_nomem();
    }
    out->format = p->format;
    out->name = p->name;
    out->flags = nullable ? ARROW_FLAG_NULLABLE : 0;
    for (size_t i = 0; i < n_kids; i++) {
        p->child_ptrs[i] = &p->child_store[i];
        int rc = arrow_schema_export_field(&kids[i], &p->child_store[i]);
        p->n = (int64_t)i + 1;
        if (rc) {
            schema_release(out);
            return rc;
        }
    }
    out->n_children = (int64_t)n_kids;
    out->children = p->child_ptrs;
    return 0;
}

int arrow_schema_export_field(const arrow_field *f, struct ArrowSchema *out)
{
    char fmt[160];
    int rc = format_of(&f->type, fmt, sizeof fmt);
    if (rc) {
        memset(out, 0, sizeof *out);
        return rc;
    }
    return schema_export_node(fmt, f->name, f->nullable, f->type.children, f->type.n_children, out);
}

int arrow_schema_export(const arrow_schema *s, struct ArrowSchema *out)
{
    return schema_export_node("+s", "", false, s->fields, s->n_fields, out);
}

/* ---- Schema import ----------------------------------------------------------------------- */

static int field_from_c(arrow_field *out, const struct ArrowSchema *in, int depth);

static int type_from_c(arrow_type *t, const struct ArrowSchema *in, int depth)
{
    const char *f = in->format;
    *t = arrow_type_simple(ARROW_NA);
    if (!f) return core_err(OG_E_BAD_REQUEST, "Arrow schema without a format string");
    if (depth > 64) return core_err(OG_E_BAD_REQUEST, "Arrow schema nested too deeply");
    if (in->dictionary)
        return core_err(OG_E_UNSUPPORTED, "dictionary-encoded Arrow arrays are not supported");
    static const struct {
        const char *fmt;
        arrow_type_id id;
    } simple[] = {{"n", ARROW_NA},         {"b", ARROW_BOOL},    {"i", ARROW_INT32},
                  {"l", ARROW_INT64},      {"I", ARROW_UINT32},  {"L", ARROW_UINT64},
                  {"f", ARROW_FLOAT32},    {"g", ARROW_FLOAT64}, {"u", ARROW_UTF8},
                  {"U", ARROW_LARGE_UTF8}, {"z", ARROW_BINARY},  {"Z", ARROW_LARGE_BINARY},
                  {"tdD", ARROW_DATE32},   {"tdm", ARROW_DATE64}};
    for (size_t i = 0; i < sizeof simple / sizeof simple[0]; i++)
        if (strcmp(f, simple[i].fmt) == 0) {
            t->id = simple[i].id;
            return 0;
        }
    if (strncmp(f, "ts", 2) == 0 && f[2] && f[3] == ':') {
        const char *units = "smun";
        const char *u = strchr(units, f[2]);
        if (!u) return core_err(OG_E_BAD_REQUEST, "bad timestamp format '%s'", f);
        return arrow_type_timestamp(t, (arrow_time_unit)(u - units), f[4] ? f + 4 : NULL);
    }
    if (strcmp(f, "+l") == 0 || strncmp(f, "+w:", 3) == 0 || strcmp(f, "+s") == 0) {
        bool is_struct = f[1] == 's';
        if (!is_struct && in->n_children != 1)
            return core_err(OG_E_BAD_REQUEST, "Arrow list schema needs one child");
        if (in->n_children < 0 || (in->n_children > 0 && !in->children))
            return core_err(OG_E_BAD_REQUEST, "Arrow schema children missing");
        int32_t size = 0;
        if (f[1] == 'w') {
            char *end;
            long v = strtol(f + 3, &end, 10);
            if (*end || v <= 0 || v > INT32_MAX)
                return core_err(OG_E_BAD_REQUEST, "bad fixed-size list format '%s'", f);
            size = (int32_t)v;
        }
        size_t n = (size_t)in->n_children;
        arrow_field *kids = n ? core_calloc(n, sizeof *kids) : NULL;
        if (n && !kids) return core_err_nomem();
        int rc = 0;
        size_t done = 0;
        for (; done < n && rc == 0; done++)
            rc = field_from_c(&kids[done], in->children[done], depth + 1);
        if (rc == 0) {
            if (is_struct)
                rc = arrow_type_struct(t, kids, n);
            else if (size)
                rc = arrow_type_fixed_size_list(t, kids, size);
            else
                rc = arrow_type_list(t, kids);
        }
        for (size_t i = 0; i < done; i++)
            arrow_field_clear(&kids[i]);
        core_free(kids);
        return rc;
    }
    return core_err(OG_E_UNSUPPORTED, "Arrow format '%s' is not supported", f);
}

static int field_from_c(arrow_field *out, const struct ArrowSchema *in, int depth)
{
    memset(out, 0, sizeof *out);
    if (!in) return core_err(OG_E_BAD_REQUEST, "NULL Arrow schema child");
    arrow_type t;
    int rc = type_from_c(&t, in, depth);
    if (rc == 0) rc = arrow_field_init(out, in->name, &t, (in->flags & ARROW_FLAG_NULLABLE) != 0);
    arrow_type_clear(&t);
    return rc;
}

int arrow_field_import(arrow_field *out, struct ArrowSchema *in)
{
    int rc = field_from_c(out, in, 0);
    if (in && in->release) in->release(in);
    return rc;
}

int arrow_schema_import(arrow_schema *out, struct ArrowSchema *in)
{
    arrow_schema_init(out);
    int rc = 0;
    if (!in || !in->format || strcmp(in->format, "+s") != 0) {
        rc = core_err(OG_E_BAD_REQUEST, "an Arrow schema must be a struct ('+s')");
    } else if (in->n_children < 0 || (in->n_children > 0 && !in->children)) {
        rc = core_err(OG_E_BAD_REQUEST, "Arrow schema children missing");
    } else {
        for (int64_t i = 0; i < in->n_children && rc == 0; i++) {
            arrow_field f;
            rc = field_from_c(&f, in->children[i], 1);
            if (rc == 0) rc = arrow_schema_add(out, &f);
            arrow_field_clear(&f);
        }
    }
    if (rc) arrow_schema_clear(out);
    if (in && in->release) in->release(in);
    return rc;
}

/* ---- Array export ------------------------------------------------------------------------ */

typedef struct array_priv {
    arrow_array *ref;
    const void *buffers[3];
    struct ArrowArray **child_ptrs;
    struct ArrowArray *child_store;
    int64_t n;
} array_priv;

static const uint64_t zero_buffer[1];

static void array_release(struct ArrowArray *a)
{
    if (!a || !a->release) return;
    array_priv *p = a->private_data;
    for (int64_t i = 0; i < p->n; i++)
        if (p->child_store[i].release) p->child_store[i].release(&p->child_store[i]);
    core_free(p->child_ptrs);
    core_free(p->child_store);
    arrow_array_free(p->ref);
    core_free(p);
    a->release = NULL;
}

static int export_node(arrow_array *ref, int64_t length, int64_t null_count, const void *validity,
                       int n_buffers, const void *b1, const void *b2, arrow_array *const *kids,
                       size_t n_kids, struct ArrowArray *out)
{
    memset(out, 0, sizeof *out);
    array_priv *p = core_calloc(1, sizeof *p);
    if (!p) return core_err_nomem();
    if (n_kids) {
        p->child_ptrs = core_calloc(n_kids, sizeof *p->child_ptrs);
        p->child_store = core_calloc(n_kids, sizeof *p->child_store);
    }
    p->ref = ref ? arrow_array_ref(ref) : NULL;
    out->private_data = p;
    out->release = array_release;
    if (n_kids && (!p->child_ptrs || !p->child_store)) {
        array_release(out);
        return core_err_nomem();
    }
    p->buffers[0] = validity;
    p->buffers[1] = b1;
    p->buffers[2] = b2;
    out->length = length;
    out->null_count = null_count;
    out->n_buffers = n_buffers;
    out->buffers = p->buffers;
    for (size_t i = 0; i < n_kids; i++) {
        p->child_ptrs[i] = &p->child_store[i];
        int rc = arrow_array_export(kids[i], &p->child_store[i]);
        p->n = (int64_t)i + 1;
        if (rc) {
            array_release(out);
            return rc;
        }
    }
    out->n_children = (int64_t)n_kids;
    out->children = p->child_ptrs;
    return 0;
}

int arrow_array_export(arrow_array *a, struct ArrowArray *out)
{
    const void *values = a->values ? a->values : (const void *)zero_buffer;
    switch (a->type.id) {
    case ARROW_NA:
        return export_node(a, a->length, a->length, NULL, 0, NULL, NULL, NULL, 0, out);
    case ARROW_UTF8:
    case ARROW_LARGE_UTF8:
    case ARROW_BINARY:
    case ARROW_LARGE_BINARY:
        return export_node(a, a->length, a->null_count, a->validity, 3, a->offsets, values, NULL, 0,
                           out);
    case ARROW_LIST:
        return export_node(a, a->length, a->null_count, a->validity, 2, a->offsets, NULL,
                           a->children, a->n_children, out);
    case ARROW_FIXED_SIZE_LIST:
    case ARROW_STRUCT:
        return export_node(a, a->length, a->null_count, a->validity, 1, NULL, NULL, a->children,
                           a->n_children, out);
    default:
        return export_node(a, a->length, a->null_count, a->validity, 2, values, NULL, NULL, 0, out);
    }
}

int arrow_batch_export(arrow_batch *b, struct ArrowArray *out)
{
    return export_node(NULL, b->num_rows, 0, NULL, 1, NULL, NULL, b->columns, b->n_columns, out);
}

/* ---- Array import (copying) -------------------------------------------------------------- */

static int bad_import(const char *what)
{
    return core_err(OG_E_BAD_REQUEST, "malformed Arrow array: %s", what);
}

static uint8_t *copy_bits(const uint8_t *src, int64_t start, int64_t n)
{
    uint8_t *dst = core_calloc((size_t)(n + 7) / 8 + 1, 1);
    if (!dst) return NULL;
    if (start % 8 == 0) {
        memcpy(dst, src + start / 8, (size_t)(n + 7) / 8);
        if (n % 8) dst[n / 8] &= (uint8_t)((1u << (n % 8)) - 1);
    } else {
        for (int64_t i = 0; i < n; i++)
            if (arrow_bit_get(src, start + i)) arrow_bit_set(dst, i, true);
    }
    return dst;
}

/* Rows [start, start+len) of `in` counted from its own offset. */
static int import_range(arrow_array **out, const arrow_type *t, const struct ArrowArray *in,
                        int64_t start, int64_t len, int depth)
{
    *out = NULL;
    if (!in || in->length < 0 || in->offset < 0 || start < 0 || len < 0)
        return bad_import("negative length or offset");
    if (depth > 64) return bad_import("nested too deeply");
    int64_t base = in->offset + start;
    if (start + len > in->length) return bad_import("child shorter than its parent needs");
    int want_buffers;
    size_t want_kids = 0;
    switch (t->id) {
    case ARROW_NA:
        want_buffers = 0;
        break;
    case ARROW_UTF8:
    case ARROW_LARGE_UTF8:
    case ARROW_BINARY:
    case ARROW_LARGE_BINARY:
        want_buffers = 3;
        break;
    case ARROW_LIST:
        want_buffers = 2;
        want_kids = 1;
        break;
    case ARROW_FIXED_SIZE_LIST:
        want_buffers = 1;
        want_kids = 1;
        break;
    case ARROW_STRUCT:
        want_buffers = 1;
        want_kids = t->n_children;
        break;
    default:
        want_buffers = 2;
    }
    if (in->n_buffers != want_buffers || (want_buffers && !in->buffers))
        return bad_import("wrong number of buffers for its type");
    if (in->n_children != (int64_t)want_kids || (want_kids && !in->children))
        return bad_import("wrong number of children for its type");
    if (in->dictionary) return core_err(OG_E_UNSUPPORTED, "dictionary arrays are not supported");
    if (t->id == ARROW_NA) return arrow_array_make(out, t, len, len, NULL, NULL, NULL, 0, NULL, 0);

    uint8_t *validity = NULL;
    int64_t nulls = 0;
    if (in->buffers[0] && in->null_count != 0) {
        validity = copy_bits(in->buffers[0], base, len);
        if (!validity) return core_err_nomem();
        for (int64_t i = 0; i < len; i++)
            nulls += !arrow_bit_get(validity, i);
    }
    void *offsets = NULL, *values = NULL;
    size_t vsize = 0;
    arrow_array **kids = NULL;
    int rc = 0;
    int w = arrow_type_bit_width(t->id);
    if (w == 1) {
        if (!in->buffers[1] && len)
            rc = bad_import("missing values buffer");
        else if (!(values = copy_bits(in->buffers[1] ? in->buffers[1] : (const void *)zero_buffer,
                                      in->buffers[1] ? base : 0, in->buffers[1] ? len : 0)))
            rc = core_err_nomem();
        vsize = (size_t)(len + 7) / 8;
    } else if (w > 0) {
        size_t wb = (size_t)w / 8;
        vsize = (size_t)len * wb;
        if (!in->buffers[1] && len)
            rc = bad_import("missing values buffer");
        else if (!(values = core_malloc(vsize ? vsize : 1)))
            rc = core_err_nomem();
        else if (vsize)
            memcpy(values, (const uint8_t *)in->buffers[1] + (size_t)base * wb, vsize);
    } else if (arrow_type_is_binary_like(t->id) || t->id == ARROW_LIST) {
        bool large = arrow_type_is_large(t->id);
        const void *src_off = in->buffers[1];
        if (!src_off) {
            rc = bad_import("missing offsets buffer");
            goto done;
        }
        int64_t o0 = large ? ((const int64_t *)src_off)[base] : ((const int32_t *)src_off)[base];
        int64_t prev = o0;
        offsets = core_malloc((size_t)(len + 1) * (large ? 8 : 4));
        if (!offsets) {
            rc = core_err_nomem();
            goto done;
        }
        for (int64_t i = 0; i <= len; i++) {
            int64_t o =
                large ? ((const int64_t *)src_off)[base + i] : ((const int32_t *)src_off)[base + i];
            if (o < prev || o0 < 0) {
                rc = bad_import("offsets not monotone");
                goto done;
            }
            prev = o;
            if (large)
                ((int64_t *)offsets)[i] = o - o0;
            else
                ((int32_t *)offsets)[i] = (int32_t)(o - o0);
        }
        if (t->id == ARROW_LIST) {
            kids = core_calloc(1, sizeof *kids);
            if (!kids)
                rc = core_err_nomem();
            else
                rc = import_range(&kids[0], &t->children[0].type, in->children[0], o0, prev - o0,
                                  depth + 1);
        } else {
            vsize = (size_t)(prev - o0);
            if (vsize && !in->buffers[2])
                rc = bad_import("missing data buffer");
            else if (!(values = core_malloc(vsize ? vsize : 1)))
                rc = core_err_nomem();
            else if (vsize)
                memcpy(values, (const uint8_t *)in->buffers[2] + o0, vsize);
        }
    } else if (t->id == ARROW_FIXED_SIZE_LIST) {
        kids = core_calloc(1, sizeof *kids);
        if (!kids)
            rc = core_err_nomem();
        else
            rc = import_range(&kids[0], &t->children[0].type, in->children[0], base * t->list_size,
                              len * t->list_size, depth + 1);
    } else if (t->id == ARROW_STRUCT) {
        kids = want_kids ? core_calloc(want_kids, sizeof *kids) : NULL;
        if (want_kids && !kids) rc = core_err_nomem();
        for (size_t k = 0; k < want_kids && rc == 0; k++)
            rc =
                import_range(&kids[k], &t->children[k].type, in->children[k], base, len, depth + 1);
    }
done:
    if (rc) {
        core_free(validity);
        core_free(offsets);
        core_free(values);
        for (size_t k = 0; kids && k < want_kids; k++)
            arrow_array_free(kids[k]);
        core_free(kids);
        return rc;
    }
    return arrow_array_make(out, t, len, nulls, validity, offsets, values, vsize, kids,
                            kids ? want_kids : 0);
}

int arrow_array_import(arrow_array **out, const arrow_type *type, struct ArrowArray *in)
{
    int rc = in ? import_range(out, type, in, 0, in->length, 0) : bad_import("NULL array");
    if (in && in->release) in->release(in);
    return rc;
}

int arrow_batch_import(arrow_batch **out, const arrow_schema *schema, struct ArrowArray *in)
{
    *out = NULL;
    arrow_type st;
    int rc = arrow_type_struct(&st, schema->fields, schema->n_fields);
    arrow_array *sa = NULL;
    if (rc == 0) rc = in ? import_range(&sa, &st, in, 0, in->length, 0) : bad_import("NULL array");
    if (in && in->release) in->release(in);
    if (rc == 0 && sa->null_count)
        rc = core_err(OG_E_BAD_REQUEST, "a record batch struct array may not have null rows");
    if (rc == 0) {
        rc = arrow_batch_new(out, schema, sa->children, sa->n_children);
        if (rc == 0) (*out)->num_rows = sa->length;
    }
    arrow_array_free(sa);
    arrow_type_clear(&st);
    return rc;
}

/* ---- Streams ----------------------------------------------------------------------------- */

typedef struct stream_priv {
    arrow_schema schema;
    arrow_batch **batches;
    size_t n, next;
    char last_error[256];
} stream_priv;

static int stream_get_schema(struct ArrowArrayStream *s, struct ArrowSchema *out)
{
    stream_priv *p = s->private_data;
    int rc = arrow_schema_export(&p->schema, out);
    if (rc) {
        snprintf(p->last_error, sizeof p->last_error, "%s", og_error_last()->message);
        return rc == OG_E_NOMEM ? 12 /* ENOMEM */ : 22 /* EINVAL */;
    }
    return 0;
}

static int stream_get_next(struct ArrowArrayStream *s, struct ArrowArray *out)
{
    stream_priv *p = s->private_data;
    if (p->next >= p->n) {
        memset(out, 0, sizeof *out); /* release == NULL marks the end */
        return 0;
    }
    int rc = arrow_batch_export(p->batches[p->next], out);
    if (rc) {
        snprintf(p->last_error, sizeof p->last_error, "%s", og_error_last()->message);
        return 12;
    }
    p->next++;
    return 0;
}

static const char *stream_last_error(struct ArrowArrayStream *s)
{
    stream_priv *p = s->private_data;
    return p->last_error[0] ? p->last_error : NULL;
}

static void stream_release(struct ArrowArrayStream *s)
{
    if (!s || !s->release) return;
    stream_priv *p = s->private_data;
    for (size_t i = 0; i < p->n; i++)
        arrow_batch_free(p->batches[i]);
    core_free(p->batches);
    arrow_schema_clear(&p->schema);
    core_free(p);
    s->release = NULL;
}

int arrow_stream_export(const arrow_schema *schema, arrow_batch **batches, size_t n,
                        struct ArrowArrayStream *out)
{
    memset(out, 0, sizeof *out);
    stream_priv *p = core_calloc(1, sizeof *p);
    int rc = p ? arrow_schema_copy(&p->schema, schema) : core_err_nomem();
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (!arrow_schema_equal(&batches[i]->schema, schema))
            rc = core_err(OG_E_BAD_REQUEST, "stream batch %zu does not match the schema", i);
    if (rc) {
        if (p) arrow_schema_clear(&p->schema);
        core_free(p);
        for (size_t i = 0; i < n; i++)
            arrow_batch_free(batches[i]);
        core_free(batches);
        return rc;
    }
    p->batches = batches;
    p->n = n;
    out->get_schema = stream_get_schema;
    out->get_next = stream_get_next;
    out->get_last_error = stream_last_error;
    out->release = stream_release;
    out->private_data = p;
    return 0;
}

int arrow_stream_import(arrow_schema *schema, arrow_batch ***batches, size_t *n,
                        struct ArrowArrayStream *in)
{
    arrow_schema_init(schema);
    *batches = NULL;
    *n = 0;
    if (!in || !in->release) return core_err(OG_E_BAD_REQUEST, "released or NULL Arrow stream");
    struct ArrowSchema cs;
    memset(&cs, 0, sizeof cs);
    int rc = 0;
    int e = in->get_schema(in, &cs);
    if (e) {
        const char *m = in->get_last_error ? in->get_last_error(in) : NULL;
        rc = core_err(OG_E_BAD_REQUEST, "Arrow stream get_schema failed (%d): %s", e, m ? m : "");
        if (cs.release) cs.release(&cs);
    } else {
        rc = arrow_schema_import(schema, &cs);
    }
    size_t cap = 0;
    while (rc == 0) {
        struct ArrowArray ca;
        memset(&ca, 0, sizeof ca);
        e = in->get_next(in, &ca);
        if (e) {
            const char *m = in->get_last_error ? in->get_last_error(in) : NULL;
            rc = core_err(OG_E_BAD_REQUEST, "Arrow stream get_next failed (%d): %s", e, m ? m : "");
            if (ca.release) ca.release(&ca);
            break;
        }
        if (!ca.release) break; /* end of stream */
        if (*n == cap) {
            size_t nc = cap ? cap * 2 : 8;
            arrow_batch **nb = core_realloc(*batches, nc * sizeof *nb);
            if (!nb) {
                ca.release(&ca);
                rc = core_err_nomem();
                break;
            }
            *batches = nb;
            cap = nc;
        }
        rc = arrow_batch_import(&(*batches)[*n], schema, &ca);
        if (rc == 0) (*n)++;
    }
    in->release(in);
    if (rc) {
        for (size_t i = 0; i < *n; i++)
            arrow_batch_free((*batches)[i]);
        core_free(*batches);
        *batches = NULL;
        *n = 0;
        arrow_schema_clear(schema);
    }
    return rc;
}
