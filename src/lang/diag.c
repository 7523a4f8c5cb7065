/* Diagnostics for the language layer, plus the small shared helpers: the arena vector,
 * language type names and predicates, and calendar parsing for date()/datetime(). */
#include "lang/lang.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void lang_diags_init(lang_diags *d, core_arena *arena)
{
    memset(d, 0, sizeof *d);
    d->arena = arena;
}

void lang_diag_add(lang_diags *d, int severity, const char *code, const char *file, int line,
                   int col, const char *fmt, ...)
{
    if (severity == LANG_SEV_ERROR)
        d->errors++;
    else
        d->warnings++;
    if (d->n >= LANG_MAX_DIAGS) {
        d->dropped++;
        return;
    }
    lang_diag *g = lang_vec_push(d->arena, (void **)&d->items, &d->n, &d->cap, sizeof *g);
    if (!g) {
        d->oom = 1;
        return;
    }
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    g->code = code;
    g->severity = severity;
    g->message = core_arena_strdup(d->arena, msg);
    /* copied: the name may belong to a catalog or query set freed before the report */
    g->file = core_arena_strdup(d->arena, file ? file : "<input>");
    g->line = line;
    g->col = col;
    if (!g->message || !g->file) {
        d->oom = 1;
        if (!g->message) g->message = "out of memory";
        if (!g->file) g->file = "<input>";
    }
}

int lang_diags_status(const lang_diags *d)
{
    return lang_diags_status_since(d, 0);
}

int lang_diags_status_since(const lang_diags *d, size_t first)
{
    if (d->oom) return core_err_nomem();
    for (size_t i = first; i < d->n; i++) {
        const lang_diag *g = &d->items[i];
        if (g->severity != LANG_SEV_ERROR) continue;
        return core_err_at(g->file, g->line, g->col, "%s: %s", g->code, g->message);
    }
    if (d->errors) return core_err(OG_E_BAD_REQUEST, "too many errors");
    return 0;
}

int lang_diags_failure(const lang_diags *d, size_t first)
{
    int rc = lang_diags_status_since(d, first);
    /* a failure with nothing recorded is a bug in this layer, never a success */
    return rc ? rc : core_err(OG_E_INTERNAL, "language check failed without a diagnostic");
}

static int diag_cmp(const lang_diag *a, const lang_diag *b)
{
    int c = strcmp(a->file, b->file);
    if (c) return c;
    if (a->line != b->line) return a->line < b->line ? -1 : 1;
    if (a->col != b->col) return a->col < b->col ? -1 : 1;
    return 0;
}

void lang_diags_sort(lang_diags *d)
{
    /* insertion sort: stable, and the lists are short */
    for (size_t i = 1; i < d->n; i++) {
        lang_diag x = d->items[i];
        size_t j = i;
        while (j > 0 && diag_cmp(&d->items[j - 1], &x) > 0) {
            d->items[j] = d->items[j - 1];
            j--;
        }
        d->items[j] = x;
    }
}

void *lang_vec_push(core_arena *a, void **arr, size_t *n, size_t *cap, size_t size)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 4, bytes;
        if (core_size_mul(&bytes, nc, size)) return NULL;
        void *na = core_arena_alloc(a, bytes);
        if (!na) return NULL;
        if (*n) memcpy(na, *arr, *n * size);
        *arr = na;
        *cap = nc;
    }
    char *e = (char *)*arr + *n * size;
    memset(e, 0, size);
    (*n)++;
    return e;
}

/* ---- types -------------------------------------------------------------------------------- */

static const char *const SCALAR_NAMES[] = {
    [LANG_S_NONE] = "?",    [LANG_S_STRING] = "String",     [LANG_S_BOOL] = "Bool",
    [LANG_S_I32] = "I32",   [LANG_S_I64] = "I64",           [LANG_S_U32] = "U32",
    [LANG_S_U64] = "U64",   [LANG_S_F32] = "F32",           [LANG_S_F64] = "F64",
    [LANG_S_DATE] = "Date", [LANG_S_DATETIME] = "DateTime", [LANG_S_BLOB] = "Blob",
};

const char *lang_scalar_name(int s)
{
    if (s < 0 || s > LANG_S_BLOB) return "?";
    return SCALAR_NAMES[s];
}

int lang_scalar_from_name(const char *s, size_t n)
{
    for (int i = LANG_S_STRING; i <= LANG_S_BLOB; i++)
        if (strlen(SCALAR_NAMES[i]) == n && memcmp(SCALAR_NAMES[i], s, n) == 0) return i;
    return LANG_S_NONE;
}

