/* The public read-query API (include/omnigraph.h, "Graph queries and mutations"): checking a
 * .gq source against the handle's accepted schema, choosing a query and its params (shared
 * with mutate_api.c), pinning the snapshot at the head or at a reference, running it through
 * the executor with the handle's cache, and the og_result accessors over its Arrow batches. */
#include "omnigraph.h"

#include "api/graph_internal.h"
#include "arrow/arrow_json.h"
#include "core/alloc.h"
#include "api/options.h"
#include "core/error.h"
#include "core/json.h"
#include "graph/graph.h"
#include "lang/lang.h"

#include <stdlib.h>
#include <string.h>

/* ---- preparation (reads and mutations) ---------------------------------------------------- */

void api_prepared_clear(api_prepared *p)
{
    exec_params_free(p->params);
    lang_query_set_free(p->qs);
    memset(p, 0, sizeof *p);
}

/* The queries' names as "a, b, c" for messages (the first few). */
static void names_list(char *out, size_t cap, const lang_query_set *qs)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < qs->n_queries && used + 1 < cap; i++) {
        int n = snprintf(out + used, cap - used, "%s%s", i ? ", " : "", qs->queries[i].name);
        if (n < 0) break;
        used += (size_t)n;
    }
}

/* Locate the error of query `qi`: its first error diagnostic (diagnostics of the other
 * queries in the file do not concern this run). */
static int query_error(lang_diags *d, const lang_query_set *qs, size_t qi, const char *file)
{
    lang_diags_sort(d); /* the first by position, as lint reports them */
    int from = qs->queries[qi].pos.line;
    int to = qi + 1 < qs->n_queries ? qs->queries[qi + 1].pos.line : 0;
    for (size_t i = 0; i < d->n; i++) {
        const lang_diag *x = &d->items[i];
        if (x->severity != LANG_SEV_ERROR || x->line < from || (to && x->line >= to)) continue;
        return core_err_at(x->file ? x->file : file, x->line, x->col, "%s: %s", x->code,
                           x->message);
    }
    return lang_diags_status(d); /* none inside its range: the file's first error */
}

int api_prepare(api_prepared *p, og_graph *g, const char *source, size_t len, const char *file,
                const char *name, const char *params_json, int64_t now_ms, int mutation)
{
    memset(p, 0, sizeof *p);
    if (!source) return core_err(OG_E_BAD_REQUEST, "no query source given");
    if (!len) len = strlen(source);
    if (!file || !*file) file = "<query>";
    core_arena arena;
    core_arena_init(&arena, 0);
    lang_diags diags;
    lang_diags_init(&diags, &arena);
    int rc = lang_query_set_build(&p->qs, g->h->catalog, source, len, file, &diags);
    if (rc && rc != OG_E_BAD_REQUEST) goto out;
    if (diags.oom) {
        rc = core_err_nomem();
        goto out;
    }
    if (!p->qs || p->qs->n_queries == 0) {
        /* A parse failure leaves no queries: the thread error is its located diagnostic. */
        if (!rc) rc = core_err_at(file, 1, 1, "Q000: the source holds no query");
        goto out;
    }
    size_t qi = 0;
    char names[256];
    if (name && *name) {
        int i = lang_query_set_find(p->qs, name);
        if (i < 0) {
            names_list(names, sizeof names, p->qs);
            rc = core_err(OG_E_BAD_REQUEST, "no query named '%s' in %s (it has: %s)", name, file,
                          names);
            goto out;
        }
        qi = (size_t)i;
    } else if (p->qs->n_queries > 1) {
        names_list(names, sizeof names, p->qs);
        rc = core_err(OG_E_BAD_REQUEST, "%s holds %zu queries (%s): name the one to run", file,
                      p->qs->n_queries, names);
        goto out;
    }
    if (p->qs->status[qi]) {
        rc = query_error(&diags, p->qs, qi, file);
        goto out;
    }
    rc = 0; /* other queries of the file may have errors; this one checked */
    p->q = &p->qs->queries[qi];
    if (mutation && !p->q->is_mutation) {
        rc = core_err(OG_E_BAD_REQUEST, "query '%s' is a read query: run it with query, not "
                      "mutate", p->q->name);
        goto out;
    }
    if (!mutation && p->q->is_mutation) {
        rc = core_err(OG_E_BAD_REQUEST, "query '%s' is a mutation: run it with mutate, not "
                      "query", p->q->name);
        goto out;
    }
    json_t *obj = NULL;
    if (params_json && *params_json) {
        rc = core_json_parse(&obj, params_json, strlen(params_json), "params");
        if (rc) goto out;
        if (!json_is_object(obj)) {
            json_decref(obj);
            rc = core_err(OG_E_BAD_REQUEST, "params must be a JSON object, like {\"name\": \"x\"}");
            goto out;
        }
    }
    rc = exec_params_from_json(&p->params, p->q, obj);
    json_decref(obj);
    if (!rc && now_ms) exec_params_set_now(p->params, now_ms);
out:
    core_arena_free(&arena);
    if (rc) api_prepared_clear(p);
    return rc;
}

