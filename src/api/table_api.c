/* The public Lance table API (include/omnigraph.h, "Lance tables"): a directory opened as a
 * local object store whose root is the table, a dataset snapshot on it, and the readers the
 * CLI's `omnigraph lance ...` commands use: schema, history, statistics, Arrow streams and the
 * canonical JSON dump. */
#include "omnigraph.h"

#include "arrow/arrow.h"
#include "arrow/arrow_json.h"
#include "core/alloc.h"
#include "core/buf.h"
#include "api/options.h"
#include "core/error.h"
#include "lance/dataset.h"
#include "lance/manifest.h"
#include "lance/version.h"
#include "store/store.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct og_table {
    _Atomic long refs;
    store *s;
    lance_dataset *ds;
    char *dir;
};

static void table_unref(og_table *t)
{
    if (!t || atomic_fetch_sub(&t->refs, 1) != 1) return;
    lance_dataset_free(t->ds);
    if (t->s) store_close(t->s);
    core_free(t->dir);
    core_free(t);
}

int og_table_open(og_table **out, const char *dir, uint64_t version)
{
    if (!out) return core_err(OG_E_BAD_REQUEST, "og_table_open: out is NULL");
    *out = NULL;
    if (!dir || !*dir) return core_err(OG_E_BAD_REQUEST, "og_table_open: no directory given");
    int rc = store_local_check_root(dir); /* before "no such directory" */
    if (rc) return rc;
    struct stat st;
    if (stat(dir, &st) != 0) {
        if (errno == ENOENT || errno == ENOTDIR) {
            core_err(OG_E_NOT_FOUND, "no table at '%s': no such directory", dir);
            core_err_detail(CORE_ERR_OBJECT, dir);
            return OG_E_NOT_FOUND;
        }
        return core_err_storage(errno, dir, "cannot open table directory '%s'", dir);
    }
    if (!S_ISDIR(st.st_mode)) {
        core_err(OG_E_NOT_FOUND, "no table at '%s': not a directory", dir);
        core_err_detail(CORE_ERR_OBJECT, dir);
        return OG_E_NOT_FOUND;
    }
    og_table *t = core_calloc(1, sizeof *t);
    if (!t) return core_err_nomem();
    atomic_init(&t->refs, 1);
    t->dir = core_strdup(dir);
    if (!t->dir) {
        table_unref(t);
        return core_err_nomem();
    }
    /* Inspecting writes nothing, so a read-only directory opens too. */
    rc = store_local_open_readonly(&t->s, dir);
    if (!rc) rc = lance_dataset_open(&t->ds, t->s, "", version, LANCE_ACCESS_INSPECT);
    if (rc) {
        if (rc == OG_E_NOT_FOUND && version == 0)
            core_err_prefix("no Lance table at '%s'", dir);
        else
            core_err_prefix("opening table '%s'", dir);
        table_unref(t);
        return rc;
    }
    *out = t;
    return 0;
}

void og_table_close(og_table *t)
{
    table_unref(t);
}

uint64_t og_table_version(const og_table *t)
{
    return t ? lance_dataset_version(t->ds) : 0;
}

int og_table_schema(struct ArrowSchema *out, const og_table *t)
{
    if (!out || !t) return core_err(OG_E_BAD_REQUEST, "og_table_schema: missing argument");
    return arrow_schema_export(&t->ds->schema, out);
}

/* ---- schema as text ------------------------------------------------------------------------ */

