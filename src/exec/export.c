/* The JSONL export (export.h): each table of a snapshot read whole at its pinned version, its
 * rows ordered by id, every row written as the load line that reproduces it. Values are
 * formatted in the forms the loader (load.c) reads back to the same bits; anything without
 * such a form is refused rather than written approximately. */
#include "exec/export.h"

#include "arrow/arrow_json.h"
#include "core/alloc.h"
#include "core/buf.h"
#include "core/error.h"
#include "lang/lang.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Output is handed to the sink in pieces of about this size. */
#define EXPORT_FLUSH_BYTES (256u * 1024u)

typedef struct export_ctx {
    exec_export_sink sink;
    void *arg;
    core_buf out;
    exec_export_stats *st;
    /* the row being written, for messages */
    const graph_table *t;
    const char *id;
    size_t id_len;
    const char *prop;
} export_ctx;

static int flush(export_ctx *c)
{
    if (!c->out.len) return 0;
    int rc = c->sink(c->arg, c->out.data, c->out.len);
    if (rc == 0) c->st->bytes += c->out.len;
    core_buf_clear(&c->out);
    return rc;
}

/* OG_E_UNSUPPORTED for a value of the current row that the load format cannot carry. */
static int refuse(const export_ctx *c, const char *why)
{
    core_err(OG_E_UNSUPPORTED,
             "%s \"%.*s\", property %s: %s; the load format cannot carry it, "
             "so it is not exported",
             c->t->alias, (int)(c->id_len > 80 ? 80 : c->id_len), c->id, c->prop, why);
    core_err_detail(CORE_ERR_OBJECT, c->t->path);
    return OG_E_UNSUPPORTED;
}

/* The shortest decimal that reads back (strtod, then narrowed to float for F32) to x, with a
 * '.' or an exponent so that a JSON reader takes it for a real, not an integer that may not
 * fit (1e20 written as 100000000000000000000 would not parse); -0 stays -0.0. The loader
 * checks an F32's range before narrowing, so a decimal that rounds to FLT_MAX from above
 * (3.4028235e+38) is not one: digits are added until it is in range too (17 digits always
 * are: x widened exactly). */
static size_t format_float(char out[48], double x, int f32)
{
    size_t n = 0;
    for (int p = 1; p <= 17; p++) {
        n = (size_t)snprintf(out, 48, "%.*g", p, x);
        double back = strtod(out, NULL);
        if (f32 ? (float)back == (float)x && fabs(back) <= FLT_MAX : back == x) break;
    }
    if (!strpbrk(out, ".e")) {
        memcpy(out + n, ".0", 3);
        n += 2;
    }
    return n;
}

static int put_str(export_ctx *c, const uint8_t *p, size_t n)
{
    if (n && memchr(p, 0, n)) return refuse(c, "the text holds a NUL byte");
    int rc = arrow_json_string(&c->out, p, n);
    if (rc == OG_E_CORRUPT) return refuse(c, "the bytes are not UTF-8 text");
    return rc;
}

/* One non-null value of array a at row i. */
static int put_value(export_ctx *c, const arrow_array *a, int64_t i)
{
    char tmp[64];
    size_t n;
    switch (a->type.id) {
    case ARROW_BOOL:
        return core_buf_append_str(&c->out, arrow_array_get_bool(a, i) ? "true" : "false");
    case ARROW_INT32:
    case ARROW_INT64:
        n = (size_t)snprintf(tmp, sizeof tmp, "%" PRId64, arrow_array_get_int(a, i));
        return core_buf_append(&c->out, tmp, n);
    case ARROW_UINT32:
    case ARROW_UINT64: {
        uint64_t u = arrow_array_get_uint(a, i);
        if (u > (uint64_t)INT64_MAX) return refuse(c, "an integer above 2^63-1");
        n = (size_t)snprintf(tmp, sizeof tmp, "%" PRIu64, u);
        return core_buf_append(&c->out, tmp, n);
    }
    case ARROW_FLOAT32:
    case ARROW_FLOAT64: {
        double d = arrow_array_get_double(a, i);
        if (!isfinite(d)) return refuse(c, isnan(d) ? "a NaN" : "an infinite number");
        n = format_float(tmp, d, a->type.id == ARROW_FLOAT32);
        return core_buf_append(&c->out, tmp, n);
    }
    case ARROW_UTF8:
    case ARROW_LARGE_UTF8:
    case ARROW_BINARY:
    case ARROW_LARGE_BINARY: {
        size_t len;
        const uint8_t *p = arrow_array_get_bytes(a, i, &len);
        return put_str(c, p, len);
    }
    case ARROW_DATE32: {
        /* ISO when it reads back to the same day, else the loader's other form: days. */
        int64_t days = arrow_array_get_int(a, i), back;
        n = arrow_json_format_date(tmp, days);
        if (lang_parse_date(tmp, &back) == 0 && back == days)
            return core_buf_printf(&c->out, "\"%s\"", tmp);
        return core_buf_printf(&c->out, "%" PRId64, days);
    }
    case ARROW_TIMESTAMP: {
        if (a->type.unit != ARROW_UNIT_MILLI) break;
        int64_t ms = arrow_array_get_int(a, i), back;
        n = arrow_json_format_instant(tmp, ms, ARROW_UNIT_MILLI);
        if (lang_parse_datetime(tmp, &back) == 0 && back == ms)
            return core_buf_printf(&c->out, "\"%s\"", tmp);
        return core_buf_printf(&c->out, "%" PRId64, ms);
    }
    case ARROW_LIST:
    case ARROW_FIXED_SIZE_LIST: {
        int64_t s, e;
        if (a->type.id == ARROW_LIST) {
            arrow_array_list_range(a, i, &s, &e);
        } else {
            s = i * a->type.list_size;
            e = s + a->type.list_size;
        }
        int rc = core_buf_append_byte(&c->out, '[');
        for (int64_t k = s; k < e && rc == 0; k++) {
            if (k > s) rc = core_buf_append_byte(&c->out, ',');
            if (rc) break;
            if (!arrow_array_is_valid(a->children[0], k)) return refuse(c, "a list item is null");
            rc = put_value(c, a->children[0], k);
        }
        return rc ? rc : core_buf_append_byte(&c->out, ']');
    }
    default:
        break;
    }
    char desc[64], why[128];
    arrow_type_describe(&a->type, desc, sizeof desc);
    snprintf(why, sizeof why, "a column of Arrow type %s, which the loader does not read", desc);
    return refuse(c, why);
}