/* ---- running a read ------------------------------------------------------------------------ */

struct og_result {
    exec_result *r;
    char commit_id[OG_ID_LEN + 1];
    uint64_t manifest_version;
    char *query_name;
    size_t n_batches;
    uint64_t *starts;  /* first row of each batch, plus the row count at [n_batches] */
    size_t hint;       /* the batch of the last lookup (rows are mostly read in order) */
    uint64_t cursor;   /* og_result_next: 1 + the current row (0: before the first) */
    core_buf scratch;  /* JSON and date texts handed out */
};

static int check_branch(const char *b)
{
    if (b && *b && strcmp(b, "main") != 0)
        return core_err(OG_E_UNSUPPORTED, "branch '%s': only main is supported by this build", b);
    return 0;
}

/* The snapshot of main at `at` (NULL: head), refusing one whose schema is not the handle's:
 * the checked query's catalog indexes would not describe its tables. */
static int snapshot_at(graph_snapshot **out, og_graph *g, const char *at)
{
    *out = NULL;
    uint64_t mver = 0;
    if (at && *at) {
        int rc = graph_resolve_ref(g->h->s, NULL, at, &mver);
        if (rc) return rc;
    }
    /* At the head, the handle's cached state answers without a scan of the manifest. */
    int rc = mver ? graph_snapshot_load(out, g->h->s, NULL, mver, 0)
                  : graph_handle_head_snapshot(g->h, out);
    if (rc) return rc;
    if (strcmp((*out)->schema_identity, g->h->schema_identity) != 0) {
        rc = core_err(OG_E_UNSUPPORTED, "manifest version %llu was written under schema %s, not "
                      "the accepted schema %s: reading it is not supported yet",
                      (unsigned long long)(*out)->manifest_version, (*out)->schema_identity,
                      g->h->schema_identity);
        graph_snapshot_free(*out);
        *out = NULL;
    }
    return rc;
}

static int result_index(og_result *res)
{
    size_t n = exec_result_n_batches(res->r);
    res->starts = core_calloc(n + 1, sizeof *res->starts);
    if (!res->starts) return core_err_nomem();
    uint64_t at = 0;
    for (size_t i = 0; i < n; i++) {
        res->starts[i] = at;
        at += (uint64_t)exec_result_batch(res->r, i)->num_rows;
    }
    res->starts[n] = at;
    res->n_batches = n;
    return 0;
}

int og_graph_query(og_result **out, og_graph *g, const og_query_options *opt)
{
    if (!out) return core_err(OG_E_BAD_REQUEST, "og_graph_query: out is NULL");
    *out = NULL;
    if (!g || !opt) return core_err(OG_E_BAD_REQUEST, "og_graph_query: missing argument");
    int vrc = api_options_check(opt->version, OG_QUERY_OPTIONS_VERSION, "og_query_options");
    if (vrc) return vrc;
    int rc = check_branch(opt->branch);
    if (rc) return rc;
    api_prepared p;
    rc = api_prepare(&p, g, opt->source, opt->source_len, opt->source_file, opt->name,
                     opt->params_json, opt->now_ms, 0);
    if (rc) return rc;
    graph_snapshot *snap = NULL;
    og_result *res = core_calloc(1, sizeof *res);
    if (!res) rc = core_err_nomem();
    if (!rc) rc = snapshot_at(&snap, g, opt->at);
    if (!rc) rc = exec_query_run(&res->r, g->h->catalog, snap, g->h->s, p.q, p.params, g->cache);
    if (!rc) {
        snprintf(res->commit_id, sizeof res->commit_id, "%s", snap->head);
        res->manifest_version = snap->manifest_version;
        res->query_name = core_strdup(p.q->name ? p.q->name : "");
        rc = res->query_name ? result_index(res) : core_err_nomem();
    }
    graph_snapshot_free(snap);
    api_prepared_clear(&p);
    if (rc) {
        og_result_free(res);
        return rc;
    }
    *out = res;
    return 0;
}

void og_result_free(og_result *r)
{
    if (!r) return;
    exec_result_free(r->r);
    core_free(r->query_name);
    core_free(r->starts);
    core_buf_free(&r->scratch);
    core_free(r);
}

/* ---- accessors ----------------------------------------------------------------------------- */