static int lance_type_name(core_buf *b, const arrow_type *ty)
{
    static const char *const units[] = {"s", "ms", "us", "ns"};
    switch (ty->id) {
    case ARROW_NA:
        return core_buf_append_str(b, "null");
    case ARROW_BOOL:
        return core_buf_append_str(b, "bool");
    case ARROW_INT32:
        return core_buf_append_str(b, "int32");
    case ARROW_INT64:
        return core_buf_append_str(b, "int64");
    case ARROW_UINT32:
        return core_buf_append_str(b, "uint32");
    case ARROW_UINT64:
        return core_buf_append_str(b, "uint64");
    case ARROW_FLOAT32:
        return core_buf_append_str(b, "float");
    case ARROW_FLOAT64:
        return core_buf_append_str(b, "double");
    case ARROW_UTF8:
        return core_buf_append_str(b, "string");
    case ARROW_LARGE_UTF8:
        return core_buf_append_str(b, "large_string");
    case ARROW_BINARY:
        return core_buf_append_str(b, "binary");
    case ARROW_LARGE_BINARY:
        return core_buf_append_str(b, "large_binary");
    case ARROW_DATE32:
        return core_buf_append_str(b, "date32:day");
    case ARROW_DATE64:
        return core_buf_append_str(b, "date64:ms");
    case ARROW_TIMESTAMP:
        return core_buf_printf(b, "timestamp:%s:%s", units[ty->unit & 3],
                               ty->tz && *ty->tz ? ty->tz : "-");
    case ARROW_FIXED_SIZE_LIST: {
        int rc = core_buf_append_str(b, "fixed_size_list:");
        if (!rc) rc = lance_type_name(b, &ty->children[0].type);
        return rc ? rc : core_buf_printf(b, ":%d", (int)ty->list_size);
    }
    case ARROW_LIST:
        return core_buf_append_str(b, "list");
    case ARROW_STRUCT:
        return core_buf_append_str(b, "struct");
    default:
        return core_buf_append_str(b, "unknown");
    }
}

static int has_children(const arrow_type *ty)
{
    return ty->id == ARROW_LIST || ty->id == ARROW_STRUCT;
}

static int schema_json(core_buf *b, const arrow_field *f, size_t n)
{
    int rc = core_buf_append_byte(b, '[');
    for (size_t i = 0; i < n && !rc; i++) {
        if (i) rc = core_buf_append_byte(b, ',');
        if (!rc) rc = core_buf_append_str(b, "{\"name\":");
        if (!rc) rc = arrow_json_string(b, f[i].name, strlen(f[i].name));
        if (!rc) rc = core_buf_append_str(b, ",\"type\":\"");
        if (!rc) rc = lance_type_name(b, &f[i].type); /* no characters that need escapes */
        if (!rc) rc = core_buf_printf(b, "\",\"nullable\":%s", f[i].nullable ? "true" : "false");
        if (!rc && has_children(&f[i].type)) {
            rc = core_buf_append_str(b, ",\"children\":");
            if (!rc) rc = schema_json(b, f[i].type.children, f[i].type.n_children);
        }
        if (!rc) rc = core_buf_append_byte(b, '}');
    }
    return rc ? rc : core_buf_append_byte(b, ']');
}

static int schema_text(core_buf *b, const arrow_field *f, size_t n, int depth)
{
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        rc = core_buf_printf(b, "%*s%s: ", 2 * depth, "", f[i].name);
        if (!rc) rc = lance_type_name(b, &f[i].type);
        if (!rc) rc = core_buf_append_str(b, f[i].nullable ? "\n" : " not null\n");
        if (!rc && has_children(&f[i].type))
            rc = schema_text(b, f[i].type.children, f[i].type.n_children, depth + 1);
    }
    return rc;
}

static int write_out(FILE *f, const void *p, size_t n)
{
    if (n && fwrite(p, 1, n, f) != n)
        return core_err_storage(errno ? errno : EIO, NULL, "writing output");
    return 0;
}

int og_table_write_schema(FILE *f, const og_table *t, int format)
{
    if (!f || !t) return core_err(OG_E_BAD_REQUEST, "og_table_write_schema: missing argument");
    if (format != OG_OUTPUT_TEXT && format != OG_OUTPUT_JSON)
        return core_err(OG_E_BAD_REQUEST, "og_table_write_schema: unknown output format %d",
                        format);
    core_buf b = CORE_BUF_INIT;
    const arrow_schema *s = &t->ds->schema;
    int rc;
    if (format == OG_OUTPUT_JSON) {
        rc = core_buf_append_str(&b, "{\"fields\":");
        if (!rc) rc = schema_json(&b, s->fields, s->n_fields);
        if (!rc) rc = core_buf_append_str(&b, "}\n");
    } else {
        rc = schema_text(&b, s->fields, s->n_fields, 0);
    }
    if (!rc) rc = write_out(f, b.data, b.len);
    core_buf_free(&b);
    return rc;
}

/* ---- stats and history --------------------------------------------------------------------- */

