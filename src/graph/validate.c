/* The validator of a graph change set against a pinned snapshot: value constraints, ids,
 * @unique, edge endpoints and @card. It reads committed tables only when a check cannot be
 * decided from the change set itself, and records every table it reads as a probe. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "graph/validate.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/arena.h"
#include "core/hmap.h"
#include "core/sortrun.h"
#include "graph/merge.h"
#include "lance/keyindex.h"

#include <inttypes.h>
#include <limits.h>
#include <pcre2.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- change sets and probes -------------------------------------------------------------- */

void graph_change_set_clear(graph_change_set *cs)
{
    if (!cs) return;
    for (size_t i = 0; i < cs->n; i++) {
        graph_change *c = &cs->changes[i];
        arrow_batch_free(c->rows);
        core_free(c->lines);
        for (size_t k = 0; k < c->n_delete_ids; k++)
            core_free(c->delete_ids[k]);
        core_free(c->delete_ids);
    }
    core_free(cs->changes);
    cs->changes = NULL;
    cs->n = 0;
}

void graph_probes_clear(graph_probes *p)
{
    if (!p) return;
    for (size_t i = 0; i < p->n; i++)
        core_free(p->aliases[i]);
    core_free(p->aliases);
    p->aliases = NULL;
    p->n = 0;
}

int graph_probes_add(graph_probes *p, const char *alias)
{
    size_t lo = 0, hi = p->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(p->aliases[mid], alias);
        if (!c) return 0;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    char *copy = core_strdup(alias);
    char **a = copy ? core_realloc(p->aliases, (p->n + 1) * sizeof *a) : NULL;
    if (!a) {
        core_free(copy);
        return core_err_nomem();
    }
    memmove(a + lo + 1, a + lo, (p->n - lo) * sizeof *a);
    a[lo] = copy;
    p->aliases = a;
    p->n++;
    return 0;
}

/* Lookups of a bulk check go in batches of this many keys (see core_bmap_prefetch). */
#define VBATCH 16

/* ---- context ----------------------------------------------------------------------------- */

/* What validation knows of a type's committed ids: either all of them (a bulk read, when a
 * check asks about a large share of the table) or the answers to the ids it looked up through
 * the table's key index. */
typedef struct committed {
    int loaded;       /* set holds every committed id */
    arrow_batch *ids; /* the bulk read's column 0: id (NULL when no table) */
    core_bmap set;    /* committed ids known to exist */
    core_bmap probed; /* ids looked up one by one (present ones are in set) */
} committed;

typedef struct vctx {
    const lang_catalog *cat;
    const graph_snapshot *snap;
    store *s;
    const graph_change_set *cs;
    graph_probes *probes;
    graph_validate_stats *st;
    const graph_change **by_type; /* per type index, or NULL */
    core_bmap *input;             /* per type: input id -> row (see input_map) */
    unsigned char *input_later;   /* per edge type: its map is built on first use */
    core_bmap *deleted;           /* per type: DELETE/DELTA ids */
    committed *com;               /* per type: committed id sets, loaded on demand */
    graph_table_open_fn open;     /* NULL: open and free per read */
    void *open_arg;
    graph_conflicts *out; /* collect mode: every violation goes here; NULL: stop at the first */
    int scope;            /* graph_validate_scope */
} vctx;

static int col_of_prop(const lang_typedef *t, int prop)
{
    if (prop == LANG_COL_SRC) return 1;
    if (prop == LANG_COL_DST) return 2;
    return prop + (t->kind == LANG_EDGE ? 3 : 1);
}

static uint64_t row_line(const graph_change *c, int64_t row)
{
    return c->lines ? c->lines[row] : 0;
}

/* An error about a row: "line N: " prefix and file/line location when the row has a line. */
static int row_err_msg(const vctx *v, int code, uint64_t line, const char *msg)
{
    if (!line) return core_err(code, "%s", msg);
    core_err(code, "line %" PRIu64 ": %s", line, msg);
    core_err_set_location(v->cs->file, line > INT_MAX ? INT_MAX : (int)line, 0);
    return code;
}

/* For what makes a change unusable (malformed), in either mode. */
static int row_err(const vctx *v, int code, uint64_t line, const char *fmt, ...) CORE_PRINTF(4, 5);
static int row_err(const vctx *v, int code, uint64_t line, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return row_err_msg(v, code, line, msg);
}

/* Every violation of a constraint goes through here, so that one validator serves both modes.
 * First-error mode: it becomes the thread error (as row_err) and its code is returned, which
 * stops validation. Collect mode: the same text is appended to the conflict list as a
 * conflict of `kind` on type ti (id: the row's id, or NULL) and 0 is returned, so the caller
 * goes on with the next row or check; only a failure to record it is returned. */
static int violation(const vctx *v, int kind, int ti, const char *id, size_t idn, uint64_t line,
                     int code, const char *fmt, ...) CORE_PRINTF(8, 9);
static int violation(const vctx *v, int kind, int ti, const char *id, size_t idn, uint64_t line,
                     int code, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!v->out) return row_err_msg(v, code, line, msg);
    char *idc = NULL;
    if (id && !(idc = core_strndup(id, idn))) return core_err_nomem();
    const char *type = v->cat->types[ti].name;
    int rc = line ? graph_conflicts_add(v->out, kind, type, idc, "line %" PRIu64 ": %s", line, msg)
                  : graph_conflicts_add(v->out, kind, type, idc, "%s", msg);
    core_free(idc);
    return rc;
}

/* Rows of a change (a DELTA may have none). */
static int64_t n_rows(const graph_change *c)
{
    return c->rows ? c->rows->num_rows : 0;
}

static const char *id_at(const arrow_array *a, int64_t i, size_t *n)
{
    return (const char *)arrow_array_get_bytes(a, i, n);
}

/* A short printable form of cell i for messages. */
static void fmt_cell(const arrow_array *a, int64_t i, char *buf, size_t cap)
{
    if (!arrow_array_is_valid(a, i)) {
        snprintf(buf, cap, "null");
        return;
    }
    size_t n;
    switch (a->type.id) {
    case ARROW_UTF8: {
        const char *s = id_at(a, i, &n);
        snprintf(buf, cap, "\"%.*s\"", (int)(n > 60 ? 60 : n), s);
        break;
    }
    case ARROW_INT32:
    case ARROW_INT64:
    case ARROW_DATE32:
    case ARROW_TIMESTAMP:
        snprintf(buf, cap, "%" PRId64, arrow_array_get_int(a, i));
        break;
    case ARROW_UINT32:
    case ARROW_UINT64:
        snprintf(buf, cap, "%" PRIu64, arrow_array_get_uint(a, i));
        break;
    case ARROW_FLOAT32:
    case ARROW_FLOAT64:
        snprintf(buf, cap, "%.17g", arrow_array_get_double(a, i));
        break;
    case ARROW_BOOL:
        snprintf(buf, cap, "%s", arrow_array_get_bool(a, i) ? "true" : "false");
        break;
    default:
        snprintf(buf, cap, "(value)");
        break;
    }
}

/* ---- committed reads --------------------------------------------------------------------- */

static const graph_table *snap_table(const graph_snapshot *snap, const char *alias)
{
    for (size_t i = 0; snap && i < snap->n_tables; i++)
        if (snap->tables[i].alias && !strcmp(snap->tables[i].alias, alias)) return &snap->tables[i];
    return NULL;
}

/* Open type ti's committed table (*ds NULL when the snapshot has none: nothing committed).
 * The alias is a probe before anything is read, so a read that fails midway still lands in
 * the read set. Free *owned after use. */
static int open_committed(vctx *v, int ti, const lance_dataset **ds, lance_dataset **owned)
{
    *ds = NULL;
    *owned = NULL;
    const lang_typedef *t = &v->cat->types[ti];
    char alias[512];
    int rc = graph_table_alias(alias, sizeof alias, t->kind, t->name);
    if (rc) return rc;
    const graph_table *gt = snap_table(v->snap, alias);
    if (!gt) return 0;
    if ((rc = graph_probes_add(v->probes, alias))) return rc;
    if (v->open)
        rc = v->open(v->open_arg, gt, ds);
    else if ((rc = graph_table_open(owned, v->s, gt, LANCE_ACCESS_READ)) == 0)
        *ds = *owned;
    if (rc) core_err_prefix("validating against %s", alias);
    return rc;
}

/* Every live row of type ti's committed table whose `column` is one of keys[0..n), through the
 * table's key index (lance/keyindex.h): fn(arg, key index, row address, payload). Nothing
 * when the snapshot has no such table. */
static int lookup_committed(vctx *v, int ti, const char *column, const char *payload,
                            const uint8_t *const *keys, const size_t *lens, size_t n,
                            lance_kix_hit_fn fn, void *arg)
{
    if (!n) return 0;
    const lance_dataset *ds;
    lance_dataset *owned;
    int rc = open_committed(v, ti, &ds, &owned);
    if (rc || !ds) return rc;
    lance_kix_stats ks;
    rc = lance_kix_lookup(ds, column, payload, keys, lens, n, fn, arg, &ks);
    lance_dataset_free(owned);
    if (rc) {
        core_err_prefix("validating against %s", v->cat->types[ti].name);
        return rc;
    }
    v->st->index_lookups++;
    v->st->rows_scanned += ks.rows_scanned;
    return 0;
}

/* Scan `cols` of type ti's committed table into one batch; *out = NULL when the snapshot has
 * no such table (nothing committed). */
static int scan_committed(vctx *v, int ti, const char *const *cols, size_t ncols, arrow_batch **out)
{
    *out = NULL;
    const lance_dataset *ds;
    lance_dataset *owned;
    int rc = open_committed(v, ti, &ds, &owned);
    if (rc || !ds) return rc;
    lance_scan_options so = LANCE_SCAN_OPTIONS_INIT;
    so.columns = cols;
    so.n_columns = ncols;
    rc = lance_dataset_scan_all(out, ds, &so);
    lance_dataset_free(owned);
    if (rc) {
        core_err_prefix("validating against %s", v->cat->types[ti].name);
        return rc;
    }
    v->st->tables_scanned++;
    v->st->rows_scanned += (uint64_t)(*out)->num_rows;
    return 0;
}

static int load_committed_ids(vctx *v, int ti)
{
    committed *c = &v->com[ti];
    if (c->loaded) return 0;
    c->loaded = 1;
    core_bmap_free(&c->set); /* probed answers are superseded by the whole set */
    static const char *const cols[] = {GRAPH_COL_ID};
    int rc = scan_committed(v, ti, cols, 1, &c->ids);
    if (rc || !c->ids) return rc;
    const arrow_array *a = c->ids->columns[0];
    if ((rc = core_bmap_reserve(&c->set, (size_t)a->length))) return rc;
    for (int64_t i = 0; i < a->length; i++) {
        size_t n;
        const char *id = id_at(a, i, &n);
        core_bmap_entry *e;
        int fresh;
        if ((rc = core_bmap_put(&c->set, id, n, &e, &fresh))) return rc;
        e->val = i;
    }
    return 0;
}

typedef struct probe_arg {
    committed *c;
    const uint8_t *const *keys;
    const size_t *lens;
} probe_arg;

static int on_present(void *arg, size_t key, uint64_t addr, const uint8_t *pay, size_t plen)
{
    probe_arg *pa = arg;
    (void)pay;
    (void)plen;
    core_bmap_entry *e;
    int fresh;
    int rc = core_bmap_put(&pa->c->set, pa->keys[key], pa->lens[key], &e, &fresh);
    if (rc == 0) e->val = (int64_t)addr;
    return rc;
}