const char *og_result_graph_commit_id(const og_result *r)
{
    return r ? r->commit_id : "";
}

uint64_t og_result_manifest_version(const og_result *r)
{
    return r ? r->manifest_version : 0;
}

const char *og_result_query_name(const og_result *r)
{
    return r ? r->query_name : "";
}

size_t og_result_column_count(const og_result *r)
{
    return r ? exec_result_n_columns(r->r) : 0;
}

const char *og_result_column_name(const og_result *r, size_t i)
{
    if (!r || i >= exec_result_n_columns(r->r)) return NULL;
    return exec_result_column_name(r->r, i);
}

uint64_t og_result_row_count(const og_result *r)
{
    return r ? r->starts[r->n_batches] : 0;
}

size_t og_result_batch_count(const og_result *r)
{
    return r ? r->n_batches : 0;
}

int og_result_batch_rows(uint64_t *first, uint64_t *rows, const og_result *r, size_t b)
{
    if (!first || !rows || !r) return core_err(OG_E_BAD_REQUEST, "og_result_batch_rows: missing argument");
    if (b >= r->n_batches)
        return core_err(OG_E_BAD_REQUEST, "batch %zu is outside the result (%zu batches)", b,
                        r->n_batches);
    *first = r->starts[b];
    *rows = r->starts[b + 1] - r->starts[b];
    return 0;
}

/* The batch holding row and the row's index in it. */
static int locate(og_result *r, uint64_t row, size_t col, const arrow_batch **b, int64_t *idx)
{
    if (row >= r->starts[r->n_batches] || col >= exec_result_n_columns(r->r))
        return core_err(OG_E_BAD_REQUEST, "cell (%llu, %zu) is outside the result (%llu rows, "
                        "%zu columns)", (unsigned long long)row, col,
                        (unsigned long long)r->starts[r->n_batches], exec_result_n_columns(r->r));
    size_t h = r->hint;
    if (!(h < r->n_batches && r->starts[h] <= row && row < r->starts[h + 1])) {
        size_t lo = 0, hi = r->n_batches;
        while (hi - lo > 1) {
            size_t mid = (lo + hi) / 2;
            if (r->starts[mid] <= row) lo = mid;
            else hi = mid;
        }
        r->hint = h = lo;
    }
    *b = exec_result_batch(r->r, h);
    *idx = (int64_t)(row - r->starts[h]);
    return 0;
}

/* Point v at the scratch's text (appended by the caller from `mark` on). */
static void scratch_text(og_value *v, og_result *r)
{
    v->str = (const char *)r->scratch.data;
    v->len = r->scratch.len;
}

static int cell_value(og_value *v, og_result *r, const arrow_array *a, int64_t i)
{
    memset(v, 0, sizeof *v);
    if (!arrow_array_is_valid(a, i)) return 0; /* OG_VALUE_NULL */
    switch (a->type.id) {
    case ARROW_BOOL:
        v->type = OG_VALUE_BOOL;
        v->b = arrow_bit_get(a->values, i) ? 1 : 0;
        return 0;
    case ARROW_INT32:
        v->type = OG_VALUE_INT;
        v->i = ((const int32_t *)a->values)[i];
        return 0;
    case ARROW_INT64:
        v->type = OG_VALUE_INT;
        v->i = ((const int64_t *)a->values)[i];
        return 0;
    case ARROW_UINT32:
        v->type = OG_VALUE_UINT;
        v->u = ((const uint32_t *)a->values)[i];
        return 0;
    case ARROW_UINT64:
        v->type = OG_VALUE_UINT;
        v->u = ((const uint64_t *)a->values)[i];
        return 0;
    case ARROW_FLOAT32:
        v->type = OG_VALUE_FLOAT;
        v->f = ((const float *)a->values)[i];
        return 0;
    case ARROW_FLOAT64:
        v->type = OG_VALUE_FLOAT;
        v->f = ((const double *)a->values)[i];
        return 0;
    case ARROW_UTF8: {
        const int32_t *off = a->offsets;
        v->type = OG_VALUE_STRING;
        v->str = (const char *)a->values + off[i];
        v->len = (size_t)(off[i + 1] - off[i]);
        return 0;
    }
    case ARROW_LARGE_UTF8: {
        const int64_t *off = a->offsets;
        v->type = OG_VALUE_STRING;
        v->str = (const char *)a->values + off[i];
        v->len = (size_t)(off[i + 1] - off[i]);
        return 0;
    }
    case ARROW_DATE32: {
        char txt[24];
        v->type = OG_VALUE_DATE;
        v->i = ((const int32_t *)a->values)[i];
        size_t n = arrow_json_format_date(txt, v->i);
        core_buf_clear(&r->scratch);
        if (core_buf_append(&r->scratch, txt, n)) return core_err_nomem();
        scratch_text(v, r);
        return 0;
    }
    case ARROW_TIMESTAMP: {
        char txt[48];
        int64_t raw = ((const int64_t *)a->values)[i];
        v->type = OG_VALUE_DATETIME;
        /* The executor's DateTime is milliseconds; convert any other unit to it. */
        switch (a->type.unit) {
        case ARROW_UNIT_SECOND: v->i = raw * 1000; break;
        case ARROW_UNIT_MICRO: v->i = raw / 1000; break;
        case ARROW_UNIT_NANO: v->i = raw / 1000000; break;
        default: v->i = raw; break;
        }
        size_t n = arrow_json_format_instant(txt, raw, (int)a->type.unit);
        core_buf_clear(&r->scratch);
        if (core_buf_append(&r->scratch, txt, n)) return core_err_nomem();
        scratch_text(v, r);
        return 0;
    }
    default: {
        v->type = OG_VALUE_JSON;
        core_buf_clear(&r->scratch);
        int rc = arrow_json_value(&r->scratch, a, i);
        if (rc) return rc;
        scratch_text(v, r);
        return 0;
    }
    }
}