/* The storage facts of t into *out (zeroed by the caller). */
static int table_stats(og_table_info *out, const og_table *t)
{
    lance_manifest_summary sum;
    lance_manifest_summarize(t->ds->m, &sum);
    out->version = sum.version;
    out->columns = t->ds->schema.n_fields;
    out->fragments = sum.fragments;
    out->data_files = sum.data_files;
    out->data_bytes = sum.data_bytes;
    out->physical_rows = sum.physical_rows;
    out->deletion_files = sum.deletion_files_arrow + sum.deletion_files_bitmap;
    out->deletion_files_arrow = sum.deletion_files_arrow;
    out->deletion_files_bitmap = sum.deletion_files_bitmap;
    int rc = lance_dataset_count_rows(t->ds, &out->rows);
    if (rc) return rc;
    out->deleted_rows = out->physical_rows >= out->rows ? out->physical_rows - out->rows : 0;
    snprintf(out->data_storage_version, sizeof out->data_storage_version, "%s",
             sum.data_storage_version);
    snprintf(out->naming, sizeof out->naming, "%s", t->ds->naming == LANCE_NAMING_V1 ? "v1" : "v2");
    out->reader_flags = sum.reader_flags;
    out->writer_flags = sum.writer_flags;
    out->stable_row_ids = (sum.reader_flags & LANCE_FLAG_STABLE_ROW_IDS) != 0;
    out->timestamp_ns = sum.timestamp_ns;
    return 0;
}

int og_table_stats(og_table_info **out, const og_table *t)
{
    if (!out) return core_err(OG_E_BAD_REQUEST, "og_table_stats: out is NULL");
    *out = NULL;
    if (!t) return core_err(OG_E_BAD_REQUEST, "og_table_stats: no table");
    og_table_info *info = core_calloc(1, sizeof *info);
    if (!info) return core_err_nomem();
    int rc = table_stats(info, t);
    if (rc) {
        og_table_info_free(info);
        return rc;
    }
    *out = info;
    return 0;
}

void og_table_info_free(og_table_info *info)
{
    core_free(info);
}

struct og_table_version_list {
    og_table_version_info *v;
    size_t n;
};

int og_table_versions(og_table_version_list **out, const og_table *t)
{
    if (!out) return core_err(OG_E_BAD_REQUEST, "og_table_versions: out is NULL");
    *out = NULL;
    if (!t) return core_err(OG_E_BAD_REQUEST, "og_table_versions: no table");
    og_table_version_list *list = core_calloc(1, sizeof *list);
    if (!list) return core_err_nomem();
    lance_version_list l = {0};
    int rc = lance_versions_list(t->s, "", &l);
    if (rc) {
        core_free(list);
        return rc;
    }
    og_table_version_info *v = core_calloc(l.n ? l.n : 1, sizeof *v);
    if (!v) {
        lance_version_list_free(&l);
        core_free(list);
        return core_err_nomem();
    }
    for (size_t i = 0; i < l.n && !rc; i++) {
        lance_manifest *m = NULL;
        rc = lance_version_load(t->s, "", l.v[i], l.naming, LANCE_ACCESS_INSPECT, &m);
        if (rc) break;
        lance_manifest_summary sum;
        lance_manifest_summarize(m, &sum);
        v[i].version = l.v[i];
        v[i].timestamp_ns = sum.timestamp_ns;
        v[i].fragments = sum.fragments;
        v[i].physical_rows = sum.physical_rows;
        lance_manifest_free(m);
    }
    if (rc) {
        core_free(v);
        core_free(list);
    } else {
        list->v = v;
        list->n = l.n;
        *out = list;
    }
    lance_version_list_free(&l);
    return rc;
}

size_t og_table_version_list_count(const og_table_version_list *l)
{
    return l ? l->n : 0;
}

const og_table_version_info *og_table_version_list_get(const og_table_version_list *l, size_t i)
{
    return l && i < l->n ? &l->v[i] : NULL;
}

void og_table_version_list_free(og_table_version_list *l)
{
    if (!l) return;
    core_free(l->v);
    core_free(l);
}

/* ---- scans --------------------------------------------------------------------------------- */