/* Make sure type ti's committed set answers for ids[0..n) (pointers that outlive the
 * validation): the ids not asked before are looked up through the key index, or, when they
 * are a large share of the table (a bulk load), every committed id is read at once. */
static int probe_ids(vctx *v, int ti, const uint8_t *const *ids, const size_t *lens, size_t n)
{
    committed *c = &v->com[ti];
    if (c->loaded || !n) return 0;
    const uint8_t **want = core_malloc(n * sizeof *want);
    size_t *wl = core_malloc(n * sizeof *wl);
    size_t nw = 0;
    int rc = want && wl ? 0 : core_err_nomem();
    for (size_t i = 0; rc == 0 && i < n; i++) {
        core_bmap_entry *e;
        int fresh;
        rc = core_bmap_put(&c->probed, ids[i], lens[i], &e, &fresh);
        if (rc == 0 && fresh) {
            want[nw] = ids[i];
            wl[nw++] = lens[i];
        }
    }
    if (rc == 0 && nw) {
        const lance_dataset *ds;
        lance_dataset *owned;
        rc = open_committed(v, ti, &ds, &owned);
        uint64_t rows = rc == 0 && ds ? lance_dataset_physical_rows(ds) : 0;
        /* a small table, or most rows outside any segment (a graph made before key indexes):
         * every lookup would read them anyway, so read the ids once */
        uint64_t covered = rc == 0 && ds ? lance_kix_covered_rows(ds) : 0;
        lance_dataset_free(owned);
        if (rc == 0 && !ds)
            c->loaded = 1; /* nothing committed: the empty set is complete */
        else if (rc == 0 && ((uint64_t)core_bmap_count(&c->probed) * 8 > rows ||
                             covered * 2 < rows || rows < LANCE_KIX_LOOKUP_MIN_ROWS))
            rc = load_committed_ids(v, ti);
        else if (rc == 0) {
            probe_arg pa = {c, want, wl};
            rc = lookup_committed(v, ti, GRAPH_COL_ID, NULL, want, wl, nw, on_present, &pa);
        }
    }
    core_free(want);
    core_free(wl);
    return rc;
}

/* The ids of column col of a change's rows, as key arrays for probe_ids (borrowed). */
static int column_keys(const arrow_array *a, const uint8_t ***keys, size_t **lens)
{
    size_t n = (size_t)a->length;
    *keys = core_malloc((n ? n : 1) * sizeof **keys);
    *lens = core_malloc((n ? n : 1) * sizeof **lens);
    if (!*keys || !*lens) {
        core_free(*keys);
        core_free(*lens);
        return core_err_nomem();
    }
    for (size_t i = 0; i < n; i++)
        (*keys)[i] = arrow_array_get_bytes(a, (int64_t)i, &(*lens)[i]);
    return 0;
}

static int probe_column(vctx *v, int ti, const arrow_array *a)
{
    const uint8_t **k;
    size_t *l;
    int rc = column_keys(a, &k, &l);
    if (rc) return rc;
    rc = probe_ids(v, ti, k, l, (size_t)a->length);
    core_free(k);
    core_free(l);
    return rc;
}

/* ---- value constraints ------------------------------------------------------------------- */

