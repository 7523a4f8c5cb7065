/* The JSONL bulk-load reader: turns node and edge lines into one change per type, rows built
 * straight into Arrow builders in the table's schema, ids derived from @key, checked against
 * data.id, or minted. Strict: anything it does not understand is an error naming the line. */
#include "exec/load.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/json.h"

#include <float.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define LOAD_MAX_LINE (32u * 1024u * 1024u)
#define LOAD_PROGRESS_EVERY 4096u

int exec_load_mode_parse(const char *s, exec_load_mode *out)
{
    if (s && !strcmp(s, "append")) *out = EXEC_LOAD_APPEND;
    else if (s && !strcmp(s, "merge")) *out = EXEC_LOAD_MERGE;
    else if (s && !strcmp(s, "overwrite")) *out = EXEC_LOAD_OVERWRITE;
    else
        return core_err(OG_E_BAD_REQUEST,
                        "unknown load mode '%s' (expected append, merge or overwrite)",
                        s ? s : "(null)");
    return 0;
}

const char *exec_load_mode_name(exec_load_mode m)
{
    switch (m) {
    case EXEC_LOAD_APPEND: return "append";
    case EXEC_LOAD_MERGE: return "merge";
    case EXEC_LOAD_OVERWRITE: return "overwrite";
    default: return "unknown";
    }
}

/* Rows of one type being built. */
typedef struct type_acc {
    int used;
    const lang_typedef *t;
    arrow_schema schema;
    arrow_builder **b;  /* one per schema field */
    size_t first_prop;  /* column of property 0 (1 for nodes, 3 for edges) */
    int *keypos;        /* per property: its position in t->key, or -1 */
    uint64_t *lines;
    size_t n, cap;
} type_acc;

typedef struct load_ctx {
    const lang_catalog *cat;
    const char *file;
    uint64_t line;
    type_acc *acc;       /* one per catalog type */
    const json_t **vals; /* scratch: data member per property */
    size_t vals_cap;
    lang_value *keyvals; /* scratch: key values of the current row */
    size_t keyvals_cap;
} load_ctx;

static int line_err(const load_ctx *c, const char *fmt, ...) CORE_PRINTF(2, 3);
static int line_err(const load_ctx *c, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int line = c->line > INT_MAX ? INT_MAX : (int)c->line;
    return core_err_at(c->file, line, 0, "line %" PRIu64 ": %s", c->line, msg);
}

/* "string \"x\"", "integer 5", ... for messages (strings cut to 40 bytes). */
static void describe(const json_t *v, char *buf, size_t cap)
{
    switch (json_typeof(v)) {
    case JSON_STRING: {
        size_t n = json_string_length(v);
        snprintf(buf, cap, "string \"%.*s%s\"", (int)(n > 40 ? 40 : n), json_string_value(v),
                 n > 40 ? "..." : "");
        break;
    }
    case JSON_INTEGER: snprintf(buf, cap, "integer %" JSON_INTEGER_FORMAT, json_integer_value(v)); break;
    case JSON_REAL: snprintf(buf, cap, "number %g", json_real_value(v)); break;
    case JSON_TRUE: snprintf(buf, cap, "true"); break;
    case JSON_FALSE: snprintf(buf, cap, "false"); break;
    case JSON_NULL: snprintf(buf, cap, "null"); break;
    case JSON_ARRAY: snprintf(buf, cap, "an array"); break;
    default: snprintf(buf, cap, "an object"); break;
    }
}

static int type_mismatch(const load_ctx *c, const lang_typedef *t, const lang_prop *p,
                         const char *expected, const json_t *v)
{
    char got[96];
    describe(v, got, sizeof got);
    return line_err(c, "%s.%s: expected %s, got %s", t->name, p->name, expected, got);
}

static void int_value(lang_value *kv, int64_t x)
{
    memset(kv, 0, sizeof *kv);
    kv->kind = LANG_V_INT;
    kv->neg = x < 0;
    kv->u = x < 0 ? (uint64_t)(-(x + 1)) + 1u : (uint64_t)x;
}