char *lang_type_str(core_arena *a, const lang_type *t)
{
    const char *q = t->nullable ? "?" : "";
    switch (t->kind) {
    case LANG_TY_LIST:
        return core_arena_sprintf(a, "[%s]%s", lang_scalar_name(t->scalar), q);
    case LANG_TY_VECTOR:
        return core_arena_sprintf(a, "Vector(%u)%s", t->dim, q);
    case LANG_TY_ENUM: {
        /* NULL when any piece fails (a cut-short text would pass for the type) */
        core_buf b = CORE_BUF_INIT;
        int rc = core_buf_append_str(&b, "enum(");
        for (size_t i = 0; !rc && i < t->n_enum; i++)
            rc = core_buf_printf(&b, "%s%s", i ? ", " : "", t->enum_vals[i]);
        if (!rc) rc = core_buf_printf(&b, ")%s", q);
        char *r = rc ? NULL : core_arena_strdup(a, core_buf_cstr(&b));
        core_buf_free(&b);
        return r;
    }
    default:
        return core_arena_sprintf(a, "%s%s", lang_scalar_name(t->scalar), q);
    }
}

int lang_type_equal(const lang_type *a, const lang_type *b)
{
    if (a->kind != b->kind) return 0;
    switch (a->kind) {
    case LANG_TY_VECTOR:
        return a->dim == b->dim;
    case LANG_TY_ENUM:
        if (a->n_enum != b->n_enum) return 0;
        for (size_t i = 0; i < a->n_enum; i++)
            if (strcmp(a->enum_vals[i], b->enum_vals[i])) return 0;
        return 1;
    default:
        return a->scalar == b->scalar;
    }
}

int lang_scalar_is_int(int s)
{
    return s == LANG_S_I32 || s == LANG_S_I64 || s == LANG_S_U32 || s == LANG_S_U64;
}
int lang_scalar_is_float(int s)
{
    return s == LANG_S_F32 || s == LANG_S_F64;
}
int lang_scalar_is_numeric(int s)
{
    return lang_scalar_is_int(s) || lang_scalar_is_float(s);
}
int lang_scalar_is_orderable(int s)
{
    return lang_scalar_is_numeric(s) || s == LANG_S_STRING || s == LANG_S_DATE ||
           s == LANG_S_DATETIME || s == LANG_S_BOOL;
}

/* ---- calendar ----------------------------------------------------------------------------- */

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar (Howard Hinnant's
 * well-known civil-days algorithm, written out here). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

static int digits(const char *s, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

static int parse_ymd(const char *s, int64_t *days)
{
    int y, m, d;
    if (strlen(s) < 10 || s[4] != '-' || s[7] != '-') return -1;
    if (digits(s, 4, &y) || digits(s + 5, 2, &m) || digits(s + 8, 2, &d)) return -1;
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m < 1 || m > 12 || d < 1) return -1;
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    int md = mdays[m - 1] + (m == 2 && leap);
    if (d > md) return -1;
    *days = days_from_civil(y, (unsigned)m, (unsigned)d);
    return 0;
}

int lang_parse_date(const char *s, int64_t *days)
{
    if (!s || strlen(s) != 10 || parse_ymd(s, days)) return OG_E_BAD_REQUEST;
    return 0;
}

/* -1 when s is not a datetime; the exported wrapper turns that into the og_code. */
static int parse_datetime(const char *s, int64_t *ms)
{
    int64_t days;
    if (!s || parse_ymd(s, &days)) return -1;
    const char *p = s + 10;
    int hh = 0, mi = 0, ss = 0, frac = 0;
    if (*p == 'T' || *p == ' ') {
        if (strlen(p) < 9 || p[3] != ':' || p[6] != ':') return -1;
        if (digits(p + 1, 2, &hh) || digits(p + 4, 2, &mi) || digits(p + 7, 2, &ss)) return -1;
        if (hh > 23 || mi > 59 || ss > 59) return -1;
        p += 9;
        if (*p == '.') {
            p++;
            int nd = 0;
            while (*p >= '0' && *p <= '9') {
                if (nd < 3) frac = frac * 10 + (*p - '0');
                nd++;
                p++;
            }
            if (nd == 0 || nd > 9) return -1;
            for (int k = nd; k < 3; k++)
                frac *= 10;
        }
    } else if (*p) {
        return -1;
    }
    int64_t off = 0;
    if (*p == 'Z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int oh, om;
        if (strlen(p) != 6 || p[3] != ':' || digits(p + 1, 2, &oh) || digits(p + 4, 2, &om) ||
            oh > 23 || om > 59)
            return -1;
        off = (int64_t)(oh * 60 + om) * 60000;
        if (*p == '-') off = -off;
        p += 6;
    }
    if (*p) return -1;
    *ms = days * 86400000LL + (int64_t)hh * 3600000 + (int64_t)mi * 60000 + (int64_t)ss * 1000 +
          frac - off;
    return 0;
}

int lang_parse_datetime(const char *s, int64_t *ms)
{
    return parse_datetime(s, ms) ? OG_E_BAD_REQUEST : 0;
}