int og_result_value(og_value *out, og_result *r, uint64_t row, size_t col)
{
    if (!out || !r) return core_err(OG_E_BAD_REQUEST, "og_result_value: missing argument");
    memset(out, 0, sizeof *out);
    const arrow_batch *b;
    int64_t i;
    int rc = locate(r, row, col, &b, &i);
    if (rc) return rc;
    return cell_value(out, r, b->columns[col], i);
}

int og_result_next(og_result *r)
{
    if (!r) return core_err(OG_E_BAD_REQUEST, "og_result_next: no result");
    /* The end is not an error: the thread's last error stays as it was. */
    if (r->cursor > r->starts[r->n_batches]) return OG_ITER_OVER;
    r->cursor++;
    return r->cursor <= r->starts[r->n_batches] ? OG_OK : OG_ITER_OVER;
}

int og_result_get(og_value *out, og_result *r, size_t col)
{
    if (!out || !r) return core_err(OG_E_BAD_REQUEST, "og_result_get: missing argument");
    if (r->cursor == 0 || r->cursor > r->starts[r->n_batches]) {
        memset(out, 0, sizeof *out);
        return core_err(OG_E_BAD_REQUEST, "og_result_get: the cursor is not on a row (call "
                        "og_result_next first)");
    }
    return og_result_value(out, r, r->cursor - 1, col);
}

void og_result_rewind(og_result *r)
{
    if (r) r->cursor = 0;
}

const char *og_result_row_json(og_result *r, uint64_t row, size_t *len)
{
    if (!r) {
        core_err(OG_E_BAD_REQUEST, "og_result_row_json: no result");
        return NULL;
    }
    size_t nc = exec_result_n_columns(r->r);
    core_buf_clear(&r->scratch);
    int rc = 0;
    if (nc == 0) {
        if (row >= r->starts[r->n_batches]) {
            core_err(OG_E_BAD_REQUEST, "row %llu is outside the result", (unsigned long long)row);
            return NULL;
        }
        rc = core_buf_append_str(&r->scratch, "{}");
    } else {
        const arrow_batch *b;
        int64_t i;
        rc = locate(r, row, 0, &b, &i);
        if (!rc) rc = arrow_json_row(&r->scratch, b, i);
    }
    if (rc) return NULL;
    if (len) *len = r->scratch.len;
    return core_buf_cstr(&r->scratch);
}

const char *og_result_cell_json(og_result *r, uint64_t row, size_t col, size_t *len)
{
    if (!r) {
        core_err(OG_E_BAD_REQUEST, "og_result_cell_json: no result");
        return NULL;
    }
    const arrow_batch *b;
    int64_t i;
    core_buf_clear(&r->scratch);
    int rc = locate(r, row, col, &b, &i);
    if (!rc) rc = arrow_json_value(&r->scratch, b->columns[col], i);
    if (rc) return NULL;
    if (len) *len = r->scratch.len;
    return core_buf_cstr(&r->scratch);
}

int og_result_export_stream(struct ArrowArrayStream *out, og_result *r)
{
    if (!out || !r) return core_err(OG_E_BAD_REQUEST, "og_result_export_stream: missing argument");
    memset(out, 0, sizeof *out);
    int rc = exec_result_export(r->r, out);
    /* The rows moved into the stream: the result reads as empty from now on. */
    r->starts[0] = 0;
    r->n_batches = 0;
    r->hint = 0;
    r->cursor = 0;
    return rc;
}