/* Append one non-null scalar `v` of `scalar` to builder b; kv (may be NULL) receives it as a
 * lang_value for key derivation (strings borrowed from v). */
static int append_scalar(const load_ctx *c, const lang_typedef *t, const lang_prop *p,
                         arrow_builder *b, int scalar, const json_t *v, lang_value *kv)
{
    const char *sname = lang_scalar_name(scalar);
    lang_value tmp;
    if (!kv) kv = &tmp;
    memset(kv, 0, sizeof *kv);
    switch (scalar) {
    case LANG_S_STRING:
    case LANG_S_BLOB:
        /* Blob values are given as strings and stored as their bytes. */
        if (!json_is_string(v)) return type_mismatch(c, t, p, sname, v);
        kv->kind = LANG_V_STRING;
        kv->s = json_string_value(v);
        return arrow_builder_append_bytes(b, json_string_value(v), json_string_length(v));
    case LANG_S_BOOL:
        if (!json_is_boolean(v)) return type_mismatch(c, t, p, sname, v);
        kv->kind = LANG_V_BOOL;
        kv->u = json_is_true(v);
        return arrow_builder_append_bool(b, json_is_true(v));
    case LANG_S_I32:
    case LANG_S_I64:
    case LANG_S_U32:
    case LANG_S_U64: {
        if (!json_is_integer(v)) return type_mismatch(c, t, p, sname, v);
        json_int_t x = json_integer_value(v);
        int bad = (scalar == LANG_S_I32 && (x < INT32_MIN || x > INT32_MAX)) ||
                  (scalar == LANG_S_U32 && (x < 0 || x > (json_int_t)UINT32_MAX)) ||
                  (scalar == LANG_S_U64 && x < 0);
        if (bad)
            return line_err(c, "%s.%s: %" JSON_INTEGER_FORMAT " is out of range for %s",
                            t->name, p->name, x, sname);
        int_value(kv, (int64_t)x);
        if (scalar == LANG_S_U32 || scalar == LANG_S_U64)
            return arrow_builder_append_uint(b, (uint64_t)x);
        return arrow_builder_append_int(b, (int64_t)x);
    }
    case LANG_S_F32:
    case LANG_S_F64: {
        if (!json_is_number(v)) return type_mismatch(c, t, p, sname, v);
        double d = json_number_value(v);
        if (scalar == LANG_S_F32) {
            if (isfinite(d) && fabs(d) > FLT_MAX)
                return line_err(c, "%s.%s: %g is out of range for F32", t->name, p->name, d);
            d = (double)(float)d;
        }
        kv->kind = LANG_V_FLOAT;
        kv->f = d;
        return arrow_builder_append_double(b, d);
    }
    case LANG_S_DATE:
    case LANG_S_DATETIME: {
        int64_t x;
        if (json_is_string(v)) {
            const char *s = json_string_value(v);
            int bad = scalar == LANG_S_DATE ? lang_parse_date(s, &x) : lang_parse_datetime(s, &x);
            if (bad || strlen(s) != json_string_length(v))
                return line_err(c, "%s.%s: \"%.40s\" is not a valid %s (%s)", t->name, p->name,
                                s, sname,
                                scalar == LANG_S_DATE ? "YYYY-MM-DD"
                                                      : "YYYY-MM-DDTHH:MM:SS[.mmm](Z|+HH:MM)");
        } else if (json_is_integer(v)) {
            x = (int64_t)json_integer_value(v);
        } else {
            return type_mismatch(c, t, p,
                                 scalar == LANG_S_DATE ? "Date (ISO string or integer days)"
                                                       : "DateTime (ISO string or integer ms)",
                                 v);
        }
        if (scalar == LANG_S_DATE && (x < INT32_MIN || x > INT32_MAX))
            return line_err(c, "%s.%s: %" PRId64 " days is out of range for Date", t->name,
                            p->name, x);
        kv->kind = scalar == LANG_S_DATE ? LANG_V_DATE : LANG_V_DATETIME;
        kv->checked = 1;
        kv->i = x;
        return arrow_builder_append_int(b, x);
    }
    default: return core_err(OG_E_INTERNAL, "unknown scalar %d", scalar);
    }
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Append property p's value (v may be NULL: absent). */
static int append_prop(const load_ctx *c, const lang_typedef *t, const lang_prop *p,
                       arrow_builder *b, const json_t *v, lang_value *kv)
{
    const lang_type *ty = &p->type;
    if (!v || json_is_null(v)) {
        if (!ty->nullable)
            return line_err(c, "%s.%s: %s for a non-nullable property", t->name, p->name,
                            v ? "null" : "missing value");
        if (kv) memset(kv, 0, sizeof *kv); /* LANG_V_NULL: lang_key_id refuses it */
        return arrow_builder_append_null(b);
    }
    switch (ty->kind) {
    case LANG_TY_SCALAR: return append_scalar(c, t, p, b, ty->scalar, v, kv);
    case LANG_TY_ENUM: {
        if (!json_is_string(v)) return type_mismatch(c, t, p, "an enum string", v);
        const char *s = json_string_value(v);
        if (!bsearch(&s, ty->enum_vals, ty->n_enum, sizeof *ty->enum_vals, cmp_str))
            return line_err(c, "%s.%s: \"%.40s\" is not a value of the enum", t->name, p->name, s);
        if (kv) {
            memset(kv, 0, sizeof *kv);
            kv->kind = LANG_V_STRING;
            kv->s = s;
        }
        return arrow_builder_append_bytes(b, s, json_string_length(v));
    }
    case LANG_TY_LIST: {
        if (!json_is_array(v)) return type_mismatch(c, t, p, "a JSON array", v);
        arrow_builder *child = arrow_builder_child(b, 0);
        size_t n = json_array_size(v);
        for (size_t i = 0; i < n; i++) {
            const json_t *it = json_array_get(v, i);
            if (json_is_null(it))
                return line_err(c, "%s.%s: list item %zu is null", t->name, p->name, i);
            int rc = append_scalar(c, t, p, child, ty->scalar, it, NULL);
            if (rc) return rc;
        }
        return arrow_builder_append_list(b, (int64_t)n);
    }
    case LANG_TY_VECTOR: {
        if (!json_is_array(v)) return type_mismatch(c, t, p, "a JSON array of numbers", v);
        size_t n = json_array_size(v);
        if (n != ty->dim)
            return line_err(c, "%s.%s: vector has %zu values, expected %u", t->name, p->name, n,
                            ty->dim);
        arrow_builder *child = arrow_builder_child(b, 0);
        for (size_t i = 0; i < n; i++) {
            const json_t *it = json_array_get(v, i);
            if (!json_is_number(it)) {
                char got[96];
                describe(it, got, sizeof got);
                return line_err(c, "%s.%s: vector item %zu: expected a number, got %s", t->name,
                                p->name, i, got);
            }
            double d = json_number_value(it);
            if (fabs(d) > FLT_MAX)
                return line_err(c, "%s.%s: vector item %zu: %g is out of range for F32",
                                t->name, p->name, i, d);
            int rc = arrow_builder_append_double(child, d);
            if (rc) return rc;
        }
        return arrow_builder_append_valid(b);
    }
    default: return core_err(OG_E_INTERNAL, "unknown property type kind %d", ty->kind);
    }
}

static void acc_clear(type_acc *a)
{
    if (!a->used) return;
    for (size_t i = 0; i < a->schema.n_fields; i++) arrow_builder_free(a->b[i]);
    core_free(a->b);
    core_free(a->keypos);
    core_free(a->lines);
    arrow_schema_clear(&a->schema);
    memset(a, 0, sizeof *a);
}

static int acc_init(type_acc *a, const lang_typedef *t)
{
    memset(a, 0, sizeof *a);
    int rc = graph_type_schema(&a->schema, t);
    if (rc) return rc;
    a->used = 1;
    a->t = t;
    a->first_prop = t->kind == LANG_EDGE ? 3 : 1;
    a->b = core_calloc(a->schema.n_fields, sizeof *a->b);
    a->keypos = core_malloc((t->n_props ? t->n_props : 1) * sizeof *a->keypos);
    if (!a->b || !a->keypos) return core_err_nomem();
    for (size_t i = 0; i < a->schema.n_fields; i++) {
        rc = arrow_builder_new(&a->b[i], &a->schema.fields[i].type);
        if (rc) return rc;
    }
    for (size_t i = 0; i < t->n_props; i++) a->keypos[i] = -1;
    for (size_t k = 0; k < t->n_key; k++) a->keypos[t->key[k]] = (int)k;
    return 0;
}

static int grow_scratch(load_ctx *c, size_t props, size_t keys)
{
    if (props > c->vals_cap) {
        const json_t **v = core_realloc(c->vals, props * sizeof *v);
        if (!v) return core_err_nomem();
        c->vals = v;
        c->vals_cap = props;
    }
    if (keys > c->keyvals_cap) {
        lang_value *k = core_realloc(c->keyvals, keys * sizeof *k);
        if (!k) return core_err_nomem();
        c->keyvals = k;
        c->keyvals_cap = keys;
    }
    return 0;
}

static int is_reserved_member(const char *k)
{
    return !strncmp(k, "_row", 4) || !strcmp(k, "_tombstone");
}

/* One parsed line object: validate its shape and append its row. */
static int load_object(load_ctx *c, const json_t *obj, exec_load_stats *st)
{
    const json_t *jtype = NULL, *jedge = NULL, *jfrom = NULL, *jto = NULL, *jdata = NULL;
    const char *key;
    const json_t *val;
    json_object_foreach((json_t *)obj, key, val) {
        if (!strcmp(key, "type")) jtype = val;
        else if (!strcmp(key, "edge")) jedge = val;
        else if (!strcmp(key, "from")) jfrom = val;
        else if (!strcmp(key, "to")) jto = val;
        else if (!strcmp(key, "data")) jdata = val;
        else
            return line_err(c, "unknown top-level member \"%.60s\" (expected type or edge, "
                               "from, to, data)", key);
    }
    if (!!jtype == !!jedge)
        return line_err(c, "a line holds exactly one of \"type\" (a node) or \"edge\"");
    int kind = jtype ? LANG_NODE : LANG_EDGE;
    const json_t *jname = jtype ? jtype : jedge;
    if (!json_is_string(jname))
        return line_err(c, "\"%s\" must be a string naming a %s type", jtype ? "type" : "edge",
                        jtype ? "node" : "edge");
    const char *tname = json_string_value(jname);
    int ti = lang_catalog_find(c->cat, tname, kind);
    if (ti < 0 && kind == LANG_EDGE) ti = lang_catalog_find_edge_ci(c->cat, tname);
    if (ti < 0)
        return line_err(c, "unknown %s type \"%.60s\"", kind == LANG_NODE ? "node" : "edge",
                        tname);
    const lang_typedef *t = &c->cat->types[ti];
    if (kind == LANG_NODE && (jfrom || jto))
        return line_err(c, "%s: \"from\"/\"to\" are only allowed on edge lines", t->name);
    if (kind == LANG_EDGE) {
        if (!jfrom || !jto)
            return line_err(c, "%s: an edge line needs \"from\" and \"to\"", t->name);
        if (!json_is_string(jfrom) || !json_string_length(jfrom) || !json_is_string(jto) ||
            !json_string_length(jto))
            return line_err(c, "%s: \"from\" and \"to\" must be non-empty node id strings",
                            t->name);
    }
    if (jdata && !json_is_object(jdata)) {
        char got[96];
        describe(jdata, got, sizeof got);
        return line_err(c, "%s: \"data\" must be an object, got %s", t->name, got);
    }

    type_acc *a = &c->acc[ti];
    int rc;
    if (!a->used && (rc = acc_init(a, t))) {
        acc_clear(a);
        return rc;
    }
    if ((rc = grow_scratch(c, t->n_props ? t->n_props : 1, t->n_key ? t->n_key : 1))) return rc;
    for (size_t i = 0; i < t->n_props; i++) c->vals[i] = NULL;

    const json_t *jid = NULL;
    if (jdata) {
        json_object_foreach((json_t *)jdata, key, val) {
            if (!strcmp(key, GRAPH_COL_ID)) {
                jid = val;
                continue;
            }
            if (kind == LANG_EDGE && (!strcmp(key, GRAPH_COL_SRC) || !strcmp(key, GRAPH_COL_DST)))
                return line_err(c, "%s: data.%s is not allowed (use \"from\"/\"to\")", t->name,
                                key);
            if (is_reserved_member(key))
                return line_err(c, "%s: data.%.60s is a reserved name", t->name, key);
            int p = lang_type_find_prop(t, key);
            if (p < 0)
                return line_err(c, "%s: unknown property \"%.60s\"", t->name, key);
            c->vals[p] = val;
        }
    }
    if (jid && (!json_is_string(jid) || !json_string_length(jid))) {
        char got[96];
        describe(jid, got, sizeof got);
        return line_err(c, "%s: data.id must be a non-empty string, got %s", t->name, got);
    }

    for (size_t i = 0; i < t->n_props; i++) {
        int kp = a->keypos[i];
        rc = append_prop(c, t, &t->props[i], a->b[a->first_prop + i], c->vals[i],
                         kp >= 0 ? &c->keyvals[kp] : NULL);
        if (rc) return rc;
    }

    /* The id: derived from @key (and data.id must agree), else data.id, else a new ULID. */
    if (kind == LANG_NODE && t->n_key) {
        char *derived = NULL;
        rc = lang_key_id(&derived, t, c->keyvals);
        if (rc) return line_err(c, "%s: cannot derive the id from @key: %s", t->name,
                                og_error_last()->message);
        if (jid && strcmp(json_string_value(jid), derived)) {
            rc = line_err(c, "%s: data.id \"%.60s\" differs from the id derived from @key "
                             "(\"%.60s\")", t->name, json_string_value(jid), derived);
            core_free(derived);
            return rc;
        }
        rc = arrow_builder_append_str(a->b[0], derived);
        core_free(derived);
    } else if (jid) {
        rc = arrow_builder_append_bytes(a->b[0], json_string_value(jid), json_string_length(jid));
    } else {
        core_ulid u;
        char text[CORE_ULID_LEN + 1];
        if ((rc = core_ulid_new(&u))) return rc;
        core_ulid_format(&u, text);
        rc = arrow_builder_append_bytes(a->b[0], text, CORE_ULID_LEN);
    }
    if (rc) return rc;
    if (kind == LANG_EDGE) {
        if ((rc = arrow_builder_append_bytes(a->b[1], json_string_value(jfrom),
                                             json_string_length(jfrom))))
            return rc;
        if ((rc = arrow_builder_append_bytes(a->b[2], json_string_value(jto),
                                             json_string_length(jto))))
            return rc;
    }
    if (a->n == a->cap) {
        size_t nc = a->cap ? a->cap * 2 : 256;
        uint64_t *l = core_realloc(a->lines, nc * sizeof *l);
        if (!l) return core_err_nomem();
        a->lines = l;
        a->cap = nc;
    }
    a->lines[a->n++] = c->line;
    if (kind == LANG_NODE) st->nodes++;
    else st->edges++;
    return 0;
}

static int is_blank(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r') return 0;
    return 1;
}

static int finish(graph_change_set *out, load_ctx *c, exec_load_mode mode, exec_load_stats *st)
{
    size_t n = 0;
    for (size_t i = 0; i < c->cat->n_types; i++) n += c->acc[i].used && c->acc[i].n;
    if (!n) return 0;
    out->changes = core_calloc(n, sizeof *out->changes);
    if (!out->changes) return core_err_nomem();
    int gmode = mode == EXEC_LOAD_APPEND  ? GRAPH_CHANGE_INSERT
                : mode == EXEC_LOAD_MERGE ? GRAPH_CHANGE_UPSERT
                                          : GRAPH_CHANGE_REPLACE;
    for (size_t i = 0; i < c->cat->n_types; i++) {
        type_acc *a = &c->acc[i];
        if (!a->used || !a->n) continue;
        size_t nf = a->schema.n_fields;
        arrow_array **cols = core_calloc(nf, sizeof *cols);
        if (!cols) return core_err_nomem();
        int rc = 0;
        for (size_t f = 0; f < nf && !rc; f++) rc = arrow_builder_finish(a->b[f], &cols[f]);
        graph_change *ch = &out->changes[out->n];
        if (!rc) rc = arrow_batch_new(&ch->rows, &a->schema, cols, nf);
        for (size_t f = 0; f < nf; f++) arrow_array_free(cols[f]);
        core_free(cols);
        if (rc) return rc;
        ch->type_index = (int)i;
        ch->mode = gmode;
        ch->lines = a->lines;
        a->lines = NULL;
        a->cap = 0;
        out->n++;
        if (a->t->kind == LANG_NODE) st->node_types++;
        else st->edge_types++;
    }
    return 0;
}

int exec_load_parse(graph_change_set *out, const lang_catalog *cat, const char *data,
                    size_t len, const char *file, exec_load_mode mode, exec_load_stats *stats,
                    exec_load_progress_fn progress, void *progress_arg)
{
    memset(out, 0, sizeof *out);
    out->file = file;
    exec_load_stats st_local;
    exec_load_stats *st = stats ? stats : &st_local;
    memset(st, 0, sizeof *st);
    if (mode != EXEC_LOAD_APPEND && mode != EXEC_LOAD_MERGE && mode != EXEC_LOAD_OVERWRITE)
        return core_err(OG_E_BAD_REQUEST, "unknown load mode %d", (int)mode);
    if (!data && len) return core_err(OG_E_BAD_REQUEST, "no input bytes");

    load_ctx c = {.cat = cat, .file = file};
    c.acc = core_calloc(cat->n_types ? cat->n_types : 1, sizeof *c.acc);
    if (!c.acc) return core_err_nomem();

    int rc = 0;
    size_t off = 0;
    while (off < len) {
        const char *p = data + off;
        const char *nl = memchr(p, '\n', len - off);
        size_t n = nl ? (size_t)(nl - p) : len - off;
        off += n + (nl ? 1 : 0);
        c.line++;
        st->lines = c.line;
        if (progress && c.line % LOAD_PROGRESS_EVERY == 0)
            progress(progress_arg, off, len, c.line);
        if (n > LOAD_MAX_LINE) {
            rc = line_err(&c, "line is %zu bytes, more than the limit of 32 MiB", n);
            break;
        }
        if (is_blank(p, n)) continue;
        json_error_t jerr;
        json_t *obj = json_loadb(p, n, JSON_REJECT_DUPLICATES, &jerr);
        if (!obj) {
            int col = jerr.column > 0 ? jerr.column : 0;
            rc = line_err(&c, "invalid JSON at column %d: %s", col, jerr.text);
            core_err_set_location(file, c.line > INT_MAX ? INT_MAX : (int)c.line, col);
            break;
        }
        if (!json_is_object(obj)) {
            rc = line_err(&c, "a line must be a JSON object");
        } else {
            rc = load_object(&c, obj, st);
        }
        json_decref(obj);
        if (rc) break;
    }
    if (!rc) rc = finish(out, &c, mode, st);
    if (!rc && progress) progress(progress_arg, len, len, c.line);
    for (size_t i = 0; i < cat->n_types; i++) acc_clear(&c.acc[i]);
    core_free(c.acc);
    core_free(c.vals);
    core_free(c.keyvals);
    if (rc) {
        graph_change_set_clear(out);
        memset(out, 0, sizeof *out);
        /* keep the caller's counts of what was read, but no rows survive */
    }
    return rc;
}
