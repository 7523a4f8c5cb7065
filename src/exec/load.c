/* The JSONL bulk-load reader: turns node and edge lines into one change per type, rows built
 * straight into Arrow builders in the table's schema, ids derived from @key, checked against
 * data.id, or minted. Strict: anything it does not understand is an error naming the line.
 * Plain lines take a single-pass scanner; any other line goes through jansson (see below).
 * The load request (exec_load, request.h) parses a file and writes it as one graph commit, in
 * chunks, each staged before the next is read (see "the load in chunks" below). */
#include "exec/load.h"
#include "exec/request.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/json.h"
#include "core/ulid.h"

#include <float.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define LOAD_MAX_LINE (32u * 1024u * 1024u)
#define LOAD_PROGRESS_EVERY 4096u

int exec_load_mode_parse(const char *s, exec_load_mode *out)
{
    if (s && !strcmp(s, "append"))
        *out = EXEC_LOAD_APPEND;
    else if (s && !strcmp(s, "merge"))
        *out = EXEC_LOAD_MERGE;
    else if (s && !strcmp(s, "overwrite"))
        *out = EXEC_LOAD_OVERWRITE;
    else
        return core_err(OG_E_BAD_REQUEST,
                        "unknown load mode '%s' (expected append, merge or overwrite)",
                        s ? s : "(null)");
    return 0;
}

const char *exec_load_mode_name(exec_load_mode m)
{
    switch (m) {
    case EXEC_LOAD_APPEND:
        return "append";
    case EXEC_LOAD_MERGE:
        return "merge";
    case EXEC_LOAD_OVERWRITE:
        return "overwrite";
    default:
        return "unknown";
    }
}

/* Rows of one type being built. */
typedef struct type_acc {
    int used;
    const lang_typedef *t;
    arrow_schema schema;
    arrow_builder **b; /* one per schema field */
    size_t first_prop; /* column of property 0 (1 for nodes, 3 for edges) */
    int *keypos;       /* per property: its position in t->key, or -1 */
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
    char mint_text[CORE_ULID_LEN]; /* the next minted id of the reserved block, as text */
    uint64_t mint_left;            /* ids left in the block */
} load_ctx;

static const char ULID_ENC[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/* core_ulid_format's text, five bits at a time from two words instead of bit by bit. */
static void fast_ulid_text(const core_ulid *u, char out[CORE_ULID_LEN])
{
    uint64_t hi = 0, lo = 0;
    for (int i = 0; i < 8; i++) {
        hi = (hi << 8) | u->b[i];
        lo = (lo << 8) | u->b[8 + i];
    }
    /* 26 chars x 5 bits = 130 bits over the 128-bit value: char i holds bits s..s+4 counted
     * from the least significant end, s = 125 - 5i (the first char only its top 3 bits). */
    out[0] = ULID_ENC[hi >> 61];
    for (int i = 1; i < CORE_ULID_LEN; i++) {
        int s = 125 - 5 * i;
        uint64_t v;
        if (s >= 64)
            v = hi >> (s - 64);
        else if (s + 5 <= 64)
            v = lo >> s;
        else
            v = (lo >> s) | (hi << (64 - s));
        out[i] = ULID_ENC[v & 31u];
    }
}

/* The text of the next id of a reserved block: the id plus one, counted in base 32 on the
 * text itself (a block never carries past its random part). */
static void ulid_text_step(char t[CORE_ULID_LEN])
{
    for (int i = CORE_ULID_LEN - 1; i > 0; i--) {
        const char *at = strchr(ULID_ENC, t[i]);
        size_t v = at ? (size_t)(at - ULID_ENC) : 0;
        if (v < 31) {
            t[i] = ULID_ENC[v + 1];
            return;
        }
        t[i] = '0';
    }
}

/* A new id for a row that names none: the next of the block the load reserved (increasing in
 * file order, no lock or clock per id), else a fresh one. */
static int mint_id(load_ctx *c, char out[CORE_ULID_LEN])
{
    if (c->mint_left) {
        memcpy(out, c->mint_text, CORE_ULID_LEN);
        ulid_text_step(c->mint_text);
        c->mint_left--;
        return 0;
    }
    core_ulid u;
    int rc = core_ulid_new(&u);
    if (!rc) fast_ulid_text(&u, out);
    return rc;
}

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
    case JSON_INTEGER:
        snprintf(buf, cap, "integer %" JSON_INTEGER_FORMAT, json_integer_value(v));
        break;
    case JSON_REAL:
        snprintf(buf, cap, "number %g", json_real_value(v));
        break;
    case JSON_TRUE:
        snprintf(buf, cap, "true");
        break;
    case JSON_FALSE:
        snprintf(buf, cap, "false");
        break;
    case JSON_NULL:
        snprintf(buf, cap, "null");
        break;
    case JSON_ARRAY:
        snprintf(buf, cap, "an array");
        break;
    default:
        snprintf(buf, cap, "an object");
        break;
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
            return line_err(c, "%s.%s: %" JSON_INTEGER_FORMAT " is out of range for %s", t->name,
                            p->name, x, sname);
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
                return line_err(
                    c, "%s.%s: \"%.40s\" is not a valid %s (%s)", t->name, p->name, s, sname,
                    scalar == LANG_S_DATE ? "YYYY-MM-DD" : "YYYY-MM-DDTHH:MM:SS[.mmm](Z|+HH:MM)");
        } else if (json_is_integer(v)) {
            x = (int64_t)json_integer_value(v);
        } else {
            return type_mismatch(c, t, p,
                                 scalar == LANG_S_DATE ? "Date (ISO string or integer days)"
                                                       : "DateTime (ISO string or integer ms)",
                                 v);
        }
        if (scalar == LANG_S_DATE && (x < INT32_MIN || x > INT32_MAX))
            return line_err(c, "%s.%s: %" PRId64 " days is out of range for Date", t->name, p->name,
                            x);
        kv->kind = scalar == LANG_S_DATE ? LANG_V_DATE : LANG_V_DATETIME;
        kv->checked = 1;
        kv->i = x;
        return arrow_builder_append_int(b, x);
    }
    default:
        return core_err(OG_E_INTERNAL, "unknown scalar %d", scalar);
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
    case LANG_TY_SCALAR:
        return append_scalar(c, t, p, b, ty->scalar, v, kv);
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
                return line_err(c, "%s.%s: vector item %zu: %g is out of range for F32", t->name,
                                p->name, i, d);
            int rc = arrow_builder_append_double(child, d);
            if (rc) return rc;
        }
        return arrow_builder_append_valid(b);
    }
    default:
        return core_err(OG_E_INTERNAL, "unknown property type kind %d", ty->kind);
    }
}