/* The columns of a table: id, src and dst (edges), the properties (all the rest). */
typedef struct table_cols {
    const arrow_array *id, *src, *dst;
    size_t *props;
    size_t n_props;
} table_cols;

static int find_cols(table_cols *tc, const arrow_batch *b, const graph_table *t,
                     const lang_typedef *td)
{
    memset(tc, 0, sizeof *tc);
    tc->props = core_calloc(b->n_columns ? b->n_columns : 1, sizeof *tc->props);
    if (!tc->props) return core_err_nomem();
    for (size_t i = 0; i < b->n_columns; i++) {
        const char *name = b->schema.fields[i].name;
        const arrow_array *col = b->columns[i];
        const arrow_array **slot = NULL;
        if (!strcmp(name, GRAPH_COL_ID))
            slot = &tc->id;
        else if (t->kind == LANG_EDGE && !strcmp(name, GRAPH_COL_SRC))
            slot = &tc->src;
        else if (t->kind == LANG_EDGE && !strcmp(name, GRAPH_COL_DST))
            slot = &tc->dst;
        if (!slot) {
            /* a column no property of the schema names (a soft drop hid it) is not data */
            if (!td || lang_type_find_prop(td, name) >= 0) tc->props[tc->n_props++] = i;
            continue;
        }
        if (col->type.id != ARROW_UTF8 || col->null_count) {
            core_err(OG_E_CORRUPT, "table %s: column %s is not a non-null Utf8 column", t->alias,
                     name);
            core_err_detail(CORE_ERR_OBJECT, t->path);
            return OG_E_CORRUPT;
        }
        *slot = col;
    }
    if (!tc->id || (t->kind == LANG_EDGE && (!tc->src || !tc->dst))) {
        core_err(OG_E_CORRUPT, "table %s lacks its %s column", t->alias,
                 !tc->id    ? GRAPH_COL_ID
                 : !tc->src ? GRAPH_COL_SRC
                            : GRAPH_COL_DST);
        core_err_detail(CORE_ERR_OBJECT, t->path);
        return OG_E_CORRUPT;
    }
    return 0;
}

/* One row as one line. */
static int put_row(export_ctx *c, const arrow_batch *b, const table_cols *tc, int64_t r)
{
    const graph_table *t = c->t;
    size_t n;
    const uint8_t *id = arrow_array_get_bytes(tc->id, r, &n);
    c->id = (const char *)id;
    c->id_len = n;
    c->prop = GRAPH_COL_ID;
    int rc = core_buf_append_str(&c->out, t->kind == LANG_EDGE ? "{\"edge\":" : "{\"type\":");
    if (!rc) rc = arrow_json_string(&c->out, t->type_name, strlen(t->type_name));
    if (!rc && t->kind == LANG_EDGE) {
        size_t ns, nd;
        const uint8_t *src = arrow_array_get_bytes(tc->src, r, &ns);
        const uint8_t *dst = arrow_array_get_bytes(tc->dst, r, &nd);
        c->prop = "from";
        rc = core_buf_append_str(&c->out, ",\"from\":");
        if (!rc) rc = put_str(c, src, ns);
        c->prop = "to";
        if (!rc) rc = core_buf_append_str(&c->out, ",\"to\":");
        if (!rc) rc = put_str(c, dst, nd);
    }
    c->prop = GRAPH_COL_ID;
    if (!rc) rc = core_buf_append_str(&c->out, ",\"data\":{\"id\":");
    if (!rc) rc = put_str(c, id, n);
    for (size_t k = 0; k < tc->n_props && !rc; k++) {
        size_t ci = tc->props[k];
        const char *name = b->schema.fields[ci].name;
        c->prop = name;
        rc = core_buf_append_byte(&c->out, ',');
        if (!rc) rc = arrow_json_string(&c->out, name, strlen(name));
        if (!rc) rc = core_buf_append_byte(&c->out, ':');
        if (rc) break;
        const arrow_array *col = b->columns[ci];
        if (!arrow_array_is_valid(col, r))
            rc = core_buf_append_str(&c->out, "null");
        else
            rc = put_value(c, col, r);
    }
    if (!rc) rc = core_buf_append_str(&c->out, "}}\n");
    return rc;
}