static int bytes_in_enum(const lang_type *ty, const uint8_t *s, size_t n)
{
    size_t lo = 0, hi = ty->n_enum;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const char *e = ty->enum_vals[mid];
        size_t en = strlen(e);
        int c = memcmp(e, s, en < n ? en : n);
        if (!c) c = en < n ? -1 : en > n ? 1 : 0;
        if (!c) return 1;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

/* Compare row i of a with a range bound: negative, 0, positive. */
static int cmp_bound(const arrow_array *a, int64_t i, const lang_value *b)
{
    double bd = b->kind == LANG_V_FLOAT ? b->f : (b->neg ? -(double)b->u : (double)b->u);
    switch (a->type.id) {
    case ARROW_FLOAT32:
    case ARROW_FLOAT64: {
        double x = arrow_array_get_double(a, i);
        return x < bd ? -1 : x > bd ? 1 : 0;
    }
    case ARROW_UINT32:
    case ARROW_UINT64: {
        uint64_t x = arrow_array_get_uint(a, i);
        if (b->kind == LANG_V_FLOAT) return (double)x < bd ? -1 : (double)x > bd ? 1 : 0;
        if (b->neg && b->u) return 1;
        return x < b->u ? -1 : x > b->u ? 1 : 0;
    }
    default: {
        int64_t x = arrow_array_get_int(a, i);
        if (b->kind == LANG_V_FLOAT) return (double)x < bd ? -1 : (double)x > bd ? 1 : 0;
        if (b->neg) {
            if (x >= 0) return 1;
            uint64_t mag = (uint64_t)(-(x + 1)) + 1u;
            return mag > b->u ? -1 : mag < b->u ? 1 : 0;
        }
        if (x < 0) return -1;
        return (uint64_t)x < b->u ? -1 : (uint64_t)x > b->u ? 1 : 0;
    }
    }
}

static void fmt_bound(const lang_value *b, int has, char *buf, size_t cap)
{
    if (!has)
        buf[0] = '\0';
    else if (b->kind == LANG_V_FLOAT)
        snprintf(buf, cap, "%g", b->f);
    else
        snprintf(buf, cap, "%s%" PRIu64, b->neg && b->u ? "-" : "", b->u);
}

static int check_values(vctx *v, const graph_change *ch, pcre2_match_data *md)
{
    const lang_typedef *t = &v->cat->types[ch->type_index];
    int ti = ch->type_index;
    const arrow_batch *b = ch->rows;
    size_t first = t->kind == LANG_EDGE ? 3 : 1;
    if (b->n_columns != first + t->n_props)
        return core_err(OG_E_BAD_REQUEST, "%s: change rows have %zu columns, the table has %zu",
                        t->name, b->n_columns, first + t->n_props);
    for (size_t c = 0; c < first; c++) {
        const arrow_array *a = b->columns[c];
        if (a->type.id != ARROW_UTF8)
            return core_err(OG_E_BAD_REQUEST, "%s: column %s is not Utf8", t->name,
                            b->schema.fields[c].name);
        /* A row without an id or endpoint is malformed (every later check keys on them), not
         * a violation to collect: it stops validation in either mode. */
        for (int64_t i = 0; i < b->num_rows; i++) {
            size_t n = 0;
            if (arrow_array_is_valid(a, i)) id_at(a, i, &n);
            if (!n)
                return row_err(v, OG_E_BAD_REQUEST, row_line(ch, i), "%s: %s is null or empty",
                               t->name, b->schema.fields[c].name);
        }
    }
    const arrow_array *ids = b->columns[0];
    char idb[96];
    int rc = 0;
    for (size_t p = 0; p < t->n_props; p++) {
        const lang_prop *pr = &t->props[p];
        const arrow_array *a = b->columns[first + p];
        for (int64_t i = 0; i < b->num_rows; i++) {
            size_t idn;
            const char *id;
            if (!arrow_array_is_valid(a, i)) {
                if (pr->type.nullable) continue;
                id = id_at(ids, i, &idn);
                fmt_cell(ids, i, idb, sizeof idb);
                if ((rc = violation(v, GRAPH_CONFLICT_VALUE_CONSTRAINT_VIOLATION, ti, id, idn,
                                    row_line(ch, i), OG_E_BAD_REQUEST,
                                    "%s.%s: null for a non-nullable property (id %s)", t->name,
                                    pr->name, idb)))
                    return rc;
                continue;
            }
            if (pr->type.kind == LANG_TY_ENUM) {
                size_t n;
                const uint8_t *s = arrow_array_get_bytes(a, i, &n);
                if (!bytes_in_enum(&pr->type, s, n)) {
                    id = id_at(ids, i, &idn);
                    fmt_cell(ids, i, idb, sizeof idb);
                    if ((rc = violation(v, GRAPH_CONFLICT_VALUE_CONSTRAINT_VIOLATION, ti, id, idn,
                                        row_line(ch, i), OG_E_BAD_REQUEST,
                                        "%s.%s: \"%.*s\" is not a value of the enum (id %s)",
                                        t->name, pr->name, (int)(n > 60 ? 60 : n), s, idb)))
                        return rc;
                }
            }
        }
    }
    for (size_t k = 0; k < t->n_cons; k++) {
        const lang_constraint *con = &t->cons[k];
        if (con->kind != LANG_CON_RANGE && con->kind != LANG_CON_CHECK) continue;
        if (con->n_cols != 1 || con->cols[0] < 0) continue;
        const lang_prop *pr = &t->props[con->cols[0]];
        const arrow_array *a = b->columns[col_of_prop(t, con->cols[0])];
        if (con->kind == LANG_CON_RANGE) {
            for (int64_t i = 0; i < b->num_rows; i++) {
                if (!arrow_array_is_valid(a, i)) continue;
                if ((con->has_lo && cmp_bound(a, i, &con->lo) < 0) ||
                    (con->has_hi && cmp_bound(a, i, &con->hi) > 0)) {
                    char val[96], lo[48], hi[48];
                    size_t idn;
                    const char *id = id_at(ids, i, &idn);
                    fmt_cell(a, i, val, sizeof val);
                    fmt_cell(ids, i, idb, sizeof idb);
                    fmt_bound(&con->lo, con->has_lo, lo, sizeof lo);
                    fmt_bound(&con->hi, con->has_hi, hi, sizeof hi);
                    if ((rc = violation(v, GRAPH_CONFLICT_VALUE_CONSTRAINT_VIOLATION, ti, id, idn,
                                        row_line(ch, i), OG_E_BAD_REQUEST,
                                        "%s.%s: %s is outside @range(%s..%s) (id %s)", t->name,
                                        pr->name, val, lo, hi, idb)))
                        return rc;
                }
            }
            continue;
        }
        if (!arrow_type_is_binary_like(a->type.id)) continue;
        int ec;
        PCRE2_SIZE eo;
        pcre2_code *re = pcre2_compile((PCRE2_SPTR)con->pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF,
                                       &ec, &eo, NULL);
        if (!re)
            return core_err(OG_E_BAD_REQUEST, "%s.%s: @check pattern does not compile", t->name,
                            pr->name);
        for (int64_t i = 0; i < b->num_rows && !rc; i++) {
            if (!arrow_array_is_valid(a, i)) continue;
            size_t n;
            const uint8_t *s = arrow_array_get_bytes(a, i, &n);
            /* Full match: anchored at both ends, as @check means the whole value. */
            int m = pcre2_match(re, s, n, 0, PCRE2_ANCHORED | PCRE2_ENDANCHORED, md, NULL);
            if (m >= 0) continue;
            char val[96];
            size_t idn;
            const char *id = id_at(ids, i, &idn);
            fmt_cell(a, i, val, sizeof val);
            fmt_cell(ids, i, idb, sizeof idb);
            if (m == PCRE2_ERROR_NOMATCH)
                rc = violation(v, GRAPH_CONFLICT_VALUE_CONSTRAINT_VIOLATION, ti, id, idn,
                               row_line(ch, i), OG_E_BAD_REQUEST,
                               "%s.%s: %s does not match @check(\"%s\") (id %s)", t->name, pr->name,
                               val, con->pattern, idb);
            else
                rc = violation(v, GRAPH_CONFLICT_VALUE_CONSTRAINT_VIOLATION, ti, id, idn,
                               row_line(ch, i), OG_E_BAD_REQUEST,
                               "%s.%s: @check could not be evaluated on %s (pcre2 error %d)",
                               t->name, pr->name, val, m);
        }
        pcre2_code_free(re);
        if (rc) return rc;
    }
    return 0;
}

/* ---- identity ---------------------------------------------------------------------------- */

/* Every id after the previous one in byte order (a prefix before its extensions). */
static int ids_increasing(const arrow_array *ids)
{
    size_t pn = 0;
    const char *prev = NULL;
    for (int64_t i = 0; i < ids->length; i++) {
        size_t n;
        const char *id = id_at(ids, i, &n);
        if (prev) {
            int c = memcmp(prev, id, pn < n ? pn : n);
            if (c > 0 || (c == 0 && pn >= n)) return 0;
        }
        prev = id;
        pn = n;
    }
    return 1;
}

static int index_ids(vctx *v, const graph_change *ch);

/* The input id map of type ti, built now if index_ids left it for later. */
static int input_map(vctx *v, int ti, const core_bmap **out)
{
    *out = &v->input[ti];
    if (!v->input_later[ti]) return 0;
    v->input_later[ti] = 2; /* index_ids: build it */
    return index_ids(v, v->by_type[ti]);
}

static int index_ids(vctx *v, const graph_change *ch)
{
    const lang_typedef *t = &v->cat->types[ch->type_index];
    int ti = ch->type_index;
    int rc;
    if (ch->mode == GRAPH_CHANGE_DELETE || ch->mode == GRAPH_CHANGE_DELTA) {
        core_bmap *m = &v->deleted[ti];
        for (size_t i = 0; i < ch->n_delete_ids; i++) {
            core_bmap_entry *e;
            int fresh;
            if (!ch->delete_ids[i]) continue;
            if ((rc = core_bmap_put(m, ch->delete_ids[i], strlen(ch->delete_ids[i]), &e, &fresh)))
                return rc;
        }
        if (ch->mode == GRAPH_CHANGE_DELETE || !ch->rows) return 0;
    }
    core_bmap *m = &v->input[ti];
    const arrow_array *ids = ch->rows->columns[0];
    /* (a DELTA's map is built now: its deletions are checked against it below) */
    if (t->kind == LANG_EDGE && ch->mode != GRAPH_CHANGE_DELTA && v->input_later[ti] != 2 &&
        ids_increasing(ids)) {
        /* Strictly increasing ids (minted ones, in file order) are distinct: the map is only
         * needed by rarer checks, which build it on first use. */
        v->input_later[ti] = 1;
        return 0;
    }
    v->input_later[ti] = 0;
    if ((rc = core_bmap_reserve(m, (size_t)ids->length))) return rc;
    uint64_t hs[VBATCH];
    for (int64_t i = 0; i < ids->length; i++) {
        int64_t j = i % VBATCH;
        if (!j) {
            /* Hash the next batch and start fetching its slots. */
            for (int64_t k = 0; k < VBATCH && i + k < ids->length; k++) {
                size_t kn;
                const char *kid = id_at(ids, i + k, &kn);
                hs[k] = core_hmap_hash(kid, kn);
                core_bmap_prefetch(m, hs[k]);
            }
        }
        size_t n;
        const char *id = id_at(ids, i, &n);
        core_bmap_entry *e;
        int fresh;
        if ((rc = core_bmap_put_h(m, id, n, hs[j], &e, &fresh))) return rc;
        if (fresh) {
            e->val = i;
            continue;
        }
        /* The map keeps the first row of the id: collect mode goes on with it. */
        char idbuf[512];
        snprintf(idbuf, sizeof idbuf, "%.*s", (int)(n > 500 ? 500 : n), id);
        uint64_t l1 = row_line(ch, e->val), l2 = row_line(ch, i);
        if (l1 && l2)
            rc = violation(v, GRAPH_CONFLICT_UNIQUE_VIOLATION, ti, id, n, l2, OG_E_KEY_CONFLICT,
                           "%s: id \"%s\" appears twice in the input (lines %" PRIu64
                           " and %" PRIu64 ")",
                           t->name, idbuf, l1, l2);
        else
            rc = violation(v, GRAPH_CONFLICT_UNIQUE_VIOLATION, ti, id, n, 0, OG_E_KEY_CONFLICT,
                           "%s: id \"%s\" appears twice in the input (rows %" PRId64 " and %" PRId64
                           ")",
                           t->name, idbuf, e->val, i);
        if (rc) {
            if (!v->out) core_err_detail(CORE_ERR_KEY, idbuf);
            return rc;
        }
    }
    if (ch->mode != GRAPH_CHANGE_DELTA) return 0;
    /* A DELTA upserts or deletes an id, never both: which one it meant is unknowable. */
    for (size_t i = 0; i < ch->n_delete_ids; i++) {
        const char *d = ch->delete_ids[i];
        if (!d || !core_bmap_find(m, d, strlen(d))) continue;
        rc = core_err(OG_E_BAD_REQUEST,
                      "%s: id \"%.200s\" is both upserted and deleted by one change", t->name, d);
        core_err_detail(CORE_ERR_KEY, d);
        return rc;
    }
    return 0;
}

static int check_insert(vctx *v, const graph_change *ch)
{
    const lang_typedef *t = &v->cat->types[ch->type_index];
    const arrow_array *ids = ch->rows->columns[0];
    int rc = probe_column(v, ch->type_index, ids);
    if (rc) return rc;
    const committed *c = &v->com[ch->type_index];
    for (int64_t i = 0; i < ids->length; i++) {
        size_t n;
        const char *id = id_at(ids, i, &n);
        if (!core_bmap_find(&c->set, id, n)) continue;
        char idbuf[512];
        snprintf(idbuf, sizeof idbuf, "%.*s", (int)(n > 500 ? 500 : n), id);
        rc = violation(v, GRAPH_CONFLICT_UNIQUE_VIOLATION, ch->type_index, id, n, row_line(ch, i),
                       OG_E_KEY_CONFLICT, "%s: id \"%s\" already exists", t->name, idbuf);
        if (rc) {
            if (!v->out) core_err_detail(CORE_ERR_KEY, idbuf);
            return rc;
        }
    }
    return 0;
}

/* ---- @unique ----------------------------------------------------------------------------- */

static int encode_tuple(const arrow_batch *b, const size_t *cols, size_t n, uint8_t **data,
                        size_t **offs)
{
    arrow_sort_key keys[16];
    if (n > 16) return core_err(OG_E_UNSUPPORTED, "@unique over more than 16 columns");
    for (size_t k = 0; k < n; k++)
        keys[k] = (arrow_sort_key){
            .column = b->columns[cols[k]], .descending = false, .nulls_first = true};
    *offs = core_malloc(((size_t)b->num_rows + 1) * sizeof **offs);
    if (!*offs) return core_err_nomem();
    return arrow_sort_keys_encode(data, *offs, keys, n, b->num_rows);
}

static int any_null(const arrow_batch *b, const size_t *cols, size_t n, int64_t i)
{
    for (size_t k = 0; k < n; k++)
        if (!arrow_array_is_valid(b->columns[cols[k]], i)) return 1;
    return 0;
}

static void con_name(const lang_typedef *t, const lang_constraint *con, char *buf, size_t cap)
{
    size_t o = 0;
    for (size_t k = 0; k < con->n_cols && o < cap; k++) {
        int p = con->cols[k];
        const char *nm = p == LANG_COL_SRC ? "src" : p == LANG_COL_DST ? "dst" : t->props[p].name;
        int w = snprintf(buf + o, cap - o, "%s%s", k ? ", " : "", nm);
        if (w < 0) break;
        o += (size_t)w;
    }
    if (!con->n_cols) buf[0] = '\0';
}

/* Hits of a lookup, kept: key index, row address, and a copy of the payload. */
typedef struct hitlist {
    size_t *key;
    uint64_t *addr;
    char **pay;
    size_t n, cap;
} hitlist;

static void hitlist_free(hitlist *h)
{
    for (size_t i = 0; i < h->n; i++)
        core_free(h->pay[i]);
    core_free(h->key);
    core_free(h->addr);
    core_free(h->pay);
    memset(h, 0, sizeof *h);
}

static int on_keep(void *arg, size_t key, uint64_t addr, const uint8_t *pay, size_t plen)
{
    hitlist *h = arg;
    if (h->n == h->cap) {
        size_t nc = h->cap ? h->cap * 2 : 16;
        size_t *k = core_realloc(h->key, nc * sizeof *k);
        if (k) h->key = k;
        uint64_t *a = core_realloc(h->addr, nc * sizeof *a);
        if (a) h->addr = a;
        char **p = core_realloc(h->pay, nc * sizeof *p);
        if (p) h->pay = p;
        if (!k || !a || !p) return core_err_nomem();
        h->cap = nc;
    }
    char *copy = NULL;
    if (pay) {
        if (!(copy = core_malloc(plen + 1))) return core_err_nomem();
        memcpy(copy, pay, plen);
        copy[plen] = '\0';
    }
    h->key[h->n] = key;
    h->addr[h->n] = addr;
    h->pay[h->n++] = copy;
    return 0;
}

/* Whether the committed row of type ti with this id is gone after the change: replaced by one
 * of its rows (in the input map `in`) or deleted by it (a DELTA's deletions). */
static int gone_by_change(const vctx *v, int ti, const core_bmap *in, const char *id, size_t n)
{
    return core_bmap_find(in, id, n) || core_bmap_find(&v->deleted[ti], id, n);
}

/* @unique over one text column through the committed table's key index on it (declared
 * "col>id"): *done = 1 when the index answered (0: no such index, the caller reads the
 * table). An input row whose value a committed row of another id holds is a conflict (the
 * first such row in input order; collect mode: each, once; rows `reported` already are
 * skipped). */
static int unique_by_index(vctx *v, const graph_change *ch, const lang_constraint *con, size_t col,
                           const char *cname, const unsigned char *reported, int *done)
{
    *done = 0;
    const lang_typedef *t = &v->cat->types[ch->type_index];
    const char *name = ch->rows->schema.fields[col].name;
    const lance_dataset *ds;
    lance_dataset *owned;
    int rc = open_committed(v, ch->type_index, &ds, &owned);
    if (rc || !ds) {
        *done = !rc; /* nothing committed: nothing to collide with */
        return rc;
    }
    if (!lance_kix_declared(ds, name, GRAPH_COL_ID)) {
        lance_dataset_free(owned);
        return 0;
    }
    *done = 1;
    const arrow_array *a = ch->rows->columns[col];
    size_t n = (size_t)a->length, nk = 0;
    const uint8_t **k = core_malloc((n ? n : 1) * sizeof *k);
    size_t *l = core_malloc((n ? n : 1) * sizeof *l), *row = core_malloc((n ? n : 1) * sizeof *row);
    size_t *first = core_malloc((n ? n : 1) * sizeof *first); /* per key: its first hit */
    hitlist hits = {0};
    rc = k && l && row && first ? 0 : core_err_nomem();
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (!arrow_array_is_valid(a, (int64_t)i) || reported[i]) continue;
        k[nk] = arrow_array_get_bytes(a, (int64_t)i, &l[nk]);
        first[nk] = SIZE_MAX;
        row[nk++] = i;
    }
    lance_kix_stats ks;
    if (rc == 0) rc = lance_kix_lookup(ds, name, GRAPH_COL_ID, k, l, nk, on_keep, &hits, &ks);
    if (rc == 0) {
        v->st->index_lookups++;
        v->st->rows_scanned += ks.rows_scanned;
    }
    const core_bmap *in = NULL;
    if (rc == 0) rc = input_map(v, ch->type_index, &in);
    for (size_t h = 0; rc == 0 && h < hits.n; h++) {
        const char *cid = hits.pay[h];
        if (!cid || gone_by_change(v, ch->type_index, in, cid, strlen(cid))) continue;
        if (first[hits.key[h]] == SIZE_MAX) first[hits.key[h]] = h;
    }
    /* keys are in input order */
    for (size_t q = 0; rc == 0 && q < nk; q++) {
        if (first[q] == SIZE_MAX) continue;
        char val[96];
        size_t idn;
        const char *id = id_at(ch->rows->columns[0], (int64_t)row[q], &idn);
        fmt_cell(a, (int64_t)row[q], val, sizeof val);
        rc = violation(v, GRAPH_CONFLICT_UNIQUE_VIOLATION, ch->type_index, id, idn,
                       row_line(ch, (int64_t)row[q]), OG_E_KEY_CONFLICT,
                       "%s: @unique(%s) violated: value %s is already used by id \"%.60s\"",
                       t->name, cname, val, hits.pay[first[q]]);
    }
    (void)con;
    hitlist_free(&hits);
    core_free(k);
    core_free(l);
    core_free(row);
    core_free(first);
    lance_dataset_free(owned);
    if (rc && rc != OG_E_KEY_CONFLICT) core_err_prefix("validating against %s", t->name);
    return rc;
}