static void acc_clear(type_acc *a)
{
    if (!a->used) return;
    for (size_t i = 0; i < a->schema.n_fields; i++)
        arrow_builder_free(a->b[i]);
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
    for (size_t i = 0; i < t->n_props; i++)
        a->keypos[i] = -1;
    for (size_t k = 0; k < t->n_key; k++)
        a->keypos[t->key[k]] = (int)k;
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
    json_object_foreach((json_t *)obj, key, val)
    {
        if (!strcmp(key, "type"))
            jtype = val;
        else if (!strcmp(key, "edge"))
            jedge = val;
        else if (!strcmp(key, "from"))
            jfrom = val;
        else if (!strcmp(key, "to"))
            jto = val;
        else if (!strcmp(key, "data"))
            jdata = val;
        else
            return line_err(c,
                            "unknown top-level member \"%.60s\" (expected type or edge, "
                            "from, to, data)",
                            key);
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
        return line_err(c, "unknown %s type \"%.60s\"", kind == LANG_NODE ? "node" : "edge", tname);
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
    for (size_t i = 0; i < t->n_props; i++)
        c->vals[i] = NULL;

    const json_t *jid = NULL;
    if (jdata) {
        json_object_foreach((json_t *)jdata, key, val)
        {
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
            if (p < 0) return line_err(c, "%s: unknown property \"%.60s\"", t->name, key);
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
        if (rc)
            return line_err(c, "%s: cannot derive the id from @key: %s", t->name,
                            og_error_last()->message);
        if (jid && strcmp(json_string_value(jid), derived)) {
            rc = line_err(c,
                          "%s: data.id \"%.60s\" differs from the id derived from @key "
                          "(\"%.60s\")",
                          t->name, json_string_value(jid), derived);
            core_free(derived);
            return rc;
        }
        rc = arrow_builder_append_str(a->b[0], derived);
        core_free(derived);
    } else if (jid) {
        rc = arrow_builder_append_bytes(a->b[0], json_string_value(jid), json_string_length(jid));
    } else {
        char text[CORE_ULID_LEN];
        if ((rc = mint_id(c, text))) return rc;
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
    if (kind == LANG_NODE)
        st->nodes++;
    else
        st->edges++;
    return 0;
}

/* ---- the fast path ------------------------------------------------------------------------
 * Most lines are plain: the two fixed shapes, unescaped strings, scalar values. Those are read
 * here in one pass, without building a jansson tree. The fast path only ever accepts: it reads
 * and checks the whole line before appending anything, and any line it does not fully accept
 * (escapes, arrays, nested objects, any error at all) is handed to the jansson path above,
 * which then reports exactly what it always reported. So strictness and messages cannot drift:
 * the fast path is a subset that is known to agree. */

enum { FT_NONE = 0, FT_STR, FT_INT, FT_REAL, FT_TRUE, FT_FALSE, FT_NULL };

typedef struct ftok {
    int kind;
    const char *p; /* FT_STR: the bytes (no escapes, valid UTF-8, no control bytes) */
    size_t n;
    int64_t i; /* FT_INT */
    double d;  /* FT_REAL (and FT_INT as a double) */
} ftok;

#define FAST_MAX_MEMBERS 64
#define FAST_FALLBACK 1

typedef struct fast_line {
    ftok type, edge, from, to;
    int has_type, has_edge, has_from, has_to, has_data;
    size_t n_members;
    ftok keys[FAST_MAX_MEMBERS];
    ftok vals[FAST_MAX_MEMBERS];
} fast_line;

static const char *fast_ws(const char *p, const char *e)
{
    if (p < e && (unsigned char)*p > ' ') return p; /* the usual case: no whitespace */
    while (p < e && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
        p++;
    return p;
}

/* Strict UTF-8 of one multi-byte sequence at p (first byte >= 0x80): its length, 0 if bad
 * (overlong forms, surrogates and values past U+10FFFF are refused, as jansson does). */
static size_t fast_utf8(const unsigned char *p, const unsigned char *e)
{
    unsigned c = p[0];
    size_t n;
    uint32_t v;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2, v = c & 0x1Fu;
    else if (c >= 0xE0 && c <= 0xEF)
        n = 3, v = c & 0x0Fu;
    else if (c >= 0xF0 && c <= 0xF4)
        n = 4, v = c & 0x07u;
    else
        return 0;
    if ((size_t)(e - p) < n) return 0;
    for (size_t k = 1; k < n; k++) {
        if ((p[k] & 0xC0u) != 0x80u) return 0;
        v = (v << 6) | (p[k] & 0x3Fu);
    }
    if ((n == 3 && v < 0x800) || (n == 4 && v < 0x10000) || v > 0x10FFFF ||
        (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    return n;
}

/* A string at p (on its opening quote): the position after it, or NULL to fall back. */
static const char *fast_string(const char *p, const char *e, ftok *t)
{
    const unsigned char *s = (const unsigned char *)p + 1, *ue = (const unsigned char *)e;
    const unsigned char *q = s;
    for (;;) {
        /* Eight bytes at a time up to the first that is '"', '\\', a control byte or
         * non-ASCII. The lowest flagged byte of `special` is exact (a borrow only carries
         * upward, from a byte that is flagged itself), so the scan jumps straight to it. */
        while (ue - q >= 8) {
            uint64_t w;
            memcpy(&w, q, 8);
            const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
            uint64_t quote = w ^ (ones * '"'), bslash = w ^ (ones * '\\');
            uint64_t special =
                (((quote - ones) & ~quote) | ((bslash - ones) & ~bslash) | (w - ones * 0x20u) | w) &
                highs;
            if (special) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
                q += (unsigned)__builtin_ctzll(special) / 8; /* the first byte is the lowest */
#endif
                break;
            }
            q += 8;
        }
        if (q >= ue) return NULL;
        unsigned c = *q;
        if (c == '"') break;
        if (c == '\\' || c < 0x20) return NULL;
        if (c < 0x80) {
            q++;
            continue;
        }
        size_t n = fast_utf8(q, ue);
        if (!n) return NULL;
        q += n;
    }
    t->kind = FT_STR;
    t->p = (const char *)s;
    t->n = (size_t)(q - s);
    return (const char *)q + 1;
}

/* A number in JSON's grammar: integers of up to 18 digits exactly, others through strtod
 * (refusing overflow as jansson does); anything else falls back. */
static const char *fast_number(const char *p, const char *e, ftok *t)
{
    const char *q = p;
    int neg = 0, real = 0;
    if (q < e && *q == '-') neg = 1, q++;
    const char *d0 = q;
    if (q < e && *q == '0')
        q++;
    else {
        if (q >= e || *q < '1' || *q > '9') return NULL;
        while (q < e && *q >= '0' && *q <= '9')
            q++;
    }
    size_t ndig = (size_t)(q - d0);
    if (q < e && *q == '.') {
        real = 1;
        q++;
        if (q >= e || *q < '0' || *q > '9') return NULL;
        while (q < e && *q >= '0' && *q <= '9')
            q++;
    }
    if (q < e && (*q == 'e' || *q == 'E')) {
        real = 1;
        q++;
        if (q < e && (*q == '+' || *q == '-')) q++;
        if (q >= e || *q < '0' || *q > '9') return NULL;
        while (q < e && *q >= '0' && *q <= '9')
            q++;
    }
    if (!real) {
        if (ndig > 18) return NULL;
        int64_t x = 0;
        for (const char *r = d0; r < q; r++)
            x = x * 10 + (*r - '0');
        t->kind = FT_INT;
        t->i = neg ? -x : x;
        t->d = (double)t->i;
        return q;
    }
    char buf[64];
    size_t n = (size_t)(q - p);
    if (n >= sizeof buf) return NULL;
    memcpy(buf, p, n);
    buf[n] = '\0';
    double d = strtod(buf, NULL);
    if (isinf(d)) return NULL;
    t->kind = FT_REAL;
    t->d = d;
    return q;
}

/* One scalar value (string, number, true, false, null); arrays and objects fall back. */
static const char *fast_value(const char *p, const char *e, ftok *t)
{
    if (p >= e) return NULL;
    switch (*p) {
    case '"':
        return fast_string(p, e, t);
    case 't':
        if (e - p < 4 || memcmp(p, "true", 4)) return NULL;
        t->kind = FT_TRUE;
        return p + 4;
    case 'f':
        if (e - p < 5 || memcmp(p, "false", 5)) return NULL;
        t->kind = FT_FALSE;
        return p + 5;
    case 'n':
        if (e - p < 4 || memcmp(p, "null", 4)) return NULL;
        t->kind = FT_NULL;
        return p + 4;
    default:
        if (*p == '-' || (*p >= '0' && *p <= '9')) return fast_number(p, e, t);
        return NULL;
    }
}

static int tok_is(const ftok *t, const char *lit, size_t n)
{
    return t->n == n && !memcmp(t->p, lit, n);
}

/* The object after "data": scalar members only. NULL to fall back. */
static const char *fast_data(const char *p, const char *e, fast_line *fl)
{
    p = fast_ws(p + 1, e);
    if (p < e && *p == '}') return p + 1;
    for (;;) {
        if (fl->n_members == FAST_MAX_MEMBERS || p >= e || *p != '"') return NULL;
        ftok *k = &fl->keys[fl->n_members];
        if (!(p = fast_string(p, e, k))) return NULL;
        p = fast_ws(p, e);
        if (p >= e || *p != ':') return NULL;
        p = fast_ws(p + 1, e);
        if (!(p = fast_value(p, e, &fl->vals[fl->n_members]))) return NULL;
        fl->n_members++;
        p = fast_ws(p, e);
        if (p >= e) return NULL;
        if (*p == '}') return p + 1;
        if (*p != ',') return NULL;
        p = fast_ws(p + 1, e);
    }
}

/* Tokenise a whole line; 0 when it has the plain shape, FAST_FALLBACK otherwise. */
static int fast_scan(const char *p, size_t len, fast_line *fl)
{
    const char *e = p + len;
    fl->has_type = fl->has_edge = fl->has_from = fl->has_to = fl->has_data = 0;
    fl->n_members = 0;
    p = fast_ws(p, e);
    if (p >= e || *p != '{') return FAST_FALLBACK;
    p = fast_ws(p + 1, e);
    for (;;) {
        ftok k;
        if (p >= e || *p != '"' || !(p = fast_string(p, e, &k))) return FAST_FALLBACK;
        p = fast_ws(p, e);
        if (p >= e || *p != ':') return FAST_FALLBACK;
        p = fast_ws(p + 1, e);
        ftok *slot = NULL;
        int *has = NULL;
        if (tok_is(&k, "type", 4))
            slot = &fl->type, has = &fl->has_type;
        else if (tok_is(&k, "edge", 4))
            slot = &fl->edge, has = &fl->has_edge;
        else if (tok_is(&k, "from", 4))
            slot = &fl->from, has = &fl->has_from;
        else if (tok_is(&k, "to", 2))
            slot = &fl->to, has = &fl->has_to;
        else if (tok_is(&k, "data", 4))
            has = &fl->has_data;
        else
            return FAST_FALLBACK;
        if (*has) return FAST_FALLBACK; /* duplicate member */
        *has = 1;
        if (slot) {
            if (p >= e || *p != '"' || !(p = fast_string(p, e, slot)) || !slot->n)
                return FAST_FALLBACK;
        } else {
            if (p >= e || *p != '{' || !(p = fast_data(p, e, fl))) return FAST_FALLBACK;
        }
        p = fast_ws(p, e);
        if (p >= e) return FAST_FALLBACK;
        if (*p == '}') break;
        if (*p != ',') return FAST_FALLBACK;
        p = fast_ws(p + 1, e);
    }
    return fast_ws(p + 1, e) == e ? 0 : FAST_FALLBACK;
}

/* A NUL-terminated copy of a short token into buf; 0 if it does not fit. */
static int tok_cstr(const ftok *t, char *buf, size_t cap)
{
    if (t->n >= cap) return 0;
    memcpy(buf, t->p, t->n);
    buf[t->n] = '\0';
    return 1;
}

static int enum_has(const lang_type *ty, const char *s)
{
    size_t lo = 0, hi = ty->n_enum;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(ty->enum_vals[mid], s);
        if (!c) return 1;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

/* Per property of the current line: the value token (or NULL) and, for key properties, a
 * NUL-terminated copy of string values. */
typedef struct fast_scratch {
    const ftok *val[FAST_MAX_MEMBERS];
    char str[FAST_MAX_MEMBERS][256];
    char type_name[256];
    int last_ti; /* the type the last line named (a cache of the name lookup) */
    int last_kind;
    char last_name[256];
} fast_scratch;

/* Check one property value exactly as append_prop would, computing kv (may be NULL) and the
 * converted number in *num. FAST_FALLBACK when append_prop would refuse it or the value is not
 * a plain scalar. */
static int fast_check_prop(const lang_prop *p, const ftok *v, lang_value *kv, char *sbuf,
                           int64_t *inum, double *dnum)
{
    const lang_type *ty = &p->type;
    if (kv) memset(kv, 0, sizeof *kv);
    if (!v || v->kind == FT_NULL) return ty->nullable ? 0 : FAST_FALLBACK;
    if (ty->kind == LANG_TY_ENUM) {
        if (v->kind != FT_STR || !tok_cstr(v, sbuf, 256) || !enum_has(ty, sbuf))
            return FAST_FALLBACK;
        if (kv) kv->kind = LANG_V_STRING, kv->s = sbuf;
        return 0;
    }
    if (ty->kind != LANG_TY_SCALAR) return FAST_FALLBACK;
    switch (ty->scalar) {
    case LANG_S_STRING:
    case LANG_S_BLOB:
        if (v->kind != FT_STR) return FAST_FALLBACK;
        if (kv) {
            if (!tok_cstr(v, sbuf, 256)) return FAST_FALLBACK;
            kv->kind = LANG_V_STRING;
            kv->s = sbuf;
        }
        return 0;
    case LANG_S_BOOL:
        if (v->kind != FT_TRUE && v->kind != FT_FALSE) return FAST_FALLBACK;
        if (kv) kv->kind = LANG_V_BOOL, kv->u = v->kind == FT_TRUE;
        return 0;
    case LANG_S_I32:
    case LANG_S_I64:
    case LANG_S_U32:
    case LANG_S_U64: {
        if (v->kind != FT_INT) return FAST_FALLBACK;
        int64_t x = v->i;
        if ((ty->scalar == LANG_S_I32 && (x < INT32_MIN || x > INT32_MAX)) ||
            (ty->scalar == LANG_S_U32 && (x < 0 || x > (int64_t)UINT32_MAX)) ||
            (ty->scalar == LANG_S_U64 && x < 0))
            return FAST_FALLBACK;
        if (kv) int_value(kv, x);
        *inum = x;
        return 0;
    }
    case LANG_S_F32:
    case LANG_S_F64: {
        if (v->kind != FT_INT && v->kind != FT_REAL) return FAST_FALLBACK;
        double d = v->d;
        if (ty->scalar == LANG_S_F32) {
            if (isfinite(d) && fabs(d) > FLT_MAX) return FAST_FALLBACK;
            d = (double)(float)d;
        }
        if (kv) kv->kind = LANG_V_FLOAT, kv->f = d;
        *dnum = d;
        return 0;
    }
    case LANG_S_DATE:
    case LANG_S_DATETIME: {
        int64_t x;
        if (v->kind == FT_STR) {
            if (!tok_cstr(v, sbuf, 256)) return FAST_FALLBACK;
            int bad = ty->scalar == LANG_S_DATE ? lang_parse_date(sbuf, &x)
                                                : lang_parse_datetime(sbuf, &x);
            if (bad) return FAST_FALLBACK;
        } else if (v->kind == FT_INT) {
            x = v->i;
        } else {
            return FAST_FALLBACK;
        }
        if (ty->scalar == LANG_S_DATE && (x < INT32_MIN || x > INT32_MAX)) return FAST_FALLBACK;
        if (kv) {
            kv->kind = ty->scalar == LANG_S_DATE ? LANG_V_DATE : LANG_V_DATETIME;
            kv->checked = 1;
            kv->i = x;
        }
        *inum = x;
        return 0;
    }
    default:
        return FAST_FALLBACK;
    }
}

/* Append a value fast_check_prop accepted. */
static int fast_append_prop(const lang_prop *p, arrow_builder *b, const ftok *v, int64_t inum,
                            double dnum)
{
    const lang_type *ty = &p->type;
    if (!v || v->kind == FT_NULL) return arrow_builder_append_null(b);
    if (ty->kind == LANG_TY_ENUM) return arrow_builder_append_bytes(b, v->p, v->n);
    switch (ty->scalar) {
    case LANG_S_STRING:
    case LANG_S_BLOB:
        return arrow_builder_append_bytes(b, v->p, v->n);
    case LANG_S_BOOL:
        return arrow_builder_append_bool(b, v->kind == FT_TRUE);
    case LANG_S_U32:
    case LANG_S_U64:
        return arrow_builder_append_uint(b, (uint64_t)inum);
    case LANG_S_F32:
    case LANG_S_F64:
        return arrow_builder_append_double(b, dnum);
    default:
        return arrow_builder_append_int(b, inum);
    }
}

static int fast_prop_index(const lang_typedef *t, const ftok *k)
{
    for (size_t i = 0; i < t->n_props; i++) {
        const char *nm = t->props[i].name;
        if (!strncmp(nm, k->p, k->n) && nm[k->n] == '\0') return (int)i;
    }
    return -1;
}

/* Load one line through the fast path: 0 (row appended), FAST_FALLBACK (nothing appended:
 * hand the line to the jansson path), or a negative error (out of memory while appending). */
static int fast_line_load(load_ctx *c, const char *line, size_t len, fast_line *fl,
                          fast_scratch *fs, exec_load_stats *st)
{
    if (fast_scan(line, len, fl)) return FAST_FALLBACK;
    if (fl->has_type == fl->has_edge) return FAST_FALLBACK;
    int kind = fl->has_type ? LANG_NODE : LANG_EDGE;
    const ftok *name = kind == LANG_NODE ? &fl->type : &fl->edge;
    int ti;
    if (fs->last_ti >= 0 && fs->last_kind == kind && !strncmp(fs->last_name, name->p, name->n) &&
        fs->last_name[name->n] == '\0') {
        ti = fs->last_ti;
    } else {
        if (!tok_cstr(name, fs->type_name, sizeof fs->type_name)) return FAST_FALLBACK;
        ti = lang_catalog_find(c->cat, fs->type_name, kind);
        if (ti < 0 && kind == LANG_EDGE) ti = lang_catalog_find_edge_ci(c->cat, fs->type_name);
        if (ti < 0) return FAST_FALLBACK;
        memcpy(fs->last_name, fs->type_name, name->n + 1);
        fs->last_ti = ti;
        fs->last_kind = kind;
    }
    const lang_typedef *t = &c->cat->types[ti];
    if (kind == LANG_NODE && (fl->has_from || fl->has_to)) return FAST_FALLBACK;
    if (kind == LANG_EDGE && (!fl->has_from || !fl->has_to)) return FAST_FALLBACK;
    if (t->n_props > FAST_MAX_MEMBERS) return FAST_FALLBACK;
    for (size_t i = 0; i < t->n_props; i++)
        fs->val[i] = NULL;
    const ftok *jid = NULL;
    for (size_t m = 0; m < fl->n_members; m++) {
        const ftok *k = &fl->keys[m];
        if (tok_is(k, GRAPH_COL_ID, strlen(GRAPH_COL_ID))) {
            if (jid) return FAST_FALLBACK;
            jid = &fl->vals[m];
            continue;
        }
        if (kind == LANG_EDGE && (tok_is(k, GRAPH_COL_SRC, strlen(GRAPH_COL_SRC)) ||
                                  tok_is(k, GRAPH_COL_DST, strlen(GRAPH_COL_DST))))
            return FAST_FALLBACK;
        if ((k->n >= 4 && !memcmp(k->p, "_row", 4)) || tok_is(k, "_tombstone", 10))
            return FAST_FALLBACK;
        int p = fast_prop_index(t, k);
        if (p < 0 || fs->val[p]) return FAST_FALLBACK;
        fs->val[p] = &fl->vals[m];
    }
    if (jid && (jid->kind != FT_STR || !jid->n)) return FAST_FALLBACK;

    type_acc *a = &c->acc[ti];
    int rc;
    if (!a->used && (rc = acc_init(a, t))) {
        acc_clear(a);
        return rc;
    }
    if ((rc = grow_scratch(c, t->n_props ? t->n_props : 1, t->n_key ? t->n_key : 1))) return rc;
    int64_t inum[FAST_MAX_MEMBERS];
    double dnum[FAST_MAX_MEMBERS];
    for (size_t i = 0; i < t->n_props; i++) {
        int kp = a->keypos[i];
        inum[i] = 0;
        dnum[i] = 0;
        if (fast_check_prop(&t->props[i], fs->val[i], kp >= 0 ? &c->keyvals[kp] : NULL, fs->str[i],
                            &inum[i], &dnum[i]))
            return FAST_FALLBACK;
    }
    char *derived = NULL;
    if (kind == LANG_NODE && t->n_key) {
        if (lang_key_id(&derived, t, c->keyvals)) return FAST_FALLBACK;
        if (jid && (strlen(derived) != jid->n || memcmp(derived, jid->p, jid->n))) {
            core_free(derived);
            return FAST_FALLBACK;
        }
    }
    if (a->n == a->cap) {
        size_t nc = a->cap ? a->cap * 2 : 256;
        uint64_t *l = core_realloc(a->lines, nc * sizeof *l);
        if (!l) {
            core_free(derived);
            return core_err_nomem();
        }
        a->lines = l;
        a->cap = nc;
    }

    /* Accepted: append. */
    for (size_t i = 0; i < t->n_props && !rc; i++)
        rc = fast_append_prop(&t->props[i], a->b[a->first_prop + i], fs->val[i], inum[i], dnum[i]);
    if (!rc) {
        if (derived) {
            rc = arrow_builder_append_str(a->b[0], derived);
        } else if (jid) {
            rc = arrow_builder_append_bytes(a->b[0], jid->p, jid->n);
        } else {
            char text[CORE_ULID_LEN];
            if (!(rc = mint_id(c, text)))
                rc = arrow_builder_append_bytes(a->b[0], text, CORE_ULID_LEN);
        }
    }
    core_free(derived);
    if (!rc && kind == LANG_EDGE) {
        rc = arrow_builder_append_bytes(a->b[1], fl->from.p, fl->from.n);
        if (!rc) rc = arrow_builder_append_bytes(a->b[2], fl->to.p, fl->to.n);
    }
    if (rc) return rc;
    a->lines[a->n++] = c->line;
    if (kind == LANG_NODE)
        st->nodes++;
    else
        st->edges++;
    return 0;
}

static int is_blank(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r') return 0;
    return 1;
}

/* The columns of one type's rows: from part c's builders, followed by part c2's when both
 * parts saw the type (file order). */
static int finish_columns(arrow_array **cols, type_acc *a, type_acc *a2)
{
    size_t nf = (a->used ? a : a2)->schema.n_fields;
    int rc = 0;
    for (size_t f = 0; f < nf && !rc; f++) {
        if (!a->used || !a2 || !a2->used) {
            rc = arrow_builder_finish((a->used ? a : a2)->b[f], &cols[f]);
            continue;
        }
        arrow_array *part[2] = {NULL, NULL};
        rc = arrow_builder_finish(a->b[f], &part[0]);
        if (!rc) rc = arrow_builder_finish(a2->b[f], &part[1]);
        if (!rc) rc = arrow_array_concat(&cols[f], part, 2);
        arrow_array_free(part[0]);
        arrow_array_free(part[1]);
    }
    return rc;
}

/* Source lines of the rows, in the order finish_columns put them (taken from the parts). */
static int finish_lines(uint64_t **out, type_acc *a, type_acc *a2)
{
    if (!a2 || !a2->used || !a2->n) {
        *out = a->lines;
        a->lines = NULL;
        a->cap = 0;
        return 0;
    }
    if (!a->used || !a->n) {
        *out = a2->lines;
        a2->lines = NULL;
        a2->cap = 0;
        return 0;
    }
    uint64_t *l = core_realloc(a->lines, (a->n + a2->n) * sizeof *l);
    if (!l) return core_err_nomem();
    memcpy(l + a->n, a2->lines, a2->n * sizeof *l);
    *out = l;
    a->lines = NULL;
    a->cap = 0;
    return 0;
}

static int finish(graph_change_set *out, load_ctx *c, load_ctx *c2, exec_load_mode mode,
                  exec_load_stats *st)
{
    size_t n = 0;
    for (size_t i = 0; i < c->cat->n_types; i++)
        n += (c->acc[i].used && c->acc[i].n) || (c2 && c2->acc[i].used && c2->acc[i].n);
    if (!n) return 0;
    out->changes = core_calloc(n, sizeof *out->changes);
    if (!out->changes) return core_err_nomem();
    int gmode = mode == EXEC_LOAD_APPEND  ? GRAPH_CHANGE_INSERT
                : mode == EXEC_LOAD_MERGE ? GRAPH_CHANGE_UPSERT
                                          : GRAPH_CHANGE_REPLACE;
    for (size_t i = 0; i < c->cat->n_types; i++) {
        type_acc *a = &c->acc[i], *a2 = c2 ? &c2->acc[i] : NULL;
        size_t rows = (a->used ? a->n : 0) + (a2 && a2->used ? a2->n : 0);
        if (!rows) continue;
        type_acc *any = a->used ? a : a2;
        size_t nf = any->schema.n_fields;
        arrow_array **cols = core_calloc(nf, sizeof *cols);
        if (!cols) return core_err_nomem();
        int rc = finish_columns(cols, a, a2);
        graph_change *ch = &out->changes[out->n];
        if (!rc) rc = arrow_batch_new(&ch->rows, &any->schema, cols, nf);
        for (size_t f = 0; f < nf; f++)
            arrow_array_free(cols[f]);
        core_free(cols);
        if (!rc) rc = finish_lines(&ch->lines, a, a2);
        if (rc) return rc;
        ch->type_index = (int)i;
        ch->mode = gmode;
        out->n++;
        if (any->t->kind == LANG_NODE)
            st->node_types++;
        else
            st->edge_types++;
    }
    return 0;
}

/* One part of the input, parsed by one thread into its own accumulators. */
typedef struct load_part {
    load_ctx c;
    const char *data;
    size_t len;    /* the part's bytes */
    size_t before; /* bytes of the input before the part (its first line follows them) */
    const char *all;
    exec_load_stats st;
    exec_load_progress_fn progress; /* the first part only */
    void *progress_arg;
    uint64_t total;
    fast_line *fl;
    fast_scratch *fs;
    atomic_int *stop; /* set: give up (a second part, once the first has failed) */
    int rc;
    core_err_saved err; /* a second part's failure, for the joining thread */
} load_part;

static int parse_part(load_part *pt)
{
    load_ctx *c = &pt->c;
    exec_load_stats *st = &pt->st;
    const char *data = pt->data;
    size_t len = pt->len, off = 0;
    int rc = 0;
    while (off < len) {
        if (pt->stop && c->line % 1024 == 0 && atomic_load_explicit(pt->stop, memory_order_relaxed))
            return OG_E_BAD_REQUEST; /* not reported: the first part's error is */
        const char *p = data + off;
        const char *nl = memchr(p, '\n', len - off);
        size_t n = nl ? (size_t)(nl - p) : len - off;
        off += n + (nl ? 1 : 0);
        c->line++;
        st->lines++;
        if (pt->progress && c->line % LOAD_PROGRESS_EVERY == 0)
            pt->progress(pt->progress_arg,
                         (uint64_t)((double)off / (double)len * (double)pt->total), pt->total,
                         c->line);
        if (n > LOAD_MAX_LINE) {
            rc = line_err(c, "line is %zu bytes, more than the limit of 32 MiB", n);
            break;
        }
        if (is_blank(p, n)) continue;
        rc = fast_line_load(c, p, n, pt->fl, pt->fs, st);
        if (rc <= 0) {
            if (rc) break;
            continue;
        }
        rc = 0;
        json_error_t jerr;
        json_t *obj = core_json_loadb(p, n, JSON_REJECT_DUPLICATES, &jerr);
        if (!obj) {
            int col = jerr.column > 0 ? jerr.column : 0;
            rc = line_err(c, "invalid JSON at column %d: %s", col, core_json_error_text(&jerr));
            core_err_set_location(c->file, c->line > INT_MAX ? INT_MAX : (int)c->line, col);
            break;
        }
        if (!json_is_object(obj)) {
            rc = line_err(c, "a line must be a JSON object");
        } else {
            rc = load_object(c, obj, st);
        }
        json_decref(obj);
        if (rc) break;
    }
    return rc;
}

static void *parse_part_thread(void *arg)
{
    load_part *pt = arg;
    /* the part's first line number: the lines before it (it starts after a newline) */
    for (const char *p = pt->all, *e = pt->all + pt->before; p < e; p++) {
        p = memchr(p, '\n', (size_t)(e - p));
        if (!p) break;
        pt->c.line++;
    }
    pt->rc = parse_part(pt);
    if (pt->rc) core_err_save(&pt->err);
    return NULL;
}

/* A part over [before, before + len) of the input, with its own block of ids reserved
 * (parts reserve in file order, so minted ids increase across parts). */
/* base + n (a block core_ulid_reserve made covers it: no carry into the time part). */
static void ulid_plus(core_ulid *u, const core_ulid *base, uint64_t n)
{
    *u = *base;
    for (int i = 15; i >= 0 && n; i--) {
        uint64_t v = (uint64_t)u->b[i] + (n & 0xffu);
        u->b[i] = (uint8_t)v;
        n = (n >> 8) + (v >> 8);
    }
}

/* Where a part's minted ids come from: a block reserved for the whole input, the part at
 * input byte X taking the ids from X/4 on (a line that mints is at least 13 bytes, so no
 * part runs into the next one's), so that reading the input again mints the same ids. */
typedef struct mint_origin {
    core_ulid first;
    uint64_t at; /* input bytes before the range parsed */
} mint_origin;

static int part_init(load_part *pt, const lang_catalog *cat, const char *file, const char *all,
                     size_t before, size_t len, const mint_origin *mo)
{
    memset(pt, 0, sizeof *pt);
    pt->all = all;
    pt->data = all + before;
    pt->before = before;
    pt->len = len;
    pt->c.cat = cat;
    pt->c.file = file;
    pt->c.acc = core_calloc(cat->n_types ? cat->n_types : 1, sizeof *pt->c.acc);
    pt->fl = core_malloc(sizeof *pt->fl);
    pt->fs = core_malloc(sizeof *pt->fs);
    if (!pt->c.acc || !pt->fl || !pt->fs) return core_err_nomem();
    pt->fs->last_ti = -1;
    /* every line mints at most one id, and the shortest line that mints ({"type":"N"} and its
     * newline) is 13 bytes; ids are plentiful (80 random bits a millisecond), so reserve
     * generously rather than run out and mint the rest out of file order */
    core_ulid first;
    pt->c.mint_left = len / 8 + 1;
    int rc = 0;
    if (mo)
        ulid_plus(&first, &mo->first, (mo->at + before) / 4);
    else
        rc = core_ulid_reserve(&first, pt->c.mint_left);
    if (!rc) fast_ulid_text(&first, pt->c.mint_text);
    return rc;
}

static void part_clear(load_part *pt)
{
    if (pt->c.acc)
        for (size_t i = 0; i < pt->c.cat->n_types; i++)
            acc_clear(&pt->c.acc[i]);
    core_free(pt->c.acc);
    core_free(pt->fl);
    core_free(pt->fs);
    core_free(pt->c.vals);
    core_free(pt->c.keyvals);
}

/* Inputs of at least this many bytes are parsed by two threads, one per half (split after a
 * newline); a test may lower it to cover the split on small inputs. */
#define LOAD_SPLIT_DEFAULT ((size_t)8 << 20)
static size_t g_split_min = LOAD_SPLIT_DEFAULT;

#ifdef OG_TESTING
void exec_load_set_split_min(size_t bytes)
{
    g_split_min = bytes ? bytes : LOAD_SPLIT_DEFAULT;
}
#endif

/* Parse data[0..len), whose first line is line base_line + 1 of the input (0: the input's
 * start, where a byte order mark is refused). */
static int parse_range(graph_change_set *out, const lang_catalog *cat, const char *data, size_t len,
                       const char *file, exec_load_mode mode, exec_load_stats *stats,
                       exec_load_progress_fn progress, void *progress_arg, uint64_t base_line,
                       const mint_origin *mo)
{
    memset(out, 0, sizeof *out);
    out->file = file;
    exec_load_stats st_local;
    exec_load_stats *st = stats ? stats : &st_local;
    memset(st, 0, sizeof *st);
    if (mode != EXEC_LOAD_APPEND && mode != EXEC_LOAD_MERGE && mode != EXEC_LOAD_OVERWRITE)
        return core_err(OG_E_BAD_REQUEST, "unknown load mode %d", (int)mode);
    if (!data && len) return core_err(OG_E_BAD_REQUEST, "no input bytes");

    /* Said plainly: the BOM is invisible in most editors, so "'{' expected near ''" puzzles. */
    if (base_line == 0 && len >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0) {
        st->lines = 1;
        int rc = core_err_at(file, 1, 1,
                             "line 1: the file starts with a UTF-8 byte order mark "
                             "(bytes EF BB BF); save it as UTF-8 without a BOM");
        return rc;
    }
    /* Split point: the byte after the first newline past the middle (none: one part). */
    size_t mid = len;
    if (len >= g_split_min && sysconf(_SC_NPROCESSORS_ONLN) > 1) {
        const char *nl = memchr(data + len / 2, '\n', len - len / 2);
        if (nl && (size_t)(nl + 1 - data) < len) mid = (size_t)(nl + 1 - data);
    }
    load_part *pt = core_calloc(2, sizeof *pt);
    if (!pt) return core_err_nomem();
    int threaded = 0;
    atomic_int stop = 0; /* the first part failed: its error is the one to report */
    pthread_t th;
    int rc = part_init(&pt[0], cat, file, data, 0, mid, mo);
    pt[0].c.line = base_line;
    pt[0].progress = progress;
    pt[0].progress_arg = progress_arg;
    pt[0].total = len;
    if (!rc && mid < len) {
        rc = part_init(&pt[1], cat, file, data, mid, len - mid, mo);
        pt[1].c.line = base_line; /* parse_part_thread adds the lines before the part */
        pt[1].stop = &stop;
        if (!rc) threaded = pthread_create(&th, NULL, parse_part_thread, &pt[1]) == 0;
    }
    bool second = !rc && mid < len; /* a second part, on its thread or (none free) after */
    if (!rc) rc = parse_part(&pt[0]);
    if (rc) atomic_store(&stop, 1);
    if (threaded)
        pthread_join(th, NULL);
    else if (second && !rc)
        parse_part_thread(&pt[1]);
    if (!rc && second && pt[1].rc) rc = core_err_restore(&pt[1].err);
    /* counts: of what was read up to the first failure in file order */
    bool both = second && !atomic_load(&stop); /* the first part did not fail */
    st->lines = pt[0].st.lines + (both ? pt[1].st.lines : 0);
    st->nodes = pt[0].st.nodes + (both ? pt[1].st.nodes : 0);
    st->edges = pt[0].st.edges + (both ? pt[1].st.edges : 0);
    if (!rc) rc = finish(out, &pt[0].c, second ? &pt[1].c : NULL, mode, st);
    if (!rc && progress) progress(progress_arg, len, len, base_line + st->lines);
    part_clear(&pt[0]);
    part_clear(&pt[1]);
    core_free(pt);
    if (rc) {
        graph_change_set_clear(out);
        memset(out, 0, sizeof *out);
        /* keep the caller's counts of what was read, but no rows survive */
    }
    return rc;
}

int exec_load_parse(graph_change_set *out, const lang_catalog *cat, const char *data, size_t len,
                    const char *file, exec_load_mode mode, exec_load_stats *stats,
                    exec_load_progress_fn progress, void *progress_arg)
{
    return parse_range(out, cat, data, len, file, mode, stats, progress, progress_arg, 0, NULL);
}

/* ---- the load request (request.h) ---------------------------------------------------------- */

/* ---- the load in chunks --------------------------------------------------------------------
 * A load (append, overwrite or merge, on any branch) is read in chunks of about g_chunk bytes
 * (cut after a newline): each chunk is parsed, checked row by row and staged as more data
 * files of the one transaction per table before the next is read (a merge's upserts looked up
 * in the pinned table chunk by chunk, lance_stage_upsert), and only the columns the whole-set
 * checks need stay (write_changes_stream): an id given twice across chunks is refused there,
 * as read whole. A branch's first touch of a table is staged after its fork, in apply, by
 * reading the input a second time (its minted ids the same: mint_origin). The input bytes of a
 * chunk are released to the kernel once it is parsed (a mapped file reads them back if the
 * input is read again). */

/* 16 MiB: what a chunk holds while it is parsed (its rows in Arrow builders) is several times
 * its bytes, and with the kept columns spilled, that and the writing of whole fragments set a
 * load's peak, not the file (docs/cli.md "Memory"). */
#define LOAD_CHUNK_DEFAULT ((size_t)16 << 20)
static size_t g_chunk; /* 0: OMNIGRAPH_LOAD_CHUNK_BYTES, else LOAD_CHUNK_DEFAULT */

#ifdef OG_TESTING
void exec_load_set_chunk_bytes(size_t bytes)
{
    g_chunk = bytes;
}
#endif

static size_t chunk_bytes(void)
{
    if (g_chunk) return g_chunk;
    const char *env = getenv("OMNIGRAPH_LOAD_CHUNK_BYTES");
    if (env && *env) {
        char *end = NULL;
        unsigned long long v = strtoull(env, &end, 10);
        if (end && !*end && v > 0) return (size_t)v;
    }
    return LOAD_CHUNK_DEFAULT;
}

/* Ask the kernel to take back the pages wholly inside p[0..n): a mapped file's are read again
 * if needed, anonymous ones (a caller's buffer) are kept where there is no swap. Best effort. */
static void release_bytes(const char *p, size_t n)
{
#ifdef MADV_PAGEOUT
    long pg = sysconf(_SC_PAGESIZE);
    if (pg <= 0) return;
    uintptr_t a = ((uintptr_t)p + (uintptr_t)pg - 1) & ~((uintptr_t)pg - 1);
    uintptr_t e = ((uintptr_t)p + n) & ~((uintptr_t)pg - 1);
    if (e > a) (void)madvise((void *)a, e - a, MADV_PAGEOUT);
#else
    (void)p;
    (void)n;
#endif
}

typedef struct load_stream {
    const exec_load_request *req;
    const char *file;
    size_t chunk;
    size_t off;    /* input bytes read */
    uint64_t line; /* lines read */
    size_t at;     /* the current chunk's first byte (for progress) */
    exec_load_stats st;
    unsigned char *seen; /* per catalog type: a chunk had rows of it */
    size_t n_types;
    core_ulid mint; /* the ids minted for the input (mint_origin): every read the same */
    bool read_once; /* the input was read to its end: a read again (a re-prepare, or apply
                     * staging a branch's first touches) reports no progress */
} load_stream;

static void on_chunk_progress(void *arg, uint64_t done, uint64_t total, uint64_t lines)
{
    (void)total;
    const load_stream *ls = arg;
    ls->req->progress(ls->req->progress_arg, EXEC_LOAD_PHASE_PARSE, ls->at + done, ls->req->len,
                      lines);
}

static int stream_rewind(void *arg)
{
    load_stream *ls = arg;
    ls->off = 0;
    ls->line = 0;
    memset(&ls->st, 0, sizeof ls->st);
    memset(ls->seen, 0, ls->n_types ? ls->n_types : 1);
    return 0;
}

static int stream_next(void *arg, const lang_catalog *cat, graph_change_set *out, bool *done)
{
    load_stream *ls = arg;
    const char *data = ls->req->data ? ls->req->data : "";
    size_t len = ls->req->len;
    memset(out, 0, sizeof *out);
    out->file = ls->file;
    *done = ls->off >= len;
    if (*done) return 0;
    size_t end = len;
    if (len - ls->off > ls->chunk) {
        const char *nl =
            memchr(data + ls->off + ls->chunk - 1, '\n', len - ls->off - ls->chunk + 1);
        if (nl) end = (size_t)(nl + 1 - data);
    }
    exec_load_stats cst;
    ls->at = ls->off;
    mint_origin mo = {ls->mint, ls->off};
    int rc = parse_range(out, cat, data + ls->off, end - ls->off, ls->file, ls->req->mode, &cst,
                         ls->req->progress && !ls->read_once ? on_chunk_progress : NULL, ls,
                         ls->line, &mo);
    ls->st.lines += cst.lines;
    ls->st.nodes += cst.nodes;
    ls->st.edges += cst.edges;
    if (rc) return rc;
    out->file = ls->file;
    for (size_t i = 0; i < out->n; i++)
        if (out->changes[i].type_index >= 0 && (size_t)out->changes[i].type_index < ls->n_types)
            ls->seen[out->changes[i].type_index] = 1;
    release_bytes(data + ls->off, end - ls->off);
    ls->line += cst.lines;
    ls->off = end;
    *done = end >= len;
    if (*done) {
        ls->st.node_types = ls->st.edge_types = 0;
        for (size_t i = 0; i < ls->n_types; i++)
            if (ls->seen[i]) {
                if (cat->types[i].kind == LANG_NODE)
                    ls->st.node_types++;
                else
                    ls->st.edge_types++;
            }
        if (ls->req->progress && !ls->read_once) /* read: the whole-set checks and the commit
                                                  * remain */
            ls->req->progress(ls->req->progress_arg, EXEC_LOAD_PHASE_WRITE, len, len, ls->line);
        ls->read_once = true;
    }
    return 0;
}

int exec_load(exec_load_result *out, write_graph *w, const exec_load_request *req,
              const write_options *opt)
{
    memset(out, 0, sizeof *out);
    const char *file = req->file && *req->file ? req->file : "<data>";
    if (!req->data && req->len) return core_err(OG_E_BAD_REQUEST, "no input bytes");
    if (req->mode != EXEC_LOAD_APPEND && req->mode != EXEC_LOAD_OVERWRITE &&
        req->mode != EXEC_LOAD_MERGE)
        return core_err(OG_E_BAD_REQUEST, "unknown load mode %d", (int)req->mode);
    size_t nt = w->h->catalog->n_types;
    load_stream ls = {req, file, chunk_bytes(), 0, 0, 0, {0}, NULL, nt, {{0}}, false};
    int rc = core_ulid_reserve(&ls.mint, req->len / 4 + 2);
    if (rc) return rc;
    if (!(ls.seen = core_calloc(nt ? nt : 1, 1))) return core_err_nomem();
    write_change_stream src = {stream_rewind, stream_next, &ls};
    rc = write_changes_stream(w, WRITE_KIND_LOAD, &src, opt, &out->write);
    out->stats = ls.st;
    core_free(ls.seen);
    return rc;
}