static int scanner_open(lance_scanner **sc, const og_table *t, const og_scan_options *o)
{
    og_scan_options def = OG_SCAN_OPTIONS_INIT;
    if (!o) o = &def;
    int vrc = api_options_check(o->version, OG_SCAN_OPTIONS_VERSION, "og_scan_options");
    if (vrc) return vrc;
    int rc = lance_manifest_check_access(t->ds->m, LANCE_ACCESS_READ, t->dir);
    if (rc) return rc;
    for (size_t i = 0; i < o->n_columns; i++) {
        if (!o->columns[i]) return core_err(OG_E_BAD_REQUEST, "column %zu is NULL", i);
        if (arrow_schema_find(&t->ds->schema, o->columns[i]) < 0) {
            core_err(OG_E_BAD_REQUEST, "table '%s' has no column '%s'", t->dir, o->columns[i]);
            core_err_detail(CORE_ERR_OBJECT, t->dir);
            return OG_E_BAD_REQUEST;
        }
        for (size_t j = 0; j < i; j++)
            if (!strcmp(o->columns[i], o->columns[j]))
                return core_err(OG_E_BAD_REQUEST, "column '%s' is selected twice", o->columns[i]);
    }
    lance_scan_options so = LANCE_SCAN_OPTIONS_INIT;
    so.columns = o->n_columns ? o->columns : NULL;
    so.n_columns = o->n_columns;
    so.limit = o->limit;
    return lance_scanner_open(sc, t->ds, &so);
}

typedef struct table_stream {
    og_table *t;
    lance_scanner *sc;
    char *err;
} table_stream;

static void stream_set_error(table_stream *p)
{
    core_free(p->err);
    p->err = core_strdup(og_error_last()->message);
}

static int errno_of(int rc)
{
    return rc == OG_E_NOMEM ? ENOMEM : rc == OG_E_BAD_REQUEST ? EINVAL : EIO;
}

static int stream_get_schema(struct ArrowArrayStream *s, struct ArrowSchema *out)
{
    table_stream *p = s->private_data;
    int rc = arrow_schema_export(lance_scanner_schema(p->sc), out);
    if (rc) {
        stream_set_error(p);
        return errno_of(rc);
    }
    return 0;
}

static int stream_get_next(struct ArrowArrayStream *s, struct ArrowArray *out)
{
    table_stream *p = s->private_data;
    arrow_batch *b = NULL;
    int rc = lance_scanner_next(p->sc, &b);
    if (!rc && !b) {
        memset(out, 0, sizeof *out); /* end of stream: a released array */
        return 0;
    }
    if (!rc) rc = arrow_batch_export(b, out);
    arrow_batch_free(b);
    if (rc) {
        stream_set_error(p);
        return errno_of(rc);
    }
    return 0;
}

static const char *stream_last_error(struct ArrowArrayStream *s)
{
    table_stream *p = s->private_data;
    return p->err;
}

static void stream_release(struct ArrowArrayStream *s)
{
    table_stream *p = s->private_data;
    if (p) {
        lance_scanner_free(p->sc);
        table_unref(p->t);
        core_free(p->err);
        core_free(p);
    }
    s->release = NULL;
}

int og_table_scan(struct ArrowArrayStream *out, const og_table *t, const og_scan_options *opts)
{
    if (!out || !t) return core_err(OG_E_BAD_REQUEST, "og_table_scan: missing argument");
    memset(out, 0, sizeof *out);
    table_stream *p = core_calloc(1, sizeof *p);
    if (!p) return core_err_nomem();
    int rc = scanner_open(&p->sc, t, opts);
    if (rc) {
        core_free(p);
        return rc;
    }
    p->t = (og_table *)t; /* the reference count is the only thing a stream changes */
    atomic_fetch_add(&p->t->refs, 1);
    out->get_schema = stream_get_schema;
    out->get_next = stream_get_next;
    out->get_last_error = stream_last_error;
    out->release = stream_release;
    out->private_data = p;
    return 0;
}

/* ---- the canonical JSON dump and the text table -------------------------------------------- */

typedef struct line_ref {
    size_t off, len;
    const unsigned char *p; /* set once every line is in the buffer */
    int id_kind;            /* 0: no id ordering, 1: null id, 2: signed, 3: unsigned */
    int64_t i;
    uint64_t u;
} line_ref;