static int check_unique_con(vctx *v, const graph_change *ch, const lang_constraint *con)
{
    const lang_typedef *t = &v->cat->types[ch->type_index];
    int ti = ch->type_index;
    size_t cols[16];
    if (con->n_cols > 16 || !con->n_cols) return 0;
    for (size_t k = 0; k < con->n_cols; k++)
        cols[k] = (size_t)col_of_prop(t, con->cols[k]);
    char cname[256];
    con_name(t, con, cname, sizeof cname);
    const arrow_batch *b = ch->rows;
    uint8_t *kd = NULL, *cd = NULL;
    size_t *ko = NULL, *co = NULL;
    arrow_batch *cb = NULL;
    core_bmap m = CORE_BMAP_INIT;
    char val[96], idb[96];
    /* input rows reported already: given twice, or colliding with a committed row (collect
     * mode reports each row once) */
    unsigned char *reported = core_calloc((size_t)b->num_rows + 1, 1);
    int rc = reported ? encode_tuple(b, cols, con->n_cols, &kd, &ko) : core_err_nomem();
    for (int64_t i = 0; !rc && i < b->num_rows; i++) {
        if (any_null(b, cols, con->n_cols, i)) continue;
        core_bmap_entry *e;
        int fresh;
        if ((rc = core_bmap_put(&m, kd + ko[i], ko[i + 1] - ko[i], &e, &fresh))) break;
        if (fresh) {
            e->val = i;
            continue;
        }
        fmt_cell(b->columns[cols[0]], i, val, sizeof val);
        uint64_t l1 = row_line(ch, e->val), l2 = row_line(ch, i);
        char where[64];
        if (!l2) /* rows without a source line (a change set built in code) */
            snprintf(where, sizeof where, "rows %" PRId64 " and %" PRId64, e->val, i);
        else if (l1 == l2) /* one mutation statement wrote both rows */
            snprintf(where, sizeof where, "both from line %" PRIu64, l2);
        else
            snprintf(where, sizeof where, "lines %" PRIu64 " and %" PRIu64, l1, l2);
        size_t idn;
        const char *id = id_at(b->columns[0], i, &idn);
        reported[i] = 1; /* its value is the first row's: no second conflict against the table */
        rc = violation(v, GRAPH_CONFLICT_UNIQUE_VIOLATION, ti, id, idn, l2, OG_E_KEY_CONFLICT,
                       "%s: @unique(%s) violated: value %s%s is given twice in the input (%s)",
                       t->name, cname, val, con->n_cols > 1 ? ", ..." : "", where);
    }
    /* REPLACE: the committed rows are gone after the change, so they cannot collide; neither
     * can the ones this change replaces or deletes. A one-column text constraint with a key
     * index (value -> id) asks it for the input's values; any other reads the committed
     * columns. */
    int by_index = 0;
    if (!rc && core_bmap_count(&m) && ch->mode != GRAPH_CHANGE_REPLACE && con->n_cols == 1 &&
        b->schema.fields[cols[0]].type.id == ARROW_UTF8)
        rc = unique_by_index(v, ch, con, cols[0], cname, reported, &by_index);
    if (!rc && core_bmap_count(&m) && ch->mode != GRAPH_CHANGE_REPLACE && !by_index) {
        const char *names[17];
        names[0] = GRAPH_COL_ID;
        for (size_t k = 0; k < con->n_cols; k++)
            names[k + 1] = b->schema.fields[cols[k]].name;
        rc = scan_committed(v, ti, names, con->n_cols + 1, &cb);
        if (!rc && cb && cb->num_rows) {
            size_t ccols[16];
            for (size_t k = 0; k < con->n_cols; k++)
                ccols[k] = k + 1;
            rc = encode_tuple(cb, ccols, con->n_cols, &cd, &co);
            const core_bmap *in = NULL;
            if (!rc) rc = input_map(v, ti, &in);
            for (int64_t r = 0; !rc && r < cb->num_rows; r++) {
                if (any_null(cb, ccols, con->n_cols, r)) continue;
                size_t n;
                const char *cid = id_at(cb->columns[0], r, &n);
                if (gone_by_change(v, ti, in, cid, n)) continue; /* replaced or deleted */
                core_bmap_entry *e = core_bmap_find(&m, cd + co[r], co[r + 1] - co[r]);
                if (!e || reported[e->val]) continue;
                reported[e->val] = 1;
                fmt_cell(b->columns[cols[0]], e->val, val, sizeof val);
                fmt_cell(cb->columns[0], r, idb, sizeof idb);
                size_t idn;
                const char *id = id_at(b->columns[0], e->val, &idn);
                rc = violation(v, GRAPH_CONFLICT_UNIQUE_VIOLATION, ti, id, idn,
                               row_line(ch, e->val), OG_E_KEY_CONFLICT,
                               "%s: @unique(%s) violated: value %s%s is already used by id %s",
                               t->name, cname, val, con->n_cols > 1 ? ", ..." : "", idb);
            }
        }
    }
    core_bmap_free(&m);
    core_free(kd);
    core_free(ko);
    core_free(cd);
    core_free(co);
    core_free(reported);
    arrow_batch_free(cb);
    return rc;
}

/* ---- endpoints --------------------------------------------------------------------------- */

/* Whether a change of a type removes ids, and whether it has rows keyed by id. */
static int removes_ids(const graph_change *c)
{
    return c->mode == GRAPH_CHANGE_DELETE || c->mode == GRAPH_CHANGE_DELTA;
}

static int has_input_ids(const graph_change *c)
{
    return c->mode != GRAPH_CHANGE_DELETE;
}

static int node_exists_h(vctx *v, int nt, const char *id, size_t n, uint64_t h, int *exists,
                         const char **why)
{
    const graph_change *nc = v->by_type[nt];
    *why = "";
    if (nc && removes_ids(nc) && core_bmap_find_h(&v->deleted[nt], id, n, h)) {
        *exists = 0;
        *why = " (deleted by this change)";
        return 0;
    }
    if (nc && has_input_ids(nc)) {
        if (core_bmap_find_h(&v->input[nt], id, n, h)) {
            *exists = 1;
            return 0;
        }
        if (nc->mode == GRAPH_CHANGE_REPLACE) {
            *exists = 0;
            *why = " (its table is replaced by this change)";
            return 0;
        }
    }
    committed *c = &v->com[nt];
    if (!c->loaded && !core_bmap_find_h(&c->probed, id, n, h)) {
        /* not asked in a batch before: ask alone */
        const uint8_t *k = (const uint8_t *)id;
        int rc = probe_ids(v, nt, &k, &n, 1);
        if (rc) return rc;
    }
    *exists = core_bmap_find_h(&c->set, id, n, h) != NULL;
    return 0;
}

/* The map an endpoint of node type nt is looked up in first (for prefetching). */
static const core_bmap *endpoint_map(const vctx *v, int nt)
{
    const graph_change *nc = v->by_type[nt];
    if (!nc) return v->com[nt].loaded ? &v->com[nt].set : &v->com[nt].probed;
    return nc->mode == GRAPH_CHANGE_DELETE ? &v->deleted[nt] : &v->input[nt];
}

/* Whether the change set itself decides that node id of type nt exists or not. */
static int decided_by_change(const vctx *v, int nt, const uint8_t *id, size_t n)
{
    const graph_change *nc = v->by_type[nt];
    if (!nc) return 0;
    return (removes_ids(nc) && core_bmap_find(&v->deleted[nt], id, n)) ||
           (has_input_ids(nc) && core_bmap_find(&v->input[nt], id, n));
}

/* Endpoints of the change's own edges (committed edges a node removal would leave dangling are
 * check_dangling's). An edge with both endpoints missing is one conflict (its src). */
static int check_endpoints(vctx *v, const graph_change *ch)
{
    const lang_typedef *t = &v->cat->types[ch->type_index];
    const arrow_batch *b = ch->rows;
    uint64_t hs[VBATCH];
    unsigned char *orphan = core_calloc((size_t)b->num_rows + 1, 1); /* rows reported */
    if (!orphan) return core_err_nomem();
    int rc = 0;
    for (int side = 0; rc == 0 && side < 2; side++) {
        int nt = side ? t->to : t->from;
        const arrow_array *a = b->columns[1 + side];
        const graph_change *nc = v->by_type[nt];
        /* both ends of one node type: asked together on the first side */
        bool both = t->from == t->to;
        if ((!nc || nc->mode != GRAPH_CHANGE_REPLACE) && !(both && side)) {
            /* Ask the committed table at once about every endpoint the change set does not
             * decide itself, before the batches prefetch into the maps: one question for all
             * of them, so probe_ids chooses between the key index and a read of every id
             * once, on their whole number. */
            const uint8_t **k = NULL;
            size_t *l = NULL, nk = 0;
            size_t nr = (size_t)b->num_rows, nall = both ? 2 * nr : nr;
            k = core_malloc((nall ? nall : 1) * sizeof *k);
            l = core_malloc((nall ? nall : 1) * sizeof *l);
            if (!k || !l) rc = core_err_nomem();
            for (size_t i = 0; rc == 0 && i < nall; i++) {
                const arrow_array *col = i < nr ? a : b->columns[2];
                size_t n;
                const uint8_t *id = arrow_array_get_bytes(col, (int64_t)(i % nr), &n);
                if (decided_by_change(v, nt, id, n)) continue;
                k[nk] = id;
                l[nk++] = n;
            }
            if (rc == 0) rc = probe_ids(v, nt, k, l, nk);
            core_free(k);
            core_free(l);
            if (rc) break;
        }
        const core_bmap *pm = endpoint_map(v, nt);
        for (int64_t i = 0; rc == 0 && i < b->num_rows; i++) {
            int64_t j = i % VBATCH;
            if (!j) {
                int64_t end = b->num_rows - i < VBATCH ? b->num_rows - i : VBATCH;
                for (int64_t k = 0; k < end; k++) {
                    size_t kn;
                    const char *kid = id_at(a, i + k, &kn);
                    hs[k] = core_hmap_hash(kid, kn);
                    core_bmap_prefetch(pm, hs[k]);
                }
                /* Second stage: the slots are arriving; fetch the entries they hold. */
                for (int64_t k = 0; k < end; k++)
                    core_bmap_prefetch_entry(pm, hs[k]);
            }
            if (orphan[i]) continue;
            size_t n;
            const char *id = id_at(a, i, &n);
            int exists;
            const char *why;
            if ((rc = node_exists_h(v, nt, id, n, hs[j], &exists, &why)) || exists) continue;
            orphan[i] = 1;
            char idb[96];
            size_t en;
            const char *eid = id_at(b->columns[0], i, &en);
            fmt_cell(b->columns[0], i, idb, sizeof idb);
            rc = violation(v, GRAPH_CONFLICT_ORPHAN_EDGE, ch->type_index, eid, en, row_line(ch, i),
                           OG_E_BAD_REQUEST,
                           "%s: %s \"%.*s\" is not an existing %s node%s (edge id %s)", t->name,
                           side ? "dst" : "src", (int)(n > 200 ? 200 : n), id,
                           v->cat->types[nt].name, why, idb);
        }
    }
    core_free(orphan);
    return rc;
}

