/* The C side of the interop checks: a reader of the canonical JSON lines into Arrow builders
 * (the inverse of src/arrow/arrow_json.c, written independently from the README's rules), and
 * table writes through src/lance/dataset.h. */
#include "testutil.h"

#include "interop_c.h"
#include "lance/dataset.h"
#include "store/store.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- schema ---------------------------------------------------------------------------------- */

static void type_from_json(arrow_type *out, const char *ty, json_t *children);

static void field_from_json(arrow_field *out, json_t *f)
{
    const char *name = json_string_value(json_object_get(f, "name"));
    const char *ty = json_string_value(json_object_get(f, "type"));
    assert_non_null(name);
    assert_non_null(ty);
    arrow_type t;
    type_from_json(&t, ty, json_object_get(f, "children"));
    assert_og_ok(arrow_field_init(out, name, &t, json_is_true(json_object_get(f, "nullable"))));
    arrow_type_clear(&t);
}

static void type_from_json(arrow_type *out, const char *ty, json_t *children)
{
    static const struct {
        const char *name;
        arrow_type_id id;
    } simple[] = {{"bool", ARROW_BOOL},
                  {"int32", ARROW_INT32},
                  {"int64", ARROW_INT64},
                  {"uint32", ARROW_UINT32},
                  {"uint64", ARROW_UINT64},
                  {"float", ARROW_FLOAT32},
                  {"double", ARROW_FLOAT64},
                  {"string", ARROW_UTF8},
                  {"large_string", ARROW_LARGE_UTF8},
                  {"binary", ARROW_BINARY},
                  {"large_binary", ARROW_LARGE_BINARY},
                  {"date32:day", ARROW_DATE32},
                  {"date64:ms", ARROW_DATE64}};
    for (size_t i = 0; i < sizeof simple / sizeof simple[0]; i++)
        if (!strcmp(ty, simple[i].name)) {
            *out = arrow_type_simple(simple[i].id);
            return;
        }
    if (!strncmp(ty, "timestamp:", 10)) {
        const char *u = ty + 10, *colon = strchr(u, ':');
        assert_non_null(colon);
        arrow_time_unit unit = !strncmp(u, "s:", 2)    ? ARROW_UNIT_SECOND
                               : !strncmp(u, "ms:", 3) ? ARROW_UNIT_MILLI
                               : !strncmp(u, "us:", 3) ? ARROW_UNIT_MICRO
                                                       : ARROW_UNIT_NANO;
        const char *tz = colon + 1;
        assert_og_ok(arrow_type_timestamp(out, unit, strcmp(tz, "-") ? tz : NULL));
        return;
    }
    if (!strncmp(ty, "fixed_size_list:", 16)) {
        char inner[64];
        const char *p = ty + 16, *last = strrchr(p, ':');
        assert_non_null(last);
        snprintf(inner, sizeof inner, "%.*s", (int)(last - p), p);
        arrow_type it;
        type_from_json(&it, inner, NULL);
        arrow_field item;
        assert_og_ok(arrow_field_init(&item, "item", &it, true));
        assert_og_ok(arrow_type_fixed_size_list(out, &item, atoi(last + 1)));
        arrow_field_clear(&item);
        arrow_type_clear(&it);
        return;
    }
    if (!strcmp(ty, "list") || !strcmp(ty, "struct")) {
        assert_true(json_is_array(children));
        size_t n = json_array_size(children);
        arrow_field *f = calloc(n ? n : 1, sizeof *f);
        assert_non_null(f);
        for (size_t i = 0; i < n; i++)
            field_from_json(&f[i], json_array_get(children, i));
        if (!strcmp(ty, "list")) {
            assert_int_equal(n, 1);
            assert_og_ok(arrow_type_list(out, &f[0]));
        } else {
            assert_og_ok(arrow_type_struct(out, f, n));
        }
        for (size_t i = 0; i < n; i++)
            arrow_field_clear(&f[i]);
        free(f);
        return;
    }
    fail_msg("interop: no Arrow type for Lance type '%s'", ty);
}

void ic_schema_from_json(arrow_schema *out, const char *text)
{
    json_error_t err;
    json_t *j = json_loads(text, 0, &err);
    if (!j) fail_msg("interop: schema is not JSON: %s", err.text);
    json_t *fields = json_object_get(j, "fields");
    assert_true(json_is_array(fields));
    arrow_schema_init(out);
    for (size_t i = 0; i < json_array_size(fields); i++) {
        arrow_field f;
        field_from_json(&f, json_array_get(fields, i));
        assert_og_ok(arrow_schema_add(out, &f));
        arrow_field_clear(&f);
    }
    json_decref(j);
}

/* ---- canonical JSON values into builders --------------------------------------------------- */