static int cmp_lines(const void *pa, const void *pb)
{
    const line_ref *a = pa, *b = pb;
    if (a->id_kind && b->id_kind) {
        if ((a->id_kind == 1) != (b->id_kind == 1)) return a->id_kind == 1 ? -1 : 1;
        if (a->id_kind == 2 && a->i != b->i) return a->i < b->i ? -1 : 1;
        if (a->id_kind == 3 && a->u != b->u) return a->u < b->u ? -1 : 1;
    }
    size_t n = a->len < b->len ? a->len : b->len;
    int c = memcmp(a->p, b->p, n);
    if (c) return c;
    return (a->len > b->len) - (a->len < b->len);
}

int og_table_write_json(uint64_t *rows, FILE *f, const og_table *t, const og_scan_options *opts)
{
    if (rows) *rows = 0;
    if (!f || !t) return core_err(OG_E_BAD_REQUEST, "og_table_write_json: missing argument");
    lance_scanner *sc = NULL;
    int rc = scanner_open(&sc, t, opts);
    if (rc) return rc;
    const arrow_schema *os = lance_scanner_schema(sc);
    int id_col = arrow_schema_find(os, "id");
    int id_signed = 0;
    if (id_col >= 0) {
        arrow_type_id k = os->fields[id_col].type.id;
        if (k == ARROW_INT32 || k == ARROW_INT64)
            id_signed = 1;
        else if (k != ARROW_UINT32 && k != ARROW_UINT64)
            id_col = -1; /* not an integer: order by the line bytes only */
    }
    core_buf text = CORE_BUF_INIT;
    line_ref *lines = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        arrow_batch *b = NULL;
        rc = lance_scanner_next(sc, &b);
        if (rc || !b) break;
        for (int64_t r = 0; r < b->num_rows && !rc; r++) {
            if (n == cap) {
                size_t nc = cap ? cap * 2 : 1024;
                line_ref *nl = core_realloc(lines, nc * sizeof *nl);
                if (!nl) {
                    rc = core_err_nomem();
                    break;
                }
                lines = nl;
                cap = nc;
            }
            line_ref *L = &lines[n];
            memset(L, 0, sizeof *L);
            L->off = text.len;
            rc = core_buf_append_byte(&text, '{');
            for (size_t c = 0; c < b->n_columns && !rc; c++) {
                const char *name = b->schema.fields[c].name;
                if (c) rc = core_buf_append_byte(&text, ',');
                if (!rc) rc = arrow_json_string(&text, name, strlen(name));
                if (!rc) rc = core_buf_append_byte(&text, ':');
                if (!rc) {
                    rc = arrow_json_value(&text, b->columns[c], r);
                    if (rc == OG_E_CORRUPT)
                        core_err_prefix("table '%s', column '%s', row %zu of the scan", t->dir,
                                        name, n);
                }
            }
            if (!rc) rc = core_buf_append_str(&text, "}\n");
            if (rc) break;
            L->len = text.len - L->off;
            if (id_col >= 0) {
                const arrow_array *ida = b->columns[id_col];
                if (!arrow_array_is_valid(ida, r))
                    L->id_kind = 1;
                else if (id_signed)
                    L->id_kind = 2, L->i = arrow_array_get_int(ida, r);
                else
                    L->id_kind = 3, L->u = arrow_array_get_uint(ida, r);
            }
            n++;
        }
        arrow_batch_free(b);
        if (rc) break;
    }
    lance_scanner_free(sc);
    if (!rc) {
        for (size_t i = 0; i < n; i++)
            lines[i].p = text.data + lines[i].off;
        if (n > 1) qsort(lines, n, sizeof *lines, cmp_lines);
        for (size_t i = 0; i < n && !rc; i++)
            rc = write_out(f, lines[i].p, lines[i].len);
        if (!rc && fflush(f) != 0)
            rc = core_err_storage(errno ? errno : EIO, NULL, "writing output");
        if (!rc && rows) *rows = n;
    }
    core_free(lines);
    core_buf_free(&text);
    return rc;
}

#define CELL_MAX 40