static int export_table(export_ctx *c, store *s, const graph_table *t, const lang_typedef *td)
{
    c->t = t;
    lance_dataset *ds = NULL;
    arrow_batch *b = NULL;
    int64_t *order = NULL;
    table_cols tc = {0};
    int rc = graph_table_open(&ds, s, t, LANCE_ACCESS_READ);
    if (!rc) rc = lance_dataset_scan_all(&b, ds, NULL);
    lance_dataset_free(ds);
    if (!rc) rc = find_cols(&tc, b, t, td);
    if (!rc && b->num_rows) {
        order = core_malloc((size_t)b->num_rows * sizeof *order);
        if (!order) rc = core_err_nomem();
        arrow_sort_key key = {.column = tc.id, .descending = false, .nulls_first = true};
        if (!rc) rc = arrow_sort_indices(order, &key, 1, b->num_rows);
    }
    for (int64_t i = 0; !rc && b && i < b->num_rows; i++) {
        rc = put_row(c, b, &tc, order[i]);
        if (!rc) {
            if (t->kind == LANG_EDGE)
                c->st->edges++;
            else
                c->st->nodes++;
        }
        if (!rc && c->out.len >= EXPORT_FLUSH_BYTES) rc = flush(c);
    }
    if (!rc) {
        if (t->kind == LANG_EDGE)
            c->st->edge_types++;
        else
            c->st->node_types++;
    }
    core_free(order);
    core_free(tc.props);
    arrow_batch_free(b);
    if (rc && rc != OG_E_UNSUPPORTED && rc != OG_E_NOMEM) core_err_prefix("exporting %s", t->alias);
    return rc;
}

static int wanted(const graph_table *t, const char *const *types, size_t n)
{
    if (!types || !n) return 1;
    for (size_t i = 0; i < n; i++)
        if (types[i] && !strcmp(types[i], t->type_name)) return 1;
    return 0;
}

int exec_export(store *s, const graph_snapshot *snap, const char *const *types, size_t n_types,
                exec_export_sink sink, void *arg, exec_export_stats *st)
{
    return exec_export_cat(s, snap, NULL, types, n_types, sink, arg, st);
}

int exec_export_cat(store *s, const graph_snapshot *snap, const lang_catalog *cat,
                    const char *const *types, size_t n_types, exec_export_sink sink, void *arg,
                    exec_export_stats *st)
{
    exec_export_stats local;
    if (!st) st = &local;
    memset(st, 0, sizeof *st);
    if (!s || !snap || !sink) return core_err(OG_E_BAD_REQUEST, "exec_export: missing argument");
    for (size_t i = 0; types && i < n_types; i++) {
        int found = 0;
        for (size_t k = 0; !found && k < snap->n_tables; k++)
            found = types[i] && !strcmp(types[i], snap->tables[k].type_name);
        if (!found) {
            core_err(OG_E_NOT_FOUND,
                     "no node or edge type '%s' in the graph at manifest version "
                     "%" PRIu64,
                     types[i] ? types[i] : "(null)", snap->manifest_version);
            core_err_detail(CORE_ERR_OBJECT, types[i] ? types[i] : "");
            return OG_E_NOT_FOUND;
        }
    }
    export_ctx c = {.sink = sink, .arg = arg, .out = CORE_BUF_INIT, .st = st};
    int rc = 0;
    /* Nodes first, so that a reader meets every endpoint before its edges; tables are sorted
     * by alias, which within a kind is the type name's order. */
    for (int kind = LANG_NODE; kind <= LANG_EDGE && !rc; kind++) {
        for (size_t i = 0; i < snap->n_tables && !rc; i++) {
            const graph_table *t = &snap->tables[i];
            if (t->kind != kind || !wanted(t, types, n_types)) continue;
            int ti = cat ? lang_catalog_find(cat, t->type_name, kind) : -1;
            rc = export_table(&c, s, t, ti >= 0 ? &cat->types[ti] : NULL);
        }
    }
    if (!rc) rc = flush(&c);
    core_buf_free(&c.out);
    return rc;
}