typedef struct cur {
    const char *p;
    size_t line;
} cur;

static void expect_ch(cur *c, char ch)
{
    if (*c->p != ch) fail_msg("interop: line %zu: expected '%c' at \"%.20s\"", c->line, ch, c->p);
    c->p++;
}

static int take_word(cur *c, const char *w)
{
    size_t n = strlen(w);
    if (strncmp(c->p, w, n) != 0) return 0;
    c->p += n;
    return 1;
}

static int hexval(char h)
{
    if (h >= '0' && h <= '9') return h - '0';
    if (h >= 'a' && h <= 'f') return h - 'a' + 10;
    if (h >= 'A' && h <= 'F') return h - 'A' + 10;
    return -1;
}

/* A JSON string into a malloc'd byte array (UTF-16 escapes of the canonical form are \u00xx
 * only, but surrogate pairs are handled for completeness). */
static char *parse_string(cur *c, size_t *len)
{
    expect_ch(c, '"');
    size_t cap = 64, n = 0;
    char *s = malloc(cap);
    assert_non_null(s);
    while (*c->p != '"') {
        if (!*c->p) fail_msg("interop: line %zu: unterminated string", c->line);
        if (n + 8 > cap) {
            cap *= 2;
            s = realloc(s, cap);
            assert_non_null(s);
        }
        char ch = *c->p++;
        if (ch != '\\') {
            s[n++] = ch;
            continue;
        }
        ch = *c->p++;
        switch (ch) {
        case '"':
            s[n++] = '"';
            break;
        case '\\':
            s[n++] = '\\';
            break;
        case '/':
            s[n++] = '/';
            break;
        case 'b':
            s[n++] = '\b';
            break;
        case 'f':
            s[n++] = '\f';
            break;
        case 'n':
            s[n++] = '\n';
            break;
        case 'r':
            s[n++] = '\r';
            break;
        case 't':
            s[n++] = '\t';
            break;
        case 'u': {
            unsigned cp = 0;
            for (int k = 0; k < 4; k++) {
                int h = hexval(*c->p++);
                if (h < 0) fail_msg("interop: line %zu: bad \\u escape", c->line);
                cp = cp * 16 + (unsigned)h;
            }
            if (cp >= 0xd800 && cp < 0xdc00 && c->p[0] == '\\' && c->p[1] == 'u') {
                unsigned lo = 0;
                c->p += 2;
                for (int k = 0; k < 4; k++)
                    lo = lo * 16 + (unsigned)hexval(*c->p++);
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            }
            if (cp < 0x80) {
                s[n++] = (char)cp;
            } else if (cp < 0x800) {
                s[n++] = (char)(0xc0 | (cp >> 6));
                s[n++] = (char)(0x80 | (cp & 0x3f));
            } else if (cp < 0x10000) {
                s[n++] = (char)(0xe0 | (cp >> 12));
                s[n++] = (char)(0x80 | ((cp >> 6) & 0x3f));
                s[n++] = (char)(0x80 | (cp & 0x3f));
            } else {
                s[n++] = (char)(0xf0 | (cp >> 18));
                s[n++] = (char)(0x80 | ((cp >> 12) & 0x3f));
                s[n++] = (char)(0x80 | ((cp >> 6) & 0x3f));
                s[n++] = (char)(0x80 | (cp & 0x3f));
            }
            break;
        }
        default:
            fail_msg("interop: line %zu: bad escape \\%c", c->line, ch);
        }
    }
    c->p++;
    s[n] = '\0';
    *len = n;
    return s;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (years counted from March). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* "YYYY-MM-DD" or "+YYYYYY-MM-DD" / "-YYYYYY-MM-DD" at s; returns days, *end after it. */
static int64_t parse_ymd(const char *s, const char **end)
{
    int sign = 1;
    if (*s == '+' || *s == '-') sign = *s++ == '-' ? -1 : 1;
    char *e;
    int64_t y = strtoll(s, &e, 10) * sign;
    assert_true(*e == '-');
    int m = (int)strtol(e + 1, &e, 10);
    assert_true(*e == '-');
    int d = (int)strtol(e + 1, &e, 10);
    *end = e;
    return days_from_civil(y, m, d);
}

/* "...THH:MM:SS[.f]Z" as a count of `unit` since the epoch. */
static int64_t parse_instant(const char *s, arrow_time_unit unit)
{
    static const int64_t per_sec[] = {1, 1000, 1000000, 1000000000};
    const char *e;
    int64_t days = parse_ymd(s, &e);
    int hh, mm, ss, used = 0;
    if (sscanf(e, "T%d:%d:%d%n", &hh, &mm, &ss, &used) != 3) fail_msg("interop: bad instant %s", s);
    e += used;
    int64_t frac = 0, scale = per_sec[unit];
    if (*e == '.') {
        e++;
        while (*e >= '0' && *e <= '9') {
            frac = frac * 10 + (*e++ - '0');
            scale /= 10;
        }
        frac *= scale;
    }
    assert_true(*e == 'Z');
    return ((days * 86400 + hh * 3600 + mm * 60 + ss) * per_sec[unit]) + frac;
}

static void parse_value(cur *c, arrow_builder *b, const arrow_type *t);

static void parse_number_text(cur *c, char *buf, size_t cap)
{
    size_t n = 0;
    while (*c->p && strchr("+-0123456789.eE", *c->p) && n + 1 < cap)
        buf[n++] = *c->p++;
    buf[n] = '\0';
    if (!n) fail_msg("interop: line %zu: expected a number at \"%.20s\"", c->line, c->p);
}

static void parse_value(cur *c, arrow_builder *b, const arrow_type *t)
{
    if (take_word(c, "null")) {
        assert_og_ok(arrow_builder_append_null(b));
        return;
    }
    char num[64];
    switch (t->id) {
    case ARROW_BOOL:
        if (take_word(c, "true"))
            assert_og_ok(arrow_builder_append_bool(b, true));
        else if (take_word(c, "false"))
            assert_og_ok(arrow_builder_append_bool(b, false));
        else
            fail_msg("interop: line %zu: expected a bool", c->line);
        return;
    case ARROW_INT32:
    case ARROW_INT64:
        parse_number_text(c, num, sizeof num);
        assert_og_ok(arrow_builder_append_int(b, strtoll(num, NULL, 10)));
        return;
    case ARROW_UINT32:
    case ARROW_UINT64:
        parse_number_text(c, num, sizeof num);
        assert_og_ok(arrow_builder_append_uint(b, strtoull(num, NULL, 10)));
        return;
    case ARROW_FLOAT32:
    case ARROW_FLOAT64:
        if (*c->p == '"') {
            size_t len;
            char *s = parse_string(c, &len);
            double v = !strcmp(s, "NaN") ? NAN : !strcmp(s, "Infinity") ? INFINITY : -INFINITY;
            free(s);
            assert_og_ok(arrow_builder_append_double(b, v));
        } else {
            parse_number_text(c, num, sizeof num);
            assert_og_ok(arrow_builder_append_double(b, strtod(num, NULL)));
        }
        return;
    case ARROW_UTF8:
    case ARROW_LARGE_UTF8:
    case ARROW_BINARY:
    case ARROW_LARGE_BINARY:
    case ARROW_DATE32:
    case ARROW_DATE64:
    case ARROW_TIMESTAMP: {
        size_t len;
        char *s = parse_string(c, &len);
        const char *e;
        if (t->id == ARROW_UTF8 || t->id == ARROW_LARGE_UTF8) {
            assert_og_ok(arrow_builder_append_bytes(b, s, len));
        } else if (t->id == ARROW_BINARY || t->id == ARROW_LARGE_BINARY) {
            assert_true(len % 2 == 0);
            for (size_t k = 0; k < len / 2; k++)
                s[k] = (char)(hexval(s[2 * k]) * 16 + hexval(s[2 * k + 1]));
            assert_og_ok(arrow_builder_append_bytes(b, s, len / 2));
        } else if (t->id == ARROW_DATE32) {
            assert_og_ok(arrow_builder_append_int(b, parse_ymd(s, &e)));
        } else {
            arrow_time_unit u = t->id == ARROW_DATE64 ? ARROW_UNIT_MILLI : t->unit;
            assert_og_ok(arrow_builder_append_int(b, parse_instant(s, u)));
        }
        free(s);
        return;
    }
    case ARROW_LIST:
    case ARROW_FIXED_SIZE_LIST: {
        expect_ch(c, '[');
        int64_t k = 0;
        while (*c->p != ']') {
            if (k) expect_ch(c, ',');
            parse_value(c, arrow_builder_child(b, 0), &t->children[0].type);
            k++;
        }
        c->p++;
        if (t->id == ARROW_LIST) {
            assert_og_ok(arrow_builder_append_list(b, k));
        } else {
            assert_int_equal(k, t->list_size);
            assert_og_ok(arrow_builder_append_valid(b));
        }
        return;
    }
    case ARROW_STRUCT:
        expect_ch(c, '{');
        for (size_t i = 0; i < t->n_children; i++) {
            if (i) expect_ch(c, ',');
            size_t len;
            char *key = parse_string(c, &len);
            if (strcmp(key, t->children[i].name)) fail_msg("interop: struct key %s", key);
            free(key);
            expect_ch(c, ':');
            parse_value(c, arrow_builder_child(b, i), &t->children[i].type);
        }
        expect_ch(c, '}');
        assert_og_ok(arrow_builder_append_valid(b));
        return;
    default:
        fail_msg("interop: cannot parse type %d", (int)t->id);
    }
}

arrow_batch *ic_batch_from_lines(const arrow_schema *s, const char *text, int64_t min_id)
{
    size_t nc = s->n_fields;
    assert_true(nc > 0 && !strcmp(s->fields[0].name, "id"));
    arrow_builder **b = calloc(nc, sizeof *b);
    assert_non_null(b);
    for (size_t i = 0; i < nc; i++)
        assert_og_ok(arrow_builder_new(&b[i], &s->fields[i].type));
    cur c = {text, 0};
    while (*c.p) {
        c.line++;
        const char *line = c.p;
        /* the id comes first: skip the line cheaply when it is below min_id */
        if (strncmp(line, "{\"id\":", 6) != 0)
            fail_msg("interop: line %zu lacks a leading id", c.line);
        if (strtoll(line + 6, NULL, 10) < min_id) {
            const char *nl = strchr(line, '\n');
            assert_non_null(nl);
            c.p = nl + 1;
            continue;
        }
        expect_ch(&c, '{');
        for (size_t i = 0; i < nc; i++) {
            if (i) expect_ch(&c, ',');
            size_t len;
            char *key = parse_string(&c, &len);
            if (strcmp(key, s->fields[i].name))
                fail_msg("interop: line %zu: key %s, schema has %s", c.line, key,
                         s->fields[i].name);
            free(key);
            expect_ch(&c, ':');
            parse_value(&c, b[i], &s->fields[i].type);
        }
        expect_ch(&c, '}');
        expect_ch(&c, '\n');
    }
    arrow_array **cols = calloc(nc, sizeof *cols);
    assert_non_null(cols);
    for (size_t i = 0; i < nc; i++) {
        assert_og_ok(arrow_builder_finish(b[i], &cols[i]));
        assert_og_ok(arrow_array_validate(cols[i]));
        arrow_builder_free(b[i]);
    }
    arrow_batch *out = NULL;
    assert_og_ok(arrow_batch_new(&out, s, cols, nc));
    for (size_t i = 0; i < nc; i++)
        arrow_array_free(cols[i]);
    free(cols);
    free(b);
    return out;
}

/* ---- table writes -------------------------------------------------------------------------- */

void ic_create_table(const char *dir, const arrow_schema *s, arrow_batch *b, bool v1_names,
                     bool stable_row_ids)
{
    store *st = NULL;
    assert_og_ok(store_local_open(&st, dir));
    lance_create_options o = LANCE_CREATE_OPTIONS_INIT;
    o.v1_names = v1_names;
    o.stable_row_ids = stable_row_ids;
    lance_dataset *ds = NULL, *ds2 = NULL;
    assert_og_ok(lance_dataset_create(&ds, st, "", s, &o));
    assert_og_ok(lance_dataset_append(&ds2, ds, &b, 1));
    assert_int_equal(lance_dataset_version(ds2), 2);
    lance_dataset_free(ds2);
    lance_dataset_free(ds);
    store_close(st);
}

uint64_t ic_append_lines(const char *dir, const char *text, int64_t min_id)
{
    store *st = NULL;
    assert_og_ok(store_local_open(&st, dir));
    lance_dataset *ds = NULL, *ds2 = NULL;
    assert_og_ok(lance_dataset_open(&ds, st, "", 0, LANCE_ACCESS_WRITE));
    arrow_batch *b = ic_batch_from_lines(&ds->schema, text, min_id);
    assert_true(b->num_rows > 0);
    assert_og_ok(lance_dataset_append(&ds2, ds, &b, 1));
    uint64_t v = lance_dataset_version(ds2);
    arrow_batch_free(b);
    lance_dataset_free(ds2);
    lance_dataset_free(ds);
    store_close(st);
    return v;
}

uint64_t ic_delete_id_range(const char *dir, int64_t lo, int64_t hi)
{
    store *st = NULL;
    assert_og_ok(store_local_open(&st, dir));
    lance_dataset *ds = NULL, *ds2 = NULL;
    assert_og_ok(lance_dataset_open(&ds, st, "", 0, LANCE_ACCESS_WRITE));
    lance_term terms[2] = {{"id", ARROW_CMP_GE, {.kind = ARROW_INT64, .i = lo}},
                           {"id", ARROW_CMP_LT, {.kind = ARROW_INT64, .i = hi}}};
    lance_filter f = {terms, 2};
    assert_og_ok(lance_dataset_delete(&ds2, ds, &f));
    uint64_t v = lance_dataset_version(ds2);
    lance_dataset_free(ds2);
    lance_dataset_free(ds);
    store_close(st);
    return v;
}