int og_table_write_text(uint64_t *rows, FILE *f, const og_table *t, const og_scan_options *opts)
{
    if (rows) *rows = 0;
    if (!f || !t) return core_err(OG_E_BAD_REQUEST, "og_table_write_text: missing argument");
    lance_scanner *sc = NULL;
    int rc = scanner_open(&sc, t, opts);
    if (rc) return rc;
    const arrow_schema *os = lance_scanner_schema(sc);
    size_t nc = os->n_fields;
    size_t *width = core_calloc(nc ? nc : 1, sizeof *width);
    core_buf cells = CORE_BUF_INIT, cell = CORE_BUF_INIT;
    size_t *ends = NULL, n_cells = 0, cap = 0;
    uint64_t n = 0;
    if (!width) rc = core_err_nomem();
    for (size_t c = 0; c < nc && !rc; c++)
        width[c] = strlen(os->fields[c].name);
    while (!rc) {
        arrow_batch *b = NULL;
        rc = lance_scanner_next(sc, &b);
        if (rc || !b) break;
        for (int64_t r = 0; r < b->num_rows && !rc; r++, n++) {
            for (size_t c = 0; c < nc && !rc; c++) {
                core_buf_clear(&cell);
                rc = arrow_json_value(&cell, b->columns[c], r);
                if (rc) break;
                size_t len = cell.len;
                if (len > CELL_MAX) {
                    len = CELL_MAX - 3;
                    while (len > 0 && (cell.data[len] & 0xc0) == 0x80)
                        len--; /* whole UTF-8 */
                }
                for (size_t k = 0; k < len; k++) /* one line per row: control bytes as '?' */
                    if (cell.data[k] < 0x20) cell.data[k] = '?';
                rc = core_buf_append(&cells, cell.data, len);
                if (!rc && len < cell.len) rc = core_buf_append_str(&cells, "...");
                if (rc) break;
                if (n_cells == cap) {
                    size_t ncap = cap ? cap * 2 : 1024;
                    size_t *ne = core_realloc(ends, ncap * sizeof *ne);
                    if (!ne) {
                        rc = core_err_nomem();
                        break;
                    }
                    ends = ne;
                    cap = ncap;
                }
                size_t start = n_cells ? ends[n_cells - 1] : 0;
                ends[n_cells++] = cells.len;
                size_t w = 0; /* display width: count UTF-8 lead bytes */
                for (size_t k = start; k < cells.len; k++)
                    w += (cells.data[k] & 0xc0) != 0x80;
                if (w > width[c]) width[c] = w;
            }
        }
        arrow_batch_free(b);
    }
    core_buf line = CORE_BUF_INIT; /* os lives in the scanner: free it last */
    for (size_t c = 0; c < nc && !rc; c++)
        rc = core_buf_printf(&line, "%s%-*s", c ? "  " : "", c + 1 < nc ? (int)width[c] : 0,
                             os->fields[c].name);
    if (!rc) rc = core_buf_append_byte(&line, '\n');
    if (!rc) rc = write_out(f, line.data, line.len);
    for (uint64_t r = 0; r < n && !rc; r++) {
        core_buf_clear(&line);
        for (size_t c = 0; c < nc && !rc; c++) {
            size_t i = (size_t)r * nc + c;
            size_t start = i ? ends[i - 1] : 0;
            size_t w = 0;
            for (size_t k = start; k < ends[i]; k++)
                w += (cells.data[k] & 0xc0) != 0x80;
            if (c) rc = core_buf_append_str(&line, "  ");
            if (!rc) rc = core_buf_append(&line, cells.data + start, ends[i] - start);
            if (c + 1 < nc)
                for (size_t k = w; k < width[c] && !rc; k++)
                    rc = core_buf_append_byte(&line, ' ');
        }
        if (!rc) rc = core_buf_append_byte(&line, '\n');
        if (!rc) rc = write_out(f, line.data, line.len);
    }
    if (!rc && fflush(f) != 0) rc = core_err_storage(errno ? errno : EIO, NULL, "writing output");
    if (!rc && rows) *rows = n;
    core_buf_free(&line);
    core_buf_free(&cell);
    core_buf_free(&cells);
    core_free(ends);
    core_free(width);
    lance_scanner_free(sc);
    return rc;
}