static int cmp_addr(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The ids of the committed rows at addrs[0..n) of type ti, into ids[i] (owned; NULL for an
 * address not found): one scan, on the error path only. */
static int ids_at_addrs(vctx *v, int ti, const uint64_t *addrs, size_t n, char **ids)
{
    for (size_t i = 0; i < n; i++)
        ids[i] = NULL;
    const lance_dataset *ds;
    lance_dataset *owned;
    int rc = n ? open_committed(v, ti, &ds, &owned) : 0;
    if (rc || !n || !ds) return rc;
    const char *cols[] = {GRAPH_COL_ID};
    lance_scan_options so = LANCE_SCAN_OPTIONS_INIT;
    so.columns = cols;
    so.n_columns = 1;
    so.with_row_addr = true;
    arrow_batch *b = NULL;
    rc = lance_dataset_scan_all(&b, ds, &so);
    for (int64_t r = 0; rc == 0 && r < b->num_rows; r++) {
        uint64_t addr = arrow_array_get_uint(b->columns[1], r);
        for (size_t i = 0; rc == 0 && i < n; i++) {
            if (addrs[i] != addr || ids[i]) continue;
            size_t len;
            const char *id = id_at(b->columns[0], r, &len);
            if (!(ids[i] = core_strndup(id, len))) rc = core_err_nomem();
        }
    }
    arrow_batch_free(b);
    lance_dataset_free(owned);
    if (rc && rc != OG_E_NOMEM) {
        /* only a message was at stake: the ids stay unknown */
        og_error_clear();
        rc = 0;
    }
    return rc;
}

/* Committed edges whose endpoint a node REPLACE leaves out would dangle (a whole-table change:
 * every committed edge of the types that touch it is read). */
static int check_dangling_replace(vctx *v, int nt)
{
    for (size_t et = 0; et < v->cat->n_types; et++) {
        const lang_typedef *e = &v->cat->types[et];
        if (e->kind != LANG_EDGE || (e->from != nt && e->to != nt)) continue;
        const graph_change *ec = v->by_type[et];
        if (ec && ec->mode == GRAPH_CHANGE_REPLACE)
            continue; /* its committed edges are gone; its new ones were checked */
        static const char *const cols[] = {GRAPH_COL_ID, GRAPH_COL_SRC, GRAPH_COL_DST};
        arrow_batch *b = NULL;
        const core_bmap *ein = NULL;
        int rc = ec && has_input_ids(ec) ? input_map(v, (int)et, &ein) : 0;
        if (!rc) rc = scan_committed(v, (int)et, cols, 3, &b);
        if (rc || !b) return rc;
        for (int64_t i = 0; !rc && i < b->num_rows; i++) {
            size_t idn;
            const char *eid = id_at(b->columns[0], i, &idn);
            if (ec && removes_ids(ec) && core_bmap_find(&v->deleted[et], eid, idn)) continue;
            if (ein && core_bmap_find(ein, eid, idn))
                continue; /* replaced by this change: its new endpoints were checked */
            for (int side = 0; side < 2; side++) {
                if ((side ? e->to : e->from) != nt) continue;
                size_t n;
                const char *id = id_at(b->columns[1 + side], i, &n);
                if (core_bmap_find(&v->input[nt], id, n)) continue;
                /* one conflict per edge */
                rc =
                    violation(v, GRAPH_CONFLICT_ORPHAN_EDGE, (int)et, eid, idn, 0, OG_E_BAD_REQUEST,
                              "removing %s \"%.*s\" would leave %s edge %.*s dangling; remove "
                              "or replace its edges in the same write",
                              v->cat->types[nt].name, (int)(n > 200 ? 200 : n), id, e->name,
                              (int)(idn > 100 ? 100 : idn), eid);
                break;
            }
        }
        arrow_batch_free(b);
        if (rc) return rc;
    }
    return 0;
}

/* Whether addr is new among addrs[0..n) (indexed by m): then it is stored as addrs[n] and
 * *dup = 0. The array has room for it. */
static int addr_once(core_hmap *m, uint64_t *addrs, size_t n, uint64_t addr, int *dup)
{
    uint64_t h = core_hmap_hash(&addr, sizeof addr);
    core_hmap_probe p = core_hmap_probe_of(m, h);
    uint32_t e;
    *dup = 0;
    while (core_hmap_next(m, &p, &e))
        if (addrs[e] == addr) {
            *dup = 1;
            return 0;
        }
    addrs[n] = addr;
    return core_hmap_add_at(m, &p, h, (uint32_t)n);
}

/* Keys of a change's deleted ids and (with rows) its row ids: what it removes or replaces. */
static int removed_keys(const graph_change *c, const uint8_t ***keys, size_t **lens, size_t *n)
{
    size_t nr = has_input_ids(c) ? (size_t)n_rows(c) : 0;
    size_t nd = removes_ids(c) ? c->n_delete_ids : 0;
    *n = 0;
    *keys = core_malloc((nr + nd + 1) * sizeof **keys);
    *lens = core_malloc((nr + nd + 1) * sizeof **lens);
    if (!*keys || !*lens) {
        core_free(*keys);
        core_free(*lens);
        *keys = NULL;
        *lens = NULL;
        return core_err_nomem();
    }
    for (size_t i = 0; i < nd; i++) {
        if (!c->delete_ids[i]) continue;
        (*keys)[*n] = (const uint8_t *)c->delete_ids[i];
        (*lens)[(*n)++] = strlen(c->delete_ids[i]);
    }
    for (size_t i = 0; i < nr; i++) {
        (*keys)[*n] = arrow_array_get_bytes(c->rows->columns[0], (int64_t)i, &(*lens)[*n]);
        (*n)++;
    }
    return 0;
}

/* Committed edges whose endpoint a node DELETE (or a DELTA's deletions) removes would dangle:
 * refuse, unless the same change set also removes or replaces those edges (a mutation's
 * cascade does exactly that). Asked through the edge tables' src/dst indexes: the cost follows
 * the deleted nodes. Only the edges of the deleted nodes are looked at: an edge that already
 * dangled before (written by another tool) does not stop the deletion of an unrelated node (a
 * full read of every edge table did, until key indexes). An edge losing both endpoints is one
 * conflict. */
static int check_dangling(vctx *v, int nt)
{
    const graph_change *nc = v->by_type[nt];
    if (nc->mode == GRAPH_CHANGE_REPLACE) return check_dangling_replace(v, nt);
    const uint8_t **keys = core_malloc((nc->n_delete_ids ? nc->n_delete_ids : 1) * sizeof *keys);
    size_t *lens = core_malloc((nc->n_delete_ids ? nc->n_delete_ids : 1) * sizeof *lens);
    size_t nk = 0;
    int rc = keys && lens ? 0 : core_err_nomem();
    for (size_t i = 0; rc == 0 && i < nc->n_delete_ids; i++) {
        if (!nc->delete_ids[i]) continue;
        keys[nk] = (const uint8_t *)nc->delete_ids[i];
        lens[nk++] = strlen(nc->delete_ids[i]);
    }
    for (size_t et = 0; rc == 0 && nk && et < v->cat->n_types; et++) {
        const lang_typedef *e = &v->cat->types[et];
        if (e->kind != LANG_EDGE || (e->from != nt && e->to != nt)) continue;
        const graph_change *ec = v->by_type[et];
        if (ec && ec->mode == GRAPH_CHANGE_REPLACE) continue; /* its committed edges are gone */
        /* The committed edges this change removes or replaces, by address. */
        hitlist gone = {0}, hits = {0};
        if (ec) {
            const uint8_t **ek = NULL;
            size_t *el = NULL, ne = 0;
            rc = removed_keys(ec, &ek, &el, &ne);
            if (rc == 0)
                rc = lookup_committed(v, (int)et, GRAPH_COL_ID, NULL, ek, el, ne, on_keep, &gone);
            core_free(ek);
            core_free(el);
            if (rc == 0 && gone.n > 1) qsort(gone.addr, gone.n, sizeof *gone.addr, cmp_addr);
        }
        /* The edges left dangling, src side then dst side, each edge once (its first hit):
         * first-error mode stops at the first, before the other side is asked. */
        core_hmap seen = CORE_HMAP_INIT; /* over addrs[0..nbad) */
        uint64_t *addrs = NULL;
        size_t *bad = NULL, nbad = 0;
        for (int side = 0; rc == 0 && side < 2 && !(nbad && !v->out); side++) {
            if ((side ? e->to : e->from) != nt) continue;
            size_t from = hits.n;
            rc = lookup_committed(v, (int)et, side ? GRAPH_COL_DST : GRAPH_COL_SRC, NULL, keys,
                                  lens, nk, on_keep, &hits);
            size_t *nb = rc == 0 ? core_realloc(bad, (hits.n + 1) * sizeof *bad) : NULL;
            uint64_t *na = nb ? core_realloc(addrs, (hits.n + 1) * sizeof *addrs) : NULL;
            if (nb) bad = nb;
            if (na) addrs = na;
            if (rc == 0 && (!nb || !na)) rc = core_err_nomem();
            for (size_t h = from; rc == 0 && h < hits.n; h++) {
                if (gone.n &&
                    bsearch(&hits.addr[h], gone.addr, gone.n, sizeof *gone.addr, cmp_addr))
                    continue;
                int dup = 0;
                if ((rc = addr_once(&seen, addrs, nbad, hits.addr[h], &dup)) || dup) continue;
                bad[nbad++] = h;
                if (!v->out) break; /* only the first is reported */
            }
        }
        core_hmap_free(&seen);
        char **eids = rc == 0 && nbad ? core_calloc(nbad, sizeof *eids) : NULL;
        if (rc == 0 && nbad && !eids) rc = core_err_nomem();
        if (rc == 0 && nbad) rc = ids_at_addrs(v, (int)et, addrs, nbad, eids);
        for (size_t q = 0; rc == 0 && q < nbad; q++) {
            const char *id = (const char *)keys[hits.key[bad[q]]];
            size_t n = lens[hits.key[bad[q]]];
            const char *eid = eids[q] ? eids[q] : "(unknown)";
            rc = violation(v, GRAPH_CONFLICT_ORPHAN_EDGE, (int)et, eids[q],
                           eids[q] ? strlen(eids[q]) : 0, 0, OG_E_BAD_REQUEST,
                           "removing %s \"%.*s\" would leave %s edge %.100s dangling; remove or "
                           "replace its edges in the same write",
                           v->cat->types[nt].name, (int)(n > 200 ? 200 : n), id, e->name, eid);
        }
        for (size_t q = 0; eids && q < nbad; q++)
            core_free(eids[q]);
        core_free(addrs);
        core_free(eids);
        core_free(bad);
        hitlist_free(&gone);
        hitlist_free(&hits);
    }
    core_free(keys);
    core_free(lens);
    return rc;
}

/* ---- @card ------------------------------------------------------------------------------- */

static int card_fail(const vctx *v, const lang_typedef *t, int ti, uint64_t line, const char *src,
                     size_t n, int64_t count)
{
    char hi[32];
    if (t->card_max >= 0)
        snprintf(hi, sizeof hi, "%" PRId64, t->card_max);
    else
        hi[0] = '\0';
    /* no row id: the count belongs to the source node, which the message names */
    return violation(v, GRAPH_CONFLICT_CARDINALITY_VIOLATION, ti, NULL, 0, line, OG_E_BAD_REQUEST,
                     "%s: source node \"%.*s\" would have %" PRId64 " %s edges, outside "
                     "@card(%" PRIu64 "..%s)",
                     t->name, (int)(n > 200 ? 200 : n), src, count, t->name, t->card_min, hi);
}

/* @card counts a source node's edges of the type after the change, for every source node the
 * change touches: the sources of its inserted/upserted/replacing edges (upper and lower bound)
 * and, for an edge DELETE, the sources that lose an edge (lower bound). As in the reference,
 * a node with no edges of the type at all is not checked against a minimum: otherwise nodes
 * could never be loaded before their edges. Committed edges are counted through the table's
 * src index (and found by id through its id index, which carries src). */
static int on_count(void *arg, size_t key, uint64_t addr, const uint8_t *pay, size_t plen)
{
    hitlist *h = arg; /* only keys counted: no payload copy */
    (void)addr;
    (void)pay;
    (void)plen;
    return on_keep(h, key, 0, NULL, 0);
}

/* @card for an edge DELTA: per source node it touches (the sources of its upserted rows, and
 * the old sources of the committed edges it deletes or replaces), committed edges minus the
 * ones deleted or replaced plus the upserted ones. A source with upserted rows is held to
 * both bounds (named with its first row's line), one that only loses edges to the minimum,
 * as an edge DELETE's are. */
static int check_card_delta(vctx *v, const graph_change *ch)
{
    const lang_typedef *t = &v->cat->types[ch->type_index];
    int ti = ch->type_index;
    if (t->card_min == 0 && t->card_max < 0) return 0;
    size_t nr = (size_t)n_rows(ch);
    /* The committed edges this change deletes or replaces, with their sources (payload). */
    hitlist lost = {0}, hl = {0};
    const uint8_t **rk = NULL;
    size_t *rl = NULL, nrk = 0;
    int rc = removed_keys(ch, &rk, &rl, &nrk);
    if (rc == 0)
        rc = lookup_committed(v, ti, GRAPH_COL_ID, GRAPH_COL_SRC, rk, rl, nrk, on_keep, &lost);
    core_free(rk);
    core_free(rl);
    /* Sources in first-seen order: the upserted rows' (in row order), then the losing ones. */
    size_t cap = nr + lost.n + 1;
    core_bmap ix = CORE_BMAP_INIT;
    const uint8_t **k = rc == 0 ? core_malloc(cap * sizeof *k) : NULL;
    size_t *l = core_malloc(cap * sizeof *l), nk = 0;
    int64_t *up = core_calloc(cap, sizeof *up), *down = core_calloc(cap, sizeof *down);
    int64_t *all = core_calloc(cap, sizeof *all), *row = core_malloc(cap * sizeof *row);
    if (rc == 0 && (!k || !l || !up || !down || !all || !row)) rc = core_err_nomem();
    for (size_t i = 0; rc == 0 && i < nr + lost.n; i++) {
        size_t n;
        const uint8_t *src;
        if (i < nr) {
            src = arrow_array_get_bytes(ch->rows->columns[1], (int64_t)i, &n);
        } else {
            if (!(src = (const uint8_t *)lost.pay[i - nr])) continue;
            n = strlen(lost.pay[i - nr]);
        }
        core_bmap_entry *e;
        int fresh;
        if ((rc = core_bmap_put(&ix, src, n, &e, &fresh))) break;
        if (fresh) {
            e->val = (int64_t)nk;
            k[nk] = src;
            l[nk] = n;
            row[nk++] = i < nr ? (int64_t)i : -1;
        }
        if (i < nr)
            up[e->val]++;
        else
            down[e->val]++;
    }
    /* + every committed edge of those sources */
    if (rc == 0) rc = lookup_committed(v, ti, GRAPH_COL_SRC, NULL, k, l, nk, on_count, &hl);
    for (size_t h = 0; rc == 0 && h < hl.n; h++)
        all[hl.key[h]]++;
    for (size_t i = 0; rc == 0 && i < nk; i++) {
        int64_t kept = all[i] > down[i] ? all[i] - down[i] : 0, after = kept + up[i];
        int bad = (uint64_t)after < t->card_min ||
                  (row[i] >= 0 && t->card_max >= 0 && after > t->card_max);
        if (bad)
            rc = card_fail(v, t, ti, row[i] >= 0 ? row_line(ch, row[i]) : 0, (const char *)k[i],
                           l[i], after);
    }
    core_bmap_free(&ix);
    hitlist_free(&lost);
    hitlist_free(&hl);
    core_free(k);
    core_free(l);
    core_free(up);
    core_free(down);
    core_free(all);
    core_free(row);
    return rc;
}

static int check_card(vctx *v, const graph_change *ch)
{
    if (ch->mode == GRAPH_CHANGE_DELTA) return check_card_delta(v, ch);
    const lang_typedef *t = &v->cat->types[ch->type_index];
    int ti = ch->type_index;
    int del = ch->mode == GRAPH_CHANGE_DELETE;
    /* Only a lower bound can be broken by deleting edges. */
    if (del ? t->card_min == 0 : (t->card_min == 0 && t->card_max < 0)) return 0;
    if (del && !ch->n_delete_ids) return 0;
    /* Entry i of counts is source k[i] (both in first-seen order): its val counts edges,
     * aux[i] is its first row (insert) or the edges it loses (delete). */
    core_bmap counts = CORE_BMAP_INIT;
    hitlist hl = {0}, lost = {0};
    const uint8_t **k = NULL;
    size_t *l = NULL, nk = 0;
    int64_t *aux = NULL;
    int rc = 0;
    if (!del) {
        /* Sources this change touches: count its rows. */
        const arrow_array *src = ch->rows->columns[1];
        k = core_malloc(((size_t)src->length + 1) * sizeof *k);
        l = core_malloc(((size_t)src->length + 1) * sizeof *l);
        aux = core_malloc(((size_t)src->length + 1) * sizeof *aux);
        if (!k || !l || !aux) rc = core_err_nomem();
        for (int64_t i = 0; !rc && i < src->length; i++) {
            size_t n;
            const char *s = id_at(src, i, &n);
            core_bmap_entry *e;
            int fresh;
            if ((rc = core_bmap_put(&counts, s, n, &e, &fresh))) break;
            if (fresh) {
                aux[nk] = i;
                k[nk] = (const uint8_t *)s;
                l[nk++] = n;
            }
            e->val++;
        }
        if (!rc && ch->mode != GRAPH_CHANGE_REPLACE) {
            /* + committed edges of those sources */
            rc = lookup_committed(v, ti, GRAPH_COL_SRC, NULL, k, l, nk, on_count, &hl);
            for (size_t h = 0; !rc && h < hl.n; h++)
                counts.e[hl.key[h]].val++;
        }
        if (!rc && ch->mode == GRAPH_CHANGE_UPSERT) {
            /* - committed edges this change replaces (counted above under their old source) */
            const uint8_t **ik = NULL;
            size_t *il = NULL;
            rc = column_keys(ch->rows->columns[0], &ik, &il);
            if (!rc)
                rc = lookup_committed(v, ti, GRAPH_COL_ID, GRAPH_COL_SRC, ik, il,
                                      (size_t)ch->rows->num_rows, on_keep, &lost);
            for (size_t h = 0; !rc && h < lost.n; h++) {
                core_bmap_entry *e =
                    lost.pay[h] ? core_bmap_find(&counts, lost.pay[h], strlen(lost.pay[h])) : NULL;
                if (e) e->val--;
            }
            core_free(ik);
            core_free(il);
        }
        /* Report in input order, so the first offending line is named. */
        for (int64_t i = 0; !rc && i < src->length; i++) {
            size_t n;
            const char *s = id_at(src, i, &n);
            core_bmap_entry *e = core_bmap_find(&counts, s, n);
            if (!e || aux[e - counts.e] != i) continue;
            if ((uint64_t)e->val < t->card_min || (t->card_max >= 0 && e->val > t->card_max))
                rc = card_fail(v, t, ti, row_line(ch, i), s, n, e->val);
        }
    } else {
        /* The sources that lose an edge (aux: edges lost), then all their edges (val). */
        k = core_malloc(ch->n_delete_ids * sizeof *k);
        l = core_malloc(ch->n_delete_ids * sizeof *l);
        if (!k || !l) rc = core_err_nomem();
        for (size_t i = 0; !rc && i < ch->n_delete_ids; i++) {
            if (!ch->delete_ids[i]) continue;
            k[nk] = (const uint8_t *)ch->delete_ids[i];
            l[nk++] = strlen(ch->delete_ids[i]);
        }
        if (!rc)
            rc = lookup_committed(v, ti, GRAPH_COL_ID, GRAPH_COL_SRC, k, l, nk, on_keep, &lost);
        /* the sources go in k/l next: one per committed row found, which a table that holds
         * an id more than once (written by another tool) makes more than the ids */
        if (!rc && lost.n > ch->n_delete_ids) {
            const uint8_t **nk2 = core_realloc(k, lost.n * sizeof *k);
            if (nk2) k = nk2;
            size_t *nl2 = nk2 ? core_realloc(l, lost.n * sizeof *l) : NULL;
            if (nl2) l = nl2;
            if (!nk2 || !nl2) rc = core_err_nomem();
        }
        if (!rc && !(aux = core_calloc(lost.n ? lost.n : 1, sizeof *aux))) rc = core_err_nomem();
        nk = 0;
        for (size_t h = 0; !rc && h < lost.n; h++) {
            if (!lost.pay[h]) continue;
            core_bmap_entry *e;
            int fresh;
            size_t n = strlen(lost.pay[h]);
            if ((rc = core_bmap_put(&counts, lost.pay[h], n, &e, &fresh))) break;
            if (fresh) {
                k[nk] = (const uint8_t *)lost.pay[h];
                l[nk++] = n;
            }
            aux[e - counts.e]++;
        }
        if (!rc) rc = lookup_committed(v, ti, GRAPH_COL_SRC, NULL, k, l, nk, on_count, &hl);
        for (size_t h = 0; !rc && h < hl.n; h++)
            counts.e[hl.key[h]].val++;
        for (size_t i = 0; !rc && i < nk; i++) {
            int64_t all = counts.e[i].val, left = all > aux[i] ? all - aux[i] : 0;
            if ((uint64_t)left < t->card_min)
                rc = card_fail(v, t, ti, 0, (const char *)k[i], l[i], left);
        }
    }
    core_bmap_free(&counts);
    hitlist_free(&hl);
    hitlist_free(&lost);
    core_free(k);
    core_free(l);
    core_free(aux);
    return rc;
}

/* ---- entry ------------------------------------------------------------------------------- */

static int run(vctx *v)
{
    const graph_change_set *cs = v->cs;
    int rc = 0;
    for (size_t i = 0; i < cs->n; i++) {
        const graph_change *ch = &cs->changes[i];
        if (ch->type_index < 0 || (size_t)ch->type_index >= v->cat->n_types)
            return core_err(OG_E_BAD_REQUEST, "change %zu names type index %d, not in the catalog",
                            i, ch->type_index);
        if (ch->mode < GRAPH_CHANGE_INSERT || ch->mode > GRAPH_CHANGE_DELTA)
            return core_err(OG_E_BAD_REQUEST, "change %zu has unknown mode %d", i, ch->mode);
        if (ch->mode != GRAPH_CHANGE_DELETE && ch->mode != GRAPH_CHANGE_DELTA && !ch->rows)
            return core_err(OG_E_BAD_REQUEST, "change %zu (%s) has no rows", i,
                            v->cat->types[ch->type_index].name);
        if (v->by_type[ch->type_index])
            return core_err(OG_E_BAD_REQUEST, "two changes for type %s",
                            v->cat->types[ch->type_index].name);
        v->by_type[ch->type_index] = ch;
    }
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    if (!md) return core_err_nomem();
    /* Checks that need no committed read come first. In collect mode a violation leaves rc 0,
     * so every check runs; rc stops them only for an error. */
    for (size_t i = 0; !rc && i < cs->n; i++) {
        const graph_change *ch = &cs->changes[i];
        if (!ch->rows || ch->mode == GRAPH_CHANGE_DELETE) continue;
        v->st->rows_checked += (uint64_t)ch->rows->num_rows;
        if (v->scope != GRAPH_VALIDATE_SET) rc = check_values(v, ch, md);
    }
    pcre2_match_data_free(md);
    if (v->scope == GRAPH_VALIDATE_ROWS) return rc;
    for (size_t i = 0; !rc && i < cs->n; i++)
        rc = index_ids(v, &cs->changes[i]);
    for (size_t i = 0; !rc && i < cs->n; i++) {
        const graph_change *ch = &cs->changes[i];
        if (ch->mode == GRAPH_CHANGE_INSERT && ch->rows->num_rows) rc = check_insert(v, ch);
    }
    for (size_t i = 0; !rc && i < cs->n; i++) {
        const graph_change *ch = &cs->changes[i];
        if (ch->mode == GRAPH_CHANGE_DELETE || !n_rows(ch)) continue;
        const lang_typedef *t = &v->cat->types[ch->type_index];
        for (size_t k = 0; !rc && k < t->n_cons; k++)
            if (t->cons[k].kind == LANG_CON_UNIQUE) rc = check_unique_con(v, ch, &t->cons[k]);
    }
    for (size_t i = 0; !rc && i < cs->n; i++) {
        const graph_change *ch = &cs->changes[i];
        if (ch->mode == GRAPH_CHANGE_DELETE || !n_rows(ch)) continue;
        if (v->cat->types[ch->type_index].kind == LANG_EDGE) rc = check_endpoints(v, ch);
    }
    for (size_t i = 0; !rc && i < cs->n; i++) {
        const graph_change *ch = &cs->changes[i];
        if (v->cat->types[ch->type_index].kind == LANG_NODE &&
            (removes_ids(ch) || ch->mode == GRAPH_CHANGE_REPLACE))
            rc = check_dangling(v, ch->type_index);
    }
    for (size_t i = 0; !rc && i < cs->n; i++) {
        const graph_change *ch = &cs->changes[i];
        if (v->cat->types[ch->type_index].kind == LANG_EDGE) rc = check_card(v, ch);
    }
    return rc;
}

static int validate(const lang_catalog *cat, const graph_snapshot *snap, store *s,
                    const graph_change_set *cs, graph_probes *probes, graph_validate_stats *stats,
                    graph_table_open_fn open, void *open_arg, graph_conflicts *out, int scope)
{
    graph_validate_stats st_local;
    graph_validate_stats *st = stats ? stats : &st_local;
    memset(st, 0, sizeof *st);
    graph_probes probes_local = {0};
    size_t nt = cat->n_types ? cat->n_types : 1;
    vctx v = {.cat = cat,
              .snap = snap,
              .s = s,
              .cs = cs,
              .probes = probes ? probes : &probes_local,
              .st = st,
              .open = open,
              .open_arg = open_arg,
              .out = out,
              .scope = scope};
    v.by_type = core_calloc(nt, sizeof *v.by_type);
    v.input = core_calloc(nt, sizeof *v.input);
    v.input_later = core_calloc(nt, 1);
    v.deleted = core_calloc(nt, sizeof *v.deleted);
    v.com = core_calloc(nt, sizeof *v.com);
    int rc =
        (v.by_type && v.input && v.input_later && v.deleted && v.com) ? run(&v) : core_err_nomem();
    for (size_t i = 0; i < cat->n_types; i++) {
        if (v.input) core_bmap_free(&v.input[i]);
        if (v.deleted) core_bmap_free(&v.deleted[i]);
        if (v.com) {
            core_bmap_free(&v.com[i].set);
            core_bmap_free(&v.com[i].probed);
            arrow_batch_free(v.com[i].ids);
        }
    }
    core_free(v.by_type);
    core_free(v.input);
    core_free(v.input_later);
    core_free(v.deleted);
    core_free(v.com);
    graph_probes_clear(&probes_local);
    return rc;
}

int graph_validate(const lang_catalog *cat, const graph_snapshot *snap, store *s,
                   const graph_change_set *cs, graph_probes *probes, graph_validate_stats *stats)
{
    return validate(cat, snap, s, cs, probes, stats, NULL, NULL, NULL, GRAPH_VALIDATE_ALL);
}

int graph_validate_ex(const lang_catalog *cat, const graph_snapshot *snap, store *s,
                      const graph_change_set *cs, graph_probes *probes, graph_validate_stats *stats,
                      graph_table_open_fn open, void *open_arg)
{
    return validate(cat, snap, s, cs, probes, stats, open, open_arg, NULL, GRAPH_VALIDATE_ALL);
}

int graph_validate_scoped(const lang_catalog *cat, const graph_snapshot *snap, store *s,
                          const graph_change_set *cs, graph_probes *probes,
                          graph_validate_stats *stats, graph_table_open_fn open, void *open_arg,
                          int scope)
{
    if (scope != GRAPH_VALIDATE_ALL && scope != GRAPH_VALIDATE_ROWS && scope != GRAPH_VALIDATE_SET)
        return core_err(OG_E_BAD_REQUEST, "unknown validation scope %d", scope);
    return validate(cat, snap, s, cs, probes, stats, open, open_arg, NULL, scope);
}

int graph_validate_all(const lang_catalog *cat, const graph_snapshot *snap, store *s,
                       const graph_change_set *cs, graph_probes *probes,
                       graph_validate_stats *stats, graph_table_open_fn open, void *open_arg,
                       struct graph_conflicts *out)
{
    if (!out) return core_err(OG_E_BAD_REQUEST, "graph_validate_all: no conflict list");
    return validate(cat, snap, s, cs, probes, stats, open, open_arg, out, GRAPH_VALIDATE_ALL);
}

/* ---- the whole set as sorted runs (graph_validate_sorted) ----------------------------------- */

/* Keys a merge hands to probe_ids go in batches of this many (copied: the committed maps
 * borrow them until the validation ends). */
#define SORTED_PROBE_BATCH 65536

bool graph_validate_sorted_covers(const lang_catalog *cat)
{
    for (size_t i = 0; i < cat->n_types; i++) {
        const lang_typedef *t = &cat->types[i];
        if (t->kind == LANG_EDGE && (t->card_min > 0 || t->card_max >= 0)) return false;
        for (size_t k = 0; k < t->n_cons; k++)
            if (t->cons[k].kind == LANG_CON_UNIQUE) return false;
    }
    return true;
}

/* The first violation found so far in line order (line 0: none). */
typedef struct sorted_hit {
    uint64_t line, line2;
    char *key; /* owned */
    size_t klen;
    char *aux; /* owned (an edge id) */
    size_t alen;
    const char *why;
} sorted_hit;

static void hit_clear(sorted_hit *h)
{
    core_free(h->key);
    core_free(h->aux);
    memset(h, 0, sizeof *h);
}

/* Keep (line, key, aux) when it comes before what h holds. */
static int hit_offer(sorted_hit *h, uint64_t line, uint64_t line2, const uint8_t *key, size_t klen,
                     const uint8_t *aux, size_t alen, const char *why)
{
    if (h->key && line >= h->line) return 0;
    char *k = core_strndup((const char *)key, klen);
    char *a = core_strndup(aux ? (const char *)aux : "", aux ? alen : 0);
    if (!k || !a) {
        core_free(k);
        core_free(a);
        return core_err_nomem();
    }
    hit_clear(h);
    *h = (sorted_hit){line, line2, k, klen, a, aux ? alen : 0, why};
    return 0;
}

static int rec_key_cmp(const core_sortrun_rec *a, const core_sortrun_rec *b)
{
    int c = memcmp(a->key, b->key, a->klen < b->klen ? a->klen : b->klen);
    if (c) return c;
    return a->klen < b->klen ? -1 : a->klen > b->klen;
}

/* Ids of one type that appear twice: the pair whose second line comes first. */
static int sorted_dups(vctx *v, core_sortrun *ids, int ti)
{
    if (!ids || core_sortrun_increasing(ids)) return 0; /* strictly increasing: distinct */
    core_sortrun_iter *it;
    int rc = core_sortrun_iter_open(&it, ids);
    if (rc) return rc;
    uint8_t *prev = NULL;
    size_t plen = 0, pcap = 0;
    uint64_t first_line = 0;
    int in_group = 0; /* records of the current key seen so far (capped at 2) */
    bool have = false;
    sorted_hit hit = {0};
    for (;;) {
        core_sortrun_rec r;
        bool done;
        if ((rc = core_sortrun_iter_next(it, &r, &done)) || done) break;
        if (have && r.klen == plen && !memcmp(r.key, prev, plen)) {
            /* the second record of a key has its second line (records sort by line) */
            if (in_group++ == 1)
                rc = hit_offer(&hit, r.line, first_line, r.key, r.klen, NULL, 0, "");
            if (rc) break;
            continue;
        }
        if (r.klen > pcap) {
            size_t cap = r.klen < 64 ? 64 : r.klen * 2;
            uint8_t *p = core_realloc(prev, cap);
            if (!p) {
                rc = core_err_nomem();
                break;
            }
            prev = p;
            pcap = cap;
        }
        if (r.klen) memcpy(prev, r.key, r.klen);
        plen = r.klen;
        have = true;
        first_line = r.line;
        in_group = 1;
    }
    core_sortrun_iter_free(it);
    core_free(prev);
    if (rc == 0 && hit.key) {
        const lang_typedef *t = &v->cat->types[ti];
        char idbuf[512];
        snprintf(idbuf, sizeof idbuf, "%.*s", (int)(hit.klen > 500 ? 500 : hit.klen), hit.key);
        rc = violation(
            v, GRAPH_CONFLICT_UNIQUE_VIOLATION, ti, hit.key, hit.klen, hit.line, OG_E_KEY_CONFLICT,
            "%s: id \"%s\" appears twice in the input (lines %" PRIu64 " and %" PRIu64 ")", t->name,
            idbuf, hit.line2, hit.line);
        if (rc && !v->out) core_err_detail(CORE_ERR_KEY, idbuf);
    }
    hit_clear(&hit);
    return rc;
}

/* A batch of distinct keys for probe_ids, with the first line (and aux) each came with. */
typedef struct probe_batch {
    const uint8_t **k;
    size_t *l;
    uint64_t *line;
    const uint8_t **aux;
    size_t *alen;
    size_t n;
} probe_batch;

static int batch_init(probe_batch *b)
{
    memset(b, 0, sizeof *b);
    b->k = core_malloc(SORTED_PROBE_BATCH * sizeof *b->k);
    b->l = core_malloc(SORTED_PROBE_BATCH * sizeof *b->l);
    b->line = core_malloc(SORTED_PROBE_BATCH * sizeof *b->line);
    b->aux = core_malloc(SORTED_PROBE_BATCH * sizeof *b->aux);
    b->alen = core_malloc(SORTED_PROBE_BATCH * sizeof *b->alen);
    if (!b->k || !b->l || !b->line || !b->aux || !b->alen) return core_err_nomem();
    core_sortrun_account((int64_t)(SORTED_PROBE_BATCH * (3 * sizeof(void *) + 2 * sizeof(size_t))));
    return 0;
}

static void batch_free(probe_batch *b)
{
    if (b->k && b->l && b->line && b->aux && b->alen)
        core_sortrun_account(
            -(int64_t)(SORTED_PROBE_BATCH * (3 * sizeof(void *) + 2 * sizeof(size_t))));
    core_free(b->k);
    core_free(b->l);
    core_free(b->line);
    core_free(b->aux);
    core_free(b->alen);
    memset(b, 0, sizeof *b);
}

/* Copy a key (and aux) into the batch; the arena keeps the keys for the committed maps. */
static int batch_add(probe_batch *b, core_arena *ar, const core_sortrun_rec *r)
{
    uint8_t *k = core_arena_alloc(ar, r->klen + r->alen + 1);
    if (!k) return OG_E_NOMEM;
    if (r->klen) memcpy(k, r->key, r->klen);
    if (r->alen) memcpy(k + r->klen, r->aux, r->alen);
    b->k[b->n] = k;
    b->l[b->n] = r->klen;
    b->line[b->n] = r->line;
    b->aux[b->n] = k + r->klen;
    b->alen[b->n] = r->alen;
    b->n++;
    return 0;
}

/* Ask type ti's committed table about the batch; the keys it does not hold are hits (with
 * `aux` when the records carried one). */
static int batch_probe(vctx *v, int ti, probe_batch *b, sorted_hit *hit, bool want_present,
                       bool with_aux)
{
    int rc = b->n ? probe_ids(v, ti, b->k, b->l, b->n) : 0;
    for (size_t i = 0; rc == 0 && i < b->n; i++) {
        bool present = core_bmap_find(&v->com[ti].set, b->k[i], b->l[i]) != NULL;
        if (present == want_present)
            rc = hit_offer(hit, b->line[i], 0, b->k[i], b->l[i], with_aux ? b->aux[i] : NULL,
                           b->alen[i], "");
    }
    b->n = 0;
    return rc;
}

/* Inserted ids of type ti that are committed already. */
static int sorted_inserted(vctx *v, core_sortrun *ids, int ti, core_arena *ar)
{
    core_sortrun_iter *it;
    int rc = core_sortrun_iter_open(&it, ids);
    if (rc) return rc;
    probe_batch b;
    sorted_hit hit = {0};
    rc = batch_init(&b);
    for (;;) {
        core_sortrun_rec r;
        bool done;
        if (rc || (rc = core_sortrun_iter_next(it, &r, &done)) || done) break;
        if ((rc = batch_add(&b, ar, &r))) break;
        if (b.n == SORTED_PROBE_BATCH) rc = batch_probe(v, ti, &b, &hit, true, false);
    }
    if (rc == 0) rc = batch_probe(v, ti, &b, &hit, true, false);
    core_sortrun_iter_free(it);
    batch_free(&b);
    if (rc == 0 && hit.key) {
        char idbuf[512];
        snprintf(idbuf, sizeof idbuf, "%.*s", (int)(hit.klen > 500 ? 500 : hit.klen), hit.key);
        rc = violation(v, GRAPH_CONFLICT_UNIQUE_VIOLATION, ti, hit.key, hit.klen, hit.line,
                       OG_E_KEY_CONFLICT, "%s: id \"%s\" already exists", v->cat->types[ti].name,
                       idbuf);
        if (rc && !v->out) core_err_detail(CORE_ERR_KEY, idbuf);
    }
    hit_clear(&hit);
    return rc;
}

/* One side of edge type et: every endpoint is an input node of type nt (a merge join of the
 * sorted endpoints with the sorted node ids) or, unless nt's table is replaced, a committed
 * one (asked in batches of distinct endpoints). */
static int sorted_side(vctx *v, const graph_sorted_set *ss, int et, int side, core_arena *ar)
{
    const lang_typedef *t = &v->cat->types[et];
    int nt = side ? t->to : t->from;
    core_sortrun *ends = side ? ss->dst[et] : ss->src[et];
    core_sortrun *nodes = ss->mode[nt] ? ss->ids[nt] : NULL;
    bool replaced = ss->mode[nt] == GRAPH_CHANGE_REPLACE;
    if (!ends) return 0;
    core_sortrun_iter *ie = NULL, *in = NULL;
    int rc = core_sortrun_iter_open(&ie, ends);
    if (rc == 0 && nodes) rc = core_sortrun_iter_open(&in, nodes);
    probe_batch b = {0};
    if (rc == 0 && !replaced) rc = batch_init(&b);
    sorted_hit hit = {0};
    core_sortrun_rec n = {0};
    bool n_done = !in, n_started = false;
    const uint8_t *last_probed = NULL; /* the previous endpoint queued (equal ones once) */
    size_t last_len = 0;
    while (rc == 0) {
        core_sortrun_rec e;
        bool done;
        if ((rc = core_sortrun_iter_next(ie, &e, &done)) || done) break;
        if (!n_started && in) {
            n_started = true;
            if ((rc = core_sortrun_iter_next(in, &n, &n_done))) break;
        }
        while (!n_done && rec_key_cmp(&n, &e) < 0)
            if ((rc = core_sortrun_iter_next(in, &n, &n_done))) break;
        if (rc) break;
        if (!n_done && rec_key_cmp(&n, &e) == 0) continue; /* an input node */
        if (replaced) {
            rc = hit_offer(&hit, e.line, 0, e.key, e.klen, e.aux, e.alen,
                           " (its table is replaced by this change)");
            continue;
        }
        /* the first record of an endpoint has its first line: later ones need no question */
        if (last_probed && last_len == e.klen && !memcmp(last_probed, e.key, e.klen)) continue;
        if ((rc = batch_add(&b, ar, &e))) break;
        last_probed = b.k[b.n - 1];
        last_len = e.klen;
        if (b.n == SORTED_PROBE_BATCH) {
            rc = batch_probe(v, nt, &b, &hit, false, true);
            /* last_probed stays valid: the arena keeps it */
        }
    }
    if (rc == 0 && !replaced) rc = batch_probe(v, nt, &b, &hit, false, true);
    core_sortrun_iter_free(ie);
    core_sortrun_iter_free(in);
    batch_free(&b);
    if (rc == 0 && hit.key) {
        char idb[96];
        snprintf(idb, sizeof idb, "\"%.*s\"", (int)(hit.alen > 60 ? 60 : hit.alen), hit.aux);
        rc =
            violation(v, GRAPH_CONFLICT_ORPHAN_EDGE, et, hit.aux, hit.alen, hit.line,
                      OG_E_BAD_REQUEST, "%s: %s \"%.*s\" is not an existing %s node%s (edge id %s)",
                      t->name, side ? "dst" : "src", (int)(hit.klen > 200 ? 200 : hit.klen),
                      hit.key, v->cat->types[nt].name, hit.why, idb);
    }
    hit_clear(&hit);
    return rc;
}

/* A replaced node table must not leave committed edges of a type the set does not replace
 * dangling: check_dangling_replace on the node type's ids, read into a map. */
static int sorted_dangling(vctx *v, const graph_sorted_set *ss, int nt, core_arena *ar)
{
    bool any = false;
    for (size_t et = 0; et < v->cat->n_types && !any; et++) {
        const lang_typedef *e = &v->cat->types[et];
        any = e->kind == LANG_EDGE && (e->from == nt || e->to == nt) &&
              ss->mode[et] != GRAPH_CHANGE_REPLACE;
    }
    if (!any) return 0;
    core_sortrun_iter *it;
    int rc = core_sortrun_iter_open(&it, ss->ids[nt]);
    if (rc) return rc;
    rc = core_bmap_reserve(&v->input[nt], (size_t)core_sortrun_count(ss->ids[nt]));
    while (rc == 0) {
        core_sortrun_rec r;
        bool done;
        if ((rc = core_sortrun_iter_next(it, &r, &done)) || done) break;
        char *k = core_arena_strndup(ar, (const char *)r.key, r.klen);
        core_bmap_entry *en;
        int fresh;
        rc = k ? core_bmap_put(&v->input[nt], k, r.klen, &en, &fresh) : OG_E_NOMEM;
    }
    core_sortrun_iter_free(it);
    if (rc == 0) rc = check_dangling_replace(v, nt);
    core_bmap_free(&v->input[nt]);
    return rc;
}

int graph_validate_sorted(const lang_catalog *cat, const graph_snapshot *snap, store *s,
                          const graph_sorted_set *ss, graph_probes *probes,
                          graph_validate_stats *stats, graph_table_open_fn open, void *open_arg)
{
    graph_validate_stats st_local;
    graph_validate_stats *st = stats ? stats : &st_local;
    memset(st, 0, sizeof *st);
    graph_probes probes_local = {0};
    graph_change_set none = {.file = ss->file};
    size_t nt = cat->n_types ? cat->n_types : 1;
    vctx v = {.cat = cat,
              .snap = snap,
              .s = s,
              .cs = &none,
              .probes = probes ? probes : &probes_local,
              .st = st,
              .open = open,
              .open_arg = open_arg,
              .scope = GRAPH_VALIDATE_SET};
    v.by_type = core_calloc(nt, sizeof *v.by_type);
    v.input = core_calloc(nt, sizeof *v.input);
    v.input_later = core_calloc(nt, 1);
    v.deleted = core_calloc(nt, sizeof *v.deleted);
    v.com = core_calloc(nt, sizeof *v.com);
    graph_change *stub = core_calloc(nt, sizeof *stub); /* per type present: its mode only */
    int rc =
        v.by_type && v.input && v.input_later && v.deleted && v.com && stub ? 0 : core_err_nomem();
    core_arena ar;
    core_arena_init(&ar, (size_t)1 << 20);
    for (size_t i = 0; rc == 0 && i < cat->n_types; i++) {
        if (!ss->mode[i]) continue;
        stub[i].type_index = (int)i;
        stub[i].mode = ss->mode[i];
        v.by_type[i] = &stub[i];
        st->rows_checked += core_sortrun_count(ss->ids[i]);
    }
    /* In the order run() makes them: ids within the input, inserted ids against the base,
     * endpoints (per edge type, src then dst), dangling committed edges. */
    for (size_t i = 0; rc == 0 && i < cat->n_types; i++)
        if (ss->mode[i]) rc = sorted_dups(&v, ss->ids[i], (int)i);
    for (size_t i = 0; rc == 0 && i < cat->n_types; i++)
        if (ss->mode[i] == GRAPH_CHANGE_INSERT && ss->ids[i])
            rc = sorted_inserted(&v, ss->ids[i], (int)i, &ar);
    for (size_t i = 0; rc == 0 && i < cat->n_types; i++)
        for (int side = 0; rc == 0 && ss->mode[i] && cat->types[i].kind == LANG_EDGE && side < 2;
             side++)
            rc = sorted_side(&v, ss, (int)i, side, &ar);
    for (size_t i = 0; rc == 0 && i < cat->n_types; i++)
        if (ss->mode[i] == GRAPH_CHANGE_REPLACE && cat->types[i].kind == LANG_NODE && ss->ids[i])
            rc = sorted_dangling(&v, ss, (int)i, &ar);
    for (size_t i = 0; i < cat->n_types; i++) {
        if (v.input) core_bmap_free(&v.input[i]);
        if (v.deleted) core_bmap_free(&v.deleted[i]);
        if (v.com) {
            core_bmap_free(&v.com[i].set);
            core_bmap_free(&v.com[i].probed);
            arrow_batch_free(v.com[i].ids);
        }
    }
    core_arena_free(&ar);
    core_free(stub);
    core_free(v.by_type);
    core_free(v.input);
    core_free(v.input_later);
    core_free(v.deleted);
    core_free(v.com);
    graph_probes_clear(&probes_local);
    return rc;
}
