/* The public read-query API (include/omnigraph.h, "Graph queries and mutations"): a read
 * request handed to the executor (exec_query, src/exec/request.h: the .gq source checked
 * against the handle's accepted schema, the snapshot at the head or at a reference, the run
 * through the handle's cache), and the og_result accessors over its Arrow batches. */
#include "omnigraph.h"

#include "api/graph_internal.h"
#include "arrow/arrow_json.h"
#include "core/alloc.h"
#include "api/options.h"
#include "core/error.h"

#include <stdlib.h>
#include <string.h>

/* ---- running a read ------------------------------------------------------------------------ */

struct og_result {
    exec_result *r;
    char commit_id[OG_ID_LEN + 1];
    uint64_t manifest_version;
    char *query_name;
    size_t n_batches;
    uint64_t *starts; /* first row of each batch, plus the row count at [n_batches] */
    size_t hint;      /* the batch of the last lookup (rows are mostly read in order) */
    uint64_t cursor;  /* og_result_next: 1 + the current row (0: before the first) */
    core_buf scratch; /* JSON and date texts handed out */
};

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
    int rc = 0;
    og_result *res = core_calloc(1, sizeof *res);
    if (!res) return core_err_nomem();
    exec_gq_request req = {opt->source, opt->source_len,  opt->source_file,
                           opt->name,   opt->params_json, opt->now_ms};
    exec_read rd;
    rc = exec_query(&rd, g->h, &req, opt->branch, opt->at, g->cache);
    if (!rc) {
        res->r = rd.rows;
        res->query_name = rd.query_name;
        memcpy(res->commit_id, rd.commit_id, sizeof res->commit_id);
        res->manifest_version = rd.manifest_version;
        rc = result_index(res);
    }
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
    if (!first || !rows || !r)
        return core_err(OG_E_BAD_REQUEST, "og_result_batch_rows: missing argument");
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
        return core_err(OG_E_BAD_REQUEST,
                        "cell (%llu, %zu) is outside the result (%llu rows, "
                        "%zu columns)",
                        (unsigned long long)row, col, (unsigned long long)r->starts[r->n_batches],
                        exec_result_n_columns(r->r));
    size_t h = r->hint;
    if (!(h < r->n_batches && r->starts[h] <= row && row < r->starts[h + 1])) {
        size_t lo = 0, hi = r->n_batches;
        while (hi - lo > 1) {
            size_t mid = (lo + hi) / 2;
            if (r->starts[mid] <= row)
                lo = mid;
            else
                hi = mid;
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
        case ARROW_UNIT_SECOND:
            v->i = raw * 1000;
            break;
        case ARROW_UNIT_MICRO:
            v->i = raw / 1000;
            break;
        case ARROW_UNIT_NANO:
            v->i = raw / 1000000;
            break;
        default:
            v->i = raw;
            break;
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
